//! The `freelist` model's registry, scenarios, invariants and multiset
//! reference: SLUB's per-CPU `{freelist, tid}` (mm/slub.c, v6.12) and
//! Mateusz Guzik's 8-byte proposal (15 Aug 2024).
//!
//! Contexts: a task per CPU that allocates and frees, a same-CPU interrupt
//! handler that runs a short alloc/free program at any point where the task
//! has IRQs enabled, an NMI that calls `kmalloc_nolock`, and preemption with
//! migration to the other CPU (requested by the driver thread).
//!
//! Invariants read [`Observation`]s only: lists walked through the objects'
//! free pointers, tids, and the ghost record of who holds which object.

use std::sync::{Arc, Mutex};

use arbitrary::{Arbitrary, Unstructured};
use vfsmc_model::exec;
use vfsmc_model::freelist::{obj_name, Holder, Observation, Setup, Slub, Variant as Code};
use vfsmc_model::kernel::percpu::{Cpus, OnCpu};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::Context;

use crate::{Expected, Invariant, Model, Registry, Run, Scenario, Variant};

/// The `freelist` model.
pub struct Freelist;

static VARIANTS: &[Variant] = &[
    Variant {
        name: "classic",
        expected: Expected::Holds,
        witness: "",
        kernel: "mm/slub.c:__slab_alloc_node, do_slab_free, ___slab_alloc (v6.12); kmalloc_nolock (v6.18)",
        about: "tid + CPU-local double-width cmpxchg, CPU-unique tids, slow path under the local lock",
    },
    Variant {
        name: "pointer-only",
        expected: Expected::Violates("no_double_alloc"),
        witness: "irq",
        kernel: "mm/slub.c:__update_cpu_freelist_fast (v6.12) without the tid (the ABA of the seed thread)",
        about: "the cmpxchg compares the freelist pointer only: IRQ allocs A, allocs B, frees A; the stale CAS succeeds",
    },
    Variant {
        name: "shared-tid",
        expected: Expected::Violates("freelist_integrity"),
        witness: "migrate",
        kernel: "mm/slub.c:TID_STEP, init_tid (v6.12) with the !CONFIG_PREEMPTION encoding on a preemptible kernel",
        about: "tids are not CPU-unique: a migrated free's cmpxchg lands on the other CPU's equal pair",
    },
    Variant {
        name: "load-freelist-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "slowpath",
        kernel: "mm/slub.c:___slab_alloc label load_freelist (v6.12) without next_tid",
        about: "the slow path replaces c->freelist but leaves c->tid as it was",
    },
    Variant {
        name: "flush-no-tid",
        expected: Expected::Violates("tid_monotonic"),
        witness: "flush",
        kernel: "mm/slub.c:flush_slab (v6.12) without next_tid",
        about: "a flush IPI empties c->freelist and leaves c->tid as it was",
    },
    Variant {
        name: "nolock-no-lock-check",
        expected: Expected::Violates("no_double_alloc"),
        witness: "nmi",
        kernel: "mm/slub.c:kmalloc_nolock (v6.18) without the local_lock_is_locked check (brief 5.5.5)",
        about: "an NMI's fast path pops the object the interrupted slow path is about to return",
    },
    Variant {
        name: "guzik-8byte",
        expected: Expected::Holds,
        witness: "",
        kernel: "Guzik, linux-fsdevel 15 Aug 2024 (proposal, unmerged): pending marker, IRQ fallback list",
        about: "8-byte cmpxchg; marker saved/restored; preemption off in fast paths; drain with IRQs off",
    },
    Variant {
        name: "guzik-flag",
        expected: Expected::Violates("no_double_alloc"),
        witness: "irq",
        kernel: "Guzik, 15 Aug 2024 (proposal) with the marker as a set/clear flag",
        about: "the IRQ's own allocation clears the task's marker; its free then goes to the freelist: ABA",
    },
    Variant {
        name: "guzik-preemptible",
        expected: Expected::Violates("freelist_integrity"),
        witness: "migrate",
        kernel: "Guzik, 15 Aug 2024 (proposal) with preemption enabled in the fast paths",
        about: "no tid: a migrated free's 8-byte cmpxchg succeeds on the other CPU's equal (NULL) head",
    },
    Variant {
        name: "guzik-drain-irqs-on",
        expected: Expected::Violates("conservation"),
        witness: "guzik-drain",
        kernel: "Guzik, 15 Aug 2024 (proposal) draining the fallback list without disabling IRQs",
        about: "an IRQ free pushed onto the fallback list is overwritten by the drain's store: object lost",
    },
    Variant {
        name: "guzik-no-drain",
        expected: Expected::Violates("no_stranded"),
        witness: "guzik-drain",
        kernel: "Guzik, 15 Aug 2024 (proposal) without the fallback-list drain",
        about: "objects diverted to the fallback list are never allocated again",
    },
    Variant {
        name: "guzik-nmi",
        expected: Expected::Violates("no_double_alloc"),
        witness: "guzik-nmi",
        kernel: "Guzik, 15 Aug 2024 (proposal) + mm/slub.c:kmalloc_nolock (v6.18) NMI allocations",
        about: "an NMI landing in the task's IRQs-off drain drains the same fallback head",
    },
];

/// The variant's code in the model.
fn code(name: &str) -> Code {
    match name {
        "classic" => Code::Classic,
        "pointer-only" => Code::PointerOnly,
        "shared-tid" => Code::SharedTid,
        "load-freelist-no-tid" => Code::LoadFreelistNoTid,
        "flush-no-tid" => Code::FlushNoTid,
        "nolock-no-lock-check" => Code::NolockNoLockCheck,
        "guzik-8byte" => Code::Guzik8Byte,
        "guzik-flag" => Code::GuzikFlag,
        "guzik-preemptible" => Code::GuzikPreemptible,
        "guzik-drain-irqs-on" => Code::GuzikDrainIrqsOn,
        "guzik-no-drain" => Code::GuzikNoDrain,
        "guzik-nmi" => Code::GuzikNmi,
        other => panic!("freelist: unknown variant {other}"),
    }
}

static SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "irq",
        about: "1 CPU, 3 objects on c->freelist; task: alloc, free; IRQ: alloc, alloc, free the first",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "slowpath",
        about: "1 CPU, empty c->freelist, 3 objects on the slab; task: alloc, alloc; IRQ: alloc, free",
        goals: &["load-freelist", "interrupted-alloc-fastpath"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "flush",
        about: "1 CPU, 3 objects on c->freelist; task: alloc, free, alloc; a flush IPI (flush_cpu_slab)",
        goals: &["interrupted-alloc-fastpath", "cmpxchg-retry", "load-freelist"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "nmi",
        about: "1 CPU, empty c->freelist, 1 object on the slab; task: alloc; IRQ: free its object; NMI: kmalloc_nolock",
        goals: &["nmi-inside-slowpath", "load-freelist"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "migrate",
        about: "2 CPUs, 1 object each; task on cpu0: alloc, free; IRQ on cpu1: alloc; migration to cpu1",
        goals: &["remote-free"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "guzik-drain",
        about: "1 CPU, empty c->freelist, 2 objects on the fallback list; task: alloc; IRQ: free its object",
        goals: &["drain-irq-freelist", "free-diverted"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "guzik-nmi",
        about: "1 CPU, empty c->freelist, 1 object on the fallback list; task: alloc; NMI: kmalloc_nolock",
        goals: &["drain-irq-freelist"],
        loom_bound: None,
        generated: false,
    },
    Scenario {
        name: "generated",
        about: "1 CPU + IRQ, 2-4 objects on c->freelist, programs of <= 3 ops each, from input bytes",
        goals: &[],
        loom_bound: Some(2),
        generated: true,
    },
];

static INVARIANTS: &[Invariant] = &[
    Invariant {
        name: "no_double_alloc",
        about: "no object is handed out twice, and no allocated object is on a freelist (S1)",
    },
    Invariant {
        name: "conservation",
        about: "every object is on a list (freelists, slab freelists, fallback lists) or held: none lost",
    },
    Invariant {
        name: "freelist_integrity",
        about: "each list is acyclic, on at most one list, and holds only objects of its CPU's slab (S2)",
    },
    Invariant {
        name: "tid_monotonic",
        about: "c->tid never decreases, and every change of c->freelist comes with a larger tid (S3)",
    },
    Invariant {
        name: "no_stranded",
        about: "after the threads finish, allocating until NULL on every CPU returns every free object (S7)",
    },
];

/// Whether a holding variant is checked on a hand-written scenario: the
/// kernel's design runs without the proposal's fallback list and the proposal
/// is checked in the contexts its mail covers (task, IRQ, preemption; NMIs
/// did not allocate in 2024: `guzik-nmi` is a witness only).
fn applies(variant: &str, scenario: &str) -> bool {
    let guzik = code(variant).is_guzik();
    match scenario {
        "nmi" => !guzik,
        "guzik-drain" => guzik,
        "guzik-nmi" => false,
        _ => true,
    }
}

static REGISTRY: Registry = Registry {
    name: "freelist",
    about: "mm/slub.c per-CPU ABA-safe freelist {freelist, tid} and Guzik's 8-byte proposal",
    variants: VARIANTS,
    scenarios: SCENARIOS,
    invariants: INVARIANTS,
};

impl Model for Freelist {
    fn registry(&self) -> &'static Registry {
        &REGISTRY
    }

    fn scenarios_for(&self, v: &Variant) -> Vec<&'static Scenario> {
        match v.expected {
            Expected::Violates(_) => self.scenario(v.witness).into_iter().collect(),
            Expected::Holds => SCENARIOS
                .iter()
                .filter(|s| !s.generated && applies(v.name, s.name))
                .collect(),
        }
    }
    fn execute(&self, run: &Run) {
        let plan = if run.scenario == "generated" {
            Plan::generated(&run.input)
        } else {
            Plan::named(&run.scenario)
        };
        execute(code(&run.variant), plan);
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
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            c.window();
        }
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
fn execute(variant: Code, plan: Plan) {
    let setup = plan.setup.clone();
    let slub = Arc::new(Slub::new(variant, &setup));
    let cpus = Arc::new(Cpus::new(setup.cpu_slab.len()));
    register(&slub);
    let handles: Vec<_> = plan
        .threads
        .iter()
        .cloned()
        .map(|(name, actor, ops)| {
            let (slub, cpus, setup) = (slub.clone(), cpus.clone(), setup.clone());
            exec::spawn(&name.clone(), move || {
                let run = |t: &Task, c: OnCpu| {
                    run_program(&slub, &c, t.name(), &setup, &ops);
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
    drain(&slub, &cpus);
}

/// The final check of `no_stranded`: on every CPU, allocate until NULL;
/// afterwards every object must be held by someone.
fn drain(slub: &Slub, cpus: &Cpus) {
    let t = Task::new("drain", Context::Task);
    let _f = t.enter("final_drain");
    let n = slub.observe().holders.len();
    for cpu in 0..cpus.len() {
        let c = cpus.run_task(&t, cpu);
        c.preempt_disable();
        for _ in 0..n {
            if slub.kmem_cache_alloc(&c).is_none() {
                break;
            }
        }
        c.leave();
    }
    let obs = slub.observe();
    let stranded: Vec<String> = (1..obs.holders.len())
        .filter(|&o| obs.holders[o].is_empty())
        .map(|o| format!("obj{o}"))
        .collect();
    exec::check_final("drain", "no_stranded", || {
        if stranded.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "free but never allocated again: {}",
                stranded.join(", ")
            ))
        }
    });
}

fn register(slub: &Arc<Slub>) {
    let s = slub.clone();
    exec::invariant("no_double_alloc", move || no_double_alloc(&s.observe()));
    let s = slub.clone();
    exec::invariant("conservation", move || conservation(&s.observe()));
    let s = slub.clone();
    exec::invariant("freelist_integrity", move || {
        freelist_integrity(&s.observe())
    });
    let s = slub.clone();
    let last: Mutex<Vec<Option<(u64, u64)>>> = Mutex::new(Vec::new());
    exec::invariant("tid_monotonic", move || {
        tid_monotonic(
            &s.observe(),
            &mut last.lock().unwrap_or_else(|p| p.into_inner()),
        )
    });
    let s = slub.clone();
    exec::observe(move || s.observe().render());
}

fn owners(obs: &Observation, o: usize) -> Vec<&str> {
    obs.holders[o]
        .iter()
        .filter(|(_, h)| *h == Holder::Owned)
        .map(|(w, _)| w.as_str())
        .collect()
}

/// S1: an object has at most one owner, and an owned object is on no list.
pub fn no_double_alloc(obs: &Observation) -> Result<(), String> {
    for o in 1..obs.holders.len() {
        let who = owners(obs, o);
        if who.len() > 1 {
            return Err(format!("obj{o} handed out twice ({})", who.join(", ")));
        }
        if let (Some(w), Some(ch)) = (
            who.first(),
            obs.chains()
                .into_iter()
                .find(|ch| ch.objects.contains(&(o as u64))),
        ) {
            return Err(format!(
                "obj{o}, allocated to {w}, is on {} (allocatable again)",
                ch.name
            ));
        }
    }
    Ok(())
}

/// Free + allocated + in flight covers every object: none lost.
pub fn conservation(obs: &Observation) -> Result<(), String> {
    let chains = obs.chains();
    for o in 1..obs.holders.len() {
        let listed = chains.iter().any(|ch| ch.objects.contains(&(o as u64)));
        if !listed && obs.holders[o].is_empty() {
            return Err(format!("obj{o} is on no list and held by nobody: lost"));
        }
    }
    Ok(())
}

/// S2: lists are acyclic, disjoint, and hold only their slab's objects.
pub fn freelist_integrity(obs: &Observation) -> Result<(), String> {
    let check = |ch: &vfsmc_model::freelist::Chain, slab: usize| -> Result<(), String> {
        if ch.cycle {
            return Err(format!("{} has a cycle", ch.name));
        }
        if let Some(o) = ch
            .objects
            .iter()
            .find(|&&o| obs.slab_of[o as usize] != slab)
        {
            return Err(format!(
                "{} holds obj{o} of slab{}, not of slab{slab}",
                ch.name, obs.slab_of[*o as usize]
            ));
        }
        Ok(())
    };
    for c in &obs.cpus {
        check(&c.freelist, c.slab)?;
        if let Some(irq) = &c.irq_freelist {
            check(irq, c.slab)?;
        }
    }
    for (s, ch) in obs.slabs.iter().enumerate() {
        check(ch, s)?;
    }
    let chains = obs.chains();
    for o in 1..obs.holders.len() {
        let on: Vec<&str> = chains
            .iter()
            .filter(|ch| ch.objects.contains(&(o as u64)))
            .map(|ch| ch.name.as_str())
            .collect();
        if on.len() > 1 {
            return Err(format!("obj{o} is on two lists: {}", on.join(", ")));
        }
    }
    Ok(())
}

/// S3, judged whenever the CPU is outside its IRQs-off section (where the
/// slow path's two stores are invisible to everyone who could race).
pub fn tid_monotonic(obs: &Observation, last: &mut Vec<Option<(u64, u64)>>) -> Result<(), String> {
    last.resize(obs.cpus.len(), None);
    for (i, c) in obs.cpus.iter().enumerate() {
        let (Some(tid), false) = (c.tid, c.locked) else {
            continue;
        };
        let head = c.freelist.objects.first().copied().unwrap_or(0);
        if let Some((h0, t0)) = last[i] {
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
        last[i] = Some((head, tid));
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
    let slub = Slub::new(code(variant), &setup);
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
