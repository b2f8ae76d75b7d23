//! The `primitives` model: each kernel primitive used as the kernel uses it,
//! and one misuse each, so the suite shows the engines find what the
//! primitives are there to catch.
//!
//! One variant, `correct-use`, uses every primitive correctly and must hold
//! on every scenario. Every other variant injects exactly one misuse into one
//! scenario (its witness) and names the invariant that breaks. The misuses
//! are those a kernel reviewer meets: a seqcount reader that skips its
//! `smp_rmb` or its retry, a lockless lockref update that ignores the lock,
//! a free without a grace period, a double free, a NULL dereference after
//! removal, an unbalanced `rcu_read_unlock`, a sleep inside an RCU read-side
//! section, data touched under the wrong lock, an unchecked `ERR_PTR`, a
//! per-CPU read-modify-write split by an interrupt, and a double-word update
//! done as two stores.
//!
//! `seqcount-retry-without-rmb` and `seqcount-begin-without-wmb` are
//! weak-memory bugs: only loom (C11) can find them; shuttle is sequentially consistent and must not be asked to (see
//! [`Use::needs_weak_memory`]).

use std::sync::{Arc, Mutex};

use vfsmc_model::exec;
use vfsmc_model::kernel::atomic::Atomic;
use vfsmc_model::kernel::cmpxchg_double::DoubleWord;
use vfsmc_model::kernel::errptr::{ErrPtr, Errno};
use vfsmc_model::kernel::lockref::{Lockref, LockrefFlavor};
use vfsmc_model::kernel::percpu::Cpus;
use vfsmc_model::kernel::rcu::{Rcu, RcuFlavor, Slab};
use vfsmc_model::kernel::seqcount::{SeqCount, SeqcountFlavor};
use vfsmc_model::kernel::sleeping;
use vfsmc_model::kernel::spinlock::{Locked, SpinLock};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::sync;
use vfsmc_model::trace::{intern, Context, Effect, Note, Part, Parts, Show, Val};

use crate::{
    Check, Expected, Invariant, Judge, Need, Scenario, ScenarioRow, Spec, Tier, Variant, Watch,
};

/// Which primitive is misused, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Correct,
    SeqcountRetryWithoutRmb,
    SeqcountBeginWithoutWmb,
    SeqcountNoRetry,
    LockrefIgnoresLock,
    RcuFreeWithoutGracePeriod,
    RcuFreeTwice,
    RcuDerefUnchecked,
    RcuUnlockTwice,
    MightSleepInRcu,
    SpinlockWrongLock,
    LockOrderInversion,
    NestedWithoutAnnotation,
    ErrPtrDeref,
    IrqWindowNonatomic,
    CmpxchgDoubleTwoStores,
    ThisCpuCmpxchgDoubleCrossCpu,
    SynchronizeRcuPreV420,
    TypesafeAccessAfterUnlock,
    MarkDeadWithoutRecheck,
    LockrefGetIgnoresDead,
}

const VARIANTS: &[Variant<Use>] = &[
    Variant {
        name: "correct-use",
        expected: Expected::Holds,
        witness: "",
        kernel: "include/linux/{seqlock,rcupdate,spinlock,err,irqflags}.h, lib/lockref.c: each at the copy its misuse variant names",
        about: "every primitive used as the kernel uses it: seqcount read/retry, lockref get under a lock holder, RCU removal freed by call_rcu, mutex outside RCU, data under its own lock, IS_ERR checked, per-CPU update with IRQs off, cmpxchg_double loop",
        code: Use::Correct,
    },
    Variant {
        name: "seqcount-retry-without-rmb",
        expected: Expected::Violates("seq_consistent"),
        witness: "seqcount",
        kernel: "include/linux/seqlock.h:read_seqcount_retry (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the reader's retry omits smp_rmb (__read_seqcount_retry where the loads are unordered): the data loads may read inside the write section and the count still compare equal; a weak-memory bug, found by loom only",
        code: Use::SeqcountRetryWithoutRmb,
    },
    Variant {
        name: "seqcount-begin-without-wmb",
        expected: Expected::Violates("seq_consistent"),
        witness: "seqcount",
        kernel: "include/linux/seqlock.h:write_seqcount_begin (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the writer omits the smp_wmb after its first increment: a reader may see new data with the old even count; a weak-memory bug, found by loom only",
        code: Use::SeqcountBeginWithoutWmb,
    },
    Variant {
        name: "seqcount-no-retry",
        expected: Expected::Violates("seq_consistent"),
        witness: "seqcount",
        kernel: "include/linux/seqlock.h:read_seqcount_begin (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the reader uses its data without read_seqcount_retry: a torn read, found by every engine",
        code: Use::SeqcountNoRetry,
    },
    Variant {
        name: "lockref-lockless-ignores-lock",
        expected: Expected::Violates("lockref_locked_section"),
        witness: "lockref",
        kernel: "lib/lockref.c:CMPXCHG_LOOP (copy id 181051326: a 2018–2023 version, repository unknown)",
        about: "the lockless path does not check the embedded lock before its cmpxchg (LockrefFlavor::IgnoresLock), so a lockref_get lands inside a holder's critical section",
        code: Use::LockrefIgnoresLock,
    },
    Variant {
        name: "rcu-free-without-grace-period",
        expected: Expected::Violates("use_after_free"),
        witness: "rcu",
        kernel: "include/linux/rcupdate.h:call_rcu (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the updater unpublishes the object and kfree()s it at once instead of after a grace period; a reader still holding the pointer touches freed memory",
        code: Use::RcuFreeWithoutGracePeriod,
    },
    Variant {
        name: "rcu-free-twice",
        expected: Expected::Violates("double_free"),
        witness: "rcu",
        kernel: "mm/slub.c:kfree (read at torvalds/linux f6db358deaea, slab-for-6.18-rc1)",
        about: "the updater waits for a grace period and kfree()s the object, and also queues a call_rcu callback that frees it again",
        code: Use::RcuFreeTwice,
    },
    Variant {
        name: "rcu-deref-unchecked",
        expected: Expected::Violates("null_deref"),
        witness: "rcu",
        kernel: "include/linux/rcupdate.h:rcu_dereference (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the reader dereferences what rcu_dereference returned without checking for NULL after a concurrent removal",
        code: Use::RcuDerefUnchecked,
    },
    Variant {
        name: "rcu-unlock-twice",
        expected: Expected::Violates("rcu_balance"),
        witness: "rcu",
        kernel: "include/linux/rcupdate.h:rcu_read_unlock (read at gregkh/linux 10d525b98aaa, 6.11.y stable)",
        about: "the reader calls rcu_read_unlock once more than rcu_read_lock",
        code: Use::RcuUnlockTwice,
    },
    Variant {
        name: "might-sleep-in-rcu",
        expected: Expected::Violates("might_sleep"),
        witness: "sleep",
        kernel: "kernel/sched/core.c:__might_sleep (read at torvalds/linux 4353dd3b7078, a v5.x copy; merge not identified)",
        about: "mutex_lock inside an RCU read-side critical section",
        code: Use::MightSleepInRcu,
    },
    Variant {
        name: "spinlock-wrong-lock",
        expected: Expected::Violates("lockdep"),
        witness: "lockdep",
        kernel: "include/linux/lockdep.h:lockdep_assert_held (read at torvalds/linux ed7df43bc7b1, a v4.15-era copy; merge not identified)",
        about: "data guarded by a_lock is updated by a task holding b_lock",
        code: Use::SpinlockWrongLock,
    },
    Variant {
        name: "lock-order-inversion",
        expected: Expected::Violates("lock_order"),
        witness: "lock-order",
        kernel: "kernel/locking/lockdep.c:check_prev_add → check_noncircular (read at torvalds/linux baf9c8c18436, a v4.14-era copy; merge not identified)",
        about: "one task takes a_lock then a node lock, the other a node lock then a_lock: an ABBA order lockdep reports before any deadlock happens",
        code: Use::LockOrderInversion,
    },
    Variant {
        name: "nested-without-annotation",
        expected: Expected::Violates("lock_order"),
        witness: "lock-order",
        kernel: "kernel/locking/lockdep.c:check_deadlock (read at torvalds/linux baf9c8c18436, a v4.14-era copy; merge not identified); fs/dcache.c DENTRY_D_LOCK_NESTED",
        about: "a child's node lock is taken under its parent's (same class) with spin_lock instead of spin_lock_nested: possible recursive locking",
        code: Use::NestedWithoutAnnotation,
    },
    Variant {
        name: "err-ptr-deref",
        expected: Expected::Violates("err_ptr_deref"),
        witness: "errptr",
        kernel: "include/linux/err.h:IS_ERR (read at torvalds/linux 5a14da1c1b98, a v3.x-era copy; merge not identified)",
        about: "a lookup's result is used without IS_ERR, and a concurrent removal makes it ERR_PTR(-ENOENT)",
        code: Use::ErrPtrDeref,
    },
    Variant {
        name: "irq-window-nonatomic",
        expected: Expected::Violates("percpu_count"),
        witness: "irq",
        kernel: "include/linux/percpu-defs.h:__this_cpu_add (read at torvalds/linux 17737d3b5997, a v3.x-era copy; merge not identified)",
        about: "a per-CPU counter incremented as a plain load and store with IRQs enabled: an interrupt between them loses its own increment (the generic C read-modify-write; x86's __this_cpu_add is one add to %gs-relative memory, which no interrupt splits: arch/x86/include/asm/percpu.h percpu_add_op, read at torvalds/linux f4d8f354d753, merge not identified)",
        code: Use::IrqWindowNonatomic,
    },
    Variant {
        name: "cmpxchg-double-two-stores",
        expected: Expected::Violates("pair_consistent"),
        witness: "cmpxchg-double",
        kernel: "mm/slub.c:__update_cpu_freelist_fast (v6.18)",
        about: "a {freelist, tid} pair updated by two separate stores instead of one cmpxchg_double: concurrent updates tear the pair or are lost",
        code: Use::CmpxchgDoubleTwoStores,
    },
    Variant {
        name: "this-cpu-cmpxchg-double-cross-cpu",
        expected: Expected::Violates("pair_consistent"),
        witness: "cmpxchg-double",
        kernel: "mm/slub.c:__update_cpu_freelist_fast (v6.18): this_cpu_try_cmpxchg_freelist, no LOCK prefix",
        about: "the two updaters, on two CPUs, use the CPU-local this_cpu_cmpxchg_double on one shared pair: it is atomic only against its own CPU, so one update overwrites the other and both report success",
        code: Use::ThisCpuCmpxchgDoubleCrossCpu,
    },
    Variant {
        name: "synchronize-rcu-pre-v4.20",
        expected: Expected::Violates("use_after_free"),
        witness: "rcu-sched",
        kernel: "kernel/rcu: synchronize_rcu before the flavour consolidation (45975c7d21a1, 2018; \"around v4.20\" per Documentation/RCU/rcubarrier.rst, \"v5.0 and later\" per include/linux/rcupdate.h at gregkh/linux 10d525b98aaa), CONFIG_PREEMPT_RCU",
        about: "the reader relies on its spin_lock region as an RCU read-side section, which only a synchronize_rcu with consolidated flavours (around v4.20 on) waits for: the updater's grace period ends under the reader and it frees the object",
        code: Use::SynchronizeRcuPreV420,
    },
    Variant {
        name: "typesafe-access-after-unlock",
        expected: Expected::Violates("use_after_free"),
        witness: "typesafe",
        kernel: "mm/slub.c:free_slab → call_rcu(rcu_free_slab) for SLAB_TYPESAFE_BY_RCU (v6.18)",
        about: "the reader of a SLAB_TYPESAFE_BY_RCU object takes no reference and touches it after rcu_read_unlock: the owner frees it and, a grace period later, its slab page goes back to the page allocator",
        code: Use::TypesafeAccessAfterUnlock,
    },
    Variant {
        name: "mark-dead-without-recheck",
        expected: Expected::Violates("lockref_dead_ref"),
        witness: "lockref-dead",
        kernel: "fs/dcache.c:fast_dput, lock_for_kill, dentry_kill (vfs-7.3-rc5.fixes, aa98230e410f) without the count re-check under d_lock; lib/lockref.c (copy id 181051326)",
        about: "the killer drops its reference with lockref_put_return and, seeing 0, takes the lock and marks the lockref dead without checking the count again: a lockref_get_not_dead in between holds a reference on a dead dentry",
        code: Use::MarkDeadWithoutRecheck,
    },
    Variant {
        name: "lockref-get-ignores-dead",
        expected: Expected::Violates("lockref_dead_ref"),
        witness: "lockref-dead",
        kernel: "lib/lockref.c:lockref_get where fs/namei.c legitimize needs lockref_get_not_dead (lockref.c copy id 181051326)",
        about: "the getter takes its reference with lockref_get, which does not look at the count: on a dead lockref it holds a reference (the count goes from -128 to -127)",
        code: Use::LockrefGetIgnoresDead,
    },
];

const SCENARIOS: &[ScenarioRow<Plan>] = &[
    Scenario {
        name: "seqcount",
        about: "one writer updates the pair {a, b} from {0, 0} to {1, 1} inside a write section under seq_lock; one reader reads the pair (at most two tries)",
        goals: &["reader-retried"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| seqcount,
    },
    Scenario {
        name: "lockref",
        about: "d_lockref at 1: one task takes a reference with lockref_get while another takes the embedded lock and adds one under it",
        goals: &["lockref-lockless-saw-lock"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| lockref,
    },
    Scenario {
        name: "rcu",
        about: "obj#1 published in gp: a reader dereferences gp under rcu_read_lock while the updater unpublishes it and frees it through call_rcu; the GP kthread runs the callback",
        goals: &["reader-saw-object", "reader-saw-null"],
        // Unbounded it is one search of 2,093,023 executions (68 s): the
        // deep twin below keeps that proof nightly.
        loom_bound: Some(4),
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| rcu,
    },
    Scenario {
        name: "rcu-deep",
        about: "rcu with no preemption bound (deep tier: 2.1 million loom executions)",
        goals: &["reader-saw-object", "reader-saw-null"],
        loom_bound: None,
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| rcu,
    },
    Scenario {
        name: "sleep",
        about: "two tasks take mutex m; one of them also reads under rcu_read_lock",
        goals: &["mutex-taken-by-reader"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| sleep,
    },
    Scenario {
        name: "lockdep",
        about: "two tasks increment data guarded by a_lock; b_lock exists too",
        goals: &["both-updated"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| lockdep,
    },
    Scenario {
        name: "lock-order",
        about: "two tasks each take a_lock, then a parent node lock and its child's node lock (one lock class, the child nested as spin_lock_nested(…, 1)), as the dcache nests d_lock",
        goals: &["both-ordered"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| lock_order,
    },
    Scenario {
        name: "errptr",
        about: "a lookup of a table entry under tbl_lock races with its removal",
        goals: &["lookup-got-entry", "lookup-got-enoent"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| errptr,
    },
    Scenario {
        name: "irq",
        about: "one CPU: a task increments a per-CPU counter while an interrupt handler on the same CPU increments it too",
        goals: &["irq-interrupted-task"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| irq,
    },
    Scenario {
        name: "cmpxchg-double",
        about: "two tasks on two CPUs each advance the pair {freelist, tid} from {n, n} to {n+1, n+1}",
        goals: &["cmpxchg-double-retried"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| cmpxchg_double,
    },
    Scenario {
        name: "rcu-sched",
        about: "obj#1 published in gp: a reader holding r_lock (no rcu_read_lock) dereferences gp while the updater unpublishes it, waits in synchronize_rcu and frees it",
        goals: &["sched-reader-saw-object", "sched-reader-saw-null"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| rcu_sched,
    },
    Scenario {
        name: "typesafe",
        about: "obj#1 of a SLAB_TYPESAFE_BY_RCU cache, published in gp with one reference: a reader takes a reference under rcu_read_lock and reads it; the owner unpublishes it and drops its reference (the last one frees it); the GP kthread returns freed memory to the page allocator after a grace period",
        goals: &["typesafe-reader-got-ref", "slab-page-returned"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| typesafe,
    },
    Scenario {
        name: "typesafe-deep",
        about: "the typesafe scenario searched without a preemption bound (3.4M loom executions, about 6 minutes)",
        goals: &["typesafe-reader-got-ref", "slab-page-returned"],
        loom_bound: None,
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| typesafe,
    },
    Scenario {
        name: "lockref-dead",
        about: "a dentry's d_lockref at 1, held by the killer: the killer drops it (lockref_put_return) and, if it was the last, kills the dentry under the lock (lockref_mark_dead); a getter takes a reference (lockref_get_not_zero, then lockref_get_not_dead) and drops it",
        goals: &["getter-got-ref", "getter-saw-dead", "killer-marked-dead", "killer-saw-ref"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| lockref_dead,
    },
];

const INVARIANTS: &[Invariant<Check<World>>] = &[
    Invariant {
        name: "seq_consistent",
        about: "a seqcount reader that did not retry used a pair written by no half-finished write section (a = b)",
        check: Check::Step(seq_consistent),
    },
    Invariant {
        name: "percpu_count",
        about: "at the end the per-CPU counter counts every increment (task and interrupt)",
        check: Check::End(percpu_count),
    },
    Invariant {
        name: "pair_consistent",
        about: "at the end the {freelist, tid} pair is {2, 2}: both updates landed, in both words",
        check: Check::End(pair_consistent),
    },
    Invariant {
        name: "lockref_dead_ref",
        about: "no reference is held on a dead lockref (count < 0): the dcache frees a dentry once it is marked dead",
        check: Check::Step(lockref_dead_ref),
    },
];

/// A scenario's program: what it builds and runs for one misuse.
type Plan = fn(Use, &Arc<World>);

/// What the invariants read: the ghost records the scenarios leave.
#[derive(Default)]
pub struct World {
    /// seqcount: the pair the reader went on to use.
    used: Mutex<Option<(u64, u64)>>,
    /// irq: the per-CPU counter once both increments ran.
    count: Mutex<Option<u64>>,
    /// cmpxchg-double: the pair once both updates ran.
    pair: Mutex<Option<(u64, u64)>>,
    /// lockref-dead: the dentry's lockref and the references held on it.
    dentry: Mutex<Option<Arc<Dentry>>>,
    /// How the scenario renders its state for a violation.
    describe: Mutex<Option<Describe>>,
}

type Describe = Box<dyn Fn() -> String + Send + Sync>;

impl World {
    fn describe(&self, f: impl Fn() -> String + Send + Sync + 'static) {
        *ghost(&self.describe) = Some(Box::new(f));
    }
}

impl Use {
    /// Whether the misuse shows only under weak memory (found by loom, not
    /// by shuttle's sequentially consistent atomics).
    fn needs_weak_memory(self) -> bool {
        matches!(
            self,
            Use::SeqcountRetryWithoutRmb | Use::SeqcountBeginWithoutWmb
        )
    }
}

/// The primitives model.
pub struct Primitives;

impl Spec for Primitives {
    type Code = Use;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "primitives";
    const CODE: &'static [&'static str] = &["model/src/kernel/"];
    const ABOUT: &'static str = "the kernel primitives used correctly and misused once each; seqcount-retry-without-rmb and seqcount-begin-without-wmb are weak-memory bugs found by loom only";

    fn variants() -> &'static [Variant<Use>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<Plan>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Invariant<Check<World>>] {
        INVARIANTS
    }

    fn execute(how: Use, plan: &Plan, watch: &Watch<Self>) {
        let world = Arc::new(World::default());
        watch.start(&world);
        plan(how, &world);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        ghost(&w.describe).as_ref().map(|d| d()).unwrap_or_default()
    }

    fn needs(v: &Variant<Use>) -> &'static [Need] {
        const WEAK: &[Need] = &[Need::WeakMemory(
            "a weak-memory bug: shuttle and real threads on x86 are too strong to show it",
        )];
        if v.code.needs_weak_memory() {
            WEAK
        } else {
            &[]
        }
    }
}

fn seq_consistent(w: &World) -> Result<(), String> {
    match *ghost(&w.used) {
        Some((a, b)) if a != b => Err(format!("the reader used a torn pair a={a} b={b}")),
        _ => Ok(()),
    }
}

fn percpu_count(w: &World) -> Result<(), String> {
    match *ghost(&w.count) {
        Some(count) if count != 2 => Err(format!("pcpu_count={count} after two increments")),
        _ => Ok(()),
    }
}

fn pair_consistent(w: &World) -> Result<(), String> {
    match *ghost(&w.pair) {
        Some(pair) if pair != (2, 2) => {
            Err(format!("{{freelist, tid}} = {pair:?} after two updates"))
        }
        _ => Ok(()),
    }
}

fn lockref_dead_ref(w: &World) -> Result<(), String> {
    let Some(d) = ghost(&w.dentry).clone() else {
        return Ok(());
    };
    let (count, _) = d.lockref.peek();
    let held = d.holders.load(std::sync::atomic::Ordering::SeqCst);
    if count < 0 && held > 0 {
        Err(format!(
            "d_lockref is dead (count {count}) while {held} reference(s) are held on it"
        ))
    } else {
        Ok(())
    }
}

fn ghost<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// --- seqcount ------------------------------------------------------------

struct SeqState {
    lock: SpinLock,
    seq: SeqCount,
    a: Atomic,
    b: Atomic,
}

/// include/linux/seqlock.h (read at gregkh/linux 10d525b98aaa, 6.11.y
/// stable): a writer section under the associated lock, and a reader that
/// begins, reads, and retries unless told not to.
fn seqcount(how: Use, world: &Arc<World>) {
    let flavor = match how {
        Use::SeqcountRetryWithoutRmb => SeqcountFlavor::RetryWithoutRmb,
        Use::SeqcountBeginWithoutWmb => SeqcountFlavor::BeginWithoutWmb,
        _ => SeqcountFlavor::Kernel,
    };
    let s = Arc::new(SeqState {
        lock: SpinLock::new("seq_lock"),
        seq: SeqCount::with_flavor("seq", flavor),
        a: Atomic::new("a", 0),
        b: Atomic::new("b", 0),
    });
    let (obs, used) = (s.clone(), world.clone());
    world.describe(move || {
        format!(
            "seq={} a={} b={} used={:?}",
            obs.seq.peek(),
            obs.a.peek(),
            obs.b.peek(),
            *ghost(&used.used)
        )
    });
    let w = s.clone();
    let writer = exec::spawn("writer", move || {
        let t = Task::new("writer", Context::Task);
        let _f = t.enter("write_seqcount");
        let g = w.lock.spin_lock(&t);
        w.seq.write_seqcount_begin(&t);
        w.a.write_once(&t, 1);
        w.b.write_once(&t, 1);
        w.seq.write_seqcount_end(&t);
        g.unlock();
    });
    let (r, world) = (s.clone(), world.clone());
    let reader = exec::spawn("reader", move || {
        let t = Task::new("reader", Context::Task);
        let _f = t.enter("read_seqcount");
        for _ in 0..2 {
            let start = r.seq.read_seqcount_begin(&t);
            let a = r.a.read_once(&t);
            let b = r.b.read_once(&t);
            if how != Use::SeqcountNoRetry && r.seq.read_seqcount_retry(&t, start) {
                t.tracepoint("reader-retried");
                continue;
            }
            *ghost(&world.used) = Some((a, b));
            t.note("use a={} b={}", &[Val::dec(a), Val::dec(b)]);
            return;
        }
    });
    writer.join();
    reader.join();
}

// --- lockref -------------------------------------------------------------

/// lib/lockref.c (copy id 181051326, a 2018–2023 version of unknown
/// repository): a lockless lockref_get racing with a lock holder.
fn lockref(how: Use, w: &Arc<World>) {
    let flavor = if how == Use::LockrefIgnoresLock {
        LockrefFlavor::IgnoresLock
    } else {
        LockrefFlavor::Kernel
    };
    let lr = Arc::new(Lockref::with_flavor("d_lockref", 1, flavor));
    let obs = lr.clone();
    w.describe(move || {
        let (count, locked) = obs.peek();
        format!("d_lockref count={count} locked={locked}")
    });
    let l = lr.clone();
    let getter = exec::spawn("getter", move || {
        let t = Task::new("getter", Context::Task);
        let _f = t.enter("dget");
        l.lockref_get(&t);
    });
    let l = lr.clone();
    let holder = exec::spawn("holder", move || {
        let t = Task::new("holder", Context::Task);
        let _f = t.enter("dget_locked");
        let g = l.lock(&t);
        g.set_count(g.count() + 1);
        g.unlock();
    });
    getter.join();
    holder.join();
}

// --- RCU -----------------------------------------------------------------

struct Obj {
    val: Atomic,
    flags: Atomic,
}

struct RcuState {
    rcu: Rcu,
    slab: Slab<Obj>,
    gp: Atomic,
}

/// include/linux/rcupdate.h (read at gregkh/linux 10d525b98aaa, 6.11.y stable), mm/slub.c:kfree
/// (read at torvalds/linux f6db358deaea, slab-for-6.18-rc1): a reader of an
/// RCU-protected pointer against an updater that removes and frees.
fn rcu(how: Use, w: &Arc<World>) {
    let s = Arc::new(RcuState {
        rcu: Rcu::new(),
        slab: Slab::new("obj").allocated_by("kmalloc", "kfree"),
        gp: Atomic::new("gp", 0),
    });
    let main = Task::new("main", Context::Task);
    let obj = s.slab.alloc(&main, new_obj, |_| ());
    s.gp.rcu_assign_pointer(&main, obj);
    describe_rcu(w, &s);

    let r = s.clone();
    let reader = exec::spawn("reader", move || {
        let t = Task::new("reader", Context::Task);
        let _f = t.enter("reader");
        r.rcu.rcu_read_lock(&t);
        let p = r.gp.rcu_dereference(&t);
        if p == 0 && how != Use::RcuDerefUnchecked {
            t.tracepoint("reader-saw-null");
        } else {
            // Two field loads, each an access of the object's memory.
            r.slab.get(&t, p).val.read_once(&t);
            r.slab.get(&t, p).flags.read_once(&t);
            t.tracepoint("reader-saw-object");
        }
        r.rcu.rcu_read_unlock(&t);
        if how == Use::RcuUnlockTwice {
            r.rcu.rcu_read_unlock(&t);
        }
    });
    let u = s.clone();
    let updater = exec::spawn("updater", move || {
        let t = Task::new("updater", Context::Task);
        let _f = t.enter("remove");
        u.gp.rcu_assign_pointer(&t, 0);
        let free_later = |u: &Arc<RcuState>, t: &Task| {
            let s = u.clone();
            u.rcu
                .call_rcu(t, None, Val::with(obj, Show::With(obj_label)), move |t| {
                    s.slab.free(t, obj, "rcu callback")
                });
        };
        match how {
            Use::RcuFreeWithoutGracePeriod => u.slab.free(&t, obj, "kfree"),
            Use::RcuFreeTwice => {
                free_later(&u, &t);
                u.rcu.synchronize_rcu(&t);
                u.slab.free(&t, obj, "kfree");
            }
            _ => free_later(&u, &t),
        }
    });
    reader.join();
    updater.join();
    s.rcu.quiesce(&main);
}

// --- RCU read-side sections without rcu_read_lock (consolidated RCU) -------

/// kernel/rcu (the flavour consolidation of around v4.20, see
/// `RcuFlavor`), mm/slub.c:kfree (torvalds/linux f6db358deaea): a reader
/// that relies on its spinlock region (preemption disabled) as its RCU
/// read-side critical section, against an updater that unpublishes the
/// object, waits in synchronize_rcu and frees it.
fn rcu_sched(how: Use, w: &Arc<World>) {
    let flavor = if how == Use::SynchronizeRcuPreV420 {
        RcuFlavor::PreV420
    } else {
        RcuFlavor::Kernel
    };
    let s = Arc::new(RcuState {
        rcu: Rcu::with_flavor(flavor),
        slab: Slab::new("obj").allocated_by("kmalloc", "kfree"),
        gp: Atomic::new("gp", 0),
    });
    let lock = Arc::new(SpinLock::new("r_lock"));
    let main = Task::new("main", Context::Task);
    let obj = s.slab.alloc(&main, new_obj, |_| ());
    s.gp.rcu_assign_pointer(&main, obj);
    describe_rcu(w, &s);
    let r = s.clone();
    let reader = exec::spawn("reader", move || {
        let t = Task::new("reader", Context::Task);
        let _f = t.enter("reader");
        let g = lock.spin_lock(&t);
        let p = r.gp.rcu_dereference(&t);
        if p == 0 {
            t.tracepoint("sched-reader-saw-null");
        } else {
            // Two field loads, each an access of the object's memory.
            r.slab.get(&t, p).val.read_once(&t);
            r.slab.get(&t, p).flags.read_once(&t);
            t.tracepoint("sched-reader-saw-object");
        }
        g.unlock();
    });
    let u = s.clone();
    let updater = exec::spawn("updater", move || {
        let t = Task::new("updater", Context::Task);
        let _f = t.enter("remove");
        u.gp.rcu_assign_pointer(&t, 0);
        u.rcu.synchronize_rcu(&t);
        u.slab.free(&t, obj, "kfree");
    });
    reader.join();
    updater.join();
}

/// A fresh `obj` object.
fn new_obj() -> Obj {
    Obj {
        val: Atomic::new("obj.val", 7),
        flags: Atomic::new("obj.flags", 1),
    }
}

/// Renders an RCU scenario's state: gp and every object's life.
fn describe_rcu(w: &Arc<World>, s: &Arc<RcuState>) {
    let obs = s.clone();
    w.describe(move || {
        let mut objs: Vec<String> = Vec::new();
        obs.slab
            .each(|r, st, _| objs.push(format!("{}: {st:?}", obs.slab.label(r))));
        format!("gp={} {}", obs.slab.label(obs.gp.peek()), objs.join(", "))
    });
}

// --- SLAB_TYPESAFE_BY_RCU memory goes back after a grace period -------------

struct TypesafeState {
    rcu: Rcu,
    slab: Slab<TsObj>,
    gp: Atomic,
}

struct TsObj {
    refs: Atomic,
    val: Atomic,
}

/// mm/slub.c (v6.18): a SLAB_TYPESAFE_BY_RCU object looked up under
/// rcu_read_lock. The reader pins it with atomic_inc_not_zero before
/// leaving the section (its identity cannot change: nothing allocates
/// here); the owner unpublishes it and drops its reference, the last one
/// frees it, and the cache's slab page goes back after a grace period.
fn typesafe(how: Use, w: &Arc<World>) {
    let rcu = Rcu::new();
    let s = Arc::new(TypesafeState {
        slab: Slab::typesafe_by_rcu_in("tsobj", &rcu),
        rcu,
        gp: Atomic::new("gp", 0),
    });
    let main = Task::new("main", Context::Task);
    let obj = s.slab.alloc(
        &main,
        || TsObj {
            refs: Atomic::new("tsobj.refs", 1),
            val: Atomic::new("tsobj.val", 7),
        },
        |_| (),
    );
    s.gp.rcu_assign_pointer(&main, obj);
    let obs = s.clone();
    w.describe(move || {
        let mut objs: Vec<String> = Vec::new();
        obs.slab
            .each(|r, st, _| objs.push(format!("{}: {st:?}", obs.slab.label(r))));
        format!("gp={} {}", obs.slab.label(obs.gp.peek()), objs.join(", "))
    });
    let put = |s: &TypesafeState, t: &Task, obj: u64| {
        if s.slab.get(t, obj).refs.atomic_dec_and_test(t) {
            s.slab.free(t, obj, "put_obj");
        }
    };
    let r = s.clone();
    let reader = exec::spawn("reader", move || {
        let t = Task::new("reader", Context::Task);
        let _f = t.enter("reader");
        r.rcu.rcu_read_lock(&t);
        let p = r.gp.rcu_dereference(&t);
        let pinned = p != 0
            && (how == Use::TypesafeAccessAfterUnlock
                || r.slab.get(&t, p).refs.atomic_inc_not_zero(&t));
        r.rcu.rcu_read_unlock(&t);
        if pinned {
            r.slab.get(&t, p).val.read_once(&t);
            t.tracepoint("typesafe-reader-got-ref");
            if how != Use::TypesafeAccessAfterUnlock {
                put(&r, &t, p);
            }
        }
    });
    let o = s.clone();
    let owner = exec::spawn("owner", move || {
        let t = Task::new("owner", Context::Task);
        let _f = t.enter("remove");
        o.gp.rcu_assign_pointer(&t, 0);
        put(&o, &t, obj);
    });
    reader.join();
    owner.join();
    s.rcu.quiesce(&main);
}

// --- lockref: dead dentries -------------------------------------------------

/// A dentry's lockref and the references held on it (ghost).
pub struct Dentry {
    lockref: Lockref,
    holders: std::sync::atomic::AtomicU32,
}

impl Dentry {
    fn hold(&self, d: i32) {
        use std::sync::atomic::Ordering::SeqCst;
        if d > 0 {
            self.holders.fetch_add(1, SeqCst);
        } else {
            self.holders.fetch_sub(1, SeqCst);
        }
    }
}

/// fs/dcache.c (vfs-7.3-rc5.fixes): the killer's `fast_dput` drops the last
/// reference with lockref_put_return, takes d_lock and re-checks the count
/// (`fast_dput` → `lock_for_kill`) before `dentry_kill` marks the lockref
/// dead; a getter takes a reference the way dget_parent (lockref_get_not_zero)
/// and legitimize (lockref_get_not_dead) do, then drops it.
fn lockref_dead(how: Use, w: &Arc<World>) {
    let d = Arc::new(Dentry {
        lockref: Lockref::new("d_lockref", 1),
        holders: std::sync::atomic::AtomicU32::new(1),
    });
    *ghost(&w.dentry) = Some(d.clone());
    let obs = d.clone();
    w.describe(move || {
        let (count, locked) = obs.lockref.peek();
        let held = obs.holders.load(std::sync::atomic::Ordering::SeqCst);
        format!("d_lockref count={count} locked={locked}, references held={held}")
    });
    let k = d.clone();
    let killer = exec::spawn("killer", move || {
        let t = Task::new("killer", Context::Task);
        let _f = t.enter("dput");
        let lr = &k.lockref;
        let left = lr.lockref_put_return(&t);
        let g = if left < 0 {
            // Locked by someone, or not positive: the locked path.
            let g = lr.lock(&t);
            g.set_count(g.count() - 1);
            k.hold(-1);
            g
        } else {
            k.hold(-1);
            if left > 0 {
                return;
            }
            lr.lock(&t)
        };
        if g.count() != 0 && how != Use::MarkDeadWithoutRecheck {
            t.tracepoint("killer-saw-ref");
            g.unlock();
            return;
        }
        g.lockref_mark_dead();
        t.tracepoint("killer-marked-dead");
        g.unlock();
    });
    let gt = d.clone();
    let getter = exec::spawn("getter", move || {
        let t = Task::new("getter", Context::Task);
        let _f = t.enter("dget");
        let lr = &gt.lockref;
        let got = if how == Use::LockrefGetIgnoresDead {
            lr.lockref_get(&t);
            true
        } else {
            lr.lockref_get_not_zero(&t) || lr.lockref_get_not_dead(&t)
        };
        if !got {
            t.tracepoint("getter-saw-dead");
            return;
        }
        gt.hold(1);
        t.tracepoint("getter-got-ref");
        if lr.lockref_put_return(&t) < 0 {
            let g = lr.lock(&t);
            g.set_count(g.count() - 1);
            gt.hold(-1);
            g.unlock();
        } else {
            gt.hold(-1);
        }
    });
    killer.join();
    getter.join();
}

// --- sleeping in atomic context -------------------------------------------

/// kernel/sched/core.c:__might_sleep (read at torvalds/linux 4353dd3b7078,
/// a v5.x copy): a mutex taken by a task that also reads under RCU.
fn sleep(how: Use, _: &Arc<World>) {
    let m = Arc::new((
        sleeping::Mutex::new("m"),
        Rcu::new(),
        Atomic::new("shared", 0),
    ));
    let r = m.clone();
    let reader = exec::spawn("reader", move || {
        let t = Task::new("reader", Context::Task);
        let _f = t.enter("reader");
        let (mutex, rcu, shared) = (&r.0, &r.1, &r.2);
        rcu.rcu_read_lock(&t);
        shared.read_once(&t);
        if how == Use::MightSleepInRcu {
            let g = mutex.mutex_lock(&t);
            t.tracepoint("mutex-taken-by-reader");
            g.mutex_unlock();
        }
        rcu.rcu_read_unlock(&t);
        if how != Use::MightSleepInRcu {
            let g = mutex.mutex_lock(&t);
            t.tracepoint("mutex-taken-by-reader");
            g.mutex_unlock();
        }
    });
    let w = m.clone();
    let writer = exec::spawn("writer", move || {
        let t = Task::new("writer", Context::Task);
        let _f = t.enter("writer");
        let g = w.0.mutex_lock(&t);
        w.2.write_once(&t, 1);
        g.mutex_unlock();
    });
    reader.join();
    writer.join();
}

// --- lockdep ---------------------------------------------------------------

/// include/linux/lockdep.h:lockdep_assert_held (read at torvalds/linux
/// ed7df43bc7b1, a v4.15-era copy): data guarded by one lock, updated by two
/// tasks.
fn lockdep(how: Use, _: &Arc<World>) {
    let a = SpinLock::new("a_lock");
    let b = SpinLock::new("b_lock");
    let data = Locked::new(&a, 0u64);
    let s = Arc::new((a, b, data));
    let spawn_updater = |name: &'static str, wrong: bool| {
        let s = s.clone();
        exec::spawn(name, move || {
            let t = Task::new(name, Context::Task);
            let _f = t.enter("update");
            let (a, b, data) = (&s.0, &s.1, &s.2);
            let g = if wrong {
                b.spin_lock(&t)
            } else {
                a.spin_lock(&t)
            };
            data.apply(&g, |d| {
                *d += 1;
                Effect::Update {
                    scope: None,
                    parts: Parts::one(Part::Store {
                        var: "data",
                        old: Val::dec(*d - 1),
                        new: Val::dec(*d),
                    }),
                }
            });
            g.unlock();
        })
    };
    let t0 = spawn_updater("T0", false);
    let t1 = spawn_updater("T1", how == Use::SpinlockWrongLock);
    t0.join();
    t1.join();
    if s.2.exclusive(|d| *d) == 2 {
        let main = Task::new("main", Context::Task);
        main.tracepoint("both-updated");
    }
}

// --- lock order ------------------------------------------------------------

/// kernel/locking/lockdep.c:check_prev_add, check_deadlock (read at
/// torvalds/linux baf9c8c18436, a v4.14-era copy): a global lock and two
/// instances of one lock class nested parent → child, as `d_lock` is in the
/// dcache.
fn lock_order(how: Use, _: &Arc<World>) {
    let node = intern("node_lock");
    let s = Arc::new((
        SpinLock::new("a_lock"),
        SpinLock::with_class("parent.node_lock", node),
        SpinLock::with_class("child.node_lock", node),
    ));
    let spawn_locker = |name: &'static str, first: bool| {
        let s = s.clone();
        exec::spawn(name, move || {
            let t = Task::new(name, Context::Task);
            let _f = t.enter("lock_nodes");
            let (a, parent, child) = (&s.0, &s.1, &s.2);
            if !first && how == Use::LockOrderInversion {
                let p = parent.spin_lock(&t);
                let g = a.spin_lock(&t);
                drop((g, p));
                return;
            }
            let g = a.spin_lock(&t);
            let p = parent.spin_lock(&t);
            let c = if how == Use::NestedWithoutAnnotation {
                child.spin_lock(&t)
            } else {
                child.spin_lock_nested(&t, 1)
            };
            drop((c, p, g));
        })
    };
    let t0 = spawn_locker("T0", true);
    let t1 = spawn_locker("T1", false);
    t0.join();
    t1.join();
    Task::new("main", Context::Task).tracepoint("both-ordered");
}

// --- error pointers --------------------------------------------------------

/// include/linux/err.h:IS_ERR (read at torvalds/linux 5a14da1c1b98, a
/// v3.x-era copy): a lookup that returns ERR_PTR(-ENOENT) once the entry is
/// gone.
fn errptr(how: Use, _: &Arc<World>) {
    let lock = SpinLock::new("tbl_lock");
    let table = Locked::new(&lock, Some(7u64));
    let s = Arc::new((lock, table));
    let l = s.clone();
    let lookup = exec::spawn("lookup", move || {
        let t = Task::new("lookup", Context::Task);
        let _f = t.enter("lookup");
        let g = l.0.spin_lock(&t);
        let res = l.1.get(&g, |e| match e {
            Some(v) => ErrPtr::Ptr(*v),
            None => ErrPtr::Err(Errno::ENOENT),
        });
        g.unlock();
        t.note("lookup() = {}", &[res.val()]);
        if how != Use::ErrPtrDeref && res.is_err() {
            t.tracepoint("lookup-got-enoent");
            return;
        }
        let v = res.deref(&t, "lookup");
        t.note("use entry {}", &[Val::dec(v)]);
        t.tracepoint("lookup-got-entry");
    });
    let r = s.clone();
    let remove = exec::spawn("remove", move || {
        let t = Task::new("remove", Context::Task);
        let _f = t.enter("remove");
        let g = r.0.spin_lock(&t);
        r.1.apply(&g, |e| {
            *e = None;
            Effect::Note(Note::new("entry removed", &[]))
        });
        g.unlock();
    });
    lookup.join();
    remove.join();
}

/// How traces name an object of the `obj` cache.
fn obj_label(v: u64) -> String {
    if v == 0 {
        "NULL".to_string()
    } else {
        format!("obj#{v}")
    }
}

// --- interrupts and per-CPU data --------------------------------------------

struct IrqState {
    cpus: Cpus,
    count: Atomic,
    /// Ghost: 1 once the task started its update, 2 once it finished.
    task_phase: std::sync::atomic::AtomicU8,
}

/// include/linux/percpu-defs.h:__this_cpu_add (read at torvalds/linux
/// 17737d3b5997, a v3.x-era copy), include/linux/irqflags.h:local_irq_save
/// (read at torvalds/linux bd8fbdee6562, a v2.6-era copy): a per-CPU counter
/// bumped by a task and by an interrupt handler on the same CPU.
fn irq(how: Use, w: &Arc<World>) {
    use std::sync::atomic::Ordering::SeqCst;
    let s = Arc::new(IrqState {
        cpus: Cpus::new(1),
        count: Atomic::new("pcpu_count", 0),
        task_phase: std::sync::atomic::AtomicU8::new(0),
    });
    let obs = s.clone();
    w.describe(move || format!("pcpu_count={}", obs.count.peek()));
    let k = s.clone();
    let task = exec::spawn("task", move || {
        let t = Task::new("task", Context::Task);
        let _f = t.enter("this_cpu_inc");
        let on = k.cpus.run_task(&t, 0);
        k.task_phase.store(1, SeqCst);
        if how == Use::IrqWindowNonatomic {
            let v = k.count.read_once(&on);
            k.count.write_once(&on, v + 1);
        } else {
            on.local_irq_save();
            let v = k.count.read_once(&on);
            k.count.write_once(&on, v + 1);
            on.local_irq_restore();
        }
        k.task_phase.store(2, SeqCst);
        on.leave();
    });
    let i = s.clone();
    let handler = exec::spawn("irq", move || {
        let t = Task::new("irq", Context::Irq);
        let _f = t.enter("irq_handler");
        let on = i.cpus.run_irq(&t, 0);
        if i.task_phase.load(SeqCst) == 1 {
            t.tracepoint("irq-interrupted-task");
        }
        i.count.nonatomic_add(&on, 1);
        on.leave();
    });
    task.join();
    handler.join();
    *ghost(&w.count) = Some(s.count.value_at_quiescence());
}

// --- double-word cmpxchg ----------------------------------------------------

/// mm/slub.c (v6.18): the {freelist, tid} pair advanced by two tasks on two
/// CPUs, with the cross-CPU (LOCK) cmpxchg_double.
fn cmpxchg_double(how: Use, w: &Arc<World>) {
    let dw = Arc::new(DoubleWord::new("freelist_tid", 8, 0, 0));
    let obs = dw.clone();
    w.describe(move || {
        let (lo, hi) = obs.peek();
        format!("freelist={lo} tid={hi}")
    });
    let spawn_updater = |name: &'static str| {
        let d = dw.clone();
        exec::spawn(name, move || {
            let t = Task::new(name, Context::Task);
            let _f = t.enter("update_pair");
            loop {
                let lo = d.read_lo(&t);
                let hi = d.read_hi(&t);
                if how == Use::CmpxchgDoubleTwoStores {
                    d.write_lo(&t, lo + 1);
                    d.write_hi(&t, hi + 1);
                    return;
                }
                let ok = if how == Use::ThisCpuCmpxchgDoubleCrossCpu {
                    d.this_cpu_try_cmpxchg128(&t, (lo, hi), (lo + 1, hi + 1))
                } else {
                    d.try_cmpxchg128(&t, (lo, hi), (lo + 1, hi + 1))
                };
                if ok {
                    return;
                }
                t.tracepoint("cmpxchg-double-retried");
                sync::yield_now();
            }
        })
    };
    let t0 = spawn_updater("T0");
    let t1 = spawn_updater("T1");
    t0.join();
    t1.join();
    *ghost(&w.pair) = Some(dw.value_at_quiescence());
}
