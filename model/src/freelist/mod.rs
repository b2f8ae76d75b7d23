//! mm/slub.c: the per-CPU freelist (being written).
