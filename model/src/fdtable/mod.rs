//! fs/file.c and include/linux/fdtable.h: the fd table of a process, the
//! bitmap search that allocates the lowest free fd, its RCU-published
//! resizing, the lockless `fget`, and the neighbours a reviewer of those
//! touches (close_range, dup_fd at fork, fdget's borrow, put_files_struct).
//! Two bases: v6.10, before Yu Ma's series "fs/file.c: optimize the
//! critical section of file_lock in alloc_fd()", with `f_count` taken by
//! `atomic_long_inc_not_zero`; and current, v6.13+, where the series came in
//! through Al Viro's `work.fdtable` branch (merged into `vfs.file` beside
//! "fs: add file_ref" / "fs: port files to file_ref", post-receive log of
//! 10 Oct 2024; the 6.12 stable queue had to backport 1d3b4bec3ce5 from it)
//! and `struct file` counts with `file_ref_t`. Current was read at the
//! v7.1-rc1 `vfs-7.1-rc1.misc` merge (ef3da345) and file_ref.h 5370b43e.
//!
//! What is modelled: `files_struct` {fdt (RCU pointer), file_lock, next_fd,
//! resize_in_progress, count (a variable: tasks sharing the table)} and
//! `fdtable` {max_fds, fd[] (RCU slots), open_fds, close_on_exec,
//! full_fds_bits}; RLIMIT_NOFILE and `sysctl_nr_open` as words another
//! thread may change; `struct file` {f_ref, f_mode} as a
//! SLAB_TYPESAFE_BY_RCU object (see [`file_ref`] for the two counters);
//! fdtables as ordinary slab objects freed through `call_rcu`, so a reader
//! touching a freed table is a use-after-free.
//!
//! Abstracted away: the Spectre index masking (`array_index_nospec`) and the
//! `VFS_BUG_ON`/`WARN_ON` slot checks of `fd_install`; exec's unshare_files
//! (do_close_on_exec runs on a table nobody shares; other processes reach it
//! only through fget_task);
//! `filp_close` is just the final `fput`, and `fput` frees at once instead of
//! through task_work; CLOSE_RANGE_UNSHARE/CLOEXEC. Sizes are shrunk: a word
//! has [`BITS_PER_LONG`] bits, the embedded table [`NR_OPEN_DEFAULT`] slots,
//! the smallest allocated table two words (the kernel's is 1 KiB of
//! pointers: 256 slots on 32-bit, 128 on 64-bit).
//!
//! Every kernel function is a Rust function of the same name made of labelled
//! steps; variants (see [`Bug`]) change only the steps they name. The ghost
//! log ([`Ghost`]) records what happened for the specs: allocation decisions
//! with the bitmap they were taken on, who holds which fd, the occupants of
//! each fd, fget's state and fork children.

mod alloc;
mod expand;
mod fget;
mod file_ref;
mod install;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as GhostMutex, MutexGuard};

use crate::kernel::atomic::Atomic;
use crate::kernel::bitmap::Bitmap;
use crate::kernel::rcu::{ObjRef, ObjState, Rcu, Slab};
use crate::kernel::spinlock::{Locked, SpinLock};
use crate::kernel::task::Task;
use crate::trace::{Name, Show};

pub use alloc::{alloc_fd, get_unused_fd_flags, put_unused_fd};
pub use expand::expand_files;
pub use fget::{__fget_light, alloc_empty_file, fget, fget_done, fget_raw, fget_task, fput, Fd};
pub use install::{
    close_fd, close_range, close_range_unshare, do_close_on_exec, dup2, dup_fd, f_dupfd,
    fcntl_dupfd, fd_install, ksys_dup3, put_files_struct,
};

/// BITS_PER_LONG, shrunk so that a full word is a few opens away.
pub const BITS_PER_LONG: u32 = 4;
/// NR_OPEN_DEFAULT: slots of the table embedded in `files_struct`.
pub const NR_OPEN_DEFAULT: u32 = BITS_PER_LONG;
/// sysctl_nr_open's value at boot here: no table grows beyond it (a
/// variable: `fs.nr_open` may be lowered while a table grows).
pub const SYSCTL_NR_OPEN: u32 = 4 * BITS_PER_LONG;
/// FMODE_PATH: the file was opened with O_PATH (fget refuses it).
pub const FMODE_PATH: u64 = 1 << 14;
/// FMODE_NONOTIFY_PERM: init_file sets it on every new file since
/// 711f9b8fbe4f (file_set_fsnotify_mode; v6.14-rc fixes, Feb 2025), so a
/// complete current `f_mode` always has it.
pub const FMODE_NONOTIFY_PERM: u64 = 1 << 25;

/// Errors the operations return (the kernel's negative errnos).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Errno {
    Ebadf,
    Ebusy,
    Emfile,
    Einval,
    /// security_file_alloc refused the file (an LSM's blob allocation).
    Enomem,
}

/// The code base a variant starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// v6.10: two-level search, unconditional full_fds_bits clear, the
    /// slot sanity check in alloc_fd; `f_count` with inc_not_zero (files
    /// typesafe since v6.7). These functions stayed so until v6.13.
    V6_10,
    /// v6.13+ (read at v7.1-rc1): the series applied (fast path in
    /// find_next_fd, conditional clear, sanity check removed) and
    /// `file_ref_t`.
    Current,
}

/// One bug (real or mutant) on top of a base; each arm changes the steps its
/// doc names and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// v1 patch 1 (14 Jun 2024, on v6.8-rc6): when word 0 of open_fds is
    /// not full, alloc_fd takes `find_next_zero_bit(open_fds, BITS_PER_LONG,
    /// fd)` and jumps to success, unguarded: it skips the `fd >= end`
    /// (RLIMIT_NOFILE) test, and when no zero bit lies at or after the
    /// candidate it returns BITS_PER_LONG itself (an open fd).
    RlimitSkippedByFastPath,
    /// Review point on v2/v3: the fast path searches the word containing the
    /// candidate from bit 0 instead of from the candidate's bit offset.
    FastPathIgnoresStartBit,
    /// Review point on v2/v3: the fast path forgets to add the word's base
    /// (`word * BITS_PER_LONG`) to the bit it found.
    FastPathDropsWordBase,
    /// Mutant of patch 2/3: the conditional clear tests bit `fd` of
    /// full_fds_bits instead of bit `fd / BITS_PER_LONG`.
    ConditionalClearTestsWrongBit,
    /// Mutant: __put_unused_fd forgets to lower next_fd.
    PutUnusedFdKeepsNextFd,
    /// Before 054aa8d439b9 (CVE-2021-4083): fget does not re-check the slot
    /// after taking its reference.
    FgetSkipsSlotRecheck,
    /// Mutant of 0ede61d8589c (SLAB_TYPESAFE_BY_RCU files): fget re-checks
    /// the slot but not that `files->fdt` is still the table it read.
    FgetSkipsFdtRecheck,
    /// Mutant of e386dfc56f83: on a failed re-check fget retries without
    /// dropping the reference it took.
    FgetRetryLeaksRef,
    /// Mutant of __fget_files_rcu: once the file is pinned, fget leaves its
    /// RCU read-side section for the slot re-check ("the reference keeps the
    /// file alive"), but the table it re-reads is not pinned: an expansion's
    /// grace period can free it meanwhile.
    FgetUnlocksBeforeRecheck,
    /// Mutant: expand_fdtable frees the old table at once instead of
    /// through call_rcu.
    FreeFdtableWithoutGracePeriod,
    /// Mutant of 8a81252b774b: expand_fdtable skips synchronize_rcu, so a
    /// lockless fd_install can write into a table already copied.
    ExpandSkipsSynchronizeRcu,
    /// do_dup2 without the -EBUSY check on a reserved (open, NULL) slot.
    Dup2IgnoresReserved,
    /// dup_fd copies an open bit whose slot is NULL (a sibling's in-flight
    /// open) instead of clearing it in the child.
    DupFdKeepsReserved,
    /// Brief §4.5.11 (review of the early file_ref): a get that lands in
    /// the dead zone puts the counter back to DEAD, which on recycled memory
    /// kills someone else's file.
    FileRefGetRewritesDead,
    /// Mutant of __file_ref_put: at NOREF the put marks the file DEAD with a
    /// plain store and frees it, ignoring a get that revived the count.
    FileRefPutIgnoresRevival,
    /// Mutant of file_ref_put_close: the last reference is turned into DEAD
    /// by a read and a plain store, not a cmpxchg, so a get between the two
    /// is lost.
    FileRefPutCloseWithoutCmpxchg,
    /// Mutant of 0ede61d8589c's rule: __fget_files_rcu reads `f_mode`
    /// before it holds a reference.
    FgetChecksModeBeforeRef,
    /// Mutant of 0ede61d8589c's rule: init_file sets the count first, before
    /// security_file_alloc can still fail and hand the memory back with
    /// kmem_cache_free, so a stale reader's get on recycled memory succeeds
    /// on a file that is never opened.
    InitFileCountFirst,
    /// 711f9b8fbe4f (fixed by 1219e0feaefc, v7.0): init_file's
    /// file_set_fsnotify_mode writes `f_mode` after file_ref_init.
    FsnotifyModeAfterRefInit,
    /// A reordering inside file_lock that must hold: __set_open_fd marks
    /// the word full in full_fds_bits before it sets the open bit (a
    /// mid-section state no other CPU can see).
    SetOpenFdMarksFullFirst,
    /// Mutant: expand_fdtable publishes the new table before copying into
    /// it, so a lockless fget can see it half built.
    ExpandPublishesBeforeCopy,
    /// Mutant of __fget_light: `files->count` read with a plain
    /// atomic_read, not atomic_read_acquire.
    FgetLightRelaxedCount,
    /// Mutant of alloc_fdtable (brief §4.5.15): the size cut down to a
    /// lowered sysctl_nr_open is not compared with the size wanted.
    AllocFdtableTrustsSize,
    /// Mutant of __range_close: after dropping file_lock for filp_close it
    /// keeps the table it read before.
    RangeCloseKeepsStaleTable,
    /// Mutant of do_close_on_exec: filp_close runs before the slot is
    /// cleared, so a lockless reader can still load the closed file's
    /// pointer after its memory was recycled.
    CloseOnExecPutsBeforeUnpublish,
    /// Mutant of dup_fd's resize loop: after re-taking the parent's
    /// file_lock it keeps the table it read before.
    DupFdKeepsStaleTable,
    /// Mutant of sane_fdtable_size: when the last open fd lies in the punch
    /// hole it sizes the copy for no fd at all, without looking below the
    /// hole.
    SaneFdtableSizeTrustsHole,
}

/// A variant as the model sees it: a base and at most one bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavor {
    pub base: Base,
    pub bug: Option<Bug>,
}

impl Flavor {
    /// Whether the variant has `bug`: a variant site ([`crate::patch`]).
    #[track_caller]
    pub fn has(self, bug: Bug) -> bool {
        crate::patch::site(self.bug == Some(bug))
    }
}

/// A `struct file` as the fd table sees it.
pub struct File {
    /// v6.10 `f_count` (0 means dead) or v6.13+ `f_ref` (`file_ref_t`).
    pub f_ref: Atomic,
    /// f_mode (only FMODE_PATH matters here).
    pub f_mode: Atomic,
}

/// One incarnation of a file: slab object and its generation (a recycled
/// SLAB_TYPESAFE_BY_RCU object is a different file at the same address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileId {
    pub obj: ObjRef,
    pub gen: u32,
}

impl std::fmt::Display for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "file#{}.{}", self.obj, self.gen)
    }
}

/// The bitmaps of one fdtable, guarded by the owner's file_lock.
#[derive(Clone, Debug)]
pub struct FdBits {
    pub open_fds: Bitmap,
    pub close_on_exec: Bitmap,
    pub full_fds_bits: Bitmap,
}

impl FdBits {
    fn new(max_fds: u32) -> FdBits {
        FdBits {
            open_fds: Bitmap::new("open_fds", BITS_PER_LONG, max_fds),
            close_on_exec: Bitmap::new("close_on_exec", BITS_PER_LONG, max_fds),
            full_fds_bits: Bitmap::new("full_fds_bits", BITS_PER_LONG, max_fds / BITS_PER_LONG),
        }
    }
}

/// struct fdtable.
pub struct FdTable {
    pub max_fds: u32,
    /// fd[]: slots holding a file's ObjRef (0 = NULL), published with
    /// release stores and read locklessly.
    pub fd: Vec<Atomic>,
    pub bits: Locked<FdBits>,
    /// The table embedded in files_struct (`&files->fdtab`): never freed.
    pub embedded: bool,
}

impl FdTable {
    fn new(
        lock: &SpinLock,
        label: &str,
        max_fds: u32,
        slots: &[ObjRef],
        embedded: bool,
    ) -> FdTable {
        FdTable {
            max_fds,
            fd: (0..max_fds)
                .map(|i| {
                    let v = slots.get(i as usize).copied().unwrap_or(0);
                    Atomic::with_format(format!("{label}.fd[{i}]"), v, Show::With(file_label))
                })
                .collect(),
            bits: Locked::new(lock, FdBits::new(max_fds)),
            embedded,
        }
    }
}

fn file_label(v: u64) -> String {
    if v == 0 {
        "NULL".to_string()
    } else {
        format!("file#{v}")
    }
}

pub(crate) fn table_label(v: u64) -> String {
    format!("fdtable#{v}")
}

/// struct files_struct (the fields the model needs).
pub struct FilesStruct {
    pub file_lock: SpinLock,
    /// files->fdt: RCU pointer to the current table (an ObjRef of `tables`).
    pub fdt: Atomic,
    /// files->next_fd: lower bound of the lowest free fd.
    pub next_fd: Locked<u32>,
    /// files->resize_in_progress: written under file_lock, read by fd_install.
    pub resize_in_progress: Atomic,
    /// files->count: tasks sharing this table (>1 makes expand wait a GP,
    /// 1 lets fdget borrow without a reference).
    pub count: Atomic,
}

/// Who holds an fd, as the ghost log tracks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// alloc_fd handed the fd to `by`; nothing installed yet.
    Reserved { by: Name },
    /// A file was installed by `by` (fd_install, dup2, F_DUPFD).
    Installed { by: Name, file: FileId },
}

/// One alloc_fd decision, with the bitmap it was taken on (under file_lock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocEvent {
    pub thread: Name,
    pub start: u32,
    /// RLIMIT_NOFILE as read at entry.
    pub end: u32,
    /// open_fds of the current table just before the decision, bit `fd` set
    /// for an open fd.
    pub open_before: u64,
    pub result: Result<u32, Errno>,
}

impl AllocEvent {
    /// The lowest fd ≥ `start` that was free when alloc_fd decided (fds
    /// past the table are free).
    pub fn lowest_free(&self, start: u32) -> u32 {
        (start..64)
            .find(|&fd| self.open_before >> fd & 1 == 0)
            .unwrap_or(64)
    }
}

/// fget's progress, per thread, for the linearizability check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FgetState {
    /// Lookup number `call` of `fd` is under way, no reference held.
    Looking { fd: u32, call: u32 },
    /// A reference on `file` is held, taken while looking up `fd`.
    Holding { fd: u32, file: FileId },
    /// fget returned `file` for `fd` (still holding the reference).
    Returned { fd: u32, file: FileId },
    /// Lookup number `call` found the slot of `fd` in table `table` NULL (or
    /// past its end): EBADF.
    Null { fd: u32, call: u32, table: ObjRef },
    /// The file at `fd` has a mode the caller's mask refuses.
    Masked { fd: u32 },
    /// fdget borrowed `file` from an unshared table, without a reference.
    Borrowing { fd: u32, file: FileId },
}

/// A child's table built by dup_fd (private to the child, so a snapshot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildTable {
    pub open: Vec<bool>,
    pub slots: Vec<ObjRef>,
    /// Fds open in the parent's table when it was copied, outside the punch
    /// hole, that the child's table is too small to hold.
    pub lost: Vec<u32>,
}

/// The ghost log: what happened, for the specs. Updated in the same step as
/// the state change it describes.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    pub allocs: Vec<AllocEvent>,
    pub claims: BTreeMap<u32, Vec<Claim>>,
    /// Files that are (or, until their fput, were) installed at each fd.
    pub occupants: BTreeMap<u32, Vec<FileId>>,
    pub fgets: BTreeMap<Name, FgetState>,
    pub children: Vec<ChildTable>,
    /// The file installed at each fd, from fd_install's (or dup2's) slot
    /// store to the slot store that closes it.
    pub installed: BTreeMap<u32, FileId>,
    /// Lookups begun so far (numbers each one).
    pub lookups: u32,
    /// File objects whose init_file has begun and not finished: a reader
    /// must never see their fields.
    pub half_built: Vec<ObjRef>,
    /// The references lockless readers hold: (reader, file object), from
    /// the get that succeeded to the decrement of their put.
    pub reader_refs: Vec<(Name, ObjRef)>,
}

/// The initial state of a scenario.
#[derive(Clone, Debug)]
pub struct Init {
    /// Size of the current table (NR_OPEN_DEFAULT for the embedded one).
    pub max_fds: u32,
    /// Open fds and which initial file (index into `nfiles`) each holds.
    pub fds: Vec<(u32, usize)>,
    pub nfiles: usize,
    pub rlimit: u32,
    /// Whether the table is the one embedded in files_struct (never freed);
    /// otherwise it stands for one a previous expansion allocated.
    pub embedded: bool,
}

/// The process (one shared files_struct) and the caches it uses.
pub struct Fs {
    pub flavor: Flavor,
    pub files: FilesStruct,
    pub tables: Arc<Slab<FdTable>>,
    pub filp: Slab<File>,
    /// The slab allocator's own synchronisation (SLUB's per-CPU freelist
    /// and node locks): a recycled file's memory is handed from the freeing
    /// CPU to the allocating one with a happens-before edge.
    filp_cachep: crate::sync::Mutex,
    /// files->resize_wait: held by the resizer while resize_in_progress is
    /// set; a waiter sleeps on it (wait_event) until wake_up_all.
    resize_wait: crate::sync::Mutex,
    pub rcu: Rcu,
    /// current->signal->rlim[RLIMIT_NOFILE].rlim_cur
    pub rlimit_nofile: Atomic,
    /// fs.nr_open (sysctl_nr_open).
    pub sysctl_nr_open: Atomic,
    ghost: GhostMutex<Ghost>,
}

impl Fs {
    /// Builds the initial state (inside an engine, before any thread runs):
    /// `sharers` tasks share the table (`files->count`).
    pub fn new(flavor: Flavor, init: &Init, sharers: u32) -> Fs {
        Fs::new_in(flavor, init, sharers, Rcu::new())
    }

    /// [`Fs::new`] in the kernel's RCU domain `rcu` (one kernel, one RCU:
    /// a model that composes the table with other mechanisms passes theirs,
    /// so one grace-period kthread frees for all of them).
    pub fn new_in(flavor: Flavor, init: &Init, sharers: u32, rcu: Rcu) -> Fs {
        let file_lock = SpinLock::new("file_lock");
        // Initial files are objects 1..=nfiles, preallocated below.
        let mut slots = vec![0; init.max_fds as usize];
        for &(fd, f) in &init.fds {
            slots[fd as usize] = f as ObjRef + 1;
        }
        let tables = Arc::new(Slab::new("fdtable").allocated_by("kmalloc", "kfree"));
        let embedded = init.embedded;
        let label = format!("fdtable#{}", 1);
        let table = FdTable::new(&file_lock, &label, init.max_fds, &slots, embedded);
        table.bits.exclusive(|b| {
            for &(fd, _) in &init.fds {
                alloc::set_open_bits(b, fd, false);
            }
        });
        let fdt = tables.prealloc(table);
        let mut ghost = Ghost::default();
        for &(fd, f) in &init.fds {
            let file = FileId {
                obj: f as ObjRef + 1,
                gen: 1,
            };
            ghost
                .claims
                .insert(fd, vec![Claim::Installed { by: "init", file }]);
            ghost.occupants.insert(fd, vec![file]);
            ghost.installed.insert(fd, file);
        }
        let next_fd = (0..)
            .find(|fd| !init.fds.iter().any(|(f, _)| f == fd))
            .unwrap_or(0);
        let fs = Fs {
            flavor,
            files: FilesStruct {
                fdt: Atomic::with_format("files->fdt", fdt, Show::With(table_label)),
                next_fd: Locked::new(&file_lock, next_fd),
                resize_in_progress: Atomic::new("resize_in_progress", 0),
                count: Atomic::new("files->count", u64::from(sharers)),
                file_lock,
            },
            tables,
            filp: Slab::typesafe_by_rcu("file"),
            filp_cachep: crate::sync::Mutex::new(),
            resize_wait: crate::sync::Mutex::new(),
            rcu,
            rlimit_nofile: Atomic::new("RLIMIT_NOFILE", u64::from(init.rlimit)),
            sysctl_nr_open: Atomic::new("sysctl_nr_open", u64::from(SYSCTL_NR_OPEN)),
            ghost: GhostMutex::new(ghost),
        };
        for i in 0..init.nfiles {
            let refs = init.fds.iter().filter(|(_, f)| *f == i).count() as u64;
            fs.filp
                .prealloc(fget::fresh_file(&fs, i as u64 + 1, refs, 0));
        }
        fs
    }

    /// The incarnation of file object `obj` right now (ghost).
    pub fn file_id(&self, obj: ObjRef) -> FileId {
        let gen = match self.filp.state(obj) {
            ObjState::Live { gen } | ObjState::Freed { gen } => gen,
        };
        FileId { obj, gen }
    }

    /// `&fdt->fd[fd]`. An index past max_fds is an out-of-bounds access in
    /// the kernel: raised as `slot_in_bounds`.
    pub(crate) fn slot<'a>(&self, t: &Task, fdt: &'a FdTable, fd: u32) -> &'a Atomic {
        match fdt.fd.get(fd as usize) {
            Some(slot) => slot,
            None => t.violation(
                "slot_in_bounds",
                format!(
                    "{} touches fd[{fd}] of a table of {} slots",
                    t.name(),
                    fdt.max_fds
                ),
            ),
        }
    }

    /// files_fdtable() under file_lock (rcu_dereference_protected): only lock
    /// holders write `files->fdt`, so the lock's happens-before edge makes
    /// the latest value the one read; no scheduling point, no step.
    fn files_fdtable_locked(&self) -> ObjRef {
        self.files.fdt.peek()
    }

    /// The ghost log (specs read it; the model appends to it).
    pub fn ghost(&self) -> MutexGuard<'_, Ghost> {
        self.ghost.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current table (`files->fdt` as last stored), for observers.
    pub fn current_table(&self) -> Arc<FdTable> {
        self.tables.peek(self.files.fdt.peek())
    }

    /// files->next_fd (ghost).
    pub fn next_fd(&self) -> u32 {
        self.files.next_fd.peek(|n| *n)
    }

    /// RLIMIT_NOFILE (ghost).
    pub fn rlimit(&self) -> u32 {
        self.rlimit_nofile.peek() as u32
    }

    /// Whether file object `obj` is allocated (ghost).
    pub fn file_is_live(&self, obj: ObjRef) -> bool {
        matches!(self.filp.state(obj), ObjState::Live { .. })
    }

    /// The references a file's counter word `raw` stands for
    /// (file_ref_read of this kernel's counter).
    pub fn file_refs_in(&self, raw: u64) -> u64 {
        file_ref::file_ref_read(self.flavor.base, raw)
    }

    /// Calls `f` with every live file incarnation, the number of
    /// references its counter stands for (file_ref_read) and the counter's
    /// name in traces.
    pub fn live_files(&self, mut f: impl FnMut(FileId, u64, Name)) {
        let base = self.flavor.base;
        self.filp.each(|obj, state, file| {
            if let ObjState::Live { gen } = state {
                f(
                    FileId { obj, gen },
                    file_ref::file_ref_read(base, file.f_ref.peek()),
                    file.f_ref.name(),
                );
            }
        });
    }
}

/// setrlimit(RLIMIT_NOFILE, n) from another thread: a single store.
pub fn do_prlimit(fs: &Fs, t: &Task, n: u32) {
    let _f = t.enter("do_prlimit");
    fs.rlimit_nofile.write_once(t, u64::from(n));
}

/// A write of fs.nr_open (`proc_douintvec_minmax` on sysctl_nr_open): a
/// single store; expand_files and alloc_fdtable read it without a lock.
pub fn sysctl_nr_open_write(fs: &Fs, t: &Task, n: u32) {
    let _f = t.enter("proc_douintvec_minmax");
    fs.sysctl_nr_open.write_once(t, u64::from(n));
}
