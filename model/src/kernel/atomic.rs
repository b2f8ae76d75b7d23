//! Marked accesses, atomics and barriers with the kernel's ordering classes,
//! mapped onto C11 (tools/memory-model/Documentation/explanation.txt,
//! Documentation/atomic_t.txt, v6.12).
//!
//! Every [`Atomic`] carries a ghost copy of its latest value in modification
//! order, which specs read with [`Atomic::peek`] without an engine operation.
//!
//! # C11 stand-ins and which way the error goes
//!
//! | kernel | here | vs LKMM | error direction |
//! |---|---|---|---|
//! | `READ_ONCE` / `WRITE_ONCE` | `Relaxed` load / store | same (single-copy atomic, unordered) | exact |
//! | `smp_load_acquire` / `smp_store_release` | `Acquire` / `Release` | same for the accesses involved; LKMM release is not cumulative the way C11 release sequences are extended by RMWs | exact for our patterns |
//! | `rcu_dereference` | `Acquire` load | LKMM orders only accesses *dependent* on the loaded pointer; acquire orders every later access | stronger: may **miss** a bug that needs a broken dependency |
//! | `rcu_assign_pointer` | `Release` store | same | exact |
//! | `smp_mb()` | `fence(SeqCst)` | LKMM strong fence is at least as strong for the patterns we check (SB, IRIW) | exact for litmus families; never use `SeqCst` accesses (loom#180) |
//! | `smp_rmb()` | `fence(Acquire)` | rmb orders load→load only; an acquire fence also orders earlier loads before later stores | stronger: may **miss** a load→store reordering bug |
//! | `smp_wmb()` | `fence(Release)` | wmb orders store→store only; a release fence also orders earlier loads before later stores | stronger: may **miss** a load→store reordering bug |
//! | value-returning RMW (`atomic_inc_return`, `cmpxchg`, `atomic_dec_and_test`, `inc_not_zero`) | `fence(SeqCst)`; RMW `AcqRel`; `fence(SeqCst)` | fully ordered in both | exact |
//! | non-value-returning RMW (`atomic_inc`, `set_bit`) and `_relaxed` forms | `Relaxed` RMW | same | exact |
//! | control dependencies (LKMM orders load→dependent store) | not modelled | C11 has no control dependencies | weaker: may raise a **false alarm** on load-buffering shapes; none of our models relies on one |
//! | `barrier()` | nothing | compiler-only | exact for cross-thread reasoning; same-CPU IRQ code sees program order by construction (`kernel::percpu`) |

use std::sync::atomic::AtomicU64 as GhostU64;

use crate::exec::{atomic_section, Counter, Task};
use crate::sync::{self, Ordering};

/// A kernel word accessed with marked accesses or atomic operations
/// (`atomic_t`, `atomic_long_t`, a pointer read with READ_ONCE, a flag).
pub struct Atomic {
    name: String,
    word: sync::AtomicU64,
    ghost: GhostU64,
    show: fn(u64) -> String,
}

fn decimal(v: u64) -> String {
    v.to_string()
}

impl Atomic {
    pub fn new(name: impl Into<String>, v: u64) -> Atomic {
        Atomic::with_format(name, v, decimal)
    }

    /// An atomic whose values the trace renders with `show` (a packed word,
    /// a pointer name).
    pub fn with_format(name: impl Into<String>, v: u64, show: fn(u64) -> String) -> Atomic {
        Atomic {
            name: name.into(),
            word: sync::AtomicU64::new(v),
            ghost: GhostU64::new(v),
            show,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The latest value in modification order, for observers (no engine op).
    pub fn peek(&self) -> u64 {
        self.ghost.load(Ordering::SeqCst)
    }

    fn set_ghost(&self, v: u64) {
        self.ghost.store(v, Ordering::SeqCst);
    }

    fn load(&self, t: &Task, o: Ordering, how: &str) -> u64 {
        let _s = atomic_section();
        let v = self.word.load(o);
        t.step(format!("{how}({}) = {}", self.name, (self.show)(v)));
        v
    }

    fn store(&self, t: &Task, v: u64, o: Ordering) {
        let _s = atomic_section();
        let old = self.peek();
        self.word.store(v, o);
        self.set_ghost(v);
        t.step(format!(
            "{} {}→{}",
            self.name,
            (self.show)(old),
            (self.show)(v)
        ));
    }

    /// READ_ONCE: a single-copy-atomic load, no ordering.
    pub fn read_once(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Relaxed, "READ_ONCE")
    }
    /// WRITE_ONCE: a single-copy-atomic store, no ordering.
    pub fn write_once(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Relaxed)
    }
    /// smp_load_acquire.
    pub fn load_acquire(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Acquire, "smp_load_acquire")
    }
    /// smp_store_release.
    pub fn store_release(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Release)
    }
    /// rcu_dereference / rcu_dereference_raw (acquire: see the module table).
    pub fn rcu_dereference(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Acquire, "rcu_dereference")
    }
    /// rcu_access_pointer: the value only, never dereferenced.
    pub fn rcu_access_pointer(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Relaxed, "rcu_access_pointer")
    }
    /// rcu_assign_pointer (= smp_store_release).
    pub fn rcu_assign_pointer(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Release)
    }
    /// A plain `x += d` by the only writer (serialised by a lock or by
    /// running on the owning CPU): a load and a store, recorded as one step.
    pub fn nonatomic_add(&self, t: &Task, d: u64) -> u64 {
        let _s = atomic_section();
        let old = self.word.load(Ordering::Relaxed);
        let v = old.wrapping_add(d);
        self.word.store(v, Ordering::Relaxed);
        self.set_ghost(v);
        t.step(format!(
            "{} {}→{}",
            self.name,
            (self.show)(old),
            (self.show)(v)
        ));
        v
    }
    /// atomic_read.
    pub fn atomic_read(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Relaxed, "atomic_read")
    }
    /// atomic_read_acquire.
    pub fn atomic_read_acquire(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Acquire, "atomic_read_acquire")
    }
    /// atomic_set.
    pub fn atomic_set(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Relaxed)
    }

    fn rmw(
        &self,
        t: &Task,
        full: bool,
        what: &str,
        op: impl FnOnce(&sync::AtomicU64, Ordering) -> u64,
        new: impl Fn(u64) -> u64,
    ) -> u64 {
        let _s = atomic_section();
        t.cost(Counter::AtomicRmw, 1);
        if full {
            t.cost(Counter::FullBarrier, 1);
            sync::fence(Ordering::SeqCst);
        }
        let old = op(
            &self.word,
            if full {
                Ordering::AcqRel
            } else {
                Ordering::Relaxed
            },
        );
        if full {
            sync::fence(Ordering::SeqCst);
        }
        let v = new(old);
        self.set_ghost(v);
        t.step(format!(
            "{what}({}) {}→{}",
            self.name,
            (self.show)(old),
            (self.show)(v)
        ));
        old
    }

    /// atomic_add / atomic_long_add (relaxed, no return value).
    pub fn atomic_add(&self, t: &Task, d: u64) {
        self.rmw(
            t,
            false,
            "atomic_add",
            |a, o| a.fetch_add(d, o),
            |old| old.wrapping_add(d),
        );
    }
    /// atomic_sub (relaxed, no return value).
    pub fn atomic_sub(&self, t: &Task, d: u64) {
        self.rmw(
            t,
            false,
            "atomic_sub",
            |a, o| a.fetch_sub(d, o),
            |old| old.wrapping_sub(d),
        );
    }
    /// atomic_add_return: fully ordered, returns the new value.
    pub fn atomic_add_return(&self, t: &Task, d: u64) -> u64 {
        self.rmw(
            t,
            true,
            "atomic_add_return",
            |a, o| a.fetch_add(d, o),
            |old| old.wrapping_add(d),
        )
        .wrapping_add(d)
    }
    /// atomic_sub_return: fully ordered, returns the new value.
    pub fn atomic_sub_return(&self, t: &Task, d: u64) -> u64 {
        self.rmw(
            t,
            true,
            "atomic_sub_return",
            |a, o| a.fetch_sub(d, o),
            |old| old.wrapping_sub(d),
        )
        .wrapping_sub(d)
    }
    /// atomic_dec_and_test: fully ordered; true when the count reached zero.
    pub fn atomic_dec_and_test(&self, t: &Task) -> bool {
        self.atomic_sub_return(t, 1) == 0
    }
    /// xchg: fully ordered swap, returns the old value.
    pub fn xchg(&self, t: &Task, v: u64) -> u64 {
        self.rmw(t, true, "xchg", |a, o| a.swap(v, o), |_| v)
    }
    /// atomic_or (relaxed): `set_bit` on a word.
    pub fn atomic_or(&self, t: &Task, bits: u64) {
        self.rmw(
            t,
            false,
            "atomic_or",
            |a, o| a.fetch_or(bits, o),
            |old| old | bits,
        );
    }
    /// atomic_andnot (relaxed): `clear_bit` on a word.
    pub fn atomic_andnot(&self, t: &Task, bits: u64) {
        self.rmw(
            t,
            false,
            "atomic_andnot",
            |a, o| a.fetch_and(!bits, o),
            |old| old & !bits,
        );
    }

    fn cas(&self, t: &Task, full: bool, old: u64, new: u64) -> u64 {
        let _s = atomic_section();
        t.cost(Counter::AtomicRmw, 1);
        if full {
            t.cost(Counter::FullBarrier, 1);
            sync::fence(Ordering::SeqCst);
        }
        let (succ, fail) = if full {
            (Ordering::AcqRel, Ordering::Acquire)
        } else {
            (Ordering::Relaxed, Ordering::Relaxed)
        };
        let r = self.word.compare_exchange(old, new, succ, fail);
        if full {
            sync::fence(Ordering::SeqCst);
        }
        let what = if full { "cmpxchg" } else { "cmpxchg_relaxed" };
        match r {
            Ok(prev) => {
                self.set_ghost(new);
                t.step(format!(
                    "{what}({}, {}→{}) ok",
                    self.name,
                    (self.show)(old),
                    (self.show)(new)
                ));
                prev
            }
            Err(prev) => {
                t.step(format!(
                    "{what}({}, {}→{}) failed, saw {}",
                    self.name,
                    (self.show)(old),
                    (self.show)(new),
                    (self.show)(prev)
                ));
                prev
            }
        }
    }

    /// cmpxchg: fully ordered; returns the value found (success iff == old).
    pub fn cmpxchg(&self, t: &Task, old: u64, new: u64) -> u64 {
        self.cas(t, true, old, new)
    }
    /// cmpxchg_relaxed: unordered; returns the value found.
    pub fn cmpxchg_relaxed(&self, t: &Task, old: u64, new: u64) -> u64 {
        self.cas(t, false, old, new)
    }
    /// atomic_inc_not_zero / atomic_long_inc_not_zero: fully ordered on
    /// success; false if the count was zero.
    pub fn atomic_inc_not_zero(&self, t: &Task) -> bool {
        let mut v = self.atomic_read(t);
        loop {
            if v == 0 {
                return false;
            }
            let seen = self.cmpxchg(t, v, v + 1);
            if seen == v {
                return true;
            }
            v = seen;
            sync::yield_now();
        }
    }
}

fn barrier_step(t: &Task, o: Ordering, what: &str) {
    let _s = atomic_section();
    sync::fence(o);
    t.step(what);
}

/// smp_mb(): full barrier (a `SeqCst` fence; see the module table).
pub fn smp_mb(t: &Task) {
    t.cost(Counter::FullBarrier, 1);
    barrier_step(t, Ordering::SeqCst, "smp_mb()");
}
/// smp_rmb(): read barrier (an acquire fence: stronger than LKMM).
pub fn smp_rmb(t: &Task) {
    barrier_step(t, Ordering::Acquire, "smp_rmb()");
}
/// smp_wmb(): write barrier (a release fence: stronger than LKMM).
pub fn smp_wmb(t: &Task) {
    barrier_step(t, Ordering::Release, "smp_wmb()");
}
