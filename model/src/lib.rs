//! vfsmc-model: the kernel as code.
//!
//! - [`sync`]: the engine facade, the only place that names loom, shuttle or
//!   std synchronisation types.
//! - [`trace`]: a trace step as data (thread, context, CPU, function, typed
//!   effect); the checker renders it.
//! - [`exec`]: the execution being explored, as models see it — steps,
//!   invariants, tracepoints, cost counters, violations.
//! - [`driver`]: the same execution as engines see it; models never use it.
//! - [`kernel`]: kernel primitives (spinlock, mutex/rwsem, seqcount, lockref,
//!   RCU and slab lifetimes, per-CPU data and interrupts, bitmaps,
//!   double-width cmpxchg, error pointers, barriers).
//! - [`fdtable`]: fs/file.c, the fd bitmap fast path and its neighbours.
//! - [`files`]: the interface a caller of the open path (io_uring, open(2))
//!   uses to reach the fd table model.
//! - [`freelist`]: mm/slub.c, the per-CPU ABA-safe freelist.
//! - [`io_uring`]: io_uring's openat request path (issue inline with
//!   LOOKUP_CACHED, punt to io-wq, complete), composed of the open path
//!   and the fd table through [`files`].
//! - [`namei`]: fs/namei.c, nameidata and the path walk (RCU-walk,
//!   legitimization, ref-walk).
//! - [`patch`]: patch coverage, the places where a variant's code differs
//!   from its base and whether an execution ran them.
//! - [`vfs`]: shared VFS state (dentries, the dcache, inodes, mounts,
//!   rename_lock, mount_lock, the reference ledger), no mechanism logic.
//!
//! Models never name an engine: they are written once and run under loom,
//! shuttle and std alike.

pub mod driver;
pub mod exec;
pub mod fdtable;
pub mod files;
pub mod freelist;
pub mod io_uring;
pub mod kernel;
pub mod namei;
pub mod patch;
pub mod sync;
pub mod trace;
pub mod vfs;
