//! Marked accesses, atomics and barriers with the kernel's ordering classes,
//! mapped onto C11 (tools/memory-model/Documentation/explanation.txt,
//! Documentation/atomic_t.txt; the semantics of brief §7.12).
//!
//! Every [`Atomic`] carries a ghost copy of the value its latest executed
//! store wrote, which specs read with [`Atomic::peek`] without an engine
//! operation (see there for where that differs from modification order).
//!
//! # C11 stand-ins and which way the error goes
//!
//! | kernel | here | vs LKMM | error direction |
//! |---|---|---|---|
//! | `READ_ONCE` / `WRITE_ONCE` | `Relaxed` load / store | both single-copy atomic and otherwise unordered, but LKMM orders a `READ_ONCE` that heads an address dependency before the access through the pointer it loaded; `Relaxed` does not | weaker: may raise a **false alarm** where code relies on an address dependency from a `READ_ONCE` (such loads use [`Atomic::rcu_dereference`], an acquire load) |
//! | `smp_load_acquire` / `smp_store_release` | `Acquire` / `Release` | same for the accesses involved; LKMM release is not cumulative the way C11 release sequences are extended by RMWs | exact for our patterns |
//! | `rcu_dereference` | `Acquire` load | LKMM orders only accesses *dependent* on the loaded pointer; acquire orders every later access | stronger: may **miss** a bug that needs a broken dependency |
//! | `rcu_assign_pointer` | `Release` store | same | exact |
//! | `smp_mb()` | `fence(SeqCst)` | LKMM strong fence is at least as strong for the patterns we check (SB, IRIW) | exact for litmus families; never use `SeqCst` accesses (loom#180) |
//! | `smp_rmb()` | `fence(Acquire)` | rmb orders load→load only; an acquire fence also orders earlier loads before later stores | stronger: may **miss** a load→store reordering bug |
//! | `smp_wmb()` | `fence(Release)` | wmb orders store→store only; a release fence also orders earlier loads before later stores | stronger: may **miss** a load→store reordering bug |
//! | value-returning RMW (`atomic_inc_return`, `xchg`, successful `cmpxchg`, `atomic_dec_and_test`, `inc_not_zero`) | `fence(SeqCst)`; RMW `AcqRel`; `fence(SeqCst)` | fully ordered in both | exact |
//! | failed `cmpxchg` | a `Relaxed` load (the fenced RMW runs only when the load saw the expected value; if the word changes in between, the failure is fenced) | unordered in both | exact, except that rare fenced failure (stronger) |
//! | `smp_mb__after_atomic` / `smp_mb__after_spinlock` | `fence(SeqCst)` | full barrier after the RMW or lock | exact |
//! | non-value-returning RMW (`atomic_inc`, `set_bit`) and `_relaxed` forms | `Relaxed` RMW | same | exact |
//! | control dependencies (LKMM orders a load before a store that depends on it through a branch) | not modelled | C11 has none, which alone would be weaker; but the engines never produce load buffering (loom reads only stores that already ran, shuttle is sequentially consistent), the only outcome a control dependency forbids | stronger in practice: may **miss** a bug where a control dependency is missing (an LB shape); the litmus tests that need load buffering are `#[ignore]`d |
//! | `this_cpu_cmpxchg` / `this_cpu_try_cmpxchg128` (no LOCK) | a `Relaxed` load and store with no interrupt or preemption point between them (`Atomic::cas_this_cpu`) | atomic against the local CPU only, unordered | exact: a same-CPU handler cannot split it; a write by another CPU between the load and the store is lost |
//! | regions with preemption or IRQs disabled (a held spinlock) as RCU read-side critical sections (since the flavour consolidation, around v4.20; rcupdate.h documents it from v5.0; see `kernel::rcu::RcuFlavor`) | the task's RCU-sched word, a read-modify-write at each entry and exit, and one by every grace period (`kernel::task`, `kernel::rcu`) | the kernel's grace period waits for a quiescent state of every CPU | exact for the RCU guarantee; it synchronises the grace period with the region's own task only, and orders nothing for a task no grace period looks at |
//! | plain C access (`x`, `x = v`: `load_plain`, `store_plain`) | `Relaxed` load / store | exact where no access races with it; a racing plain access is a data race, whose value LKMM leaves unbounded (the compiler may tear, fuse or repeat it) | stronger: models use plain accesses only where nothing races; `vfsmc litmus` reports the race itself as LKMM's data-race flag (loom only) |
//! | `barrier()` | nothing | compiler-only | exact for cross-thread reasoning; same-CPU IRQ code sees program order by construction (`kernel::percpu`) |

use std::sync::atomic::AtomicU64 as GhostU64;

use crate::exec::{atomic_section, Counter};
use crate::kernel::task::Task;
use crate::sync::{self, Ordering};
use crate::trace::{intern, Effect, Name, Show, Val};

/// A kernel word accessed with marked accesses or atomic operations
/// (`atomic_t`, `atomic_long_t`, a pointer read with READ_ONCE, a flag).
pub struct Atomic {
    name: Name,
    word: sync::AtomicU64,
    ghost: GhostU64,
    show: Show,
}

impl Atomic {
    pub fn new(name: impl AsRef<str>, v: u64) -> Atomic {
        Atomic::with_format(name, v, Show::Dec)
    }

    /// An atomic whose values traces show as `show` says (a packed word, a
    /// pointer named after its object).
    pub fn with_format(name: impl AsRef<str>, v: u64, show: Show) -> Atomic {
        Atomic {
            name: intern(name.as_ref()),
            word: sync::AtomicU64::new(v),
            ghost: GhostU64::new(v),
            show,
        }
    }

    pub fn name(&self) -> Name {
        self.name
    }

    fn val(&self, raw: u64) -> Val {
        Val::with(raw, self.show)
    }

    /// The value of the latest store *executed*, for observers (no engine
    /// op). Under loom this is not always the last store in modification
    /// order: of two stores not ordered by happens-before, loom may order the
    /// one that ran first last (the litmus test CoWR+poonceonce+Once showed
    /// it). End-of-execution checks read [`Atomic::value_at_quiescence`].
    pub fn peek(&self) -> u64 {
        self.ghost.load(Ordering::SeqCst)
    }

    /// The final value, read with an engine load once every writer has been
    /// joined (so the load reads the last store in modification order).
    /// Records no step.
    pub fn value_at_quiescence(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }

    /// A load that records no step and is no interrupt point: for a waiter
    /// that already left its CPU (`Task::sleep`) re-checking its condition
    /// under the lock of its wait queue.
    pub(crate) fn load_unrecorded(&self, o: Ordering) -> u64 {
        self.word.load(o)
    }

    fn set_ghost(&self, v: u64) {
        self.ghost.store(v, Ordering::SeqCst);
    }

    /// A load shown as the kernel accessor `how` (a primitive built on
    /// this word names its own function: `read_seqcount_begin`).
    pub(crate) fn load(&self, t: &Task, o: Ordering, how: &'static str) -> u64 {
        t.engine_op();
        let _s = atomic_section();
        let v = self.word.load(o);
        t.step(Effect::Load {
            how,
            var: self.name,
            val: self.val(v),
        });
        v
    }

    fn stored(&self, t: &Task, how: &'static str, old: u64, new: u64) {
        t.step(Effect::Store {
            how,
            var: self.name,
            old: self.val(old),
            new: self.val(new),
        });
    }

    /// An engine load that records no step: part of a primitive that
    /// records one step for several accesses (lockref's `spin_lock`).
    pub(crate) fn load_quiet(&self, t: &Task, o: Ordering) -> u64 {
        t.engine_op();
        let _s = atomic_section();
        self.word.load(o)
    }

    /// A store recorded as `step` (a primitive's own effect: lockref's
    /// `spin_unlock`).
    pub(crate) fn store_recorded_as(&self, t: &Task, v: u64, o: Ordering, step: Effect) {
        t.engine_op();
        let _s = atomic_section();
        self.word.store(v, o);
        self.set_ghost(v);
        t.step(step);
    }

    /// A store shown as the kernel accessor `how`.
    pub(crate) fn store(&self, t: &Task, v: u64, o: Ordering, how: &'static str) {
        t.engine_op();
        let _s = atomic_section();
        let old = self.peek();
        self.word.store(v, o);
        self.set_ghost(v);
        self.stored(t, how, old, v);
    }

    /// READ_ONCE: a single-copy-atomic load, no ordering.
    pub fn read_once(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Relaxed, "READ_ONCE")
    }
    /// READ_ONCE by a writer holding the lock that serialises every store
    /// to this word (a read-modify-write of flags under `d_lock` or
    /// `mount_lock`): it can only read the latest store, so it is recorded
    /// as a step but is not an engine access: an engine load would only add
    /// interleavings that cannot change what it reads. (Released loom also
    /// lost races behind such a load, tokio-rs/loom#166; the vendored loom
    /// fixes that and the litmus `probe-MP+flag-load-store` keeps it fixed.)
    pub fn read_once_owned(&self, t: &Task) -> u64 {
        let v = self.peek();
        t.step(Effect::Load {
            how: "READ_ONCE",
            var: self.name,
            val: self.val(v),
        });
        v
    }
    /// READ_ONCE of a pointer the reader then dereferences (`d_parent`,
    /// `d_inode`): the kernel relies on the address dependency to order the
    /// dereference after the load; modelled as acquire, as
    /// [`Atomic::rcu_dereference`] is. A relaxed load here would let the
    /// reader touch an object whose initialisation it has not seen (loom
    /// stops such an execution as a causality violation).
    pub fn read_once_ptr(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Acquire, "READ_ONCE")
    }
    /// A plain C load (`x`) where no store can race with it or a racing
    /// store does no harm (the model says which): relaxed, shown without an
    /// accessor.
    pub fn load_plain(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Relaxed, "")
    }
    /// A plain C store (`x = v`) by the only writer of the word (serialised
    /// by a lock or by running on the owning CPU): relaxed, shown without
    /// an accessor.
    pub fn store_plain(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Relaxed, "")
    }
    /// WRITE_ONCE: a single-copy-atomic store, no ordering.
    pub fn write_once(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Relaxed, "WRITE_ONCE")
    }
    /// A store of part of the word by the accessor `how` (`WRITE_ONCE`, or
    /// empty for a plain store): the value stored is `f` of the word
    /// as the latest store left it, taken after the interrupt point before
    /// the store (so a same-CPU handler's update of the other part is kept,
    /// as it is when the parts are separate words).
    /// The step shows the part as `part` says (its name and how to show its
    /// value in the word), or the whole word.
    pub(crate) fn write_once_update(
        &self,
        t: &Task,
        f: impl FnOnce(u64) -> u64,
        how: &'static str,
        part: Option<(Name, &dyn Fn(u64) -> Val)>,
    ) {
        t.engine_op();
        let _s = atomic_section();
        let old = self.peek();
        let v = f(old);
        self.word.store(v, Ordering::Relaxed);
        self.set_ghost(v);
        match part {
            Some((var, show)) => t.step(Effect::Store {
                how,
                var,
                old: show(old),
                new: show(v),
            }),
            None => self.stored(t, how, old, v),
        }
    }

    /// READ_ONCE of part of the word: the step shows `var` with the value
    /// `show` picks out of the word.
    pub(crate) fn read_once_part(&self, t: &Task, var: Name, show: &dyn Fn(u64) -> Val) -> u64 {
        t.engine_op();
        let _s = atomic_section();
        let v = self.word.load(Ordering::Relaxed);
        t.step(Effect::Load {
            how: "READ_ONCE",
            var,
            val: show(v),
        });
        v
    }
    /// smp_load_acquire.
    pub fn load_acquire(&self, t: &Task) -> u64 {
        self.load(t, Ordering::Acquire, "smp_load_acquire")
    }
    /// smp_store_release.
    pub fn store_release(&self, t: &Task, v: u64) {
        self.store(t, v, Ordering::Release, "smp_store_release")
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
        self.store(t, v, Ordering::Release, "rcu_assign_pointer")
    }
    /// A plain `x += d` by the only writer (serialised by a lock or by
    /// running on the owning CPU): a load and a store, recorded as one step.
    pub fn nonatomic_add(&self, t: &Task, d: u64) -> u64 {
        self.nonatomic_add_as(t, d, "")
    }
    /// [`Atomic::nonatomic_add`] done by the kernel function `how`
    /// (`write_seqcount_begin`).
    pub(crate) fn nonatomic_add_as(&self, t: &Task, d: u64, how: &'static str) -> u64 {
        t.engine_op();
        let _s = atomic_section();
        let old = self.word.load(Ordering::Relaxed);
        let v = old.wrapping_add(d);
        self.word.store(v, Ordering::Relaxed);
        self.set_ghost(v);
        self.stored(t, how, old, v);
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
        self.store(t, v, Ordering::Relaxed, "atomic_set")
    }

    fn rmw(
        &self,
        t: &Task,
        full: bool,
        what: &'static str,
        op: impl FnOnce(&sync::AtomicU64, Ordering) -> u64,
        new: impl Fn(u64) -> u64,
    ) -> u64 {
        t.engine_op();
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
        self.record_rmw(t, what, old, new(old));
        old
    }

    /// The ghost value and the trace step of an RMW `what` that found
    /// `old` and left `new`.
    fn record_rmw(&self, t: &Task, what: &'static str, old: u64, new: u64) {
        self.set_ghost(new);
        t.step(Effect::Rmw {
            op: what,
            var: self.name,
            old: self.val(old),
            new: self.val(new),
        });
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
    /// A release-ordered `or` of `bits`, shown as `what`: an RCU list
    /// insertion (`hlist_bl_add_head_rcu` publishes with a release store).
    pub fn or_release(&self, t: &Task, what: &'static str, bits: u64) {
        let _s = atomic_section();
        t.cost(Counter::AtomicRmw, 1);
        let old = self.word.fetch_or(bits, Ordering::Release);
        self.set_ghost(old | bits);
        t.step(Effect::Rmw {
            op: what,
            var: self.name,
            old: self.val(old),
            new: self.val(old | bits),
        });
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

    /// A strong compare-and-exchange charged to `counter` and shown as
    /// `what` (fully ordered when `full`); returns the value found.
    pub(crate) fn cas(
        &self,
        t: &Task,
        full: bool,
        old: u64,
        new: u64,
        what: &'static str,
        counter: Counter,
    ) -> u64 {
        self.cas_recorded_as(t, full, old, new, counter, |r| {
            self.cas_effect(what, old, new, r)
        })
        .unwrap_or_else(|seen| seen)
    }

    /// [`Atomic::cas`] recorded as the step `effect` makes of its result
    /// (a primitive's own effect: lockref's `spin_lock`); `Ok` on success,
    /// else `Err` with the value found.
    pub(crate) fn cas_recorded_as(
        &self,
        t: &Task,
        full: bool,
        old: u64,
        new: u64,
        counter: Counter,
        effect: impl FnOnce(Result<u64, u64>) -> Effect,
    ) -> Result<u64, u64> {
        t.engine_op();
        let _s = atomic_section();
        t.cost(counter, 1);
        if full {
            // A failed cmpxchg is an unordered load (LKMM; litmus
            // cmpxchg-fail-unordered-1/2): only a cmpxchg that can succeed
            // pays for the fences.
            let seen = self.word.load(Ordering::Relaxed);
            if seen != old {
                t.step(effect(Err(seen)));
                return Err(seen);
            }
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
        if r.is_ok() {
            self.set_ghost(new);
        }
        t.step(effect(r));
        r
    }

    /// A compare-and-exchange that is atomic only against the code of the
    /// caller's own CPU (`this_cpu_cmpxchg` and its double-width form, no
    /// LOCK prefix): a load, a comparison and a store, with no interrupt or
    /// preemption point between them (the caller keeps its CPU), but
    /// nothing keeps another CPU from writing the word in between, whose
    /// update the store then overwrites. Unordered. Returns the value found.
    pub(crate) fn cas_this_cpu(
        &self,
        t: &Task,
        old: u64,
        new: u64,
        what: &'static str,
        counter: Counter,
    ) -> u64 {
        t.engine_op();
        let _s = atomic_section();
        t.cost(counter, 1);
        let seen = self.word.load(Ordering::Relaxed);
        let r = if seen == old {
            self.word.store(new, Ordering::Relaxed);
            self.set_ghost(new);
            Ok(seen)
        } else {
            Err(seen)
        };
        t.step(self.cas_effect(what, old, new, r));
        seen
    }

    fn cas_effect(&self, op: &'static str, old: u64, new: u64, r: Result<u64, u64>) -> Effect {
        Effect::Cmpxchg {
            op,
            var: self.name,
            old: self.val(old),
            new: self.val(new),
            ok: r.is_ok(),
            seen: self.val(r.unwrap_or_else(|seen| seen)),
        }
    }

    /// cmpxchg: fully ordered; returns the value found (success iff == old).
    pub fn cmpxchg(&self, t: &Task, old: u64, new: u64) -> u64 {
        self.cas(t, true, old, new, "cmpxchg", Counter::AtomicRmw)
    }
    /// this_cpu_cmpxchg: atomic against the local CPU only, unordered (see
    /// `cas_this_cpu`); returns the value found.
    pub fn this_cpu_cmpxchg(&self, t: &Task, old: u64, new: u64) -> u64 {
        self.cas_this_cpu(t, old, new, "this_cpu_cmpxchg", Counter::AtomicRmw)
    }
    /// cmpxchg_relaxed: unordered; returns the value found.
    pub fn cmpxchg_relaxed(&self, t: &Task, old: u64, new: u64) -> u64 {
        self.cas(t, false, old, new, "cmpxchg_relaxed", Counter::AtomicRmw)
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

/// The ordering suffix of a kernel RMW: `_relaxed`, `_acquire`,
/// `_release`, or none (fully ordered when it returns a value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOrder {
    Relaxed,
    Acquire,
    Release,
    Full,
}

/// The arithmetic of [`Atomic::rmw_ordered`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwArith {
    Add(u64),
    Sub(u64),
    And(u64),
    Or(u64),
    AndNot(u64),
    /// `xchg`: the operand replaces the value.
    Set(u64),
}

impl RmwArith {
    fn apply(self, old: u64) -> u64 {
        match self {
            RmwArith::Add(d) => old.wrapping_add(d),
            RmwArith::Sub(d) => old.wrapping_sub(d),
            RmwArith::And(b) => old & b,
            RmwArith::Or(b) => old | b,
            RmwArith::AndNot(b) => old & !b,
            RmwArith::Set(v) => v,
        }
    }
}

impl Atomic {
    /// Any of the kernel's RMW families (`atomic_fetch_add_acquire`,
    /// `xchg_release`, `atomic_inc`…) by its arithmetic and ordering suffix,
    /// recorded as `what`; returns the old value. `Full` is the
    /// value-returning RMW of the module table (fences around an `AcqRel`
    /// RMW); `_acquire` and `_release` are `Acquire` and `Release` RMWs,
    /// `_relaxed` a `Relaxed` one, as LKMM and C11 both order them.
    pub fn rmw_ordered(
        &self,
        t: &Task,
        what: &'static str,
        order: RmwOrder,
        arith: RmwArith,
    ) -> u64 {
        let o = match order {
            RmwOrder::Full => {
                return self.rmw(
                    t,
                    true,
                    what,
                    |a, o| a.fetch_update_with(o, arith),
                    |old| arith.apply(old),
                )
            }
            RmwOrder::Relaxed => Ordering::Relaxed,
            RmwOrder::Acquire => Ordering::Acquire,
            RmwOrder::Release => Ordering::Release,
        };
        t.engine_op();
        let _s = atomic_section();
        t.cost(Counter::AtomicRmw, 1);
        let old = self.word.fetch_update_with(o, arith);
        self.record_rmw(t, what, old, arith.apply(old));
        old
    }

    /// `cmpxchg` with an ordering suffix, recorded as `what`; returns the
    /// value seen. `Full` and `Relaxed` are [`Atomic::cmpxchg`] and
    /// [`Atomic::cmpxchg_relaxed`]; `_acquire` and `_release` order only a
    /// successful exchange (a failure is a relaxed load, as in LKMM).
    pub fn cmpxchg_ordered(
        &self,
        t: &Task,
        what: &'static str,
        order: RmwOrder,
        old: u64,
        new: u64,
    ) -> u64 {
        let succ = match order {
            RmwOrder::Full => return self.cas(t, true, old, new, what, Counter::AtomicRmw),
            RmwOrder::Relaxed => return self.cas(t, false, old, new, what, Counter::AtomicRmw),
            RmwOrder::Acquire => Ordering::Acquire,
            RmwOrder::Release => Ordering::Release,
        };
        t.engine_op();
        let _s = atomic_section();
        t.cost(Counter::AtomicRmw, 1);
        let r = self
            .word
            .compare_exchange(old, new, succ, Ordering::Relaxed);
        if r.is_ok() {
            self.set_ghost(new);
        }
        t.step(self.cas_effect(what, old, new, r));
        r.unwrap_or_else(|seen| seen)
    }
}

/// The facade's atomics as one `fetch_*` by [`RmwArith`].
trait FetchWith {
    fn fetch_update_with(&self, o: Ordering, arith: RmwArith) -> u64;
}

impl FetchWith for sync::AtomicU64 {
    fn fetch_update_with(&self, o: Ordering, arith: RmwArith) -> u64 {
        match arith {
            RmwArith::Add(d) => self.fetch_add(d, o),
            RmwArith::Sub(d) => self.fetch_sub(d, o),
            RmwArith::And(b) => self.fetch_and(b, o),
            RmwArith::Or(b) => self.fetch_or(b, o),
            RmwArith::AndNot(b) => self.fetch_and(!b, o),
            RmwArith::Set(v) => self.swap(v, o),
        }
    }
}

/// A full barrier recorded under its kernel name (`smp_mb__before_atomic`,
/// `smp_mb__after_unlock_lock`, `smp_mb__after_srcu_read_unlock`): a
/// `SeqCst` fence, like [`smp_mb`].
pub fn full_barrier_as(t: &Task, what: &'static str) {
    t.cost(Counter::FullBarrier, 1);
    barrier_step(t, Ordering::SeqCst, what);
}

fn barrier_step(t: &Task, o: Ordering, what: &'static str) {
    t.engine_op();
    let _s = atomic_section();
    sync::fence(o);
    t.step(Effect::Fence(what));
}

/// smp_mb(): full barrier (a `SeqCst` fence; see the module table).
pub fn smp_mb(t: &Task) {
    t.cost(Counter::FullBarrier, 1);
    barrier_step(t, Ordering::SeqCst, "smp_mb");
}
/// smp_mb__after_atomic(): upgrades the preceding non-value-returning RMW
/// (or failed cmpxchg) to full ordering: a full barrier here.
#[allow(non_snake_case)]
pub fn smp_mb__after_atomic(t: &Task) {
    t.cost(Counter::FullBarrier, 1);
    barrier_step(t, Ordering::SeqCst, "smp_mb__after_atomic");
}
/// smp_mb__after_spinlock(): makes the preceding spin_lock a full barrier.
#[allow(non_snake_case)]
pub fn smp_mb__after_spinlock(t: &Task) {
    t.cost(Counter::FullBarrier, 1);
    barrier_step(t, Ordering::SeqCst, "smp_mb__after_spinlock");
}
/// smp_rmb(): read barrier (an acquire fence: stronger than LKMM).
pub fn smp_rmb(t: &Task) {
    barrier_step(t, Ordering::Acquire, "smp_rmb");
}
/// smp_wmb(): write barrier (a release fence: stronger than LKMM).
pub fn smp_wmb(t: &Task) {
    barrier_step(t, Ordering::Release, "smp_wmb");
}
