//! The adversaries of a path walk, as the system calls that change the
//! namespace run them (fs/namei.c vfs_rename/vfs_unlink/vfs_rmdir/vfs_mkdir
//! and vfs_create, fs/namespace.c path_umount; reduced to their dcache and
//! mount effects). Each finds its objects as its own lookup would have (the
//! ghost state, no steps: the adversary's lookup is not under test), holds a
//! reference while it works, and takes the directory `i_rwsem`s exclusive.

use crate::kernel::errptr::Errno;
use crate::kernel::task::Task;
use crate::trace::intern;

use super::dentry::{DCACHE_ENTRY_TYPE, DCACHE_MISS_TYPE};
use super::{DentryRef, Inode, Kind, MountRef, Path, Vfs};

/// What a system call of an adversary did, for the ghost log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Umount {
    pub thread: crate::trace::Name,
    pub mount: MountRef,
    pub result: Result<(), Errno>,
}

impl Vfs {
    /// The dentry `comps` names now, across mounts (ghost: no steps), or
    /// `None`. A negative or unhashed dentry is not found.
    pub fn find(&self, comps: &[u64]) -> Option<Path> {
        let mut p = self.fs.root;
        for &c in comps {
            let d = self.find_child(p.dentry, c)?;
            p.dentry = d;
            if let Some(m) = self.mount_on(p) {
                p = Path {
                    mnt: m,
                    dentry: self.mount(m).mnt_root,
                };
            }
        }
        Some(p)
    }

    /// The hashed child `name` of `parent` (positive or negative).
    fn find_child(&self, parent: DentryRef, name: u64) -> Option<DentryRef> {
        (1..=self.dentries.count() as u64).find(|&d| {
            let de = self.dentry(d);
            d != parent
                && de.hashed.peek() != 0
                && de.d_parent.peek() == parent
                && de.d_name.peek() == name
                && matches!(
                    self.dentries.state(d),
                    crate::kernel::rcu::ObjState::Live { .. }
                )
        })
    }

    fn positive(&self, d: DentryRef) -> bool {
        self.dentry(d).d_flags.peek() & DCACHE_ENTRY_TYPE != DCACHE_MISS_TYPE
    }

    /// The mount sitting on `p` (ghost).
    pub fn mount_on(&self, p: Path) -> Option<MountRef> {
        (1..=self.mounts.count() as u64).find(|&m| {
            let mnt = self.mount(m);
            mnt.mnt_parent == p.mnt && mnt.mnt_mountpoint == p.dentry && mnt.hashed.peek() != 0
        })
    }

    fn parent_and_name(&self, comps: &[u64]) -> (Path, u64) {
        let (dir, name) = comps.split_at(comps.len() - 1);
        let p = self.find(dir).expect("the parent directory exists");
        (p, name[0])
    }

    pub fn dir_inode(&self, d: DentryRef) -> std::sync::Arc<Inode> {
        self.inodes.peek(self.dentry(d).d_inode.peek())
    }

    /// rename(2) of `from` to the unused name `to`: lock_rename (both
    /// parents' `i_rwsem`), `d_move`, which unhashes a cached negative
    /// dentry of `to` (the target `vfs_rename` looked up).
    pub fn vfs_rename(&self, t: &Task, from: &[u64], to: &[u64]) {
        let _f = t.enter("vfs_rename");
        let old = self.find(from).expect("rename: the source exists");
        let (old_dir, _) = self.parent_and_name(from);
        let (new_dir, name) = self.parent_and_name(to);
        self.dget(t, old.dentry);
        let od = self.dir_inode(old_dir.dentry);
        let nd = self.dir_inode(new_dir.dentry);
        let g1 = od.i_rwsem.down_write(t);
        let g2 = (old_dir.dentry != new_dir.dentry).then(|| nd.i_rwsem.down_write(t));
        let target = self
            .find_child(new_dir.dentry, name)
            .filter(|&d| !self.positive(d));
        if let Some(d) = target {
            self.dget(t, d);
        }
        self.d_move(t, old.dentry, target, new_dir.dentry, name);
        drop(g2);
        g1.up();
        if let Some(d) = target {
            self.dput(t, d);
        }
        self.dput(t, old.dentry);
    }

    /// unlink(2) / rmdir(2) of an existing (empty) entry: `d_delete` under
    /// the parent's `i_rwsem`.
    pub fn vfs_unlink(&self, t: &Task, path: &[u64]) {
        let _f = t.enter("vfs_unlink");
        let victim = self.find(path).expect("unlink: the entry exists");
        let (dir, _) = self.parent_and_name(path);
        self.dget(t, victim.dentry);
        let di = self.dir_inode(dir.dentry);
        let g = di.i_rwsem.down_write(t);
        self.d_delete(t, victim.dentry);
        g.up();
        self.dput(t, victim.dentry);
    }

    /// rmdir(2) of the directory `path` (fs/namei.c:vfs_rmdir, v7.3
    /// 1c3e8cef79ea, reduced): under the parent's `i_rwsem`, then the
    /// victim's own, refuse a non-empty directory (-ENOTEMPTY, what
    /// `simple_rmdir` checks), else mark it S_DEAD (so a create that
    /// already holds it sees IS_DEADDIR) and `d_delete` it.
    pub fn vfs_rmdir(&self, t: &Task, path: &[u64]) -> Result<(), Errno> {
        let _f = t.enter("vfs_rmdir");
        let victim = self.find(path).expect("rmdir: the directory exists");
        let (dir, _) = self.parent_and_name(path);
        self.dget(t, victim.dentry);
        let di = self.dir_inode(dir.dentry);
        let g = di.i_rwsem.down_write(t);
        let vi = self.dir_inode(victim.dentry);
        let vg = vi.i_rwsem.down_write(t);
        let me = self.dentry(victim.dentry).d_inode.peek();
        let empty = self
            .ns_history()
            .last()
            .is_none_or(|ns| ns.entries.iter().all(|e| e.0 != me));
        let r = if empty {
            // The directory is gone for lookups from here (IS_DEADDIR), so
            // this is where the namespace loses the name.
            let (parent, name) = (self.dentry(dir.dentry).d_inode.peek(), path[path.len() - 1]);
            self.ns_update(|ns| ns.remove(parent, name));
            vi.i_flags.atomic_or(t, super::inode::S_DEAD);
            Ok(())
        } else {
            t.tracepoint("rmdir_not_empty");
            Err(Errno::ENOTEMPTY)
        };
        vg.up();
        if r.is_ok() {
            self.d_delete(t, victim.dentry);
        }
        g.up();
        self.dput(t, victim.dentry);
        r
    }

    /// A client is granted a delegation on the directory `path`
    /// (fs/locks.c's lease set-up for a directory delegation, reduced to
    /// the flag `try_break_deleg` tests).
    pub fn grant_delegation(&self, t: &Task, path: &[u64]) {
        let _f = t.enter("generic_setlease");
        let d = self.find(path).expect("the directory exists");
        self.dir_inode(d.dentry).i_deleg.write_once(t, 1);
    }

    /// include/linux/filelock.h:try_break_deleg (not read: the contract as
    /// fs/namei.c:lookup_open, vfs-7.3-rc1.misc, relies on it, and as lookup_open calls
    /// it): a delegation on `dir` must be broken before the create; start
    /// the break without waiting and report the inode to wait on.
    pub fn try_break_deleg(&self, t: &Task, dir: &Inode) -> Option<()> {
        let _f = t.enter("try_break_deleg");
        (dir.i_deleg.read_once(t) != 0).then_some(())
    }

    /// fs/locks.c:break_deleg_wait (not read; what lookup_open's retry relies
    /// on, reduced): sleep until the client
    /// returns the delegation (or the lease-break timeout revokes it); then
    /// the caller retries from the top.
    pub fn break_deleg_wait(&self, t: &Task, dir: &Inode) {
        let _f = t.enter("break_deleg_wait");
        t.might_sleep("break_deleg_wait", None);
        dir.i_deleg.write_once(t, 0);
        t.tracepoint("delegation_retry");
    }

    /// mkdir(2) or creat(2) of `path` (`kind`): the parent's `i_rwsem`, a
    /// new inode, and either a cached negative dentry instantiated in place
    /// or a new dentry added to the hash.
    pub fn vfs_create(&self, t: &Task, path: &[u64], kind: Kind) {
        let _f = t.enter(if kind == Kind::Dir {
            "vfs_mkdir"
        } else {
            "vfs_create"
        });
        let (dir, name) = self.parent_and_name(path);
        let di = self.dir_inode(dir.dentry);
        let g = di.i_rwsem.down_write(t);
        let dir_inode = self.dentry(dir.dentry).d_inode.peek();
        if self
            .ns_history()
            .last()
            .is_some_and(|ns| ns.lookup(dir_inode, name).is_some())
        {
            // creat(2) of a name that exists opens it; mkdir(2) fails.
            t.tracepoint("create_exists");
            g.up();
            return;
        }
        let existing = self
            .find_child(dir.dentry, name)
            .filter(|&d| !self.positive(d));
        let label = intern(&format!("{}'", super::name_of(name)));
        let inode = self
            .inodes
            .alloc(t, || Inode::new(label, kind, Vec::new()), |_| {});
        if kind == Kind::Dir {
            self.ns_update(|ns| ns.dirs.push(inode));
        }
        match existing {
            Some(d) => {
                self.dget(t, d);
                self.d_instantiate(t, d, inode);
                g.up();
                self.dput(t, d);
            }
            None => {
                let d = self.d_alloc(t, dir.dentry, name, label);
                self.d_add(t, d, inode, true);
                g.up();
                self.dput(t, d);
            }
        }
    }

    /// `->lookup` of a filesystem whose directories are the ghost namespace
    /// (its "disk"): a new dentry for `name` under `parent`, instantiated
    /// with the inode the directory holds, or left negative; then hashed.
    /// The caller holds the directory's `i_rwsem` and gets the reference.
    pub fn simple_lookup(&self, t: &Task, parent: DentryRef, name: u64) -> DentryRef {
        let _f = t.enter("simple_lookup");
        // A filesystem's ->lookup may read the disk.
        t.might_sleep("->lookup", None);
        let dir = self.dentry(parent).d_inode.peek();
        let on_disk = self
            .ns_history()
            .last()
            .and_then(|ns| ns.lookup(dir, name))
            .unwrap_or(0);
        let label = intern(&format!("{}'", super::name_of(name)));
        let d = self.d_alloc(t, parent, name, label);
        self.d_add(t, d, on_disk, false);
        d
    }

    /// `->lookup` on the in-lookup dentry `d` (fs/libfs.c:simple_lookup's
    /// role, not re-read): `d_add` with the inode the directory holds on "disk",
    /// or negative; that ends the in-lookup state.
    pub fn fs_lookup(&self, t: &Task, d: DentryRef) {
        let _f = t.enter("simple_lookup");
        t.might_sleep("->lookup", None);
        t.tracepoint("fs_lookup");
        let de = self.dentry(d);
        let dir = self.dentry(de.d_parent.peek()).d_inode.peek();
        let on_disk = self
            .ns_history()
            .last()
            .and_then(|ns| ns.lookup(dir, de.d_name.peek()))
            .unwrap_or(0);
        self.d_add(t, d, on_disk, false);
    }

    /// `->create` on the negative, hashed dentry `d` (what a simple
    /// filesystem's create does: a new inode, `d_instantiate`, which puts
    /// the name in the namespace). The caller holds the directory's
    /// `i_rwsem` exclusive.
    pub fn fs_create(&self, t: &Task, d: DentryRef) -> super::InodeRef {
        let _f = t.enter("simple_create");
        let label = intern(&format!("{}'", self.dentry_name(d)));
        let inode = self
            .inodes
            .alloc(t, || Inode::new(label, Kind::Reg, Vec::new()), |_| {});
        self.d_instantiate(t, d, inode);
        inode
    }

    /// A dentry invalidated by its filesystem (`d_invalidate`, as a failed
    /// revalidation does) and then let go: with no other holder the final
    /// `dput` kills it (dead lockref, unhashed, freed after a grace period).
    pub fn invalidate_and_put(&self, t: &Task, path: &[u64]) {
        let _f = t.enter("d_invalidate_and_dput");
        let victim = self.find(path).expect("the entry exists");
        self.dget(t, victim.dentry);
        self.d_invalidate(t, victim.dentry);
        self.dput(t, victim.dentry);
    }

    /// umount(2) of the mount on `mountpoint`, synchronous: the caller's own
    /// reference (its path lookup), `do_umount`, then that reference put —
    /// which must be the final put when the umount succeeded.
    pub fn path_umount(&self, t: &Task, mountpoint: &[u64]) -> Result<(), Errno> {
        let _f = t.enter("path_umount");
        let m = self.find(mountpoint).expect("umount: the mount exists").mnt;
        self.mntget(t, t.name(), m);
        let r = self.do_umount(t, m);
        self.mntput(t, t.name(), m);
        self.umounts().push(Umount {
            thread: t.name(),
            mount: m,
            result: r,
        });
        r
    }
}
