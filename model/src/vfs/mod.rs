//! Shared VFS state and its primitives — no mechanism logic. The path-walk
//! models (`namei`: unlazy, open_creat, nonblock, open) build on it.
//!
//! - [`dentry`]: `struct dentry` (d_seq, d_lockref, d_inode + type bits in
//!   d_flags, d_parent, d_name, hashed), the dcache hash looked up by
//!   (parent, name), and its writers: `__d_instantiate`/`d_add`,
//!   `dentry_unlink_inode`, `__d_drop`, `d_delete`, `__d_move`/`d_move`, the
//!   final `dput` (`fast_dput`, `dentry_kill`), `dget`, `dget_parent`,
//!   `__d_lookup_rcu` and `d_lookup` (fs/dcache.c, v7.3-rc5 copy).
//! - [`mount`]: `struct mount` (mnt_count, mnt_flags, mnt_ns), the global
//!   `mount_lock`, `__legitimize_mnt`, `mntput`, `__lookup_mnt`, a minimal
//!   synchronous `do_umount` (fs/namespace.c, v7.3-rc1 copy).
//! - [`in_lookup`]: `d_alloc_parallel`'s in-lookup dentries, their waiters
//!   and `__d_add`'s hand-over into the hash under `i_dir_seq`.
//! - [`inode`]: inodes with `i_rwsem`, symlink bodies, S_DEAD, `i_dir_seq`
//!   and a directory delegation.
//! - [`refs`]: the ghost reference ledger: who holds which reference on which
//!   dentry or mount, so a leak, a double put, or a get on a dead or freed
//!   object is named in the trace with its holder.
//! - [`namespace`]: the ghost namespace the adversaries' operations keep, the
//!   sequential reference a walk's result is judged against.
//!
//! Lock classes: `d_lock` (one class for every dentry, nested parent → child
//! with subclasses as `DENTRY_D_LOCK_NESTED`), `rename_lock`, `mount_lock`,
//! `i_rwsem`, `namespace_sem`; lockdep's order check covers them all.
//!
//! Abstracted away (see each model's `LIMITS`): dentry operations but one
//! `d_revalidate` a scenario can give a dentry (`d_hash`, `d_compare`,
//! invalidation by `d_revalidate`), permissions (`may_lookup` always
//! grants), automounts and `d_manage`, atime, lazy umount, mount
//! propagation, the LRU and shrinkers, inode freeing (inodes live for the
//! whole execution), and hash collisions (one chain per name).

pub mod dentry;
pub mod in_lookup;
pub mod inode;
pub mod mount;
pub mod namespace;
pub mod refs;
pub mod setup;
pub mod syscalls;

use std::sync::{Arc, Mutex as GhostMutex, MutexGuard};

use crate::kernel::atomic::Atomic;
use crate::kernel::errptr::Errno;
use crate::kernel::rcu::{ObjRef, Rcu, Slab};
use crate::kernel::seqcount::SeqLock;
use crate::kernel::sleeping::Mutex;
use crate::kernel::spinlock::SpinLock;

pub use dentry::Dentry;
pub use inode::{Inode, Kind};
pub use mount::Mount;
pub use namespace::Namespace;
pub use refs::{Ledger, Obj};
pub use setup::{components, Node};
pub use syscalls::Umount;

/// A dentry, inode or mount: index + 1 in its cache, 0 is NULL.
pub type DentryRef = ObjRef;
pub type InodeRef = ObjRef;
pub type MountRef = ObjRef;

/// Component names a model's namespace uses (a name is its index here):
/// fixed, so a trace can name them from the raw word alone.
pub const NAMES: [&str; 15] = [
    "/",
    "a",
    "b",
    "c",
    "l",
    "x",
    "tmp",
    "d",
    "b2",
    "m",
    "proc",
    "thread-self",
    "1",
    "2",
    "comm",
];

/// The name of the `/proc` directory of the task with identity `ident`
/// (what procfs's `self` links resolve to).
pub fn ident_name(ident: u32) -> u64 {
    name_id(&ident.to_string())
}

/// The name with index `id`.
pub fn name_of(id: u64) -> &'static str {
    NAMES.get(id as usize).copied().unwrap_or("?")
}

fn show_name(id: u64) -> String {
    name_of(id).to_string()
}

/// The index of `name` in [`NAMES`].
///
/// # Panics
/// On a name the table does not hold: a scenario bug.
pub fn name_id(name: &str) -> u64 {
    NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("{name} is not in vfs::NAMES")) as u64
}

/// `struct path`: a mount and a dentry on it (NULL, NULL when empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Path {
    pub mnt: MountRef,
    pub dentry: DentryRef,
}

impl Path {
    pub const NULL: Path = Path { mnt: 0, dentry: 0 };
}

/// A defect in the substrate itself (fs/dcache.c, fs/namespace.c): the real
/// bugs whose fixes live in these functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfsBug {
    /// Before e84009336711 (v5.5): dget_parent's fast path re-checks that
    /// `d_parent` is still the same pointer instead of `d_seq`.
    DgetParentPointerRecheck,
    /// Before 250cf3693060 (2025): `__legitimize_mnt` tests MNT_SYNC_UMOUNT
    /// without `mount_lock`.
    LegitimizeMntUnlockedUmountTest,
    /// Before 65781e19dcfc (2025): `do_umount` lacks the `smp_mb()` that
    /// pairs with `__legitimize_mnt`'s.
    UmountMissingMb,
    /// Before 119e1ef80ecf (2018): `__legitimize_mnt` has no `smp_mb()`
    /// after its increment and undoes nothing under `mount_lock`;
    /// `mntput_no_expire` has no barrier after taking it.
    MntputLegitimizeRace2018,
    /// `retain_dentry` without its `d_unhashed` test (constructed): the
    /// final `dput` of an unhashed dentry keeps it at count 0 instead of
    /// killing it, where no lookup can find it and nothing will free it.
    RetainDentryKeepsUnhashed,
    /// `__d_lookup_rcu` without its `d_parent` comparison (constructed):
    /// any hashed dentry of the name matches, whichever directory holds it
    /// (the model's hash has one chain per name, the kernel's one per
    /// parent and name, where the same slip shows on a hash collision).
    DLookupRcuSkipsParent,
}

/// `fs_struct`: the task's root and cwd under `fs->seq`.
pub struct FsStruct {
    pub seq: SeqLock,
    pub root: Path,
    pub pwd: Path,
}

/// A lookup as the ghost log keeps it, for the linearizability check: what
/// the path resolved to (in the ghost namespace) at the instants the lookup
/// was in progress, and what it returned.
#[derive(Clone, Debug)]
pub struct Lookup {
    pub thread: crate::trace::Name,
    /// The inode the walk starts from: the root's, or the cwd's.
    pub start: InodeRef,
    pub absolute: bool,
    pub path: Vec<u64>,
    /// The last namespace version current while it ran.
    pub last: usize,
    /// The inode of the returned dentry, or the errno.
    pub result: Option<Result<InodeRef, Errno>>,
    pub ref_walk_restarts: u32,
    pub reval_restarts: u32,
}

/// The VFS one execution runs on.
pub struct Vfs {
    pub bug: Option<VfsBug>,
    pub dentries: Arc<Slab<Dentry>>,
    pub inodes: Slab<Inode>,
    pub mounts: Arc<Slab<Mount>>,
    pub rcu: Rcu,
    /// The dcache hash: one RCU chain per name, a bit per dentry on it.
    pub buckets: Vec<Atomic>,
    /// The in-lookup hash: one chain of DCACHE_PAR_LOOKUP dentries for the
    /// whole table (the kernel's has buckets by parent and name hash), under
    /// one bit lock (`in_lookup_hashtable`).
    pub in_lookup: Atomic,
    pub in_lookup_lock: SpinLock,
    pub rename_lock: SeqLock,
    pub mount_lock: SeqLock,
    pub namespace_sem: Mutex,
    pub fs: FsStruct,
    pub refs: Ledger,
    /// Every version of the ghost namespace, oldest first (a new one per
    /// namespace change).
    ns: GhostMutex<Vec<Namespace>>,
    lookups: GhostMutex<Vec<Lookup>>,
    umounts: GhostMutex<Vec<Umount>>,
}

impl Vfs {
    /// An empty VFS; [`Vfs::build`] fills it.
    fn new(bug: Option<VfsBug>) -> Vfs {
        Vfs {
            bug,
            dentries: Arc::new(
                Slab::new("dentry").allocated_by("kmem_cache_alloc_lru", "kmem_cache_free"),
            ),
            inodes: Slab::new("inode"),
            mounts: Arc::new(
                Slab::new("mount").allocated_by("kmem_cache_zalloc", "kmem_cache_free"),
            ),
            rcu: Rcu::new(),
            buckets: Vec::new(),
            in_lookup: Atomic::with_format(
                "in_lookup_hash",
                0,
                crate::trace::Show::With(setup::show_chain),
            ),
            in_lookup_lock: SpinLock::new("in_lookup_hashtable"),
            rename_lock: SeqLock::new("rename_lock"),
            mount_lock: SeqLock::new("mount_lock"),
            namespace_sem: Mutex::new("namespace_sem"),
            fs: FsStruct {
                seq: SeqLock::new("fs->seq"),
                root: Path::NULL,
                pwd: Path::NULL,
            },
            refs: Ledger::default(),
            ns: GhostMutex::new(Vec::new()),
            lookups: GhostMutex::new(Vec::new()),
            umounts: GhostMutex::new(Vec::new()),
        }
    }

    /// Whether the substrate has `bug`: a variant site ([`crate::patch`]).
    #[track_caller]
    pub fn has(&self, bug: VfsBug) -> bool {
        crate::patch::site(self.bug == Some(bug))
    }

    /// Every version of the ghost namespace, oldest first (the adversaries
    /// add one at each linearization point; specs read them).
    pub fn ns_history(&self) -> MutexGuard<'_, Vec<Namespace>> {
        self.ns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A namespace change: a new version, `f` applied to the current one.
    pub fn ns_update(&self, f: impl FnOnce(&mut Namespace)) {
        let mut h = self.ns_history();
        let mut next = h.last().cloned().unwrap_or_default();
        f(&mut next);
        h.push(next);
    }

    fn ns_version(&self) -> usize {
        self.ns_history().len() - 1
    }

    /// The ghost log of lookups (specs read it and record what each one's
    /// path resolved to while it ran).
    pub fn lookups(&self) -> MutexGuard<'_, Vec<Lookup>> {
        self.lookups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The ghost log of umount(2) calls.
    pub fn umounts(&self) -> MutexGuard<'_, Vec<Umount>> {
        self.umounts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A lookup of `path` (from the root if `absolute`, else from the
    /// cwd) by `t` starts; returns its index in the log.
    pub fn lookup_begin(
        &self,
        t: &crate::kernel::task::Task,
        path: &[u64],
        absolute: bool,
    ) -> usize {
        let last = self.ns_version();
        let from = if absolute { self.fs.root } else { self.fs.pwd };
        let start = self.dentry(from.dentry).d_inode.peek();
        let mut l = self.lookups();
        l.push(Lookup {
            thread: t.name(),
            start,
            absolute,
            path: path.to_vec(),
            last,
            result: None,
            ref_walk_restarts: 0,
            reval_restarts: 0,
        });
        l.len() - 1
    }

    /// Lookup `id` restarts (in ref-walk, or with LOOKUP_REVAL).
    pub fn lookup_restart(&self, id: usize, reval: bool) {
        let mut l = self.lookups();
        if reval {
            l[id].reval_restarts += 1;
        } else {
            l[id].ref_walk_restarts += 1;
        }
    }

    /// Lookup `id` returns.
    pub fn lookup_end(&self, id: usize, result: Result<InodeRef, Errno>) {
        let last = self.ns_version();
        let mut l = self.lookups();
        l[id].result = Some(result);
        l[id].last = last;
    }

    /// A dentry's memory for observers (no use-after-free check).
    pub fn dentry(&self, d: DentryRef) -> Arc<Dentry> {
        self.dentries.peek(d)
    }

    /// A mount's memory for observers.
    pub fn mount(&self, m: MountRef) -> Arc<Mount> {
        self.mounts.peek(m)
    }

    /// How traces and reports name a dentry: its label (`b`, `c'`).
    pub fn dentry_label(&self, d: DentryRef) -> &'static str {
        if d == 0 {
            "NULL"
        } else {
            self.dentries.peek(d).label
        }
    }
}
