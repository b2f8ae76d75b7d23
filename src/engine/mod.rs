//! The engines: what chooses the interleaving. Models and specs never see
//! this module; an engine only receives a closure that runs one execution.
//!
//! - `loom`: exhaustive DPOR under the C11 memory model. Runs preemption
//!   bounds 0, 1, 2, … before the requested bound (or unbounded), so the first
//!   counterexample reported is one with the fewest preemptions.
//! - `random`, `pct`, `dfs`: shuttle's schedulers, wrapped in a recorder so a
//!   failing schedule serialises to a string that replays it byte for byte;
//!   a failure is then shrunk towards fewer preemptions where possible.
//!   shuttle runs every atomic as SeqCst: it cannot find weak-memory bugs.
//! - `stress`: real std threads under the OS scheduler. Neither exhaustive
//!   nor replayable; it reports what it saw.

use std::collections::BTreeSet;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use shuttle::scheduler::{
    DfsScheduler, PctScheduler, RandomScheduler, ReplayScheduler, Schedule, Scheduler, Task, TaskId,
};
use shuttle_engine::scheduler::serialization::{deserialize_schedule, serialize_schedule};
use vfsmc_model::exec::{self, Exec, Record};
use vfsmc_model::sync::{with_backend, Backend};

use crate::quiet;

/// The engines `--engine` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EngineKind {
    Loom,
    Random,
    Pct,
    Dfs,
    Stress,
}

impl EngineKind {
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Loom,
        EngineKind::Random,
        EngineKind::Pct,
        EngineKind::Dfs,
        EngineKind::Stress,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Loom => "loom",
            EngineKind::Random => "random",
            EngineKind::Pct => "pct",
            EngineKind::Dfs => "dfs",
            EngineKind::Stress => "stress",
        }
    }

    /// Whether a failing seed of this engine replays from a schedule string.
    pub fn is_shuttle(self) -> bool {
        matches!(self, EngineKind::Random | EngineKind::Pct | EngineKind::Dfs)
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EngineKind::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                format!("unknown engine '{s}' (expected one of loom, random, pct, dfs, stress)")
            })
    }
}

/// How much an engine may explore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Executions for random/pct/dfs/stress; a cap for loom when set.
    pub iterations: usize,
    pub seed: u64,
    /// loom: the largest preemption bound tried (`None`: finish unbounded).
    pub max_preemptions: Option<usize>,
    /// loom: stop after this many executions per bound (then not exhaustive).
    pub loom_cap: Option<usize>,
    /// PCT depth: preemptions the bug needs + 1.
    pub pct_depth: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            iterations: 10_000,
            seed: 1,
            max_preemptions: None,
            loom_cap: None,
            pct_depth: 4,
        }
    }
}

/// A failing execution.
#[derive(Clone, Debug)]
pub struct Failure {
    pub record: Record,
    /// shuttle: the serialised schedule that replays it.
    pub schedule: Option<String>,
    /// Preemptions in the failing execution (shuttle), or the loom bound
    /// under which it was found.
    pub preemptions: Option<usize>,
}

/// What one search covered and found.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    pub executions: usize,
    /// The space under the stated bound was explored completely.
    pub exhaustive: bool,
    /// loom: the preemption bound of the deciding run (`None`: unbounded).
    pub preemption_bound: Option<usize>,
    pub failure: Option<Failure>,
    pub reached: BTreeSet<String>,
}

/// One execution of a check, as an engine calls it.
pub type Body = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Collector {
    executions: usize,
    reached: BTreeSet<String>,
    current: Option<Exec>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Wraps `body` so each execution gets a fresh [`Exec`] and its results are
/// collected outside the engine.
fn instrument(body: Body, col: Arc<Mutex<Collector>>) -> impl Fn() + Send + Sync + 'static {
    move || {
        let (exec, _current) = Exec::begin();
        {
            let mut c = lock(&col);
            c.executions += 1;
            c.current = Some(exec.clone());
        }
        body();
        let reached = exec.reached();
        lock(&col).reached.extend(reached);
    }
}

/// Turns an engine's panic into the failing execution's record.
fn failure_record(col: &Mutex<Collector>, payload: Box<dyn std::any::Any + Send>) -> Record {
    let exec = lock(col).current.clone().unwrap_or_default();
    if exec.violation().is_none() {
        let msg = panic_message(&payload);
        let invariant = classify_engine_panic(&msg);
        exec::record_engine_failure(&exec, invariant, msg);
    }
    exec.record()
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the model panicked".to_string()
    }
}

/// Engine-detected failures are liveness or model bugs, named as invariants.
fn classify_engine_panic(msg: &str) -> &'static str {
    let m = msg.to_lowercase();
    if m.contains("deadlock") {
        "deadlock"
    } else if m.contains("maximum number of branches")
        || m.contains("max_steps")
        || m.contains("exceeded")
    {
        "livelock"
    } else {
        "model_panic"
    }
}

/// Runs a search of `body` with `engine` within `budget`.
pub fn explore(engine: EngineKind, budget: &Budget, body: Body) -> Exploration {
    quiet::quietly(|| match engine {
        EngineKind::Loom => explore_loom(budget, body),
        EngineKind::Random => {
            let s = RandomScheduler::new_from_seed(budget.seed, budget.iterations);
            explore_shuttle(s, budget, false, body)
        }
        EngineKind::Pct => {
            let s = PctScheduler::new_from_seed(budget.seed, budget.pct_depth, budget.iterations);
            explore_shuttle(s, budget, false, body)
        }
        EngineKind::Dfs => {
            let s = DfsScheduler::new(Some(budget.iterations), false);
            explore_shuttle(s, budget, true, body)
        }
        EngineKind::Stress => explore_stress(budget, body),
    })
}

fn loom_bounds(budget: &Budget) -> Vec<Option<usize>> {
    match budget.max_preemptions {
        Some(n) => (0..=n).map(Some).collect(),
        None => vec![Some(0), Some(1), Some(2), None],
    }
}

fn explore_loom(budget: &Budget, body: Body) -> Exploration {
    let mut last = Exploration::default();
    for bound in loom_bounds(budget) {
        let col = Arc::new(Mutex::new(Collector::default()));
        let f = instrument(body.clone(), col.clone());
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = bound;
        builder.max_permutations = budget.loom_cap;
        builder.checkpoint_interval = 1;
        builder.checkpoint_file = None;
        builder.max_branches = 10_000;
        let result = catch_unwind(AssertUnwindSafe(|| {
            with_backend(Backend::Loom, || builder.check(f));
        }));
        let c = lock(&col);
        let executions = c.executions;
        let capped = budget.loom_cap.is_some_and(|cap| executions >= cap);
        last = Exploration {
            executions,
            exhaustive: !capped,
            preemption_bound: bound,
            failure: None,
            reached: c.reached.clone(),
        };
        drop(c);
        if let Err(payload) = result {
            last.failure = Some(Failure {
                record: failure_record(&col, payload),
                schedule: None,
                preemptions: bound,
            });
            last.exhaustive = false;
            return last;
        }
    }
    last
}

/// The recorded schedule of the current shuttle execution.
#[derive(Default)]
struct Recorded {
    schedule: Option<Schedule>,
    preemptions: usize,
}

/// Wraps any shuttle scheduler to record the schedule of each execution.
struct Recording<S> {
    inner: S,
    rec: Arc<Mutex<Recorded>>,
}

impl<S: Scheduler> Scheduler for Recording<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        let s = self.inner.new_execution()?;
        *lock(&self.rec) = Recorded {
            schedule: Some(s.clone()),
            ..Recorded::default()
        };
        Some(s)
    }

    fn next_task(
        &mut self,
        runnable: &[&Task],
        current: Option<TaskId>,
        yielding: bool,
    ) -> Option<TaskId> {
        let next = self.inner.next_task(runnable, current, yielding)?;
        let mut rec = lock(&self.rec);
        // Task 0 is the scenario's driver (set-up, joins, final checks):
        // leaving it early is not a preemption of the modelled code.
        if let Some(cur) = current.filter(|&c| usize::from(c) != 0) {
            let still_runnable = runnable.iter().any(|t| t.id() == cur);
            if cur != next && still_runnable && !yielding {
                rec.preemptions += 1;
            }
        }
        if let Some(s) = rec.schedule.as_mut() {
            s.push_task(next);
        }
        Some(next)
    }

    fn next_u64(&mut self) -> u64 {
        if let Some(s) = lock(&self.rec).schedule.as_mut() {
            s.push_random();
        }
        self.inner.next_u64()
    }
}

/// Runs without preemption: the current task goes on while it can, else the
/// lowest-numbered runnable task. One execution: the canonical sequential
/// one, identical on every machine.
struct Guided {
    started: bool,
}

impl Scheduler for Guided {
    fn new_execution(&mut self) -> Option<Schedule> {
        if std::mem::replace(&mut self.started, true) {
            return None;
        }
        Some(Schedule::new(0))
    }

    fn next_task(
        &mut self,
        runnable: &[&Task],
        current: Option<TaskId>,
        _yielding: bool,
    ) -> Option<TaskId> {
        match current {
            Some(cur) if runnable.iter().any(|t| t.id() == cur) => Some(cur),
            _ => runnable
                .iter()
                .map(|t| t.id())
                .min_by_key(|&id| usize::from(id)),
        }
    }

    fn next_u64(&mut self) -> u64 {
        0
    }
}

fn shuttle_config() -> shuttle::Config {
    let mut config = shuttle::Config::new();
    config.silence_warnings = true;
    config.failure_persistence = shuttle::FailurePersistence::None;
    config.max_steps = shuttle::MaxSteps::FailAfter(200_000);
    config
}

/// Runs a shuttle scheduler to its end or its first failure.
fn run_shuttle<S: Scheduler + 'static>(sched: S, body: Body) -> Exploration {
    run_shuttle_counted(sched, body).0
}

/// [`run_shuttle`], also returning the scheduling points of the last
/// execution.
fn run_shuttle_counted<S: Scheduler + 'static>(sched: S, body: Body) -> (Exploration, usize) {
    let rec = Arc::new(Mutex::new(Recorded::default()));
    let col = Arc::new(Mutex::new(Collector::default()));
    let f = instrument(body, col.clone());
    let runner = shuttle::Runner::new(
        Recording {
            inner: sched,
            rec: rec.clone(),
        },
        shuttle_config(),
    );
    let result = catch_unwind(AssertUnwindSafe(|| {
        with_backend(Backend::Shuttle, || runner.run(f));
    }));
    let c = lock(&col);
    let mut out = Exploration {
        executions: c.executions,
        exhaustive: false,
        preemption_bound: None,
        failure: None,
        reached: c.reached.clone(),
    };
    drop(c);
    if let Err(payload) = result {
        let r = lock(&rec);
        out.failure = Some(Failure {
            record: failure_record(&col, payload),
            // shuttle wraps its hex at 76 columns; one token pastes better.
            schedule: r
                .schedule
                .as_ref()
                .map(|s| serialize_schedule(s).replace('\n', "")),
            preemptions: Some(r.preemptions),
        });
    }
    let points = lock(&rec).schedule.as_ref().map_or(0, Schedule::len);
    (out, points)
}

fn explore_shuttle<S: Scheduler + 'static>(
    sched: S,
    budget: &Budget,
    dfs: bool,
    body: Body,
) -> Exploration {
    let mut out = run_shuttle(sched, body.clone());
    if no_concurrency(&out) {
        // PCT refuses a program with a single interleaving; the execution it
        // ran was that interleaving, so the search is complete.
        out.failure = None;
        out.exhaustive = true;
        return out;
    }
    if dfs && out.failure.is_none() {
        out.exhaustive = out.executions < budget.iterations;
    }
    if out.failure.is_some() {
        shrink_preemptions(&mut out, budget.seed, body);
    }
    out
}

fn no_concurrency(e: &Exploration) -> bool {
    e.failure
        .as_ref()
        .and_then(|f| f.record.violation.as_ref())
        .is_some_and(|v| {
            v.invariant == "model_panic" && v.message.contains("did not exercise any concurrency")
        })
}

fn invariant_of(e: &Exploration) -> Option<String> {
    e.failure
        .as_ref()
        .and_then(|f| f.record.violation.as_ref())
        .map(|v| v.invariant.clone())
}

fn preemptions_of(e: &Exploration) -> usize {
    e.failure
        .as_ref()
        .and_then(|f| f.preemptions)
        .unwrap_or(usize::MAX)
}

/// Replays a shuttle failure with fewer preemptions where possible: search
/// again with PCT at depth 1, 2, … (at most depth − 1 priority changes, so
/// few preemptions) and keep the first failure of the same invariant that
/// needs fewer preemptions than the one found.
fn shrink_preemptions(out: &mut Exploration, seed: u64, body: Body) {
    const ITERATIONS: usize = 2_000;
    let Some(target) = invariant_of(out) else {
        return;
    };
    for depth in 1..=3 {
        if preemptions_of(out) < depth {
            return;
        }
        let sched = PctScheduler::new_from_seed(seed, depth, ITERATIONS);
        let candidate = run_shuttle(sched, body.clone());
        if invariant_of(&candidate).as_deref() == Some(target.as_str())
            && preemptions_of(&candidate) < preemptions_of(out)
        {
            out.failure = candidate.failure;
            return;
        }
    }
}

/// Replays one shuttle schedule string.
pub fn replay(schedule: &str, body: Body) -> Result<Exploration, String> {
    let bad =
        || format!("bad schedule string '{schedule}' (expected the hex string vfsmc printed)");
    // shuttle's decoder indexes into truncated input; a panic there is bad
    // input too.
    let decoded = quiet::quietly(|| catch_unwind(|| deserialize_schedule(schedule)));
    let parsed = decoded.ok().flatten().ok_or_else(bad)?;
    let out = quiet::quietly(|| run_shuttle(ReplayScheduler::new_from_schedule(parsed), body));
    if let Some(v) = out
        .failure
        .as_ref()
        .and_then(|f| f.record.violation.as_ref())
    {
        if v.invariant == "model_panic" && REPLAY_DIVERGED.iter().any(|m| v.message.contains(m)) {
            return Err(format!(
                "schedule '{schedule}' does not replay on this check: it diverged after step {} \
                 (it was recorded for another model, variant, scenario or input, or an older model)",
                v.step
            ));
        }
    }
    Ok(out)
}

/// How shuttle's replay scheduler says a schedule does not fit the execution.
const REPLAY_DIVERGED: [&str; 4] = [
    "scheduled task is not runnable",
    "schedule ended early",
    "expected context switch",
    "expected random choice",
];

/// The canonical sequential execution: each thread runs until it blocks or
/// ends, lowest first. Deterministic on every machine; used for the model
/// fingerprint and the cost table.
pub struct Sequential {
    /// Its record, passing or failing.
    pub record: Record,
    /// Scheduling decisions the engine made: every engine-visible operation.
    pub scheduling_points: usize,
}

/// Runs the canonical sequential execution of `body`.
pub fn sequential(body: Body) -> Sequential {
    let slot: Arc<Mutex<Option<Record>>> = Arc::default();
    let s2 = slot.clone();
    let wrapped: Body = Arc::new(move || {
        body();
        *lock(&s2) = Some(exec::current_record());
    });
    let (e, scheduling_points) =
        quiet::quietly(|| run_shuttle_counted(Guided { started: false }, wrapped));
    let record = match e.failure {
        Some(f) => f.record,
        None => lock(&slot).take().unwrap_or_default(),
    };
    Sequential {
        record,
        scheduling_points,
    }
}

fn explore_stress(budget: &Budget, body: Body) -> Exploration {
    let col = Arc::new(Mutex::new(Collector::default()));
    let f = instrument(body, col.clone());
    let mut out = Exploration::default();
    for _ in 0..budget.iterations {
        let result = catch_unwind(AssertUnwindSafe(|| with_backend(Backend::Std, &f)));
        if let Err(payload) = result {
            out.failure = Some(Failure {
                record: failure_record(&col, payload),
                schedule: None,
                preemptions: None,
            });
            break;
        }
    }
    let c = lock(&col);
    out.executions = c.executions;
    out.reached = c.reached.clone();
    out
}
