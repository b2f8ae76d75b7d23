//! RCU and slab object lifetimes (include/linux/rcupdate.h as read at
//! gregkh/linux 10d525b98aaa, a 6.11.y stable; kernel/rcu/tree.c not re-read;
//! `kfree` is in mm/slub.c as read at torvalds/linux f6db358deaea,
//! slab-for-6.18-rc1; the semantics of brief §7.5, with the flavour
//! consolidation of around v4.20: see [`RcuFlavor`]).
//!
//! Readers announce themselves in a per-reader word; `synchronize_rcu` waits
//! for every reader that was inside a read-side section when it started.
//! Entry and exit are read-modify-writes of the reader's own word (acquire,
//! release), and the grace period reads each word with a read-modify-write
//! too, so the two are ordered on the word: a grace period that reads it
//! before the entry synchronises with the reader (the section sees every
//! store before the grace period), one that reads it after waits for the
//! exit, whose release orders the section before the grace period's end.
//! A grace period that has to wait sleeps: it registers in the high bits
//! of the reader's word with a cmpxchg, and the reader's exit RMW, which
//! returns that count, wakes it (a spinning wait gave loom a branch point
//! per spin). Ordering on the word is the LKMM RCU guarantee without a
//! fence in the reader: the kernel's rcu_read_lock is no barrier, and an SC
//! fence there (loom orders all SC fences totally) would hide every
//! weak-memory outcome a reader can see of a writer that also fences
//! (`smp_mb`, spinlocks, another reader).
//!
//! Since the flavour consolidation the flavours are one: a region with
//! preemption disabled, IRQs
//! disabled or a spinlock held (which disables preemption) is a read-side
//! critical section too, and `synchronize_rcu` waits for it. Every task
//! announces such regions on its own RCU-sched word (`kernel::task`), and a
//! grace period waits on the word of every task of the execution exactly as
//! on a reader slot. [`RcuFlavor::PreV420`] is the older kernel, whose
//! `synchronize_rcu` did not wait for them (that took `synchronize_sched`).
//!
//! Callbacks queued by `call_rcu` run on the domain's grace-period kthread
//! during the execution, after a grace period that started after they were
//! queued. The kthread starts at the domain's first `call_rcu` (the trace
//! gains its `rcu_gp` column there), so a scenario that queues nothing pays
//! loom nothing for it, and every scenario that queues a free lets the grace
//! period and the free run during the race. [`Rcu::quiesce`] stops it at the
//! end of the execution and runs whatever is still pending.
//!
//! Objects live in a [`Slab`]: `kfree` (or a `call_rcu` callback after a
//! grace period) marks an object freed, and **any later access is a
//! use-after-free violation** naming the object, who freed it and who touched
//! it. A `SLAB_TYPESAFE_BY_RCU` cache instead recycles freed memory at once
//! for a new object of the same type: that is a distinct, legal event, and the
//! reader must re-validate identity after taking a reference. Its memory is
//! not type-stable forever: a cache made with [`Slab::typesafe_by_rcu_in`]
//! returns a freed object's slab page to the page allocator after a grace
//! period (`free_slab` → `call_rcu`), so an access after the reader's
//! `rcu_read_unlock`, without a reference, is a use-after-free once that grace
//! period has passed.

use std::sync::atomic::AtomicU64 as GhostU64;
use std::sync::{Arc, Mutex as GhostMutex};

use crate::exec;
use crate::kernel::task::Task;
use crate::sync::{self, Ordering};
use crate::trace::{intern, Context, Effect, Name, Show, Val};

/// Reader slots per RCU domain, one per trace column: as many as the tasks
/// one execution may create (`exec`'s bound).
const MAX_READERS: usize = 12;

type Callback = Box<dyn FnOnce(&Task) + Send>;

/// The life of a domain's grace-period kthread (ghost).
enum Kthread {
    /// No `call_rcu` yet: no thread, so an idle domain adds no branch point.
    NotStarted,
    /// The first `call_rcu` is spawning it.
    Starting,
    Running(sync::JoinHandle<()>),
    /// [`Rcu::quiesce`] stopped it (or it never started): callbacks queued
    /// from now on run in [`Rcu::rcu_barrier`].
    Stopped,
}

/// Which kernel's grace period: before or after the RCU flavour
/// consolidation.
///
/// When that was is known only as precisely as this: the consolidation
/// commits date from mid-2018 (45975c7d21a1 "rcu: Define RCU-sched API in
/// terms of RCU for Tree RCU PREEMPT builds", authored 2 Jul 2018, named
/// by the Fixes: tags of the 2019 cpufreq shutdown fix; the documentation
/// commit 77095901b895 "doc: Update removal of RCU-bh/sched update
/// machinery" was committed 30 Aug 2018), and
/// Documentation/RCU/rcubarrier.rst says "the RCU flavor consolidation
/// around v4.20" (context lines of the Feb 2025 patch "rcu: Remove
/// references to old grace-period-wait primitives"). include/linux/rcupdate.h
/// (gregkh/linux 10d525b98aaa, 6.11.y) promises the wait only "in v5.0
/// and later kernels" and calls pre-v5.0 kernels those "which define
/// synchronize_sched()": its boundary is the removal of the old API (the
/// 2021 draft said "if your kernel is old enough for synchronize_sched() to
/// be defined"), and the Feb 2025 patch drops the version altogether. The
/// merge that first brought 45975c7d21a1 into a release was not read, so
/// "v4.20" in the names below is the documented approximate boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RcuFlavor {
    /// Consolidated RCU (around v4.20 on; rcupdate.h documents it from
    /// v5.0): a grace period also waits for regions with preemption or IRQs
    /// disabled.
    #[default]
    Kernel,
    /// Before the consolidation (before about v4.20): `synchronize_rcu`
    /// waits for rcu_read_lock readers only
    /// (and `rcu_read_lock_sched`, which the model keeps announcing as a
    /// reader); a preempt-disabled region needed `synchronize_sched`.
    PreV420,
}

struct Domain {
    flavor: RcuFlavor,
    /// Per reader, slot `i` for the task in trace column `i`: odd while
    /// inside a read-side section, bumped by 2 per section.
    readers: Vec<sync::AtomicU64>,
    /// The trace columns that claimed their slot (ghost: only a task
    /// itself adds its own column, so whether it did depends on its own
    /// history alone).
    names: GhostMutex<Vec<u8>>,
    /// Claims of reader slots, one bit per trace column, ordered against
    /// grace periods: a task's first section sets its bit with an RMW; a
    /// grace period RMWs the word and visits the slots whose bits it read.
    /// Either the grace period sees the claim (and orders itself on that
    /// slot) or the claimer's RMW reads the grace period's and sees
    /// everything before it. So a grace period touches only the slots in
    /// use, and which ones follows from the value it read.
    claims: sync::AtomicU64,
    /// Pending callbacks, each with its `queued` ticket.
    callbacks: GhostMutex<Vec<(u64, Callback)>>,
    /// Callbacks queued so far: call_rcu publishes with a release RMW and the
    /// GP kthread takes only the callbacks whose ticket its acquire load saw,
    /// so everything the caller did before call_rcu happens before the grace
    /// period that frees (the kernel's callback-list hand-off).
    queued: sync::AtomicU64,
    /// Tickets up to this one have been invoked by the GP kthread (stored
    /// under `wake_lock` after each batch, with a wake-up): what
    /// `rcu_barrier` waits for while the kthread runs.
    invoked: sync::AtomicU64,
    stop: sync::AtomicU64,
    kthread: GhostMutex<Kthread>,
    /// The GP kthread sleeps on `wake` (under `wake_lock`) while nothing is
    /// pending: a sleeping actor an engine may wake and run at any point,
    /// where a spinning one would only run once every other thread blocks.
    wake_lock: sync::Mutex,
    wake: sync::Condvar,
    /// Ghost: completed grace periods.
    gp_seq: GhostU64,
    /// Ghost: per task, how deep it is in this domain's SRCU read-side
    /// sections (SRCU nests per `srcu_struct`, not per task).
    srcu_depth: GhostMutex<Vec<(u8, u32)>>,
}

/// One RCU domain with its reader announcements and pending callbacks. A
/// handle: clones share the domain.
#[derive(Clone)]
pub struct Rcu(Arc<Domain>);

fn ghost<T>(m: &GhostMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for Rcu {
    fn default() -> Self {
        Self::new()
    }
}

impl Rcu {
    pub fn new() -> Rcu {
        Rcu::with_flavor(RcuFlavor::Kernel)
    }

    /// A domain with the grace period of `flavor`'s kernels.
    pub fn with_flavor(flavor: RcuFlavor) -> Rcu {
        Rcu(Arc::new(Domain {
            flavor,
            readers: (0..MAX_READERS).map(|_| sync::AtomicU64::new(0)).collect(),
            names: GhostMutex::new(Vec::new()),
            claims: sync::AtomicU64::new(0),
            callbacks: GhostMutex::new(Vec::new()),
            queued: sync::AtomicU64::new(0),
            invoked: sync::AtomicU64::new(0),
            stop: sync::AtomicU64::new(0),
            kthread: GhostMutex::new(Kthread::NotStarted),
            wake_lock: sync::Mutex::new(),
            wake: sync::Condvar::new(),
            gp_seq: GhostU64::new(0),
            srcu_depth: GhostMutex::new(Vec::new()),
        }))
    }

    /// The task's reader slot, claimed (see [`Domain::claims`]) on its first
    /// section.
    fn slot(&self, t: &Task) -> usize {
        let slot = usize::from(t.id());
        assert!(slot < MAX_READERS, "too many RCU readers in one scenario");
        {
            let mut names = ghost(&self.0.names);
            if names.contains(&t.id()) {
                return slot;
            }
            names.push(t.id());
        }
        self.0.claims.fetch_or(1 << slot, Ordering::AcqRel);
        slot
    }

    /// The outermost section's entry: the task's reader slot goes odd
    /// (an acquire RMW, ordered against the grace periods' RMWs of it).
    fn enter_slot(&self, t: &Task) {
        t.engine_op();
        let _s = exec::atomic_section();
        self.0.readers[self.slot(t)].fetch_add(1, Ordering::Acquire);
    }

    /// The outermost section's exit: the slot goes even again (a release
    /// RMW), and a grace period that registered as waiting is woken.
    fn leave_slot(&self, t: &Task) {
        t.engine_op();
        let old = {
            let _s = exec::atomic_section();
            self.0.readers[self.slot(t)].fetch_add(1, Ordering::Release)
        };
        if old >> WAITER_SHIFT != 0 {
            wake_grace_periods(&self.0.wake_lock, &self.0.wake);
        }
    }

    /// rcu_read_lock: enter a read-side critical section (nestable).
    pub fn rcu_read_lock(&self, t: &Task) {
        self.read_lock_as(t, "rcu_read_lock");
    }

    /// Enters a read-side section by the kernel function `func`.
    fn read_lock_as(&self, t: &Task, func: &'static str) {
        let depth = t.rcu_depth();
        t.set_rcu_depth(depth + 1);
        if depth == 0 {
            self.enter_slot(t);
        }
        t.step(Effect::RcuRead { func, lock: true });
    }

    /// rcu_read_unlock: leave the read-side critical section.
    pub fn rcu_read_unlock(&self, t: &Task) {
        self.read_unlock_as(t, "rcu_read_unlock");
    }

    /// Leaves a read-side section by the kernel function `func`.
    fn read_unlock_as(&self, t: &Task, func: &'static str) {
        let depth = t.rcu_depth();
        if depth == 0 {
            t.violation("rcu_balance", "rcu_read_unlock without rcu_read_lock");
        }
        t.set_rcu_depth(depth - 1);
        if depth == 1 {
            self.leave_slot(t);
        }
        t.step(Effect::RcuRead { func, lock: false });
    }

    /// srcu_read_lock on this domain as one `srcu_struct`: the reader slot
    /// of [`Rcu::rcu_read_lock`], nested per domain (so sections of two
    /// `srcu_struct`s may overlap without nesting, and an RCU section does
    /// not count as one). Returns the index `srcu_read_unlock` takes (0: the
    /// model has one reader slot per task, not the kernel's two).
    pub fn srcu_read_lock(&self, t: &Task) -> u64 {
        let depth = self.srcu_nesting(t, 1);
        if depth == 1 {
            self.enter_slot(t);
        }
        t.step(Effect::RcuRead {
            func: "srcu_read_lock",
            lock: true,
        });
        0
    }

    /// srcu_read_unlock: leave this domain's SRCU read-side section.
    pub fn srcu_read_unlock(&self, t: &Task) {
        if self.srcu_nesting(t, 0) == 0 {
            t.violation("rcu_balance", "srcu_read_unlock without srcu_read_lock");
        }
        let depth = self.srcu_nesting(t, -1);
        if depth == 0 {
            self.leave_slot(t);
        }
        t.step(Effect::RcuRead {
            func: "srcu_read_unlock",
            lock: false,
        });
    }

    /// synchronize_srcu: the grace period of this domain alone (its readers,
    /// never the tasks with preemption disabled, which SRCU does not wait
    /// for).
    pub fn synchronize_srcu(&self, t: &Task) {
        self.grace_period_of(t, "synchronize_srcu", false);
    }

    /// Adds `by` to the task's SRCU nesting in this domain; the new depth.
    fn srcu_nesting(&self, t: &Task, by: i32) -> u32 {
        let mut d = ghost(&self.0.srcu_depth);
        let i = match d.iter().position(|(id, _)| *id == t.id()) {
            Some(i) => i,
            None => {
                d.push((t.id(), 0));
                d.len() - 1
            }
        };
        d[i].1 = d[i].1.saturating_add_signed(by);
        d[i].1
    }

    /// rcu_read_lock_sched (= preempt_disable; waited for by synchronize_rcu).
    pub fn rcu_read_lock_sched(&self, t: &Task) {
        t.set_preempt_count(t.preempt_count() + 1);
        self.read_lock_as(t, "rcu_read_lock_sched");
    }

    /// rcu_read_unlock_sched.
    pub fn rcu_read_unlock_sched(&self, t: &Task) {
        self.read_unlock_as(t, "rcu_read_unlock_sched");
        t.set_preempt_count(t.preempt_count().saturating_sub(1));
    }

    /// Sleeps until reader slot `word` leaves the section it was in (odd
    /// count `v`) when the grace period read it; true if it had to. The
    /// grace period registers as a waiter in the slot's high bits with a
    /// cmpxchg that fails if the reader left (or another grace period
    /// registered) meanwhile; the reader's exit RMW returns the waiter
    /// count and, if it is not zero, wakes the sleepers.
    fn sleep_for_reader(
        word: &sync::AtomicU64,
        mut v: u64,
        lock: &sync::Mutex,
        cond: &sync::Condvar,
    ) -> bool {
        let count = v & READER_COUNT;
        if count & 1 == 0 {
            return false;
        }
        loop {
            match word.compare_exchange(v, v + WAITER, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) if now & READER_COUNT != count => return true,
                Err(now) => v = now,
            }
        }
        let mut wake = lock.lock();
        while word.load(Ordering::Acquire) & READER_COUNT == count {
            wake = cond.wait(wake);
        }
        drop(wake);
        word.fetch_sub(WAITER, Ordering::Relaxed);
        true
    }

    /// synchronize_rcu: wait until every reader that was inside a read-side
    /// section when this call started has left it — since the flavour
    /// consolidation ([`RcuFlavor`]) also every task that had preemption or
    /// IRQs disabled. May sleep.
    pub fn synchronize_rcu(&self, t: &Task) {
        self.grace_period(t, "synchronize_rcu");
    }

    /// One grace period waited for by the kernel function `func`
    /// (`synchronize_rcu`; `rcu_gp_kthread` and `rcu_barrier` wait for the
    /// callbacks' grace period the same way).
    fn grace_period(&self, t: &Task, func: &'static str) {
        self.grace_period_of(t, func, self.0.flavor == RcuFlavor::Kernel);
    }

    /// A grace period that waits for the domain's readers and, with
    /// `sched`, for every other task's RCU-sched word.
    fn grace_period_of(&self, t: &Task, func: &'static str, sched: bool) {
        t.might_sleep(func, None);
        t.engine_op();
        sync::fence(Ordering::SeqCst);
        let mut waited = 0u32;
        // The slots in use (a later claimer synchronises with this grace
        // period through `claims`), each with a read-modify-write that
        // changes nothing: ordered against the reader's entry and exit.
        let claimed = self.0.claims.fetch_or(0, Ordering::AcqRel);
        for (owner, r) in (0u8..).zip(&self.0.readers) {
            if claimed & (1 << owner) == 0 {
                continue;
            }
            let v = r.fetch_add(0, Ordering::AcqRel);
            if Self::sleep_for_reader(r, v, &self.0.wake_lock, &self.0.wake) {
                waited |= 1 << owner;
            }
        }
        if sched {
            // The same on every other task's RCU-sched word (`kernel::task`).
            let wake = exec::sched_rcu_wake();
            for (owner, word) in exec::sched_rcu_claimed() {
                if owner == t.id() {
                    continue;
                }
                let v = word.fetch_add(0, Ordering::AcqRel);
                if Self::sleep_for_reader(&word, v, &wake.0, &wake.1) {
                    waited |= 1 << owner;
                }
            }
        }
        sync::fence(Ordering::SeqCst);
        let gp = self.0.gp_seq.fetch_add(1, Ordering::SeqCst) + 1;
        t.step(Effect::GracePeriod { func, gp, waited });
    }

    /// call_rcu: run `callback` after a grace period, on the GP kthread
    /// (started by the domain's first call) or, once [`Rcu::quiesce`] stopped
    /// it, at the end of the execution. The trace shows `call_rcu(func(obj))`,
    /// or `call_rcu(obj)` when `func` is `None`.
    pub fn call_rcu(
        &self,
        t: &Task,
        func: Option<&'static str>,
        obj: Val,
        callback: impl FnOnce(&Task) + Send + 'static,
    ) {
        t.engine_op();
        let wake = self.0.wake_lock.lock();
        {
            let _s = exec::atomic_section();
            // The grace period that precedes the callback orders everything
            // the caller did before call_rcu (full barriers on every CPU in
            // the kernel); the fence plus the release ticket the GP kthread
            // acquires give the callback that edge.
            sync::fence(Ordering::SeqCst);
            let ticket = self.0.queued.fetch_add(1, Ordering::Release) + 1;
            ghost(&self.0.callbacks).push((ticket, Box::new(callback)));
            t.step(Effect::CallRcu { func, obj });
        }
        self.0.wake.notify_all();
        drop(wake);
        self.start_gp_kthread();
    }

    /// Spawns the GP kthread unless it was started (or stopped) already. The
    /// ghost lock is not held across the spawn: under std the new thread may
    /// run at once and take it.
    fn start_gp_kthread(&self) {
        {
            let mut k = ghost(&self.0.kthread);
            if !matches!(*k, Kthread::NotStarted) {
                return;
            }
            *k = Kthread::Starting;
        }
        let rcu = self.clone();
        let handle = exec::spawn("rcu_gp", move || {
            let t = Task::new("rcu_gp", Context::Kthread);
            rcu.gp_kthread(&t);
        });
        *ghost(&self.0.kthread) = Kthread::Running(handle);
    }

    fn run_callbacks(&self, t: &Task, batch: Vec<(u64, Callback)>) {
        for (_, cb) in batch {
            cb(t);
        }
    }

    /// The callbacks whose call_rcu this thread has synchronised with, and
    /// the last ticket it saw.
    fn take_batch(&self) -> (u64, Vec<(u64, Callback)>) {
        let upto = self.0.queued.load(Ordering::Acquire);
        let mut pending = ghost(&self.0.callbacks);
        let (batch, later) = std::mem::take(&mut *pending)
            .into_iter()
            .partition(|(n, _)| *n <= upto);
        *pending = later;
        (upto, batch)
    }

    /// kernel/rcu/tree.c:rcu_gp_kthread with rcu_do_batch folded in (names only:
    /// tree.c not re-read, the semantics of brief §7.5): whenever
    /// callbacks are pending, wait a grace period and run the callbacks
    /// queued before it started; sleep while nothing is pending. Returns once
    /// [`Rcu::quiesce`] stopped it and nothing is pending.
    fn gp_kthread(&self, t: &Task) {
        let _f = t.enter("rcu_gp_kthread");
        loop {
            let (upto, batch) = self.take_batch();
            if !batch.is_empty() {
                self.grace_period(t, "rcu_gp_kthread");
                self.run_callbacks(t, batch);
                self.store_and_wake(&self.0.invoked, upto);
                continue;
            }
            let mut wake = self.0.wake_lock.lock();
            loop {
                if !ghost(&self.0.callbacks).is_empty() {
                    break;
                }
                if self.0.stop.load(Ordering::Acquire) == 1 {
                    return;
                }
                wake = self.0.wake.wait(wake);
            }
        }
    }

    /// Stores `v` (release) to `word` under `wake_lock` and wakes every
    /// sleeper of the domain: the kthread's `stop`, its `invoked` ticket.
    fn store_and_wake(&self, word: &sync::AtomicU64, v: u64) {
        let wake = self.0.wake_lock.lock();
        word.store(v, Ordering::Release);
        self.0.wake.notify_all();
        drop(wake);
    }

    /// The end of an execution, on `t` after every other thread of the
    /// domain was joined: stops the GP kthread once nothing is pending, joins
    /// it, and runs what callbacks queued meanwhile (by callbacks) left.
    pub fn quiesce(&self, t: &Task) {
        let kthread = std::mem::replace(&mut *ghost(&self.0.kthread), Kthread::Stopped);
        match kthread {
            Kthread::Running(handle) => {
                self.store_and_wake(&self.0.stop, 1);
                handle.join();
            }
            Kthread::Starting => panic!("Rcu::quiesce while a call_rcu is still running"),
            Kthread::NotStarted | Kthread::Stopped => {}
        }
        while !ghost(&self.0.callbacks).is_empty() {
            self.rcu_barrier(t);
        }
    }

    /// kernel/rcu/tree.c:rcu_barrier (name only: no version of tree.c was
    /// read; the contract of Documentation/RCU/rcubarrier.rst as
    /// ../shared/kernel/open-path-brief.md, written for v6.12, gives it):
    /// returns once every callback queued before the call has been invoked.
    /// Until [`Rcu::quiesce`] stopped the GP kthread, the kthread invokes
    /// them and this waits for its ticket (as deactivate_locked_super waits
    /// during an unmount; every call_rcu starts the kthread if none has, so
    /// a ticket read has one coming). Once it stopped, this runs a grace
    /// period and the callbacks itself.
    ///
    /// Which of the two it does follows from the ticket this thread read and
    /// from `Stopped`, which only the thread that joined every other sets:
    /// never from whether another thread's call_rcu has started the kthread
    /// yet. No engine read orders that ghost state, so the optimal engine
    /// could keep this thread's wait and revisit away the call that started
    /// the kthread, and the replay would take the other branch.
    pub fn rcu_barrier(&self, t: &Task) {
        if matches!(*ghost(&self.0.kthread), Kthread::Stopped) {
            let (_, batch) = self.take_batch();
            if !batch.is_empty() {
                self.grace_period(t, "rcu_barrier");
                self.run_callbacks(t, batch);
            }
            return;
        }
        let upto = self.0.queued.load(Ordering::Acquire);
        if upto == 0 {
            return;
        }
        let mut wake = self.0.wake_lock.lock();
        while self.0.invoked.load(Ordering::Acquire) < upto {
            wake = self.0.wake.wait(wake);
        }
        drop(wake);
    }
}

/// A reader leaving a section wakes the grace periods sleeping on it.
pub(crate) fn wake_grace_periods(lock: &sync::Mutex, cond: &sync::Condvar) {
    let wake = lock.lock();
    cond.notify_all();
    drop(wake);
}

/// A reader slot: the section count in the low bits (odd: inside), the
/// number of grace periods sleeping on it above [`WAITER_SHIFT`].
pub(crate) const WAITER_SHIFT: u32 = 32;
const WAITER: u64 = 1 << WAITER_SHIFT;
const READER_COUNT: u64 = WAITER - 1;

/// A reference to a slab object: index + 1 (0 is NULL), as stored in atomics.
pub type ObjRef = u64;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Life {
    Live {
        gen: u32,
    },
    Freed {
        gen: u32,
        by: Name,
        func: &'static str,
        /// A typesafe object whose slab page went back to the page
        /// allocator after a grace period: no longer type-stable.
        returned: bool,
    },
}

struct SlabState<T> {
    objects: Vec<(Arc<T>, Life)>,
    /// Freed objects of a typesafe cache, most recent last (SLUB is LIFO).
    recyclable: Vec<usize>,
    /// Per object whose memory can go away (every object of a cache that is
    /// not typesafe, and of a typesafe one that returns its pages): a word of
    /// the object's memory that the free (or the page's return) writes and
    /// every access reads, so the engines order each access against the free.
    /// The ghost `Life` alone is invisible to their reductions: an access
    /// with no engine operation on the object has no race with the free for
    /// DPOR to reorder, and a use-after-free could hold.
    words: Vec<Arc<sync::AtomicU64>>,
}

/// A kmem_cache of objects of one type.
pub struct Slab<T> {
    name: Name,
    /// The kernel functions that allocate and free its objects.
    alloc_fn: &'static str,
    free_fn: &'static str,
    typesafe_by_rcu: bool,
    /// The domain whose grace period returns a typesafe cache's freed
    /// memory to the page allocator; none: the page is never returned.
    returns_via: Option<Rcu>,
    state: Arc<GhostMutex<SlabState<T>>>,
}

/// The life of a slab object as observers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjState {
    Live { gen: u32 },
    Freed { gen: u32 },
}

impl<T> Slab<T> {
    /// A cache whose freed objects are never reused (kfree returns memory).
    pub fn new(name: impl AsRef<str>) -> Slab<T> {
        Slab {
            name: intern(name.as_ref()),
            alloc_fn: "kmem_cache_alloc",
            free_fn: "kmem_cache_free",
            typesafe_by_rcu: false,
            returns_via: None,
            state: Arc::new(GhostMutex::new(SlabState {
                objects: Vec::new(),
                recyclable: Vec::new(),
                words: Vec::new(),
            })),
        }
    }

    /// A SLAB_TYPESAFE_BY_RCU cache whose slab page is never returned (it
    /// stays type-stable for the whole execution): freed memory is reused at
    /// once for a new object of the same type, and every access of it is
    /// legal. Weaker than the kernel, where an emptied page goes back after a
    /// grace period: prefer [`Slab::typesafe_by_rcu_in`].
    pub fn typesafe_by_rcu(name: impl AsRef<str>) -> Slab<T> {
        Slab {
            typesafe_by_rcu: true,
            ..Slab::new(name)
        }
    }

    /// A SLAB_TYPESAFE_BY_RCU cache whose freed objects' memory goes back to
    /// the page allocator after a grace period of `rcu` unless it was
    /// recycled first (mm/slub.c: `free_slab` defers `__free_slab` with
    /// `call_rcu` for such caches; the model gives each object a page of its
    /// own, so every free empties one). Until then the memory is type-stable;
    /// after it, any access is a use-after-free.
    pub fn typesafe_by_rcu_in(name: impl AsRef<str>, rcu: &Rcu) -> Slab<T> {
        Slab {
            typesafe_by_rcu: true,
            returns_via: Some(rcu.clone()),
            ..Slab::new(name)
        }
    }

    /// The same cache with objects allocated by `alloc_fn` and freed by
    /// `free_fn` (`kmalloc`/`kfree` where the kernel uses no cache of its
    /// own), as the trace names them.
    pub fn allocated_by(self, alloc_fn: &'static str, free_fn: &'static str) -> Slab<T> {
        Slab {
            alloc_fn,
            free_fn,
            ..self
        }
    }

    /// Whether an object's memory can go away, so that accesses and frees
    /// go through its word.
    fn tracked(&self) -> bool {
        !self.typesafe_by_rcu || self.returns_via.is_some()
    }

    /// A new object, live, with its word if it has one.
    fn push_object(&self, st: &mut SlabState<T>, obj: T) {
        st.objects.push((Arc::new(obj), Life::Live { gen: 1 }));
        if self.tracked() {
            st.words.push(Arc::new(sync::AtomicU64::new(0)));
        }
    }

    /// "file#2": how traces name an object.
    pub fn label(&self, obj: ObjRef) -> String {
        if obj == 0 {
            "NULL".to_string()
        } else {
            format!("{}#{obj}", self.name)
        }
    }

    /// Allocates an object: a recycled one in a typesafe cache (reinitialised
    /// in place by `reinit`, as the constructor would), else a fresh one.
    pub fn alloc(&self, t: &Task, fresh: impl FnOnce() -> T, reinit: impl FnOnce(&T)) -> ObjRef {
        let mut st = ghost(&*self.state);
        if let Some(i) = st.recyclable.pop() {
            let gen = match st.objects[i].1 {
                Life::Freed { gen, .. } => gen + 1,
                Life::Live { gen } => gen,
            };
            st.objects[i].1 = Life::Live { gen };
            let obj = st.objects[i].0.clone();
            drop(st);
            reinit(&obj);
            let r = i as u64 + 1;
            t.step(Effect::Alloc {
                func: self.alloc_fn,
                cache: self.name,
                obj: r,
                recycled_gen: Some(gen),
            });
            return r;
        }
        self.push_object(&mut st, fresh());
        let r = st.objects.len() as u64;
        drop(st);
        t.step(Effect::Alloc {
            func: self.alloc_fn,
            cache: self.name,
            obj: r,
            recycled_gen: None,
        });
        r
    }

    /// Allocates a fresh object built from its own object number (a
    /// dentry's hash-chain bit), the number chosen under the cache's lock so
    /// that concurrent allocations never share one.
    pub fn alloc_numbered(&self, t: &Task, fresh: impl FnOnce(ObjRef) -> T) -> ObjRef {
        let mut st = ghost(&*self.state);
        let r = st.objects.len() as u64 + 1;
        self.push_object(&mut st, fresh(r));
        drop(st);
        t.step(Effect::Alloc {
            func: self.alloc_fn,
            cache: self.name,
            obj: r,
            recycled_gen: None,
        });
        r
    }

    /// Scenario set-up: an object that already exists when the execution
    /// starts (allocated before any thread runs, so no step is recorded).
    pub fn prealloc(&self, obj: T) -> ObjRef {
        let mut st = ghost(&*self.state);
        self.push_object(&mut st, obj);
        st.objects.len() as u64
    }

    /// Accesses an object: a use-after-free violation if it was freed (for a
    /// typesafe cache: once its memory went back to the page allocator).
    pub fn get(&self, t: &Task, obj: ObjRef) -> Arc<T> {
        if obj == 0 {
            t.violation(
                "null_deref",
                format!("NULL {} pointer dereferenced", self.name),
            );
        }
        let word = self
            .tracked()
            .then(|| ghost(&*self.state).words[(obj - 1) as usize].clone());
        let _s = touch(t, word.as_deref(), |w| {
            w.load(Ordering::Relaxed);
        });
        let st = ghost(&*self.state);
        let (o, life) = &st.objects[(obj - 1) as usize];
        if let Life::Freed {
            by, func, returned, ..
        } = *life
        {
            if !self.typesafe_by_rcu || returned {
                drop(st);
                let how = if returned {
                    ", its memory returned to the page allocator after a grace period"
                } else {
                    ""
                };
                t.violation(
                    "use_after_free",
                    format!(
                        "{} freed by {by} in {func}{how}, then accessed",
                        self.label(obj)
                    ),
                );
            }
        }
        o.clone()
    }

    /// The object's state (ghost, for observers).
    pub fn state(&self, obj: ObjRef) -> ObjState {
        match ghost(&*self.state).objects[(obj - 1) as usize].1 {
            Life::Live { gen } => ObjState::Live { gen },
            Life::Freed { gen, .. } => ObjState::Freed { gen },
        }
    }

    /// The object's memory without any check (observers only).
    pub fn peek(&self, obj: ObjRef) -> Arc<T> {
        ghost(&*self.state).objects[(obj - 1) as usize].0.clone()
    }

    /// Objects allocated so far (observers).
    pub fn count(&self) -> usize {
        ghost(&*self.state).objects.len()
    }

    /// Calls `f` on every object allocated so far, with its state
    /// (observers; `f` must not touch this cache).
    pub fn each(&self, mut f: impl FnMut(ObjRef, ObjState, &T)) {
        let st = ghost(&*self.state);
        for (i, (obj, life)) in st.objects.iter().enumerate() {
            let state = match *life {
                Life::Live { gen } => ObjState::Live { gen },
                Life::Freed { gen, .. } => ObjState::Freed { gen },
            };
            f(i as u64 + 1, state, obj);
        }
    }
}

impl<T: Send + Sync + 'static> Slab<T> {
    /// kfree / kmem_cache_free, called from `func` (the trace's witness of
    /// who freed the object, should anyone touch it later).
    pub fn free(&self, t: &Task, obj: ObjRef, func: &'static str) {
        let i = (obj - 1) as usize;
        // kfree's write to the object's memory (SLUB stores the freelist
        // pointer in it); a typesafe cache's memory stays valid until
        // return_page writes it.
        let word = (!self.typesafe_by_rcu).then(|| ghost(&*self.state).words[i].clone());
        let _s = touch(t, word.as_deref(), |w| w.store(1, Ordering::Relaxed));
        let mut st = ghost(&*self.state);
        let gen = match st.objects[i].1 {
            Life::Live { gen } => gen,
            Life::Freed { .. } => {
                drop(st);
                t.violation("double_free", format!("{} freed twice", self.label(obj)));
            }
        };
        st.objects[i].1 = Life::Freed {
            gen,
            by: t.name(),
            func,
            returned: false,
        };
        if self.typesafe_by_rcu {
            st.recyclable.push(i);
        }
        drop(st);
        t.step(Effect::Free {
            func: self.free_fn,
            cache: self.name,
            obj,
        });
        drop(_s);
        if let Some(rcu) = &self.returns_via {
            let state = self.state.clone();
            rcu.call_rcu(
                t,
                Some("rcu_free_slab"),
                Val::with(obj, Show::Dec),
                move |t| return_page(t, &state, i, gen),
            );
        }
    }
}

/// An access of an object's memory through its word (`None`: memory that
/// cannot go away, no engine operation): the task's interrupt/preemption
/// point, then `op` on the word, inside the atomic section it returns, which
/// the caller's ghost check and step share.
fn touch(
    t: &Task,
    word: Option<&sync::AtomicU64>,
    op: impl FnOnce(&sync::AtomicU64),
) -> exec::Section {
    if word.is_some() {
        t.engine_op();
    }
    let s = exec::atomic_section();
    if let Some(w) = word {
        op(w);
    }
    s
}

/// mm/slub.c:rcu_free_slab → __free_slab (v6.18), for the page of object
/// `i` freed at generation `gen`: unless the memory was recycled since, it
/// leaves the cache, and no later allocation reuses it.
fn return_page<T>(t: &Task, state: &GhostMutex<SlabState<T>>, i: usize, gen: u32) {
    // The store is an engine operation, a switch point: it comes before the
    // ghost lock is taken (another thread switched to must be able to take
    // it), and the recycle check after it re-reads the ghost state.
    let word = ghost(state).words[i].clone();
    let _s = touch(t, Some(&word), |w| w.store(1, Ordering::Relaxed));
    let mut st = ghost(state);
    if let Life::Freed {
        gen: g,
        ref mut returned,
        ..
    } = st.objects[i].1
    {
        if g == gen {
            *returned = true;
            st.recyclable.retain(|&r| r != i);
            drop(st);
            t.tracepoint("slab-page-returned");
        }
    }
}
