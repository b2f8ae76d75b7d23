//! Happens-before queries that report instead of panicking (a vfsmc patch:
//! see `VFSMC-PATCHES.md`, 3).
//!
//! [`crate::cell::UnsafeCell`] checks its accesses against the threads'
//! vector clocks and panics on a concurrent pair, which ends the whole
//! exploration at the first one. A caller that wants to decide later what a
//! concurrent pair means (a race that counts only in some executions) stamps
//! each access with an [`Epoch`] and asks, at a later access, whether the
//! stamped one happens-before it.

use crate::rt;

/// One point of one model thread's history: the thread and its own entry of
/// its vector clock just after that point's increment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch {
    thread: rt::thread::Id,
    time: u16,
}

impl Epoch {
    /// The running thread's current point. Like an `UnsafeCell` access it
    /// advances the thread's own clock entry (so nothing the thread released
    /// before counts this point as known) and it is no branch point.
    pub fn now() -> Epoch {
        rt::execution(|execution| {
            execution.threads.active_causality_inc();
            let id = execution.threads.active_id();
            Epoch {
                thread: id,
                time: execution.threads.active().causality[id],
            }
        })
    }

    /// Whether the point this epoch stamps happens-before the running
    /// thread's current point. Not a branch point; changes no clock.
    pub fn happens_before_now(&self) -> bool {
        rt::execution(|execution| execution.threads.active().causality[self.thread] >= self.time)
    }
}
