//! `struct dentry` and the dcache (fs/dcache.c, include/linux/dcache.h;
//! logic read in the vfs-7.3-rc5.fixes copy of fs/dcache.c).
//!
//! Each field other threads write is an [`Atomic`] or a primitive, so every
//! access is a separately schedulable step:
//! - `d_seq`: a seqcount tied to `d_lock`; writers bracket instantiate,
//!   make-negative and rename with write sections, and unhash with
//!   `write_seqcount_invalidate` (+2);
//! - `d_lockref`: `d_lock` and the count in one word; dead ⇔ count < 0;
//! - `d_inode` and the type bits of `d_flags`: stored inode first, then a
//!   release store of the flags (`__d_set_inode_and_type`);
//! - `d_parent`, `d_name`, and `hashed` (`d_hash.pprev != NULL`).
//!
//! The hash is one RCU chain per name (a word with a bit per dentry on it):
//! `__d_lookup_rcu` loads the chain once, then checks each candidate's seq,
//! parent, name and hashed state in that order.

use crate::kernel::atomic::{smp_rmb, Atomic};
use crate::kernel::lockref::{Lockref, LockrefGuard};
use crate::kernel::seqcount::SeqCount;
use crate::kernel::task::Task;
use crate::trace::{intern, Name, Show, Val};

use super::{name_of, show_name, DentryRef, InodeRef, Kind, Obj, Vfs, VfsBug};

/// `d_flags` type bits (DCACHE_ENTRY_TYPE): a negative dentry has none.
pub const DCACHE_MISS_TYPE: u64 = 0;
pub const DCACHE_DIRECTORY_TYPE: u64 = 1;
pub const DCACHE_REGULAR_TYPE: u64 = 2;
pub const DCACHE_SYMLINK_TYPE: u64 = 3;
pub const DCACHE_ENTRY_TYPE: u64 = 3;
/// A mount sits on this dentry.
pub const DCACHE_MOUNTED: u64 = 4;
/// DCACHE_PAR_LOOKUP: the dentry is in-lookup (`d_alloc_parallel` made it;
/// `d_lookup_done` or `__d_add` ends it).
pub const DCACHE_PAR_LOOKUP: u64 = 8;

/// DENTRY_D_LOCK_NESTED: a child's (or second) `d_lock` under another's.
pub const DENTRY_D_LOCK_NESTED: u8 = 1;

/// The `d_lock` lock class every dentry shares.
pub fn d_lock_class() -> Name {
    intern("d_lock")
}

fn show_flags(f: u64) -> String {
    let ty = match f & DCACHE_ENTRY_TYPE {
        DCACHE_DIRECTORY_TYPE => "DIR",
        DCACHE_REGULAR_TYPE => "REG",
        DCACHE_SYMLINK_TYPE => "SYMLINK",
        _ => "NEGATIVE",
    };
    let mut out = ty.to_string();
    if f & DCACHE_MOUNTED != 0 {
        out.push_str("|MOUNTED");
    }
    if f & DCACHE_PAR_LOOKUP != 0 {
        out.push_str("|PAR_LOOKUP");
    }
    out
}

fn show_inode(i: u64) -> String {
    if i == 0 {
        "NULL".to_string()
    } else {
        format!("inode#{i}")
    }
}

fn show_dentry(d: u64) -> String {
    if d == 0 {
        "NULL".to_string()
    } else {
        format!("dentry#{d}")
    }
}

/// `d_flags_for_inode`: the type bits an inode of `kind` gives its dentry.
pub fn d_flags_for(kind: Kind) -> u64 {
    match kind {
        Kind::Dir => DCACHE_DIRECTORY_TYPE,
        Kind::Reg => DCACHE_REGULAR_TYPE,
        Kind::Symlink => DCACHE_SYMLINK_TYPE,
    }
}

/// A dentry.
pub struct Dentry {
    /// Its own object number (its bit in a hash chain).
    pub me: DentryRef,
    /// How traces name it: its first name, primed when reused (`c'`).
    pub label: &'static str,
    pub d_name: Atomic,
    pub d_parent: Atomic,
    pub d_inode: Atomic,
    pub d_flags: Atomic,
    pub d_seq: SeqCount,
    pub d_lockref: Lockref,
    pub hashed: Atomic,
    /// DCACHE_OP_REVALIDATE: its filesystem gives it a `->d_revalidate`
    /// (`d_set_d_op`, before anyone can see the dentry). Constant for the
    /// dentry's life, so the walk reads it without a step.
    pub d_op_revalidate: bool,
}

impl Dentry {
    /// A dentry as `d_alloc` leaves it (or as set-up builds it): named,
    /// linked to `parent`, with `count` references.
    pub fn new(
        me: DentryRef,
        label: &'static str,
        name: u64,
        parent: DentryRef,
        count: i32,
    ) -> Dentry {
        Dentry::with_state(me, label, name, parent, count, (0, DCACHE_MISS_TYPE, false))
    }

    /// A dentry built with its inode, type bits and hashed state (scenario
    /// set-up: positive dentries already in the cache).
    pub fn with_state(
        me: DentryRef,
        label: &'static str,
        name: u64,
        parent: DentryRef,
        count: i32,
        (inode, flags, hashed): (u64, u64, bool),
    ) -> Dentry {
        Dentry {
            me,
            label,
            d_name: Atomic::with_format(format!("{label}.d_name"), name, Show::With(show_name)),
            d_parent: Atomic::with_format(
                format!("{label}.d_parent"),
                parent,
                Show::With(show_dentry),
            ),
            d_inode: Atomic::with_format(format!("{label}.d_inode"), inode, Show::With(show_inode)),
            d_flags: Atomic::with_format(format!("{label}.d_flags"), flags, Show::With(show_flags)),
            d_seq: SeqCount::new(format!("{label}.d_seq")),
            d_lockref: Lockref::with_class(
                format!("{label}.d_lockref"),
                format!("{label}.d_lock"),
                d_lock_class(),
                count,
            ),
            hashed: Atomic::new(format!("{label}.hashed"), u64::from(hashed)),
            d_op_revalidate: false,
        }
    }

    /// Count and lock state (ghost).
    pub fn count(&self) -> i32 {
        self.d_lockref.peek().0
    }

    pub fn is_dead(&self) -> bool {
        self.count() < 0
    }
}

impl Vfs {
    /// A reference on dentry `d` was just taken by `holder`: record it, and
    /// object if it was taken on a dead dentry (brief L2).
    pub fn took_dentry(&self, t: &Task, holder: Name, d: DentryRef) {
        self.refs.take(holder, Obj::Dentry(d));
        let count = self.dentry(d).count();
        if count <= 0 {
            t.violation(
                "no_dead_ref",
                format!(
                    "{holder} took a reference on {} although it is dead (count now {count})",
                    self.dentry_label(d)
                ),
            );
        }
    }

    /// `holder` gives a dentry reference back.
    fn gave_dentry(&self, t: &Task, holder: Name, d: DentryRef) {
        if let Err(e) = self.refs.put(holder, Obj::Dentry(d)) {
            t.violation("refs_exact", e);
        }
    }

    /// The trace's view of a dentry pointer.
    pub fn dentry_val(d: DentryRef) -> Val {
        Val::with(d, Show::With(show_dentry))
    }

    /// fs/dcache.c:__d_lookup_rcu (v7.3): the RCU-walk hash lookup. Loads
    /// the name's chain, then per candidate samples `d_seq` without waiting
    /// (raw_seqcount_begin masks the low bit, so a writer in progress makes
    /// the caller's later retry fail), then checks parent, name and — after
    /// the sample, as the code insists — that it is still hashed. Returns
    /// the dentry and its seq sample; no reference, nothing validated.
    pub fn __d_lookup_rcu(
        &self,
        t: &Task,
        parent: DentryRef,
        name: u64,
    ) -> Option<(DentryRef, u64)> {
        let _f = t.enter("__d_lookup_rcu");
        let chain = self.buckets[name as usize].rcu_dereference(t);
        for d in (1..64u64).filter(|d| chain >> d & 1 == 1) {
            let de = self.dentries.get(t, d);
            let seq = de.d_seq.raw_seqcount_begin(t);
            let other_dir = if self.has(VfsBug::DLookupRcuSkipsParent) {
                false
            } else {
                de.d_parent.read_once(t) != parent
            };
            if other_dir || de.d_name.read_once(t) != name {
                continue;
            }
            if de.hashed.read_once(t) == 0 {
                continue;
            }
            return Some((d, seq));
        }
        None
    }

    /// fs/dcache.c:__d_lookup (v7.3): the ref-walk hash lookup. Under RCU,
    /// each candidate is checked under its `d_lock`; a match gets a
    /// reference with a plain `count++` under the lock (a dentry seen
    /// hashed under its `d_lock` cannot be dead: `dentry_kill` marks it
    /// dead and unhashes it in one `d_lock` section).
    pub fn __d_lookup(&self, t: &Task, parent: DentryRef, name: u64) -> Option<DentryRef> {
        let _f = t.enter("__d_lookup");
        self.rcu.rcu_read_lock(t);
        let chain = self.buckets[name as usize].rcu_dereference(t);
        let mut found = None;
        for d in (1..64u64).filter(|d| chain >> d & 1 == 1) {
            let de = self.dentries.get(t, d);
            let g = de.d_lockref.lock(t);
            let hit = de.d_parent.read_once(t) == parent
                && de.d_name.read_once(t) == name
                && de.hashed.read_once(t) != 0;
            if hit {
                g.set_count(g.count() + 1);
                self.took_dentry(t, t.name(), d);
                found = Some(d);
            }
            g.unlock();
            if hit {
                break;
            }
        }
        self.rcu.rcu_read_unlock(t);
        found
    }

    /// fs/dcache.c:d_lookup (v7.3): `__d_lookup` under `rename_lock`'s
    /// read side; a miss is retried while a rename ran (a hit needs no
    /// re-check: it was verified under `d_lock`).
    pub fn d_lookup(&self, t: &Task, parent: DentryRef, name: u64) -> Option<DentryRef> {
        let _f = t.enter("d_lookup");
        loop {
            let seq = self.rename_lock.read_seqbegin(t);
            let d = self.__d_lookup(t, parent, name);
            if d.is_some() || !self.rename_lock.read_seqretry(t, seq) {
                return d;
            }
            crate::sync::yield_now();
        }
    }

    /// include/linux/dcache.h:dget (v6.19): `lockref_get` on a dentry the
    /// caller already holds or otherwise knows alive.
    pub fn dget(&self, t: &Task, d: DentryRef) {
        let _f = t.enter("dget");
        self.dentries.get(t, d).d_lockref.lockref_get(t);
        self.took_dentry(t, t.name(), d);
    }

    /// fs/dcache.c:dget_parent (v7.3): the parent of `d` with a reference.
    /// Fast path under RCU: sample `d_seq`, read `d_parent`, take a
    /// reference with `lockref_get_not_zero`, then validate with
    /// `read_seqcount_retry` (the fix of e84009336711; before it, the check
    /// was "d_parent is still the same pointer", which a rename away and
    /// back defeats). Slow path: `d_parent` pinned under its `d_lock`.
    pub fn dget_parent(&self, t: &Task, d: DentryRef) -> DentryRef {
        let _f = t.enter("dget_parent");
        let de = self.dentries.get(t, d);
        self.rcu.rcu_read_lock(t);
        let seq = de.d_seq.raw_seqcount_begin(t);
        let ret = de.d_parent.read_once_ptr(t);
        let got = self.dentries.get(t, ret).d_lockref.lockref_get_not_zero(t);
        self.rcu.rcu_read_unlock(t);
        if got {
            self.took_dentry(t, t.name(), ret);
            let unchanged = if self.has(VfsBug::DgetParentPointerRecheck) {
                de.d_parent.read_once(t) == ret
            } else {
                !de.d_seq.read_seqcount_retry(t, seq)
            };
            if unchanged {
                return ret;
            }
            t.tracepoint("dget_parent_retry");
            self.dput(t, ret);
        }
        loop {
            self.rcu.rcu_read_lock(t);
            let ret = de.d_parent.read_once_ptr(t);
            let pe = self.dentries.get(t, ret);
            let g = pe.d_lockref.lock(t);
            if de.d_parent.read_once(t) == ret {
                self.rcu.rcu_read_unlock(t);
                g.set_count(g.count() + 1);
                self.took_dentry(t, t.name(), ret);
                g.unlock();
                return ret;
            }
            g.unlock();
            self.rcu.rcu_read_unlock(t);
            crate::sync::yield_now();
        }
    }

    /// fs/dcache.c:dput (v7.3): drop a reference; `fast_dput` handles
    /// every case but the last reference to a dentry not worth keeping,
    /// which `finish_dput` kills. May sleep.
    pub fn dput(&self, t: &Task, d: DentryRef) {
        self.dput_for(t, t.name(), d);
    }

    /// `dput` of a reference `holder` owns (the task itself, or a
    /// structure it tears down, such as a mount's root).
    pub fn dput_for(&self, t: &Task, holder: Name, d: DentryRef) {
        if d == 0 {
            return;
        }
        let _f = t.enter("dput");
        t.might_sleep("dput", None);
        self.gave_dentry(t, holder, d);
        let de = self.dentries.get(t, d);
        let kill = self.fast_dput(t, &de);
        if let Some(g) = kill {
            self.finish_dput(t, d, g);
        }
    }

    /// fs/dcache.c:retain_dentry (v7.3, reduced to its first test): a
    /// hashed dentry is kept in the cache at count 0; an unhashed one is
    /// killed, since no lookup could ever find it again (DCACHE_DISCONNECTED,
    /// ->d_delete, DCACHE_DONTCACHE and the LRU are not modelled). The
    /// `smp_rmb()` first: called without `d_lock` (fast_dput, right after
    /// `lockref_put_return`), it orders the read of the hash state after
    /// the count the put read, so an unhash done under `d_lock` before the
    /// put that count came from is seen.
    fn retain_dentry(&self, t: &Task, de: &Dentry) -> bool {
        smp_rmb(t);
        if self.has(VfsBug::RetainDentryKeepsUnhashed) {
            return true;
        }
        de.hashed.read_once(t) != 0
    }

    /// fs/dcache.c:fast_dput (v7.3): `None` when done; otherwise the count
    /// is 0, the dentry is not worth keeping, and its `d_lock` is held.
    fn fast_dput<'a>(&self, t: &'a Task, de: &'a Dentry) -> Option<LockrefGuard<'a>> {
        self.rcu.rcu_read_lock(t);
        let ret = de.d_lockref.lockref_put_return(t);
        let g = if ret < 0 {
            let g = de.d_lockref.lock(t);
            self.rcu.rcu_read_unlock(t);
            let c = g.count();
            if c <= 0 {
                t.violation("refs_exact", format!("dput of {} at count {c}", de.label));
            }
            g.set_count(c - 1);
            g
        } else if ret > 0 || self.retain_dentry(t, de) {
            self.rcu.rcu_read_unlock(t);
            return None;
        } else {
            let g = de.d_lockref.lock(t);
            self.rcu.rcu_read_unlock(t);
            g
        };
        if g.count() != 0 || self.retain_dentry(t, de) {
            g.unlock();
            return None;
        }
        Some(g)
    }

    /// fs/dcache.c:finish_dput (v7.3): kill the dentry, then each parent
    /// whose count that brought to zero and that is not worth keeping.
    fn finish_dput(&self, t: &Task, d: DentryRef, g: LockrefGuard<'_>) {
        let mut next = self.dentry_kill(t, d, g);
        while let Some(parent) = next {
            let pe = self.dentries.get(t, parent);
            let g = pe.d_lockref.lock(t);
            if g.count() != 0 || self.retain_dentry(t, &pe) {
                g.unlock();
                return;
            }
            next = self.dentry_kill(t, parent, g);
        }
    }

    /// fs/dcache.c:dentry_kill (v7.3; `__dentry_kill` before): with
    /// `d_lock` held and the count 0, mark the lockref dead (every
    /// `lockref_get_not_dead` fails from here), unhash with an invalidate,
    /// make it negative, drop its reference on the parent and free it after
    /// a grace period. Returns the parent when that brought it to zero.
    fn dentry_kill(&self, t: &Task, d: DentryRef, g: LockrefGuard<'_>) -> Option<DentryRef> {
        let _f = t.enter("dentry_kill");
        let de = self.dentries.get(t, d);
        g.lockref_mark_dead();
        self.__d_drop(t, &de, false);
        if de.d_inode.read_once(t) != 0 {
            self.dentry_unlink_inode(t, &de, false);
        }
        let parent = de.d_parent.read_once(t);
        g.unlock();
        let dentries = self.dentries.clone();
        self.rcu
            .call_rcu(t, Some("__d_free"), Self::dentry_val(d), move |t| {
                dentries.free(t, d, "__d_free");
            });
        if parent == 0 || parent == d {
            return None;
        }
        let pe = self.dentries.get(t, parent);
        let pg = pe.d_lockref.lock(t);
        let c = pg.count() - 1;
        pg.set_count(c);
        self.gave_dentry(t, intern("d_parent"), parent);
        pg.unlock();
        (c == 0).then_some(parent)
    }

    /// fs/dcache.c:__d_drop (v7.3; `d_lock` held): unhash from the dcache
    /// chain, mark unhashed, and invalidate `d_seq` (+2: in-flight RCU
    /// walkers fail their re-check, with no odd phase).
    fn __d_drop(&self, t: &Task, de: &Dentry, unlink: bool) {
        if de.hashed.read_once(t) == 0 {
            return;
        }
        let name = de.d_name.read_once(t);
        let me = de.me;
        self.buckets[name as usize].atomic_andnot(t, 1 << me);
        de.hashed.write_once(t, 0);
        if unlink {
            self.ghost_unlink(de, name);
        }
        de.d_seq.write_seqcount_invalidate(t);
    }

    /// fs/dcache.c:d_invalidate (v7.3, reduced to a dentry without
    /// submounts): unhash it so no lookup finds it; its holders keep it
    /// until their final `dput` kills it.
    pub fn d_invalidate(&self, t: &Task, d: DentryRef) {
        let _f = t.enter("d_invalidate");
        let de = self.dentries.get(t, d);
        let g = de.d_lockref.lock(t);
        self.__d_drop(t, &de, false);
        g.unlock();
    }

    /// fs/dcache.c:dentry_unlink_inode (v7.3; `d_lock` held): make the
    /// dentry negative in place inside a `d_seq` write section: type bits
    /// cleared first, then `d_inode` (`__d_clear_type_and_inode`).
    fn dentry_unlink_inode(&self, t: &Task, de: &Dentry, unlink: bool) {
        let _f = t.enter("dentry_unlink_inode");
        de.d_seq.write_seqcount_begin(t);
        if unlink {
            self.ghost_unlink(de, de.d_name.peek());
        }
        let flags = de.d_flags.read_once_owned(t);
        de.d_flags.write_once(t, flags & !DCACHE_ENTRY_TYPE);
        de.d_inode.write_once(t, 0);
        de.d_seq.write_seqcount_end(t);
    }

    /// fs/dcache.c:d_delete (v7.3): unlink. The only holder (the caller)
    /// makes the dentry negative in place; otherwise it is unhashed and
    /// stays positive for its other holders until its final `dput`.
    pub fn d_delete(&self, t: &Task, d: DentryRef) {
        let _f = t.enter("d_delete");
        let de = self.dentries.get(t, d);
        let g = de.d_lockref.lock(t);
        if g.count() == 1 {
            self.dentry_unlink_inode(t, &de, true);
        } else {
            self.__d_drop(t, &de, true);
        }
        g.unlock();
    }

    /// fs/dcache.c:__d_instantiate + __d_set_inode_and_type (v7.3): make a
    /// negative dentry positive inside a `d_seq` write section: `d_inode`
    /// stored first, then the type bits with a release store (pairs with
    /// the acquire load of `d_flags` in `traverse_mounts`).
    pub fn d_instantiate(&self, t: &Task, d: DentryRef, inode: InodeRef) {
        let _f = t.enter("d_instantiate");
        self.instantiate(t, d, inode, true);
    }

    /// __d_instantiate under `d_lock`; `created` when a hashed name becomes
    /// positive in the namespace.
    fn instantiate(&self, t: &Task, d: DentryRef, inode: InodeRef, created: bool) {
        let de = self.dentries.get(t, d);
        let kind = self.inodes.get(t, inode).kind;
        let g = de.d_lockref.lock(t);
        self.__d_set_inode_and_type(t, &de, inode, kind, created);
        g.unlock();
    }

    /// fs/dcache.c:__d_set_inode_and_type inside a `d_seq` write section
    /// (`d_lock` held): `d_inode` stored, then the type bits released.
    pub(super) fn __d_set_inode_and_type(
        &self,
        t: &Task,
        de: &Dentry,
        inode: InodeRef,
        kind: Kind,
        created: bool,
    ) {
        de.d_seq.write_seqcount_begin(t);
        if created && de.hashed.peek() != 0 {
            let dir = self.dentry(de.d_parent.peek()).d_inode.peek();
            self.ns_update(|ns| ns.add(dir, de.d_name.peek(), inode));
        }
        de.d_inode.write_once(t, inode);
        let flags = de.d_flags.read_once_owned(t);
        de.d_flags
            .store_release(t, (flags & !DCACHE_ENTRY_TYPE) | d_flags_for(kind));
        de.d_seq.write_seqcount_end(t);
    }

    /// fs/dcache.c:d_alloc (v7.3): a new negative, unhashed dentry named
    /// `name` under `parent`, holding a reference on the parent; the
    /// caller gets the one reference on it.
    pub fn d_alloc(
        &self,
        t: &Task,
        parent: DentryRef,
        name: u64,
        label: &'static str,
    ) -> DentryRef {
        let _f = t.enter("d_alloc");
        self.__d_alloc(t, parent, name, label, DCACHE_MISS_TYPE)
    }

    /// A new dentry with `flags` under `parent` (d_alloc's body; the
    /// in-lookup flag is set before anyone can see it).
    pub(super) fn __d_alloc(
        &self,
        t: &Task,
        parent: DentryRef,
        name: u64,
        label: &'static str,
        flags: u64,
    ) -> DentryRef {
        let d = self.dentries.alloc_numbered(t, |me| {
            Dentry::with_state(me, label, name, parent, 1, (0, flags, false))
        });
        self.took_dentry(t, t.name(), d);
        let pe = self.dentries.get(t, parent);
        let g = pe.d_lockref.lock(t);
        g.set_count(g.count() + 1);
        self.took_dentry(t, intern("d_parent"), parent);
        g.unlock();
        d
    }

    /// fs/dcache.c:d_add (v7.3): instantiate an unhashed dentry (inode
    /// published inside the `d_seq` section; none for a negative one) and
    /// then hash it, so a lookup that finds it sees it as it is. `created`:
    /// the name is new in the namespace (a create), not a lookup caching
    /// what the filesystem already had.
    pub fn d_add(&self, t: &Task, d: DentryRef, inode: InodeRef, created: bool) {
        let _f = t.enter("d_add");
        if self.dentry(d).d_flags.peek() & DCACHE_PAR_LOOKUP != 0 {
            return self.__d_add_in_lookup(t, d, inode);
        }
        if inode != 0 {
            self.instantiate(t, d, inode, false);
        }
        let de = self.dentries.get(t, d);
        let g = de.d_lockref.lock(t);
        self.__d_rehash(t, &de, created);
        g.unlock();
    }

    /// fs/dcache.c:__d_rehash (v7.3; `d_lock` held): publish on the
    /// dentry's chain (`hlist_bl_add_head_rcu`: a release store).
    pub(super) fn __d_rehash(&self, t: &Task, de: &Dentry, created: bool) {
        let name = de.d_name.read_once(t);
        if created {
            let dir = self.dentry(de.d_parent.peek()).d_inode.peek();
            let inode = de.d_inode.peek();
            self.ns_update(|ns| ns.add(dir, name, inode));
        }
        self.buckets[name as usize].or_release(t, "hlist_bl_add_head_rcu", 1 << de.me);
        de.hashed.write_once(t, 1);
    }

    /// fs/dcache.c:d_move / __d_move (v7.3, a rename to a name not in use):
    /// under `rename_lock`, with the parents' and the dentry's `d_lock`s
    /// (nested), inside the dentry's `d_seq` write section: move it off
    /// its chain, change `d_parent` and `d_name`, move the reference it
    /// holds from the old parent to the new one, and hash it again.
    pub fn d_move(
        &self,
        t: &Task,
        d: DentryRef,
        target: Option<DentryRef>,
        new_parent: DentryRef,
        new_name: u64,
    ) {
        let _f = t.enter("d_move");
        let de = self.dentries.get(t, d);
        let w = self.rename_lock.write_seqlock(t);
        let old_parent = de.d_parent.read_once(t);
        let (op, np) = (
            self.dentries.get(t, old_parent),
            self.dentries.get(t, new_parent),
        );
        let g_old = op.d_lockref.lock(t);
        let g_new =
            (new_parent != old_parent).then(|| np.d_lockref.lock_nested(t, DENTRY_D_LOCK_NESTED));
        let g = de.d_lockref.lock_nested(t, 2);
        let target = target.map(|d| self.dentries.get(t, d));
        let g_target = target.as_ref().map(|te| te.d_lockref.lock_nested(t, 3));
        de.d_seq.write_seqcount_begin(t);
        if let Some(te) = &target {
            self.__d_drop(t, te, false);
        }
        let old_name = de.d_name.read_once(t);
        self.ghost_unlink(&de, old_name);
        let me = de.me;
        self.buckets[old_name as usize].atomic_andnot(t, 1 << me);
        de.d_parent.write_once(t, new_parent);
        de.d_name.write_once(t, new_name);
        if let Some(gn) = &g_new {
            gn.set_count(gn.count() + 1);
            self.refs.take(intern("d_parent"), Obj::Dentry(new_parent));
            g_old.set_count(g_old.count() - 1);
            self.gave_dentry(t, intern("d_parent"), old_parent);
        }
        let inode = de.d_inode.peek();
        let dir = np.d_inode.peek();
        self.ns_update(|ns| ns.add(dir, new_name, inode));
        self.buckets[new_name as usize].or_release(t, "hlist_bl_add_head_rcu", 1 << me);
        de.d_seq.write_seqcount_end(t);
        if let Some(gt) = g_target {
            gt.unlock();
        }
        g.unlock();
        drop(g_new);
        g_old.unlock();
        w.write_sequnlock();
    }

    /// The ghost namespace forgets `de`'s name (an unlink, unhash or the
    /// old name of a rename), at the start of the write section.
    fn ghost_unlink(&self, de: &Dentry, name: u64) {
        let dir = self.dentry(de.d_parent.peek()).d_inode.peek();
        self.ns_update(|ns| ns.remove(dir, name));
    }

    /// The name a dentry has now (ghost).
    pub fn dentry_name(&self, d: DentryRef) -> &'static str {
        name_of(self.dentry(d).d_name.peek())
    }
}
