//! The `freelist` model's registry, scenarios, invariants and multiset
//! reference: SLUB's per-CPU `{freelist, tid}` (mm/slub.c, v6.12) and
//! Mateusz Guzik's 8-byte proposal (15 Aug 2024).
//!
//! Contexts: a task per CPU that allocates and frees, a same-CPU interrupt
//! handler that runs a short alloc/free program at any point where the task
//! has IRQs enabled, an NMI that calls `kmalloc_nolock`, and preemption with
//! migration to the other CPU (requested by the driver thread).
//!
//! Invariants read the allocator by reference: lists walked through the
//! objects' free pointers (fixed-size [`Chain`]s), tids, and the ghost
//! record of who holds which object.

use std::sync::{Arc, Mutex};

use arbitrary::{Arbitrary, Unstructured};
use vfsmc_model::exec;
use vfsmc_model::freelist::{obj_name, Holder, List, Lists, Setup, Slub, Variant as Code};
use vfsmc_model::kernel::percpu::{Cpus, OnCpu};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::Context;

use crate::{
    Check, Expected, Invariant, PerStep, Scenario, ScenarioRow, Spec, Tier, Variant, Watch,
};

/// The `freelist` model.
pub struct Freelist;

const VARIANTS: &[Variant<Code>] = &[
    Variant {
        name: "classic",
        expected: Expected::Holds,
        witness: "",
        kernel: "mm/slub.c:__slab_alloc_node, do_slab_free, ___slab_alloc (v6.12); kmalloc_nolock (v6.18)",
        about: "tid + CPU-local double-width cmpxchg, CPU-unique tids, slow path under the local lock",
        code: Code::Classic,
    },
    Variant {
        name: "pointer-only",
        expected: Expected::Violates("no_double_alloc"),
        witness: "irq",
        kernel: "mm/slub.c:__update_cpu_freelist_fast (v6.12) without the tid (the ABA of the seed thread)",
        about: "the cmpxchg compares the freelist pointer only: IRQ allocs A, allocs B, frees A; the stale CAS succeeds",
        code: Code::PointerOnly,
    },
    Variant {
        name: "shared-tid",
        expected: Expected::Violates("freelist_integrity"),
        witness: "migrate",
        kernel: "mm/slub.c:TID_STEP, init_tid (v6.12) with the !CONFIG_PREEMPTION encoding on a preemptible kernel",
        about: "tids are not CPU-unique: a migrated free's cmpxchg lands on the other CPU's equal pair",
        code: Code::SharedTid,
    },
    Variant {
        name: "load-freelist-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "slowpath",
        kernel: "mm/slub.c:___slab_alloc label load_freelist (v6.12) without next_tid",
        about: "the slow path replaces c->freelist but leaves c->tid as it was",
        code: Code::LoadFreelistNoTid,
    },
    Variant {
        name: "flush-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "flush",
        kernel: "mm/slub.c:flush_slab (v6.12) without next_tid",
        about: "a flush IPI empties c->freelist and leaves c->tid as it was",
        code: Code::FlushNoTid,
    },
    Variant {
        name: "nolock-no-lock-check",
        expected: Expected::Violates("no_double_alloc"),
        witness: "nmi",
        kernel: "mm/slub.c:kmalloc_nolock (v6.18) without the local_lock_is_locked check (brief 5.5.5)",
        about: "an NMI's fast path pops the object the interrupted slow path is about to return",
        code: Code::NolockNoLockCheck,
    },
    Variant {
        name: "guzik-8byte",
        expected: Expected::Holds,
        witness: "",
        kernel: "Guzik, linux-fsdevel 15 Aug 2024 (proposal, unmerged): pending marker, IRQ fallback list",
        about: "8-byte cmpxchg; marker saved/restored; preemption off in fast paths; drain with IRQs off",
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
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("irq"),
    },
    Scenario {
        name: "slowpath",
        about: "1 CPU, empty c->freelist, 3 objects on the slab; task: alloc, alloc; IRQ: alloc, free",
        goals: &["load-freelist", "interrupted-alloc-fastpath"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("slowpath"),
    },
    Scenario {
        name: "flush",
        about: "1 CPU, 3 objects on c->freelist; task: alloc, free, alloc; a flush IPI (flush_cpu_slab)",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry", "load-freelist"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("flush"),
    },
    Scenario {
        name: "nmi",
        about: "1 CPU, empty c->freelist, 1 object on the slab; task: alloc; IRQ: free its object; NMI: kmalloc_nolock",
        goals: &["nmi-inside-slowpath", "load-freelist"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("nmi"),
    },
    Scenario {
        name: "migrate",
        about: "2 CPUs, 1 object each; task on cpu0: alloc, free; IRQ on cpu1: alloc; migration to cpu1",
        goals: &["remote-free"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("migrate"),
    },
    Scenario {
        name: "guzik-drain",
        about: "1 CPU, empty c->freelist, 2 objects on the fallback list; task: alloc; IRQ: free its object",
        goals: &["drain-irq-freelist", "free-diverted"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("guzik-drain"),
    },
    Scenario {
        name: "guzik-nmi",
        about: "1 CPU, empty c->freelist, 1 object on the fallback list; task: alloc; NMI: kmalloc_nolock",
        goals: &["drain-irq-freelist"],
        loom_bound: None,
        generated: false,
        tier: Tier::Pr,
        plan: |_| Plan::named("guzik-nmi"),
    },
    Scenario {
        name: "generated",
        about: "1 CPU + IRQ, 2-4 objects on c->freelist, programs of <= 3 ops each, from input bytes",
        goals: &[],
        loom_bound: Some(2),
        generated: true,
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
        about: "every object is on a list (freelists, slab freelists, fallback lists) or held: none lost",
        check: Check::Step(conservation),
    },
    Invariant {
        name: "freelist_integrity",
        about: "each list is acyclic, on at most one list, and holds only objects of its CPU's slab (S2)",
        check: Check::Step(freelist_integrity),
    },
    Invariant {
        name: "tid_monotonic",
        about: "c->tid never decreases, and every change of c->freelist comes with a larger tid (S3)",
        check: Check::Step(tid_monotonic),
    },
    Invariant {
        name: "no_stranded",
        about: "after the threads finish, allocating until NULL on every CPU returns every free object (S7)",
        check: Check::End(no_stranded),
    },
];

/// What the invariants read: the allocator, and the last `{head, tid}`
/// seen per CPU (for `tid_monotonic`).
pub struct World {
    pub slub: Slub,
    last: Mutex<Vec<Option<(u64, u64)>>>,
    /// The lists, walked once per step for the three checks that read them.
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
    const ABOUT: &'static str =
        "mm/slub.c per-CPU ABA-safe freelist {freelist, tid} and Guzik's 8-byte proposal";

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

    /// The kernel's design runs without the proposal's fallback list and the
    /// proposal is checked in the contexts its mail covers (task, IRQ,
    /// preemption; NMIs did not allocate in 2024: `guzik-nmi` is a witness
    /// only).
    fn applies(code: Code, scenario: &'static str) -> bool {
        let guzik = code.is_guzik();
        match scenario {
            "nmi" => !guzik,
            "guzik-drain" => guzik,
            "guzik-nmi" => false,
            _ => true,
        }
    }
}

/// One operation of a thread's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Op {
    Alloc,
    /// Free the oldest object this thread holds (nothing if none).
    FreeOldest,
    /// Free the newest object this thread holds (nothing if none).
    FreeNewest,
    /// Flush this CPU's slab (`flush_cpu_slab`, as the IPI of
    /// `flush_all` runs it).
    Flush,
}

impl Op {
    /// What generated scenarios draw from: allocations and frees.
    pub const ALL: [Op; 3] = [Op::Alloc, Op::FreeOldest, Op::FreeNewest];
}

/// Who runs a program, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    Task { cpu: usize },
    Irq { cpu: usize },
    Nmi { cpu: usize },
}

/// A scenario made concrete: the initial state, the threads' programs and
/// whether the driver requests a migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub setup: Setup,
    pub threads: Vec<(String, Actor, Vec<Op>)>,
    pub migrate_to: Option<usize>,
}

fn one_cpu(objects: u64) -> Setup {
    Setup {
        slab_of: vec![0; objects as usize + 1],
        cpu_slab: vec![0],
        cpu_freelist: vec![(1..=objects).collect()],
        slab_freelist: vec![vec![]],
        irq_freelist: vec![vec![]],
        owned: vec![],
    }
}

impl Plan {
    /// The plan of a hand-written scenario.
    pub fn named(name: &str) -> Plan {
        use Op::*;
        let task = |ops: Vec<Op>| ("T0".to_string(), Actor::Task { cpu: 0 }, ops);
        let irq = |cpu: usize, ops: Vec<Op>| (format!("irq{cpu}"), Actor::Irq { cpu }, ops);
        match name {
            "irq" => Plan {
                setup: one_cpu(3),
                threads: vec![
                    task(vec![Alloc, FreeNewest]),
                    irq(0, vec![Alloc, Alloc, FreeOldest]),
                ],
                migrate_to: None,
            },
            "slowpath" => Plan {
                setup: Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![1, 2, 3]],
                    ..one_cpu(3)
                },
                threads: vec![task(vec![Alloc, Alloc]), irq(0, vec![Alloc, FreeNewest])],
                migrate_to: None,
            },
            "flush" => Plan {
                setup: one_cpu(3),
                threads: vec![task(vec![Alloc, FreeNewest, Alloc]), irq(0, vec![Flush])],
                migrate_to: None,
            },
            "nmi" => Plan {
                setup: Setup {
                    cpu_freelist: vec![vec![]],
                    slab_freelist: vec![vec![2]],
                    owned: vec![(1, "irq0".to_string())],
                    ..one_cpu(2)
                },
                threads: vec![
                    task(vec![Alloc]),
                    irq(0, vec![FreeOldest]),
                    ("nmi0".to_string(), Actor::Nmi { cpu: 0 }, vec![Alloc]),
                ],
                migrate_to: None,
            },
            "migrate" => Plan {
                setup: Setup {
                    slab_of: vec![0, 0, 1],
                    cpu_slab: vec![0, 1],
                    cpu_freelist: vec![vec![1], vec![2]],
                    slab_freelist: vec![vec![], vec![]],
                    irq_freelist: vec![vec![], vec![]],
                    owned: vec![],
                },
                threads: vec![task(vec![Alloc, FreeNewest]), irq(1, vec![Alloc])],
                migrate_to: Some(1),
            },
            "guzik-drain" => Plan {
                setup: Setup {
                    cpu_freelist: vec![vec![]],
                    irq_freelist: vec![vec![1, 2]],
                    owned: vec![(3, "irq0".to_string())],
                    ..one_cpu(3)
                },
                threads: vec![task(vec![Alloc]), irq(0, vec![FreeOldest])],
                migrate_to: None,
            },
            "guzik-nmi" => Plan {
                setup: Setup {
                    cpu_freelist: vec![vec![]],
                    irq_freelist: vec![vec![1]],
                    slab_freelist: vec![vec![2]],
                    ..one_cpu(2)
                },
                threads: vec![
                    task(vec![Alloc]),
                    ("nmi0".to_string(), Actor::Nmi { cpu: 0 }, vec![Alloc]),
                ],
                migrate_to: None,
            },
            other => panic!("freelist: unknown scenario {other}"),
        }
    }

    /// The plan a generated scenario's bytes describe (1 CPU: a task and an
    /// IRQ handler with 1–3 operations each, 2–4 objects on c->freelist).
    /// Short input yields the smallest plan, as `arbitrary` does.
    pub fn generated(input: &[u8]) -> Plan {
        let mut u = Unstructured::new(input);
        let objects = u.int_in_range(2..=4).unwrap_or(2);
        // A free with nothing to free would be a no-op: it allocates instead.
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
    for op in ops {
        match op {
            Op::Alloc => {
                let got = if c.context() == Context::Nmi {
                    slub.kmalloc_nolock(c)
                } else {
                    slub.kmem_cache_alloc(c)
                };
                held.extend(got);
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
                slub.kmem_cache_free(c, held.remove(at));
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

/// Before `no_stranded` is judged: on every CPU, allocate until NULL (on a
/// quiet machine of its own: no migration is pending there).
fn drain(slub: &Slub, ncpus: usize) {
    let cpus = Cpus::new(ncpus);
    let t = Task::new("drain", Context::Task);
    let _f = t.enter("final_drain");
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

/// S2: lists are acyclic, disjoint, and hold only their slab's objects.
pub fn freelist_integrity(w: &World) -> Result<(), String> {
    let s = &w.slub;
    let lists = w.lists();
    for ch in lists.iter() {
        if ch.cycle {
            return Err(format!("{} has a cycle", ch.list));
        }
        let slab = match ch.list {
            List::Cpu(i) | List::Irq(i) => s.cpu_slab(usize::from(i)),
            List::Slab(i) => usize::from(i),
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

/// S3, judged whenever the CPU is outside its IRQs-off section (where the
/// slow path's two stores are invisible to everyone who could race).
pub fn tid_monotonic(w: &World) -> Result<(), String> {
    let mut last = w.last.lock().unwrap_or_else(|p| p.into_inner());
    for (i, last) in last.iter_mut().enumerate() {
        let (Some(tid), false, head) = ({
            let (head, tid, locked) = w.slub.cpu_head(i);
            (tid, locked, head)
        }) else {
            continue;
        };
        if let Some((h0, t0)) = *last {
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
        }
        *last = Some((head, tid));
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
