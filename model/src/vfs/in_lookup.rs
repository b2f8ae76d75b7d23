//! In-lookup dentries: `d_alloc_parallel`, the wait for a lookup in flight,
//! and the hand-over into the hash (fs/dcache.c d_alloc_parallel,
//! d_wait_lookup, __d_lookup_unhash, __d_lookup_unhash_wake, __d_add,
//! start_dir_add/end_dir_add; logic read in the vfs-7.3-rc5.fixes copy,
//! aa98230e410f, where `d_alloc_parallel` takes the parent and the name
//! only and waiters sleep on `d_flags`).
//!
//! Two lookups of one missing name under a shared `i_rwsem` (a plain open
//! and a `lookup_slow`, or two plain opens) must not both ask the
//! filesystem: the first puts a DCACHE_PAR_LOOKUP dentry on the in-lookup
//! hash (one chain for the whole table, a bit per dentry, under one bit
//! lock: matches are by parent and name, as in the kernel's chains), the
//! second finds it there, pins it and sleeps until the first is done, then
//! takes it if it is now a hashed match. `i_dir_seq` closes the window
//! between the second's dcache miss and its look at the in-lookup chain:
//! `__d_add` moves a dentry from one hash to the other with the directory's
//! sequence odd, and the second retries if the sequence moved.

use crate::kernel::errptr::Errno;
use crate::kernel::sleeping::wait_event;
use crate::kernel::task::Task;
use crate::trace::intern;

use super::dentry::{Dentry, DCACHE_MISS_TYPE, DCACHE_PAR_LOOKUP};
use super::{DentryRef, InodeRef, Vfs};

impl Vfs {
    /// fs/dcache.c:d_alloc_parallel (v7.3): a dentry for `name` under
    /// `parent` that is either hashed (someone else looked it up or created
    /// it: returned with a reference) or in-lookup and ours (the caller
    /// asks the filesystem, then `d_lookup_done`).
    pub fn d_alloc_parallel(
        &self,
        t: &Task,
        parent: DentryRef,
        name: u64,
        label: &'static str,
    ) -> Result<DentryRef, Errno> {
        let _f = t.enter("d_alloc_parallel");
        let new = self.__d_alloc(t, parent, name, label, DCACHE_MISS_TYPE | DCACHE_PAR_LOOKUP);
        let dir = self.dentries.get(t, parent).d_inode.read_once_ptr(t);
        let dir = self.inodes.get(t, dir);
        loop {
            let seq = dir.i_dir_seq.load_acquire(t);
            let r_seq = self.rename_lock.read_seqbegin(t);
            self.rcu.rcu_read_lock(t);
            if let Some((d, d_seq)) = self.__d_lookup_rcu(t, parent, name) {
                let de = self.dentries.get(t, d);
                if !de.d_lockref.lockref_get_not_dead(t) {
                    self.rcu.rcu_read_unlock(t);
                    crate::sync::yield_now();
                    continue;
                }
                self.took_dentry(t, t.name(), d);
                self.rcu.rcu_read_unlock(t);
                if de.d_seq.read_seqcount_retry(t, d_seq) {
                    self.dput(t, d);
                    continue;
                }
                self.dput(t, new);
                return Ok(d);
            }
            self.rcu.rcu_read_unlock(t);
            if self.rename_lock.read_seqretry(t, r_seq) || seq & 1 != 0 {
                crate::sync::yield_now();
                continue;
            }
            let b = self.in_lookup_lock.spin_lock(t);
            if dir.i_dir_seq.read_once(t) != seq {
                b.unlock();
                continue;
            }
            match self.in_lookup_match(t, parent, name) {
                None => {
                    let me = self.dentry(new).me;
                    self.in_lookup.atomic_or(t, 1 << me);
                    b.unlock();
                    t.tracepoint("d_alloc_parallel_in_lookup");
                    return Ok(new);
                }
                Some(d) => {
                    self.rcu.rcu_read_lock(t);
                    b.unlock();
                    if let Some(d) = self.wait_for_lookup(t, d, parent, name) {
                        self.dput(t, new);
                        return Ok(d);
                    }
                }
            }
        }
    }

    /// The in-lookup dentry for (`parent`, `name`), if any (in-lookup bit
    /// lock held: every field of a chain member is stable).
    fn in_lookup_match(&self, t: &Task, parent: DentryRef, name: u64) -> Option<DentryRef> {
        let chain = self.in_lookup.read_once(t);
        (1..64u64).filter(|d| chain >> d & 1 == 1).find(|&d| {
            let de = self.dentries.get(t, d);
            de.d_parent.read_once(t) == parent && de.d_name.read_once(t) == name
        })
    }

    /// The middle of d_alloc_parallel (v7.3), entered under
    /// `rcu_read_lock` after dropping the in-lookup lock: take `d`'s
    /// `d_lock`, leave RCU, give up on a dead dentry; otherwise pin it,
    /// sleep until its lookup is done (`d_wait_lookup`), and return it if
    /// it is now a hashed match (else drop it: the caller retries).
    fn wait_for_lookup(
        &self,
        t: &Task,
        d: DentryRef,
        parent: DentryRef,
        name: u64,
    ) -> Option<DentryRef> {
        let de = self.dentries.get(t, d);
        let g = de.d_lockref.lock(t);
        self.rcu.rcu_read_unlock(t);
        if g.count() < 0 {
            g.unlock();
            return None;
        }
        g.set_count(g.count() + 1);
        self.took_dentry(t, t.name(), d);
        let g = self.d_wait_lookup(t, &de, g);
        let matches = de.d_name.read_once(t) == name
            && de.d_parent.read_once(t) == parent
            && de.hashed.read_once(t) != 0;
        g.unlock();
        if matches {
            return Some(d);
        }
        t.tracepoint("d_alloc_parallel_mismatch");
        self.dput(t, d);
        None
    }

    /// fs/dcache.c:d_wait_lookup (v7.3; `d_lock` held, returned held):
    /// while the dentry is in-lookup, sleep with `d_lock` dropped until the
    /// lookup's owner clears DCACHE_PAR_LOOKUP.
    fn d_wait_lookup<'a>(
        &self,
        t: &'a Task,
        de: &'a Dentry,
        g: crate::kernel::lockref::LockrefGuard<'a>,
    ) -> crate::kernel::lockref::LockrefGuard<'a> {
        if de.d_flags.read_once(t) & DCACHE_PAR_LOOKUP == 0 {
            return g;
        }
        t.tracepoint("d_wait_lookup");
        g.unlock();
        wait_event(t, intern("d_wait_lookup"), || {
            de.d_flags.load_acquire(t) & DCACHE_PAR_LOOKUP == 0
        });
        de.d_lockref.lock(t)
    }

    /// fs/dcache.c:__d_lookup_unhash (v7.3; `d_lock` held): off the
    /// in-lookup chain, DCACHE_PAR_LOOKUP cleared (a release store: a
    /// waiter that sees it cleared sees what the lookup did).
    fn __d_lookup_unhash(&self, t: &Task, de: &Dentry) {
        let b = self.in_lookup_lock.spin_lock(t);
        let flags = de.d_flags.read_once_owned(t);
        de.d_flags.store_release(t, flags & !DCACHE_PAR_LOOKUP);
        self.in_lookup.atomic_andnot(t, 1 << de.me);
        b.unlock();
    }

    /// include/linux/dcache.h:d_lookup_done (read in the older pull-persistency
    /// copy; v7.3's __d_lookup_unhash_wake is what it calls): end an in-lookup
    /// dentry's lookup if `->lookup` did not (`__d_lookup_unhash_wake`).
    pub fn d_lookup_done(&self, t: &Task, d: DentryRef) {
        let de = self.dentries.get(t, d);
        if de.d_flags.peek() & DCACHE_PAR_LOOKUP == 0 {
            return;
        }
        let _f = t.enter("d_lookup_done");
        let g = de.d_lockref.lock(t);
        self.__d_lookup_unhash(t, &de);
        g.unlock();
    }

    /// fs/dcache.c:__d_add (v7.3) for an in-lookup dentry: under `d_lock`,
    /// with the directory's `i_dir_seq` odd (`start_dir_add`), move it off
    /// the in-lookup chain, give it its inode (or leave it negative) and
    /// hash it, then `end_dir_add`. What the filesystem found is already in
    /// the namespace: no namespace change.
    pub(super) fn __d_add_in_lookup(&self, t: &Task, d: DentryRef, inode: InodeRef) {
        let de = self.dentries.get(t, d);
        let g = de.d_lockref.lock(t);
        let dir = self.dentries.get(t, de.d_parent.peek()).d_inode.peek();
        let dir = self.inodes.get(t, dir);
        let n = start_dir_add(t, &dir.i_dir_seq);
        self.__d_lookup_unhash(t, &de);
        if inode != 0 {
            let kind = self.inodes.get(t, inode).kind;
            self.__d_set_inode_and_type(t, &de, inode, kind, false);
        }
        self.__d_rehash(t, &de, false);
        dir.i_dir_seq.store_release(t, n + 2);
        g.unlock();
    }
}

/// fs/dcache.c:start_dir_add (v7.3): make `i_dir_seq` odd (wait for an
/// even value, then cmpxchg it one up); returns the even value.
fn start_dir_add(t: &Task, seq: &crate::kernel::atomic::Atomic) -> u64 {
    loop {
        let n = seq.read_once(t);
        if n & 1 == 0 && seq.cmpxchg(t, n, n + 1) == n {
            return n;
        }
        crate::sync::yield_now();
    }
}
