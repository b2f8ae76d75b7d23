//! The open path's last component (fs/namei.c, vfs-7.3-rc1.misc copy
//! 1c3e8cef79ea: do_file_open, path_openat, open_last_lookups,
//! lookup_fast_for_open, trailing_slashes, lookup_open with the delegation
//! retry NeilBrown moved into it in June 2026, do_open; fs/open.c
//! build_open_flags, pull-filename copy 26c9342bb761), and the v6.11 shape
//! of open_last_lookups (the create branch that always left RCU mode and
//! took the parent's exclusive `i_rwsem`, as the copy read-file id
//! 27233755621 has it, a pre-v6.12 fs/namei.c whose exact version was not
//! identified, and as brief §1.2 describes it).
//!
//! It runs on the path-walk model ([`Walk`]: `path_init`, `link_path_walk`,
//! `lookup_fast`, `step_into`, `complete_walk`, `terminate_walk`,
//! `try_to_unlazy*`) and the VFS substrate (`d_lookup`, `d_alloc_parallel`,
//! `->lookup`/`->create` of a simple filesystem, `mnt_want_write`,
//! directory delegations, IS_DEADDIR).
//!
//! Abstracted away: `->atomic_open` filesystems, `d_revalidate` (no dentry
//! operations), permissions (`may_o_create`, `may_open` and
//! `may_create_in_sticky` grant), O_TRUNC's `handle_truncate`, O_TMPFILE and
//! O_PATH, read-only mounts (`mnt_want_write` always succeeds), fsnotify,
//! and `vfs_open`'s filesystem `->open` (the file takes its path
//! references and is FMODE_OPENED).

use std::sync::{Arc, Mutex as GhostMutex};

use crate::kernel::errptr::{ErrPtr, Errno};
use crate::kernel::task::Task;
use crate::trace::{intern, Name};
use crate::vfs::dentry::{DCACHE_DIRECTORY_TYPE, DCACHE_ENTRY_TYPE, DCACHE_PAR_LOOKUP};
use crate::vfs::inode::S_DEAD;
use crate::vfs::{DentryRef, InodeRef, Path, Vfs};

use super::walk::Walk;
use super::{
    Filename, Flavor, LastType, Nameidata, LOOKUP_CACHED, LOOKUP_CREATE, LOOKUP_DIRECTORY,
    LOOKUP_EXCL, LOOKUP_FOLLOW, LOOKUP_OPEN, LOOKUP_RCU, LOOKUP_REVAL, WALK_TRAILING,
};

/// open(2) flags, with the asm-generic values (include/uapi/asm-generic/fcntl.h,
/// not re-read: only which bits are distinct matters, and no trace shows them).
pub const O_WRONLY: u32 = 0o1;
pub const O_RDWR: u32 = 0o2;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_TRUNC: u32 = 0o1000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_DIRECTORY: u32 = 0o200000;
pub const O_NOFOLLOW: u32 = 0o400000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const __O_TMPFILE: u32 = 0o20000000;
/// O_TMPFILE includes O_DIRECTORY (so that an old kernel refuses it).
pub const O_TMPFILE: u32 = __O_TMPFILE | O_DIRECTORY;

/// `open_how.resolve`'s RESOLVE_CACHED (include/uapi/linux/openat2.h, not
/// re-read; only that it is its own bit matters).
pub const RESOLVE_CACHED: u64 = 0x20;

/// Not a kernel flag: Matthew Wilcox's question in the LOOKUP_NONBLOCK
/// thread (Dec 2020), "skip the RCU attempt on the retry", as Jens Axboe
/// measured it (LOOKUP_NO_RCU): `do_file_open` starts in ref-walk.
pub const LOOKUP_NO_RCU: u32 = 1 << 30;

/// `file->f_mode` bits the open path sets.
pub const FMODE_OPENED: u32 = 1 << 19;
pub const FMODE_CREATED: u32 = 1 << 20;

/// Which kernel's open_last_lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// v6.11: O_CREAT always unlazies, audits the parent, and takes the
    /// parent's exclusive `i_rwsem`; no delegation retry.
    V6_11,
    /// v7.3: `lookup_fast_for_open` first; a positive dentry finishes in
    /// whichever mode the walk is in; `lookup_open` takes the lock itself
    /// and retries after breaking a directory delegation.
    Current,
}

/// A change on a base: a patch revision, a real bug, or a constructed
/// mutant (the registry row says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Layton's v2: `lookup_fast`'s result is not tested with IS_ERR before
    /// the negative-dentry test reads its `d_inode`.
    V2NoIsErrCheck,
    /// Layton's v3 audit special case: with an audit context, a positive
    /// fast-path hit in RCU mode leaves it with `try_to_unlazy_next` (the
    /// child kept) and audits the parent, as v6.11 did for every O_CREAT.
    V3AuditUnlazyNext,
    /// O_CREAT|O_EXCL goes through the fast path too (the negative control:
    /// -EEXIST at the lookup instant is linearizable).
    OExclFastPath,
    /// The O_EXCL fast path opens the existing file: do_open forgets the
    /// -EEXIST test for a file it did not create.
    OExclFastPathOpens,
    /// The delegation retry re-enters below the `mnt_want_write` block,
    /// keeping the failed attempt's `got_write` after dropping its access.
    DelegationRetryKeepsState,
    /// v3's trailing-slash test stayed in the create branch after the fast
    /// path (before "fs: pull up trailing slashes check for O_CREAT").
    TrailingSlashAfterFastPath,
    /// The parent's audit record is emitted in `lookup_fast_for_open` for
    /// every O_CREAT, before the walk leaves RCU mode.
    AuditParentInRcu,
    /// O_CREAT takes the parent's `i_rwsem` shared, as a plain open does.
    CreateUnderSharedLock,
    /// `do_file_open` returns -ECHILD instead of retrying in ref-walk.
    NoRefWalkRetry,
    /// A negative dentry found in ref-walk is discarded without `dput`.
    NegativeDiscardLeaks,
    /// A negative dentry is `dput` even in RCU mode (no reference taken).
    NegativeDiscardDputsInRcu,
    /// Before a0fc452a5d7f: build_open_flags' RESOLVE_CACHED guard tests
    /// `O_TMPFILE`, which includes O_DIRECTORY (io_uring's
    /// `io_openat_force_async` had the same test).
    ResolveCachedTmpfileBits,
    /// Constructed: `do_file_open` retries an -EAGAIN as it retries
    /// -ESTALE (with LOOKUP_REVAL), a third `path_openat` that the
    /// LOOKUP_CACHED guard fails again.
    RetryEagainAsStale,
}

/// A variant of the open path: its base, one change, and the walk's own
/// flavour underneath (a walk defect switched on inside the open path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFlavor {
    pub base: Base,
    pub change: Option<Change>,
    pub walk: Flavor,
}

impl OpenFlavor {
    /// Whether the variant has change `c`: a variant site
    /// ([`crate::patch`]).
    #[track_caller]
    pub fn has(self, c: Change) -> bool {
        crate::patch::site(self.change == Some(c))
    }
}

/// fs/open.c:build_open_flags's result (`struct open_flags`).
#[derive(Clone, Copy, Debug)]
pub struct OpenFlags {
    pub open_flag: u32,
    pub intent: u32,
    pub lookup_flags: u32,
}

/// `struct open_how` (openat2(2)): the open flags and the RESOLVE_* bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenHow {
    pub flags: u32,
    pub resolve: u64,
}

/// fs/open.c:build_open_how (pull-filename copy): open(2)'s flags as an
/// `open_how` without RESOLVE_* bits.
pub fn build_open_how(flags: u32) -> OpenHow {
    OpenHow { flags, resolve: 0 }
}

/// fs/open.c:build_open_flags (pull-filename copy, reduced to the flags
/// the model uses): O_CREAT adds LOOKUP_CREATE, O_EXCL adds LOOKUP_EXCL
/// and implies O_NOFOLLOW; without O_NOFOLLOW the last component is
/// followed; O_DIRECTORY adds LOOKUP_DIRECTORY; RESOLVE_CACHED refuses
/// O_TRUNC, O_CREAT and __O_TMPFILE with -EAGAIN (they always need to
/// block) and otherwise adds LOOKUP_CACHED. `tmpfile_bits` is the defect
/// a0fc452a5d7f fixed: the test used O_TMPFILE, O_DIRECTORY included.
pub fn build_open_flags(how: &OpenHow, tmpfile_bits: bool) -> Result<OpenFlags, Errno> {
    let mut flags = how.flags;
    let mut intent = LOOKUP_OPEN;
    if flags & O_CREAT != 0 {
        intent |= LOOKUP_CREATE;
        if flags & O_EXCL != 0 {
            intent |= LOOKUP_EXCL;
            flags |= O_NOFOLLOW;
        }
    }
    let mut lookup_flags = if flags & O_NOFOLLOW == 0 {
        LOOKUP_FOLLOW
    } else {
        0
    };
    if flags & O_DIRECTORY != 0 {
        lookup_flags |= LOOKUP_DIRECTORY;
    }
    if how.resolve & RESOLVE_CACHED != 0 {
        let tmpfile = if tmpfile_bits { O_TMPFILE } else { __O_TMPFILE };
        if flags & (O_TRUNC | O_CREAT | tmpfile) != 0 {
            return Err(Errno::EAGAIN);
        }
        lookup_flags |= LOOKUP_CACHED;
    }
    Ok(OpenFlags {
        open_flag: flags,
        intent,
        lookup_flags,
    })
}

/// open(2)'s flags as `do_file_open` takes them (build_open_how, then
/// build_open_flags, which cannot fail without RESOLVE_* bits).
pub fn open_flags(flags: u32) -> OpenFlags {
    match build_open_flags(&build_open_how(flags), false) {
        Ok(op) => op,
        Err(e) => unreachable!("build_open_flags({flags:#o}) without RESOLVE_CACHED: {e}"),
    }
}

/// What an open returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    pub inode: InodeRef,
    pub created: bool,
}

/// One open(2) as the ghost log keeps it.
#[derive(Clone, Debug)]
pub struct OpenCall {
    pub thread: Name,
    pub name: Filename,
    pub flags: u32,
    /// The LOOKUP_* flags it was called with (LOOKUP_CACHED for an inline
    /// io_uring issue).
    pub lookup_flags: u32,
    /// The inode the walk starts from (the root's or the cwd's).
    pub start: InodeRef,
    /// The last namespace version current while it ran.
    pub last: usize,
    pub result: Option<Result<Opened, Errno>>,
    pub attempts: u32,
}

/// The ghost log of opens (specs read it).
#[derive(Default)]
pub struct OpenLog(GhostMutex<Vec<OpenCall>>);

impl OpenLog {
    pub fn calls(&self) -> std::sync::MutexGuard<'_, Vec<OpenCall>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `struct file` as the open path fills it.
#[derive(Clone, Copy, Debug, Default)]
pub struct File {
    pub f_mode: u32,
    pub f_path: Path,
}

/// One open in progress: the walk, the file, the flags and the log entry.
pub struct Open<'a> {
    pub w: Walk<'a>,
    pub file: File,
    pub op: OpenFlags,
    pub flavor: OpenFlavor,
    /// The task has an audit context (`audit_dummy_context()` is false).
    pub audit: bool,
    log: &'a OpenLog,
    call: usize,
    /// The outer name ends in a slash.
    trailing: bool,
}

type Step = Result<Option<Vec<u64>>, Errno>;

impl<'a> Open<'a> {
    fn vfs(&self) -> &'a Vfs {
        self.w.vfs
    }

    fn t(&self) -> &'a Task {
        self.w.t
    }

    fn nd(&mut self) -> &mut Nameidata {
        &mut self.w.nd
    }

    /// kernel/auditsc.c:__audit_inode (not read) where fs/namei.c
    /// (vfs-7.3-rc1.misc) calls it, as a trace note: with an
    /// audit context, record `dentry` (its name and inode are read, so the
    /// walk must hold a reference on it: ref-walk, or a lazy view it
    /// legitimized). Without one it does nothing.
    fn audit_inode(&self, dentry: DentryRef, parent: bool) {
        if !self.audit {
            return;
        }
        let _f = self.t().enter("audit_inode");
        let held = self
            .vfs()
            .refs
            .held_by(self.t().name())
            .iter()
            .any(|(o, _)| *o == crate::vfs::Obj::Dentry(dentry));
        if self.w.nd.rcu() || !held {
            self.t().violation(
                "audit_legitimized",
                format!(
                    "audit_inode({}{}) on a dentry the walk holds no reference on{}",
                    self.vfs().dentry_label(dentry),
                    if parent { ", AUDIT_INODE_PARENT" } else { "" },
                    if self.w.nd.rcu() { " (RCU mode)" } else { "" }
                ),
            );
        }
        self.t().note("audit {}", &[Vfs::dentry_val(dentry)]);
    }

    /// fs/namei.c:trailing_slashes (7.3): the last component of the name
    /// the caller passed (not of a symlink body) is followed by a slash.
    fn trailing_slashes(&self) -> bool {
        self.trailing && self.w.nd.depth == 0
    }

    /// fs/namei.c:lookup_fast_for_open (7.3): O_CREAT with a trailing slash
    /// is -EISDIR before any lookup, O_EXCL skips the fast path; otherwise
    /// `lookup_fast` in whichever mode the walk is in. An error or a miss
    /// is returned as is; for O_CREAT a negative dentry is discarded (its
    /// reference dropped only in ref-walk: RCU mode took none), since the
    /// create needs the lock.
    fn lookup_fast_for_open(&mut self) -> Result<Option<DentryRef>, Errno> {
        let _f = self.t().enter("lookup_fast_for_open");
        let open_flag = self.op.open_flag;
        if open_flag & O_CREAT != 0 {
            if self.trailing_slashes() && !self.flavor.has(Change::TrailingSlashAfterFastPath) {
                return Err(Errno::EISDIR);
            }
            if open_flag & O_EXCL != 0
                && !self.flavor.has(Change::OExclFastPath)
                && !self.flavor.has(Change::OExclFastPathOpens)
            {
                return Ok(None);
            }
            if self.flavor.has(Change::AuditParentInRcu) {
                self.audit_inode(self.w.nd.path.dentry, true);
            }
        }
        if self.trailing_slashes() {
            self.nd().flags |= LOOKUP_FOLLOW | LOOKUP_DIRECTORY;
        }
        let found = match self.w.lookup_fast() {
            Ok(Some(d)) => ErrPtr::Ptr(d),
            Ok(None) => ErrPtr::Null,
            Err(e) => {
                self.t().tracepoint("lookup_fast_echild");
                ErrPtr::Err(e)
            }
        };
        let dentry = if self.flavor.has(Change::V2NoIsErrCheck) {
            if open_flag & O_CREAT == 0 || found == ErrPtr::Null {
                return ptr_result(found);
            }
            found.deref(self.t(), "lookup_fast_for_open (dentry->d_inode)")
        } else {
            match found {
                ErrPtr::Ptr(d) => d,
                other => return ptr_result(other),
            }
        };
        if open_flag & O_CREAT != 0 {
            let de = self.vfs().dentries.get(self.t(), dentry);
            if de.d_inode.read_once_ptr(self.t()) == 0 {
                let put = if self.w.nd.rcu() {
                    self.flavor.has(Change::NegativeDiscardDputsInRcu)
                } else {
                    !self.flavor.has(Change::NegativeDiscardLeaks)
                };
                if put {
                    self.w.dput(dentry);
                }
                return Ok(None);
            }
            self.t().tracepoint("fast_path_positive_hit");
        }
        Ok(Some(dentry))
    }

    /// fs/namei.c:open_last_lookups (7.3, or the v6.11 create branch): the
    /// last component, by the fast path when it can, else under the
    /// parent's `i_rwsem` by `lookup_open`. `Some(body)`: a symlink to walk.
    fn open_last_lookups(&mut self) -> Step {
        let _f = self.t().enter("open_last_lookups");
        self.nd().flags |= self.op.intent;
        if self.w.nd.last_type != LastType::Norm {
            if self.w.nd.depth > 0 {
                self.w.put_link();
            }
            return self.w.handle_dots();
        }
        match self.flavor.base {
            Base::Current => self.open_last_lookups_current(),
            Base::V6_11 => self.open_last_lookups_v611(),
        }
    }

    fn open_last_lookups_current(&mut self) -> Step {
        let open_flag = self.op.open_flag;
        if let Some(dentry) = self.lookup_fast_for_open()? {
            if open_flag & O_CREAT != 0 && self.flavor.has(Change::V3AuditUnlazyNext) {
                self.v3_audit_unlazy_next(dentry)?;
            }
            return self.finish_lookup(dentry);
        }
        if open_flag & O_CREAT == 0 {
            if self.w.nd.rcu() {
                return Err(Errno::ECHILD);
            }
        } else {
            if self.w.nd.rcu() && !self.w.try_to_unlazy() {
                return Err(Errno::ECHILD);
            }
            if self.flavor.has(Change::V3AuditUnlazyNext) {
                self.audit_inode(self.w.nd.path.dentry, true);
            }
            if self.trailing_slashes() && self.flavor.has(Change::TrailingSlashAfterFastPath) {
                return Err(Errno::EISDIR);
            }
        }
        let dentry = self.lookup_open()?;
        self.finish_open_or_lookup(dentry)
    }

    /// The v3 audit special case (Layton, "[PATCH v3] fs: try an
    /// opportunistic lookup for O_CREAT opens too", 7 Aug 2024, as brief
    /// §1.2 describes it): with an audit context the hit cannot stay lazy,
    /// so leave RCU keeping the child (`try_to_unlazy_next`), then audit
    /// the parent.
    fn v3_audit_unlazy_next(&mut self, dentry: DentryRef) -> Result<(), Errno> {
        if !self.audit {
            return Ok(());
        }
        if self.w.nd.rcu() && !self.w.try_to_unlazy_next(dentry) {
            return Err(Errno::ECHILD);
        }
        self.audit_inode(self.w.nd.path.dentry, true);
        Ok(())
    }

    /// v6.11's open_last_lookups: a plain open tries the fast path; O_CREAT
    /// leaves RCU, audits the parent, refuses a trailing slash, and always
    /// goes to the locked lookup.
    fn open_last_lookups_v611(&mut self) -> Step {
        let open_flag = self.op.open_flag;
        if open_flag & O_CREAT == 0 {
            if self.trailing_slashes() {
                self.nd().flags |= LOOKUP_FOLLOW | LOOKUP_DIRECTORY;
            }
            if let Some(dentry) = self.w.lookup_fast()? {
                return self.finish_lookup(dentry);
            }
        } else {
            if self.w.nd.rcu() && !self.w.try_to_unlazy() {
                return Err(Errno::ECHILD);
            }
            self.audit_inode(self.w.nd.path.dentry, true);
            if self.trailing_slashes() {
                return Err(Errno::EISDIR);
            }
        }
        let got_write = self.want_write(self.w.nd.path.mnt);
        let (r, _) = self.lookup_open_once(got_write);
        self.finish_open_or_lookup(r?)
    }

    /// One pass of the locked lookup: the parent's `i_rwsem` around
    /// `lookup_open_locked`, then the lock and the write access (if
    /// `got_write`) dropped. Returns the result and, when the create met a
    /// directory delegation, the directory whose delegation must be broken.
    fn lookup_open_once(
        &mut self,
        got_write: bool,
    ) -> (Result<DentryRef, Errno>, Option<Arc<crate::vfs::Inode>>) {
        let mnt = self.w.nd.path.mnt;
        let inode = self.vfs().inodes.get(self.t(), self.dir_inode());
        let guard = self.inode_lock(&inode);
        let mut delegated = false;
        let r = self.lookup_open_locked(&mut delegated);
        drop(guard);
        if got_write {
            self.vfs().mnt_drop_write(self.t(), mnt);
        }
        (r, delegated.then_some(inode))
    }

    /// open_last_lookups after `lookup_open`: a file opened or created there
    /// becomes the walk's position; otherwise step onto what was found.
    fn finish_open_or_lookup(&mut self, dentry: DentryRef) -> Step {
        if self.file.f_mode & (FMODE_OPENED | FMODE_CREATED) != 0 {
            let parent = self.w.nd.path.dentry;
            self.w.dput(parent);
            self.nd().path.dentry = dentry;
            return Ok(None);
        }
        self.finish_lookup(dentry)
    }

    /// open_last_lookups' `finish_lookup:` label: pop a finished link, then
    /// `step_into(WALK_TRAILING)`; a symlink to follow drops the open
    /// intent for the body's walk.
    fn finish_lookup(&mut self, dentry: DentryRef) -> Step {
        if self.w.nd.depth > 0 {
            self.w.put_link();
        }
        let res = self.w.step_into(WALK_TRAILING, dentry)?;
        if res.is_some() {
            self.nd().flags &= !(LOOKUP_OPEN | LOOKUP_CREATE | LOOKUP_EXCL);
        }
        Ok(res)
    }

    fn dir_inode(&self) -> InodeRef {
        let d = self.w.nd.path.dentry;
        self.vfs()
            .dentries
            .get(self.t(), d)
            .d_inode
            .read_once_ptr(self.t())
    }

    /// `mnt_want_write` when the open may write (O_CREAT, O_TRUNC, O_WRONLY,
    /// O_RDWR); whether the write access is held.
    fn want_write(&self, mnt: crate::vfs::MountRef) -> bool {
        let f = self.op.open_flag;
        f & (O_CREAT | O_TRUNC | O_WRONLY | O_RDWR) != 0
            && self.vfs().mnt_want_write(self.t(), mnt).is_ok()
    }

    /// inode_lock (O_CREAT) or inode_lock_shared on the parent.
    fn inode_lock<'g>(&self, inode: &'g crate::vfs::Inode) -> crate::kernel::sleeping::RwGuard<'g>
    where
        'a: 'g,
    {
        let t: &'a Task = self.t();
        if self.op.open_flag & O_CREAT != 0 && !self.flavor.has(Change::CreateUnderSharedLock) {
            inode.i_rwsem.down_write(t)
        } else {
            inode.i_rwsem.down_read(t)
        }
    }

    /// fs/namei.c:lookup_open (7.3): take the write access and the parent's
    /// lock, look up (and maybe create) the last component, drop both; if
    /// the create found a directory delegation, wait for its break and
    /// start again from the top with fresh state (`retry:` re-initialises
    /// the open flags, `got_write`, the mode and the create error).
    fn lookup_open(&mut self) -> Result<DentryRef, Errno> {
        let _f = self.t().enter("lookup_open");
        let mnt = self.w.nd.path.mnt;
        let mut got_write = false;
        let mut retried = false;
        loop {
            if !(retried && self.flavor.has(Change::DelegationRetryKeepsState)) {
                got_write = self.want_write(mnt);
            }
            let (r, delegated) = self.lookup_open_once(got_write);
            let Some(inode) = delegated else {
                return r;
            };
            self.vfs().break_deleg_wait(self.t(), &inode);
            retried = true;
            crate::sync::yield_now();
        }
    }

    /// The body of lookup_open under the parent's `i_rwsem`: a dead
    /// directory is -ENOENT; `d_lookup`, else `d_alloc_parallel`; a cached
    /// positive dentry is returned for do_open; only then (v7.3) the parent
    /// is audited for a create; an in-lookup dentry goes to `->lookup`; a
    /// negative one with O_CREAT is created (`->create`, FMODE_CREATED),
    /// after breaking a delegation on the directory. (The write access
    /// always succeeds, so `create_error` and the O_TRUNC clearing it
    /// drives are not modelled.)
    fn lookup_open_locked(&mut self, delegated: &mut bool) -> Result<DentryRef, Errno> {
        let (vfs, t) = (self.vfs(), self.t());
        let dir = self.w.nd.path.dentry;
        let dir_inode = vfs.inodes.get(t, self.dir_inode());
        if dir_inode.i_flags.read_once(t) & S_DEAD != 0 {
            t.tracepoint("is_deaddir");
            return Err(Errno::ENOENT);
        }
        self.file.f_mode &= !FMODE_CREATED;
        let last = self.w.nd.last;
        let dentry = match vfs.d_lookup(t, dir, last) {
            Some(d) => d,
            None => vfs.d_alloc_parallel(
                t,
                dir,
                last,
                intern(&format!("{}'", crate::vfs::name_of(last))),
            )?,
        };
        let de = vfs.dentries.get(t, dentry);
        let in_lookup = de.d_flags.peek() & DCACHE_PAR_LOOKUP != 0;
        if !in_lookup && de.d_inode.read_once_ptr(t) != 0 {
            return Ok(dentry);
        }
        let open_flag = self.op.open_flag;
        if open_flag & O_CREAT != 0
            && self.flavor.base == Base::Current
            && !self.flavor.has(Change::V3AuditUnlazyNext)
        {
            self.audit_inode(dir, true);
        }
        if in_lookup {
            vfs.fs_lookup(t, dentry);
            vfs.d_lookup_done(t, dentry);
        }
        if de.d_inode.read_once_ptr(t) != 0 || self.op.open_flag & O_CREAT == 0 {
            return Ok(dentry);
        }
        if self.flavor.base == Base::Current && vfs.try_break_deleg(t, &dir_inode).is_some() {
            *delegated = true;
            self.w.dput(dentry);
            return Err(Errno::EAGAIN);
        }
        self.file.f_mode |= FMODE_CREATED;
        self.may_create(dentry);
        vfs.fs_create(t, dentry);
        t.tracepoint("created");
        if self.log.calls()[self.call].attempts > 1 {
            t.tracepoint("created_after_restart");
        }
        Ok(dentry)
    }

    /// I1, checked where `->create` is called: the caller holds the
    /// parent's `i_rwsem` exclusive, and the name is absent from the
    /// namespace at this instant.
    fn may_create(&self, dentry: DentryRef) {
        let (vfs, t) = (self.vfs(), self.t());
        let de = vfs.dentry(dentry);
        let dir = vfs.dentry(de.d_parent.peek()).d_inode.peek();
        let sem = &vfs.inodes.peek(dir).i_rwsem;
        if !sem.held_exclusive() {
            t.violation(
                "single_creation",
                format!(
                    "->create of {} without the parent's i_rwsem held exclusive",
                    vfs.dentry_name(dentry)
                ),
            );
        }
        let existing = vfs
            .ns_history()
            .last()
            .and_then(|ns| ns.lookup(dir, de.d_name.peek()));
        if let Some(i) = existing {
            t.violation(
                "single_creation",
                format!(
                    "->create of {} while the name already holds inode#{i}",
                    vfs.dentry_name(dentry)
                ),
            );
        }
    }

    /// fs/namei.c:do_open (7.3): leave RCU mode unless the file was created
    /// (complete_walk), audit what is opened, -EEXIST for O_EXCL without
    /// FMODE_CREATED, -EISDIR for O_CREAT on a directory, -ENOTDIR when a
    /// directory was required, `may_open`, then `vfs_open`.
    fn do_open(&mut self) -> Result<(), Errno> {
        let _f = self.t().enter("do_open");
        if self.file.f_mode & (FMODE_OPENED | FMODE_CREATED) == 0 {
            self.w.complete_walk()?;
        }
        let dentry = self.w.nd.path.dentry;
        if self.file.f_mode & FMODE_CREATED == 0 {
            self.audit_inode(dentry, false);
        }
        let de = self.vfs().dentries.get(self.t(), dentry);
        let is_dir = de.d_flags.read_once(self.t()) & DCACHE_ENTRY_TYPE == DCACHE_DIRECTORY_TYPE;
        let open_flag = self.op.open_flag;
        if open_flag & O_CREAT != 0 {
            let created = self.file.f_mode & FMODE_CREATED != 0;
            if open_flag & O_EXCL != 0 && !created && !self.flavor.has(Change::OExclFastPathOpens) {
                return Err(Errno::EEXIST);
            }
            if is_dir {
                return Err(Errno::EISDIR);
            }
        }
        if self.w.nd.flags & LOOKUP_DIRECTORY != 0 && !is_dir {
            return Err(Errno::ENOTDIR);
        }
        may_open(open_flag, is_dir)?;
        self.vfs_open();
        Ok(())
    }

    /// fs/open.c:vfs_open (reduced): the file takes its own references on
    /// the path and is FMODE_OPENED.
    fn vfs_open(&mut self) {
        let p = self.w.nd.path;
        self.file.f_path = p;
        self.w.path_get(p);
        self.file.f_mode |= FMODE_OPENED;
    }

    /// fs/namei.c:path_openat (7.3, neither O_TMPFILE nor O_PATH): walk to
    /// the last component, resolve it (following a trailing symlink), open
    /// it, and always `terminate_walk`.
    fn path_openat(&mut self, name: &Filename, flags: u32) -> Result<(), Errno> {
        let _f = self.t().enter("path_openat");
        self.log.calls()[self.call].attempts += 1;
        self.file = File::default();
        let mut r: Step = self.w.path_init(flags, name.absolute).map(|()| None);
        let mut s = name.comps.clone();
        while let Ok(None) = r {
            if let Err(e) = self.w.link_path_walk(std::mem::take(&mut s)) {
                r = Err(e);
                break;
            }
            match self.open_last_lookups() {
                Ok(Some(body)) => s = body,
                Ok(None) => break,
                Err(e) => r = Err(e),
            }
        }
        let r = r.and_then(|_| self.do_open());
        self.w.terminate_walk();
        if r.is_err() && self.file.f_mode & FMODE_OPENED != 0 {
            self.fput();
        }
        r
    }

    /// The opened file's last reference goes (`fput` → `__fput`: the path
    /// references the file took are put).
    pub fn fput(&mut self) {
        let p = std::mem::take(&mut self.file.f_path);
        self.file.f_mode = 0;
        super::walk::path_put(self.vfs(), self.t(), p);
    }
}

/// fs/namei.c:may_open (its body in the vfs-7.3-rc1.misc copy was not read:
/// the file-type rule here is open(2)'s EISDIR; permission checks grant): a directory cannot be opened for writing (-EISDIR).
fn may_open(open_flag: u32, is_dir: bool) -> Result<(), Errno> {
    if is_dir && open_flag & (O_WRONLY | O_RDWR) != 0 {
        return Err(Errno::EISDIR);
    }
    Ok(())
}

fn ptr_result(p: ErrPtr<DentryRef>) -> Result<Option<DentryRef>, Errno> {
    match p {
        ErrPtr::Ptr(d) => Ok(Some(d)),
        ErrPtr::Null => Ok(None),
        ErrPtr::Err(e) => Err(e),
    }
}

/// fs/namei.c:do_file_open (7.3; `do_filp_open` before v7.0) for `name`
/// from the task's root or cwd: a lazy attempt, -ECHILD → a ref-walk
/// attempt, -ESTALE → a LOOKUP_REVAL attempt. On success the open file is
/// returned (its path references are the caller's, put by `fput`).
pub fn do_file_open<'a>(
    vfs: &'a Vfs,
    t: &'a Task,
    flavor: OpenFlavor,
    log: &'a OpenLog,
    name: &Filename,
    op: OpenFlags,
    audit: bool,
) -> Result<Open<'a>, Errno> {
    let _f = t.enter("do_file_open");
    let flags = op.open_flag;
    let call = {
        let mut calls = log.calls();
        let from = if name.absolute {
            vfs.fs.root
        } else {
            vfs.fs.pwd
        };
        calls.push(OpenCall {
            thread: t.name(),
            name: name.clone(),
            flags,
            lookup_flags: op.lookup_flags,
            start: vfs.dentry(from.dentry).d_inode.peek(),
            last: 0,
            result: None,
            attempts: 0,
        });
        calls.len() - 1
    };
    let mut o = Open {
        w: Walk::new(vfs, t, flavor.walk),
        file: File::default(),
        op,
        flavor,
        audit,
        log,
        call,
        trailing: name.trailing_slash,
    };
    let flags = op.lookup_flags & !LOOKUP_NO_RCU;
    let mut r = if op.lookup_flags & LOOKUP_NO_RCU == 0 {
        o.path_openat(name, flags | LOOKUP_RCU)
    } else {
        Err(Errno::ECHILD)
    };
    if r == Err(Errno::ECHILD) && !flavor.has(Change::NoRefWalkRetry) {
        t.tracepoint("ref_walk_restart");
        o.w.nd = o.w.nd.next_attempt();
        r = o.path_openat(name, flags);
    }
    let stale = r == Err(Errno::ESTALE)
        || (r == Err(Errno::EAGAIN) && flavor.has(Change::RetryEagainAsStale));
    if stale {
        o.w.nd = o.w.nd.next_attempt();
        r = o.path_openat(name, flags | LOOKUP_REVAL);
    }
    let result = r.map(|()| Opened {
        inode: vfs.dentry(o.file.f_path.dentry).d_inode.peek(),
        created: o.file.f_mode & FMODE_CREATED != 0,
    });
    {
        let mut calls = log.calls();
        calls[call].result = Some(result);
        calls[call].last = vfs.ns_history().len() - 1;
    }
    t.note(
        "returns {}",
        &[match result {
            Ok(o) => crate::trace::Val::dec(o.inode),
            Err(e) => ErrPtr::<u64>::Err(e).val(),
        }],
    );
    r.map(|()| o)
}
