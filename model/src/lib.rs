//! vfsmc-model: the kernel as code.
//!
//! - [`sync`]: the engine facade, the only place that names loom, shuttle or
//!   std synchronisation types.
//! - [`exec`]: the execution being explored — trace, invariants, tracepoints,
//!   cost counters, violations.
//! - [`kernel`]: kernel primitives (spinlock, mutex/rwsem, seqcount, lockref,
//!   RCU and slab lifetimes, per-CPU data and interrupts, bitmaps,
//!   double-width cmpxchg, error pointers, barriers).
//! - [`litmus`]: the kernel's litmus tests written against the primitives.
//!
//! Models never name an engine: they are written once and run under loom,
//! shuttle and std alike.

pub mod exec;
pub mod kernel;
pub mod sync;
