//! The checker's own features, each shown on a purpose-built model that must
//! fail (or must hold) for a known reason: every engine finds a lost update;
//! traces are deterministic and replay byte for byte; failures come back
//! with few preemptions; unreached goals, deadlocks, livelocks and model
//! panics are reported as such.

use std::sync::Arc;

use vfsmc::check::{Check, Verdict};
use vfsmc::engine::{self, Budget, EngineKind, ScheduleError};
use vfsmc::render::text_trace;
use vfsmc_model::exec;
use vfsmc_model::kernel::atomic::Atomic;
use vfsmc_model::kernel::rcu::{ObjRef, Slab};
use vfsmc_model::kernel::spinlock::SpinLock;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::sync;
use vfsmc_model::trace::Context;
use vfsmc_specs::{
    Check as Checked, Expected, Invariant, Model, Registered, Scenario, ScenarioRow,
};
use vfsmc_specs::{Judge, Spec, Tier};
use vfsmc_specs::{Variant, Watch};

/// Test models: one variant per checker behaviour under test.
struct Toy;

/// What each toy variant does.
#[derive(Clone, Copy, Debug)]
enum Does {
    LostUpdate,
    AtomicInc,
    Abba,
    AbbaRaw,
    SpinForever,
    Oops,
    /// T0 drops its reference with a put that ignores the result, then
    /// touches the object; T1's atomic_dec_and_test frees it.
    PutThenTouch,
    /// The same with T0's touch before its put.
    TouchThenPut,
    /// Message passing: T0 writes data then flag, T1 reads flag then data
    /// (`release`: smp_store_release / smp_load_acquire, else ONCE).
    MessagePassing {
        release: bool,
    },
    /// Store buffering: each thread writes its flag and reads the other's
    /// (`mb`: smp_mb between).
    StoreBuffering {
        mb: bool,
    },
    /// Coherence: T0 writes x = 1 then x = 2; T1 reads x twice.
    /// `expects_fresh` wrongly expects T1's two reads to agree.
    Coherence {
        expects_fresh: bool,
    },
    /// T1 sets a flag and notifies under the mutex; T0 tests the flag
    /// (`unlocked`: before taking the mutex, so the notification can come
    /// between its test and its wait) and waits for it.
    WakeUp {
        unlocked: bool,
    },
}

const VARIANTS: &[Variant<Does>] = &[
    Variant {
        name: "lost-update",
        expected: Expected::Violates("count"),
        witness: "two",
        kernel: "none: a READ_ONCE/WRITE_ONCE increment by two threads",
        about: "an increment split into a load and a store loses an update",
        code: Does::LostUpdate,
    },
    Variant {
        name: "atomic-inc",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: atomic_add_return by two threads",
        about: "the same increment as one atomic RMW",
        code: Does::AtomicInc,
    },
    Variant {
        name: "abba",
        expected: Expected::Violates("lock_order"),
        witness: "two",
        kernel: "none: two spinlocks taken in opposite orders",
        about: "ABBA lock order: lockdep reports it before the threads deadlock",
        code: Does::Abba,
    },
    Variant {
        name: "abba-raw",
        expected: Expected::Violates("deadlock"),
        witness: "two",
        kernel: "none: two engine mutexes (no lockdep) taken in opposite orders",
        about: "ABBA on locks lockdep does not see: the engine finds the deadlock",
        code: Does::AbbaRaw,
    },
    Variant {
        name: "spin-forever",
        expected: Expected::Violates("livelock"),
        witness: "two",
        kernel: "none: a wait for a flag nobody sets",
        about: "a spin loop that never ends",
        code: Does::SpinForever,
    },
    Variant {
        name: "oops",
        expected: Expected::Violates("model_panic"),
        witness: "two",
        kernel: "none",
        about: "a bug in model code itself",
        code: Does::Oops,
    },
    Variant {
        name: "put-then-touch",
        expected: Expected::Violates("use_after_free"),
        witness: "two",
        kernel: "none: a put (atomic_sub) followed by an access, against a put that frees",
        about: "a use-after-free whose only evidence is the slab's ghost state",
        code: Does::PutThenTouch,
    },
    Variant {
        name: "touch-then-put",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: an access followed by a put, against a put that frees",
        about: "the access while the reference is held",
        code: Does::TouchThenPut,
    },
    Variant {
        name: "mp",
        expected: Expected::Violates("message_passing"),
        witness: "two",
        kernel: "none: MP+poonceonces",
        about: "a reader sees the flag but not the data written before it",
        code: Does::MessagePassing { release: false },
    },
    Variant {
        name: "mp-release-acquire",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: MP+pooncerelease+poacquireonce",
        about: "the flag's release store and acquire load order the data",
        code: Does::MessagePassing { release: true },
    },
    Variant {
        name: "sb",
        expected: Expected::Violates("store_buffering"),
        witness: "two",
        kernel: "none: SB+poonceonces",
        about: "both threads read the other's flag as 0",
        code: Does::StoreBuffering { mb: false },
    },
    Variant {
        name: "sb-mb",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: SB+fencembonceonces",
        about: "smp_mb between each store and load forbids both zeros",
        code: Does::StoreBuffering { mb: true },
    },
    Variant {
        name: "corr",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: CoRR+poonceonce+Once",
        about: "a later read never goes back in coherence",
        code: Does::Coherence {
            expects_fresh: false,
        },
    },
    Variant {
        name: "corr-expects-fresh",
        expected: Expected::Violates("coherence"),
        witness: "two",
        kernel: "none: CoRR with a wrong expectation",
        about: "two reads of a changing location may differ",
        code: Does::Coherence {
            expects_fresh: true,
        },
    },
    Variant {
        name: "lost-wakeup",
        expected: Expected::Violates("deadlock"),
        witness: "two",
        kernel: "none: a flag tested outside the lock its waker holds",
        about: "the notification comes between the test and the wait: the waiter sleeps for good",
        code: Does::WakeUp { unlocked: true },
    },
    Variant {
        name: "wakeup-under-lock",
        expected: Expected::Holds,
        witness: "",
        kernel: "none: a flag tested under the lock its waker holds",
        about: "the test and the wait are one step for the waker",
        code: Does::WakeUp { unlocked: false },
    },
];

const SCENARIOS: &[ScenarioRow<()>] = &[
    Scenario {
        name: "two",
        about: "two threads",
        goals: &["both-ran"],
        loom_bound: None,
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: |_| (),
    },
    Scenario {
        name: "vacuous",
        about: "declares a goal no execution reaches",
        goals: &["never"],
        loom_bound: None,
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: |_| (),
    },
];

/// The toy's shared state.
struct Shared {
    counter: Atomic,
    locks: (SpinLock, SpinLock),
    raw: (sync::Mutex, sync::Mutex),
    /// One object whose memory is its refcount, with a reference per thread.
    objects: Slab<Atomic>,
    /// Two locations and two threads' registers for the memory-model toys.
    x: Atomic,
    y: Atomic,
    regs: std::sync::Mutex<[[u64; 2]; 2]>,
    /// The flag and wait queue of the wake-up toys.
    wake: (sync::Mutex, sync::Condvar),
    does: Does,
}

/// The object of `Shared::objects`.
const OBJ: ObjRef = 1;

/// The put-then-touch toys: `first_put` is T0's order.
fn put_then_use(objects: &Slab<Atomic>, t: &Task, me: usize, first_put: bool) {
    let refs = objects.get(t, OBJ);
    if me == 1 {
        if refs.atomic_dec_and_test(t) {
            objects.free(t, OBJ, "put");
        }
        return;
    }
    if first_put {
        refs.atomic_sub(t, 1);
        objects.get(t, OBJ);
    } else {
        objects.get(t, OBJ);
        refs.atomic_sub(t, 1);
    }
}

const INVARIANTS: &[Invariant<Checked<Shared>>] = &[
    Invariant {
        name: "count",
        about: "two increments give 2",
        check: Checked::End(count),
    },
    Invariant {
        name: "message_passing",
        about: "a reader that saw the flag sees the data",
        check: Checked::End(message_passing),
    },
    Invariant {
        name: "store_buffering",
        about: "some thread sees the other's flag",
        check: Checked::End(store_buffering),
    },
    Invariant {
        name: "coherence",
        about: "T1's reads of x follow its coherence (and, where expected, agree)",
        check: Checked::End(coherence),
    },
];

fn regs(s: &Shared) -> [[u64; 2]; 2] {
    *s.regs.lock().unwrap()
}

fn message_passing(s: &Shared) -> Result<(), String> {
    match (s.does, regs(s)[1]) {
        (Does::MessagePassing { .. }, [1, 0]) => Err("T1 saw flag = 1 and data = 0".into()),
        _ => Ok(()),
    }
}

fn store_buffering(s: &Shared) -> Result<(), String> {
    match (s.does, regs(s)) {
        (Does::StoreBuffering { .. }, [[0, _], [0, _]]) => Err("both threads read 0".into()),
        _ => Ok(()),
    }
}

fn coherence(s: &Shared) -> Result<(), String> {
    let Does::Coherence { expects_fresh } = s.does else {
        return Ok(());
    };
    match regs(s)[1] {
        [a, b] if a > b => Err(format!("T1 read x = {a} and then x = {b}")),
        [a, b] if expects_fresh && a != b => Err(format!("T1 read x = {a} and then x = {b}")),
        _ => Ok(()),
    }
}

/// The memory-model toys' thread `me`: what it reads goes to its registers.
fn litmus_thread(does: Does, s: &Shared, t: &Task, me: usize) {
    let (x, y) = (&s.x, &s.y);
    let r = match (does, me) {
        (Does::MessagePassing { release }, 0) => {
            x.write_once(t, 1);
            if release {
                y.store_release(t, 1);
            } else {
                y.write_once(t, 1);
            }
            return;
        }
        (Does::MessagePassing { release }, _) => {
            let flag = if release {
                y.load_acquire(t)
            } else {
                y.read_once(t)
            };
            [flag, x.read_once(t)]
        }
        (Does::StoreBuffering { mb }, _) => {
            let (mine, other) = if me == 0 { (x, y) } else { (y, x) };
            mine.write_once(t, 1);
            if mb {
                vfsmc_model::kernel::atomic::smp_mb(t);
            }
            [other.read_once(t), 0]
        }
        (Does::Coherence { .. }, 0) => {
            x.write_once(t, 1);
            x.write_once(t, 2);
            return;
        }
        (Does::Coherence { .. }, _) => [x.read_once(t), x.read_once(t)],
        _ => unreachable!("not a memory-model toy"),
    };
    s.regs.lock().unwrap()[me] = r;
}

/// The wake-up toys: T1 sets the flag and notifies under the mutex; T0
/// waits until it sees the flag.
fn wake_up(s: &Shared, t: &Task, me: usize, unlocked: bool) {
    let (mutex, queue) = &s.wake;
    if me == 1 {
        let _g = mutex.lock();
        s.x.write_once(t, 1);
        queue.notify_all();
        return;
    }
    if unlocked {
        if s.x.read_once(t) == 0 {
            let g = mutex.lock();
            drop(queue.wait(g));
        }
        return;
    }
    let mut g = mutex.lock();
    while s.x.read_once(t) == 0 {
        g = queue.wait(g);
    }
}

fn count(s: &Shared) -> Result<(), String> {
    match s.counter.peek() {
        _ if !matches!(s.does, Does::LostUpdate | Does::AtomicInc) => Ok(()),
        2 => Ok(()),
        n => Err(format!("two increments left counter = {n}")),
    }
}

fn incr(does: Does, counter: &Atomic, t: &Task) {
    if matches!(does, Does::LostUpdate) {
        let v = counter.read_once(t);
        counter.write_once(t, v + 1);
    } else {
        counter.atomic_add_return(t, 1);
    }
}

fn abba(a: &SpinLock, b: &SpinLock, t: &Task, first_a: bool) {
    let (x, y) = if first_a { (a, b) } else { (b, a) };
    let _gx = x.spin_lock(t);
    let _gy = y.spin_lock(t);
}

impl Spec for Toy {
    type Code = Does;
    type Plan = ();
    type State = Shared;

    const NAME: &'static str = "toy";
    const ABOUT: &'static str = "checker self-test models";

    fn variants() -> &'static [Variant<Does>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<()>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Invariant<Checked<Shared>>] {
        INVARIANTS
    }

    fn execute(does: Does, _: &(), watch: &Watch<Self>) {
        let shared = Arc::new(Shared {
            counter: Atomic::new("counter", 0),
            locks: (SpinLock::new("A"), SpinLock::new("B")),
            raw: (sync::Mutex::new(), sync::Mutex::new()),
            objects: Slab::new("obj"),
            x: Atomic::new("x", 0),
            y: Atomic::new("y", 0),
            regs: std::sync::Mutex::new([[0; 2]; 2]),
            wake: (sync::Mutex::new(), sync::Condvar::new()),
            does,
        });
        shared.objects.prealloc(Atomic::new("obj->refs", 2));
        watch.start(&shared);
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let s = shared.clone();
                let name = format!("T{i}");
                exec::spawn(&name.clone(), move || {
                    let t = Task::new(&name, Context::Task);
                    match does {
                        Does::Abba => abba(&s.locks.0, &s.locks.1, &t, i == 0),
                        Does::AbbaRaw => {
                            let (x, y) = if i == 0 {
                                (&s.raw.0, &s.raw.1)
                            } else {
                                (&s.raw.1, &s.raw.0)
                            };
                            let _gx = x.lock();
                            let _gy = y.lock();
                        }
                        Does::SpinForever => {
                            while s.counter.read_once(&t) != 7 {
                                sync::yield_now();
                            }
                        }
                        Does::Oops => {
                            let v: Vec<u64> = Vec::new();
                            let _ = v[s.counter.read_once(&t) as usize];
                        }
                        Does::LostUpdate | Does::AtomicInc => incr(does, &s.counter, &t),
                        Does::PutThenTouch => put_then_use(&s.objects, &t, i, true),
                        Does::TouchThenPut => put_then_use(&s.objects, &t, i, false),
                        Does::MessagePassing { .. }
                        | Does::StoreBuffering { .. }
                        | Does::Coherence { .. } => litmus_thread(does, &s, &t, i),
                        Does::WakeUp { unlocked } => wake_up(&s, &t, i, unlocked),
                    }
                })
            })
            .collect();
        for h in handles {
            h.join();
        }
        let main = Task::new("main", Context::Task);
        main.tracepoint("both-ran");
        if !matches!(
            does,
            Does::Abba
                | Does::AbbaRaw
                | Does::SpinForever
                | Does::Oops
                | Does::PutThenTouch
                | Does::TouchThenPut
                | Does::WakeUp { .. }
        ) {
            watch.finish("main", &shared);
        }
    }

    fn render(s: &Shared) -> String {
        format!("counter = {}", s.counter.peek())
    }
}

static TOY: Registered<Toy> = Registered::new();

fn check(variant: &str, scenario: &str, engine: EngineKind) -> Check {
    let v = TOY.variant(variant).unwrap();
    let s = TOY.scenario(scenario).unwrap();
    let mut c = Check::new(&TOY, v, s, engine);
    c.budget.iterations = 2_000;
    c
}

#[test]
fn every_engine_finds_the_lost_update() {
    for engine in [
        EngineKind::Loom,
        EngineKind::Random,
        EngineKind::Pct,
        EngineKind::Dfs,
    ] {
        let r = check("lost-update", "two", engine).run().unwrap();
        assert!(r.matches_expected(), "{engine}: {}", r.text());
    }
}

#[test]
fn the_correct_variant_holds_and_loom_is_exhaustive() {
    let r = check("atomic-inc", "two", EngineKind::Loom).run().unwrap();
    assert_eq!(r.verdict, Verdict::Holds, "{}", r.text());
    assert!(r.exhaustive);
    for engine in [
        EngineKind::Random,
        EngineKind::Pct,
        EngineKind::Dfs,
        EngineKind::Stress,
    ] {
        let r = check("atomic-inc", "two", engine).run().unwrap();
        assert_eq!(r.verdict, Verdict::Holds, "{engine}: {}", r.text());
    }
}

/// The slab's word per object (kernel::rcu, Slab): T0's second access has no
/// engine operation of its own in a ghost-only slab, so the race of T0's put
/// with T1's is the only one DPOR sees, and loom explored both orders of the
/// puts and said "holds (9 executions, exhaustive)". With the word, the access
/// races with the free, and loom and PCT find the use-after-free.
#[test]
fn a_use_after_free_whose_only_witness_is_the_slab_is_found() {
    for engine in [EngineKind::Loom, EngineKind::Pct] {
        let r = check("put-then-touch", "two", engine).run().unwrap();
        assert_eq!(r.verdict, Verdict::Violates, "{engine}: {}", r.text());
        assert_eq!(r.invariant.as_deref(), Some("use_after_free"));
    }
    let r = check("touch-then-put", "two", EngineKind::Loom)
        .run()
        .unwrap();
    assert_eq!(r.verdict, Verdict::Holds, "{}", r.text());
    assert!(r.exhaustive);
}

#[test]
fn traces_are_deterministic() {
    for engine in [EngineKind::Loom, EngineKind::Pct, EngineKind::Random] {
        let a = check("lost-update", "two", engine).run().unwrap();
        let b = check("lost-update", "two", engine).run().unwrap();
        let (ta, tb) = (
            text_trace(a.record.as_ref().unwrap()),
            text_trace(b.record.as_ref().unwrap()),
        );
        assert_eq!(ta, tb, "{engine}: two searches with one seed differ");
    }
}

#[test]
fn a_shuttle_schedule_replays_byte_for_byte() {
    let found = check("lost-update", "two", EngineKind::Pct).run().unwrap();
    let schedule = found
        .schedule
        .clone()
        .expect("a shuttle failure carries its schedule");
    let mut c = check("lost-update", "two", EngineKind::Pct);
    c.schedule = Some(schedule);
    let original = text_trace(found.record.as_ref().unwrap());
    for _ in 0..2 {
        let again = c.run().unwrap();
        assert_eq!(text_trace(again.record.as_ref().unwrap()), original);
    }
}

#[test]
fn failures_come_back_with_one_preemption() {
    // The lost update needs exactly one preemption (between the load and the
    // store); a reported schedule with more is not the shortest.
    let r = check("lost-update", "two", EngineKind::Loom).run().unwrap();
    assert!(r.max_preemptions.is_some_and(|n| n <= 1), "{}", r.text());
    for seed in 1..=5 {
        let mut c = check("lost-update", "two", EngineKind::Random);
        c.budget.seed = seed;
        let r = c.run().unwrap();
        assert_eq!(
            r.max_preemptions,
            Some(1),
            "seed {seed}: {}\n{:?}",
            r.text(),
            r.schedule
        );
    }
}

#[test]
fn an_unreached_goal_fails_exhaustive_engines_and_is_reported_by_random_ones() {
    let r = check("atomic-inc", "vacuous", EngineKind::Loom)
        .run()
        .unwrap();
    assert_eq!(r.verdict, Verdict::Unreached, "{}", r.text());
    assert_eq!(r.unreached, vec!["never".to_string()]);
    let r = check("atomic-inc", "vacuous", EngineKind::Pct)
        .run()
        .unwrap();
    assert_eq!(r.verdict, Verdict::Holds);
    assert!(r.text().contains("never reached"), "{}", r.text());
}

#[test]
fn deadlock_livelock_and_model_panics_are_named() {
    for variant in ["abba", "abba-raw", "spin-forever", "oops"] {
        for engine in [EngineKind::Loom, EngineKind::Pct] {
            let r = check(variant, "two", engine).run().unwrap();
            assert!(r.matches_expected(), "{variant} on {engine}: {}", r.text());
        }
    }
    // Real threads would hang on the deadlock and the livelock.
    let r = check("oops", "two", EngineKind::Stress).run().unwrap();
    assert!(r.matches_expected(), "{}", r.text());
}

/// The step bounds are the budget's: an execution that needs more steps
/// than the budget allows is reported as a livelock, by loom and shuttle.
#[test]
fn a_tight_step_bound_makes_a_livelock() {
    for engine in [EngineKind::Loom, EngineKind::Pct] {
        let mut c = check("atomic-inc", "two", engine);
        c.budget.loom_max_branches = 1;
        c.budget.shuttle_max_steps = 1;
        let r = c.run().unwrap();
        assert_eq!(
            r.invariant.as_deref(),
            Some("livelock"),
            "{engine}: {}",
            r.text()
        );
    }
}

/// shuttle's PCT refuses a program with a single interleaving; that one
/// interleaving is the whole space, so the search holds exhaustively.
#[test]
fn pct_on_a_single_interleaving_is_a_complete_search() {
    let e = engine::explore(EngineKind::Pct, &Budget::default(), Arc::new(|| {}));
    assert!(e.failure.is_none(), "{:?}", e.failure);
    assert!(e.exhaustive);
}

/// A schedule recorded on one check does not fit another: a typed
/// divergence, never a model panic reported as a finding.
#[test]
fn a_schedule_from_another_check_diverges() {
    let found = check("lost-update", "two", EngineKind::Pct).run().unwrap();
    let mut c = check("spin-forever", "two", EngineKind::Pct);
    c.schedule = found.schedule;
    match c.run() {
        Err(ScheduleError::Diverged { .. }) => {}
        other => panic!("expected a divergence, got {other:?}"),
    }
}

/// Real threads see no more than loom does: on every registered variant that
/// holds, a stress run must not report a violation. A report here is a bug in
/// how the checker observes real threads (steps and invariant checks are
/// serialised per execution), never a finding about the model.
///
/// 1,500 executions a row, the rows on the pool. The model threads run on
/// OS threads the std backend keeps between executions
/// (`model/rt/src/sync/std_threads.rs`); when each execution started and
/// ended its own, unmapping their stacks cost the sweep 39 s of kernel time
/// and 41 s in all, and two rows at once on two cores took longer than one
/// after the other. Now two rows at once take 15 to 19 s, one after the
/// other 23 to 32 s.
#[test]
fn stress_raises_no_false_alarm_on_holding_variants() {
    let mut checks = Vec::new();
    for m in vfsmc_specs::models() {
        for v in m
            .variants()
            .iter()
            .filter(|v| v.expected == Expected::Holds)
        {
            for s in m.scenarios_for(v, vfsmc_specs::Tier::Pr) {
                let mut c = Check::new(m, v, s, EngineKind::Stress);
                c.budget.iterations = 1_500;
                if c.engine_limit().is_none() {
                    checks.push(c);
                }
            }
        }
    }
    let jobs = vfsmc::pool::jobs(None).unwrap();
    let false_alarms: Vec<String> =
        vfsmc::pool::all(jobs, checks.len(), |i| checks[i].run().unwrap())
            .into_iter()
            .filter(|r| r.verdict != Verdict::Holds)
            .map(|r| r.text())
            .collect();
    assert!(false_alarms.is_empty(), "{}", false_alarms.join("\n"));
}

/// What the spin loops of the models rely on (CONTRIBUTING, "yield_now"):
/// loom keeps a yielding thread out of the next scheduling decision only,
/// and it may run again while the thread that ended its wait still runs.
/// The waiter spins until the main thread's first store, then reads `y`,
/// which the main thread goes on writing; if loom resumed a yielder only
/// once the others were done, the waiter would always read the last value.
#[test]
fn loom_resumes_a_yielding_thread_while_others_still_run() {
    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;
    let seen = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let record = seen.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(move || {
        let flag = loom::sync::Arc::new(AtomicUsize::new(0));
        let y = loom::sync::Arc::new(AtomicUsize::new(0));
        let (f, yy) = (flag.clone(), y.clone());
        let waiter = loom::thread::spawn(move || {
            while f.load(SeqCst) == 0 {
                loom::thread::yield_now();
            }
            yy.load(SeqCst)
        });
        flag.store(1, SeqCst);
        for v in 1..=3 {
            y.store(v, SeqCst);
        }
        let read = waiter.join().unwrap();
        record.lock().unwrap().insert(read);
    });
    let seen: Vec<usize> = seen.lock().unwrap().iter().copied().collect();
    assert_eq!(seen, [0, 1, 2, 3], "values of y the waiter read");
}

/// The optimal engine on every toy: each feature (message passing, store
/// buffering, coherence, RMW atomicity, a lost wake-up, a lock-order
/// deadlock, a livelock, a use-after-free, a model panic) must fail for its
/// reason and its fix must hold, exhaustively; loom gives the same verdict
/// on the same invariant. Under `optimal-sc` what only weak memory shows
/// (mp, sb) holds and everything else is as under RC11.
#[test]
fn the_optimal_engine_finds_each_toy_bug_that_loom_finds() {
    for v in VARIANTS {
        let loom = check(v.name, "two", EngineKind::Loom).run().unwrap();
        let optimal = check(v.name, "two", EngineKind::Optimal).run().unwrap();
        assert!(optimal.matches_expected(), "{}: {}", v.name, optimal.text());
        assert_eq!(
            (optimal.verdict, &optimal.invariant),
            (loom.verdict, &loom.invariant),
            "{}: optimal {} / loom {}",
            v.name,
            optimal.text(),
            loom.text()
        );
        if optimal.verdict == Verdict::Holds {
            assert!(optimal.exhaustive, "{}", v.name);
        }
        let sc = check(v.name, "two", EngineKind::OptimalSc).run().unwrap();
        let weak_only = matches!(
            v.code,
            Does::MessagePassing { release: false } | Does::StoreBuffering { mb: false }
        );
        if weak_only {
            assert_eq!(sc.verdict, Verdict::Holds, "{}: {}", v.name, sc.text());
            assert!(sc.exhaustive, "{}", v.name);
        } else {
            assert_eq!(
                (sc.verdict, &sc.invariant),
                (optimal.verdict, &optimal.invariant),
                "{}: {}",
                v.name,
                sc.text()
            );
        }
    }
}

/// A violation the optimal engine found replays byte for byte from its
/// replay line (the same search, stopped at the same graph).
#[test]
fn an_optimal_trace_replays_byte_for_byte() {
    for name in ["mp", "sb", "lost-update", "lost-wakeup"] {
        let a = check(name, "two", EngineKind::Optimal).run().unwrap();
        let b = check(name, "two", EngineKind::Optimal).run().unwrap();
        let (ta, tb) = (
            text_trace(a.record.as_ref().unwrap()),
            text_trace(b.record.as_ref().unwrap()),
        );
        assert_eq!(ta, tb, "{name}");
    }
}
