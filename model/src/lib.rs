//! vfsmc-model: the kernel as code.
//!
//! - [`sync`], [`trace`], [`exec`], [`driver`]: the engine facade, a trace
//!   step, the execution being explored as models see it and as engines see
//!   it, re-exported from `vfsmc-runtime` (model/rt), which keeps them out
//!   of the model coverage.
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

pub mod fdtable;
pub mod files;
pub mod freelist;
pub mod io_uring;
pub mod kernel;
pub mod namei;
pub mod patch;
pub mod vfs;

pub use vfsmc_runtime::{driver, exec, sync, trace};
