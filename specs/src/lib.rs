//! vfsmc-specs: what must hold.
//!
//! Per model, one [`Spec`]: its variants with their expected verdicts (the
//! manifest CI checks against what the engines actually report), its
//! scenarios with their reachability goals, its invariants (predicates over
//! the model's ghost state, read by reference), and its sequential reference.
//! Every registry row carries its own code — a variant row the value that
//! selects the model's behaviour, a scenario row its plan (a function of the
//! scenario bytes), an invariant row its check — so a row without code does
//! not compile.
//!
//! Engines never appear here; models never mention a spec.

pub mod fdtable;
pub mod freelist;
pub mod litmus;
pub mod nonblock;
pub mod open_creat;
pub mod primitives;
pub mod shared;
pub mod unlazy;

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use vfsmc_model::exec;
pub use vfsmc_model::exec::Broken;

/// What a variant must do on its scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Every invariant holds on every scenario.
    Holds,
    /// The named invariant breaks on the variant's witness scenario.
    Violates(&'static str),
    /// A reviewer's patch under judgement: checked like a holding variant
    /// on every scenario and reported, never failing `check` or `cargo
    /// test`; CI on `main` refuses the row (`.ci/run`): a candidate lives in
    /// a reviewer's tree, and lands as `Holds` or `Violates` once decided.
    Candidate,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Holds => f.write_str("holds"),
            Expected::Violates(inv) => write!(f, "violates:{inv}"),
            Expected::Candidate => f.write_str("candidate"),
        }
    }
}

/// What a variant's registry verdict depends on that not every engine can
/// produce. Each carries the reason printed when a check runs on an engine
/// blind to it: the check is reported as not judged, never silently
/// skipped. The engines, in `vfsmc`, say which needs they are blind to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// An outcome only weak memory shows: a missing barrier, a litmus
    /// `Sometimes` outcome.
    WeakMemory(&'static str),
    /// A load that reads a store which has not executed yet.
    LoadBuffering(&'static str),
    /// A lock's state read out of order with the accesses it orders
    /// (`spin_is_locked`).
    WeakLockState(&'static str),
    /// Ordering LKMM gives and C11 does not (cumulative lock ordering,
    /// po-unlock-lock-po); under C11 alone the `Never` outcome appears.
    LkmmOrdering(&'static str),
    /// An RMW that no store to its location can split.
    AtomicRmw(&'static str),
    /// Several preemptions, each inside a window a few steps wide of a long
    /// thread: a search that samples schedules (random, PCT) finds it with a
    /// per-run chance far below one over its budget; a bounded exhaustive
    /// search finds it at its bound.
    DeepSchedule(&'static str),
    /// Accesses ordered or not by happens-before, as a data-race check asks
    /// (`sync::epoch`).
    HappensBefore(&'static str),
}

impl Need {
    /// Why an engine blind to it cannot give the registry verdict.
    pub fn why(self) -> &'static str {
        match self {
            Need::WeakMemory(why)
            | Need::LoadBuffering(why)
            | Need::WeakLockState(why)
            | Need::LkmmOrdering(why)
            | Need::AtomicRmw(why)
            | Need::DeepSchedule(why)
            | Need::HappensBefore(why) => why,
        }
    }
}

/// One version of a model's code: a release, a patch revision, a bug. `C`
/// is the value that selects the model's behaviour (`()` in the registry's
/// model-independent view).
#[derive(Clone, Copy, Debug)]
pub struct Variant<C = ()> {
    pub name: &'static str,
    pub expected: Expected,
    /// For a violating variant, the scenario that shows it; for a holding
    /// one, empty (it must hold on every scenario).
    pub witness: &'static str,
    /// `file:function (version)`, commit or thread it mirrors.
    pub kernel: &'static str,
    /// One sentence for the reviewer.
    pub about: &'static str,
    pub code: C,
}

impl<C> Variant<C> {
    /// The row without its code.
    pub fn info(&self) -> Variant {
        Variant {
            name: self.name,
            expected: self.expected,
            witness: self.witness,
            kernel: self.kernel,
            about: self.about,
            code: (),
        }
    }
}

/// Which CI tier runs a scenario by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Every push: `cargo test --release` and `vfsmc check`.
    Pr,
    /// Nightly, or on request (`cargo test --release -- --ignored`,
    /// `vfsmc check --tier deep`): longer searches.
    Deep,
}

/// Initial state + a short program per thread + background actors. `P` is
/// how the scenario builds its plan from the scenario bytes.
#[derive(Clone, Copy, Debug)]
pub struct Scenario<P = ()> {
    pub name: &'static str,
    pub about: &'static str,
    /// Tracepoints some execution must hit, or the search is vacuous.
    pub goals: &'static [&'static str],
    /// Preemption bound that keeps loom inside the scenario's tier; `None`
    /// means loom explores it exhaustively.
    pub loom_bound: Option<usize>,
    /// The engine that gives a holding variant its registry verdict here.
    pub judge: Judge,
    pub tier: Tier,
    /// Whether the plan is built from input bytes (`--input`, `arbitrary`);
    /// such a scenario is checked on inputs, not on its own.
    pub generated: bool,
    /// Whether a run over the registry or a tier with `--split N` divides
    /// this row's searches into N parts (a run that names the scenario
    /// always does). Only for searches of millions of executions: each part
    /// of a split probes every subtree and repeats some of the others'
    /// behaviours, so a part of a smaller search costs more than the whole
    /// (docs/engines.md, "Which searches the deep tier divides").
    pub split: bool,
    pub plan: P,
}

impl<P> Scenario<P> {
    /// The row without its plan.
    pub fn info(&self) -> Scenario {
        Scenario {
            name: self.name,
            about: self.about,
            goals: self.goals,
            loom_bound: self.loom_bound,
            judge: self.judge,
            tier: self.tier,
            generated: self.generated,
            split: self.split,
            plan: (),
        }
    }
}

impl<P: Copy> Scenario<P> {
    /// This row with its holding variants judged by the optimal engine.
    pub const fn judged_on_optimal(self) -> Self {
        Scenario {
            judge: Judge::Optimal,
            ..self
        }
    }
}

/// Which engine gives a holding variant its registry verdict on a scenario.
/// A verdict the optimal engine cannot give (the variant needs what it is
/// blind to, [`Need`]) is loom's on every scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judge {
    /// loom, within the scenario's `loom_bound`.
    Loom,
    /// The optimal-DPOR engine, exhaustive with no preemption bound: one
    /// execution per class, measured cheaper than loom's search of the
    /// scenario (docs/engines.md has the figures).
    Optimal,
}

/// A scenario row as a spec writes it: its plan built from the scenario
/// bytes.
pub type ScenarioRow<P> = Scenario<fn(&[u8]) -> P>;

/// A hand-written PR-tier scenario row.
pub const fn scenario<P>(
    name: &'static str,
    about: &'static str,
    goals: &'static [&'static str],
    loom_bound: Option<usize>,
    plan: fn(&[u8]) -> P,
) -> ScenarioRow<P> {
    Scenario {
        name,
        about,
        goals,
        loom_bound,
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan,
    }
}

/// A hand-written deep-tier scenario row, searched by loom to `bound`.
pub const fn deep<P>(
    name: &'static str,
    about: &'static str,
    goals: &'static [&'static str],
    bound: usize,
    plan: fn(&[u8]) -> P,
) -> ScenarioRow<P> {
    Scenario {
        tier: Tier::Deep,
        ..scenario(name, about, goals, Some(bound), plan)
    }
}

/// How an invariant is checked.
pub enum Check<S: 'static> {
    /// After every step, on the state as it is.
    Step(fn(&S) -> Result<(), String>),
    /// Once every thread has finished.
    End(fn(&S) -> Result<(), String>),
    /// Once every thread has finished, naming the step that caused a
    /// failure where the check can tell (`exec::last_write`): a report
    /// then points at the put that underflowed, not at the last step.
    EndAt(fn(&S) -> Result<(), Broken>),
    /// Raised by the model itself where it happens (a check no state
    /// predicate can make, e.g. a Dekker pair of flags, or an engine's own
    /// report); the kernel's shared checks of this kind are in [`shared`].
    Raised,
}

/// A named predicate over the model's state or the finished execution.
/// `K` is its check (`()` in the model-independent view).
#[derive(Clone, Copy, Debug)]
pub struct Invariant<K = ()> {
    pub name: &'static str,
    pub about: &'static str,
    pub check: K,
}

impl<K> Invariant<K> {
    /// The row without its check.
    pub fn info(&self) -> Invariant {
        Invariant {
            name: self.name,
            about: self.about,
            check: (),
        }
    }
}

/// One mechanism's registry and how it runs.
pub trait Spec: Sync + 'static {
    /// What a variant row selects in the model.
    type Code: Copy + fmt::Debug + Send + Sync + 'static;
    /// What a scenario row builds from the scenario bytes.
    type Plan: Send + Sync + 'static;
    /// The state the invariants read (by reference, never cloned).
    type State: Send + Sync + 'static;

    const NAME: &'static str;
    /// What the model mirrors, in one line.
    const ABOUT: &'static str;

    fn variants() -> &'static [Variant<Self::Code>];
    fn scenarios() -> &'static [ScenarioRow<Self::Plan>];
    fn invariants() -> &'static [Invariant<Check<Self::State>>];
    /// The shared invariants the primitives raise, listed with the model's
    /// own.
    const SHARED: &'static [Invariant] = shared::KERNEL;
    /// Invariants of a model this one is composed of, kept on here, whose
    /// breaking variants (and shortest traces) are in that model's registry
    /// (none unless the model says so).
    const WITNESSED_ELSEWHERE: &'static [&'static str] = &[];

    /// One execution: build the state, [`Watch::start`] it, run the threads,
    /// join them, then [`Watch::finish`]. Called once per explored
    /// interleaving, inside an engine.
    fn execute(code: Self::Code, plan: &Self::Plan, watch: &Watch<Self>);

    /// The state, in a few lines, for a violation's report.
    fn render(state: &Self::State) -> String;

    /// The model's own code, as paths under `model/src/` (a folder ends in
    /// `/`): what `vfsmc show` sums the measured line coverage over
    /// (`model/COVERAGE`, written by `scripts/model-coverage`).
    const CODE: &'static [&'static str] = &[];

    /// What the model cannot express: behaviours of the kernel no scenario
    /// or adversary of this model can produce, so a "holds" says nothing
    /// about them (`vfsmc show` prints them).
    const LIMITS: &'static [&'static str] = &[];

    /// Whether a holding variant is checked on a hand-written scenario (all
    /// of them unless the model says otherwise).
    fn applies(_code: Self::Code, _scenario: &'static str) -> bool {
        true
    }

    /// Whether a scenario's goal is one `code` can reach at all (a
    /// tracepoint in code an older base does not have): an exhaustive
    /// search of that variant that misses it is not vacuous. Every goal
    /// applies unless the model says otherwise.
    fn goal_applies(_code: Self::Code, _goal: &'static str) -> bool {
        true
    }

    /// What `variant`'s registry verdict needs beyond interleavings (see
    /// [`Need`]); none unless the model says otherwise.
    fn needs(_variant: &Variant<Self::Code>) -> &'static [Need] {
        &[]
    }

    /// Invariants besides its registry one that `variant`'s bug breaks
    /// first on some schedules (two views of one defect): a verdict naming
    /// one of them agrees with the registry. None unless the model says so.
    fn also_violates(_variant: &Variant<Self::Code>) -> &'static [&'static str] {
        &[]
    }
}

/// Connects one execution's state to the invariants of its spec.
pub struct Watch<S: Spec + ?Sized>(PhantomData<fn(&S)>);

impl<S: Spec> Watch<S> {
    /// Checks every step invariant after each step from now on, and renders
    /// `state` when one breaks.
    pub fn start(&self, state: &Arc<S::State>) {
        for inv in S::invariants() {
            if let Check::Step(f) = inv.check {
                let s = state.clone();
                exec::invariant(inv.name, move || f(&s));
            }
        }
        let s = state.clone();
        exec::observe(move || S::render(&s));
    }

    /// Checks the step invariants on the final state, then the
    /// end-of-execution invariants (`thread` names who checks).
    pub fn finish(&self, thread: &str, state: &S::State) {
        exec::check_steps_at_end(thread);
        for inv in S::invariants() {
            if matches!(inv.check, Check::End(_) | Check::EndAt(_)) {
                exec::check_final(thread, inv.name, || {
                    inv.check.at_end(state).unwrap_or(Ok(()))
                });
            }
        }
    }
}

/// Checks every end-of-execution invariant of `invariants` on `state` and
/// raises the first that fails as the execution's violation (by `thread`):
/// what [`Watch::finish`] does, for a sequential run outside
/// [`Spec::execute`] (the references' `run_single`).
pub fn raise_end_violations<S>(thread: &str, invariants: &[Invariant<Check<S>>], state: &S) {
    for inv in invariants {
        if let Some(Err(why)) = inv.check.at_end(state) {
            exec::raise_at(thread, inv.name, why);
        }
    }
}

/// A failure of an end check about what `thread` returned: caused by that
/// thread's last step, where its operation returned.
pub fn returned_by(thread: &str, message: String) -> Broken {
    Broken::at(message, exec::last_step_of(thread))
}

impl<S> Check<S> {
    /// An end-of-execution check's verdict on `state`; `None` for the
    /// other kinds.
    pub fn at_end(&self, state: &S) -> Option<Result<(), Broken>> {
        match *self {
            Check::End(f) => Some(f(state).map_err(Broken::from)),
            Check::EndAt(f) => Some(f(state)),
            Check::Step(_) | Check::Raised => None,
        }
    }
}

/// A view of the state that several step invariants read, computed once per
/// recorded step rather than once per invariant.
pub struct PerStep<T: Copy>(std::sync::Mutex<Option<(usize, T)>>);

impl<T: Copy> PerStep<T> {
    pub fn new() -> Self {
        PerStep(std::sync::Mutex::new(None))
    }

    /// The view at the current step, computing it with `f` if this step has
    /// not asked for it yet.
    pub fn get(&self, f: impl FnOnce() -> T) -> T {
        let step = exec::steps_recorded();
        let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match *memo {
            Some((at, v)) if at == step => v,
            _ => {
                let v = f();
                *memo = Some((step, v));
                v
            }
        }
    }
}

impl<T: Copy> Default for PerStep<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// What one execution runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub variant: String,
    pub scenario: String,
    /// Scenario bytes for generated scenarios; empty otherwise.
    pub input: Vec<u8>,
}

/// One execution, as an engine calls it.
pub type Body = Arc<dyn Fn() + Send + Sync>;

/// A mechanism as the checker sees it, whatever its types.
pub trait Model: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn variants(&'static self) -> &'static [Variant];
    fn scenarios(&'static self) -> &'static [Scenario];
    fn invariants(&'static self) -> &'static [Invariant];

    /// The closure that runs one execution of `run`, its variant and plan
    /// resolved once; an error names an unknown variant or scenario.
    fn body(&self, run: &Run) -> Result<Body, String>;

    /// Whether holding variant `variant` is checked on scenario `scenario`.
    fn applies(&self, variant: &str, scenario: &str) -> bool;

    /// See [`Spec::LIMITS`].
    fn limits(&self) -> &'static [&'static str];

    /// See [`Spec::CODE`].
    fn code(&self) -> &'static [&'static str];

    /// See [`Spec::goal_applies`].
    fn goal_applies(&self, variant: &str, goal: &'static str) -> bool;

    /// What `variant`'s registry verdict needs beyond interleavings, in the
    /// order they are asked: the first need an engine is blind to gives the
    /// reason its check is not judged.
    fn needs(&self, variant: &str) -> &'static [Need];

    /// The invariants besides its registry one that `variant`'s bug may
    /// break first (see [`Spec::also_violates`]).
    fn also_violates(&self, variant: &str) -> &'static [&'static str];

    /// The variant sites' names (`vfsmc_model::patch`) `variant`'s code
    /// selects: the bugs and changes it switches on, whichever flavour
    /// carries them. Empty for a base, and for the models whose variants
    /// are spec-level uses of a primitive (primitives, litmus).
    fn changes(&self, variant: &str) -> Vec<&'static str>;

    /// Whether invariant `name` is one of the shared kernel checks.
    fn is_shared(&self, name: &str) -> bool {
        shared::KERNEL.iter().any(|i| i.name == name)
    }

    /// Whether invariant `name`'s witness lives in another model's registry
    /// (a shared kernel check, or one a composed model keeps on from the
    /// model it comes from: see [`Spec::WITNESSED_ELSEWHERE`]).
    fn witnessed_elsewhere(&self, name: &str) -> bool;

    fn variant(&'static self, name: &str) -> Option<&'static Variant> {
        self.variants().iter().find(|v| v.name == name)
    }
    fn scenario(&'static self, name: &str) -> Option<&'static Scenario> {
        self.scenarios().iter().find(|s| s.name == name)
    }
    /// The scenarios a variant is checked on by default in `tier` (a violating
    /// variant on its witness, a holding one on every hand-written scenario
    /// it applies to).
    fn scenarios_for(&'static self, v: &Variant, tier: Tier) -> Vec<&'static Scenario> {
        match v.expected {
            Expected::Violates(_) => self.scenario(v.witness).into_iter().collect(),
            Expected::Holds | Expected::Candidate => self
                .scenarios()
                .iter()
                .filter(|s| !s.generated && s.tier == tier && self.applies(v.name, s.name))
                .collect(),
        }
    }
}

/// The registry view of a [`Spec`]: its rows without their code, built once.
pub struct Registered<S: Spec> {
    variants: OnceLock<Vec<Variant>>,
    scenarios: OnceLock<Vec<Scenario>>,
    invariants: OnceLock<Vec<Invariant>>,
    spec: PhantomData<fn(&S)>,
}

impl<S: Spec> Registered<S> {
    pub const fn new() -> Self {
        Registered {
            variants: OnceLock::new(),
            scenarios: OnceLock::new(),
            invariants: OnceLock::new(),
            spec: PhantomData,
        }
    }

    fn row(&self, name: &str) -> Option<&'static Variant<S::Code>> {
        S::variants().iter().find(|v| v.name == name)
    }
}

impl<S: Spec> Default for Registered<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Spec> Model for Registered<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }
    fn about(&self) -> &'static str {
        S::ABOUT
    }
    fn variants(&'static self) -> &'static [Variant] {
        self.variants
            .get_or_init(|| S::variants().iter().map(Variant::info).collect())
    }
    fn scenarios(&'static self) -> &'static [Scenario] {
        self.scenarios
            .get_or_init(|| S::scenarios().iter().map(Scenario::info).collect())
    }
    fn invariants(&'static self) -> &'static [Invariant] {
        self.invariants.get_or_init(|| {
            let mut all: Vec<Invariant> = S::invariants().iter().map(Invariant::info).collect();
            for i in S::SHARED {
                if !all.iter().any(|a| a.name == i.name) {
                    all.push(*i);
                }
            }
            all
        })
    }

    fn body(&self, run: &Run) -> Result<Body, String> {
        let v = self
            .row(&run.variant)
            .ok_or_else(|| format!("{} has no variant '{}'", S::NAME, run.variant))?;
        let s = S::scenarios()
            .iter()
            .find(|s| s.name == run.scenario)
            .ok_or_else(|| format!("{} has no scenario '{}'", S::NAME, run.scenario))?;
        let plan = Arc::new((s.plan)(&run.input));
        let code = v.code;
        Ok(Arc::new(move || {
            S::execute(code, &plan, &Watch(PhantomData))
        }))
    }

    fn limits(&self) -> &'static [&'static str] {
        S::LIMITS
    }

    fn code(&self) -> &'static [&'static str] {
        S::CODE
    }

    fn changes(&self, variant: &str) -> Vec<&'static str> {
        self.row(variant)
            .map_or_else(Vec::new, |v| selected_names(&format!("{:?}", v.code)))
    }

    fn applies(&self, variant: &str, scenario: &str) -> bool {
        self.row(variant)
            .is_some_and(|v| S::applies(v.code, intern_scenario::<S>(scenario)))
    }

    fn needs(&self, variant: &str) -> &'static [Need] {
        self.row(variant).map_or(&[], S::needs)
    }

    fn goal_applies(&self, variant: &str, goal: &'static str) -> bool {
        self.row(variant)
            .is_none_or(|v| S::goal_applies(v.code, goal))
    }

    fn also_violates(&self, variant: &str) -> &'static [&'static str] {
        self.row(variant).map_or(&[], S::also_violates)
    }

    fn witnessed_elsewhere(&self, name: &str) -> bool {
        self.is_shared(name) || S::WITNESSED_ELSEWHERE.contains(&name)
    }
}

/// The site names (`vfsmc_model::patch::names`) that a code value's debug
/// form mentions: `Flavor { base: Current, bug: Some(FgetSkipsSlotRecheck) }`
/// selects `FgetSkipsSlotRecheck`. Every flavour keeps its bugs and changes
/// as fields of enum type, so their names are exactly the words of its
/// debug form that are also site names (a test checks that every bug
/// variant selects one).
fn selected_names(debug: &str) -> Vec<&'static str> {
    let names = vfsmc_model::patch::names();
    let mut out: Vec<&'static str> = debug
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter_map(|w| names.iter().find(|n| **n == w).copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The scenario row's own name (a `'static` str) for `name`, or "" when the
/// spec has no such scenario.
fn intern_scenario<S: Spec>(name: &str) -> &'static str {
    S::scenarios()
        .iter()
        .find(|s| s.name == name)
        .map_or("", |s| s.name)
}

static LITMUS: Registered<litmus::Litmus> = Registered::new();
static PRIMITIVES: Registered<primitives::Primitives> = Registered::new();
static FDTABLE: Registered<fdtable::Fdtable> = Registered::new();
static FREELIST: Registered<freelist::Freelist> = Registered::new();
static UNLAZY: Registered<unlazy::Unlazy> = Registered::new();
static OPEN_CREAT: Registered<open_creat::OpenCreat> = Registered::new();
static NONBLOCK: Registered<nonblock::Nonblock> = Registered::new();

/// Every model, in `vfsmc list` order.
pub fn models() -> Vec<&'static dyn Model> {
    vec![
        &LITMUS,
        &PRIMITIVES,
        &FDTABLE,
        &FREELIST,
        &UNLAZY,
        &OPEN_CREAT,
        &NONBLOCK,
    ]
}

/// The model called `name`.
pub fn model(name: &str) -> Option<&'static dyn Model> {
    models().into_iter().find(|m| m.name() == name)
}
