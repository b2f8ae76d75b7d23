//! fs/namei.c: `struct nameidata` and the path walk, lazy (RCU-walk) first
//! and legitimized into a ref-walk when it must (logic read in the
//! vfs-7.3-rc1.misc merge copy of fs/namei.c, 1c3e8cef79ea; the functions
//! named here have the same shape in v6.12 except where a doc comment says).
//!
//! - [`walk`]: `path_init`, `link_path_walk`, `walk_component`,
//!   `lookup_fast`, `lookup_slow`, `step_into`, `handle_mounts`,
//!   `pick_link`, `handle_dots`, `complete_walk`, `terminate_walk`,
//!   `path_lookupat`, `filename_lookup`.
//! - [`unlazy`]: `leave_rcu`, `try_to_unlazy`, `try_to_unlazy_next`,
//!   `legitimize_links`, `legitimize_path`, `legitimize_root`.
//!
//! The walker's state machine is the kernel's: RCU (LOOKUP_RCU set, the RCU
//! read lock held, no references, every position validated by a `d_seq`
//! sample) → REF (references on path, links and maybe root) on a
//! successful `try_to_unlazy*`, or FAIL_ECHILD → `terminate_walk` and a
//! restart without LOOKUP_RCU. Every step that touches memory another
//! thread writes is a separate engine operation.
//!
//! Abstracted away (the `unlazy` model's LIMITS say so to reviewers):
//! permissions (`may_lookup` grants), dentry operations other than one
//! `d_revalidate` (-ECHILD in RCU mode, valid in ref mode), automounts and `d_manage`, atime, LSM hooks, absolute
//! symlink bodies, dfd-relative lookups (only the cwd), nd_jump_link, scoped lookups (LOOKUP_BENEATH/IN_ROOT),
//! the heap symlink stack (two embedded levels), and chroot/chdir races
//! (`fs->seq` is sampled but nothing writes it).

pub mod open;
pub mod unlazy;
pub mod walk;

use crate::kernel::errptr::Errno;
use crate::vfs::{InodeRef, Path, VfsBug};

pub use walk::{filename_lookup, path_lookupat, path_put, ref_walk_lookup, Walk};

/// LOOKUP_* flags (include/linux/namei.h, vfs-7.3-rc1.lookup copy; OPEN is
/// BIT(16) there, CREATE and EXCL are taken as the next two bits, not re-read).
pub const LOOKUP_FOLLOW: u32 = 1 << 0;
pub const LOOKUP_DIRECTORY: u32 = 1 << 1;
pub const LOOKUP_REVAL: u32 = 1 << 7;
pub const LOOKUP_RCU: u32 = 1 << 8;
pub const LOOKUP_CACHED: u32 = 1 << 9;
pub const LOOKUP_PARENT: u32 = 1 << 10;
pub const LOOKUP_OPEN: u32 = 1 << 16;
pub const LOOKUP_CREATE: u32 = 1 << 17;
pub const LOOKUP_EXCL: u32 = 1 << 18;

/// `nd->state` bits (fs/namei.c).
pub const ND_ROOT_PRESET: u32 = 1;
pub const ND_ROOT_GRABBED: u32 = 2;
pub const ND_JUMPED: u32 = 4;

/// `walk_component` / `step_into` flags (fs/namei.c).
pub const WALK_TRAILING: u32 = 1;
pub const WALK_MORE: u32 = 2;
pub const WALK_NOFOLLOW: u32 = 4;

/// EMBEDDED_LEVELS: symlinks the nameidata's own stack holds.
pub const EMBEDDED_LEVELS: usize = 2;
/// MAXSYMLINKS.
pub const MAXSYMLINKS: u32 = 40;

/// Lazy attempts the `LazyRetryOnEchild` mutant makes before ref mode (a
/// bound, so that the model's executions stay finite).
pub const LAZY_RETRIES: u32 = 2;

/// A defect in the walk (a mutant or a real bug), on top of the current
/// code; substrate bugs are [`VfsBug`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// `__legitimize_path` takes the dentry reference but skips the
    /// `read_seqcount_retry` that proves the view is still current.
    LegitimizeSkipsSeqCheck,
    /// `try_to_unlazy` leaves RCU (`rcu_read_unlock`) before legitimizing.
    UnlazyLeavesRcuFirst,
    /// `__legitimize_path` takes the dentry reference with `lockref_get`
    /// (no dead check) instead of `lockref_get_not_dead`.
    LegitimizeGetsDead,
    /// On a failed legitimization the path fields are left as they were, so
    /// `terminate_walk` puts references that were never taken.
    UnlazyKeepsUngrabbedPath,
    /// `lookup_fast` in RCU mode takes a reference on the child it found
    /// (`dget`): a refcount write while lazy.
    RcuLookupTakesRef,
    /// A miss in RCU mode goes to `lookup_slow` without `try_to_unlazy`:
    /// `i_rwsem` taken inside the RCU read section.
    RcuMissSkipsUnlazy,
    /// `filename_lookup` returns -ECHILD instead of restarting in ref mode.
    NoRefWalkRestart,
    /// `filename_lookup` retries the lazy walk on -ECHILD (up to
    /// [`LAZY_RETRIES`] times) before falling back to ref mode: under a
    /// writer that keeps the sequence counts moving it restarts without end.
    LazyRetryOnEchild,
    /// In ref mode, positivity is read from `d_flags` with a plain load
    /// instead of `smp_load_acquire` (before "fix missing barriers when
    /// checking positivity", v5.5).
    PositivityNoAcquire,
    /// `step_into` (RCU branch) turns a NULL inode into -ENOENT before
    /// `read_seqcount_retry` proves the snapshot current (Al Viro's concern
    /// of 14 Aug 2024 on the O_CREAT fast path, made a mutant).
    StepIntoNullBeforeSeqCheck,
    /// 6c6ec2b0a3e0 as merged (before eacd9aa8cede), and the same shape in
    /// the first fix proposed for 7c179096e77e (Dec 2025): the LOOKUP_CACHED
    /// exit of `try_to_unlazy*` fails before `legitimize_links` without
    /// `drop_links` and without zeroing `depth`, so `terminate_walk`, now in
    /// ref mode, puts link references that were never taken.
    CachedBailoutKeepsDepth,
    /// 7c179096e77e before 46af9ae1305f: the LOOKUP_CACHED test lives in
    /// `legitimize_links`, which `if (nd->depth && ...)` skips at depth 0,
    /// so a cached walk without symlinks legitimizes and goes on in ref mode.
    DepthPredictSkipsCachedTest,
    /// Before "Make sure nd->path.mnt and nd->path.dentry are always valid
    /// pointers" (Viro, v5.12; reconstructed from its message, the hunk was
    /// not read): `terminate_walk` leaves `nd->path` as it
    /// was and `path_init` clears it only past its LOOKUP_CACHED guard, so a
    /// second attempt failing at the guard hands `terminate_walk` the first
    /// attempt's unreferenced pointers.
    StalePathAfterFailedInit,
    /// The fix Chris Mason's report proposed for 7c179096e77e (12 Dec
    /// 2025): `try_to_unlazy` tests LOOKUP_CACHED before the depth test and
    /// bails out without `drop_links` or zeroing `depth` (2021's shape);
    /// `try_to_unlazy_next`, which the proposal did not show, keeps
    /// 7c179096e77e's depth-predicated test.
    CachedTestBeforeDepth,
    /// eacd9aa8cede as first written (Jens Axboe caught it, "since we are
    /// zeroing ->depth here, we need to do drop_links() first"): the
    /// LOOKUP_CACHED exit zeroes `depth` without `drop_links`, so the link
    /// bodies' delayed releases never run.
    CachedBailoutSkipsDropLinks,
    /// Constructed: under LOOKUP_CACHED, `lookup_fast` reports a dcache miss
    /// as -ENOENT (a miss taken for a negative entry) instead of failing the
    /// unlazy.
    CachedMissIsEnoent,
    /// A reviewer's patch (constructed, issue 16): `try_to_unlazy`
    /// legitimizes the path before the links, keeping each call's failure
    /// exit. A failed path leaves `depth` links never grabbed for
    /// `terminate_walk` to put; failed links after a grabbed path NULL a
    /// path whose references are held.
    UnlazyPathBeforeLinks,
    /// Constructed (issue 16 item 7): `try_to_unlazy_next` takes the
    /// parent's reference, then finds the child dead and leaves by the
    /// label that also forgets the parent (`goto out1` for `goto out`):
    /// `nd->path.dentry` is NULL while its reference is held, so
    /// `terminate_walk` never puts it.
    UnlazyNextDeadChildForgetsParent,
    /// Constructed (issue 16 item 7): `follow_dotdot_rcu` takes `d_parent`
    /// and samples its seq but drops the re-check of the current dentry's
    /// `d_seq` ("makes sure that non-RCU pathwalk could reach this state"):
    /// a parent read before a rename moved the dentry away is stepped onto
    /// as it is after the rename.
    DotdotRcuSkipsSeqCheck,
}

/// A variant as the walk sees it: substrate and walk defects, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flavor {
    pub vfs: Option<VfsBug>,
    pub bug: Option<Bug>,
}

impl Flavor {
    /// Whether the variant has `bug`: a variant site ([`crate::patch`]).
    #[track_caller]
    pub fn has(self, bug: Bug) -> bool {
        crate::patch::site(self.bug == Some(bug))
    }

    /// Marks an exit of `bug`'s changed region ([`crate::patch`]); `label`
    /// names it in the review's list of exits no scenario reached.
    #[track_caller]
    pub fn exit(self, bug: Bug, label: &'static str) {
        debug_assert!(!label.is_empty());
        if self.bug == Some(bug) {
            crate::patch::exit();
        }
    }
}

/// How a component was classified (`nd->last_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastType {
    Norm,
    Root,
    DotDot,
}

/// One symlink on the walk's stack (`struct saved`).
#[derive(Clone, Debug, Default)]
pub struct Saved {
    pub link: Path,
    /// `d_seq` sample of the link's dentry.
    pub seq: u64,
    /// Where to resume in the outer string (its remaining components).
    pub name: Vec<u64>,
    /// Ghost: the body's delayed release (`last->done`) is armed: procfs's
    /// `self` links allocate their body and free it there.
    pub armed: bool,
}

/// `struct nameidata` (fs/namei.c).
#[derive(Debug)]
pub struct Nameidata {
    pub path: Path,
    pub last: u64,
    pub last_type: LastType,
    pub root: Path,
    pub inode: InodeRef,
    pub flags: u32,
    pub state: u32,
    pub seq: u64,
    pub next_seq: u64,
    pub m_seq: u64,
    pub r_seq: u64,
    pub root_seq: u64,
    pub depth: usize,
    pub total_link_count: u32,
    pub stack: Vec<Saved>,
    /// Ghost: inside a legitimization (the only place an RCU walk may take
    /// references).
    pub legitimizing: bool,
}

impl Nameidata {
    /// `__set_nameidata`: an empty walk whose path is NULL, NULL (so
    /// `terminate_walk` is safe even if `path_init` fails first).
    pub fn new() -> Nameidata {
        Nameidata {
            path: Path::NULL,
            last: 0,
            last_type: LastType::Root,
            root: Path::NULL,
            inode: 0,
            flags: 0,
            state: 0,
            seq: 0,
            next_seq: 0,
            m_seq: 0,
            r_seq: 0,
            root_seq: 0,
            depth: 0,
            total_link_count: 0,
            stack: vec![Saved::default(); EMBEDDED_LEVELS],
            legitimizing: false,
        }
    }

    pub fn rcu(&self) -> bool {
        self.flags & LOOKUP_RCU != 0
    }

    /// The nameidata of the next `path_openat`/`path_lookupat` attempt: the
    /// kernel reuses one struct (`set_nameidata` once per call), so what
    /// `path_init` does not overwrite carries over: the path (NULL since
    /// `terminate_walk` clears it), the flags until `path_init` sets them,
    /// and the symlink count.
    pub fn next_attempt(&self) -> Nameidata {
        Nameidata {
            path: self.path,
            flags: self.flags,
            total_link_count: self.total_link_count,
            ..Nameidata::new()
        }
    }
}

impl Default for Nameidata {
    fn default() -> Self {
        Self::new()
    }
}

/// `struct filename` as the walk reads it: the pathname split into
/// components, whether it starts at the root or at the cwd, and whether it
/// ends in a slash (the open path treats a trailing slash on the last
/// component specially).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filename {
    pub absolute: bool,
    pub comps: Vec<u64>,
    pub trailing_slash: bool,
}

impl Filename {
    /// `/a/b`, `a/b` (from the cwd), `..`, `/a/b/`.
    pub fn new(path: &str) -> Filename {
        Filename {
            absolute: path.starts_with('/'),
            comps: crate::vfs::components(path),
            trailing_slash: path.len() > 1 && path.ends_with('/'),
        }
    }
}

/// What a lookup returns: the path (with its references, the caller's to
/// put) or an errno.
pub type LookupResult = Result<Path, Errno>;
