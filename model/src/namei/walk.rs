//! The walk (fs/namei.c, vfs-7.3-rc1.misc copy): path_init, link_path_walk,
//! walk_component, lookup_fast, lookup_slow, step_into (with its v7.3
//! fast path; v6.12 had one function with the same checks in the same
//! order), handle_mounts, pick_link, handle_dots, complete_walk,
//! terminate_walk, path_lookupat, filename_lookup.

use crate::kernel::errptr::Errno;
use crate::kernel::task::Task;
use crate::trace::Val;
use crate::vfs::dentry::{
    DCACHE_DIRECTORY_TYPE, DCACHE_ENTRY_TYPE, DCACHE_MISS_TYPE, DCACHE_MOUNTED, DCACHE_SYMLINK_TYPE,
};
use crate::vfs::namespace::{DOTDOT, SELF_IDENT};
use crate::vfs::{DentryRef, Path, Vfs};

use super::{
    Bug, Filename, Flavor, LastType, LookupResult, Nameidata, EMBEDDED_LEVELS, LAZY_RETRIES,
    LOOKUP_CACHED, LOOKUP_FOLLOW, LOOKUP_PARENT, LOOKUP_RCU, LOOKUP_REVAL, MAXSYMLINKS, ND_JUMPED,
    ND_ROOT_GRABBED, ND_ROOT_PRESET, WALK_MORE, WALK_NOFOLLOW, WALK_TRAILING,
};

/// One walk in progress: the nameidata and the walker's task.
pub struct Walk<'a> {
    pub vfs: &'a Vfs,
    pub t: &'a Task,
    pub flavor: Flavor,
    pub nd: Nameidata,
    /// The inode the last attempt ended on (what the caller is told), or
    /// its errno.
    pub(crate) inode_seen: Result<crate::vfs::InodeRef, Errno>,
}

/// A symlink body still to walk (`pick_link`'s non-NULL return).
type Link = Vec<u64>;

impl<'a> Walk<'a> {
    pub fn new(vfs: &'a Vfs, t: &'a Task, flavor: Flavor) -> Walk<'a> {
        Walk {
            vfs,
            t,
            flavor,
            nd: Nameidata::new(),
            inode_seen: Err(Errno::ENOENT),
        }
    }

    /// A reference operation of the walk itself: only legitimization may
    /// take or drop references while the walk is lazy (brief L5).
    fn ref_op(&self, what: &str) {
        if self.nd.rcu() && !self.nd.legitimizing {
            self.t.violation(
                "rcu_mode",
                format!("{what} on a refcount while the walk is in RCU mode"),
            );
        }
    }

    pub(crate) fn dput(&self, d: DentryRef) {
        if d != 0 {
            self.ref_op("dput");
            self.vfs.dput(self.t, d);
        }
    }

    pub(crate) fn mntput(&self, m: crate::vfs::MountRef) {
        if m != 0 {
            self.ref_op("mntput");
            self.vfs.mntput(self.t, self.t.name(), m);
        }
    }

    /// path_put.
    pub(crate) fn path_put(&self, p: Path) {
        self.dput(p.dentry);
        self.mntput(p.mnt);
    }

    /// path_get.
    pub(crate) fn path_get(&self, p: Path) {
        self.ref_op("path_get");
        self.vfs.mntget(self.t, self.t.name(), p.mnt);
        self.vfs.dget(self.t, p.dentry);
    }

    /// The ghost "non-blocking walk" flag follows LOOKUP_CACHED: while it is
    /// set, every sleeping primitive is a `might_sleep` violation (N1).
    fn sync_nonblock(&self) {
        self.t.set_nonblock(self.nd.flags & LOOKUP_CACHED != 0);
    }

    /// fs/namei.c:path_init (7.3; absolute or cwd-relative, no dfd):
    /// LOOKUP_CACHED without LOOKUP_RCU fails at once with -EAGAIN;
    /// otherwise enter RCU (if lazy), sample `mount_lock` and `rename_lock`
    /// (then `smp_rmb`), and start at the root, sampled under `fs->seq`
    /// (lazy) or referenced with ND_ROOT_GRABBED (ref-walk), or at the cwd
    /// (the root is then set only when the walk needs it).
    pub(crate) fn path_init(&mut self, flags: u32, absolute: bool) -> Result<(), Errno> {
        let _f = self.t.enter("path_init");
        if flags & LOOKUP_CACHED != 0 && flags & LOOKUP_RCU == 0 {
            self.t.tracepoint("cached_without_rcu");
            return Err(Errno::EAGAIN);
        }
        if self.flavor.has(Bug::StalePathAfterFailedInit) {
            self.nd.path = Path::NULL;
        }
        if flags & LOOKUP_RCU != 0 {
            self.vfs.rcu.rcu_read_lock(self.t);
        } else {
            self.nd.seq = 0;
            self.nd.next_seq = 0;
        }
        self.nd.flags = flags;
        self.sync_nonblock();
        self.nd.state |= ND_JUMPED;
        self.nd.m_seq = self.vfs.mount_lock.read_seqbegin(self.t);
        self.nd.r_seq = self.vfs.rename_lock.read_seqbegin(self.t);
        if absolute {
            return self.nd_jump_root();
        }
        self.start_at_pwd();
        Ok(())
    }

    /// fs/namei.c:path_init's AT_FDCWD branch (7.3): lazily, the cwd, its
    /// inode and its `d_seq` sampled under `fs->seq`; in ref-walk the cwd
    /// referenced (`get_fs_pwd`).
    fn start_at_pwd(&mut self) {
        let fs = &self.vfs.fs;
        if self.nd.rcu() {
            loop {
                let s = fs.seq.read_seqbegin(self.t);
                self.nd.path = fs.pwd;
                let d = self.vfs.dentries.get(self.t, fs.pwd.dentry);
                self.nd.inode = d.d_inode.read_once_ptr(self.t);
                self.nd.seq = d.d_seq.read_seqcount_begin(self.t);
                if !fs.seq.read_seqretry(self.t, s) {
                    return;
                }
            }
        }
        self.nd.path = fs.pwd;
        self.path_get(fs.pwd);
        let d = self.vfs.dentries.get(self.t, fs.pwd.dentry);
        self.nd.inode = d.d_inode.read_once_ptr(self.t);
    }

    /// fs/namei.c:set_root (7.3): the task's root, sampled under `fs->seq`
    /// (lazy) or referenced (ref-walk, ND_ROOT_GRABBED).
    fn set_root(&mut self) {
        let fs = &self.vfs.fs;
        if self.nd.rcu() {
            loop {
                let s = fs.seq.read_seqbegin(self.t);
                self.nd.root = fs.root;
                let rd = self.vfs.dentries.get(self.t, fs.root.dentry);
                self.nd.root_seq = rd.d_seq.read_seqcount_begin(self.t);
                if !fs.seq.read_seqretry(self.t, s) {
                    return;
                }
            }
        }
        self.nd.root = fs.root;
        self.path_get(fs.root);
        self.nd.state |= ND_ROOT_GRABBED;
    }

    /// fs/namei.c:nd_jump_root (7.3): move to the root.
    fn nd_jump_root(&mut self) -> Result<(), Errno> {
        if self.nd.root.mnt == 0 {
            self.set_root();
        }
        let root = self.nd.root;
        let rd = self.vfs.dentries.get(self.t, root.dentry);
        if self.nd.rcu() {
            self.nd.path = root;
            self.nd.inode = rd.d_inode.read_once_ptr(self.t);
            self.nd.seq = self.nd.root_seq;
            if rd.d_seq.read_seqcount_retry(self.t, self.nd.seq) {
                return Err(Errno::ECHILD);
            }
        } else {
            self.path_put(self.nd.path);
            self.nd.path = root;
            self.path_get(root);
            self.nd.inode = rd.d_inode.read_once_ptr(self.t);
        }
        self.nd.state |= ND_JUMPED;
        Ok(())
    }

    /// fs/namei.c:link_path_walk (7.3): every component but the last,
    /// walking symlink bodies as they come (the outer rest saved in the
    /// link's stack entry), each step landing on a directory.
    pub(crate) fn link_path_walk(&mut self, mut name: Vec<u64>) -> Result<(), Errno> {
        let _f = self.t.enter("link_path_walk");
        self.nd.last_type = LastType::Root;
        self.nd.flags |= LOOKUP_PARENT;
        if name.is_empty() {
            return Ok(());
        }
        let mut depth = 0;
        let mut pos = 0;
        loop {
            let c = name[pos];
            pos += 1;
            self.nd.last = c;
            if c == DOTDOT {
                self.nd.last_type = LastType::DotDot;
                self.nd.state |= ND_JUMPED;
            } else {
                self.nd.last_type = LastType::Norm;
                self.nd.state &= !ND_JUMPED;
            }
            let link = if pos == name.len() {
                if depth == 0 {
                    self.nd.flags &= !LOOKUP_PARENT;
                    return Ok(());
                }
                depth -= 1;
                name = std::mem::take(&mut self.nd.stack[depth].name);
                pos = 0;
                let link = self.walk_component(0)?;
                if name.is_empty() {
                    // The body was the outer string's end (cannot happen
                    // for a WALK_MORE link, kept for safety).
                    self.nd.flags &= !LOOKUP_PARENT;
                    return Ok(());
                }
                link
            } else {
                self.walk_component(WALK_MORE)?
            };
            if let Some(body) = link {
                self.nd.stack[depth].name = name[pos..].to_vec();
                depth += 1;
                name = body;
                pos = 0;
                continue;
            }
            let flags = self
                .vfs
                .dentries
                .get(self.t, self.nd.path.dentry)
                .d_flags
                .read_once(self.t);
            if flags & DCACHE_ENTRY_TYPE != DCACHE_DIRECTORY_TYPE {
                if self.nd.rcu() && !self.try_to_unlazy() {
                    return Err(Errno::ECHILD);
                }
                return Err(Errno::ENOTDIR);
            }
        }
    }

    /// fs/namei.c:walk_component (7.3): ".." by `handle_dots`; a name by
    /// `lookup_fast`, falling back to `lookup_slow` on a miss (the walk is
    /// then in ref mode); the last component of a symlink body pops it.
    fn walk_component(&mut self, flags: u32) -> Result<Option<Link>, Errno> {
        let _f = self.t.enter("walk_component");
        if self.nd.last_type != LastType::Norm {
            if self.nd.depth > 0 && flags & WALK_MORE == 0 {
                self.put_link();
            }
            return self.handle_dots();
        }
        let dentry = match self.lookup_fast()? {
            Some(d) => d,
            None => self.lookup_slow()?,
        };
        if self.nd.depth > 0 && flags & WALK_MORE == 0 {
            self.put_link();
        }
        self.step_into(flags, dentry)
    }

    /// fs/namei.c:lookup_fast (7.3). RCU: `__d_lookup_rcu` (child seq
    /// sampled into `next_seq`), then the parent's `d_seq` must still be
    /// `nd->seq` (-ECHILD; a rename's false negative is fine, the ref-walk
    /// lookup is not racy); a miss unlazies and returns NULL. Then
    /// `d_revalidate`: a dentry whose filesystem cannot revalidate in RCU
    /// mode sends the walk to ref mode with `try_to_unlazy_next` (the child
    /// referenced with it) and is revalidated again there. Ref-walk:
    /// `__d_lookup`, the child referenced (its revalidation in ref mode
    /// always succeeds in the model: no filesystem invalidates).
    pub(crate) fn lookup_fast(&mut self) -> Result<Option<DentryRef>, Errno> {
        let _f = self.t.enter("lookup_fast");
        let parent = self.nd.path.dentry;
        if !self.nd.rcu() {
            return Ok(self.vfs.__d_lookup(self.t, parent, self.nd.last));
        }
        let Some((dentry, seq)) = self.vfs.__d_lookup_rcu(self.t, parent, self.nd.last) else {
            if self.flavor.has(Bug::RcuMissSkipsUnlazy) {
                return Ok(None);
            }
            if self.flavor.has(Bug::CachedMissIsEnoent) && self.nd.flags & LOOKUP_CACHED != 0 {
                return Err(Errno::ENOENT);
            }
            if !self.try_to_unlazy() {
                return Err(Errno::ECHILD);
            }
            return Ok(None);
        };
        self.nd.next_seq = seq;
        let pd = self.vfs.dentries.get(self.t, parent);
        if pd.d_seq.read_seqcount_retry(self.t, self.nd.seq) {
            self.t.tracepoint("parent_seq_changed");
            return Err(Errno::ECHILD);
        }
        if self.flavor.has(Bug::RcuLookupTakesRef) {
            self.ref_op("dget");
            self.vfs.dget(self.t, dentry);
        }
        if self.d_revalidate(dentry).is_ok() {
            return Ok(Some(dentry));
        }
        if !self.try_to_unlazy_next(dentry) {
            return Err(Errno::ECHILD);
        }
        // -ECHILD: "redo it in non-rcu mode", where the model's
        // revalidating filesystems find every dentry valid.
        let redone = self.d_revalidate(dentry);
        debug_assert!(redone.is_ok(), "ref-mode revalidation never fails");
        Ok(Some(dentry))
    }

    /// fs/namei.c:d_revalidate (7.3) with the one `->d_revalidate` the
    /// model has, a network filesystem's (NFS-like, not read): it cannot
    /// revalidate without blocking, so under LOOKUP_RCU it answers -ECHILD;
    /// in ref mode it finds the dentry valid. A dentry without
    /// DCACHE_OP_REVALIDATE is valid at once.
    fn d_revalidate(&self, dentry: DentryRef) -> Result<(), Errno> {
        if !self.vfs.dentry(dentry).d_op_revalidate {
            return Ok(());
        }
        if self.nd.rcu() {
            self.t.tracepoint("d_revalidate_echild");
            self.t.note(
                "->d_revalidate({}) under LOOKUP_RCU: -ECHILD",
                &[crate::vfs::Vfs::dentry_val(dentry)],
            );
            return Err(Errno::ECHILD);
        }
        Ok(())
    }

    /// fs/namei.c:lookup_slow / __lookup_slow (7.3; ref-walk only): under
    /// the parent's `i_rwsem` held shared (may sleep), look the name up
    /// again (`d_lookup`); still missing, allocate a dentry and ask the
    /// filesystem (`->lookup`, which instantiates it or leaves it negative;
    /// `d_alloc_parallel`'s in-lookup protocol is reduced to the shared
    /// `i_rwsem`, which already excludes the creators of this directory).
    fn lookup_slow(&mut self) -> Result<DentryRef, Errno> {
        let _f = self.t.enter("lookup_slow");
        self.t.tracepoint("lookup_slow");
        let parent = self.nd.path.dentry;
        let dir = self
            .vfs
            .dentries
            .get(self.t, parent)
            .d_inode
            .read_once_ptr(self.t);
        let inode = self.vfs.inodes.get(self.t, dir);
        let g = inode.i_rwsem.down_read(self.t);
        let found = match self.vfs.d_lookup(self.t, parent, self.nd.last) {
            Some(d) => d,
            None => self.vfs.simple_lookup(self.t, parent, self.nd.last),
        };
        g.up();
        Ok(found)
    }

    /// fs/namei.c:step_into (7.3). The fast path (lazy, not a mountpoint,
    /// not a symlink): read `d_inode`, validate `d_seq` against
    /// `next_seq` (-ECHILD), only then act on a NULL inode (-ENOENT), and
    /// move on. Everything else goes through `step_into_slowpath`.
    pub(crate) fn step_into(
        &mut self,
        flags: u32,
        dentry: DentryRef,
    ) -> Result<Option<Link>, Errno> {
        let _f = self.t.enter("step_into");
        let de = self.vfs.dentries.get(self.t, dentry);
        let d_flags = de.d_flags.read_once(self.t);
        let plain =
            d_flags & DCACHE_MOUNTED == 0 && d_flags & DCACHE_ENTRY_TYPE != DCACHE_SYMLINK_TYPE;
        if !(self.nd.rcu() && plain) {
            return self.step_into_slowpath(flags, dentry);
        }
        let inode = de.d_inode.read_once_ptr(self.t);
        if inode == 0 && self.flavor.has(Bug::StepIntoNullBeforeSeqCheck) {
            return Err(Errno::ENOENT);
        }
        if de.d_seq.read_seqcount_retry(self.t, self.nd.next_seq) {
            self.t.tracepoint("child_seq_changed");
            return Err(Errno::ECHILD);
        }
        if inode == 0 {
            return Err(Errno::ENOENT);
        }
        self.nd.path.dentry = dentry;
        self.nd.inode = inode;
        self.nd.seq = self.nd.next_seq;
        Ok(None)
    }

    /// fs/namei.c:step_into_slowpath (7.3): cross mounts, then either move
    /// onto the dentry (lazy: validate and test for NULL as the fast path
    /// does; ref-walk: drop the references on the old position) or, for a
    /// symlink to follow, `pick_link`.
    fn step_into_slowpath(&mut self, flags: u32, dentry: DentryRef) -> Result<Option<Link>, Errno> {
        let _f = self.t.enter("step_into_slowpath");
        let path = self.handle_mounts(dentry)?;
        let de = self.vfs.dentries.get(self.t, path.dentry);
        let inode = de.d_inode.read_once_ptr(self.t);
        let symlink = de.d_flags.read_once(self.t) & DCACHE_ENTRY_TYPE == DCACHE_SYMLINK_TYPE;
        let follow = symlink
            && !(flags & WALK_TRAILING != 0 && self.nd.flags & LOOKUP_FOLLOW == 0)
            && flags & WALK_NOFOLLOW == 0;
        if follow {
            return self.pick_link(path, inode);
        }
        if self.nd.rcu() {
            if de.d_seq.read_seqcount_retry(self.t, self.nd.next_seq) {
                self.t.tracepoint("child_seq_changed");
                return Err(Errno::ECHILD);
            }
            if inode == 0 {
                return Err(Errno::ENOENT);
            }
        } else {
            self.dput(self.nd.path.dentry);
            if self.nd.path.mnt != path.mnt {
                self.mntput(self.nd.path.mnt);
            }
        }
        self.nd.path = path;
        self.nd.inode = inode;
        self.nd.seq = self.nd.next_seq;
        Ok(None)
    }

    /// fs/namei.c:handle_mounts (7.3, no automount or d_manage): lazily,
    /// a dentry with a mount on it is crossed by `__follow_mount_rcu`; if
    /// that cannot finish, `try_to_unlazy_next` and continue in ref mode,
    /// where `traverse_mounts` reads `d_flags` with `smp_load_acquire`
    /// (positivity and `d_inode` consistent) and -ENOENT for a negative
    /// dentry.
    fn handle_mounts(&mut self, dentry: DentryRef) -> Result<Path, Errno> {
        let _f = self.t.enter("handle_mounts");
        let mut path = Path {
            mnt: self.nd.path.mnt,
            dentry,
        };
        if self.nd.rcu() {
            let seq0 = self.nd.next_seq;
            if self.__follow_mount_rcu(&mut path) {
                return Ok(path);
            }
            path = Path {
                mnt: self.nd.path.mnt,
                dentry,
            };
            self.nd.next_seq = seq0;
            if !self.try_to_unlazy_next(dentry) {
                return Err(Errno::ECHILD);
            }
        }
        self.traverse_mounts(path)
    }

    /// fs/namei.c:__follow_mount_rcu (7.3): while a mount sits on the
    /// dentry, step onto its root (sampling its seq); fail if
    /// `mount_lock` moved.
    fn __follow_mount_rcu(&mut self, path: &mut Path) -> bool {
        loop {
            let de = self.vfs.dentries.get(self.t, path.dentry);
            if de.d_flags.read_once(self.t) & DCACHE_MOUNTED == 0 {
                return true;
            }
            let m = self.vfs.__lookup_mnt(self.t, path.mnt, path.dentry);
            if m != 0 {
                let root = self.vfs.mounts.get(self.t, m).mnt_root;
                *path = Path {
                    mnt: m,
                    dentry: root,
                };
                self.nd.state |= ND_JUMPED;
                let rd = self.vfs.dentries.get(self.t, root);
                self.nd.next_seq = rd.d_seq.read_seqcount_begin(self.t);
            }
            if self.vfs.mount_lock.read_seqretry(self.t, self.nd.m_seq) {
                self.t.tracepoint("mount_lock_changed");
                return false;
            }
            if m == 0 {
                return true;
            }
        }
    }

    /// fs/namei.c:traverse_mounts (7.3; ref-walk, holding the dentry):
    /// cross any mount with `lookup_mnt`, then refuse a negative dentry.
    /// `d_flags` is read with `smp_load_acquire`: the dentry is pinned but
    /// not locked, so it may go positive right under us, and the acquire
    /// makes `d_inode` consistent with the type bits seen.
    fn traverse_mounts(&mut self, mut path: Path) -> Result<Path, Errno> {
        let _f = self.t.enter("traverse_mounts");
        loop {
            let de = self.vfs.dentries.get(self.t, path.dentry);
            let flags = if self.flavor.has(Bug::PositivityNoAcquire) {
                de.d_flags.read_once(self.t)
            } else {
                de.d_flags.load_acquire(self.t)
            };
            if flags & DCACHE_MOUNTED != 0 {
                if let Some(m) = self.lookup_mnt(path) {
                    let root = self.vfs.mounts.get(self.t, m).mnt_root;
                    self.vfs.dget(self.t, root);
                    self.dput(path.dentry);
                    if path.mnt != self.nd.path.mnt {
                        self.mntput(path.mnt);
                    }
                    path = Path {
                        mnt: m,
                        dentry: root,
                    };
                    self.nd.state |= ND_JUMPED;
                    continue;
                }
            }
            if flags & DCACHE_ENTRY_TYPE == DCACHE_MISS_TYPE {
                self.t.tracepoint("negative_dentry");
                self.dput(path.dentry);
                if path.mnt != self.nd.path.mnt {
                    self.mntput(path.mnt);
                }
                return Err(Errno::ENOENT);
            }
            return Ok(path);
        }
    }

    /// fs/namespace.c:lookup_mnt (7.3): the mount on `path`, referenced;
    /// retried while `legitimize_mnt` fails.
    fn lookup_mnt(&mut self, path: Path) -> Option<crate::vfs::MountRef> {
        let _f = self.t.enter("lookup_mnt");
        self.vfs.rcu.rcu_read_lock(self.t);
        let found = loop {
            let seq = self.vfs.mount_lock.read_seqbegin(self.t);
            let child = self.vfs.__lookup_mnt(self.t, path.mnt, path.dentry);
            if child == 0 {
                break None;
            }
            match self.vfs.__legitimize_mnt(self.t, child, seq) {
                0 => break Some(child),
                1 => {}
                _ => {
                    self.vfs.rcu.rcu_read_unlock(self.t);
                    self.mntput(child);
                    self.vfs.rcu.rcu_read_lock(self.t);
                }
            }
            crate::sync::yield_now();
        };
        self.vfs.rcu.rcu_read_unlock(self.t);
        found
    }

    /// fs/namei.c:pick_link (7.3, inline bodies, no atime, no LSM): lazily,
    /// validate the link's seq first (so its type and inode are a
    /// snapshot); in ref-walk the stack entry gets its own mount reference.
    /// Push the link and return its body.
    fn pick_link(
        &mut self,
        link: Path,
        inode: crate::vfs::InodeRef,
    ) -> Result<Option<Link>, Errno> {
        let _f = self.t.enter("pick_link");
        if self.nd.rcu() {
            let de = self.vfs.dentries.get(self.t, link.dentry);
            if de.d_seq.read_seqcount_retry(self.t, self.nd.next_seq) {
                return Err(Errno::ECHILD);
            }
        } else if link.mnt == self.nd.path.mnt {
            self.ref_op("mntget");
            self.vfs.mntget(self.t, self.t.name(), link.mnt);
        }
        self.nd.total_link_count += 1;
        if self.nd.total_link_count >= MAXSYMLINKS || self.nd.depth == EMBEDDED_LEVELS {
            if !self.nd.rcu() {
                self.path_put(link);
            }
            return Err(Errno::ELOOP);
        }
        let depth = self.nd.depth;
        self.nd.stack[depth].link = link;
        self.nd.stack[depth].seq = self.nd.next_seq;
        self.nd.depth += 1;
        self.t.tracepoint("symlink_followed");
        let (body, armed) = self.get_link(inode);
        self.nd.stack[depth].armed = armed;
        if body.is_empty() {
            self.put_link();
            return Ok(None);
        }
        Ok(Some(body))
    }

    /// The link's body (`inode->i_link`, or for a procfs `self` link what
    /// fs/proc/thread_self.c:proc_thread_self_get_link computes from
    /// `current`'s pids). Only the start of that function was read, in the
    /// Feb 2021 revert mail of 0d4370cfe36b (it takes `current`'s tgid and
    /// pid; the rest of its body was not read); the kernel's body is
    /// `<tgid>/task/<pid>`, the model's the one directory of the task's
    /// identity.
    /// Whether the body was allocated for this walk (its release armed).
    fn get_link(&self, inode: crate::vfs::InodeRef) -> (Vec<u64>, bool) {
        let ident = crate::vfs::ident_name(self.t.ident());
        let body = &self.vfs.inodes.get(self.t, inode).i_link;
        let magic = body.contains(&SELF_IDENT);
        let body = body
            .iter()
            .map(|&c| if c == SELF_IDENT { ident } else { c })
            .collect();
        (body, magic)
    }

    /// fs/namei.c:put_link (7.3): pop the last link (ref-walk: put it).
    pub(crate) fn put_link(&mut self) {
        self.nd.depth -= 1;
        self.release_body(self.nd.depth);
        let link = self.nd.stack[self.nd.depth].link;
        if !self.nd.rcu() {
            self.path_put(link);
        }
    }

    /// fs/namei.c:handle_dots (7.3, ".." only, not scoped): lazily,
    /// `follow_dotdot_rcu`; in ref-walk `follow_dotdot` (`dget_parent`);
    /// then step onto the parent without following.
    pub(crate) fn handle_dots(&mut self) -> Result<Option<Link>, Errno> {
        let _f = self.t.enter("handle_dots");
        if self.nd.root.mnt == 0 {
            self.set_root();
        }
        let parent = if self.nd.rcu() {
            self.follow_dotdot_rcu()?
        } else {
            self.follow_dotdot()
        };
        self.step_into(WALK_NOFOLLOW, parent)
    }

    /// fs/namei.c:follow_dotdot_rcu (7.3): at the root, stay. At a mount
    /// root, first move to its mountpoint (`choose_mountpoint_rcu`, one
    /// mount deep: its seq sampled as `nd->seq`, then -ECHILD if
    /// `mount_lock` moved since `path_init`, which covers an umount). Then
    /// the parent, its seq sampled as `next_seq`, and the current dentry's
    /// seq re-validated (else -ECHILD).
    fn follow_dotdot_rcu(&mut self) -> Result<DentryRef, Errno> {
        let cur = self.nd.path.dentry;
        if cur == self.nd.root.dentry {
            self.nd.next_seq = self.nd.seq;
            return Ok(cur);
        }
        let mnt = self.vfs.mounts.get(self.t, self.nd.path.mnt);
        if cur == mnt.mnt_root {
            let md = self.vfs.dentries.get(self.t, mnt.mnt_mountpoint);
            self.nd.path = Path {
                mnt: mnt.mnt_parent,
                dentry: mnt.mnt_mountpoint,
            };
            self.nd.inode = md.d_inode.read_once_ptr(self.t);
            self.nd.seq = md.d_seq.read_seqcount_begin(self.t);
            if self.vfs.mount_lock.read_seqretry(self.t, self.nd.m_seq) {
                return Err(Errno::ECHILD);
            }
        }
        let cur = self.nd.path.dentry;
        let de = self.vfs.dentries.get(self.t, cur);
        let parent = de.d_parent.read_once_ptr(self.t);
        let pd = self.vfs.dentries.get(self.t, parent);
        self.nd.next_seq = pd.d_seq.read_seqcount_begin(self.t);
        if self.flavor.has(Bug::DotdotRcuSkipsSeqCheck) {
            return Ok(parent);
        }
        if de.d_seq.read_seqcount_retry(self.t, self.nd.seq) {
            self.t.tracepoint("dotdot_seq_changed");
            return Err(Errno::ECHILD);
        }
        Ok(parent)
    }

    /// fs/namei.c:follow_dotdot (7.3): at the root, stay (a new reference).
    /// At a mount root, first move to its mountpoint (`choose_mountpoint`,
    /// one mount deep: the walk holds the mount, so a synchronous umount
    /// fails with -EBUSY and the mountpoint is current), references moved
    /// with it. Then the parent with a reference, by `dget_parent`.
    fn follow_dotdot(&mut self) -> DentryRef {
        let cur = self.nd.path.dentry;
        if cur == self.nd.root.dentry {
            self.vfs.dget(self.t, cur);
            return cur;
        }
        let mnt = self.vfs.mounts.get(self.t, self.nd.path.mnt);
        if cur == mnt.mnt_root {
            let mountpoint = Path {
                mnt: mnt.mnt_parent,
                dentry: mnt.mnt_mountpoint,
            };
            self.path_get(mountpoint);
            self.path_put(self.nd.path);
            self.nd.path = mountpoint;
            let md = self.vfs.dentries.get(self.t, mountpoint.dentry);
            self.nd.inode = md.d_inode.read_once_ptr(self.t);
        }
        self.vfs.dget_parent(self.t, self.nd.path.dentry)
    }

    /// fs/namei.c:complete_walk (7.3): a lazy walk's last legitimization
    /// (the root is not grabbed; LOOKUP_CACHED is cleared, the final unlazy
    /// being non-blocking).
    pub(crate) fn complete_walk(&mut self) -> Result<(), Errno> {
        let _f = self.t.enter("complete_walk");
        if self.nd.rcu() {
            if self.nd.state & ND_ROOT_PRESET == 0 {
                self.nd.root = Path::NULL;
            }
            self.nd.flags &= !LOOKUP_CACHED;
            self.sync_nonblock();
            if !self.try_to_unlazy() {
                return Err(Errno::ECHILD);
            }
        }
        Ok(())
    }

    /// fs/namei.c:terminate_walk (7.3): drop what the walk holds (ref-walk)
    /// or leave RCU (lazy), and clear the path.
    pub(crate) fn terminate_walk(&mut self) {
        let _f = self.t.enter("terminate_walk");
        // The walk is over: what it drops here is what it legitimately
        // holds (nothing, for a cached walk that kept its promise).
        self.t.set_nonblock(false);
        if self.nd.depth > 0 {
            self.drop_links();
        }
        if !self.nd.rcu() {
            self.path_put(self.nd.path);
            for i in 0..self.nd.depth {
                self.path_put(self.nd.stack[i].link);
            }
            if self.nd.state & ND_ROOT_GRABBED != 0 {
                self.path_put(self.nd.root);
                self.nd.state &= !ND_ROOT_GRABBED;
            }
        } else {
            self.leave_rcu();
        }
        self.nd.depth = 0;
        if !self.flavor.has(Bug::StalePathAfterFailedInit) {
            self.nd.path = Path::NULL;
        }
        self.bodies_released();
    }

    /// N2: a finished walk has run every link body's delayed release once
    /// (an armed entry past `depth` is one nothing will release).
    fn bodies_released(&self) {
        if let Some(i) = self.nd.stack.iter().position(|s| s.armed) {
            self.t.violation(
                "link_bodies_released",
                format!(
                    "the walk ended with the body of symlink #{i} ({}) never released: its \
                     delayed call was dropped with depth",
                    self.vfs.dentry_label(self.nd.stack[i].link.dentry)
                ),
            );
        }
    }

    /// fs/namei.c:lookup_last (7.3): the trailing component (the root
    /// itself for "/").
    fn lookup_last(&mut self) -> Result<Option<Link>, Errno> {
        if self.nd.last_type == LastType::Root {
            return Ok(None);
        }
        self.walk_component(WALK_TRAILING)
    }
}

/// fs/namei.c:path_lookupat (7.3): one attempt with `flags`: walk, follow a
/// trailing symlink, `complete_walk`; on success the path (with its
/// references) moves to the caller; `terminate_walk` always.
pub fn path_lookupat(w: &mut Walk<'_>, name: &Filename, flags: u32) -> LookupResult {
    let _f = w.t.enter("path_lookupat");
    let mut r: Result<Option<()>, Errno> = w.path_init(flags, name.absolute).map(|()| None);
    let mut s = name.comps.clone();
    while let Ok(None) = r {
        if let Err(e) = w.link_path_walk(std::mem::take(&mut s)) {
            r = Err(e);
            break;
        }
        match w.lookup_last() {
            Ok(Some(body)) => s = body,
            Ok(None) => break,
            Err(e) => r = Err(e),
        }
    }
    let r = r.and_then(|_| w.complete_walk()).map(|()| {
        let p = w.nd.path;
        w.nd.path = Path::NULL;
        p
    });
    w.inode_seen = r.map(|_| w.nd.inode);
    w.terminate_walk();
    r
}

/// fs/namei.c:filename_lookup (7.3; `name` from the task's root or cwd,
/// following a trailing symlink): a lazy attempt, -ECHILD → a
/// ref-walk attempt, -ESTALE → a LOOKUP_REVAL attempt. The returned path's
/// references are the caller's.
pub fn filename_lookup(vfs: &Vfs, t: &Task, flavor: Flavor, name: &Filename) -> LookupResult {
    let _f = t.enter("filename_lookup");
    let id = vfs.lookup_begin(t, &name.comps, name.absolute);
    let mut w = Walk::new(vfs, t, flavor);
    let mut r = path_lookupat(&mut w, name, LOOKUP_FOLLOW | LOOKUP_RCU);
    let mut retries = 0;
    while r == Err(Errno::ECHILD) && flavor.has(Bug::LazyRetryOnEchild) && retries < LAZY_RETRIES {
        retries += 1;
        vfs.lookup_restart(id, false);
        w.nd = Nameidata {
            total_link_count: w.nd.total_link_count,
            ..Nameidata::new()
        };
        r = path_lookupat(&mut w, name, LOOKUP_FOLLOW | LOOKUP_RCU);
    }
    if r == Err(Errno::ECHILD) && !flavor.has(Bug::NoRefWalkRestart) {
        t.tracepoint("ref_walk_restart");
        vfs.lookup_restart(id, false);
        w.nd = Nameidata {
            total_link_count: w.nd.total_link_count,
            ..Nameidata::new()
        };
        r = path_lookupat(&mut w, name, LOOKUP_FOLLOW);
    }
    if r == Err(Errno::ESTALE) {
        vfs.lookup_restart(id, true);
        w.nd = Nameidata::new();
        r = path_lookupat(&mut w, name, LOOKUP_FOLLOW | LOOKUP_REVAL);
    }
    vfs.lookup_end(id, w.inode_seen);
    t.note("returns {}", &[result_val(&r)]);
    r
}

/// Only the ref-walk attempt of a lookup, as `do_file_open`'s second
/// attempt or any LOOKUP_REVAL retry runs it (never lazy).
pub fn ref_walk_lookup(vfs: &Vfs, t: &Task, flavor: Flavor, name: &Filename) -> LookupResult {
    let _f = t.enter("filename_lookup");
    let id = vfs.lookup_begin(t, &name.comps, name.absolute);
    let mut w = Walk::new(vfs, t, flavor);
    let r = path_lookupat(&mut w, name, LOOKUP_FOLLOW);
    vfs.lookup_end(id, w.inode_seen);
    t.note("returns {}", &[result_val(&r)]);
    r
}

/// Puts the references a successful lookup returned.
pub fn path_put(vfs: &Vfs, t: &Task, p: Path) {
    vfs.dput(t, p.dentry);
    vfs.mntput(t, t.name(), p.mnt);
}

/// The trace's view of a lookup result.
pub fn result_val(r: &LookupResult) -> Val {
    match r {
        Ok(p) => Vfs::dentry_val(p.dentry),
        Err(e) => crate::kernel::errptr::ErrPtr::<u64>::Err(*e).val(),
    }
}
