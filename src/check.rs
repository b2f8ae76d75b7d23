//! A check: (model, variant, scenario, engine, budget) → verdict.
//!
//! The verdict is what the engine reported, never what the registry expects:
//! comparing the two is the caller's business (the verdict table in tests,
//! `vfsmc check` with no model).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};
use vfsmc_model::driver::{OpCost, Record};
use vfsmc_specs::{Expected, Judge, Model, Run, Scenario, Tier, Variant};

use crate::engine::{
    self, Body, Budget, EngineKind, Exploration, Found, Part, PatchRun, ScheduleError, Shape,
};
use crate::render;
use vfsmc_model::patch::Site;

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every invariant held on every execution explored, and every goal was
    /// reached (or, for a random engine, the unreached ones are reported).
    Holds,
    /// An invariant broke: trace and replay line attached.
    Violates,
    /// An exhaustive search held but never reached a declared goal: the
    /// scenario does not exercise its race, so "holds" would be vacuous.
    Unreached,
    /// The search itself panicked (outside any execution the engine could
    /// judge): the check has no verdict, and every other check still runs.
    Crashed,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::Violates => "violates",
            Verdict::Unreached => "unreached",
            Verdict::Crashed => "crashed",
        })
    }
}

/// Everything needed to run one check.
#[derive(Clone)]
pub struct Check {
    pub model: &'static dyn Model,
    pub variant: &'static Variant,
    pub scenario: &'static Scenario,
    pub engine: EngineKind,
    pub budget: Budget,
    /// Scenario bytes of a generated scenario.
    pub input: Vec<u8>,
    /// Replay this shuttle schedule instead of searching.
    pub schedule: Option<String>,
    /// A confidence the search must reach, for an engine that states a
    /// per-run guarantee (PCT): it picks the number of runs.
    pub confidence: Option<Target>,
}

/// A confidence for [`Check::confidence`]: at most `1 - level` probability
/// that every run misses a bug of the budget's PCT depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    pub level: f64,
    /// Runs no search exceeds, whatever the level needs.
    pub cap: usize,
    /// The seeds that share the runs: each runs its part.
    pub share: usize,
}

/// Runs of the first search of a confidence target, which measures the
/// executions' shape.
const PILOT_RUNS: usize = 10;

/// The outcome of a check.
#[derive(Clone, Debug)]
pub struct Report {
    pub model: String,
    pub variant: String,
    pub scenario: String,
    pub engine: EngineKind,
    pub verdict: Verdict,
    pub invariant: Option<String>,
    pub executions: usize,
    pub exhaustive: bool,
    pub max_preemptions: Option<usize>,
    pub seed: u64,
    pub schedule: Option<String>,
    pub input: Vec<u8>,
    pub record: Option<Record>,
    pub unreached: Vec<String>,
    /// The scenario's goals some execution reached.
    pub goals_hit: Vec<String>,
    pub expected: Expected,
    /// The size of the executions, where the engine measured it.
    pub shape: Option<Shape>,
    /// The PCT depth of the search (read by PCT only).
    pub pct_depth: usize,
    /// Wall-clock seconds the check took (never part of a verdict).
    pub seconds: f64,
    /// The confidence asked for and the runs it needed, when one was.
    pub target: Option<(f64, u64)>,
    /// The seeds whose searches this report combines (1: one search).
    pub seeds: u64,
    /// What stopped a crashed search (its panic's message).
    pub error: Option<String>,
    /// A split search: the part this report is of (a combined report keeps
    /// its deciding part's).
    pub part: Option<Part>,
    /// The parts this report combines (1: one search or one part).
    pub parts: usize,
    /// A split search: executions run only to find another part's subtree.
    pub probes: usize,
    /// A split search: the subtrees of the whole search.
    pub subtrees: usize,
    /// What the executions ran of the variants' code.
    pub reach: Reach,
    /// With `Budget::fingerprints`: one per distinct execution (a review
    /// compares BASE's with PATCHED's; only the review's cache keeps them).
    pub fingerprints: Option<BTreeSet<u64>>,
    /// Read from the review's cache (`crate::cache`), not searched now.
    pub cached: bool,
}

/// What one check's executions ran of the variants' code
/// (`vfsmc_model::patch`): the executions in which some site chose a
/// variant's branch, and the sites and exits that did, as
/// `model/src/FILE:LINE`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    pub changed: usize,
    pub taken: BTreeSet<String>,
}

impl Reach {
    fn of(run: &PatchRun) -> Reach {
        Reach {
            changed: run.changed,
            taken: run
                .hits
                .iter()
                .filter(|h| h.taken)
                .map(|h| format!("{}:{}", h.file, h.line))
                .collect(),
        }
    }

    /// Joins another search's (a part's, a seed's).
    pub fn join(&mut self, other: &Reach) {
        self.changed += other.changed;
        self.taken.extend(other.taken.iter().cloned());
    }

    /// Whether `site` chose the variant's branch in some execution.
    pub fn ran(&self, site: &Site) -> bool {
        self.taken.iter().any(|t| Reach::is_site(t, site))
    }

    /// Whether a `taken` entry (`FILE:LINE`) is `site`'s.
    pub fn is_site(taken: &str, site: &Site) -> bool {
        taken
            .rsplit_once(':')
            .is_some_and(|(f, l)| l.parse().is_ok_and(|l| site.is_at(f, l)))
    }

    pub fn json(&self) -> Value {
        json!({ "changed": self.changed, "taken": self.taken })
    }

    /// The object [`Reach::json`] wrote (absent: nothing ran).
    pub fn parse(v: Option<&Value>) -> Reach {
        let Some(v) = v else {
            return Reach::default();
        };
        Reach {
            changed: v.get("changed").and_then(Value::as_u64).unwrap_or(0) as usize,
            taken: v
                .get("taken")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        }
    }
}

/// What a PCT search says about the bugs it did not find: the guarantee of
/// Burckhardt et al. for the measured executions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence {
    pub shape: Shape,
    /// The bug depth the guarantee is stated for (the search's PCT depth).
    pub depth: usize,
    /// A lower bound on the probability that one run finds such a bug.
    pub per_run: f64,
    pub runs: usize,
    /// An upper bound on the probability that all the runs missed it.
    pub miss: f64,
}

impl Confidence {
    /// The guarantee of `runs` runs, `per_run` each.
    pub fn of(shape: Shape, depth: usize, per_run: f64, runs: usize) -> Confidence {
        Confidence {
            shape,
            depth,
            per_run,
            runs,
            miss: miss_probability(per_run, runs),
        }
    }

    /// Two lines for a text report, each within 80 columns.
    pub fn text(&self) -> String {
        let d = self.depth;
        let bound = match d {
            0 | 1 => "1/n".to_string(),
            2 => "1/(n*k)".to_string(),
            _ => format!("1/(n*k^{})", d - 1),
        };
        format!(
            "  pct: measured n={} threads, k={} steps. A depth-{d} bug is found per run with\n  \
             p >= {bound} = {}; {} runs all miss it with probability <= {}\n",
            self.shape.threads,
            self.shape.steps,
            sci(self.per_run),
            self.runs,
            sci(self.miss)
        )
    }

    pub fn json(&self) -> Value {
        json!({
            "threads": self.shape.threads,
            "steps": self.shape.steps,
            "depth": self.depth,
            "per_run_bound": self.per_run,
            "runs": self.runs,
            "miss_probability": self.miss,
        })
    }
}

/// (1 − p)^runs, computed without losing a small p to rounding.
pub fn miss_probability(per_run: f64, runs: usize) -> f64 {
    if per_run >= 1.0 {
        return if runs == 0 { 1.0 } else { 0.0 };
    }
    ((-per_run).ln_1p() * runs as f64).exp()
}

/// The runs that bring the miss probability of a `per_run` guarantee to at
/// most 1 − `confidence`.
pub fn runs_for(per_run: f64, confidence: f64) -> u64 {
    if per_run >= 1.0 {
        return 1;
    }
    let runs = (1.0 - confidence).ln() / (-per_run).ln_1p();
    runs.ceil().max(1.0).min(u64::MAX as f64) as u64
}

/// A probability in three significant digits: `0.0123`, `3.52e-8`.
pub fn sci(p: f64) -> String {
    if p < 1.0 && p > 0.99995 {
        return "~1".to_string();
    }
    if p == 0.0 || p >= 0.001 {
        let s = format!("{p:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    } else {
        format!("{p:.2e}")
    }
}

impl Check {
    /// A check of `variant` on `scenario` with the default budget (never
    /// the environment's) and the scenario's PR-tier loom bound.
    pub fn new(
        model: &'static dyn Model,
        variant: &'static Variant,
        scenario: &'static Scenario,
        engine: EngineKind,
    ) -> Check {
        Check {
            model,
            variant,
            scenario,
            engine,
            budget: Budget::default(),
            input: Vec::new(),
            schedule: None,
            confidence: None,
        }
        .with_budget(&Budget::default())
    }

    /// This check within `budget`; where the budget sets no bound and the
    /// engine is loom, the scenario's PR-tier bound applies. The scenario
    /// bounds are loom's: the optimal engine is bounded only when asked.
    pub fn with_budget(mut self, budget: &Budget) -> Check {
        let scenario_bound = self
            .scenario
            .loom_bound
            .filter(|_| self.engine == EngineKind::Loom);
        self.budget = Budget {
            max_preemptions: budget.max_preemptions.or(scenario_bound),
            ..budget.clone()
        };
        self
    }

    /// Why this check's engine cannot give the registry verdict, if it
    /// cannot: the variant needs something the engine is blind to.
    pub fn engine_limit(&self) -> Option<&'static str> {
        let needs = self.model.needs(self.variant.name);
        self.engine.engine().cannot_judge(needs)
    }

    fn run_spec(&self) -> Run {
        Run {
            variant: self.variant.name.to_string(),
            scenario: self.scenario.name.to_string(),
            input: self.input.clone(),
        }
    }

    /// `model/variant [scenario] engine`: how a line names this check.
    pub fn label(&self) -> String {
        format!(
            "{}/{} [{}] {}",
            self.model.name(),
            self.variant.name,
            self.scenario.name,
            self.engine
        )
    }

    /// The closure an engine runs once per execution.
    pub fn body(&self) -> Body {
        body_for(self.model, self.run_spec())
    }

    /// Runs the check; only a replay (`schedule`) can fail to start.
    pub fn run(&self) -> Result<Report, ScheduleError> {
        let start = std::time::Instant::now();
        let (exploration, needed) = match (&self.schedule, self.confidence) {
            (Some(s), _) => (engine::replay(s, &self.budget, self.body())?, None),
            (None, Some(t)) => self.explore_to(t),
            (None, None) => (
                engine::explore(self.engine, &self.budget, self.body()),
                None,
            ),
        };
        let mut r = self.report(exploration);
        r.seconds = start.elapsed().as_secs_f64();
        r.target = needed.map(|n| (self.confidence.map_or(0.0, |t| t.level), n));
        Ok(r)
    }

    /// Searches until the engine's guarantee reaches `t` (or its cap), and
    /// says how many runs that needed. A search with the same seed and more
    /// runs repeats the shorter one first, so each longer search extends the
    /// last: the shape it measures can only grow.
    fn explore_to(&self, t: Target) -> (Exploration, Option<u64>) {
        let engine = self.engine.engine();
        let mut budget = self.budget.clone();
        budget.iterations = PILOT_RUNS.min(t.cap);
        loop {
            let e = engine::explore(self.engine, &budget, self.body());
            let per_run = e
                .shape
                .and_then(|s| engine.per_run_guarantee(s, budget.pct_depth));
            let Some(p) = per_run else {
                return (e, None);
            };
            let needed = runs_for(p, t.level).div_ceil(t.share.max(1) as u64);
            let enough = usize::try_from(needed).is_ok_and(|n| n <= e.executions);
            if e.failure.is_some() || e.exhaustive || enough || budget.iterations >= t.cap {
                return (e, Some(needed));
            }
            budget.iterations = usize::try_from(needed).unwrap_or(usize::MAX).min(t.cap);
        }
    }

    fn report(&self, e: Exploration) -> Report {
        let exhaustive_engine = self.engine.engine().exhaustive() && e.exhaustive;
        let unreached: Vec<String> = if e.failure.is_none() && self.schedule.is_none() {
            self.scenario
                .goals
                .iter()
                .filter(|g| !e.reached.contains(*g))
                .filter(|g| self.model.goal_applies(self.variant.name, g))
                .map(|g| g.to_string())
                .collect()
        } else {
            Vec::new()
        };
        let verdict = match (&e.failure, unreached.is_empty()) {
            (Some(_), _) => Verdict::Violates,
            (None, false) if exhaustive_engine => Verdict::Unreached,
            _ => Verdict::Holds,
        };
        let max_preemptions = e.max_preemptions();
        let goals_hit = self
            .scenario
            .goals
            .iter()
            .filter(|g| e.reached.contains(*g))
            .map(|g| g.to_string())
            .collect();
        Report {
            model: self.model.name().to_string(),
            variant: self.variant.name.to_string(),
            scenario: self.scenario.name.to_string(),
            engine: self.engine,
            verdict,
            invariant: e
                .failure
                .as_ref()
                .and_then(|f| f.record.violation.as_ref())
                .map(|v| v.invariant.clone()),
            executions: e.executions,
            exhaustive: e.exhaustive,
            max_preemptions,
            seed: self.budget.seed,
            schedule: e.failure.as_ref().and_then(|f| f.schedule.clone()),
            input: self.input.clone(),
            record: e.failure.map(|f| f.record),
            unreached,
            goals_hit,
            expected: self.variant.expected,
            shape: e.shape,
            pct_depth: self.budget.pct_depth,
            seconds: 0.0,
            target: None,
            seeds: 1,
            error: None,
            part: self.budget.part,
            parts: 1,
            probes: e.probes,
            subtrees: e.subtrees,
            reach: Reach::of(&e.patch),
            fingerprints: e.fingerprints,
            cached: false,
        }
    }

    /// Runs the check on this thread; a panic of the search is this check's
    /// `crashed` verdict, not the caller's panic.
    pub fn run_guarded(&self) -> Result<Report, ScheduleError> {
        let start = std::time::Instant::now();
        crate::pool::guarded(|| self.run()).unwrap_or_else(|msg| {
            let mut r = self.report(Exploration::default());
            r.verdict = Verdict::Crashed;
            r.unreached.clear();
            r.error = Some(msg);
            r.seconds = start.elapsed().as_secs_f64();
            Ok(r)
        })
    }
}

/// The closure that runs one execution of `run` on `model`.
pub fn body_for(model: &'static dyn Model, run: Run) -> Body {
    model
        .body(&run)
        .unwrap_or_else(|e| panic!("a check names registered rows: {e}"))
}

/// FNV-1a, 64 bit: stable across machines and Rust versions.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A fingerprint of the model's scheduling points for `run`: a hash of every
/// step of the canonical sequential execution and of the number of
/// scheduling decisions it took (an added engine operation changes it even
/// when it records no step). A corpus seed recorded against another
/// fingerprint is stale and fails loudly.
pub fn fingerprint(model: &'static dyn Model, run: &Run) -> String {
    let seq = engine::sequential(body_for(model, run.clone()));
    let mut bytes = (seq.scheduling_points as u64).to_le_bytes().to_vec();
    for step in &seq.record.steps {
        render::encode(step, &seq.record, &mut bytes);
    }
    format!("{:016x}", fnv1a(&bytes))
}

/// Cost per operation in the canonical sequential execution.
pub fn costs(model: &'static dyn Model, run: &Run) -> BTreeMap<&'static str, OpCost> {
    engine::sequential(body_for(model, run.clone()))
        .record
        .costs
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses a hex string (scenario bytes).
pub fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("'{s}' is not an even-length hex string"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

impl Report {
    /// The one-line command that reproduces this report's failure.
    pub fn replay_line(&self) -> String {
        let mut line = format!(
            "vfsmc check {} --variant {} --scenario {} --engine {}",
            self.model, self.variant, self.scenario, self.engine
        );
        if !self.input.is_empty() {
            line.push_str(&format!(" --input {}", hex(&self.input)));
        }
        match self.engine.engine().replay_flags(&self.found()) {
            Ok(flags) => line + &flags,
            Err(why) => why,
        }
    }

    /// How this report's search was run, as its engine reads it.
    fn found(&self) -> Found<'_> {
        Found {
            seed: self.seed,
            max_preemptions: self.max_preemptions,
            schedule: self.schedule.as_deref(),
        }
    }

    fn coverage(&self) -> String {
        let engine = self.engine.engine().coverage(&self.found());
        let exhaustive = if self.exhaustive {
            "exhaustive"
        } else {
            "not exhaustive"
        };
        format!(
            "{} executions, {exhaustive}{engine}{}",
            self.executions,
            self.split_text()
        )
    }

    /// What a split search adds to its coverage: all its parts, or which.
    fn split_text(&self) -> String {
        let Some(p) = self.part else {
            return String::new();
        };
        if self.parts == p.count {
            format!(
                ", in {} parts ({} subtrees, {} probe executions)",
                p.count, self.subtrees, self.probes
            )
        } else {
            format!(", part {} of {}", p.index + 1, p.count)
        }
    }

    /// A one-line summary: `model/variant scenario engine: verdict (...)`.
    pub fn summary(&self) -> String {
        let what = match (&self.verdict, &self.invariant) {
            (Verdict::Violates, Some(inv)) => format!("violates {inv}"),
            (Verdict::Unreached, _) => format!("unreached goal(s): {}", self.unreached.join(", ")),
            (Verdict::Crashed, _) => {
                format!("crashed: {}", self.error.as_deref().unwrap_or("no message"))
            }
            (v, _) => v.to_string(),
        };
        format!(
            "{}/{} [{}] {}: {what} ({})",
            self.model,
            self.variant,
            self.scenario,
            self.engine,
            self.coverage()
        )
    }

    /// What this search guarantees about the bugs it did not find, if its
    /// engine states a guarantee.
    pub fn confidence(&self) -> Option<Confidence> {
        let shape = self.shape?;
        let per_run = self
            .engine
            .engine()
            .per_run_guarantee(shape, self.pct_depth)?;
        Some(Confidence::of(
            shape,
            self.pct_depth,
            per_run,
            self.executions,
        ))
    }

    /// The confidence lines of a text report: what the search guarantees,
    /// and whether it ran the runs a confidence asked for. A search that
    /// found a violation needs no guarantee: nothing then.
    pub fn confidence_text(&self) -> String {
        let Some(c) = self.confidence().filter(|_| self.verdict == Verdict::Holds) else {
            return String::new();
        };
        let mut out = c.text();
        if let Some((level, needed)) = self.target {
            let per_seed = if self.seeds > 1 { " per seed" } else { "" };
            if needed > self.executions as u64 / self.seeds.max(1) && self.verdict == Verdict::Holds
            {
                out.push_str(&format!(
                    "  confidence {level} needs {needed} runs{per_seed}: capped (raise --iterations)\n"
                ));
            } else {
                out.push_str(&format!(
                    "  confidence {level}: {needed} runs{per_seed} asked for\n"
                ));
            }
        }
        out
    }

    /// The text report: summary, trace for a violation, replay line.
    pub fn text(&self) -> String {
        let mut out = self.summary() + "\n";
        out.push_str(&self.confidence_text());
        out.push_str(&self.patch_text());
        if self.verdict == Verdict::Holds && !self.unreached.is_empty() {
            out.push_str(&format!(
                "warning: goal(s) never reached in {} executions: {}\n",
                self.executions,
                self.unreached.join(", ")
            ));
        }
        if let Some(r) = &self.record {
            out.push('\n');
            out.push_str(&render::text_trace(r));
            out.push_str(&format!("\nreplay: {}\n", self.replay_line()));
        }
        out
    }

    /// The variant's changed code (`vfsmc_model::patch`): its names and its
    /// sites and exits; none for a base.
    pub fn changed_code(&self) -> (Vec<&'static str>, Vec<&'static Site>) {
        let names =
            vfsmc_specs::model(&self.model).map_or_else(Vec::new, |m| m.changes(&self.variant));
        let sites = vfsmc_model::patch::sites_of(&names);
        (names, sites)
    }

    /// How much of the variant's changed code the executions ran, and the
    /// sites and exits none ran; empty for a variant that changes no code.
    pub fn patch_text(&self) -> String {
        let (names, sites) = self.changed_code();
        if names.is_empty() {
            return String::new();
        }
        let ran = sites.iter().filter(|s| self.reach.ran(s)).count();
        let mut out = format!(
            "changed code ({}): reached in {} of {} executions; {ran} of {} sites and exits ran\n",
            names.join(", "),
            self.reach.changed,
            self.executions,
            sites.len()
        );
        for s in sites.iter().filter(|s| !self.reach.ran(s)) {
            out.push_str(&format!("  not reached: {}\n", site_text(s)));
        }
        out
    }

    /// The JSON object `--format json` prints for this check.
    pub fn json(&self) -> Value {
        json!({
            "model": self.model,
            "variant": self.variant,
            "scenario": self.scenario,
            "engine": self.engine.name(),
            "verdict": self.verdict.to_string(),
            "expected": self.expected.to_string(),
            "invariant": self.invariant,
            "executions": self.executions,
            "exhaustive": self.exhaustive,
            "max_preemptions": self.max_preemptions,
            "seed": self.seed,
            "schedule": self.schedule,
            "input": if self.input.is_empty() { None } else { Some(hex(&self.input)) },
            "unreached_goals": self.unreached,
            "replay": self.record.as_ref().map(|_| self.replay_line()),
            "trace": self.record.as_ref().map(render::json_trace),
            "goals_hit": self.goals_hit,
            "seconds": self.seconds,
            "pct_depth": self.pct_depth,
            "shape": self.shape.map(|s| json!({ "threads": s.threads, "steps": s.steps })),
            "confidence": self.confidence().map(|c| c.json()),
            "confidence_target": self.target.map(|(level, runs)| json!({ "level": level, "runs": runs })),
            "seeds": self.seeds,
            "error": self.error,
            "part": self.part.map(|p| json!({ "index": p.index, "count": p.count })),
            "probes": self.probes,
            "subtrees": self.subtrees,
            "reach": self.reach.json(),
            "cached": self.cached,
        })
    }

    /// Whether the verdict agrees with the registry's expectation.
    pub fn matches_expected(&self) -> bool {
        match self.expected {
            Expected::Holds => self.verdict == Verdict::Holds,
            // Judged and reported; a candidate's verdict is the review's
            // answer, not a registry claim.
            Expected::Candidate => true,
            Expected::Violates(inv) => {
                let also = vfsmc_specs::model(&self.model)
                    .map_or(&[][..], |m| m.also_violates(&self.variant));
                self.verdict == Verdict::Violates
                    && self
                        .invariant
                        .as_deref()
                        .is_some_and(|i| i == inv || also.contains(&i))
            }
        }
    }
}

/// A site or exit as a report names it: `model/src/…:L exit "label"`.
pub fn site_text(s: &Site) -> String {
    match s.exit {
        Some(label) => format!("{} (exit \"{label}\")", s.at()),
        None => format!("{} ({})", s.at(), s.keys.join(", ")),
    }
}

/// The PR-tier checks the registry implies for `model` on `engine`.
pub fn registry_checks(model: &'static dyn Model, engine: EngineKind) -> Vec<Check> {
    registry_checks_in(model, engine, Tier::Pr)
}

/// The checks the registry implies for `model` on `engine` in `tier`: every
/// variant on its default scenarios (a violating variant on its witness, a
/// holding one on every hand-written scenario of the tier), with the
/// registry's default budget.
pub fn registry_checks_in(model: &'static dyn Model, engine: EngineKind, tier: Tier) -> Vec<Check> {
    model
        .variants()
        .iter()
        .flat_map(|v| {
            model
                .scenarios_for(v, tier)
                .into_iter()
                .map(move |s| Check::new(model, v, s, engine))
        })
        .collect()
}

/// The engine that gives `variant` its registry verdict on `scenario`: the
/// optimal engine for a holding variant where the scenario is judged on it
/// and the variant needs nothing it is blind to; loom otherwise (bugs are
/// found at loom's smallest preemption bound, and loom is the reference
/// for what a variant needs).
pub fn registry_engine(model: &dyn Model, variant: &Variant, scenario: &Scenario) -> EngineKind {
    let optimal = EngineKind::Optimal;
    let judged_on_optimal = variant.expected == Expected::Holds
        && scenario.judge == Judge::Optimal
        && optimal
            .engine()
            .cannot_judge(model.needs(variant.name))
            .is_none();
    if judged_on_optimal {
        optimal
    } else {
        EngineKind::Loom
    }
}

/// The PR-tier checks the registry implies for `model`, each on the engine
/// that gives its registry verdict ([`registry_engine`]).
pub fn registry_judged_checks(model: &'static dyn Model) -> Vec<Check> {
    registry_checks(model, EngineKind::Loom)
        .into_iter()
        .map(|c| Check {
            engine: registry_engine(model, c.variant, c.scenario),
            ..c
        })
        .collect()
}

/// The largest preemption bound a witness search tries, fewest first. A
/// registered bug is found at its smallest bound; loom's unbounded search,
/// which used to follow bound 2, is never needed to find one (and its cost
/// grows fastest with the scenario).
pub const WITNESS_MAX_PREEMPTIONS: usize = 8;

/// The witness of each invariant of `model`: over every variant the registry
/// says breaks it, each run under loom on its witness scenario with bounds
/// 0, 1, … up to [`WITNESS_MAX_PREEMPTIONS`] (so loom reports the fewest
/// preemptions), the report
/// with the shortest trace (the first in registry order on a tie). An
/// invariant of the model's own that no variant breaks is an error: it
/// would be untested. A shared kernel invariant with no breaking variant in
/// this model is skipped (its witness is in another model). An error also
/// names a witness whose verdict differs from the registry, with its report.
pub fn invariant_witnesses(
    model: &'static dyn Model,
) -> Result<Vec<(&'static str, Report)>, String> {
    let breaking: Vec<&'static Variant> = model
        .variants()
        .iter()
        .filter(|v| matches!(v.expected, Expected::Violates(_)))
        .collect();
    prefetch_witnesses(model, &breaking);
    let mut out = Vec::new();
    for inv in model.invariants() {
        let breakers: Vec<&'static Variant> = model
            .variants()
            .iter()
            .filter(|v| v.expected == Expected::Violates(inv.name))
            .filter(|v| {
                EngineKind::Loom
                    .engine()
                    .cannot_judge(model.needs(v.name))
                    .is_none()
            })
            .collect();
        if breakers.is_empty() {
            if model.witnessed_elsewhere(inv.name) {
                continue;
            }
            return Err(format!(
                "no variant of {} breaks {}",
                model.name(),
                inv.name
            ));
        }
        let mut best: Option<Report> = None;
        for v in breakers {
            let r = variant_witness(model, v)?;
            let len = |r: &Report| r.record.as_ref().map_or(usize::MAX, |x| x.steps.len());
            if best.as_ref().is_none_or(|b| len(&r) < len(b)) {
                best = Some(r);
            }
        }
        out.extend(best.map(|b| (inv.name, b)));
    }
    Ok(out)
}

/// What [`verdict_table`] found.
pub struct VerdictTable {
    /// Every report, in registry order.
    pub reports: Vec<Report>,
    /// The full text of each report whose verdict differs from the registry.
    pub disagreements: Vec<String>,
}

/// Runs `checks` on the workers `VFSMC_JOBS` asks for (default: every
/// core), printing each summary in order, and compares every verdict with
/// the registry. A check whose engine cannot judge its variant
/// ([`Check::engine_limit`]) is run and printed with the reason, not judged.
///
/// # Panics
/// On a `VFSMC_JOBS` that is not a positive number.
pub fn verdict_table(checks: impl IntoIterator<Item = Check>) -> VerdictTable {
    let checks: Vec<Check> = checks.into_iter().collect();
    let jobs = crate::pool::jobs(None).unwrap_or_else(|e| panic!("{e}"));
    let mut table = VerdictTable {
        reports: Vec::new(),
        disagreements: Vec::new(),
    };
    let run = |i: usize| {
        checks[i]
            .run_guarded()
            .expect("a registry check searches, it does not replay")
    };
    crate::pool::ordered(jobs, checks.len(), run, |i, r| {
        let c = &checks[i];
        println!("{}  [expected {}]", r.summary(), r.expected);
        match c.engine_limit() {
            Some(why) => println!("  (not judged by {}: {why})", c.engine),
            None if !r.matches_expected() => table.disagreements.push(r.text()),
            None => {}
        }
        table.reports.push(r);
        true
    });
    table
}

/// `variant`'s witness: loom on its witness scenario at the fewest
/// preemptions (bounds 0, 1, … up to [`WITNESS_MAX_PREEMPTIONS`]). An error
/// names a missing scenario, or gives the report when the verdict differs
/// from the registry or has no trace.
///
/// A witness is searched once per process: the invariant snapshots and the
/// variant snapshots of a model ask for the same ones, and a search with the
/// same inputs reports the same (the engines are deterministic).
pub fn variant_witness(model: &'static dyn Model, v: &'static Variant) -> Result<Report, String> {
    type Memo = std::collections::HashMap<(&'static str, &'static str), Arc<OnceLock<Witness>>>;
    type Witness = Result<Report, String>;
    static MEMO: Mutex<Option<Memo>> = Mutex::new(None);
    let slot = {
        let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
        let memo = memo.get_or_insert_with(Default::default);
        memo.entry((model.name(), v.name)).or_default().clone()
    };
    slot.get_or_init(|| search_witness(model, v)).clone()
}

/// Searches the witnesses of `variants` on the workers `VFSMC_JOBS` asks
/// for, so that [`variant_witness`] then finds each one searched.
///
/// # Panics
/// On a `VFSMC_JOBS` that is not a positive number.
pub fn prefetch_witnesses(model: &'static dyn Model, variants: &[&'static Variant]) {
    let jobs = crate::pool::jobs(None).unwrap_or_else(|e| panic!("{e}"));
    let search = |i: usize| {
        let _ = variant_witness(model, variants[i]);
    };
    crate::pool::ordered(jobs, variants.len(), search, |_, ()| true);
}

fn search_witness(model: &'static dyn Model, v: &'static Variant) -> Result<Report, String> {
    let s = model
        .scenario(v.witness)
        .ok_or_else(|| format!("{}: witness '{}' is not a scenario", v.name, v.witness))?;
    let mut c = Check::new(model, v, s, EngineKind::Loom);
    c.budget.max_preemptions = Some(WITNESS_MAX_PREEMPTIONS);
    let r = c.run().map_err(|e| e.to_string())?;
    if !r.matches_expected() || r.record.is_none() {
        return Err(r.text());
    }
    Ok(r)
}

/// A witness report as a snapshot shows it: `model/variant [scenario]`, then
/// the trace.
pub fn snapshot_text(r: &Report) -> String {
    let record = r.record.as_ref().expect("a witness has a trace");
    format!(
        "{}/{} [{}]\n{}",
        r.model,
        r.variant,
        r.scenario,
        render::text_trace(record)
    )
}

/// The shortest trace of each invariant's witness ([`invariant_witnesses`]),
/// rendered for a snapshot ([`snapshot_text`]).
pub fn witness_traces(model: &'static dyn Model) -> Result<Vec<(&'static str, String)>, String> {
    Ok(invariant_witnesses(model)?
        .into_iter()
        .map(|(invariant, r)| (invariant, snapshot_text(&r)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of `verdict` for a registered variant, as a shard or the
    /// cache would read it back.
    fn report(verdict: &str, invariant: Option<&str>) -> Report {
        let v = json!({
            "model": "fdtable", "variant": "current", "scenario": "churn", "engine": "loom",
            "verdict": verdict, "invariant": invariant, "executions": 1, "exhaustive": true,
            "seed": 1,
        });
        crate::shard::report_from_json(&v).expect("a well-formed report")
    }

    /// A candidate row (a reviewer's patch under judgement) is judged and
    /// reported but never fails a check, whatever the engine says; the
    /// same verdicts against a registry claim do.
    #[test]
    fn a_candidate_never_fails_its_check() {
        for (verdict, invariant) in [
            ("holds", None),
            ("violates", Some("unique_fd")),
            ("unreached", None),
            ("crashed", None),
        ] {
            let mut r = report(verdict, invariant);
            r.expected = Expected::Candidate;
            assert!(r.matches_expected(), "{verdict}");
            r.expected = Expected::Violates("emfile");
            assert!(!r.matches_expected(), "{verdict} against violates:emfile");
        }
        let mut held = report("holds", None);
        held.expected = Expected::Holds;
        assert!(held.matches_expected());
    }
}
