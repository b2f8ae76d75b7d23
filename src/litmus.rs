//! `vfsmc litmus PATH…`: reads litmus tests in herd7's C dialect, runs each
//! on the kernel primitives under an engine (loom by default: C11 weak
//! memory), and judges what it observed against the file's `Result:` line
//! (or the herd7 verdict `litmus-expected.txt` records where that line is
//! stale).
//!
//! Verdicts: `agree`; `stronger` (vfsmc never observed an outcome LKMM
//! allows: a bug of that shape would be missed); `weaker` (vfsmc observed
//! an outcome LKMM forbids: a false alarm in every model that relies on the
//! shape); `n/a` with the reason (the engine is blind to something the test
//! needs, a [`Need`] the test's shape shows, or the search was capped);
//! `unsupported` with the construct and its `file:line:col`.
//!
//! A file's verdict judges LKMM's data-race flag too (the `DATARACE` word of
//! its `Result:` line): a third search looks for an execution with a data
//! race ([`Seek::Race`], loom only), and a flag vfsmc raises where LKMM does
//! not, or misses where LKMM raises it, counts as weaker or stronger unless
//! the test's shape explains it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use vfsmc_specs::litmus::ast::{
    ErrorKind, Expr, Func, Order, Outcome, ReadError, Stmt, Target, Test,
};
use vfsmc_specs::litmus::interp::{execute, Program, Seek, DATA_RACE, LITMUS_ERROR};
use vfsmc_specs::litmus::parse::parse;
use vfsmc_specs::Need;

use crate::engine::{explore, Budget, EngineKind, Exploration};

/// The files whose `Result:` line herd7 (7.58, with the kernel's current
/// cat files) no longer gives, with the verdict it gives and why.
pub const EXPECTED: &str = include_str!("../tests/litmus-expected.txt");

/// One judged file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    Stronger,
    Weaker,
    NotApplicable,
    Unsupported,
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Stronger => "stronger",
            Verdict::Weaker => "weaker",
            Verdict::NotApplicable => "n/a",
            Verdict::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

#[derive(Clone, Debug)]
pub struct Judged {
    pub file: String,
    /// The header's word, as written.
    pub result: Option<String>,
    /// Whether the header names LKMM's data-race flag (`DATARACE`).
    pub result_race: bool,
    /// The word judged against: the header's, or the list's.
    pub expected: Option<String>,
    pub observed: Option<Outcome>,
    /// Whether LKMM flags a data race: the header's `DATARACE`, or the
    /// list's (`None` without either).
    pub expected_race: Option<bool>,
    /// Whether vfsmc found a data race (`None` when not judged).
    pub data_race: Option<bool>,
    pub verdict: Verdict,
    pub reason: String,
    pub executions: usize,
    /// The trace of the first execution found with the clause satisfied
    /// (or, for `Always`, not), then that of the first with a data race,
    /// when [`Options::trace`] asks for it.
    pub trace: Option<String>,
}

impl Judged {
    pub fn json(&self) -> Value {
        json!({
            "file": self.file,
            "result": self.result,
            "expected": self.expected,
            "observed": self.observed.map(|o| o.word()),
            "expected_data_race": self.expected_race,
            "data_race": self.data_race,
            "verdict": self.verdict.word(),
            "reason": if self.reason.is_empty() { Value::Null } else { Value::String(self.reason.clone()) },
            "executions": self.executions,
        })
    }

    pub fn text(&self) -> String {
        let mut s = format!(
            "{}: Result {}{} observed {}{} {}",
            self.file,
            self.result.as_deref().unwrap_or("-"),
            race_word(self.result_race),
            self.observed.map_or("-", |o| o.word()),
            match self.data_race {
                Some(true) => ", data race",
                Some(false) if self.expected_race == Some(true) => ", no data race",
                _ => "",
            },
            self.verdict
        );
        let listed_race = self.expected_race.is_some_and(|r| r != self.result_race);
        if self.expected != self.result || listed_race {
            if let Some(e) = &self.expected {
                let race = race_word(self.expected_race == Some(true));
                s.push_str(&format!(" (expected {e}{race}: litmus-expected.txt)"));
            }
        }
        if !self.reason.is_empty() {
            s.push_str(&format!(": {}", self.reason));
        }
        s
    }

    /// Whether this verdict fails the run (exit 1): a `weaker`, or a
    /// `stronger` whose stand-in is not documented as stronger than LKMM.
    pub fn fails(&self) -> bool {
        match self.verdict {
            Verdict::Weaker => true,
            Verdict::Stronger => self.reason.is_empty(),
            _ => false,
        }
    }
}

fn race_word(race: bool) -> &'static str {
    if race {
        " DATARACE"
    } else {
        ""
    }
}

/// An entry of the expectations list: the word herd7 gives today.
fn expected_override(file: &Path) -> Option<(String, String)> {
    let name = file.file_name()?.to_str()?;
    EXPECTED.lines().find_map(|l| {
        let l = l.trim();
        if l.starts_with('#') || l.is_empty() {
            return None;
        }
        let mut parts = l.split_whitespace();
        let (f, w) = (parts.next()?, parts.next()?);
        let why = parts.collect::<Vec<_>>().join(" ");
        (f == name).then(|| (w.to_string(), why))
    })
}

/// The files under `paths`, each directory walked recursively in name
/// order; only `*.litmus` files are taken from directories.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, out)?;
        } else if e.extension().is_some_and(|x| x == "litmus") {
            out.push(e);
        }
    }
    Ok(())
}

/// The search budget of one file.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub engine: EngineKind,
    /// Executions per search before it is reported as capped.
    pub cap: usize,
    /// Keep the trace of the execution that decided the verdict.
    pub trace: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            engine: EngineKind::Loom,
            cap: 1_000_000,
            trace: false,
        }
    }
}

/// Reads and judges one file. `Err` is malformed input (exit 2).
pub fn judge_file(path: &Path, opts: Options) -> Result<Judged, String> {
    let file = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| format!("{file}: {e}"))?;
    let text = String::from_utf8_lossy(&text);
    let mut j = Judged {
        file: file.clone(),
        result: None,
        result_race: false,
        expected: None,
        observed: None,
        expected_race: None,
        data_race: None,
        verdict: Verdict::Unsupported,
        reason: String::new(),
        executions: 0,
        trace: None,
    };
    // The header is read even when the rest is not.
    j.result = header_word(&text);
    j.expected_race = header_race(&text);
    j.result_race = j.expected_race == Some(true);
    j.expected = j.result.clone();
    if let Some((w, _)) = expected_override(path) {
        // `Never+DATARACE`: the word, and LKMM's data-race flag.
        let (word, race) = match w.split_once('+') {
            Some((word, flag)) => (word.to_string(), flag == "DATARACE"),
            None => (w, false),
        };
        j.expected = Some(word);
        j.expected_race = Some(race);
    }
    let test = match parse(&text) {
        Ok(t) => t,
        Err(e) => return unread(j, &file, e),
    };
    let program = match Program::new(test, &file) {
        Ok(p) => Arc::new(p),
        Err(e) => return unread(j, &file, e),
    };
    judge_program(j, &program, opts)
}

fn unread(mut j: Judged, file: &str, e: ReadError) -> Result<Judged, String> {
    match e.kind {
        ErrorKind::Malformed => Err(format!("{file}:{}: {}", e.pos, e.what)),
        ErrorKind::Unsupported => {
            j.verdict = Verdict::Unsupported;
            j.reason = format!("{file}:{}: {}", e.pos, e.what);
            Ok(j)
        }
    }
}

fn header_word(text: &str) -> Option<String> {
    let at = text.find("Result:")?;
    let w: String = text[at + 7..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!w.is_empty()).then_some(w)
}

/// Whether the `Result:` line names LKMM's data-race flag (`DATARACE`).
fn header_race(text: &str) -> Option<bool> {
    let at = text.find("Result:")?;
    let line = text[at + 7..].lines().next().unwrap_or("");
    Some(line.split_whitespace().any(|w| w == "DATARACE"))
}

/// What one search ended with.
enum Found {
    /// An execution of the kind sought.
    Hit,
    /// None, in the whole space.
    None,
    /// None, but the search was capped.
    Capped,
    /// Another failure: deadlock, a runtime error of the test, a livelock.
    Other(String, String),
}

fn search(
    p: &Arc<Program>,
    seek: Seek,
    opts: Options,
    executions: &mut usize,
    trace: &mut Option<String>,
) -> Found {
    let budget = Budget {
        loom_cap: Some(opts.cap),
        iterations: opts.cap,
        ..Budget::default()
    };
    let prog = p.clone();
    let body: crate::engine::Body = Arc::new(move || execute(&prog, seek));
    let x: Exploration = explore(opts.engine, &budget, body);
    *executions += x.executions;
    if let (true, Some(f)) = (opts.trace, &x.failure) {
        trace.get_or_insert_with(|| crate::render::text_trace(&f.record));
    }
    match &x.failure {
        Some(f) => match &f.record.violation {
            Some(v) if v.invariant == "exists" || v.invariant == DATA_RACE => Found::Hit,
            Some(v) => Found::Other(v.invariant.clone(), v.message.clone()),
            None => Found::Other("failure".into(), String::new()),
        },
        None if x.exhaustive && opts.engine.engine().exhaustive() => Found::None,
        None => Found::Capped,
    }
}

fn judge_program(j: Judged, p: &Arc<Program>, opts: Options) -> Result<Judged, String> {
    let mut j = judge_outcome(j, p, opts)?;
    if j.observed.is_some() {
        judge_race(&mut j, p, opts);
    }
    Ok(j)
}

/// Judges the clause: what the engine observed against the expected word.
fn judge_outcome(mut j: Judged, p: &Arc<Program>, opts: Options) -> Result<Judged, String> {
    let mut n = 0;
    let observed = match search(p, Seek::Satisfying, opts, &mut n, &mut j.trace) {
        Found::None => Some(Outcome::Never),
        Found::Hit => match search(p, Seek::Failing, opts, &mut n, &mut j.trace) {
            Found::None => Some(Outcome::Always),
            Found::Hit | Found::Capped => Some(Outcome::Sometimes),
            Found::Other(inv, msg) => return Ok(other(j, n, &inv, &msg)),
        },
        Found::Capped => {
            j.executions = n;
            j.verdict = Verdict::NotApplicable;
            j.reason = format!(
                "the {} search stopped at its cap of {} executions without the outcome",
                opts.engine, opts.cap
            );
            return Ok(j);
        }
        Found::Other(inv, msg) => return Ok(other(j, n, &inv, &msg)),
    };
    j.executions = n;
    j.observed = observed;
    let Some(obs) = observed else { return Ok(j) };
    let expected = j.expected.as_deref().and_then(Outcome::from_word);
    let Some(exp) = expected else {
        j.verdict = Verdict::NotApplicable;
        j.reason = match &j.expected {
            Some(w) => format!("'Result: {w}' is no LKMM outcome (Never, Sometimes, Always)"),
            None => "no 'Result:' line".to_string(),
        };
        return Ok(j);
    };
    // Sometimes and Always both allow the outcome.
    let allows = |o: Outcome| o != Outcome::Never;
    if exp == obs || (allows(exp) && allows(obs) && exp == Outcome::Sometimes) {
        j.verdict = Verdict::Agree;
        return Ok(j);
    }
    let engine = opts.engine.engine();
    let needs = needs(&p.test);
    if allows(exp) && !allows(obs) {
        // vfsmc forbids what LKMM allows.
        let why = needs.iter().find(|n| {
            matches!(
                n,
                Need::LoadBuffering(_) | Need::WeakLockState(_) | Need::WeakMemory(_)
            ) && engine.blind_to(**n)
        });
        match why {
            Some(n) => {
                j.verdict = Verdict::NotApplicable;
                j.reason = n.why().to_string();
            }
            None => {
                j.verdict = Verdict::Stronger;
                j.reason = stronger_stand_ins(&p.test, j.expected_race == Some(true))
                    .first()
                    .map_or(String::new(), |r| {
                        format!(
                            "a stand-in stronger than LKMM (a bug of this shape is missed): {r}"
                        )
                    });
            }
        }
    } else if !allows(exp) && allows(obs) {
        let why = needs.iter().find(|n| {
            matches!(n, Need::LkmmOrdering(_) | Need::AtomicRmw(_)) && engine.blind_to(**n)
        });
        match why {
            Some(n) => {
                j.verdict = Verdict::NotApplicable;
                j.reason = n.why().to_string();
            }
            None => j.verdict = Verdict::Weaker,
        }
    } else {
        // Always expected, Sometimes observed (or the reverse).
        j.verdict = if exp == Outcome::Always {
            Verdict::Weaker
        } else {
            Verdict::Stronger
        };
    }
    Ok(j)
}

/// Judges LKMM's data-race flag once the clause is judged: finds whether
/// some execution that passes the filter races ([`Seek::Race`]), compares
/// that with the `Result:` line's `DATARACE`, and lets a disagreement
/// outrank the clause's verdict.
fn judge_race(j: &mut Judged, p: &Arc<Program>, opts: Options) {
    let engine = opts.engine.engine();
    j.data_race = if !has_plain_access(&p.test) {
        Some(false)
    } else if engine.blind_to(Need::HappensBefore(NO_HB)) {
        None
    } else {
        let mut race_trace = None;
        let found = search(p, Seek::Race, opts, &mut j.executions, &mut race_trace);
        // --trace shows the racing execution after the clause's.
        if let Some(t) = race_trace {
            j.trace = Some(match j.trace.take() {
                Some(clause) => format!("{clause}\n{t}"),
                None => t,
            });
        }
        match found {
            Found::Hit => Some(true),
            Found::None => Some(false),
            // A capped search, or a failure the clause's searches did not
            // meet: the flag is not judged.
            Found::Capped | Found::Other(..) => None,
        }
    };
    let (Some(expected), Some(observed)) = (j.expected_race, j.data_race) else {
        if j.expected_race == Some(true) && j.data_race.is_none() {
            unjudged_race(j, opts);
        }
        return;
    };
    if expected == observed {
        return;
    }
    let needs = needs(&p.test);
    let blind = |kind: fn(&Need) -> bool| {
        needs
            .iter()
            .find(|n| kind(n) && engine.blind_to(**n))
            .map(|n| n.why())
    };
    let (verdict, reason) = if expected {
        // LKMM flags a race vfsmc never sees: a blind spot, unless the
        // racing execution is one loom cannot produce.
        match blind(|n| matches!(n, Need::LoadBuffering(_))) {
            Some(why) => (Verdict::NotApplicable, format!("the data race needs {why}")),
            None => (
                Verdict::Stronger,
                race_hiding_stand_ins(&p.test)
                    .first()
                    .map_or(String::new(), |r| {
                        format!("a stand-in stronger than LKMM hides the data race: {r}")
                    }),
            ),
        }
    } else {
        // vfsmc flags a race LKMM does not: C11's happens-before orders
        // less than LKMM where the test relies on an order only LKMM gives.
        match blind(|n| matches!(n, Need::LkmmOrdering(_))) {
            Some(why) => (
                Verdict::NotApplicable,
                format!("a data race only under C11: {why}"),
            ),
            None => (Verdict::Weaker, String::new()),
        }
    };
    if rank(&verdict, &reason) > rank(&j.verdict, &j.reason) {
        j.verdict = verdict;
        j.reason = reason;
    }
}

/// Says why LKMM's data-race flag was not judged.
fn unjudged_race(j: &mut Judged, opts: Options) {
    let why = if opts.engine.engine().blind_to(Need::HappensBefore(NO_HB)) {
        format!("{}: {NO_HB}", opts.engine)
    } else {
        format!(
            "the {} race search stopped at its cap of {} executions",
            opts.engine, opts.cap
        )
    };
    let note = format!("the data-race flag is not judged ({why})");
    j.reason = if j.reason.is_empty() {
        note
    } else {
        format!("{}; {note}", j.reason)
    };
}

/// How much a verdict says against vfsmc's stand-ins: the worse of the
/// clause's and the flag's verdicts is the file's.
fn rank(v: &Verdict, reason: &str) -> u8 {
    match v {
        Verdict::Agree => 0,
        Verdict::NotApplicable => 1,
        Verdict::Stronger if !reason.is_empty() => 2,
        Verdict::Stronger => 3,
        Verdict::Weaker => 4,
        Verdict::Unsupported => 5,
    }
}

fn other(mut j: Judged, n: usize, inv: &str, msg: &str) -> Judged {
    j.executions = n;
    if inv == "deadlock" && j.expected.as_deref() == Some("DEADLOCK") {
        j.verdict = Verdict::Agree;
        j.reason = "the engine found the deadlock".to_string();
        return j;
    }
    // A grace period waited for inside a read-side section waits for itself:
    // the kernel's might_sleep check stops it before the engine sees the
    // deadlock.
    if inv == "might_sleep"
        && msg.contains("inside an RCU read-side critical section")
        && j.expected.as_deref() == Some("DEADLOCK")
    {
        j.verdict = Verdict::Agree;
        j.reason = format!("the engine found the self-deadlock: {msg}");
        return j;
    }
    if inv == LITMUS_ERROR {
        j.verdict = Verdict::Unsupported;
        j.reason = msg.to_string();
        return j;
    }
    j.verdict = Verdict::NotApplicable;
    j.reason = format!("an execution ended in {inv}: {msg}");
    j
}

const NO_HB: &str = "the engine answers no happens-before query (model/rt/src/sync.rs, `epoch`: \
     only loom does), so it cannot tell a data race";
const NO_LB: &str = "load buffering: the outcome needs a load to read a store that is po-after \
     a load of the same thread's partner (a read-then-write cycle); loom never lets a load read \
     a store that has not run yet";
const SIL: &str = "spin_is_locked: the outcome needs the lock's state read out of order; the \
     stand-in is a try_lock on an engine mutex, sequentially consistent under loom";
const UNLOCK_LOCK: &str = "po-unlock-lock-po: a thread unlocks one lock and then takes one; \
     LKMM orders accesses across that, C11 orders nothing across an unlock and a later lock";
const LOCK_CUMUL: &str = "lock cumulativity: a thread outside the critical sections observes \
     their stores; LKMM orders them for it, C11 only for a thread that takes the lock";
const RMW_SPLIT: &str = "an RMW and an atomic_set of one location in different threads: loom \
     can order the plain store between the RMW's read and its write (tokio-rs/loom#254, #389), \
     which C11 and LKMM both forbid";
const CTRL_DEP: &str = "a control dependency: a store under an `if` on a value a READ_ONCE (or \
     another unordered load) returned; LKMM orders the store after the load, C11 orders nothing, \
     so loom may put the store coherence-before a store that ran earlier";
const REL_CUMUL: &str = "release cumulativity: a thread reads a value with READ_ONCE (or another \
     unordered load) and then releases; LKMM's release orders the store it read for whoever \
     acquires the release, C11 only what happens-before the release (a relaxed read-from is no \
     happens-before)";
const DATA_DEP: &str = "a data dependency: a store of a value a READ_ONCE (or another unordered \
     load) returned; LKMM orders the store after the load and keeps the chain of such links \
     (with a barrier) ordered for a later reader, C11 orders nothing along it";
const ADDR_DEP: &str = "an address dependency from a READ_ONCE load: LKMM orders the access \
     through the loaded pointer, a C11 relaxed load orders nothing";

/// What the test's shape needs that an engine may not give: read off the
/// program text, conservatively (a need names a feature the test has, not a
/// proof that its outcome depends on it).
pub fn needs(t: &Test) -> Vec<Need> {
    let mut out = Vec::new();
    let mut reads_then_writes: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut uses_sil = false;
    let mut unlock_lock = false;
    let mut locked_threads = 0;
    let mut addr_dep = false;
    let mut ctrl_dep = false;
    let mut rel_cumul = false;
    let mut data_dep = false;
    let mut rmw_locs: Vec<(usize, String)> = vec![];
    let mut set_locs: Vec<(usize, String)> = vec![];
    for (i, th) in t.threads.iter().enumerate() {
        let mut ev = Events::default();
        ev.stmts(&th.body);
        uses_sil |= ev.sil;
        unlock_lock |= ev.unlock_then_lock;
        addr_dep |= ev.addr_dep;
        ctrl_dep |= ev.ctrl_dep;
        rel_cumul |= ev.rel_after_unordered;
        data_dep |= ev.data_dep;
        if ev.locks {
            locked_threads += 1;
        }
        rmw_locs.extend(ev.rmws.iter().map(|l| (i, l.clone())));
        set_locs.extend(ev.sets.iter().map(|l| (i, l.clone())));
        reads_then_writes.push((ev.read_before_write, ev.writes_after_read));
    }
    if uses_sil {
        out.push(Need::WeakLockState(SIL));
    }
    if lb_cycle(&reads_then_writes) {
        out.push(Need::LoadBuffering(NO_LB));
    }
    if unlock_lock {
        out.push(Need::LkmmOrdering(UNLOCK_LOCK));
    }
    if locked_threads > 0 && locked_threads < t.threads.len() {
        out.push(Need::LkmmOrdering(LOCK_CUMUL));
    }
    if addr_dep {
        out.push(Need::LkmmOrdering(ADDR_DEP));
    }
    if ctrl_dep {
        out.push(Need::LkmmOrdering(CTRL_DEP));
    }
    if rel_cumul {
        out.push(Need::LkmmOrdering(REL_CUMUL));
    }
    if data_dep {
        out.push(Need::LkmmOrdering(DATA_DEP));
    }
    if rmw_locs
        .iter()
        .any(|(i, l)| set_locs.iter().any(|(j, m)| i != j && l == m))
    {
        out.push(Need::AtomicRmw(RMW_SPLIT));
    }
    out
}

const RCU_DEREF: &str = "rcu_dereference is an acquire load (kernel::atomic): LKMM orders only \
     the accesses that depend on the pointer it returns";
const SRCU_NEST: &str = "SRCU read-side sections nest by depth (kernel::rcu): LKMM pairs each \
     srcu_read_unlock with the srcu_read_lock whose index it is passed, so overlapping sections \
     end separately";
const MB_AFTER_SRCU: &str = "smp_mb__after_srcu_read_unlock is a full barrier wherever it stands; \
     LKMM orders only across an srcu_read_unlock just before it";
const RMB_WMB: &str = "smp_rmb and smp_wmb are acquire and release fences (kernel::atomic): \
     LKMM's rmb orders loads only and wmb stores only, so neither orders a load before a later \
     store";
const PLAIN: &str = "a plain access is one relaxed atomic access (kernel::atomic); LKMM lets the \
     compiler tear, fuse, repeat or invent plain accesses, and a racing one is a data race whose \
     outcome it does not bound";

/// The functions `body` calls, in order, into `out`; `plain` is set if it
/// makes a plain access.
fn called(body: &[Stmt], out: &mut Vec<&'static str>, plain: &mut bool) {
    fn expr(e: &Expr, out: &mut Vec<&'static str>, plain: &mut bool) {
        match e {
            Expr::Call(c) => {
                out.push(c.name);
                let loc = c.loc_arg();
                for a in &c.args {
                    match a {
                        // The location argument `*x` is an address, not a
                        // read; any other `*y` is a plain read.
                        Expr::Deref(inner, _) if loc.is_some_and(|l| std::ptr::eq(l, a)) => {
                            expr(inner, out, plain)
                        }
                        _ => expr(a, out, plain),
                    }
                }
            }
            Expr::Deref(a, _) => {
                *plain = true;
                expr(a, out, plain)
            }
            Expr::AddrOf(a, _) | Expr::Un(_, a) => expr(a, out, plain),
            Expr::Bin(_, a, b) => {
                expr(a, out, plain);
                expr(b, out, plain)
            }
            Expr::Cond(a, b, c) => {
                expr(a, out, plain);
                expr(b, out, plain);
                expr(c, out, plain)
            }
            Expr::Int(_) | Expr::Name(..) => {}
        }
    }
    for s in body {
        match s {
            Stmt::Decl { init: Some(e), .. } | Stmt::Expr(e) => expr(e, out, plain),
            Stmt::Decl { .. } => {}
            Stmt::Assign { target, value } => {
                if let Target::Mem(e) = target {
                    *plain = true;
                    expr(e, out, plain);
                }
                expr(value, out, plain)
            }
            Stmt::If { cond, then, els } => {
                expr(cond, out, plain);
                called(then, out, plain);
                called(els, out, plain)
            }
        }
    }
}

/// The stand-ins a test uses that are documented as stronger than LKMM (a
/// `stronger` verdict on such a test says which, and does not fail the
/// run): read off the program text, conservatively. `racy`: LKMM flags a
/// data race in the test. Only then is a plain access's stand-in stronger:
/// LKMM bounds the value of a plain access that does not race exactly as
/// the relaxed access does, and leaves a racing one's unbounded.
pub fn stronger_stand_ins(t: &Test, racy: bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    let mut plain = false;
    let mut nested_srcu = false;
    for th in &t.threads {
        let mut mine = Vec::new();
        called(&th.body, &mut mine, &mut plain);
        let mut depth = 0i32;
        for n in &mine {
            match *n {
                "srcu_read_lock" => {
                    depth += 1;
                    nested_srcu |= depth > 1;
                }
                "srcu_read_unlock" => depth -= 1,
                _ => {}
            }
        }
        names.extend(mine);
    }
    if names.contains(&"rcu_dereference") {
        out.push(RCU_DEREF);
    }
    if nested_srcu {
        out.push(SRCU_NEST);
    }
    if names.contains(&"smp_mb__after_srcu_read_unlock") {
        out.push(MB_AFTER_SRCU);
    }
    if plain && racy {
        out.push(PLAIN);
    }
    out
}

/// The stand-ins a test uses that order more than LKMM does, so that two
/// accesses LKMM leaves unordered (a data race) happen-before one another
/// here: read off the program text, conservatively.
pub fn race_hiding_stand_ins(t: &Test) -> Vec<&'static str> {
    let mut names = Vec::new();
    let mut plain = false;
    for th in &t.threads {
        called(&th.body, &mut names, &mut plain);
    }
    let mut out = Vec::new();
    if names.contains(&"rcu_dereference") {
        out.push(RCU_DEREF);
    }
    if names.contains(&"smp_rmb") || names.contains(&"smp_wmb") {
        out.push(RMB_WMB);
    }
    out
}

/// Whether the test makes a plain access: without one it cannot race.
pub fn has_plain_access(t: &Test) -> bool {
    let mut plain = false;
    for th in &t.threads {
        called(&th.body, &mut Vec::new(), &mut plain);
    }
    plain
}

/// A cycle of threads, each writing (after one of its reads) a location the
/// next one reads (before one of its writes).
fn lb_cycle(rw: &[(Vec<String>, Vec<String>)]) -> bool {
    let n = rw.len();
    let edge = |a: usize, b: usize| a != b && rw[a].1.iter().any(|w| rw[b].0.contains(w));
    // Reachability by repeated relaxation (n is at most a handful).
    let mut reach = vec![vec![false; n]; n];
    for (a, row) in reach.iter_mut().enumerate() {
        for (b, cell) in row.iter_mut().enumerate() {
            *cell = edge(a, b);
        }
    }
    for k in 0..n {
        for a in 0..n {
            for b in 0..n {
                if reach[a][k] && reach[k][b] {
                    reach[a][b] = true;
                }
            }
        }
    }
    (0..n).any(|a| reach[a][a])
}

#[derive(Default)]
struct Events {
    reads: Vec<String>,
    /// Locations read before some later write of the thread.
    read_before_write: Vec<String>,
    /// Locations written after some read of the thread.
    writes_after_read: Vec<String>,
    sil: bool,
    locks: bool,
    unlocked: bool,
    unlock_then_lock: bool,
    /// Registers loaded with READ_ONCE.
    once_regs: Vec<String>,
    addr_dep: bool,
    /// Locations of RMWs and of atomic_set.
    rmws: Vec<String>,
    sets: Vec<String>,
    /// Registers whose value comes from an unordered load (READ_ONCE, a
    /// plain or relaxed read), directly or through other registers.
    unordered: Vec<String>,
    /// A store under an `if` whose condition reads such a register.
    ctrl_dep: bool,
    /// Stores seen so far (to tell whether a branch stores).
    stores: usize,
    /// A store of a value an unordered load gave.
    data_dep: bool,
    /// An unordered load seen so far, then a release store.
    unordered_read: bool,
    rel_after_unordered: bool,
}

fn loc_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n, _) => Some(n.clone()),
        Expr::Deref(inner, _) | Expr::AddrOf(inner, _) => loc_name(inner),
        _ => None,
    }
}

impl Events {
    fn write(&mut self, loc: Option<String>) {
        self.stores += 1;
        if let Some(l) = loc {
            if !self.reads.is_empty() {
                self.writes_after_read.push(l);
                for r in self.reads.clone() {
                    if !self.read_before_write.contains(&r) {
                        self.read_before_write.push(r);
                    }
                }
            }
        }
    }

    fn read(&mut self, loc: Option<String>) {
        if let Some(l) = loc {
            self.reads.push(l);
        }
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::Decl { name, init, .. } => {
                    if let Some(e) = init {
                        self.assign(name, e);
                    }
                }
                Stmt::Assign { target, value } => match target {
                    Target::Reg(r, _) => self.assign(r, value),
                    Target::Mem(e) => {
                        self.expr(value);
                        self.expr(e);
                        self.addr_dep |= self.addr_unordered(e);
                        self.data_dep |= self.unordered_in(value);
                        self.write(loc_name(e));
                    }
                },
                Stmt::Expr(e) => self.expr(e),
                Stmt::If { cond, then, els } => {
                    self.expr(cond);
                    let dep = self.unordered_in(cond);
                    let before = self.stores;
                    self.stmts(then);
                    self.stmts(els);
                    self.ctrl_dep |= dep && self.stores > before;
                }
            }
        }
    }

    /// Whether the address `e` names is computed from a register an
    /// unordered load gave (`*r1 = 1`, `smp_store_release(r1, v)`).
    fn addr_unordered(&self, e: &Expr) -> bool {
        match e {
            Expr::Deref(a, _) | Expr::AddrOf(a, _) | Expr::Un(_, a) => self.addr_unordered(a),
            Expr::Name(n, _) => self.unordered.iter().any(|r| r == n),
            Expr::Bin(_, a, b) => self.addr_unordered(a) || self.addr_unordered(b),
            Expr::Cond(_, b, c) => self.addr_unordered(b) || self.addr_unordered(c),
            Expr::Call(_) | Expr::Int(_) => false,
        }
    }

    /// Whether `e` reads an unordered load's value: the load itself, or a
    /// register holding one.
    fn unordered_in(&self, e: &Expr) -> bool {
        match e {
            // A call's location argument is an address, not a read.
            Expr::Call(c) => {
                let loc = c.loc_arg();
                matches!(c.func, Func::Load(Order::Relaxed))
                    || c.args
                        .iter()
                        .filter(|a| !loc.is_some_and(|l| std::ptr::eq(l, *a)))
                        .any(|a| self.unordered_in(a))
            }
            Expr::Name(n, _) => self.unordered.iter().any(|r| r == n),
            // A plain read of memory.
            Expr::Deref(..) => true,
            Expr::AddrOf(a, _) | Expr::Un(_, a) => self.unordered_in(a),
            Expr::Bin(_, a, b) => self.unordered_in(a) || self.unordered_in(b),
            Expr::Cond(a, b, c) => {
                self.unordered_in(a) || self.unordered_in(b) || self.unordered_in(c)
            }
            Expr::Int(_) => false,
        }
    }

    fn assign(&mut self, reg: &str, e: &Expr) {
        self.expr(e);
        if self.unordered_in(e) {
            if !self.unordered.iter().any(|r| r == reg) {
                self.unordered.push(reg.to_string());
            }
        } else {
            self.unordered.retain(|r| r != reg);
        }
        if let Expr::Call(c) = e {
            if c.name == "READ_ONCE" {
                self.once_regs.push(reg.to_string());
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Call(c) => {
                for a in &c.args {
                    self.expr(a);
                }
                let loc = c.loc_arg().and_then(loc_name);
                if c.loc_arg().is_some_and(|l| self.addr_unordered(l)) {
                    self.addr_dep = true;
                }
                if let Some(Expr::Deref(inner, _)) = c.args.first() {
                    if let Expr::Name(r, _) = &**inner {
                        if self.once_regs.contains(r) {
                            self.addr_dep = true;
                        }
                    }
                }
                self.unordered_read |= matches!(c.func, Func::Load(Order::Relaxed));
                if matches!(c.func, Func::Store(Order::Release)) && self.unordered_read {
                    self.rel_after_unordered = true;
                }
                if matches!(c.func, Func::Store(_)) {
                    self.data_dep |= c.args.get(1).is_some_and(|v| self.unordered_in(v));
                }
                match c.func {
                    Func::Load(_) => self.read(loc),
                    Func::Store(_) => {
                        if c.name.starts_with("atomic_set") {
                            self.sets.extend(loc.clone());
                        }
                        self.write(loc)
                    }
                    Func::Rmw { .. } | Func::Cmpxchg(_) | Func::AddUnless { .. } => {
                        self.rmws.extend(loc.clone());
                        self.read(loc.clone());
                        self.write(loc);
                    }
                    Func::SpinIsLocked => self.sil = true,
                    Func::SpinLock | Func::SpinTrylock => {
                        self.locks = true;
                        if self.unlocked {
                            self.unlock_then_lock = true;
                        }
                    }
                    Func::SpinUnlock => self.unlocked = true,
                    _ => {}
                }
            }
            Expr::Deref(inner, _) => {
                self.expr(inner);
                self.addr_dep |= self.addr_unordered(inner);
                if let Expr::Name(r, _) = &**inner {
                    if self.once_regs.contains(r) {
                        self.addr_dep = true;
                    }
                }
                self.read(loc_name(e));
            }
            Expr::AddrOf(a, _) | Expr::Un(_, a) => self.expr(a),
            Expr::Bin(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Cond(a, b, c) => {
                self.expr(a);
                self.expr(b);
                self.expr(c);
            }
            Expr::Int(_) | Expr::Name(..) => {}
        }
    }
}

/// Judges `files` on `jobs` workers; results in file order. `done` is
/// called once per file, in file order, as soon as that file and every file
/// before it are judged (so a long run prints as it goes, and the same input
/// prints the same bytes for any `jobs`).
pub fn judge_all(
    files: &[PathBuf],
    opts: Options,
    jobs: usize,
    done: &(dyn Fn(usize, &Result<Judged, String>) + Sync),
) -> Vec<Result<Judged, String>> {
    let next = AtomicUsize::new(0);
    /// The results so far, and how many of them `done` has seen.
    type Progress = (Vec<Option<Result<Judged, String>>>, usize);
    let out: Mutex<Progress> = Mutex::new((vec![None; files.len()], 0));
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(f) = files.get(i) else { break };
                let r = judge_file(f, opts);
                let mut g = out.lock().unwrap_or_else(|p| p.into_inner());
                g.0[i] = Some(r);
                while let Some(Some(r)) = g.0.get(g.1) {
                    done(g.1, r);
                    g.1 += 1;
                }
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .0
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not judged".to_string())))
        .collect()
}

/// Counts per verdict.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub files: usize,
    pub agree: usize,
    pub stronger: usize,
    pub weaker: usize,
    pub na: usize,
    pub unsupported: usize,
    pub malformed: usize,
}

impl Tally {
    pub fn add(&mut self, r: &Result<Judged, String>) {
        self.files += 1;
        match r {
            Ok(j) => match j.verdict {
                Verdict::Agree => self.agree += 1,
                Verdict::Stronger => self.stronger += 1,
                Verdict::Weaker => self.weaker += 1,
                Verdict::NotApplicable => self.na += 1,
                Verdict::Unsupported => self.unsupported += 1,
            },
            Err(_) => self.malformed += 1,
        }
    }

    pub fn text(&self) -> String {
        let mut s = format!(
            "{} files: {} agree, {} stronger, {} weaker, {} n/a, {} unsupported",
            self.files, self.agree, self.stronger, self.weaker, self.na, self.unsupported
        );
        if self.malformed > 0 {
            s.push_str(&format!(", {} malformed", self.malformed));
        }
        s
    }

    pub fn json(&self) -> Value {
        json!({
            "files": self.files, "agree": self.agree, "stronger": self.stronger,
            "weaker": self.weaker, "n/a": self.na, "unsupported": self.unsupported,
            "malformed": self.malformed,
        })
    }
}
