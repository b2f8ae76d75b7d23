//! spinlock_t and the data it guards (include/linux/spinlock.h as read at
//! torvalds/linux bd3c97a7c718, a v2.6-era copy; merge not identified).
//!
//! `spin_lock` is ACQUIRE and `spin_unlock` RELEASE: critical sections of one
//! lock are totally ordered and each unlock→lock is a happens-before edge
//! (an engine mutex gives exactly that). Holding a spinlock is atomic context:
//! the holder's [`Task`] records it so `might_sleep` and lockdep can object.
//!
//! Data guarded by a lock is a [`Locked<T>`]: plain memory, reachable only
//! through a guard of *its* lock (lockdep_assert_held as a type), and
//! observable by specs with [`Locked::peek`] without an engine operation.
//!
//! Every lock belongs to a lock class (by default its own name, as for a
//! statically allocated lock; `d_lock` of every dentry shares one class), and
//! every acquisition goes through lockdep's order check (`kernel::task`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex as GhostMutex;

use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::sync;
use crate::trace::{intern, Effect, LockOp, Name};

static NEXT_LOCK_ID: AtomicUsize = AtomicUsize::new(1);

/// A fresh lock instance number (lockdep tells instances of a class apart).
pub(crate) fn next_lock_id() -> usize {
    NEXT_LOCK_ID.fetch_add(1, Ordering::Relaxed)
}

/// A kernel spinlock (non-sleeping, disables preemption while held).
pub struct SpinLock {
    name: Name,
    class: Name,
    id: usize,
    raw: sync::Mutex,
    held: AtomicBool,
}

/// Proof that a [`SpinLock`] is held by `task`; unlocks on drop.
pub struct SpinGuard<'a> {
    lock: &'a SpinLock,
    task: &'a Task,
    irqsave: bool,
    _raw: sync::MutexGuard<'a>,
}

impl SpinLock {
    /// A lock that is its own lock class (a statically allocated lock).
    pub fn new(name: impl AsRef<str>) -> SpinLock {
        let name = intern(name.as_ref());
        SpinLock::with_class(name, name)
    }

    /// Instance `name` of lock class `class` (e.g. one dentry's `d_lock`).
    pub fn with_class(name: impl AsRef<str>, class: Name) -> SpinLock {
        SpinLock {
            name: intern(name.as_ref()),
            class,
            id: next_lock_id(),
            raw: sync::Mutex::new(),
            held: AtomicBool::new(false),
        }
    }

    pub fn name(&self) -> Name {
        self.name
    }

    /// Whether some task holds the lock (ghost, for observers).
    pub fn is_locked(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// spin_lock: acquire, entering atomic context.
    pub fn spin_lock<'a>(&'a self, t: &'a Task) -> SpinGuard<'a> {
        self.lock_as(t, 0, LockOp::SpinLock)
    }

    /// spin_lock_nested: acquire a lock of a class the caller may already
    /// hold, nested as `subclass` (e.g. DENTRY_D_LOCK_NESTED for a child's
    /// d_lock under its parent's).
    pub fn spin_lock_nested<'a>(&'a self, t: &'a Task, subclass: u8) -> SpinGuard<'a> {
        self.lock_as(t, subclass, LockOp::SpinLockNested { subclass })
    }

    /// Acquires as lockdep subclass `subclass`, shown as `op`.
    fn lock_as<'a>(&'a self, t: &'a Task, subclass: u8, op: LockOp) -> SpinGuard<'a> {
        t.lockdep_acquire(self.class, subclass, self.name);
        t.engine_op();
        let raw = self.raw.lock();
        self.acquired(t, raw, op, subclass)
    }

    /// spin_lock_irqsave: acquire with local interrupts disabled.
    pub fn spin_lock_irqsave<'a>(&'a self, t: &'a Task) -> SpinGuard<'a> {
        t.engine_op();
        t.set_irqs_off(t.irqs_off_depth() + 1);
        t.cost(Counter::IrqToggle, 1);
        t.lockdep_acquire(self.class, 0, self.name);
        let raw = self.raw.lock();
        self.acquired(t, raw, LockOp::SpinLockIrqsave, 0)
    }

    /// spin_trylock: acquire if free, never spin (and never deadlock, so
    /// lockdep orders nothing by it).
    pub fn spin_trylock<'a>(&'a self, t: &'a Task) -> Option<SpinGuard<'a>> {
        t.engine_op();
        match self.raw.try_lock() {
            Some(raw) => Some(self.acquired(t, raw, LockOp::SpinTrylock, 0)),
            None => {
                t.step(self.effect(LockOp::SpinTrylockBusy));
                None
            }
        }
    }

    fn effect(&self, op: LockOp) -> Effect {
        Effect::Lock {
            op,
            class: self.class,
            lock: self.name,
        }
    }

    /// spin_is_locked: whether some CPU holds the lock, as seen by a caller
    /// that does not take it. An engine `try_lock` that is released at once:
    /// an engine operation (so a scheduling point), but one that synchronises
    /// with the last unlock and sees the lock state sequentially
    /// consistently, which is stronger than the kernel's plain load of the
    /// lock word.
    pub fn spin_is_locked(&self, t: &Task) -> bool {
        t.engine_op();
        let locked = self.raw.try_lock().is_none();
        t.step(Effect::LockTest {
            lock: self.name,
            locked,
        });
        locked
    }

    fn acquired<'a>(
        &'a self,
        t: &'a Task,
        raw: sync::MutexGuard<'a>,
        op: LockOp,
        subclass: u8,
    ) -> SpinGuard<'a> {
        self.held.store(true, Ordering::SeqCst);
        t.set_preempt_count(t.preempt_count() + 1);
        t.took_lock(Counter::LockAcquire, self.class);
        t.step(self.effect(op));
        t.push_held(self.class, subclass, self.name, self.id);
        SpinGuard {
            lock: self,
            task: t,
            irqsave: op == LockOp::SpinLockIrqsave,
            _raw: raw,
        }
    }
}

impl<'a> SpinGuard<'a> {
    /// spin_unlock (or spin_unlock_irqrestore): same as dropping the guard,
    /// spelled out where the kernel code unlocks explicitly.
    pub fn unlock(self) {}

    pub fn task(&self) -> &'a Task {
        self.task
    }

    fn is_of(&self, id: usize) -> bool {
        self.lock.id == id
    }
}

impl Drop for SpinGuard<'_> {
    fn drop(&mut self) {
        let t = self.task;
        if !std::thread::panicking() {
            t.engine_op();
        }
        t.pop_held(self.lock.id);
        // Released before the step is recorded, so the invariants checked
        // after the unlock step see the lock free (state a lock protects is
        // judged at its release).
        self.lock.held.store(false, Ordering::SeqCst);
        if !std::thread::panicking() {
            let op = if self.irqsave {
                LockOp::SpinUnlockIrqrestore
            } else {
                LockOp::SpinUnlock
            };
            t.step(self.lock.effect(op));
        }
        t.set_preempt_count(t.preempt_count().saturating_sub(1));
        if self.irqsave {
            t.set_irqs_off(t.irqs_off_depth().saturating_sub(1));
        }
        // `_raw` drops after this body: the engine sees the release last.
    }
}

/// Data guarded by one spinlock.
pub struct Locked<T> {
    lock_id: usize,
    lock_name: Name,
    data: GhostMutex<T>,
}

impl<T> Locked<T> {
    /// Data that only `lock`'s holder may touch.
    pub fn new(lock: &SpinLock, data: T) -> Locked<T> {
        Locked {
            lock_id: lock.id,
            lock_name: lock.name,
            data: GhostMutex::new(data),
        }
    }

    fn check(&self, g: &SpinGuard<'_>) {
        if !g.is_of(self.lock_id) {
            g.task.violation(
                "lockdep",
                format!(
                    "data guarded by {} accessed holding {}",
                    self.lock_name, g.lock.name
                ),
            );
        }
    }

    fn data(&self) -> std::sync::MutexGuard<'_, T> {
        if sync::backend() == sync::Backend::Std {
            return self.data.lock().unwrap_or_else(|p| p.into_inner());
        }
        // Coroutines only switch at engine operations, so under loom and
        // shuttle a busy cell means a step was recorded from inside one of
        // the closures below: a model bug, not contention.
        match self.data.try_lock() {
            Ok(d) => d,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => panic!(
                "data guarded by {} observed while borrowed: record steps after `update`, \
                 or use `apply`",
                self.lock_name
            ),
        }
    }

    /// Reads the guarded data (lockdep_assert_held). `f` records no step.
    pub fn get<R>(&self, g: &SpinGuard<'_>, f: impl FnOnce(&T) -> R) -> R {
        self.check(g);
        f(&self.data())
    }

    /// Updates the guarded data (lockdep_assert_held). `f` records no step.
    pub fn update<R>(&self, g: &SpinGuard<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        self.check(g);
        f(&mut self.data())
    }

    /// Updates the guarded data, then records the effect `f` describes as one
    /// step (so invariants observe the updated state).
    pub fn apply(&self, g: &SpinGuard<'_>, f: impl FnOnce(&mut T) -> Effect) {
        let effect = self.update(g, f);
        g.task.step(effect);
    }

    /// Observes the data without the lock: for specs only.
    pub fn peek<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.data())
    }

    /// Initialises or inspects the data where no other thread can exist yet
    /// (scenario set-up, final checks after every thread joined).
    pub fn exclusive<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.data())
    }
}
