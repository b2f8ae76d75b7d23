//! Sleeping locks and wait queues (kernel/locking/mutex.c, rwsem.c,
//! include/linux/wait.h: not re-read; `might_sleep` is
//! kernel/sched/core.c:__might_sleep as read at torvalds/linux 4353dd3b7078,
//! a v5.x copy).
//!
//! Every acquisition first calls `might_sleep`: blocking inside an RCU
//! read-side section, under a spinlock, with IRQs off, in interrupt context or
//! in a walk marked non-blocking is a violation. Acquire is ACQUIRE and
//! release is RELEASE, as for spinlocks.

use super::atomic::Atomic;
use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::sync;
use crate::trace::{intern, Effect, LockOp, Name};

/// struct mutex.
pub struct Mutex {
    name: Name,
    raw: sync::Mutex,
}

/// A held [`Mutex`]; unlocks on drop.
pub struct MutexGuard<'a> {
    name: Name,
    task: &'a Task,
    _raw: sync::MutexGuard<'a>,
}

fn lock_effect(op: LockOp, name: Name) -> Effect {
    Effect::Lock {
        op,
        class: name,
        lock: name,
    }
}

impl Mutex {
    pub fn new(name: impl AsRef<str>) -> Mutex {
        Mutex {
            name: intern(name.as_ref()),
            raw: sync::Mutex::new(),
        }
    }

    /// mutex_lock: may sleep.
    pub fn mutex_lock<'a>(&'a self, t: &'a Task) -> MutexGuard<'a> {
        t.might_sleep("mutex_lock", Some(self.name));
        let raw = self.raw.lock();
        t.took_lock(Counter::SleepingLock, self.name);
        t.step(lock_effect(LockOp::MutexLock, self.name));
        MutexGuard {
            name: self.name,
            task: t,
            _raw: raw,
        }
    }
}

impl MutexGuard<'_> {
    /// mutex_unlock (same as dropping the guard).
    pub fn mutex_unlock(self) {}
}

impl Drop for MutexGuard<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.task.step(lock_effect(LockOp::MutexUnlock, self.name));
        }
    }
}

/// struct rw_semaphore (`inode->i_rwsem`): readers share, a writer excludes
/// everyone. Writers serialise on an engine mutex and wait for readers to
/// drain; readers pass through the same mutex, so a waiting writer holds new
/// readers off.
pub struct RwSemaphore {
    name: Name,
    writer: sync::Mutex,
    readers: Atomic,
    /// Ghost: a writer holds it (for checks that a section runs under the
    /// exclusive lock).
    exclusive: std::sync::atomic::AtomicBool,
}

/// A held [`RwSemaphore`], shared or exclusive; released on drop.
pub struct RwGuard<'a> {
    sem: &'a RwSemaphore,
    task: &'a Task,
    writer: Option<sync::MutexGuard<'a>>,
}

impl RwSemaphore {
    pub fn new(name: impl AsRef<str>) -> RwSemaphore {
        let name = intern(name.as_ref());
        RwSemaphore {
            readers: Atomic::new(format!("{name}.readers"), 0),
            writer: sync::Mutex::new(),
            exclusive: std::sync::atomic::AtomicBool::new(false),
            name,
        }
    }

    /// Whether a writer holds the semaphore (ghost; the caller asks about
    /// its own hold).
    pub fn held_exclusive(&self) -> bool {
        self.exclusive.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// down_read (inode_lock_shared): may sleep.
    pub fn down_read<'a>(&'a self, t: &'a Task) -> RwGuard<'a> {
        t.might_sleep("down_read", Some(self.name));
        let w = self.writer.lock();
        self.readers.atomic_add_return(t, 1);
        drop(w);
        t.took_lock(Counter::SleepingLock, self.name);
        RwGuard {
            sem: self,
            task: t,
            writer: None,
        }
    }

    /// down_write (inode_lock): may sleep.
    pub fn down_write<'a>(&'a self, t: &'a Task) -> RwGuard<'a> {
        t.might_sleep("down_write", Some(self.name));
        let w = self.writer.lock();
        while self.readers.atomic_read_acquire(t) != 0 {
            sync::yield_now();
        }
        t.took_lock(Counter::SleepingLock, self.name);
        t.step(lock_effect(LockOp::DownWrite, self.name));
        self.exclusive
            .store(true, std::sync::atomic::Ordering::SeqCst);
        RwGuard {
            sem: self,
            task: t,
            writer: Some(w),
        }
    }
}

impl RwGuard<'_> {
    /// up_read / up_write (same as dropping the guard).
    pub fn up(self) {}
}

impl Drop for RwGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if self.writer.is_some() {
            // Cleared while the writer still holds the lock: under real
            // threads the next writer may set it the moment it is released.
            self.sem
                .exclusive
                .store(false, std::sync::atomic::Ordering::SeqCst);
            self.writer = None;
            self.task.step(lock_effect(LockOp::UpWrite, self.sem.name));
        } else {
            self.sem.readers.atomic_sub_return(self.task, 1);
        }
    }
}

/// wait_event(wq, condition): sleep until `condition` holds. The condition
/// is re-checked after every wake-up, so a wake_up_all issued after the
/// condition became true is never lost.
pub fn wait_event(t: &Task, what: Name, mut condition: impl FnMut() -> bool) {
    t.might_sleep("wait_event", Some(what));
    while !condition() {
        sync::yield_now();
    }
}
