//! The budget: every knob that bounds a search, in one place.
//!
//! Each knob has a `VFSMC_<KNOB>` environment variable; a few also have a
//! `vfsmc check` flag. Precedence: flag, then environment, then default.
//! [`Budget::default`] never reads the environment, so tests, snapshots and
//! corpus replays are the same on every machine; the CLI asks for
//! [`Budget::from_env`] explicitly.

use std::fmt;

use super::{EngineKind, Replay};

/// How much an engine may explore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Executions for random/pct/dfs/stress.
    pub iterations: usize,
    /// Seed of random and PCT, and of the search that shrinks a failure.
    pub seed: u64,
    /// loom: the largest preemption bound tried (`None`: finish unbounded).
    pub max_preemptions: Option<usize>,
    /// loom: stop after this many executions per bound (then not exhaustive).
    pub loom_cap: Option<usize>,
    /// PCT depth: preemptions the bug needs + 1.
    pub pct_depth: usize,
    /// loom: branches one execution may take before it is a livelock.
    pub loom_max_branches: usize,
    /// loom: executions between its checks of `loom_cap`.
    pub loom_checkpoint_interval: usize,
    /// shuttle: scheduling steps one execution may take before it is a
    /// livelock.
    pub shuttle_max_steps: usize,
    /// shuttle: executions of each PCT search that shrinks a failure.
    pub shrink_iterations: usize,
    /// shuttle: the deepest PCT depth shrinking tries (0: no shrinking).
    pub shrink_max_depth: usize,
    /// loom: the choice points in a split search's prefix; the subtrees
    /// below it are the units of `part`.
    pub split_depth: usize,
    /// loom: with a preemption bound, the choice points a split's prefix
    /// goes deeper for each preemption it has left beyond one.
    pub split_extend: usize,
    /// loom: search only this part of the subtrees (`vfsmc check --split`).
    pub part: Option<super::Part>,
    /// optimal: stop after this many executions (then not exhaustive).
    pub optimal_cap: Option<usize>,
    /// optimal: events one execution may add before it is a livelock.
    pub optimal_max_events: usize,
    /// optimal: the choice depth a split deals subtrees at.
    pub optimal_split_depth: usize,
    /// Collect a fingerprint of every execution explored (the split's
    /// soundness test compares the sets); no flag or variable sets it.
    pub fingerprints: bool,
    /// optimal: count the preemptions of every execution's graph (the
    /// bounded search's completeness test compares them with what a
    /// bounded search reaches); no flag or variable sets it.
    pub preemption_counts: bool,
    /// Whether executions record their steps and check invariants. Only
    /// `vfsmc bench --overhead` turns it off, to price them: a search that
    /// does not record proves nothing, so no flag or variable sets it.
    pub recording: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            iterations: 10_000,
            seed: 1,
            max_preemptions: None,
            loom_cap: None,
            pct_depth: 4,
            loom_max_branches: 10_000,
            loom_checkpoint_interval: 1,
            shuttle_max_steps: 200_000,
            shrink_iterations: 2_000,
            shrink_max_depth: 3,
            split_depth: 40,
            split_extend: 24,
            part: None,
            optimal_cap: None,
            optimal_max_events: 100_000,
            optimal_split_depth: 12,
            fingerprints: false,
            preemption_counts: false,
            recording: true,
        }
    }
}

/// A knob value that is out of range or not a number: bad input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetError(pub String);

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BudgetError {}

/// The environment variable shuttle reads to replace the seed it is given.
const SHUTTLE_SEED_OVERRIDE: &str = "SHUTTLE_RANDOM_SEED";

impl Budget {
    /// The default budget with every `VFSMC_*` variable that is set applied.
    pub fn from_env() -> Result<Budget, BudgetError> {
        Budget::default().with_env()
    }

    /// This budget with every `VFSMC_*` variable that is set applied.
    pub fn with_env(self) -> Result<Budget, BudgetError> {
        self.with_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// This budget with the variables `var` knows applied; `var` stands in
    /// for the environment.
    pub fn with_vars(
        mut self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Budget, BudgetError> {
        if var(SHUTTLE_SEED_OVERRIDE).is_some() {
            return Err(BudgetError(format!(
                "{SHUTTLE_SEED_OVERRIDE} is set: shuttle would search with it instead of the \
                 budget's seed and reports would name the wrong one (unset it; use --seed or {})",
                Knob::Seed.env()
            )));
        }
        for knob in Knob::ALL {
            if let Some(text) = var(knob.env()) {
                knob.set(&mut self, knob.parse(knob.env(), &text)?);
            }
        }
        Ok(self)
    }
}

/// One field of [`Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    Iterations,
    Seed,
    MaxPreemptions,
    LoomCap,
    PctDepth,
    LoomMaxBranches,
    LoomCheckpointInterval,
    ShuttleMaxSteps,
    ShrinkIterations,
    ShrinkMaxDepth,
    SplitDepth,
    SplitExtend,
    OptimalCap,
    OptimalMaxEvents,
    OptimalSplitDepth,
}

impl Knob {
    pub const ALL: [Knob; 15] = [
        Knob::Iterations,
        Knob::Seed,
        Knob::MaxPreemptions,
        Knob::LoomCap,
        Knob::PctDepth,
        Knob::LoomMaxBranches,
        Knob::LoomCheckpointInterval,
        Knob::ShuttleMaxSteps,
        Knob::ShrinkIterations,
        Knob::ShrinkMaxDepth,
        Knob::SplitDepth,
        Knob::SplitExtend,
        Knob::OptimalCap,
        Knob::OptimalMaxEvents,
        Knob::OptimalSplitDepth,
    ];

    /// Its environment variable.
    pub fn env(self) -> &'static str {
        match self {
            Knob::Iterations => "VFSMC_ITERATIONS",
            Knob::Seed => "VFSMC_SEED",
            Knob::MaxPreemptions => "VFSMC_MAX_PREEMPTIONS",
            Knob::LoomCap => "VFSMC_LOOM_CAP",
            Knob::PctDepth => "VFSMC_PCT_DEPTH",
            Knob::LoomMaxBranches => "VFSMC_LOOM_MAX_BRANCHES",
            Knob::LoomCheckpointInterval => "VFSMC_LOOM_CHECKPOINT_INTERVAL",
            Knob::ShuttleMaxSteps => "VFSMC_SHUTTLE_MAX_STEPS",
            Knob::ShrinkIterations => "VFSMC_SHRINK_ITERATIONS",
            Knob::ShrinkMaxDepth => "VFSMC_SHRINK_MAX_DEPTH",
            Knob::SplitDepth => "VFSMC_SPLIT_DEPTH",
            Knob::SplitExtend => "VFSMC_SPLIT_EXTEND",
            Knob::OptimalCap => "VFSMC_OPTIMAL_CAP",
            Knob::OptimalMaxEvents => "VFSMC_OPTIMAL_MAX_EVENTS",
            Knob::OptimalSplitDepth => "VFSMC_OPTIMAL_SPLIT_DEPTH",
        }
    }

    /// Its `vfsmc check` flag, if it has one.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Knob::Iterations => Some("--iterations"),
            Knob::Seed => Some("--seed"),
            Knob::MaxPreemptions => Some("--max-preemptions"),
            Knob::PctDepth => Some("--pct-depth"),
            Knob::SplitDepth => Some("--split-depth"),
            Knob::SplitExtend => Some("--split-extend"),
            _ => None,
        }
    }

    /// What it bounds.
    pub fn about(self) -> &'static str {
        match self {
            Knob::Iterations => {
                "executions per search; the --iterations flag also caps loom (as VFSMC_LOOM_CAP)"
            }
            Knob::Seed => "seed of the random and PCT searches, and of shrinking",
            Knob::MaxPreemptions => {
                "loom: largest preemption bound tried (unset: the scenario's PR-tier bound, \
                 else unbounded); optimal: its preemption bound (unset: unbounded)"
            }
            Knob::LoomCap => {
                "loom executions per bound before it stops, no longer exhaustive; unset: no cap"
            }
            Knob::PctDepth => "PCT depth: the preemptions a bug needs + 1",
            Knob::LoomMaxBranches => {
                "branches one loom execution may take before it is reported as a livelock"
            }
            Knob::LoomCheckpointInterval => {
                "executions between loom's checks of its cap (1: the cap is exact)"
            }
            Knob::ShuttleMaxSteps => {
                "scheduling steps one shuttle execution may take before it is reported as a \
                 livelock"
            }
            Knob::ShrinkIterations => {
                "executions of each PCT search that shrinks a shuttle failure to fewer preemptions"
            }
            Knob::ShrinkMaxDepth => "deepest PCT depth shrinking tries (0: no shrinking)",
            Knob::SplitDepth => {
                "choice points in the prefix of a --split loom search: its subtrees are dealt to \
                 the parts"
            }
            Knob::SplitExtend => {
                "choice points a --split loom search with a preemption bound adds to a prefix \
                 for each preemption it has left beyond one: the subtrees with more preemptions \
                 left are larger, so they are divided further (0: every prefix has \
                 --split-depth)"
            }
            Knob::OptimalCap => {
                "executions of an optimal search before it stops, no longer exhaustive; unset: \
                 no cap"
            }
            Knob::OptimalMaxEvents => {
                "events one optimal execution may add before it is reported as a livelock"
            }
            Knob::OptimalSplitDepth => {
                "choice depth whose subtrees a --split optimal search deals to the parts (its \
                 tree is narrow at the top: 12 gave fdtable churn 121 subtrees, the largest of \
                 8 parts 1/7.4 of the search)"
            }
        }
    }

    /// The smallest and largest values it takes.
    fn range(self) -> (u64, u64) {
        match self {
            Knob::Seed | Knob::ShrinkMaxDepth => (0, u64::MAX),
            // Beyond 16 preemptions no loom search of a scenario ends.
            Knob::MaxPreemptions => (0, 16),
            Knob::SplitDepth | Knob::OptimalSplitDepth => (1, 64),
            Knob::SplitExtend => (0, 64),
            _ => (1, u64::MAX),
        }
    }

    fn expected(self) -> String {
        match self.range() {
            (0, u64::MAX) => "a non-negative integer".to_string(),
            (min, u64::MAX) => format!("an integer at least {min}"),
            (min, max) => format!("an integer in {min}..={max}"),
        }
    }

    /// Checks `value`, given by `source` (a flag or a variable).
    pub fn check(self, source: &str, value: u64) -> Result<u64, BudgetError> {
        let (min, max) = self.range();
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(self.bad(source, &value.to_string()))
        }
    }

    /// Parses and checks `text`, given by `source`.
    pub fn parse(self, source: &str, text: &str) -> Result<u64, BudgetError> {
        let value = text.parse().map_err(|_| self.bad(source, text))?;
        self.check(source, value)
    }

    fn bad(self, source: &str, text: &str) -> BudgetError {
        BudgetError(format!(
            "{source}={text}: expected {} ({})",
            self.expected(),
            self.about()
        ))
    }

    /// Sets it in `budget` to a value [`Knob::check`] accepted.
    pub fn set(self, budget: &mut Budget, value: u64) {
        let n = usize::try_from(value).unwrap_or(usize::MAX);
        match self {
            Knob::Iterations => budget.iterations = n,
            Knob::Seed => budget.seed = value,
            Knob::MaxPreemptions => budget.max_preemptions = Some(n),
            Knob::LoomCap => budget.loom_cap = Some(n),
            Knob::PctDepth => budget.pct_depth = n,
            Knob::LoomMaxBranches => budget.loom_max_branches = n,
            Knob::LoomCheckpointInterval => budget.loom_checkpoint_interval = n,
            Knob::ShuttleMaxSteps => budget.shuttle_max_steps = n,
            Knob::ShrinkIterations => budget.shrink_iterations = n,
            Knob::ShrinkMaxDepth => budget.shrink_max_depth = n,
            Knob::SplitDepth => budget.split_depth = n,
            Knob::SplitExtend => budget.split_extend = n,
            Knob::OptimalCap => budget.optimal_cap = Some(n),
            Knob::OptimalMaxEvents => budget.optimal_max_events = n,
            Knob::OptimalSplitDepth => budget.optimal_split_depth = n,
        }
    }

    /// Its value in `budget`, as `--help` shows the default.
    fn show(self, budget: &Budget) -> String {
        let opt = |v: Option<usize>| v.map_or("unset".to_string(), |n| n.to_string());
        match self {
            Knob::Iterations => budget.iterations.to_string(),
            Knob::Seed => budget.seed.to_string(),
            Knob::MaxPreemptions => opt(budget.max_preemptions),
            Knob::LoomCap => opt(budget.loom_cap),
            Knob::PctDepth => budget.pct_depth.to_string(),
            Knob::LoomMaxBranches => budget.loom_max_branches.to_string(),
            Knob::LoomCheckpointInterval => budget.loom_checkpoint_interval.to_string(),
            Knob::ShuttleMaxSteps => budget.shuttle_max_steps.to_string(),
            Knob::ShrinkIterations => budget.shrink_iterations.to_string(),
            Knob::ShrinkMaxDepth => budget.shrink_max_depth.to_string(),
            Knob::SplitDepth => budget.split_depth.to_string(),
            Knob::SplitExtend => budget.split_extend.to_string(),
            Knob::OptimalCap => opt(budget.optimal_cap),
            Knob::OptimalMaxEvents => budget.optimal_max_events.to_string(),
            Knob::OptimalSplitDepth => budget.optimal_split_depth.to_string(),
        }
    }

    /// The engines whose search reads it.
    fn readers(self) -> Vec<&'static str> {
        EngineKind::ALL
            .iter()
            .filter(|e| e.engine().reads(self))
            .map(|e| e.name())
            .collect()
    }
}

/// The `vfsmc check --help` section on the budget and the engines.
pub fn help() -> String {
    let mut out = wrap(
        "Budget: each knob is set by its flag, else its environment variable, else its \
         default. `vfsmc replay` ignores the environment, so a corpus file replays the same \
         everywhere.",
        0,
    );
    let defaults = Budget::default();
    for knob in Knob::ALL {
        let flag = knob.flag().map_or(String::new(), |f| format!("{f}, "));
        let about = format!("{}; read by {}", knob.about(), knob.readers().join(", "));
        out.push_str(&format!(
            "\n  {flag}{} (default {})\n",
            knob.env(),
            knob.show(&defaults)
        ));
        out.push_str(&wrap(&about, 6));
    }
    out.push_str("\nEngines:\n");
    for kind in EngineKind::ALL {
        let e = kind.engine();
        let search = if e.exhaustive() {
            "exhaustive"
        } else {
            "not exhaustive"
        };
        let replay = match e.replay() {
            Replay::Bound => "replays from its preemption bound",
            Replay::Schedule => "replays from a schedule string",
            Replay::Never => "does not replay",
        };
        out.push_str(&format!("\n  {} ({search}, {replay})\n", e.name()));
        out.push_str(&wrap(&format!("memory model: {}", e.memory_model()), 6));
    }
    out
}

/// `text` wrapped at 80 columns, each line indented by `indent`.
fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && indent + line.len() + 1 + word.len() > 80 {
            out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(set: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            set.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_variable_leaves_the_budget_as_it_was() {
        let b = Budget::default().with_vars(vars(&[])).unwrap();
        assert_eq!(b, Budget::default());
    }

    #[test]
    fn every_knob_is_set_by_its_variable() {
        for knob in Knob::ALL {
            let (_, max) = knob.range();
            let value = max.min(16);
            let b = Budget::default()
                .with_vars(vars(&[(knob.env(), &value.to_string())]))
                .unwrap();
            assert_ne!(b, Budget::default(), "{} changed nothing", knob.env());
            assert_eq!(knob.show(&b), value.to_string(), "{}", knob.env());
        }
    }

    #[test]
    fn a_malformed_variable_names_itself_and_what_it_expects() {
        for (value, expected) in [("abc", "an integer"), ("0", "at least 1"), ("", "integer")] {
            let err = Budget::default()
                .with_vars(vars(&[("VFSMC_ITERATIONS", value)]))
                .unwrap_err();
            assert!(
                err.0.starts_with(&format!("VFSMC_ITERATIONS={value}:")),
                "{err}"
            );
            assert!(err.0.contains(expected), "{err}");
        }
        let err = Budget::default()
            .with_vars(vars(&[("VFSMC_MAX_PREEMPTIONS", "17")]))
            .unwrap_err();
        assert!(err.0.contains("0..=16"), "{err}");
    }

    #[test]
    fn shuttles_own_seed_variable_is_refused() {
        let err = Budget::default()
            .with_vars(vars(&[("SHUTTLE_RANDOM_SEED", "3")]))
            .unwrap_err();
        assert!(err.0.contains("SHUTTLE_RANDOM_SEED"), "{err}");
    }

    #[test]
    fn every_knob_is_read_by_some_engine() {
        for knob in Knob::ALL {
            assert!(!knob.readers().is_empty(), "{} bounds nothing", knob.env());
        }
    }

    #[test]
    fn help_names_every_variable() {
        let help = help();
        for knob in Knob::ALL {
            assert!(help.contains(knob.env()), "{} undocumented", knob.env());
        }
        assert!(help.lines().all(|l| l.chars().count() <= 80), "{help}");
    }
}
