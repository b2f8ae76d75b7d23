//! The engines: what chooses the interleaving. Models and specs never see
//! this module; an engine only receives a closure that runs one execution.
//!
//! Everything vfsmc knows about an engine is in its [`Engine`]
//! implementation, one file each:
//! - `loom` ([`loom`]): exhaustive DPOR under the C11 memory model, preemption
//!   bounds 0, 1, 2, … first, so the first counterexample has the fewest
//!   preemptions;
//! - `random`, `pct`, `dfs` ([`shuttle`]): shuttle's schedulers behind one
//!   schedule recorder, so a failing schedule serialises to a string that
//!   replays it byte for byte;
//! - `stress` ([`stress`]): real std threads under the OS scheduler.
//!
//! The rest of the checker asks the trait; [`EngineKind`] is only the
//! `--engine` name of each.

mod budget;
mod loom;
mod optimal;
mod shuttle;
mod stress;

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use vfsmc_model::driver::{Record, Session};
use vfsmc_model::patch::Hit;
use vfsmc_specs::Need;

pub use budget::{help, Budget, BudgetError, Knob};
pub use shuttle::{replay, sequential, sequential_with, Sequential};

/// One engine: how it searches, what it can see, how its failures replay.
pub trait Engine: Sync {
    /// Its `--engine` name.
    fn name(&self) -> &'static str;

    /// Whether a search that ends without failure covered every execution
    /// within its bound, so that "holds" is a proof and a goal it never
    /// reached makes the check fail as unreached.
    fn exhaustive(&self) -> bool;

    /// The memory model its executions follow, in one sentence.
    fn memory_model(&self) -> &'static str;

    /// Whether it cannot produce what `need` describes, so that it cannot
    /// give a variant that needs it its registry verdict.
    fn blind_to(&self, need: Need) -> bool;

    /// Why it cannot judge a variant with `needs`: the reason of the first
    /// need it is blind to.
    fn cannot_judge(&self, needs: &[Need]) -> Option<&'static str> {
        needs.iter().find(|n| self.blind_to(**n)).map(|n| n.why())
    }

    /// The budget knobs its search reads; it ignores the others.
    fn knobs(&self) -> &'static [Knob];

    /// How one of its failures is reproduced.
    fn replay(&self) -> Replay;

    /// What a corpus file records for one of its failures, in file order,
    /// besides model, variant, scenario, engine and seed.
    fn corpus_keys(&self) -> &'static [CorpusKey];

    /// What a report adds to "N executions, exhaustive" to say what the
    /// search covered.
    fn coverage(&self, _found: &Found) -> String {
        String::new()
    }

    /// Searches `body` within `budget`.
    fn explore(&self, budget: &Budget, body: Body) -> Exploration;

    /// The probability, at least, that one of its runs finds a bug of
    /// `depth` in executions of `shape`, if the engine guarantees one.
    fn per_run_guarantee(&self, _shape: Shape, _depth: usize) -> Option<f64> {
        None
    }

    fn reads(&self, knob: Knob) -> bool {
        self.knobs().contains(&knob)
    }

    /// The flags after `--engine NAME` that reproduce a failure, or why no
    /// command does.
    fn replay_flags(&self, found: &Found) -> Result<String, String> {
        match self.replay() {
            Replay::Bound => Ok(found
                .max_preemptions
                .map_or(String::new(), |n| format!(" --max-preemptions {n}"))),
            Replay::Schedule => Ok(match found.schedule {
                Some(s) => format!(" --schedule {s}"),
                None => format!(" --seed {}", found.seed),
            }),
            Replay::Never => Err(format!(
                "({} failures do not replay: re-run with --engine loom or pct)",
                self.name()
            )),
        }
    }
}

/// How an engine's failure is reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Search again up to the preemption bound it was found under: the
    /// engine's exploration order is fixed.
    Bound,
    /// Drive the recorded schedule string through shuttle's replay scheduler.
    Schedule,
    /// Not at all: the OS chose the interleaving.
    Never,
}

/// A corpus-file line that only some engines record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorpusKey {
    /// The loom preemption bound the failure was found under.
    MaxPreemptions,
    /// The PCT depth of the search that found it (informational: the
    /// schedule replays it).
    PctDepth,
    /// The shuttle schedule that replays it.
    Schedule,
}

impl CorpusKey {
    pub const ALL: [CorpusKey; 3] = [
        CorpusKey::MaxPreemptions,
        CorpusKey::PctDepth,
        CorpusKey::Schedule,
    ];

    /// The key as a corpus file spells it.
    pub fn name(self) -> &'static str {
        match self {
            CorpusKey::MaxPreemptions => "max-preemptions",
            CorpusKey::PctDepth => "pct-depth",
            CorpusKey::Schedule => "schedule",
        }
    }
}

/// What a report knows about how its failure was found.
#[derive(Clone, Copy, Debug)]
pub struct Found<'a> {
    pub seed: u64,
    /// loom: the bound of the deciding run; shuttle: preemptions in the
    /// failing execution.
    pub max_preemptions: Option<usize>,
    pub schedule: Option<&'a str>,
}

/// The engines `--engine` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EngineKind {
    Loom,
    Random,
    Pct,
    Dfs,
    Stress,
    Optimal,
    OptimalSc,
}

impl EngineKind {
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Loom,
        EngineKind::Random,
        EngineKind::Pct,
        EngineKind::Dfs,
        EngineKind::Stress,
        EngineKind::Optimal,
        EngineKind::OptimalSc,
    ];

    /// The engine this name stands for.
    pub fn engine(self) -> &'static dyn Engine {
        match self {
            EngineKind::Loom => &loom::Loom,
            EngineKind::Random => &shuttle::Random,
            EngineKind::Pct => &shuttle::Pct,
            EngineKind::Dfs => &shuttle::Dfs,
            EngineKind::Stress => &stress::Stress,
            EngineKind::Optimal => &optimal::Optimal(optimal::Model::Rc11),
            EngineKind::OptimalSc => &optimal::Optimal(optimal::Model::Sc),
        }
    }

    pub fn name(self) -> &'static str {
        self.engine().name()
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
                let names: Vec<&str> = EngineKind::ALL.iter().map(|e| e.name()).collect();
                format!(
                    "unknown engine '{s}' (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// A failing execution.
#[derive(Clone, Debug)]
pub struct Failure {
    pub record: Record,
    /// Set when the engine detected it, rather than an invariant.
    pub engine: Option<EngineFailure>,
    /// shuttle: the serialised schedule that replays it.
    pub schedule: Option<String>,
    /// Preemptions in the failing execution (shuttle), or the loom bound
    /// under which it was found.
    pub preemptions: Option<usize>,
}

/// The size of the executions a search ran, measured by the scheduler: what
/// PCT's guarantee is stated in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// The most tasks one execution had (the scenario's driver included:
    /// the scheduler gives it a priority like any thread).
    pub threads: usize,
    /// The most scheduling steps one execution took, counting only those
    /// where more than one task could run (the steps PCT counts).
    pub steps: usize,
}

/// Part `index` of `count` of one loom search split by its schedule prefix
/// (vendor/loom/VFSMC-PATCHES.md, section 2): the subtrees numbered
/// `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub index: usize,
    pub count: usize,
}

/// What one search covered and found.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    /// Executions of the search's own (for a split part: owned subtrees).
    pub executions: usize,
    /// A split part: executions run only to find the next subtree of
    /// another part (each another part's execution too).
    pub probes: usize,
    /// A split part: the subtrees of the whole search, every part's.
    pub subtrees: usize,
    /// With `Budget::fingerprints`: one per execution of the search's own.
    pub fingerprints: Option<BTreeSet<u64>>,
    /// Executions that ended with a thread waiting on what a revisit will
    /// change (optimal; counted among `executions`).
    pub blocked: usize,
    /// With `Budget::preemption_counts` (optimal): the fewest preemptions
    /// of each execution's graph, in the order the search explored them.
    pub preemption_counts: Option<Vec<usize>>,
    /// The space under the stated bound was explored completely.
    pub exhaustive: bool,
    /// loom: the preemption bound of the deciding run (`None`: unbounded).
    pub preemption_bound: Option<usize>,
    pub failure: Option<Failure>,
    pub reached: BTreeSet<&'static str>,
    /// What the executions ran of the variants' code.
    pub patch: PatchRun,
    /// The executions' size, where the engine measures it (shuttle).
    pub shape: Option<Shape>,
}

/// What the executions of one search ran of the variants' code: the sites
/// and exits of [`vfsmc_model::patch`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchRun {
    /// Executions of the search's own in which some site chose a variant's
    /// branch (or an exit of a changed region ran).
    pub changed: usize,
    /// Every site and exit some execution ran, with the branch it chose.
    pub hits: BTreeSet<Hit>,
}

impl Exploration {
    /// The preemption bound of loom's deciding run, or the preemptions in a
    /// failing shuttle execution; what a report states as its bound.
    pub fn max_preemptions(&self) -> Option<usize> {
        self.preemption_bound
            .or_else(|| self.failure.as_ref().and_then(|f| f.preemptions))
    }
}

/// One execution of a check, as an engine calls it.
pub type Body = Arc<dyn Fn() + Send + Sync>;

/// Runs a search of `body` with `engine` within `budget`, with engine panics
/// silenced.
pub fn explore(engine: EngineKind, budget: &Budget, body: Body) -> Exploration {
    crate::quiet::quietly(|| engine.engine().explore(budget, body))
}

/// What the executions of one search left behind, outside the engine.
struct Collector {
    executions: usize,
    probes: usize,
    fingerprints: Option<BTreeSet<u64>>,
    reached: BTreeSet<&'static str>,
    patch: PatchRun,
    /// The search's execution state, reused by every execution.
    session: Session,
}

impl Collector {
    /// Adds what the execution that just ended left in `session`. Called
    /// after an execution returns, and by [`Failure::from_panic`] for the one
    /// that failed (its unwinding never reaches the code after the body:
    /// the engine ends it).
    fn collect(&mut self, session: &Session, probing: bool) {
        session.reached_into(&mut self.reached);
        let changed = session.hits_into(&mut self.patch.hits);
        if !probing {
            self.patch.changed += usize::from(changed);
            if let Some(f) = self.fingerprints.as_mut() {
                f.insert(session.fingerprint());
            }
        }
    }

    /// What the search found outside the engine, as an exploration has it.
    fn exploration(&self) -> Exploration {
        Exploration {
            executions: self.executions,
            probes: self.probes,
            fingerprints: self.fingerprints.clone(),
            reached: self.reached.clone(),
            patch: self.patch.clone(),
            ..Exploration::default()
        }
    }

    fn new(budget: &Budget) -> Arc<Mutex<Collector>> {
        Arc::new(Mutex::new(Collector {
            executions: 0,
            probes: 0,
            fingerprints: budget.fingerprints.then(BTreeSet::new),
            reached: BTreeSet::new(),
            patch: PatchRun::default(),
            session: Session::new(budget.recording),
        }))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Wraps `body` so each execution starts afresh in the search's session and
/// its results are collected outside the engine. `probe` says whether the
/// execution is a split part's probe (counted apart: it is another part's).
fn instrument(
    body: Body,
    col: Arc<Mutex<Collector>>,
    probe: fn() -> bool,
) -> impl Fn() + Send + Sync + 'static {
    let session = lock(&col).session.clone();
    move || {
        let _running = session.begin();
        let probing = probe();
        if probing {
            lock(&col).probes += 1;
        } else {
            lock(&col).executions += 1;
        }
        crate::progress::execution();
        body();
        lock(&col).collect(&session, probing);
    }
}

/// No execution of an engine that does not split is a probe.
fn never_probe() -> bool {
    false
}

/// A failure the engine detected itself, rather than an invariant of the
/// model. Each engine tells its own apart from the model's panics in one
/// `classify` function, by the panic text of its pinned version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineFailure {
    /// Every thread is blocked.
    Deadlock,
    /// An execution ran past the engine's step bound: a spin or retry loop
    /// that never ends.
    Livelock,
    /// The model code itself panicked: a bug in the model, not a finding.
    ModelPanic,
    /// shuttle's PCT refuses a program with a single interleaving.
    NoConcurrency,
    /// A replayed schedule does not fit the execution.
    ReplayDiverged,
}

impl EngineFailure {
    /// The invariant a trace names it by. `NoConcurrency` and
    /// `ReplayDiverged` never reach a report (the first is a complete
    /// search, the second a [`ScheduleError`]); they are recorded as model
    /// panics, as they always were.
    pub fn invariant(self) -> &'static str {
        match self {
            EngineFailure::Deadlock => "deadlock",
            EngineFailure::Livelock => "livelock",
            EngineFailure::ModelPanic
            | EngineFailure::NoConcurrency
            | EngineFailure::ReplayDiverged => "model_panic",
        }
    }
}

/// How an engine names its panics.
type Classify = fn(&str) -> EngineFailure;

impl Failure {
    /// The failing execution behind a panic out of the engine: the model's
    /// violation if it raised one, else what `classify` makes of the panic.
    fn from_panic(
        col: &Mutex<Collector>,
        payload: Box<dyn std::any::Any + Send>,
        classify: Classify,
    ) -> Failure {
        let session = lock(col).session.clone();
        lock(col).collect(&session, false);
        let mut engine = None;
        if session.violation().is_none() {
            let msg = panic_message(&payload);
            let kind = classify(&msg);
            session.record_engine_failure(kind.invariant(), msg);
            engine = Some(kind);
        }
        Failure {
            record: session.record(),
            engine,
            schedule: None,
            preemptions: None,
        }
    }
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

/// Why a schedule string does not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// It is not a schedule vfsmc printed.
    Malformed { schedule: String },
    /// It decodes, but does not fit this check's execution.
    Diverged { schedule: String, step: usize },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Malformed { schedule } => write!(
                f,
                "bad schedule string '{schedule}' (expected the hex string vfsmc printed)"
            ),
            ScheduleError::Diverged { schedule, step } => write!(
                f,
                "schedule '{schedule}' does not replay on this check: it diverged after step {step} \
                 (it was recorded for another model, variant, scenario or input, or an older model)"
            ),
        }
    }
}

impl std::error::Error for ScheduleError {}
