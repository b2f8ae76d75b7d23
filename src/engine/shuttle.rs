//! shuttle: the `random`, `pct` and `dfs` schedulers, each wrapped in one
//! recorder so a failing schedule serialises to a string that replays it
//! byte for byte. A failure is then shrunk towards fewer preemptions where
//! possible. shuttle runs every atomic as SeqCst: it cannot find weak-memory
//! bugs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use shuttle::scheduler::{
    DfsScheduler, PctScheduler, RandomScheduler, ReplayScheduler, Schedule, Scheduler, Task, TaskId,
};
use shuttle_engine::scheduler::serialization::{deserialize_schedule, serialize_schedule};
use vfsmc_model::driver::Record;
use vfsmc_model::sync::{with_backend, Backend};
use vfsmc_specs::Need;

use super::{
    instrument, lock, never_probe, Body, Budget, Collector, CorpusKey, Engine, EngineFailure,
    Exploration, Failure, Found, Knob, Replay, ScheduleError, Shape,
};
use crate::progress::{self, Phase};
use crate::quiet;

const SEQUENTIALLY_CONSISTENT: &str =
    "sequentially consistent: every atomic is SeqCst, so no weak-memory outcome";

/// A sequentially consistent engine sees no weak-memory outcome, but every
/// ordering LKMM promises holds in it, and its RMWs are atomic. It samples
/// schedules, so a bug that needs several preemptions in narrow windows is
/// beyond its budget (PCT prints its per-run guarantee when asked). It has
/// no happens-before to tell a data race by (`sync::epoch`).
pub(super) fn sequentially_consistent_blind_to(need: Need) -> bool {
    match need {
        Need::WeakMemory(_)
        | Need::LoadBuffering(_)
        | Need::WeakLockState(_)
        | Need::DeepSchedule(_)
        | Need::HappensBefore(_) => true,
        Need::LkmmOrdering(_) | Need::AtomicRmw(_) => false,
    }
}

/// What every shuttle search reads (the seed: at least for shrinking).
const SHUTTLE_KNOBS: &[Knob] = &[
    Knob::Iterations,
    Knob::Seed,
    Knob::ShuttleMaxSteps,
    Knob::ShrinkIterations,
    Knob::ShrinkMaxDepth,
];

/// shuttle's uniformly random scheduler.
pub struct Random;

/// shuttle's PCT scheduler (probabilistic concurrency testing).
pub struct Pct;

/// shuttle's depth-first enumeration of schedules.
pub struct Dfs;

impl Engine for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn exhaustive(&self) -> bool {
        false
    }
    fn memory_model(&self) -> &'static str {
        SEQUENTIALLY_CONSISTENT
    }
    fn blind_to(&self, need: Need) -> bool {
        sequentially_consistent_blind_to(need)
    }
    fn knobs(&self) -> &'static [Knob] {
        SHUTTLE_KNOBS
    }
    fn replay(&self) -> Replay {
        Replay::Schedule
    }
    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[CorpusKey::Schedule]
    }
    fn coverage(&self, found: &Found) -> String {
        format!(", seed {}", found.seed)
    }
    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let s = RandomScheduler::new_from_seed(budget.seed, budget.iterations);
        explore_shuttle(self.name(), s, budget, body)
    }
}

impl Engine for Pct {
    fn name(&self) -> &'static str {
        "pct"
    }
    fn exhaustive(&self) -> bool {
        false
    }
    fn memory_model(&self) -> &'static str {
        SEQUENTIALLY_CONSISTENT
    }
    fn blind_to(&self, need: Need) -> bool {
        sequentially_consistent_blind_to(need)
    }
    fn knobs(&self) -> &'static [Knob] {
        &[
            Knob::Iterations,
            Knob::Seed,
            Knob::PctDepth,
            Knob::ShuttleMaxSteps,
            Knob::ShrinkIterations,
            Knob::ShrinkMaxDepth,
        ]
    }
    fn replay(&self) -> Replay {
        Replay::Schedule
    }
    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[CorpusKey::PctDepth, CorpusKey::Schedule]
    }
    fn coverage(&self, found: &Found) -> String {
        format!(", seed {}", found.seed)
    }
    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let s = PctScheduler::new_from_seed(budget.seed, budget.pct_depth, budget.iterations);
        explore_shuttle(self.name(), s, budget, body)
    }

    /// Burckhardt et al., "A Randomized Scheduler with Probabilistic
    /// Guarantees of Finding Bugs" (ASPLOS 2010), Theorem 9: a run finds a
    /// bug of depth d with probability at least 1/(n·k^(d−1)), n threads and
    /// k steps. shuttle's PCT samples its d−1 change points from the longest
    /// execution seen so far, as the paper assumes k known; with no step
    /// where two tasks could run there is one interleaving, found every run.
    fn per_run_guarantee(&self, shape: Shape, depth: usize) -> Option<f64> {
        if shape.steps == 0 {
            return Some(1.0);
        }
        let exp = i32::try_from(depth.saturating_sub(1)).unwrap_or(i32::MAX);
        let denominator: f64 = shape.threads.max(1) as f64 * (shape.steps as f64).powi(exp);
        Some((1.0 / denominator).min(1.0))
    }
}

impl Engine for Dfs {
    fn name(&self) -> &'static str {
        "dfs"
    }
    fn exhaustive(&self) -> bool {
        true
    }
    fn memory_model(&self) -> &'static str {
        SEQUENTIALLY_CONSISTENT
    }
    fn blind_to(&self, need: Need) -> bool {
        sequentially_consistent_blind_to(need)
    }
    fn knobs(&self) -> &'static [Knob] {
        SHUTTLE_KNOBS
    }
    fn replay(&self) -> Replay {
        Replay::Schedule
    }
    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[CorpusKey::Schedule]
    }
    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let s = DfsScheduler::new(Some(budget.iterations), false);
        let mut out = explore_shuttle(self.name(), s, budget, body);
        if out.failure.is_none() && !out.exhaustive {
            // DFS ran out of schedules before its budget: it saw them all.
            out.exhaustive = out.executions < budget.iterations;
        }
        out
    }
}

/// The recorded schedule of the current shuttle execution, and the size of
/// the largest execution so far.
#[derive(Default)]
struct Recorded {
    schedule: Option<Schedule>,
    preemptions: usize,
    /// Steps of the current execution where more than one task could run.
    steps: usize,
    shape: Shape,
}

/// Wraps any shuttle scheduler to record the schedule of each execution.
struct Recording<S> {
    inner: S,
    rec: Arc<Mutex<Recorded>>,
}

impl Recorded {
    /// Counts one scheduling decision among `runnable` into the shape.
    fn measure(&mut self, runnable: &[&Task]) {
        let tasks = runnable.iter().map(|t| usize::from(t.id()) + 1).max();
        self.shape.threads = self.shape.threads.max(tasks.unwrap_or(0));
        if runnable.len() > 1 {
            self.steps += 1;
            self.shape.steps = self.shape.steps.max(self.steps);
        }
    }
}

impl<S: Scheduler> Scheduler for Recording<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        let s = self.inner.new_execution()?;
        let mut rec = lock(&self.rec);
        *rec = Recorded {
            schedule: Some(s.clone()),
            shape: rec.shape,
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
        rec.measure(runnable);
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

fn shuttle_config(max_steps: usize) -> shuttle::Config {
    let mut config = shuttle::Config::new();
    config.silence_warnings = true;
    config.failure_persistence = shuttle::FailurePersistence::None;
    config.max_steps = shuttle::MaxSteps::FailAfter(max_steps);
    config
}

/// Runs a shuttle scheduler to its end or its first failure; an execution
/// longer than `max_steps` fails as a livelock.
fn run_shuttle<S: Scheduler + Send + 'static>(
    sched: S,
    budget: &Budget,
    body: Body,
) -> Exploration {
    run_shuttle_counted(sched, budget, body).0
}

/// [`run_shuttle`], also returning the scheduling points and the record of
/// the last execution.
fn run_shuttle_counted<S: Scheduler + Send + 'static>(
    sched: S,
    budget: &Budget,
    body: Body,
) -> (Exploration, usize, Record) {
    quiet::on_own_thread(|| run_shuttle_here(sched, budget, body))
}

/// [`run_shuttle_counted`] on the calling thread.
fn run_shuttle_here<S: Scheduler + 'static>(
    sched: S,
    budget: &Budget,
    body: Body,
) -> (Exploration, usize, Record) {
    let max_steps = budget.shuttle_max_steps;
    let rec = Arc::new(Mutex::new(Recorded::default()));
    let col = Collector::new(budget);
    let f = instrument(body, col.clone(), never_probe);
    let runner = shuttle::Runner::new(
        Recording {
            inner: sched,
            rec: rec.clone(),
        },
        shuttle_config(max_steps),
    );
    let result = catch_unwind(AssertUnwindSafe(|| {
        with_backend(Backend::Shuttle, || runner.run(f));
    }));
    let failure = result.err().map(|payload| {
        let r = lock(&rec);
        Failure {
            // shuttle wraps its hex at 76 columns; one token pastes better.
            schedule: r
                .schedule
                .as_ref()
                .map(|s| serialize_schedule(s).replace('\n', "")),
            preemptions: Some(r.preemptions),
            ..Failure::from_panic(&col, payload, classify)
        }
    });
    let out = Exploration {
        shape: Some(lock(&rec).shape),
        failure,
        ..lock(&col).exploration()
    };
    let points = lock(&rec).schedule.as_ref().map_or(0, Schedule::len);
    let last = lock(&col).session.record();
    (out, points, last)
}

fn explore_shuttle<S: Scheduler + Send + 'static>(
    name: &'static str,
    sched: S,
    budget: &Budget,
    body: Body,
) -> Exploration {
    progress::runs(name, budget.iterations);
    let mut out = run_shuttle(sched, budget, body.clone());
    if detected(&out, EngineFailure::NoConcurrency) {
        // PCT refuses a program with a single interleaving; the execution it
        // ran was that interleaving, so the search is complete.
        out.failure = None;
        out.exhaustive = true;
        return out;
    }
    if out.failure.is_some() {
        shrink_preemptions(&mut out, budget, body);
    }
    out
}

/// shuttle-engine 0.1.8's and shuttle-schedulers 0.1.1's own failures, by
/// their panic text: `runtime/execution.rs` reports "deadlock! blocked
/// tasks…" or "deadlock while dropping…", "exceeded max_steps bound…" or
/// "… exceeded the step bound (…) while it was being dropped…"; `pct.rs`
/// asserts "test closure did not exercise any concurrency"; `replay.rs`
/// complains in the four ways of [`REPLAY_DIVERGED`]. Any other panic is the
/// model's.
fn classify(msg: &str) -> EngineFailure {
    if msg.contains("deadlock! blocked tasks") || msg.contains("deadlock while dropping") {
        EngineFailure::Deadlock
    } else if msg.contains("exceeded max_steps bound") || msg.contains("exceeded the step bound") {
        EngineFailure::Livelock
    } else if msg.contains("did not exercise any concurrency") {
        EngineFailure::NoConcurrency
    } else if REPLAY_DIVERGED.iter().any(|m| msg.contains(m)) {
        EngineFailure::ReplayDiverged
    } else {
        EngineFailure::ModelPanic
    }
}

fn detected(e: &Exploration, kind: EngineFailure) -> bool {
    e.failure.as_ref().is_some_and(|f| f.engine == Some(kind))
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
/// again with PCT at depth 1, 2, … up to the budget's `shrink_max_depth` (at
/// most depth − 1 priority changes, so few preemptions) and keep the first
/// failure of the same invariant that needs fewer preemptions than the one
/// found.
fn shrink_preemptions(out: &mut Exploration, budget: &Budget, body: Body) {
    let Some(target) = invariant_of(out) else {
        return;
    };
    for depth in 1..=budget.shrink_max_depth {
        if preemptions_of(out) < depth {
            return;
        }
        progress::phase(Phase::Shrinking { depth });
        let sched = PctScheduler::new_from_seed(budget.seed, depth, budget.shrink_iterations);
        let candidate = run_shuttle(sched, budget, body.clone());
        if invariant_of(&candidate).as_deref() == Some(target.as_str())
            && preemptions_of(&candidate) < preemptions_of(out)
        {
            out.failure = candidate.failure;
            return;
        }
    }
}

/// Replays one shuttle schedule string, with the step bound of the search
/// that recorded it (`budget.shuttle_max_steps`).
pub fn replay(schedule: &str, budget: &Budget, body: Body) -> Result<Exploration, ScheduleError> {
    // shuttle's decoder indexes into truncated input; a panic there is bad
    // input too.
    let decoded = quiet::quietly(|| catch_unwind(|| deserialize_schedule(schedule)));
    let parsed = decoded
        .ok()
        .flatten()
        .ok_or_else(|| ScheduleError::Malformed {
            schedule: schedule.to_string(),
        })?;
    let diverged = |step| ScheduleError::Diverged {
        schedule: schedule.to_string(),
        step,
    };
    // A string with bytes the decoder ignores (appended, say) is not the
    // schedule vfsmc printed for this failure, though it decodes to one.
    if serialize_schedule(&parsed).replace('\n', "") != schedule {
        return Err(diverged(0));
    }
    let decisions = parsed.len();
    let sched = ReplayScheduler::new_from_schedule(parsed);
    let (out, points, _) = quiet::quietly(|| run_shuttle_counted(sched, budget, body));
    let step = out
        .failure
        .as_ref()
        .and_then(|f| f.record.violation.as_ref())
        .map_or(0, |v| v.step);
    // A replay reproduces only by running the whole schedule: a failure
    // before its last decision is another execution's.
    if detected(&out, EngineFailure::ReplayDiverged)
        || (out.failure.is_some() && points != decisions)
    {
        return Err(diverged(step));
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

/// Runs the canonical sequential execution of `body`, within the default
/// step bound: fingerprints must not depend on the environment.
pub fn sequential(body: Body) -> Sequential {
    sequential_with(&Budget::default(), body)
}

/// [`sequential`] under `budget` (its step bound and whether it records).
pub fn sequential_with(budget: &Budget, body: Body) -> Sequential {
    let (e, scheduling_points, last) =
        quiet::quietly(|| run_shuttle_counted(Guided { started: false }, budget, body));
    let record = match e.failure {
        Some(f) => f.record,
        None => last,
    };
    Sequential {
        record,
        scheduling_points,
    }
}
