//! vfsmc-model: the kernel as code.
//!
//! - [`sync`]: the engine facade, the only place that names loom, shuttle or
//!   std synchronisation types.
//! - [`exec`]: the execution being explored — trace, invariants, tracepoints,
//!   cost counters, violations.
//! - [`kernel`]: kernel primitives (spinlock, mutex/rwsem, seqcount, lockref,
//!   RCU and slab lifetimes, per-CPU data and interrupts, bitmaps,
//!   double-width cmpxchg, error pointers, barriers).
//! - [`fdtable`]: fs/file.c, the fd bitmap fast path and its neighbours.
//! - [`freelist`]: mm/slub.c, the per-CPU ABA-safe freelist.
//!
//! Models never name an engine: they are written once and run under loom,
//! shuttle and std alike.

pub mod exec;
pub mod fdtable;
pub mod freelist;
pub mod kernel;
pub mod sync;
