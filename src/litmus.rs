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

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use vfsmc_specs::litmus::ast::{ErrorKind, Expr, Func, Outcome, ReadError, Stmt, Target, Test};
use vfsmc_specs::litmus::interp::{execute, Program, Seek, LITMUS_ERROR};
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
    /// The word judged against: the header's, or the list's.
    pub expected: Option<String>,
    pub observed: Option<Outcome>,
    pub verdict: Verdict,
    pub reason: String,
    pub executions: usize,
}

impl Judged {
    pub fn json(&self) -> Value {
        json!({
            "file": self.file,
            "result": self.result,
            "expected": self.expected,
            "observed": self.observed.map(|o| o.word()),
            "verdict": self.verdict.word(),
            "reason": if self.reason.is_empty() { Value::Null } else { Value::String(self.reason.clone()) },
            "executions": self.executions,
        })
    }

    pub fn text(&self) -> String {
        let mut s = format!(
            "{}: Result {} observed {} {}",
            self.file,
            self.result.as_deref().unwrap_or("-"),
            self.observed.map_or("-", |o| o.word()),
            self.verdict
        );
        if self.expected != self.result {
            if let Some(e) = &self.expected {
                s.push_str(&format!(" (expected {e}: litmus-expected.txt)"));
            }
        }
        if !self.reason.is_empty() {
            s.push_str(&format!(": {}", self.reason));
        }
        s
    }

    /// Whether this verdict fails the run (exit 1).
    pub fn fails(&self) -> bool {
        matches!(self.verdict, Verdict::Weaker | Verdict::Stronger)
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            engine: EngineKind::Loom,
            cap: 1_000_000,
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
        expected: None,
        observed: None,
        verdict: Verdict::Unsupported,
        reason: String::new(),
        executions: 0,
    };
    // The header is read even when the rest is not.
    j.result = header_word(&text);
    j.expected = j.result.clone();
    if let Some((w, _)) = expected_override(path) {
        j.expected = Some(w);
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

fn search(p: &Arc<Program>, seek: Seek, opts: Options, executions: &mut usize) -> Found {
    let budget = Budget {
        loom_cap: Some(opts.cap),
        iterations: opts.cap,
        ..Budget::default()
    };
    let prog = p.clone();
    let body: crate::engine::Body = Arc::new(move || execute(&prog, seek));
    let x: Exploration = explore(opts.engine, &budget, body);
    *executions += x.executions;
    match &x.failure {
        Some(f) => match &f.record.violation {
            Some(v) if v.invariant == "exists" => Found::Hit,
            Some(v) => Found::Other(v.invariant.clone(), v.message.clone()),
            None => Found::Other("failure".into(), String::new()),
        },
        None if x.exhaustive && opts.engine.engine().exhaustive() => Found::None,
        None => Found::Capped,
    }
}

fn judge_program(mut j: Judged, p: &Arc<Program>, opts: Options) -> Result<Judged, String> {
    let mut n = 0;
    let observed = match search(p, Seek::Satisfying, opts, &mut n) {
        Found::None => Some(Outcome::Never),
        Found::Hit => match search(p, Seek::Failing, opts, &mut n) {
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
            None => j.verdict = Verdict::Stronger,
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

fn other(mut j: Judged, n: usize, inv: &str, msg: &str) -> Judged {
    j.executions = n;
    if inv == "deadlock" && j.expected.as_deref() == Some("DEADLOCK") {
        j.verdict = Verdict::Agree;
        j.reason = "the engine found the deadlock".to_string();
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
    let mut rmw_locs: Vec<(usize, String)> = vec![];
    let mut set_locs: Vec<(usize, String)> = vec![];
    for (i, th) in t.threads.iter().enumerate() {
        let mut ev = Events::default();
        ev.stmts(&th.body);
        uses_sil |= ev.sil;
        unlock_lock |= ev.unlock_then_lock;
        addr_dep |= ev.addr_dep;
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
    if rmw_locs
        .iter()
        .any(|(i, l)| set_locs.iter().any(|(j, m)| i != j && l == m))
    {
        out.push(Need::AtomicRmw(RMW_SPLIT));
    }
    out
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
                        self.write(loc_name(e));
                    }
                },
                Stmt::Expr(e) => self.expr(e),
                Stmt::If { cond, then, els } => {
                    self.expr(cond);
                    self.stmts(then);
                    self.stmts(els);
                }
            }
        }
    }

    fn assign(&mut self, reg: &str, e: &Expr) {
        self.expr(e);
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
                if let Some(Expr::Deref(inner, _)) = c.args.first() {
                    if let Expr::Name(r, _) = &**inner {
                        if self.once_regs.contains(r) {
                            self.addr_dep = true;
                        }
                    }
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
    // The results so far, and how many of them `done` has seen.
    let out: Mutex<(Vec<Option<Result<Judged, String>>>, usize)> =
        Mutex::new((vec![None; files.len()], 0));
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
