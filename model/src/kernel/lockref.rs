//! struct lockref: a spinlock and a count in one 64-bit word (lib/lockref.c
//! as read in the copy id 181051326, a CMPXCHG_LOOP version of 2018–2023 of
//! unknown repository; include/linux/lockref.h; the callers in fs/dcache.c
//! vfs-7.3-rc5.fixes).
//!
//! The lockless path (CMPXCHG_LOOP) reads the word and, while the embedded
//! lock is observed *unlocked*, tries a relaxed 64-bit cmpxchg of the whole
//! word; once it gives up it falls back to the lock (`lockref_put_return`
//! instead returns -1 and leaves the lock to its caller). Because the cmpxchg
//! compares the lock bits too, a lockless update can never land inside a
//! locked section. The ordering is relaxed: dentry contents are ordered by RCU
//! and `d_seq`, not by the lockref. A negative count means dead.
//!
//! # How long the lockless loop tries
//!
//! The copy read retries for as long as it sees the lock free; issue 9 and the
//! brief give current kernels a bound of 100 failed cmpxchgs (not re-read
//! here). The model gives up after [`MODEL_RETRIES`] = 2, the smallest bound at
//! which two contending threads reach the fallback. What that bound does:
//! - it explores the fallback (the lock path, or `lockref_put_return`'s -1)
//!   after two failures, where a kernel with a bound of 100 would still be
//!   retrying: a caller's slow path is explored in more executions than the
//!   kernel can produce — a possible false alarm, only if that slow path is
//!   wrong in a way the fast path is not;
//! - it never explores a lockless success after 3 to 100 failures, which
//!   leaves the same state as a success after fewer failures (each failure
//!   only re-reads the word): no bug is hidden by it.

use super::atomic::Atomic;
use super::spinlock::next_lock_id;
use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::sync::{self, Ordering};
use crate::trace::{intern, Effect, LockOp, Name, Show};

const LOCKED: u64 = 1 << 32;
const COUNT_MASK: u64 = (1 << 32) - 1;

/// The count lockref_mark_dead stores.
pub const DEAD_COUNT: i32 = -128;

/// How many failed cmpxchgs the lockless loop takes before it gives up (see
/// the module docs for what this bound explores and what it does not).
pub const MODEL_RETRIES: u32 = 2;

fn count_of(w: u64) -> i32 {
    (w & COUNT_MASK) as u32 as i32
}

fn with_count(w: u64, c: i32) -> u64 {
    (w & !COUNT_MASK) | (c as u32 as u64)
}

/// Renders a lockref word as the trace shows it: `2` or `2+locked`.
fn show(w: u64) -> String {
    if w & LOCKED != 0 {
        format!("{}+locked", count_of(w))
    } else {
        count_of(w).to_string()
    }
}

/// Which defect to inject into the primitive, so tests can show the checker
/// finds lockref misuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LockrefFlavor {
    #[default]
    Kernel,
    /// The lockless path does not check the embedded lock before its
    /// cmpxchg, so it can update the count inside a locked section.
    IgnoresLock,
}

pub struct Lockref {
    name: Name,
    /// The embedded spinlock's instance name (`b.d_lock`) and lock class
    /// (`d_lock` for a dentry).
    lock: Name,
    class: Name,
    id: usize,
    word: Atomic,
    flavor: LockrefFlavor,
    retries: u32,
}

/// The embedded lock, held; unlocks on drop.
pub struct LockrefGuard<'a> {
    lr: &'a Lockref,
    task: &'a Task,
}

impl Lockref {
    pub fn new(name: impl AsRef<str>, count: i32) -> Lockref {
        Lockref::with_flavor(name, count, LockrefFlavor::Kernel)
    }

    /// Lockref `name` whose embedded spinlock is instance `lock` of lock
    /// class `class` (a dentry's `d_lockref` embeds its `d_lock`, and every
    /// dentry's `d_lock` is one class).
    pub fn with_class(
        name: impl AsRef<str>,
        lock: impl AsRef<str>,
        class: Name,
        count: i32,
    ) -> Lockref {
        Lockref {
            lock: intern(lock.as_ref()),
            class,
            ..Lockref::with_flavor(name, count, LockrefFlavor::Kernel)
        }
    }

    /// Lockref `name` whose embedded spinlock is `name.lock`, a class of
    /// its own.
    pub fn with_flavor(name: impl AsRef<str>, count: i32, flavor: LockrefFlavor) -> Lockref {
        let name = intern(name.as_ref());
        let lock = intern(&format!("{name}.lock"));
        Lockref {
            word: Atomic::with_format(name, with_count(0, count), Show::With(show)),
            name,
            lock,
            class: lock,
            id: next_lock_id(),
            flavor,
            retries: MODEL_RETRIES,
        }
    }

    /// The lockref's name in traces (`b.d_lockref`).
    pub fn name(&self) -> Name {
        self.name
    }

    /// The count a word of this lockref holds (what a trace's value of it
    /// stands for).
    pub fn count_in(word: u64) -> i32 {
        count_of(word)
    }

    /// Count and lock state (ghost).
    pub fn peek(&self) -> (i32, bool) {
        let w = self.word.peek();
        (count_of(w), w & LOCKED != 0)
    }

    /// CMPXCHG_LOOP of the lockref function `func`: try `update`
    /// locklessly. `update` maps the old count to `Ok(new count)`, or
    /// `Err(r)` to return `r` without updating. `None` means "take the lock"
    /// (lock observed held, or retries exhausted). The cmpxchg is shown as
    /// `func` on the lockref.
    fn cmpxchg_loop<R>(
        &self,
        t: &Task,
        func: &'static str,
        update: impl Fn(i32) -> Result<i32, R>,
        done: impl Fn(i32) -> R,
    ) -> Option<R> {
        let mut old = self.word.read_once(t);
        for _ in 0..self.retries {
            if old & LOCKED != 0 && self.flavor == LockrefFlavor::Kernel {
                t.tracepoint("lockref-lockless-saw-lock");
                return None;
            }
            let new = match update(count_of(old)) {
                Ok(c) => c,
                Err(r) => return Some(r),
            };
            let seen = self.word.cas(
                t,
                false,
                old,
                with_count(old, new),
                func,
                Counter::AtomicRmw,
            );
            if seen == old {
                if old & LOCKED != 0 {
                    t.violation(
                        "lockref_locked_section",
                        format!(
                            "lockless update of {} landed inside its locked section",
                            self.name
                        ),
                    );
                }
                return Some(done(new));
            }
            old = seen;
            sync::yield_bounded();
        }
        None
    }

    /// spin_lock(&lockref->lock): spin on the embedded lock bit.
    pub fn lock<'a>(&'a self, t: &'a Task) -> LockrefGuard<'a> {
        self.lock_as(t, 0, LockOp::SpinLock)
    }

    /// spin_lock_nested(&lockref->lock, subclass): the embedded lock taken
    /// while another lock of its class is held (a child's `d_lock` under
    /// its parent's: DENTRY_D_LOCK_NESTED).
    pub fn lock_nested<'a>(&'a self, t: &'a Task, subclass: u8) -> LockrefGuard<'a> {
        self.lock_as(t, subclass, LockOp::SpinLockNested { subclass })
    }

    fn lock_effect(&self, op: LockOp) -> Effect {
        Effect::Lock {
            op,
            class: self.class,
            lock: self.lock,
        }
    }

    /// Takes the embedded lock as lockdep subclass `subclass`: a read of the
    /// word and, while it is free, a fully ordered cmpxchg that sets the
    /// lock bit; one step, `op` when taken, `spin_lock(…) busy` per round
    /// that found it held.
    fn lock_as<'a>(&'a self, t: &'a Task, subclass: u8, op: LockOp) -> LockrefGuard<'a> {
        t.lockdep_acquire(self.class, subclass, self.lock);
        loop {
            let w = self.word.load_quiet(t, Ordering::Relaxed);
            let taken = w & LOCKED == 0
                && self
                    .word
                    .cas_recorded_as(t, true, w, w | LOCKED, Counter::AtomicRmw, |r| {
                        self.lock_effect(if r.is_ok() { op } else { LockOp::SpinLockBusy })
                    })
                    .is_ok();
            if taken {
                t.wrote(self.name);
                break;
            }
            if w & LOCKED != 0 {
                t.step(self.lock_effect(LockOp::SpinLockBusy));
            }
            sync::yield_now();
        }
        t.took_lock(Counter::LockAcquire, self.class);
        t.set_preempt_count(t.preempt_count() + 1);
        t.push_held(self.class, subclass, self.lock, self.id);
        LockrefGuard { lr: self, task: t }
    }

    /// lockref_get: unconditional +1.
    pub fn lockref_get(&self, t: &Task) {
        if self
            .cmpxchg_loop(t, "lockref_get", |c| Ok::<i32, ()>(c + 1), |_| ())
            .is_some()
        {
            return;
        }
        let g = self.lock(t);
        g.set_count(g.count() + 1);
    }

    /// lockref_get_not_zero: +1 unless the count is ≤ 0.
    pub fn lockref_get_not_zero(&self, t: &Task) -> bool {
        let lockless = self.cmpxchg_loop(
            t,
            "lockref_get_not_zero",
            |c| if c <= 0 { Err(false) } else { Ok(c + 1) },
            |_| true,
        );
        if let Some(r) = lockless {
            return r;
        }
        let g = self.lock(t);
        let c = g.count();
        if c > 0 {
            g.set_count(c + 1);
        }
        c > 0
    }

    /// lockref_get_not_dead: +1 unless dead (count < 0).
    pub fn lockref_get_not_dead(&self, t: &Task) -> bool {
        let lockless = self.cmpxchg_loop(
            t,
            "lockref_get_not_dead",
            |c| if c < 0 { Err(false) } else { Ok(c + 1) },
            |_| true,
        );
        if let Some(r) = lockless {
            return r;
        }
        let g = self.lock(t);
        let c = g.count();
        if c >= 0 {
            g.set_count(c + 1);
        }
        c >= 0
    }

    /// lockref_put_return: lockless −1; returns the new count, or −1 when the
    /// lock would be needed or the count is ≤ 0 (the caller then locks).
    pub fn lockref_put_return(&self, t: &Task) -> i32 {
        self.cmpxchg_loop(
            t,
            "lockref_put_return",
            |c| if c <= 0 { Err(-1) } else { Ok(c - 1) },
            |c| c,
        )
        .unwrap_or(-1)
    }
}

impl LockrefGuard<'_> {
    /// A plain read of the count by the lock holder.
    pub fn count(&self) -> i32 {
        count_of(self.read())
    }

    fn read(&self) -> u64 {
        self.lr.word.load(self.task, Ordering::Relaxed, "")
    }

    /// A plain store of the count by the lock holder.
    pub fn set_count(&self, c: i32) {
        self.store_count(c, "");
    }

    /// The holder's store of count `c`, by the lockref function `how`
    /// (empty: a plain store).
    fn store_count(&self, c: i32, how: &'static str) {
        let w = self.read();
        self.lr
            .word
            .store(self.task, with_count(w, c), Ordering::Relaxed, how);
    }

    /// lockref_mark_dead: the lock is held; the count becomes negative.
    pub fn lockref_mark_dead(&self) {
        self.store_count(DEAD_COUNT, "lockref_mark_dead");
    }

    /// spin_unlock(&lockref->lock) (same as dropping the guard).
    pub fn unlock(self) {}
}

impl Drop for LockrefGuard<'_> {
    fn drop(&mut self) {
        let t = self.task;
        t.pop_held(self.lr.id);
        t.set_preempt_count(t.preempt_count().saturating_sub(1));
        if std::thread::panicking() {
            return;
        }
        let w = self.lr.word.load_quiet(t, Ordering::Relaxed);
        let unlock = self.lr.lock_effect(LockOp::SpinUnlock);
        self.lr
            .word
            .store_recorded_as(t, w & !LOCKED, Ordering::Release, unlock);
        t.wrote(self.lr.name);
    }
}
