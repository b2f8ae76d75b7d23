//! `vfsmc review MODEL BASE PATCHED`: one report a reviewer can paste into a
//! mail reply (text, 80 columns) or a PR (markdown), or hand to a tool
//! (JSON). It runs every scenario both variants apply to on every engine
//! asked for, and says:
//! - per scenario and engine, BASE's verdict against PATCHED's, with the
//!   executions, how far the search went and its seconds; changed verdicts
//!   first;
//! - each violation PATCHED brings: the invariant, the shortest trace, the
//!   replay line;
//! - the cost table of `vfsmc diff`, changed counters marked;
//! - what the verdicts cover: scenarios and the goals they reached, bounds,
//!   engines and the blind spots that apply, so that "holds" is never read
//!   as more than it is.
//!
//! PATCHED passes when it holds wherever BASE holds.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{json, Value};
use vfsmc_model::driver::{OpCost, Record};
use vfsmc_model::exec::Counter;
use vfsmc_model::patch::Site;
use vfsmc_model::trace::Effect;
use vfsmc_specs::{Model, Need, Run, Scenario, Variant};

use crate::check::{self, site_text, Check, Report, Verdict};
use crate::engine::{self, Budget, EngineKind, Shape};
use crate::{render, shard};

/// What a review compares.
pub struct Request {
    pub model: &'static dyn Model,
    pub base: &'static Variant,
    pub patched: &'static Variant,
    pub scenarios: Vec<&'static Scenario>,
    pub engines: Vec<EngineKind>,
    pub budget: Budget,
    pub confidence: Option<check::Target>,
    /// Searches run at once (`crate::pool`); the review is the same for any.
    pub jobs: usize,
    /// Where proofs are kept between reviews (`crate::cache`); none: every
    /// search runs.
    pub cache: Option<std::path::PathBuf>,
}

/// How one (scenario, engine) pair changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// BASE holds, PATCHED does not: the patch breaks something.
    Breaks,
    /// BASE does not hold, PATCHED does.
    Fixes,
    /// Both fail, differently.
    Differs,
    /// The same verdict.
    Same,
    /// The engine cannot judge one of the variants: not run.
    NotJudged,
}

impl Change {
    fn mark(self) -> &'static str {
        match self {
            Change::Breaks => "NEW",
            Change::Fixes => "FIXED",
            Change::Differs => "DIFF",
            Change::Same => "same",
            Change::NotJudged => "n/a",
        }
    }
}

/// One scenario on one engine, both variants.
pub struct Cell {
    pub scenario: &'static Scenario,
    pub engine: EngineKind,
    pub change: Change,
    /// BASE's and PATCHED's reports (absent when not judged).
    pub runs: Option<(Report, Report)>,
    /// Why the engine cannot judge a variant, when it cannot.
    pub not_judged: Option<String>,
}

impl Cell {
    /// PATCHED's distinct executions whose trace BASE never produced (the
    /// engines explore deterministically: one program, one set of traces).
    pub fn differed(&self) -> Option<usize> {
        let (b, p) = self.runs.as_ref()?;
        let (b, p) = (b.fingerprints.as_ref()?, p.fingerprints.as_ref()?);
        Some(p.difference(b).count())
    }

    /// Both searches explored the same executions with the same traces.
    fn same_traces(&self) -> bool {
        self.runs.as_ref().is_some_and(|(b, p)| {
            b.executions == p.executions
                && b.fingerprints.is_some()
                && b.fingerprints == p.fingerprints
        })
    }
}

/// The changed code of one side of the review (`vfsmc_model::patch`).
pub struct Changed {
    pub variant: &'static str,
    /// The bugs and changes its code selects.
    pub names: Vec<&'static str>,
    pub sites: Vec<&'static Site>,
    /// The sites and exits no search of this variant ran.
    pub unreached: Vec<&'static Site>,
}

/// What the review's searches ran of the code the variants change.
pub struct PatchCoverage {
    /// BASE's and PATCHED's changed code, for each that changes any.
    pub sides: Vec<Changed>,
    /// Every judged pair explored identical executions.
    pub same_traces: bool,
}

impl PatchCoverage {
    fn of(req: &Request, cells: &[Cell]) -> PatchCoverage {
        let mut sides = Vec::new();
        for (i, v) in [req.base, req.patched].into_iter().enumerate() {
            let names = req.model.changes(v.name);
            if names.is_empty() {
                continue;
            }
            let sites = vfsmc_model::patch::sites_of(&names);
            let reports: Vec<&Report> = cells
                .iter()
                .filter_map(|c| c.runs.as_ref())
                .map(|(b, p)| if i == 0 { b } else { p })
                .collect();
            let unreached = sites
                .iter()
                .filter(|s| !reports.iter().any(|r| r.reach.ran(s)))
                .copied()
                .collect();
            sides.push(Changed {
                variant: v.name,
                names,
                sites,
                unreached,
            });
        }
        let judged: Vec<&Cell> = cells.iter().filter(|c| c.runs.is_some()).collect();
        PatchCoverage {
            sides,
            same_traces: !judged.is_empty() && judged.iter().all(|c| c.same_traces()),
        }
    }

    /// The change was never exercised where it differs: a declared site
    /// or exit no search ran, or traces identical to BASE's everywhere.
    pub fn inconclusive(&self) -> bool {
        self.same_traces || self.sides.iter().any(|s| !s.unreached.is_empty())
    }
}

/// One counter of one operation whose cost per call either variant has.
pub struct CostRow {
    pub op: &'static str,
    pub counter: &'static str,
    pub base: f64,
    pub patched: f64,
}

impl CostRow {
    pub fn changed(&self) -> bool {
        self.base != self.patched
    }
}

/// The cost table of one scenario (canonical sequential execution).
pub struct Costs {
    pub scenario: &'static str,
    pub rows: Vec<CostRow>,
}

/// A C11 stand-in for an LKMM primitive whose error is not exact, from the
/// table in `model/src/kernel/atomic.rs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandIn {
    pub kernel: String,
    pub here: String,
    pub direction: String,
    /// The kernel accessors it covers, as trace steps name them.
    pub accessors: Vec<String>,
}

/// The C11 stand-in table, read where it is documented.
const ATOMIC_RS: &str = include_str!("../model/src/kernel/atomic.rs");

fn unmark(s: &str) -> String {
    s.replace("**", "").replace('`', "").trim().to_string()
}

/// The rows of the stand-in table whose error direction is not `exact`.
pub fn stand_ins() -> Vec<StandIn> {
    ATOMIC_RS
        .lines()
        .filter_map(|l| l.strip_prefix("//! | "))
        .filter_map(|row| {
            let cols: Vec<&str> = row.trim_end_matches('|').split(" | ").collect();
            let [kernel, here, _, direction] = cols[..] else {
                return None;
            };
            if direction.starts_with("exact") || direction.starts_with("error direction") {
                return None;
            }
            let accessors = kernel
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|a| a.trim_end_matches("()").to_string())
                .collect();
            Some(StandIn {
                kernel: unmark(kernel),
                here: unmark(here),
                direction: unmark(direction),
                accessors,
            })
        })
        .collect()
}

/// The kernel accessors the steps of `record` name: loads, barriers, RMWs.
fn accessors(record: &Record, into: &mut BTreeSet<&'static str>) {
    for s in &record.steps {
        match s.effect {
            Effect::Load { how, .. } => into.insert(how),
            Effect::Fence(name) => into.insert(name),
            Effect::Rmw { op, .. } | Effect::Cmpxchg { op, .. } => into.insert(op),
            _ => false,
        };
    }
}

/// A goal, and whether some holding search of BASE and of PATCHED reached
/// it (`None`: every search of that variant violated).
pub type GoalHit = (String, Option<bool>, Option<bool>);

/// What the reviewer should know the verdicts do not cover.
pub struct Coverage {
    /// Per scenario: its goals, and whether some search of each variant
    /// that held reached them (`None`: every search of it violated).
    pub goals: Vec<(&'static str, Vec<GoalHit>)>,
    /// Per engine: its memory model and the kinds of outcome it cannot
    /// produce.
    pub engines: Vec<(EngineKind, &'static str, Vec<&'static str>)>,
    /// The needs of either variant some engine here is blind to, with the
    /// variant's reason.
    pub needs: Vec<(EngineKind, String)>,
    /// The stand-ins whose accessors the variants' executions use (they
    /// matter on engines with weak memory only).
    pub stand_ins: Vec<StandIn>,
}

/// A review's findings.
pub struct Review {
    pub model: &'static str,
    pub base: &'static Variant,
    pub patched: &'static Variant,
    pub cells: Vec<Cell>,
    pub costs: Vec<Costs>,
    pub coverage: Coverage,
    pub patch: PatchCoverage,
    pub budget: Budget,
}

/// The exit code of a review whose PATCHED holds but whose change no search
/// exercised where it differs (0: holds, 1: breaks, 2: bad input).
pub const INCONCLUSIVE: i32 = 3;

impl Review {
    /// PATCHED breaks something BASE holds.
    pub fn breaks(&self) -> bool {
        self.cells.iter().any(|c| c.change == Change::Breaks)
    }

    /// PATCHED holds wherever BASE holds, but that proves nothing about the
    /// change: no search exercised it where it differs.
    pub fn inconclusive(&self) -> bool {
        !self.breaks() && self.patch.inconclusive()
    }

    /// 1 when PATCHED breaks a check BASE holds, [`INCONCLUSIVE`] when the
    /// change was never exercised, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.breaks() {
            1
        } else if self.inconclusive() {
            INCONCLUSIVE
        } else {
            0
        }
    }
}

/// One kind of outcome per [`Need`] kind a model states, in general words:
/// what an engine blind to it can never show. (`Need::HappensBefore` is the
/// litmus judge's own, for its data-race flag: no model states it.)
const OUTCOMES: [(Need, &str); 6] = [
    (
        Need::WeakMemory(""),
        "cannot show weak-memory outcomes (a missing or too weak barrier)",
    ),
    (
        Need::LoadBuffering(""),
        "cannot show load buffering (a load reading a store not yet executed)",
    ),
    (
        Need::WeakLockState(""),
        "cannot show a lock's state read out of order (spin_is_locked)",
    ),
    (
        Need::LkmmOrdering(""),
        "lacks LKMM's cumulative lock ordering: may raise false alarms",
    ),
    (
        Need::AtomicRmw(""),
        "may split an RMW with a plain store (tokio-rs/loom#254): false alarms",
    ),
    (
        Need::DeepSchedule(""),
        "samples schedules: a bug needing several narrow preemptions is beyond its budget",
    ),
];

/// Runs `checks` on the request's workers; their reports in order. The
/// cache's warnings are printed once every search ended: while one runs,
/// the process's stderr may be muted (`crate::quiet`).
fn run_all(req: &Request, checks: &[Check]) -> Vec<Report> {
    let jobs = req.jobs.min(checks.len()).max(1);
    let line = (jobs > 1).then(|| crate::progress::Meter::items("vfsmc review", checks.len()));
    let warnings = std::sync::Mutex::new(Vec::new());
    let warn = |w: String| warnings.lock().unwrap_or_else(|p| p.into_inner()).push(w);
    let search = |i: usize| {
        let c = &checks[i];
        let dir = req.cache.as_deref();
        match dir.map(|d| crate::cache::load(d, c)) {
            Some(Ok(Some(r))) => {
                crate::progress::item_done();
                return r;
            }
            Some(Err(w)) => warn(w),
            Some(Ok(None)) | None => {}
        }
        let line = (jobs == 1).then(|| crate::progress::Meter::start(c.label()));
        let r = c
            .run_guarded()
            .expect("a review searches, it does not replay a schedule");
        drop(line);
        if let Some(Err(w)) = dir.map(|d| crate::cache::store(d, c, &r)) {
            warn(w);
        }
        crate::progress::item_done();
        r
    };
    let out = crate::pool::all(jobs, checks.len(), search);
    drop(line);
    for w in warnings.into_inner().unwrap_or_else(|p| p.into_inner()) {
        eprintln!("{w}");
    }
    out
}

fn classify(base: &Report, patched: &Report) -> Change {
    match (
        base.verdict == Verdict::Holds,
        patched.verdict == Verdict::Holds,
    ) {
        (true, false) => Change::Breaks,
        (false, true) => Change::Fixes,
        (true, true) => Change::Same,
        (false, false)
            if base.invariant == patched.invariant && base.verdict == patched.verdict =>
        {
            Change::Same
        }
        (false, false) => Change::Differs,
    }
}

fn check_of(req: &Request, v: &'static Variant, s: &'static Scenario, e: EngineKind) -> Check {
    let budget = Budget {
        fingerprints: true,
        ..req.budget.clone()
    };
    let mut c = Check::new(req.model, v, s, e).with_budget(&budget);
    c.confidence = req.confidence;
    c
}

/// The BASE and PATCHED checks of one (scenario, engine) pair, or why the
/// engine cannot judge one of them.
fn cell_checks(req: &Request, s: &'static Scenario, e: EngineKind) -> Result<[Check; 2], String> {
    let (b, p) = (
        check_of(req, req.base, s, e),
        check_of(req, req.patched, s, e),
    );
    let limit = b
        .engine_limit()
        .map(|why| format!("{}: {why}", req.base.name))
        .or_else(|| {
            p.engine_limit()
                .map(|why| format!("{}: {why}", req.patched.name))
        });
    match limit {
        Some(why) => Err(why),
        None => Ok([b, p]),
    }
}

/// Every (scenario, engine) pair of the request as a cell: the pairs an
/// engine can judge are searched (BASE and PATCHED, all on the workers).
fn cells(req: &Request) -> Vec<Cell> {
    let mut pairs = Vec::new();
    for s in &req.scenarios {
        for &e in &req.engines {
            pairs.push((*s, e, cell_checks(req, s, e)));
        }
    }
    let checks: Vec<Check> = pairs
        .iter()
        .filter_map(|(_, _, c)| c.as_ref().ok())
        .flat_map(|c| c.iter().cloned())
        .collect();
    let mut reports = run_all(req, &checks).into_iter();
    let mut out = Vec::new();
    for (scenario, engine, checks) in pairs {
        let cell = match checks {
            Err(why) => Cell {
                scenario,
                engine,
                change: Change::NotJudged,
                runs: None,
                not_judged: Some(why),
            },
            Ok(_) => {
                let base = reports.next().expect("a report per check");
                let patched = reports.next().expect("a report per check");
                Cell {
                    scenario,
                    engine,
                    change: classify(&base, &patched),
                    runs: Some((base, patched)),
                    not_judged: None,
                }
            }
        };
        out.push(cell);
    }
    out
}

fn per_call(c: &OpCost, k: Counter) -> f64 {
    let n = c.get(k) as f64;
    if c.calls == 0 {
        n
    } else {
        n / c.calls as f64
    }
}

/// The cost rows of two variants' canonical sequential executions.
pub fn cost_rows(
    a: &std::collections::BTreeMap<&'static str, OpCost>,
    b: &std::collections::BTreeMap<&'static str, OpCost>,
) -> Vec<CostRow> {
    let ops: BTreeSet<&&'static str> = a.keys().chain(b.keys()).collect();
    let empty = OpCost::default();
    let mut rows = Vec::new();
    for op in ops {
        let (x, y) = (a.get(*op).unwrap_or(&empty), b.get(*op).unwrap_or(&empty));
        for k in Counter::ALL {
            let (px, py) = (per_call(x, k), per_call(y, k));
            if px != 0.0 || py != 0.0 {
                rows.push(CostRow {
                    op,
                    counter: k.name(),
                    base: px,
                    patched: py,
                });
            }
        }
        let classes: BTreeSet<&'static str> = x
            .lock_classes()
            .chain(y.lock_classes())
            .map(|(c, _)| c)
            .collect();
        for class in classes {
            let per = |c: &OpCost| {
                let n = c
                    .lock_classes()
                    .find(|(k, _)| *k == class)
                    .map_or(0, |(_, n)| n);
                n as f64 / c.calls.max(1) as f64
            };
            rows.push(CostRow {
                op,
                counter: vfsmc_model::trace::intern(&format!("locks[{class}]")),
                base: per(x),
                patched: per(y),
            });
        }
    }
    rows
}

fn sequential(model: &'static dyn Model, v: &Variant, s: &Scenario) -> Record {
    let run = Run {
        variant: v.name.to_string(),
        scenario: s.name.to_string(),
        input: Vec::new(),
    };
    engine::sequential(check::body_for(model, run)).record
}

fn coverage(req: &Request, cells: &[Cell], used: &BTreeSet<&'static str>) -> Coverage {
    let goals = req
        .scenarios
        .iter()
        .map(|s| {
            let hit = |pick: fn(&(Report, Report)) -> &Report, g: &str| {
                let held: Vec<&Report> = cells
                    .iter()
                    .filter(|c| c.scenario.name == s.name)
                    .filter_map(|c| c.runs.as_ref().map(pick))
                    .filter(|r| r.verdict != Verdict::Violates)
                    .collect();
                (!held.is_empty()).then(|| held.iter().any(|r| r.goals_hit.iter().any(|h| h == g)))
            };
            let rows = s
                .goals
                .iter()
                .map(|g| (g.to_string(), hit(|r| &r.0, g), hit(|r| &r.1, g)))
                .collect();
            (s.name, rows)
        })
        .collect();
    let engines = req
        .engines
        .iter()
        .map(|&e| {
            let blind = OUTCOMES
                .iter()
                .filter(|(n, _)| e.engine().blind_to(*n))
                .map(|(_, what)| *what)
                .collect();
            (e, e.engine().memory_model(), blind)
        })
        .collect();
    let mut needs = Vec::new();
    for &e in &req.engines {
        for v in [req.base, req.patched] {
            for n in req.model.needs(v.name) {
                if e.engine().blind_to(*n) {
                    needs.push((e, format!("{}: {}", v.name, n.why())));
                }
            }
        }
    }
    let stand_ins = stand_ins()
        .into_iter()
        .filter(|s| s.accessors.is_empty() || s.accessors.iter().any(|a| used.contains(a.as_str())))
        .collect();
    Coverage {
        goals,
        engines,
        needs,
        stand_ins,
    }
}

/// Runs the review.
pub fn review(req: &Request) -> Review {
    let mut cells = cells(req);
    cells.sort_by_key(|c| c.change);
    let mut costs = Vec::new();
    let mut used = BTreeSet::new();
    for s in &req.scenarios {
        let (a, b) = (
            sequential(req.model, req.base, s),
            sequential(req.model, req.patched, s),
        );
        accessors(&a, &mut used);
        accessors(&b, &mut used);
        costs.push(Costs {
            scenario: s.name,
            rows: cost_rows(&a.costs, &b.costs),
        });
    }
    let weak_memory = req
        .engines
        .iter()
        .any(|e| !e.engine().blind_to(Need::WeakMemory("")));
    let mut coverage = coverage(req, &cells, &used);
    if !weak_memory {
        coverage.stand_ins.clear();
    }
    let patch = PatchCoverage::of(req, &cells);
    Review {
        patch,
        model: req.model.name(),
        base: req.base,
        patched: req.patched,
        cells,
        costs,
        coverage,
        budget: req.budget.clone(),
    }
}

// --- words shared by the text and markdown reports --------------------------------

fn verdict(r: &Report) -> String {
    match (&r.verdict, &r.invariant) {
        (Verdict::Violates, Some(inv)) => format!("violates {inv}"),
        (v, _) => v.to_string(),
    }
}

/// How far a search went, in a few words.
fn search(r: &Report) -> String {
    let bound = |b: Option<usize>| b.map_or(String::new(), |b| format!(", bound {b}"));
    if shard::samples(r.engine) {
        let seeds = if r.seeds > 1 {
            format!(" +{} seeds", r.seeds - 1)
        } else {
            String::new()
        };
        let how = if r.verdict == Verdict::Violates {
            "found"
        } else {
            "sampled"
        };
        return format!("{how}, seed {}{seeds}", r.seed);
    }
    match (r.verdict, r.exhaustive) {
        (Verdict::Violates, _) => match r.max_preemptions {
            Some(b) => format!("found at bound {b}"),
            None => "found".to_string(),
        },
        (_, true) => format!("exhaustive{}", bound(r.max_preemptions)),
        (_, false) => format!("capped{}", bound(r.max_preemptions)),
    }
}

/// A search's seconds, or `cached` for a report the cache gave.
fn seconds(r: &Report) -> String {
    if r.cached {
        "cached".to_string()
    } else {
        format!("{:.1}", r.seconds)
    }
}

fn headline(rv: &Review) -> String {
    let n = |c: Change| rv.cells.iter().filter(|x| x.change == c).count();
    let (breaks, fixes, differs, same, na) = (
        n(Change::Breaks),
        n(Change::Fixes),
        n(Change::Differs),
        n(Change::Same),
        n(Change::NotJudged),
    );
    let verdict = if breaks > 0 {
        format!("PATCHED breaks {breaks} check(s) that BASE holds (exit 1).")
    } else if rv.inconclusive() {
        format!(
            "INCONCLUSIVE (exit {INCONCLUSIVE}): PATCHED holds everywhere BASE holds, but the change \
             was never exercised where it differs; {}.",
            inconclusive_advice(&rv.patch)
        )
    } else {
        "PATCHED holds everywhere BASE holds (exit 0).".to_string()
    };
    format!(
        "{verdict}\nChecks: {breaks} new violation(s), {fixes} fixed, {differs} different, \
         {same} same, {na} not judged."
    )
}

/// What a reviewer must add for an inconclusive review to decide.
fn inconclusive_advice(p: &PatchCoverage) -> String {
    let first = p.sides.iter().find_map(|s| s.unreached.first());
    match first {
        Some(site) => format!("add a scenario that reaches {}", site_text(site)),
        None => "every search explored exactly BASE's executions with the same traces: add a \
                 scenario where the change alters what a thread does"
            .to_string(),
    }
}

/// One cell's patch-coverage words: "changed code reached in N of M
/// executions; behaviour differed in K".
fn reach_words(c: &Cell, p: &Report) -> String {
    let differed = c
        .differed()
        .map_or(String::new(), |k| format!("; behaviour differed in {k}"));
    format!(
        "changed code reached in {} of {} executions{differed}",
        p.reach.changed, p.executions
    )
}

/// The sites and exits each side's searches never ran, one line each.
fn unreached_lines(p: &PatchCoverage) -> Vec<String> {
    let mut out = Vec::new();
    for side in &p.sides {
        let ran = side.sites.len() - side.unreached.len();
        out.push(format!(
            "{} ({}): {ran} of {} sites and exits ran",
            side.variant,
            side.names.join(", "),
            side.sites.len()
        ));
        for s in &side.unreached {
            out.push(format!("  never reached: {}", site_text(s)));
        }
    }
    if p.same_traces {
        out.push("every search explored exactly BASE's executions, with the same traces".into());
    }
    out
}

fn stands_in_text(s: &StandIn) -> String {
    format!("{} as {}: {}", s.kernel, s.here, s.direction).replace('→', "->")
}

/// Whether `e` states a per-run guarantee (PCT).
fn guarantees(e: EngineKind) -> bool {
    e.engine().per_run_guarantee(Shape::default(), 1).is_some()
}

/// The weakest guarantee of `e`'s searches of either variant: the largest
/// miss probability, with its scenario.
fn worst_confidence(rv: &Review, e: EngineKind) -> Option<(&'static str, check::Confidence)> {
    rv.cells
        .iter()
        .filter(|c| c.engine == e)
        .filter_map(|c| Some((c.scenario.name, c.runs.as_ref()?)))
        .flat_map(|(s, (b, p))| [(s, b), (s, p)])
        .filter(|(_, r)| r.verdict == Verdict::Holds)
        .filter_map(|(s, r)| Some((s, r.confidence()?)))
        .max_by(|a, b| a.1.miss.total_cmp(&b.1.miss))
}

fn wrap_into(out: &mut String, indent: &str, text: &str) {
    for l in render::wrap(text, render::WIDTH - indent.len()) {
        let _ = writeln!(out, "{indent}{l}");
    }
}

// --- text ------------------------------------------------------------------------

/// Lines a mail report aims at (the issue's "about 60").
const MAIL_LINES: usize = 60;

/// The new violations a mail shows: per invariant, the search with the
/// shortest trace (the first in report order on a tie).
fn mail_violations(rv: &Review) -> Vec<&Report> {
    let mut best: Vec<&Report> = Vec::new();
    let len = |r: &Report| r.record.as_ref().map_or(usize::MAX, |x| x.steps.len());
    for c in rv
        .cells
        .iter()
        .filter(|c| matches!(c.change, Change::Breaks | Change::Differs))
    {
        let Some((_, r)) = &c.runs else { continue };
        if r.record.is_none() {
            continue;
        }
        match best.iter_mut().find(|b| b.invariant == r.invariant) {
            Some(b) if len(r) < len(b) => *b = r,
            Some(_) => {}
            None => best.push(r),
        }
    }
    best
}

/// The first new violation with its trace, in the order of the report.
pub fn first_new_violation(rv: &Review) -> Option<(&Report, &Record)> {
    mail_violations(rv)
        .into_iter()
        .find_map(|r| Some((r, r.record.as_ref()?)))
}

/// The report for a mail reply: the verdict, what the change reached when
/// that decides it, and one shortest trace per new violation trimmed to its
/// race (the set-up folded), each with its replay line; about
/// [`MAIL_LINES`] lines. The text report starts with it.
pub fn mail(rv: &Review) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "vfsmc review {}: BASE {} vs PATCHED {}",
        rv.model, rv.base.name, rv.patched.name
    );
    wrap_into(&mut out, "  ", &format!("BASE:    {}", rv.base.kernel));
    wrap_into(&mut out, "  ", &format!("PATCHED: {}", rv.patched.kernel));
    out.push('\n');
    for l in headline(rv).lines() {
        wrap_into(&mut out, "", l);
    }
    if rv.inconclusive() {
        for l in unreached_lines(&rv.patch) {
            wrap_into(&mut out, "  ", &l);
        }
    }
    let shown = mail_violations(rv);
    for (i, r) in shown.iter().enumerate() {
        let what = format!(
            "{} on {} / {} ({} executions, {})",
            verdict(r),
            r.scenario,
            r.engine,
            r.executions,
            search(r)
        );
        // Two lines for each violation after this one, a blank, a heading
        // and the replay line for this one.
        let left = MAIL_LINES.saturating_sub(out.lines().count() + 2 * (shown.len() - i) + 2);
        out.push('\n');
        match &r.record {
            Some(rec) if left >= MIN_MAIL_TRACE => {
                wrap_into(&mut out, "", &format!("{what}:"));
                out.push_str(&render::text_trace_folded(
                    rec,
                    &render::mail_steps(rec, left),
                ));
            }
            _ => wrap_into(&mut out, "", &format!("Also {what}; its trace:")),
        }
        let _ = writeln!(out, "replay: {}", r.replay_line());
    }
    out
}

/// The fewest lines a trace in a mail gets; a violation with less room
/// left is named with its replay line only.
const MIN_MAIL_TRACE: usize = 24;

/// The report as plain text within 80 columns: the mail report first, then
/// every verdict, the full traces, the costs and what the verdicts cover.
pub fn text(rv: &Review) -> String {
    let mut out = mail(rv);
    out.push('\n');
    let _ = writeln!(
        out,
        "{:<16} {:<27} {:>7}  {:<19} {:>6}",
        "VERDICTS", "verdict", "runs", "search", "secs"
    );
    let _ = writeln!(out, "{}", "-".repeat(80));
    for c in &rv.cells {
        let _ = writeln!(
            out,
            "{:<6} {} / {}",
            c.change.mark(),
            c.scenario.name,
            c.engine
        );
        match (&c.runs, &c.not_judged) {
            (Some((b, p)), _) => {
                for (side, r) in [("BASE", b), ("PATCHED", p)] {
                    let _ = writeln!(
                        out,
                        "       {side:<9} {:<27} {:>7}  {:<19} {:>6}",
                        verdict(r),
                        r.executions,
                        search(r),
                        seconds(r)
                    );
                }
                if !rv.patch.sides.is_empty() {
                    wrap_into(&mut out, "       ", &reach_words(c, p));
                }
            }
            (None, Some(why)) => wrap_into(&mut out, "       ", &format!("not judged: {why}")),
            (None, None) => {}
        }
    }
    if !rv.patch.sides.is_empty() || rv.patch.same_traces {
        let _ = writeln!(out, "\nPATCH COVERAGE (model/src/patch.rs)");
        for l in unreached_lines(&rv.patch) {
            wrap_into(&mut out, "  ", &l);
        }
    }
    new_violations_text(rv, &mut out);
    costs_text(rv, &mut out);
    coverage_text(rv, &mut out);
    out
}

fn new_violations_text(rv: &Review, out: &mut String) {
    let new: Vec<&Report> = rv
        .cells
        .iter()
        .filter(|c| matches!(c.change, Change::Breaks | Change::Differs))
        .filter_map(|c| c.runs.as_ref().map(|r| &r.1))
        .collect();
    if new.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nNEW VIOLATIONS (PATCHED), full traces");
    for r in new {
        let _ = writeln!(out, "{}", "=".repeat(80));
        wrap_into(
            out,
            "",
            &format!(
                "{} on {} / {}: {} executions, {}",
                verdict(r),
                r.scenario,
                r.engine,
                r.executions,
                search(r)
            ),
        );
        if let Some(rec) = &r.record {
            out.push('\n');
            out.push_str(&render::text_trace(rec));
        }
        let _ = writeln!(out, "\nreplay: {}", r.replay_line());
    }
}

fn num(x: f64) -> String {
    format!("{x:.2}")
}

fn costs_text(rv: &Review, out: &mut String) {
    let _ = writeln!(
        out,
        "\nCOSTS per call, canonical sequential execution (* changed)"
    );
    let mut same = Vec::new();
    for c in &rv.costs {
        if !c.rows.iter().any(CostRow::changed) {
            same.push(c.scenario);
            continue;
        }
        let _ = writeln!(out, "{}", "-".repeat(80));
        let _ = writeln!(out, "[{}]", c.scenario);
        let _ = writeln!(
            out,
            "  {:<24} {:<27} {:>12} {:>12}",
            "operation", "counter", "BASE", "PATCHED"
        );
        for r in &c.rows {
            let mark = if r.changed() { '*' } else { ' ' };
            let _ = writeln!(
                out,
                "{mark} {:<24} {:<27} {:>12} {:>12}",
                r.op,
                r.counter,
                num(r.base),
                num(r.patched)
            );
        }
    }
    if !same.is_empty() {
        let _ = writeln!(out, "{}", "-".repeat(80));
        wrap_into(out, "", &format!("identical costs on: {}", same.join(", ")));
    }
}

fn goals_line(goals: &[GoalHit]) -> String {
    if goals.is_empty() {
        return "no goals declared".to_string();
    }
    let side = |name: &str, hit: Option<bool>| match hit {
        Some(true) => format!("{name} reached it"),
        Some(false) => format!("{name} NEVER reached it"),
        None => format!("{name} violated first"),
    };
    goals
        .iter()
        .map(|(g, b, p)| match (b, p) {
            (Some(true), Some(true)) => format!("{g} reached"),
            (Some(false), Some(false)) => format!("{g} NEVER reached"),
            _ => format!("{g}: {}, {}", side("BASE", *b), side("PATCHED", *p)),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn coverage_text(rv: &Review, out: &mut String) {
    let cov = &rv.coverage;
    let _ = writeln!(out, "\nWHAT THIS COVERS");
    let _ = writeln!(out, "{}", "-".repeat(80));
    let _ = writeln!(out, "Scenarios (goals some search reached):");
    for (s, goals) in &cov.goals {
        wrap_into(out, "  ", &format!("{s}: {}", goals_line(goals)));
    }
    let _ = writeln!(out, "Bounds:");
    for line in bounds(rv) {
        wrap_into(out, "  ", &line);
    }
    let _ = writeln!(out, "Engines and what they cannot see:");
    for (e, memory, blind) in &cov.engines {
        wrap_into(out, "  ", &format!("{e}: {memory}."));
        for b in blind {
            wrap_into(out, "    ", &format!("- {b}"));
        }
    }
    for (e, why) in &cov.needs {
        wrap_into(out, "  ", &format!("{e} cannot judge {why}"));
    }
    if !cov.stand_ins.is_empty() {
        let _ = writeln!(
            out,
            "C11 stand-ins for LKMM in these executions (model/src/kernel/atomic.rs):"
        );
        for s in &cov.stand_ins {
            wrap_into(out, "  ", &format!("- {}", stands_in_text(s)));
        }
    }
}

/// The bounds of the searches, one line per engine.
fn bounds(rv: &Review) -> Vec<String> {
    let mut out = Vec::new();
    let engines: BTreeSet<EngineKind> = rv.cells.iter().map(|c| c.engine).collect();
    for e in engines {
        let runs: Vec<&Report> = rv
            .cells
            .iter()
            .filter(|c| c.engine == e)
            .filter_map(|c| c.runs.as_ref())
            .flat_map(|(b, p)| [b, p])
            .collect();
        if runs.is_empty() {
            continue;
        }
        if shard::samples(e) {
            let total: usize = runs.iter().map(|r| r.executions).sum();
            let mut line = format!(
                "{e}: {} runs per search (seed {}), {total} executions in all",
                rv.budget.iterations, rv.budget.seed
            );
            if guarantees(e) {
                line.push_str(&format!(", depth {}", rv.budget.pct_depth));
            }
            out.push(line);
            if let Some((s, c)) = worst_confidence(rv, e) {
                out.push(format!(
                    "{e}: weakest guarantee of a search that held ({s}): n={} threads, k={} steps, p >= {} per run; a \
                     depth-{} bug is missed by all {} runs with probability <= {}",
                    c.shape.threads,
                    c.shape.steps,
                    check::sci(c.per_run),
                    c.depth,
                    c.runs,
                    check::sci(c.miss)
                ));
            }
        } else {
            let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
            for c in rv.cells.iter().filter(|c| c.engine == e) {
                let Some((b, _)) = &c.runs else { continue };
                let what = search(b);
                match groups.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, names)) => names.push(c.scenario.name),
                    None => groups.push((what, vec![c.scenario.name])),
                }
            }
            for (what, names) in groups {
                out.push(format!("{e} (BASE): {what} on {}", names.join(", ")));
            }
        }
    }
    out
}

// --- markdown --------------------------------------------------------------------

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The report as GitHub-flavoured markdown.
pub fn markdown(rv: &Review) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### vfsmc review `{}`: BASE `{}` vs PATCHED `{}`\n",
        rv.model, rv.base.name, rv.patched.name
    );
    let _ = writeln!(out, "- BASE: {}", rv.base.kernel);
    let _ = writeln!(out, "- PATCHED: {}\n", rv.patched.kernel);
    let bold: Vec<String> = headline(rv).lines().map(|l| format!("**{l}**")).collect();
    let _ = writeln!(out, "{}\n", bold.join("  \n"));
    let _ = writeln!(
        out,
        "| change | scenario | engine | BASE | PATCHED | executions (B / P) | search (B / P) | seconds (B / P) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---:|---|---:|");
    for c in &rv.cells {
        match (&c.runs, &c.not_judged) {
            (Some((b, p)), _) => {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} / {} | {} / {} | {} / {} |",
                    if c.change == Change::Breaks {
                        "**NEW**".to_string()
                    } else {
                        c.change.mark().to_string()
                    },
                    c.scenario.name,
                    c.engine,
                    verdict(b),
                    verdict(p),
                    b.executions,
                    p.executions,
                    search(b),
                    search(p),
                    seconds(b),
                    seconds(p)
                );
            }
            (None, why) => {
                let _ = writeln!(
                    out,
                    "| n/a | {} | {} | not judged: {} | | | | |",
                    c.scenario.name,
                    c.engine,
                    md_escape(why.as_deref().unwrap_or(""))
                );
            }
        }
    }
    if !rv.patch.sides.is_empty() || rv.patch.same_traces {
        let _ = writeln!(out, "\n#### Patch coverage\n");
        for c in &rv.cells {
            if let Some((_, p)) = &c.runs {
                let _ = writeln!(
                    out,
                    "- `{}` / {}: {}",
                    c.scenario.name,
                    c.engine,
                    reach_words(c, p)
                );
            }
        }
        for l in unreached_lines(&rv.patch) {
            let _ = writeln!(out, "- {}", l.trim_start());
        }
    }
    for c in rv
        .cells
        .iter()
        .filter(|c| matches!(c.change, Change::Breaks | Change::Differs))
    {
        let Some((_, r)) = &c.runs else { continue };
        let _ = writeln!(
            out,
            "\n#### New violation: `{}` on `{}` / {}\n",
            r.invariant.as_deref().unwrap_or("?"),
            r.scenario,
            r.engine
        );
        if let Some(rec) = &r.record {
            let _ = writeln!(out, "```\n{}```", render::text_trace(rec));
        }
        let _ = writeln!(out, "\nReplay: `{}`", r.replay_line());
    }
    let _ = writeln!(
        out,
        "\n#### Costs per call (canonical sequential execution; changed in bold)\n"
    );
    let mut same = Vec::new();
    for c in &rv.costs {
        if !c.rows.iter().any(CostRow::changed) {
            same.push(c.scenario);
            continue;
        }
        let _ = writeln!(
            out,
            "`{}`\n\n| operation | counter | BASE | PATCHED |\n|---|---|---:|---:|",
            c.scenario
        );
        for r in &c.rows {
            let (b, p) = (num(r.base), num(r.patched));
            if r.changed() {
                let _ = writeln!(
                    out,
                    "| **{}** | **{}** | **{b}** | **{p}** |",
                    r.op, r.counter
                );
            } else {
                let _ = writeln!(out, "| {} | {} | {b} | {p} |", r.op, r.counter);
            }
        }
        out.push('\n');
    }
    if !same.is_empty() {
        let _ = writeln!(out, "Identical costs on: {}.\n", same.join(", "));
    }
    let cov = &rv.coverage;
    let _ = writeln!(out, "#### What this covers\n");
    for (s, goals) in &cov.goals {
        let _ = writeln!(out, "- `{s}`: {}", goals_line(goals));
    }
    for line in bounds(rv) {
        let _ = writeln!(out, "- {line}");
    }
    for (e, memory, blind) in &cov.engines {
        let _ = writeln!(out, "- {e}: {memory}.");
        for b in blind {
            let _ = writeln!(out, "  - {b}");
        }
    }
    for (e, why) in &cov.needs {
        let _ = writeln!(out, "- {e} cannot judge {why}");
    }
    if !cov.stand_ins.is_empty() {
        let _ = writeln!(out, "- C11 stand-ins for LKMM in these executions:");
        for s in &cov.stand_ins {
            let _ = writeln!(out, "  - {}", stands_in_text(s));
        }
    }
    out
}

// --- JSON ------------------------------------------------------------------------

/// The report as one JSON object.
pub fn json(rv: &Review) -> Value {
    let cells: Vec<Value> = rv
        .cells
        .iter()
        .map(|c| {
            json!({
                "scenario": c.scenario.name,
                "engine": c.engine.name(),
                "change": c.change.mark().to_lowercase(),
                "not_judged": c.not_judged,
                "base": c.runs.as_ref().map(|r| r.0.json()),
                "patched": c.runs.as_ref().map(|r| r.1.json()),
                "differed": c.differed(),
            })
        })
        .collect();
    let costs: Vec<Value> = rv
        .costs
        .iter()
        .map(|c| {
            let rows: Vec<Value> = c
                .rows
                .iter()
                .map(|r| {
                    json!({
                        "operation": r.op, "counter": r.counter,
                        "base": r.base, "patched": r.patched, "changed": r.changed(),
                    })
                })
                .collect();
            json!({ "scenario": c.scenario, "rows": rows })
        })
        .collect();
    let cov = &rv.coverage;
    json!({
        "model": rv.model,
        "base": rv.base.name,
        "patched": rv.patched.name,
        "breaks": rv.breaks(),
        "inconclusive": rv.inconclusive(),
        "exit": rv.exit_code(),
        "patch": {
            "sides": rv.patch.sides.iter().map(|s| json!({
                "variant": s.variant,
                "changes": s.names,
                "sites": s.sites.len(),
                "unreached": s.unreached.iter().map(|x| site_text(x)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "same_traces": rv.patch.same_traces,
        },
        "cells": cells,
        "costs": costs,
        "coverage": {
            "goals": cov.goals.iter().map(|(s, g)| json!({
                "scenario": s,
                "goals": g.iter().map(|(name, b, p)| json!({
                    "goal": name, "base": b, "patched": p
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "bounds": bounds(rv),
            "engines": cov.engines.iter().map(|(e, m, blind)| json!({
                "engine": e.name(), "memory_model": m, "blind_to": blind,
            })).collect::<Vec<_>>(),
            "needs": cov.needs.iter().map(|(e, why)| json!({
                "engine": e.name(), "cannot_judge": why,
            })).collect::<Vec<_>>(),
            "stand_ins": cov.stand_ins.iter().map(|s| json!({
                "kernel": s.kernel, "here": s.here, "direction": s.direction,
            })).collect::<Vec<_>>(),
        },
    })
}
