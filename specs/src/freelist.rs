//! The `freelist` model's registry, scenarios, invariants and multiset
//! reference: SLUB's per-CPU `{freelist, tid}` as of the v6.18 merge
//! (mm/slub.c, f6db358deaea) and Mateusz Guzik's 8-byte proposal
//! (15 Aug 2024).
//!
//! Contexts: tasks on CPUs (two may share one: preemption), a same-CPU
//! interrupt handler that runs a short program at any instant where the task
//! it interrupts has IRQs enabled, an NMI that calls `kmalloc_nolock` and
//! `kfree_nolock` (inside an IRQ handler too), the flush as a work item on
//! the CPU's kworker (process context, preemptible, pinned), and migration to
//! another CPU (requested by the driver thread). No scenario places an
//! interrupt point: every engine operation of a task on a CPU is one.
//!
//! Invariants read the allocator by reference: lists walked through the
//! objects' free pointers (fixed-size [`Chain`]s), the slabs' states, tids,
//! and the ghost record of who holds which object. Where a CPU's local lock
//! is held, its fields may be half updated, and only what a lockless reader
//! can rely on is judged.

use std::sync::{Arc, Mutex};

use arbitrary::{Arbitrary, Unstructured};
use vfsmc_model::exec;
use vfsmc_model::freelist::{obj_name, Holder, List, Lists, Setup, Slub, Variant as Code};
use vfsmc_model::kernel::percpu::{Cpus, OnCpu};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::Context;

use crate::{
    Check, Expected, Invariant, Judge, PerStep, Scenario, ScenarioRow, Spec, Tier, Variant, Watch,
};

/// The `freelist` model.
pub struct Freelist;

const VARIANTS: &[Variant<Code>] = &[
    Variant {
        name: "classic",
        expected: Expected::Holds,
        witness: "",
        kernel: "mm/slub.c:__slab_alloc_node, do_slab_free, ___slab_alloc, flush_cpu_slab, deactivate_slab, __slab_free, kmalloc_nolock, kfree_nolock (v6.18 merge f6db358deaea, !PREEMPT_RT, no CPU partial slabs)",
        about: "tid + CPU-local double-width cmpxchg, c->slab read after the tid, slow path under the local lock with its reread_slab check, flush as a work item, NMI allocations refused and NMI frees deferred while the local lock is held",
        code: Code::Classic,
    },
    Variant {
        name: "preempt-rt",
        expected: Expected::Holds,
        witness: "",
        kernel: "mm/slub.c (v6.18 merge f6db358deaea) with CONFIG_PREEMPT_RT: USE_LOCKLESS_FAST_PATH() false",
        about: "both fast paths take the local lock, a per-CPU sleeping lock that leaves preemption and IRQs on; the slow path runs with migration disabled",
        code: Code::PreemptRt,
    },
    Variant {
        name: "pointer-only",
        expected: Expected::Violates("no_double_alloc"),
        witness: "irq",
        kernel: "mm/slub.c:__update_cpu_freelist_fast (v6.18) without the tid (constructed mutant: the ABA of the seed thread)",
        about: "the cmpxchg compares the freelist pointer only: IRQ allocs A, allocs B, frees A; the stale CAS succeeds",
        code: Code::PointerOnly,
    },
    Variant {
        name: "shared-tid",
        expected: Expected::Violates("freelist_integrity"),
        witness: "migrate",
        kernel: "mm/slub.c:TID_STEP (v6.18) at its !CONFIG_PREEMPTION value 1 on a preemptible kernel, init_tid(cpu) = cpu as always (constructed mutant)",
        about: "with a step of 1, CPU 0's tid reaches CPU 1's starting tid: a migrated free's cmpxchg lands on the other CPU's equal pair",
        code: Code::SharedTid,
    },
    Variant {
        name: "load-freelist-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "slowpath",
        kernel: "mm/slub.c:___slab_alloc label load_freelist (v6.18) without next_tid (constructed mutant)",
        about: "the slow path replaces c->freelist but leaves c->tid as it was",
        code: Code::LoadFreelistNoTid,
    },
    Variant {
        name: "flush-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "flush",
        kernel: "mm/slub.c:flush_slab (v6.18) without next_tid (constructed mutant)",
        about: "the flush work item takes c->slab and c->freelist away and leaves c->tid as it was",
        code: Code::FlushNoTid,
    },
    Variant {
        name: "get-freelist-null-keeps-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "exhausted",
        kernel: "mm/slub.c:___slab_alloc (v6.18): the get_freelist-NULL path without next_tid (constructed mutant)",
        about: "the slow path finds its slab exhausted and sets c->slab to NULL without a new tid: a free that read the old slab could still succeed onto a CPU that has no slab",
        code: Code::GetFreelistNullKeepsTid,
    },
    Variant {
        name: "free-reads-slab-before-tid",
        expected: Expected::Violates("freelist_integrity"),
        witness: "deactivate",
        kernel: "mm/slub.c:do_slab_free (v6.18) reading c->slab before c->tid, against the order its barrier() comment requires (constructed mutant)",
        about: "the free sees the old slab, then the flush work and an IRQ's slow path install another slab, then it reads the new tid: its cmpxchg puts an object of the old slab on the new slab's freelist",
        code: Code::FreeReadsSlabBeforeTid,
    },
    Variant {
        name: "rt-slowpath-skips-slab-recheck",
        expected: Expected::Violates("slab_state"),
        witness: "refill-flush",
        kernel: "mm/slub.c:___slab_alloc (v6.18, CONFIG_PREEMPT_RT) without the check of c->slab under the local lock (no goto reread_slab; constructed mutant)",
        about: "the preemptible slow path read c->slab, the flush work deactivated that slab onto the node's partial list, and the slow path takes its freelist anyway: a slab frozen for a CPU that is still on the partial list",
        code: Code::RtSlowpathSkipsSlabRecheck,
    },
    Variant {
        name: "retry-load-slab-skips-flush",
        expected: Expected::Violates("conservation"),
        witness: "retry-load-slab",
        kernel: "mm/slub.c:___slab_alloc label retry_load_slab (v6.18) without its check of c->slab under the local lock (no flush of a slab an interrupt installed, no goto retry_load_slab; constructed mutant)",
        about: "the task took slab0 off the node's partial list; an IRQ in the window found c->slab NULL, adopted slab1 and left its other object on c->freelist; the task installs slab0 over it, and slab1's object is on no list",
        code: Code::RetryLoadSlabSkipsFlush,
    },
    Variant {
        name: "prefetch-loads-next-early",
        expected: Expected::Violates("no_wild_pointer"),
        witness: "two-tasks",
        kernel: "mm/slub.c:__slab_alloc_node (v6.18) with prefetch_freepointer(next) turned into a load before __update_cpu_freelist_fast (constructed mutant)",
        about: "get_freepointer_safe may return garbage, from an object a preempting task allocated and wrote meanwhile: loading through it before the cmpxchg validated it dereferences garbage",
        code: Code::PrefetchLoadsNextEarly,
    },
    Variant {
        name: "nolock-no-lock-check",
        expected: Expected::Violates("no_double_alloc"),
        witness: "nmi",
        kernel: "mm/slub.c:kmalloc_nolock (v6.18) without the in_nmi() local_lock_is_locked check (brief 5.5.5)",
        about: "an NMI's fast path pops the object the interrupted slow path is about to return",
        code: Code::NolockNoLockCheck,
    },
    Variant {
        name: "kfree-nolock-no-defer",
        expected: Expected::Violates("conservation"),
        witness: "kfree-nolock",
        kernel: "mm/slub.c:do_slab_free (v6.18) for kfree_nolock without the in_nmi() local_lock_is_locked check that defers the free (constructed mutant)",
        about: "an NMI pushes its object onto c->freelist inside the slow path, between its read of the freelist and its store: the store loses the object",
        code: Code::KfreeNolockNoDefer,
    },
    Variant {
        name: "rt-lockless-fast-path",
        expected: Expected::Violates("freelist_integrity"),
        witness: "rt",
        kernel: "mm/slub.c (v6.18) on CONFIG_PREEMPT_RT with USE_LOCKLESS_FAST_PATH() true (constructed mutant)",
        about: "on PREEMPT_RT the slow path holds a lock that leaves preemption on: a preempting task's lockless free lands on c->freelist after the preempted slow path found it empty, and the slow path drops the slab under it",
        code: Code::RtLocklessFastPath,
    },
    Variant {
        name: "guzik-8byte",
        expected: Expected::Violates("freelist_integrity"),
        witness: "deactivate",
        kernel: "Guzik, linux-fsdevel 15 Aug 2024 (proposal, unmerged): pending marker, IRQ fallback list, on mm/slub.c v6.18's slow path",
        about: "8-byte cmpxchg; marker saved/restored; preemption off in fast paths; drain with IRQs off. No tid, so a free's cmpxchg cannot see c->slab change under it: an IRQ's slow path exhausts the slab and adopts another, and the free puts its object of the old slab on the new slab's freelist",
        code: Code::Guzik8Byte,
    },
    Variant {
        name: "guzik-flag",
        expected: Expected::Violates("no_double_alloc"),
        witness: "irq",
        kernel: "Guzik, 15 Aug 2024 (proposal) with the marker as a set/clear flag",
        about: "the IRQ's own allocation clears the task's marker; its free then goes to the freelist: ABA",
        code: Code::GuzikFlag,
    },
    Variant {
        name: "guzik-preemptible",
        expected: Expected::Violates("freelist_integrity"),
        witness: "migrate",
        kernel: "Guzik, 15 Aug 2024 (proposal) with preemption enabled in the fast paths",
        about: "no tid: a migrated free's 8-byte cmpxchg succeeds on the other CPU's equal (NULL) head",
        code: Code::GuzikPreemptible,
    },
    Variant {
        name: "guzik-drain-irqs-on",
        expected: Expected::Violates("conservation"),
        witness: "guzik-drain",
        kernel: "Guzik, 15 Aug 2024 (proposal) draining the fallback list without disabling IRQs",
        about: "an IRQ free pushed onto the fallback list is overwritten by the drain's store: object lost",
        code: Code::GuzikDrainIrqsOn,
    },
    Variant {
        name: "guzik-no-drain",
        expected: Expected::Violates("no_stranded"),
        witness: "guzik-drain",
        kernel: "Guzik, 15 Aug 2024 (proposal) without the fallback-list drain",
        about: "objects diverted to the fallback list are never allocated again",
        code: Code::GuzikNoDrain,
    },
    Variant {
        name: "guzik-nmi",
        expected: Expected::Violates("no_double_alloc"),
        witness: "guzik-nmi",
        kernel: "Guzik, 15 Aug 2024 (proposal) + mm/slub.c:kmalloc_nolock (v6.18) NMI allocations",
        about: "an NMI landing in the task's IRQs-off drain drains the same fallback head",
        code: Code::GuzikNmi,
    },
];

const SCENARIOS: &[ScenarioRow<Plan>] = &[
    Scenario {
        name: "irq",
        about: "1 CPU, 3 objects on c->freelist; task: alloc, free; IRQ: alloc, alloc, free the first",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("irq"),
    },
    Scenario {
        name: "two-tasks",
        about: "1 CPU, 3 objects on c->freelist; task T0: alloc, free; task T1 on the same CPU (preemption): alloc, write it, alloc, free the first",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("two-tasks"),
    },
    Scenario {
        name: "slowpath",
        about: "1 CPU, empty c->freelist, 3 objects on the CPU's slab; task: alloc, alloc; IRQ: alloc, free",
        goals: &["load-freelist", "interrupted-alloc-fastpath"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("slowpath"),
    },
    Scenario {
        name: "flush",
        about: "1 CPU, 3 objects on c->freelist; task: alloc, free, alloc; the flush work item on the CPU's kworker (flush_cpu_slab), after which the slab is adopted again from the node's partial list",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry", "adopt-partial"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("flush"),
    },
    Scenario {
        name: "refill-flush",
        about: "PREEMPT_RT, 1 CPU, empty c->freelist, 2 objects on the CPU's slab; task: alloc (its slow path is preemptible); the flush work item on the CPU's kworker",
        goals: &["reread-slab", "adopt-partial", "load-freelist"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("refill-flush"),
    },
    Scenario {
        name: "deactivate",
        about: "1 CPU: slab0 (obj2 on c->freelist, obj1 held by the task), slab1 (obj3) on the node's partial list; task: free obj1; the flush work item; IRQ: alloc, alloc (the second finds slab0 exhausted and adopts slab1)",
        goals: &["remote-free", "adopt-partial", "slab-exhausted"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("deactivate"),
    },
    Scenario {
        name: "exhausted",
        about: "1 CPU: slab0's objects all allocated (obj1 held by the IRQ), slab1 (obj2) on the node's partial list; task: alloc (finds slab0 exhausted, drops it, adopts slab1); IRQ: free obj1",
        goals: &["slab-exhausted", "adopt-partial", "remote-free"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("exhausted"),
    },
    Scenario {
        name: "retry-load-slab",
        about: "1 CPU without a slab, slab0 (obj1, obj2) and slab1 (obj3, obj4) on the node's partial list; task: alloc (adopts a partial slab); IRQ: alloc, which can land after the task took slab0 and before it installs it, adopting slab1 itself: the task's retry_load_slab then flushes slab1 and installs slab0",
        goals: &["adopt-partial", "retry-load-slab-flush", "load-freelist"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("retry-load-slab"),
    },
    Scenario {
        name: "adopt",
        about: "2 CPUs: cpu0's slab0 (2 objects on c->freelist), cpu1 without a slab; cpu0's flush work item deactivates slab0 onto the node's partial list; task on cpu0: alloc; task on cpu1: alloc (adopts slab0)",
        goals: &["adopt-partial"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("adopt"),
    },
    Scenario {
        name: "nmi",
        about: "1 CPU, empty c->freelist, 1 object on the slab; task: alloc; IRQ: free its object; NMI: kmalloc_nolock",
        goals: &["nmi-inside-slowpath", "load-freelist"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("nmi"),
    },
    Scenario {
        name: "kfree-nolock",
        about: "1 CPU, empty c->freelist, 1 object on the slab; task: alloc; NMI: kfree_nolock its object (deferred while the task is inside the slow path)",
        goals: &["defer-free", "load-freelist"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("kfree-nolock"),
    },
    Scenario {
        name: "nmi-in-irq",
        about: "1 CPU, empty c->freelist, 1 object on the slab; IRQ: alloc (slow path); NMI landing in the IRQ handler: kfree_nolock its object, then kmalloc_nolock",
        goals: &["nmi-inside-slowpath", "defer-free"],
        loom_bound: None,
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("nmi-in-irq"),
    },
    Scenario {
        name: "rt",
        about: "1 CPU, empty c->freelist and slab; task T0: alloc; task T1 on the same CPU: free its object, alloc",
        goals: &["load-freelist"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("rt"),
    },
    Scenario {
        name: "migrate",
        about: "2 CPUs: obj1 on cpu0's c->freelist, cpu1's c->freelist empty and obj2 on its slab; task on cpu0: alloc, free; IRQ on cpu1: alloc; migration to cpu1",
        goals: &["remote-free"],
        loom_bound: Some(4),
        judge: Judge::Optimal,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("migrate"),
    },
    Scenario {
        name: "guzik-drain",
        about: "1 CPU, empty c->freelist, 2 objects on the fallback list; task: alloc; IRQ: free its object",
        goals: &["drain-irq-freelist", "free-diverted"],
        loom_bound: None,
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("guzik-drain"),
    },
    Scenario {
        name: "guzik-nmi",
        about: "1 CPU, empty c->freelist, 1 object on the fallback list; task: alloc; NMI: kmalloc_nolock",
        goals: &["drain-irq-freelist"],
        loom_bound: None,
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("guzik-nmi"),
    },
    Scenario {
        name: "two-tasks-deep",
        about: "two-tasks at preemption bound 4 (deep tier)",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("two-tasks"),
    },
    Scenario {
        name: "flush-deep",
        about: "flush at preemption bound 4 (deep tier)",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry", "adopt-partial"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("flush"),
    },
    Scenario {
        name: "deactivate-deep",
        about: "deactivate at preemption bound 4 (deep tier: 460k loom executions)",
        goals: &["remote-free", "adopt-partial", "slab-exhausted"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("deactivate"),
    },
    Scenario {
        name: "adopt-deep",
        about: "adopt at preemption bound 3 (deep tier)",
        goals: &["adopt-partial"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("adopt"),
    },
    Scenario {
        name: "nmi-deep",
        about: "nmi at preemption bound 4 (deep tier)",
        goals: &["nmi-inside-slowpath", "load-freelist"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("nmi"),
    },
    Scenario {
        name: "rt-deep",
        about: "rt at preemption bound 4 (deep tier)",
        goals: &["load-freelist"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("rt"),
    },
    Scenario {
        name: "refill-flush-deep",
        about: "refill-flush at preemption bound 4 (deep tier)",
        goals: &["reread-slab", "adopt-partial", "load-freelist"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        generated: false,
        split: false,
        tier: Tier::Deep,
        plan: |_| Plan::named("refill-flush"),
    },
    Scenario {
        name: "generated",
        about: "1 CPU + IRQ, 2-4 objects on c->freelist, programs of <= 3 ops each, from input bytes",
        goals: &[],
        loom_bound: Some(2),
        judge: Judge::Loom,
        generated: true,
        split: false,
        tier: Tier::Pr,
        plan: Plan::generated,
    },
];

const INVARIANTS: &[Invariant<Check<World>>] = &[
    Invariant {
        name: "no_double_alloc",
        about: "no object is handed out twice, and no allocated object is on a freelist (S1)",
        check: Check::Step(no_double_alloc),
    },
    Invariant {
        name: "conservation",
        about: "every object is on a list (CPU, slab, fallback and deferred lists) or held: none lost",
        check: Check::Step(conservation),
    },
    Invariant {
        name: "freelist_integrity",
        about: "each list is acyclic, links only objects, is disjoint from the others, and holds only objects of its slab; an unlocked CPU's freelist holds only objects of its c->slab, none without one (S2)",
        check: Check::Step(freelist_integrity),
    },
    Invariant {
        name: "slab_state",
        about: "an unlocked CPU's c->slab is frozen, no slab is two CPUs' c->slab, and no frozen slab is on the node's partial list",
        check: Check::Step(slab_state),
    },
    Invariant {
        name: "tid_monotonic",
        about: "an unlocked CPU's c->tid never decreases, and every change of its c->freelist or c->slab comes with a larger tid (S3)",
        check: Check::Step(tid_monotonic),
    },
    Invariant {
        name: "no_wild_pointer",
        about: "nothing dereferences as an object a value that is none (garbage read speculatively from an allocated object); raised where it happens (S6)",
        check: Check::Raised,
    },
    Invariant {
        name: "no_stranded",
        about: "after the threads finish and deferred frees run, allocating until NULL on every CPU returns every free object (S7)",
        check: Check::End(no_stranded),
    },
];

/// A CPU's `{freelist head, c->slab, tid}` as `tid_monotonic` last saw it.
type Seen = (u64, Option<usize>, u64);

/// What the invariants read: the allocator, and the last `{head, slab, tid}`
/// seen per unlocked CPU (for `tid_monotonic`).
pub struct World {
    pub slub: Slub,
    last: Mutex<Vec<Option<Seen>>>,
    /// The lists, walked once per step for the checks that read them.
    lists: PerStep<Lists>,
}

impl World {
    fn lists(&self) -> Lists {
        self.lists.get(|| self.slub.lists())
    }
}

impl Spec for Freelist {
    type Code = Code;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "freelist";
    const CODE: &'static [&'static str] = &["model/src/freelist/"];
    const ABOUT: &'static str =
        "mm/slub.c per-CPU ABA-safe freelist {freelist, tid} (v6.18) and Guzik's 8-byte proposal";

    const LIMITS: &'static [&'static str] = &[
        "no page allocator: a slow path that finds no partial slab returns NULL (new_slab never succeeds)",
        "built without CONFIG_SLUB_CPU_PARTIAL; no NUMA or pfmemalloc mismatch; no debug caches; no sheaves",
        "no slab is discarded: the node never reaches min_partial partial slabs",
        "the irq_work that frees kfree_nolock's deferred objects (and defer_deactivate_slab's slabs) runs at quiescence, not at the next IRQ-enable",
        "no kprobe or tracepoint re-entry (BPF) into ___slab_alloc's callees: __slab_alloc's -EBUSY for kmalloc_nolock is modelled but no scenario reaches it",
        "CONFIG_PREEMPT_RT's local lock: a waiter sleeps off its CPU until the holder releases it, without priority inheritance; RT scenarios have tasks only (no hardirq or NMI allocations, which RT refuses)",
    ];

    fn variants() -> &'static [Variant<Code>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<Plan>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Invariant<Check<World>>] {
        INVARIANTS
    }

    fn execute(code: Code, plan: &Plan, watch: &Watch<Self>) {
        execute(code, plan, watch);
    }

    fn render(w: &World) -> String {
        w.slub.render()
    }

    /// rt-slowpath-skips-slab-recheck installs a freelist on a CPU whose
    /// c->slab a flush has just cleared: whether the CPU's freelist without
    /// a slab (freelist_integrity) or the slab frozen and back on the node
    /// list (slab_state) is checked first depends on the schedule.
    fn also_violates(v: &Variant<Code>) -> &'static [&'static str] {
        match v.code {
            Code::RtSlowpathSkipsSlabRecheck => &["freelist_integrity"],
            _ => &[],
        }
    }

    /// The kernel's design runs without the proposal's fallback list, the
    /// proposal in the contexts its mail covers (task, IRQ, preemption; NMIs
    /// did not allocate in 2024: `guzik-nmi` is a witness only), and
    /// PREEMPT_RT with tasks only (it refuses allocations from hardirq and
    /// NMI, its IRQ handlers are threads, and it has no lockless fast path
    /// whose races the other scenarios aim at); `refill-flush` needs a slow
    /// path that can be preempted, which only PREEMPT_RT has. The proposal
    /// keeps preemption off in its fast paths, so the scenarios whose goal
    /// is a task preempting a fast path do not apply to it. A deep-tier row
    /// applies where its PR-tier scenario does.
    fn applies(code: Code, scenario: &'static str) -> bool {
        let guzik = code.is_guzik();
        let rt = code.preempt_rt();
        match scenario.strip_suffix("-deep").unwrap_or(scenario) {
            "rt" | "adopt" => !guzik,
            "two-tasks" | "flush" => !guzik && !rt,
            "refill-flush" => rt,
            "nmi" | "kfree-nolock" | "nmi-in-irq" => !guzik && !rt,
            "guzik-drain" => guzik,
            "guzik-nmi" => false,
            _ => !rt,
        }
    }
}

/// One operation of a thread's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// kmem_cache_alloc (kmalloc_nolock from NMI).
    Alloc,
    /// The caller writes the newest object it holds, over the word that held
    /// its free pointer (nothing if it holds none).
    Write,
    /// Free the oldest object this thread holds (nothing if none);
    /// kfree_nolock from NMI.
    FreeOldest,
    /// Free the newest object this thread holds (nothing if none).
    FreeNewest,
    /// Flush this CPU's slab (`flush_cpu_slab`, the work item `flush_all`
    /// queues on each CPU).
    Flush,
}

impl Op {
    /// What generated scenarios draw from: allocations, writes and frees.
    pub const ALL: [Op; 4] = [Op::Alloc, Op::Write, Op::FreeOldest, Op::FreeNewest];
}

/// Who runs a program, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    Task {
        cpu: usize,
    },
    /// The CPU's kworker running work items of a per-CPU workqueue
    /// (`flushwq`).
    Work {
        cpu: usize,
    },
    Irq {
        cpu: usize,
    },
    Nmi {
        cpu: usize,
    },
}

/// A scenario made concrete: the initial state, the threads' programs and
/// whether the driver requests a migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub setup: Setup,
    pub threads: Vec<(String, Actor, Vec<Op>)>,
    pub migrate_to: Option<usize>,
}

/// One CPU with slab0 frozen for it and `objects` objects on its freelist.
fn one_cpu(objects: u64) -> Setup {
    Setup {
        slab_of: vec![0; objects as usize + 1],
        cpu_slab: vec![Some(0)],
        cpu_freelist: vec![(1..=objects).collect()],
        slab_freelist: vec![vec![]],
        node_partial: vec![],
        irq_freelist: vec![vec![]],
        owned: vec![],
    }
}

impl Plan {
    /// The plan of a hand-written scenario.
    pub fn named(name: &str) -> Plan {
        use Op::*;
        let task = |n: &str, cpu: usize, ops: Vec<Op>| (n.to_string(), Actor::Task { cpu }, ops);
        let irq = |cpu: usize, ops: Vec<Op>| (format!("irq{cpu}"), Actor::Irq { cpu }, ops);
        let nmi = |cpu: usize, ops: Vec<Op>| (format!("nmi{cpu}"), Actor::Nmi { cpu }, ops);
        let kworker = |cpu: usize| (format!("kworker{cpu}"), Actor::Work { cpu }, vec![Flush]);
        let plan = |setup: Setup, threads| Plan {
            setup,
            threads,
            migrate_to: None,
        };
        match name {
            "irq" => plan(
                one_cpu(3),
                vec![
                    task("T0", 0, vec![Alloc, FreeNewest]),
                    irq(0, vec![Alloc, Alloc, FreeOldest]),
                ],
            ),
            "two-tasks" => plan(
                one_cpu(3),
                vec![
                    task("T0", 0, vec![Alloc, FreeNewest]),
                    task("T1", 0, vec![Alloc, Write, Alloc, FreeOldest]),
                ],
            ),
            "slowpath" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1, 2, 3]],
                    ..one_cpu(3)
                },
                vec![
                    task("T0", 0, vec![Alloc, Alloc]),
                    irq(0, vec![Alloc, FreeNewest]),
                ],
            ),
            "flush" => plan(
                one_cpu(3),
                vec![task("T0", 0, vec![Alloc, FreeNewest, Alloc]), kworker(0)],
            ),
            "refill-flush" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1, 2]],
                    ..one_cpu(2)
                },
                vec![task("T0", 0, vec![Alloc]), kworker(0)],
            ),
            "deactivate" => plan(
                Setup {
                    slab_of: vec![0, 0, 0, 1],
                    cpu_slab: vec![Some(0)],
                    cpu_freelist: vec![vec![2]],
                    slab_freelist: vec![vec![], vec![3]],
                    node_partial: vec![1],
                    irq_freelist: vec![vec![]],
                    owned: vec![(1, "T0".to_string())],
                },
                vec![
                    task("T0", 0, vec![FreeOldest]),
                    kworker(0),
                    irq(0, vec![Alloc, Alloc]),
                ],
            ),
            "exhausted" => plan(
                Setup {
                    slab_of: vec![0, 0, 1],
                    cpu_slab: vec![Some(0)],
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![], vec![2]],
                    node_partial: vec![1],
                    irq_freelist: vec![vec![]],
                    owned: vec![(1, "irq0".to_string())],
                },
                vec![task("T0", 0, vec![Alloc]), irq(0, vec![FreeOldest])],
            ),
            "retry-load-slab" => plan(
                Setup {
                    slab_of: vec![0, 0, 0, 1, 1],
                    cpu_slab: vec![None],
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1, 2], vec![3, 4]],
                    node_partial: vec![0, 1],
                    irq_freelist: vec![vec![]],
                    owned: vec![],
                },
                vec![task("T0", 0, vec![Alloc]), irq(0, vec![Alloc])],
            ),
            "adopt" => plan(
                Setup {
                    cpu_slab: vec![Some(0), None],
                    cpu_freelist: vec![vec![1, 2], vec![]],
                    irq_freelist: vec![vec![], vec![]],
                    ..one_cpu(2)
                },
                vec![
                    kworker(0),
                    task("T0", 0, vec![Alloc]),
                    task("T1", 1, vec![Alloc]),
                ],
            ),
            "nmi" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![2]],
                    owned: vec![(1, "irq0".to_string())],
                    ..one_cpu(2)
                },
                vec![
                    task("T0", 0, vec![Alloc]),
                    irq(0, vec![FreeOldest]),
                    nmi(0, vec![Alloc]),
                ],
            ),
            "kfree-nolock" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1]],
                    owned: vec![(2, "nmi0".to_string())],
                    ..one_cpu(2)
                },
                vec![task("T0", 0, vec![Alloc]), nmi(0, vec![FreeOldest])],
            ),
            "nmi-in-irq" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1]],
                    owned: vec![(2, "nmi0".to_string())],
                    ..one_cpu(2)
                },
                vec![irq(0, vec![Alloc]), nmi(0, vec![FreeOldest, Alloc])],
            ),
            "rt" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    owned: vec![(1, "T1".to_string())],
                    ..one_cpu(1)
                },
                vec![
                    task("T0", 0, vec![Alloc]),
                    task("T1", 0, vec![FreeOldest, Alloc]),
                ],
            ),
            "migrate" => Plan {
                setup: Setup {
                    slab_of: vec![0, 0, 1],
                    cpu_slab: vec![Some(0), Some(1)],
                    cpu_freelist: vec![vec![1], vec![]],
                    slab_freelist: vec![vec![], vec![2]],
                    node_partial: vec![],
                    irq_freelist: vec![vec![], vec![]],
                    owned: vec![],
                },
                threads: vec![task("T0", 0, vec![Alloc, FreeNewest]), irq(1, vec![Alloc])],
                migrate_to: Some(1),
            },
            "guzik-drain" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    irq_freelist: vec![vec![1, 2]],
                    owned: vec![(3, "irq0".to_string())],
                    ..one_cpu(3)
                },
                vec![task("T0", 0, vec![Alloc]), irq(0, vec![FreeOldest])],
            ),
            "guzik-nmi" => plan(
                Setup {
                    cpu_freelist: vec![vec![]],
                    irq_freelist: vec![vec![1]],
                    slab_freelist: vec![vec![2]],
                    ..one_cpu(2)
                },
                vec![task("T0", 0, vec![Alloc]), nmi(0, vec![Alloc])],
            ),
            other => panic!("freelist: unknown scenario {other}"),
        }
    }

    /// The plan a generated scenario's bytes describe (1 CPU: a task and an
    /// IRQ handler with 1–3 operations each, 2–4 objects on c->freelist).
    /// Short input yields the smallest plan, as `arbitrary` does.
    pub fn generated(input: &[u8]) -> Plan {
        let mut u = Unstructured::new(input);
        let objects = u.int_in_range(2..=4).unwrap_or(2);
        // A write or free with nothing held would be a no-op: it allocates
        // instead.
        let mut ops = || -> Vec<Op> {
            let n = u.int_in_range(1..=3).unwrap_or(1);
            let mut held = 0usize;
            (0..n)
                .map(|_| match u.choose(&Op::ALL).copied().unwrap_or(Op::Alloc) {
                    Op::Alloc => {
                        held += 1;
                        Op::Alloc
                    }
                    _ if held == 0 => {
                        held += 1;
                        Op::Alloc
                    }
                    Op::Write => Op::Write,
                    free => {
                        held -= 1;
                        free
                    }
                })
                .collect()
        };
        let task = ops();
        let irq = ops();
        Plan {
            setup: one_cpu(objects),
            threads: vec![
                ("T0".to_string(), Actor::Task { cpu: 0 }, task),
                ("irq0".to_string(), Actor::Irq { cpu: 0 }, irq),
            ],
            migrate_to: None,
        }
    }
}

/// Runs one thread's program.
fn run_program(slub: &Slub, c: &OnCpu, name: &str, setup: &Setup, ops: &[Op]) {
    let mut held: Vec<u64> = setup
        .owned
        .iter()
        .filter(|(_, who)| who == name)
        .map(|(o, _)| *o)
        .collect();
    let nmi = c.context() == Context::Nmi;
    for op in ops {
        match op {
            Op::Alloc => {
                let got = if nmi {
                    slub.kmalloc_nolock(c)
                } else {
                    slub.kmem_cache_alloc(c)
                };
                held.extend(got);
            }
            Op::Write => {
                if let Some(&o) = held.last() {
                    slub.init_object(c, o);
                }
            }
            Op::Flush => slub.flush_cpu_slab(c),
            Op::FreeOldest | Op::FreeNewest => {
                if held.is_empty() {
                    continue;
                }
                let at = if *op == Op::FreeOldest {
                    0
                } else {
                    held.len() - 1
                };
                let o = held.remove(at);
                if nmi {
                    slub.kfree_nolock(c, o);
                } else {
                    slub.kmem_cache_free(c, o);
                }
            }
        }
    }
}

/// One execution of `plan` on `variant`.
fn execute(variant: Code, plan: &Plan, watch: &Watch<Freelist>) {
    let setup = plan.setup.clone();
    let world = Arc::new(World {
        slub: Slub::new(variant, &setup),
        last: Mutex::new(vec![None; setup.cpu_slab.len()]),
        lists: PerStep::new(),
    });
    let cpus = Arc::new(Cpus::new(setup.cpu_slab.len()));
    watch.start(&world);
    let handles: Vec<_> = plan
        .threads
        .iter()
        .cloned()
        .map(|(name, actor, ops)| {
            let (world, cpus, setup) = (world.clone(), cpus.clone(), setup.clone());
            exec::spawn(&name.clone(), move || {
                let run = |t: &Task, c: OnCpu| {
                    run_program(&world.slub, &c, t.name(), &setup, &ops);
                    c.leave();
                };
                match actor {
                    Actor::Task { cpu } => {
                        let t = Task::new(&name, Context::Task);
                        run(&t, cpus.run_task(&t, cpu));
                    }
                    Actor::Work { cpu } => {
                        let t = Task::new(&name, Context::Kthread);
                        run(&t, cpus.run_work(&t, cpu));
                    }
                    Actor::Irq { cpu } => {
                        let t = Task::new(&name, Context::Irq);
                        run(&t, cpus.run_irq(&t, cpu));
                    }
                    Actor::Nmi { cpu } => {
                        let t = Task::new(&name, Context::Nmi);
                        run(&t, cpus.run_nmi(&t, cpu));
                    }
                }
            })
        })
        .collect();
    if let Some(to) = plan.migrate_to {
        let main = Task::new("main", Context::Kthread);
        cpus.request_migration(&main, to);
    }
    for h in handles {
        h.join();
    }
    drain(&world.slub, cpus.len());
    watch.finish("drain", &world);
}

/// Before `no_stranded` is judged, on a quiet machine of its own (no
/// migration is pending there): run every CPU's deferred frees
/// (defer_free_barrier), then on every CPU allocate until NULL.
fn drain(slub: &Slub, ncpus: usize) {
    let cpus = Cpus::new(ncpus);
    let t = Task::new("drain", Context::Task);
    let _f = t.enter("final_drain");
    for cpu in 0..cpus.len() {
        let c = cpus.run_task(&t, cpu);
        slub.defer_free_barrier(&c);
        c.leave();
    }
    for cpu in 0..cpus.len() {
        let c = cpus.run_task(&t, cpu);
        c.preempt_disable();
        for _ in 0..slub.objects() {
            if slub.kmem_cache_alloc(&c).is_none() {
                break;
            }
        }
        c.leave();
    }
}

/// S7: after the final drain every object is held by someone.
fn no_stranded(w: &World) -> Result<(), String> {
    let stranded: Vec<String> = w.slub.with_holders(|holders| {
        (1..holders.len())
            .filter(|&o| holders[o].is_empty())
            .map(|o| format!("obj{o}"))
            .collect()
    });
    if stranded.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "free but never allocated again: {}",
            stranded.join(", ")
        ))
    }
}

/// S1: an object has at most one owner, and an owned object is on no list.
pub fn no_double_alloc(w: &World) -> Result<(), String> {
    let s = &w.slub;
    let lists = w.lists();
    s.with_holders(|holders| {
        for (o, hs) in holders.iter().enumerate().skip(1) {
            let mut owners = hs.iter().filter(|(_, h)| *h == Holder::Owned);
            let Some((first, _)) = owners.next() else {
                continue;
            };
            if owners.next().is_some() {
                let who: Vec<&str> = hs
                    .iter()
                    .filter(|(_, h)| *h == Holder::Owned)
                    .map(|(w, _)| *w)
                    .collect();
                return Err(format!("obj{o} handed out twice ({})", who.join(", ")));
            }
            if let Some(ch) = lists.holding(o as u64) {
                return Err(format!(
                    "obj{o}, allocated to {first}, is on {} (allocatable again)",
                    ch.list
                ));
            }
        }
        Ok(())
    })
}

/// Free + allocated + in flight covers every object: none lost.
pub fn conservation(w: &World) -> Result<(), String> {
    let s = &w.slub;
    let lists = w.lists();
    s.with_holders(|holders| {
        for (o, hs) in holders.iter().enumerate().skip(1) {
            if hs.is_empty() && lists.holding(o as u64).is_none() {
                return Err(format!("obj{o} is on no list and held by nobody: lost"));
            }
        }
        Ok(())
    })
}

/// S2: lists are acyclic, link only objects, are disjoint, and hold only
/// objects of their slab; an unlocked CPU's freelist holds only objects of
/// its `c->slab`, none without one.
pub fn freelist_integrity(w: &World) -> Result<(), String> {
    let s = &w.slub;
    let lists = w.lists();
    for ch in lists.iter() {
        if ch.cycle {
            return Err(format!("{} has a cycle", ch.list));
        }
        if let Some(wild) = ch.wild {
            return Err(format!("{} links to {}", ch.list, obj_name(wild)));
        }
        let slab = match ch.list {
            List::Cpu(i) | List::Irq(i) => {
                let v = s.cpu_view(usize::from(i));
                if v.locked {
                    continue;
                }
                match v.slab {
                    Some(slab) => slab,
                    // The proposal's fallback list outlives a slab the
                    // kernel's slow path drops: what it holds is stranded
                    // (no_stranded), not misplaced.
                    None if ch.is_empty() || matches!(ch.list, List::Irq(_)) => continue,
                    None => {
                        return Err(format!(
                            "{} holds {} while c{i}->slab is NULL",
                            ch.list,
                            ch.render()
                        ))
                    }
                }
            }
            List::Slab(i) => usize::from(i),
            List::Deferred(_) => continue,
        };
        if let Some(o) = ch.objects().find(|&o| s.slab_of(o) != slab) {
            return Err(format!(
                "{} holds obj{o} of slab{}, not of slab{slab}",
                ch.list,
                s.slab_of(o)
            ));
        }
    }
    for o in 1..=s.objects() as u64 {
        let mut on = lists.iter().filter(|ch| ch.contains(o));
        if let (Some(a), Some(b)) = (on.next(), on.next()) {
            let mut names = vec![a.list.to_string(), b.list.to_string()];
            names.extend(on.map(|c| c.list.to_string()));
            return Err(format!("obj{o} is on two lists: {}", names.join(", ")));
        }
    }
    Ok(())
}

/// An unlocked CPU's slab is frozen, no slab is two CPUs' slab, and no
/// frozen slab is on the node's partial list.
pub fn slab_state(w: &World) -> Result<(), String> {
    let s = &w.slub;
    let mut cpu_of = [None; 8];
    for i in 0..s.ncpus() {
        let v = s.cpu_view(i);
        let Some(slab) = v.slab else {
            continue;
        };
        if let Some(j) = cpu_of[slab] {
            return Err(format!("slab{slab} is the slab of cpu{j} and of cpu{i}"));
        }
        cpu_of[slab] = Some(i);
        if !v.locked && !s.slab_view(slab).frozen {
            return Err(format!("c{i}->slab is slab{slab}, which is not frozen"));
        }
    }
    for slab in 0..s.nslabs() {
        let v = s.slab_view(slab);
        if v.frozen && v.on_partial {
            return Err(format!(
                "slab{slab} is frozen for a CPU and on the node's partial list"
            ));
        }
    }
    Ok(())
}

/// S3, judged whenever the CPU is outside its local-lock section (where the
/// slow path's plain stores are invisible to everyone who could race).
pub fn tid_monotonic(w: &World) -> Result<(), String> {
    let mut last = w.last.lock().unwrap_or_else(|p| p.into_inner());
    for (i, last) in last.iter_mut().enumerate() {
        let (head, slab, tid, locked) = w.slub.cpu_head(i);
        let Some(tid) = tid else {
            continue;
        };
        if locked {
            continue;
        }
        if let Some((h0, s0, t0)) = *last {
            if tid < t0 {
                return Err(format!("c{i}->tid went back from {t0} to {tid}"));
            }
            if tid == t0 && head != h0 {
                return Err(format!(
                    "c{i}->freelist changed {}→{} without a tid bump (tid {tid})",
                    obj_name(h0),
                    obj_name(head)
                ));
            }
            if tid == t0 && slab != s0 {
                let name = |s: Option<usize>| s.map_or("NULL".to_string(), |s| format!("slab{s}"));
                return Err(format!(
                    "c{i}->slab changed {}→{} without a tid bump (tid {tid})",
                    name(s0),
                    name(slab)
                ));
            }
        }
        *last = Some((head, slab, tid));
    }
    Ok(())
}

/// The sequential reference: the multiset of free objects. An allocation
/// must return a free object (NULL only when none is free, on one CPU), a
/// free must return an allocated one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Multiset {
    free: Vec<u64>,
}

impl Multiset {
    pub fn new(free: impl IntoIterator<Item = u64>) -> Multiset {
        let mut free: Vec<u64> = free.into_iter().collect();
        free.sort_unstable();
        Multiset { free }
    }

    /// Judges an allocation's result.
    pub fn alloc(&mut self, got: Option<u64>) -> Result<(), String> {
        match got {
            None if self.free.is_empty() => Ok(()),
            None => Err(format!("NULL while {:?} are free", self.free)),
            Some(o) => match self.free.iter().position(|&f| f == o) {
                Some(i) => {
                    self.free.remove(i);
                    Ok(())
                }
                None => Err(format!("returned obj{o}, which is not free")),
            },
        }
    }

    /// Records a free.
    pub fn free(&mut self, o: u64) -> Result<(), String> {
        if self.free.contains(&o) {
            return Err(format!("obj{o} freed twice"));
        }
        self.free.push(o);
        self.free.sort_unstable();
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }
}

/// Runs a single task's program sequentially on `variant` (inside an engine)
/// and judges every result against the [`Multiset`] reference.
pub fn check_sequential(variant: &str, objects: u64, ops: &[Op]) -> Result<(), String> {
    let setup = one_cpu(objects);
    let code = VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let slub = Slub::new(code, &setup);
    let cpus = Cpus::new(1);
    let t = Task::new("T0", Context::Task);
    let c = cpus.run_task(&t, 0);
    let mut reference = Multiset::new(1..=objects);
    let mut held: Vec<u64> = Vec::new();
    for op in ops {
        match op {
            Op::Alloc => {
                let got = slub.kmem_cache_alloc(&c);
                reference.alloc(got)?;
                held.extend(got);
            }
            Op::Write => {
                if let Some(&o) = held.last() {
                    slub.init_object(&c, o);
                }
            }
            Op::FreeOldest | Op::FreeNewest if !held.is_empty() => {
                let at = if *op == Op::FreeOldest {
                    0
                } else {
                    held.len() - 1
                };
                let o = held.remove(at);
                slub.kmem_cache_free(&c, o);
                reference.free(o)?;
            }
            Op::Flush => slub.flush_cpu_slab(&c),
            Op::FreeOldest | Op::FreeNewest => {}
        }
    }
    c.leave();
    Ok(())
}
