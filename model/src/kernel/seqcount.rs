//! seqcount_t and seqlock_t (include/linux/seqlock.h as read at gregkh/linux
//! 10d525b98aaa: the linux-rolling-stable head that the stable tree's
//! post-receive log of 5 Dec 2024 moved on to 6.12.y, so a 6.11.y stable).
//!
//! Writers are serialised by an associated lock; readers never block writers
//! and instead retry when the count moved. The shape is message passing: a
//! reader whose begin and retry read the same even value read no data from
//! inside a write section. Data protected by a seqcount is modelled as
//! relaxed [`Atomic`]s: racy reads are allowed and must be discarded on retry.
//!
//! Orderings (brief §7.3): `write_seqcount_begin` = increment then `smp_wmb`;
//! `write_seqcount_end` = `smp_wmb` then increment; `write_seqcount_invalidate`
//! = `smp_wmb` then +2; `read_seqcount_begin` spins on a `READ_ONCE` until the
//! value is even, then `smp_rmb` (here one acquire load per try: the same
//! ordering once `smp_rmb` is an acquire fence, see `kernel::atomic`);
//! `raw_seqcount_begin` does not wait but clears the low bit so that an
//! in-progress writer forces a later retry;
//! `read_seqcount_retry` = `smp_rmb` then compare; `__read_seqcount_retry`
//! compares only.

use super::atomic::{smp_rmb, smp_wmb, Atomic};
use super::spinlock::{SpinGuard, SpinLock};
use crate::kernel::task::Task;
use crate::sync;
use crate::sync::Ordering;

/// Which defect to inject into the primitive itself, so that the checker can
/// show it finds seqcount misuse (litmus and primitive tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SeqcountFlavor {
    /// As in the kernel.
    #[default]
    Kernel,
    /// The reader's retry omits `smp_rmb` (a `__read_seqcount_retry` used
    /// where the data loads are not otherwise ordered).
    RetryWithoutRmb,
    /// The writer omits `smp_wmb` after the first increment.
    BeginWithoutWmb,
}

/// A sequence counter (`seqcount_t`).
pub struct SeqCount {
    seq: Atomic,
    flavor: SeqcountFlavor,
}

impl SeqCount {
    pub fn new(name: impl AsRef<str>) -> SeqCount {
        SeqCount::with_flavor(name, SeqcountFlavor::Kernel)
    }

    pub fn with_flavor(name: impl AsRef<str>, flavor: SeqcountFlavor) -> SeqCount {
        SeqCount {
            seq: Atomic::new(name, 0),
            flavor,
        }
    }

    /// The current count (ghost).
    pub fn peek(&self) -> u64 {
        self.seq.peek()
    }

    /// read_seqcount_begin: wait until no writer is active, return the count.
    pub fn read_seqcount_begin(&self, t: &Task) -> u64 {
        self.begin_as(t, "read_seqcount_begin")
    }

    /// [`SeqCount::read_seqcount_begin`] called as the kernel function `how`
    /// (`read_seqbegin` of a seqlock).
    fn begin_as(&self, t: &Task, how: &'static str) -> u64 {
        loop {
            let v = self.seq.load(t, Ordering::Acquire, how);
            if v & 1 == 0 {
                return v;
            }
            sync::yield_now();
        }
    }

    /// raw_seqcount_begin: never waits; an odd count is rounded down so the
    /// retry fails if a writer was active.
    pub fn raw_seqcount_begin(&self, t: &Task) -> u64 {
        self.seq.load(t, Ordering::Acquire, "raw_seqcount_begin") & !1
    }

    /// read_seqcount_retry: true when the reader must retry.
    pub fn read_seqcount_retry(&self, t: &Task, start: u64) -> bool {
        self.retry_ordered_as(t, start, "read_seqcount_retry")
    }

    /// [`SeqCount::read_seqcount_retry`] called as the kernel function
    /// `how` (`read_seqretry` of a seqlock).
    fn retry_ordered_as(&self, t: &Task, start: u64, how: &'static str) -> bool {
        if self.flavor != SeqcountFlavor::RetryWithoutRmb {
            smp_rmb(t);
        }
        self.retry_as(t, start, how)
    }

    /// __read_seqcount_retry: compare only; the caller orders its loads.
    #[allow(non_snake_case)]
    pub fn __read_seqcount_retry(&self, t: &Task, start: u64) -> bool {
        self.retry_as(t, start, "__read_seqcount_retry")
    }

    /// The retry's `READ_ONCE` of the count, shown as the function `how`.
    fn retry_as(&self, t: &Task, start: u64, how: &'static str) -> bool {
        self.seq.load(t, Ordering::Relaxed, how) != start
    }

    /// write_seqcount_begin: the caller holds the associated lock.
    pub fn write_seqcount_begin(&self, t: &Task) {
        self.seq.nonatomic_add_as(t, 1, "write_seqcount_begin");
        if self.flavor != SeqcountFlavor::BeginWithoutWmb {
            smp_wmb(t);
        }
    }

    /// write_seqcount_end.
    pub fn write_seqcount_end(&self, t: &Task) {
        smp_wmb(t);
        self.seq.nonatomic_add_as(t, 1, "write_seqcount_end");
    }

    /// write_seqcount_invalidate: in-flight readers fail, with no odd phase.
    pub fn write_seqcount_invalidate(&self, t: &Task) {
        smp_wmb(t);
        self.seq.nonatomic_add_as(t, 2, "write_seqcount_invalidate");
    }
}

/// seqlock_t: a spinlock serialising writers plus a seqcount for readers.
pub struct SeqLock {
    lock: SpinLock,
    seq: SeqCount,
}

/// A held seqlock write section; ends on drop (write_sequnlock).
pub struct SeqLockWriter<'a> {
    seq: &'a SeqCount,
    task: &'a Task,
    guard: Option<SpinGuard<'a>>,
}

impl SeqLock {
    pub fn new(name: &str) -> SeqLock {
        SeqLock {
            lock: SpinLock::new(format!("{name}.lock")),
            seq: SeqCount::new(format!("{name}.seq")),
        }
    }

    pub fn seqcount(&self) -> &SeqCount {
        &self.seq
    }

    /// read_seqbegin.
    pub fn read_seqbegin(&self, t: &Task) -> u64 {
        self.seq.begin_as(t, "read_seqbegin")
    }

    /// read_seqretry.
    pub fn read_seqretry(&self, t: &Task, start: u64) -> bool {
        self.seq.retry_ordered_as(t, start, "read_seqretry")
    }

    /// write_seqlock: take the lock, open a write section.
    pub fn write_seqlock<'a>(&'a self, t: &'a Task) -> SeqLockWriter<'a> {
        let guard = self.lock.spin_lock(t);
        self.seq.write_seqcount_begin(t);
        SeqLockWriter {
            seq: &self.seq,
            task: t,
            guard: Some(guard),
        }
    }
}

impl SeqLockWriter<'_> {
    /// write_sequnlock (same as dropping the writer).
    pub fn write_sequnlock(self) {}
}

impl Drop for SeqLockWriter<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.seq.write_seqcount_end(self.task);
        }
        self.guard.take();
    }
}
