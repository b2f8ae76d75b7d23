//! fs/file.c: the fd table (being written).
