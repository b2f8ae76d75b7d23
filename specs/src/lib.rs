//! vfsmc-specs: what must hold.
//!
//! Per model: its variants with their expected verdicts (the manifest CI
//! checks against what the engines actually report), its scenarios with their
//! reachability goals, its invariants (predicates over an *observation* of the
//! state, never the model's internals), and its sequential reference.
//!
//! Engines never appear here; models never mention a spec.

pub mod fdtable;
pub mod freelist;
pub mod litmus;
pub mod primitives;

use std::fmt;

/// What a variant must do on its scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Every invariant holds on every scenario.
    Holds,
    /// The named invariant breaks on the variant's witness scenario.
    Violates(&'static str),
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Holds => f.write_str("holds"),
            Expected::Violates(inv) => write!(f, "violates:{inv}"),
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
}

impl Need {
    /// Why an engine blind to it cannot give the registry verdict.
    pub fn why(self) -> &'static str {
        match self {
            Need::WeakMemory(why)
            | Need::LoadBuffering(why)
            | Need::WeakLockState(why)
            | Need::LkmmOrdering(why)
            | Need::AtomicRmw(why) => why,
        }
    }
}

/// One version of a model's code: a release, a patch revision, a bug.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    pub name: &'static str,
    pub expected: Expected,
    /// For a violating variant, the scenario that shows it; for a holding
    /// one, empty (it must hold on every scenario).
    pub witness: &'static str,
    /// `file:function (version)`, commit or thread it mirrors.
    pub kernel: &'static str,
    /// One sentence for the reviewer.
    pub about: &'static str,
}

/// Initial state + a short program per thread + background actors.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    /// Tracepoints some execution must hit, or the search is vacuous.
    pub goals: &'static [&'static str],
    /// Preemption bound that keeps loom inside the PR tier; `None` means
    /// loom explores it exhaustively.
    pub loom_bound: Option<usize>,
    /// Whether the scenario is built from input bytes (`arbitrary`).
    pub generated: bool,
}

/// A named predicate over the observed state or the finished execution.
#[derive(Clone, Copy, Debug)]
pub struct Invariant {
    pub name: &'static str,
    pub about: &'static str,
}

/// What one execution runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub variant: String,
    pub scenario: String,
    /// Scenario bytes for generated scenarios; empty otherwise.
    pub input: Vec<u8>,
}

/// A model's entry in the registry: the manifest CI checks the engines
/// against.
pub struct Registry {
    pub name: &'static str,
    /// What the model mirrors, in one line.
    pub about: &'static str,
    pub variants: &'static [Variant],
    pub scenarios: &'static [Scenario],
    pub invariants: &'static [Invariant],
}

/// A mechanism: its registry entry and how to run one execution.
pub trait Model: Send + Sync {
    fn registry(&self) -> &'static Registry;

    /// One execution of `run`: build the initial state, spawn the threads,
    /// register invariants and the observer, join, check the final state.
    /// Called once per explored interleaving, inside an engine.
    fn execute(&self, run: &Run);

    /// What `variant`'s registry verdict needs beyond interleavings, in the
    /// order they are asked: the first need an engine is blind to gives the
    /// reason its check is not judged.
    fn needs(&self, _variant: &str) -> &'static [Need] {
        &[]
    }

    fn name(&self) -> &'static str {
        self.registry().name
    }
    fn about(&self) -> &'static str {
        self.registry().about
    }
    fn variants(&self) -> &'static [Variant] {
        self.registry().variants
    }
    fn scenarios(&self) -> &'static [Scenario] {
        self.registry().scenarios
    }
    fn invariants(&self) -> &'static [Invariant] {
        self.registry().invariants
    }

    fn variant(&self, name: &str) -> Option<&'static Variant> {
        self.variants().iter().find(|v| v.name == name)
    }
    fn scenario(&self, name: &str) -> Option<&'static Scenario> {
        self.scenarios().iter().find(|s| s.name == name)
    }
    /// The scenarios a variant is checked on by default.
    fn scenarios_for(&self, v: &Variant) -> Vec<&'static Scenario> {
        match v.expected {
            Expected::Violates(_) => self.scenario(v.witness).into_iter().collect(),
            Expected::Holds => self.scenarios().iter().filter(|s| !s.generated).collect(),
        }
    }
}

/// Every model, in `vfsmc list` order.
pub fn models() -> Vec<&'static dyn Model> {
    vec![
        &litmus::Litmus,
        &primitives::Primitives,
        &fdtable::Fdtable,
        &freelist::Freelist,
    ]
}

/// The model called `name`.
pub fn model(name: &str) -> Option<&'static dyn Model> {
    models().into_iter().find(|m| m.name() == name)
}
