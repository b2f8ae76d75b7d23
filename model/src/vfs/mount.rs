//! `struct mount` and the global `mount_lock` (fs/namespace.c, logic read in
//! the vfs-7.3-rc1.mount copy; the older shapes of `__legitimize_mnt`,
//! `mntput_no_expire` and `do_umount` are the variants [`VfsBug`] names).
//!
//! `mnt_count` is per-CPU in the kernel (`mnt_add_count` is a CPU-local,
//! unordered add; `mnt_get_count` sums the CPUs under the write lock): here
//! one word with relaxed adds and loads, which is the same to every other
//! CPU. The barriers that make an RCU walker's increment and a final put or
//! a synchronous umount see each other are the `smp_mb()` pairs the fixes
//! added.

use std::sync::Mutex as GhostMutex;

use crate::kernel::atomic::{smp_mb, Atomic};
use crate::kernel::errptr::Errno;
use crate::kernel::task::Task;
use crate::trace::{intern, Name, Show, Val};

use super::dentry::DCACHE_MOUNTED;
use super::{DentryRef, MountRef, Obj, Vfs, VfsBug};

pub const MNT_SYNC_UMOUNT: u64 = 1;
pub const MNT_DOOMED: u64 = 2;
pub const MNT_UMOUNT: u64 = 4;

fn show_mnt_flags(f: u64) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (MNT_SYNC_UMOUNT, "MNT_SYNC_UMOUNT"),
        (MNT_DOOMED, "MNT_DOOMED"),
        (MNT_UMOUNT, "MNT_UMOUNT"),
    ] {
        if f & bit != 0 {
            parts.push(name);
        }
    }
    if parts.is_empty() {
        "0".to_string()
    } else {
        parts.join("|")
    }
}

fn show_mount(m: u64) -> String {
    if m == 0 {
        "NULL".to_string()
    } else {
        format!("mount#{m}")
    }
}

/// A mount.
pub struct Mount {
    pub label: &'static str,
    pub mnt_count: Atomic,
    pub mnt_flags: Atomic,
    /// Non-zero while the mount is in a namespace (`mnt_ns`).
    pub mnt_ns: Atomic,
    pub mnt_root: DentryRef,
    pub mnt_mountpoint: DentryRef,
    pub mnt_parent: MountRef,
    /// On the mount hash (`__lookup_mnt` finds it).
    pub hashed: Atomic,
    /// Ghost: the task that performed the final `mntput`.
    pub final_put: GhostMutex<Option<Name>>,
    /// `mnt_writers`: write accesses held (`mnt_want_write`), per-CPU in
    /// the kernel, one word here.
    pub mnt_writers: Atomic,
}

impl Mount {
    pub fn new(
        label: &'static str,
        count: u64,
        root: DentryRef,
        mountpoint: DentryRef,
        parent: MountRef,
    ) -> Mount {
        Mount {
            label,
            mnt_count: Atomic::new(format!("{label}.mnt_count"), count),
            mnt_flags: Atomic::with_format(
                format!("{label}.mnt_flags"),
                0,
                Show::With(show_mnt_flags),
            ),
            mnt_ns: Atomic::new(format!("{label}.mnt_ns"), 1),
            mnt_root: root,
            mnt_mountpoint: mountpoint,
            mnt_parent: parent,
            hashed: Atomic::new(format!("{label}.hashed"), u64::from(parent != 0)),
            final_put: GhostMutex::new(None),
            mnt_writers: Atomic::new(format!("{label}.mnt_writers"), 0),
        }
    }

    /// Who did the final put (ghost).
    pub fn final_put(&self) -> Option<Name> {
        *self.final_put.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Vfs {
    /// The trace's view of a mount pointer.
    pub fn mount_val(m: MountRef) -> Val {
        Val::with(m, Show::With(show_mount))
    }

    /// fs/namespace.c:mnt_add_count (v7.3): a CPU-local, unordered add.
    fn mnt_add_count(&self, t: &Task, m: &super::Mount, n: i64) {
        if n > 0 {
            m.mnt_count.atomic_add(t, n as u64);
        } else {
            m.mnt_count.atomic_sub(t, n.unsigned_abs());
        }
    }

    /// fs/namespace.c:mnt_want_write (not in the part of the vfs-7.3-rc1.mount
    /// copy that was read; reduced from brief §1.2 and the lookup_open call
    /// site): `sb_start_write`
    /// (may sleep while the filesystem is frozen), then `mnt_inc_writers`
    /// followed by the `smp_mb()` that pairs with MNT_WRITE_HOLD (a fully
    /// ordered increment here). The model's mounts are never read-only, so
    /// it always succeeds.
    pub fn mnt_want_write(&self, t: &Task, m: MountRef) -> Result<(), Errno> {
        let _f = t.enter("mnt_want_write");
        t.might_sleep("sb_start_write", None);
        self.mounts.get(t, m).mnt_writers.atomic_add_return(t, 1);
        Ok(())
    }

    /// fs/namespace.c:mnt_drop_write (v7.3): give the write access back;
    /// dropping one that is not held underflows the count.
    pub fn mnt_drop_write(&self, t: &Task, m: MountRef) {
        let _f = t.enter("mnt_drop_write");
        let mnt = self.mounts.get(t, m);
        if mnt.mnt_writers.atomic_sub_return(t, 1) == u64::MAX {
            t.violation(
                "mnt_write_balanced",
                format!(
                    "mnt_drop_write of {} without a write access held",
                    mnt.label
                ),
            );
        }
    }

    /// fs/namespace.c:mntget (v7.3).
    pub fn mntget(&self, t: &Task, holder: Name, m: MountRef) {
        let _f = t.enter("mntget");
        self.mnt_add_count(t, &self.mounts.get(t, m), 1);
        self.refs.take(holder, Obj::Mount(m));
    }

    /// fs/namespace.c:__legitimize_mnt (v7.3; call under rcu_read_lock):
    /// turn an RCU walker's view of `m` (valid at `mount_lock` sample `seq`)
    /// into a reference. 0: referenced and valid; 1: not referenced; -1:
    /// referenced but stale, the caller must `mntput` (outside RCU).
    pub fn __legitimize_mnt(&self, t: &Task, m: MountRef, seq: u64) -> i32 {
        let _f = t.enter("__legitimize_mnt");
        if self.mount_lock.read_seqretry(t, seq) {
            return 1;
        }
        if m == 0 {
            return 0;
        }
        let mnt = self.mounts.get(t, m);
        self.mnt_add_count(t, &mnt, 1);
        self.refs.take(t.name(), Obj::Mount(m));
        let bug2018 = self.has(VfsBug::MntputLegitimizeRace2018);
        if !bug2018 {
            // Pairs with the smp_mb() in mntput_no_expire's slow path and in
            // do_umount: one of the two sides sees the other.
            smp_mb(t);
        }
        if !self.mount_lock.read_seqretry(t, seq) {
            return 0;
        }
        t.tracepoint("legitimize_mnt_raced_umount");
        if bug2018 || self.has(VfsBug::LegitimizeMntUnlockedUmountTest) {
            if m_flags(t, &mnt) & MNT_SYNC_UMOUNT != 0 {
                self.undo_mnt_ref(t, &mnt, m);
                return 1;
            }
            if bug2018 {
                return -1;
            }
        }
        let locked_test = if self.has(VfsBug::LegitimizeMntUnlockedUmountTest) {
            MNT_DOOMED
        } else {
            MNT_SYNC_UMOUNT | MNT_DOOMED
        };
        let w = self.mount_lock.write_seqlock(t);
        if m_flags(t, &mnt) & locked_test != 0 {
            self.undo_mnt_ref(t, &mnt, m);
            w.write_sequnlock();
            return 1;
        }
        w.write_sequnlock();
        -1
    }

    /// The quiet undo of `__legitimize_mnt`'s increment: the racing final
    /// put or synchronous umount did not count it.
    fn undo_mnt_ref(&self, t: &Task, mnt: &super::Mount, m: MountRef) {
        self.mnt_add_count(t, mnt, -1);
        if let Err(e) = self.refs.put(t.name(), Obj::Mount(m)) {
            t.violation("refs_exact", e);
        }
    }

    /// fs/namespace.c:mntput / mntput_no_expire (v7.3): drop a reference
    /// `holder` owns. While the mount is in a namespace the drop is a
    /// lockless decrement (a namespace reference exists, so it is not the
    /// last); otherwise the slow path takes `mount_lock`, and the final put
    /// marks the mount doomed and tears it down (its root dentry put, its
    /// memory freed after a grace period).
    pub fn mntput(&self, t: &Task, holder: Name, m: MountRef) {
        if m == 0 {
            return;
        }
        let _f = t.enter("mntput");
        if let Err(e) = self.refs.put(holder, Obj::Mount(m)) {
            t.violation("refs_exact", e);
        }
        let mnt = self.mounts.get(t, m);
        self.rcu.rcu_read_lock(t);
        if mnt.mnt_ns.read_once(t) != 0 {
            self.mnt_add_count(t, &mnt, -1);
            self.rcu.rcu_read_unlock(t);
            return;
        }
        let w = self.mount_lock.write_seqlock(t);
        if !self.has(VfsBug::MntputLegitimizeRace2018) {
            // If __legitimize_mnt did not see mount_lock taken, this sees its
            // increment.
            smp_mb(t);
        }
        self.mnt_add_count(t, &mnt, -1);
        let count = mnt.mnt_count.read_once(t);
        if count != 0 || m_flags(t, &mnt) & MNT_DOOMED != 0 {
            self.rcu.rcu_read_unlock(t);
            w.write_sequnlock();
            return;
        }
        let flags = mnt.mnt_flags.read_once_owned(t);
        mnt.mnt_flags.write_once(t, flags | MNT_DOOMED);
        *mnt.final_put.lock().unwrap_or_else(|p| p.into_inner()) = Some(t.name());
        self.rcu.rcu_read_unlock(t);
        w.write_sequnlock();
        self.cleanup_mnt(t, m);
    }

    /// fs/namespace.c:cleanup_mnt (v7.3, reduced): put the mount's root
    /// dentry and free the mount after a grace period.
    fn cleanup_mnt(&self, t: &Task, m: MountRef) {
        let _f = t.enter("cleanup_mnt");
        let root = self.mounts.get(t, m).mnt_root;
        self.dput_for(t, intern("mount"), root);
        let mounts = self.mounts.clone();
        self.rcu.call_rcu(
            t,
            Some("delayed_free_vfsmnt"),
            Self::mount_val(m),
            move |t| {
                mounts.free(t, m, "delayed_free_vfsmnt");
            },
        );
    }

    /// fs/namespace.c:__lookup_mnt (v7.3; RCU or mount_lock held): the
    /// mount whose mountpoint is `dentry` on `parent`, or 0.
    pub fn __lookup_mnt(&self, t: &Task, parent: MountRef, dentry: DentryRef) -> MountRef {
        let _f = t.enter("__lookup_mnt");
        for m in 1..=self.mounts.count() as u64 {
            let mnt = self.mounts.get(t, m);
            if mnt.mnt_parent == parent
                && mnt.mnt_mountpoint == dentry
                && mnt.hashed.rcu_dereference(t) != 0
            {
                return m;
            }
        }
        0
    }

    /// fs/namespace.c:do_umount (v7.3, a synchronous umount of a mount with
    /// no submounts, by a caller holding one reference on it): under
    /// `namespace_sem` and `mount_lock`, after a full barrier (paired with
    /// `__legitimize_mnt`'s), the mount is busy unless only its parent's
    /// reference and the caller's remain; if not busy `umount_tree` takes
    /// it out of the namespace with MNT_SYNC_UMOUNT, and after a grace
    /// period the namespace's reference is put.
    pub fn do_umount(&self, t: &Task, m: MountRef) -> Result<(), Errno> {
        let _f = t.enter("do_umount");
        let mnt = self.mounts.get(t, m);
        let sem = self.namespace_sem.mutex_lock(t);
        let w = self.mount_lock.write_seqlock(t);
        if !self.has(VfsBug::UmountMissingMb) {
            smp_mb(t);
        }
        if mnt.mnt_count.read_once(t) > 2 {
            t.tracepoint("umount_busy");
            w.write_sequnlock();
            sem.mutex_unlock();
            return Err(Errno::EBUSY);
        }
        self.umount_tree(t, &mnt);
        w.write_sequnlock();
        sem.mutex_unlock();
        self.rcu.synchronize_rcu(t);
        self.mntput(t, intern("namespace"), m);
        t.tracepoint("umount_sync_done");
        Ok(())
    }

    /// fs/namespace.c:umount_tree (v7.3, one mount, UMOUNT_SYNC; mount_lock
    /// held): out of the namespace (later puts take the slow path), marked
    /// MNT_SYNC_UMOUNT, off the mount hash, its mountpoint no longer
    /// DCACHE_MOUNTED.
    fn umount_tree(&self, t: &Task, mnt: &super::Mount) {
        let _f = t.enter("umount_tree");
        mnt.mnt_ns.write_once(t, 0);
        let flags = mnt.mnt_flags.read_once_owned(t);
        mnt.mnt_flags
            .write_once(t, flags | MNT_SYNC_UMOUNT | MNT_UMOUNT);
        mnt.hashed.write_once(t, 0);
        let mp = self.dentries.get(t, mnt.mnt_mountpoint);
        let f = mp.d_flags.read_once_owned(t);
        mp.d_flags.write_once(t, f & !DCACHE_MOUNTED);
        let root_inode = self.dentry(mnt.mnt_root).d_inode.peek();
        self.ns_update(|ns| ns.mounts.retain(|&(_, r)| r != root_inode));
    }
}

fn m_flags(t: &Task, mnt: &super::Mount) -> u64 {
    mnt.mnt_flags.read_once(t)
}
