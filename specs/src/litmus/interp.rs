//! Runs a parsed litmus test ([`super::ast::Test`]) on the kernel primitives
//! every model uses: each shared word is a `kernel::atomic::Atomic`, each
//! `spinlock_t` a `kernel::spinlock::SpinLock`, RCU one `kernel::rcu::Rcu`
//! domain and each `srcu_struct` a domain of its own. One call of
//! [`execute`] is one execution under whatever engine the facade is bound
//! to; it raises `exists` when the execution's final state is the one
//! searched for ([`Seek`]), so an engine's search answers "is there such an
//! execution".
//!
//! A location's address is a fixed, tagged value derived from its name
//! ([`address_of`]), so the same test gives the same values in every run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use vfsmc_model::exec;
use vfsmc_model::kernel::atomic::{
    full_barrier_as, smp_mb, smp_mb__after_atomic, smp_mb__after_spinlock, smp_rmb, smp_wmb,
    Atomic, RmwArith, RmwOrder,
};
use vfsmc_model::kernel::rcu::{Rcu, RcuFlavor};
use vfsmc_model::kernel::spinlock::{SpinGuard, SpinLock};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::sync;
use vfsmc_model::trace::{Context, Show};

use super::ast::*;
use super::race::{Pending, RaceLog, PLAIN_LOAD, PLAIN_STORE};

/// The most threads one test may have: loom runs four spawned threads
/// beside the one that starts them, which runs the fifth.
pub const MAX_THREADS: usize = 5;

/// The invariant a runtime error of the test raises (a dereference of a
/// value that is no address, an unlock of a lock not held).
pub const LITMUS_ERROR: &str = "litmus_error";

/// The invariant [`Seek::Race`] raises: LKMM's data-race flag.
pub const DATA_RACE: &str = "data_race";

const ADDR_TAG: u64 = 0x5a00_0000_0000_0000;

static ADDR_NAMES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

/// The address of the location called `name`: a tag and a hash of the name.
pub fn address_of(name: &str) -> u64 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    ADDR_TAG | u64::from(h)
}

/// `v` as a clause writes it: a location's name for its address.
pub fn show_value(v: u64) -> String {
    if v & 0xff00_0000_0000_0000 == ADDR_TAG {
        if let Some(n) = ADDR_NAMES.lock().unwrap_or_else(|p| p.into_inner()).get(&v) {
            return n.clone();
        }
    }
    (v as i64).to_string()
}

fn show_pointer(v: u64) -> String {
    match v {
        0 => "NULL".to_string(),
        v if v & 0xff00_0000_0000_0000 == ADDR_TAG => format!("&{}", show_value(v)),
        v => (v as i64).to_string(),
    }
}

/// What an execution raises `exists` for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seek {
    /// A final state that passes the filter and satisfies the clause's
    /// condition.
    Satisfying,
    /// One that passes the filter and does not.
    Failing,
    /// One that passes the filter and has a data race ([`super::race`]).
    /// Only this search logs accesses, so the other two explore exactly
    /// what they did before races were looked for.
    Race,
}

/// A test ready to run: the parsed text and its locations' addresses.
#[derive(Debug)]
pub struct Program {
    pub test: Test,
    /// `file` or the test's name, for messages.
    pub origin: String,
    addrs: Vec<u64>,
    /// Per location: whether some thread takes it as a spinlock / an
    /// srcu_struct.
    locks: Vec<bool>,
    srcus: Vec<bool>,
}

impl Program {
    /// Checks that the test can run: its thread count, distinct addresses.
    pub fn new(test: Test, origin: &str) -> Result<Program, ReadError> {
        if test.threads.len() > MAX_THREADS {
            return Err(ReadError {
                pos: test.threads[MAX_THREADS].pos,
                kind: ErrorKind::Unsupported,
                what: format!(
                    "{} threads (loom runs at most {MAX_THREADS})",
                    test.threads.len()
                ),
            });
        }
        let addrs: Vec<u64> = test.locations.iter().map(|l| address_of(&l.name)).collect();
        {
            let mut names = ADDR_NAMES.lock().unwrap_or_else(|p| p.into_inner());
            for (l, a) in test.locations.iter().zip(&addrs) {
                names.entry(*a).or_insert_with(|| l.name.clone());
            }
        }
        let mut locks: Vec<bool> = test
            .locations
            .iter()
            .map(|l| l.kind == LocKind::SpinLock)
            .collect();
        let mut srcus: Vec<bool> = test
            .locations
            .iter()
            .map(|l| l.kind == LocKind::Srcu)
            .collect();
        for t in &test.threads {
            mark_uses(&test, &t.body, &mut locks, &mut srcus);
        }
        Ok(Program {
            test,
            origin: origin.to_string(),
            addrs,
            locks,
            srcus,
        })
    }

    fn loc_of_addr(&self, a: u64) -> Option<usize> {
        self.addrs.iter().position(|x| *x == a)
    }

    fn init_value(&self, v: &Value) -> u64 {
        match v {
            Value::Int(n) => *n as u64,
            Value::Addr(a) => self.test.location(a).map_or(0, |i| self.addrs[i]),
        }
    }
}

/// Marks the locations a body passes to spin_* or srcu_* by name.
fn mark_uses(test: &Test, body: &[Stmt], locks: &mut [bool], srcus: &mut [bool]) {
    fn expr(test: &Test, e: &Expr, locks: &mut [bool], srcus: &mut [bool]) {
        match e {
            Expr::Call(c) => {
                let target = match c.func {
                    Func::SpinLock | Func::SpinUnlock | Func::SpinTrylock | Func::SpinIsLocked => {
                        Some(&mut *locks)
                    }
                    Func::SrcuReadLock | Func::SrcuReadUnlock | Func::SynchronizeSrcu => {
                        Some(&mut *srcus)
                    }
                    _ => None,
                };
                if let (Some(set), Some(a)) = (target, c.args.first()) {
                    let name = match a {
                        Expr::Name(n, _) => Some(n),
                        Expr::AddrOf(inner, _) | Expr::Deref(inner, _) => match &**inner {
                            Expr::Name(n, _) => Some(n),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(i) = name.and_then(|n| test.location(n)) {
                        set[i] = true;
                    }
                }
                for a in &c.args {
                    expr(test, a, locks, srcus);
                }
            }
            Expr::Deref(a, _) | Expr::AddrOf(a, _) | Expr::Un(_, a) => expr(test, a, locks, srcus),
            Expr::Bin(_, a, b) => {
                expr(test, a, locks, srcus);
                expr(test, b, locks, srcus);
            }
            Expr::Cond(a, b, c) => {
                expr(test, a, locks, srcus);
                expr(test, b, locks, srcus);
                expr(test, c, locks, srcus);
            }
            Expr::Int(_) | Expr::Name(..) => {}
        }
    }
    for s in body {
        match s {
            Stmt::Decl { init: Some(e), .. } | Stmt::Expr(e) => expr(test, e, locks, srcus),
            Stmt::Decl { .. } => {}
            Stmt::Assign { target, value } => {
                if let Target::Mem(e) = target {
                    expr(test, e, locks, srcus);
                }
                expr(test, value, locks, srcus);
            }
            Stmt::If { cond, then, els } => {
                expr(test, cond, locks, srcus);
                mark_uses(test, then, locks, srcus);
                mark_uses(test, els, locks, srcus);
            }
        }
    }
}

/// The shared state of one execution.
struct Mem {
    words: Vec<Atomic>,
    locks: Vec<Option<SpinLock>>,
    srcus: Vec<Option<Rcu>>,
    rcu: Rcu,
    /// Per lock: a thread ended holding it. herd7 keeps such a lock held
    /// for ever, so no later `spin_lock` of it completes; the interpreter
    /// releases it (the engines would report a deadlock) and marks `void`
    /// any execution in which another thread then takes it. Ghost state:
    /// the engines run one thread at a time, so plain flags do.
    orphaned: Vec<std::sync::atomic::AtomicBool>,
    /// This execution is one herd7 does not have: its final state is not
    /// judged.
    void: std::sync::atomic::AtomicBool,
    /// The accesses, when the search looks for a data race.
    races: Option<RaceLog>,
}

impl Mem {
    fn new(p: &Program, seek: Seek) -> Mem {
        let words = p
            .test
            .locations
            .iter()
            .map(|l| {
                let v = p.init_value(&l.init);
                if l.pointer {
                    Atomic::with_format(&l.name, v, Show::With(show_pointer))
                } else {
                    Atomic::new(&l.name, v)
                }
            })
            .collect();
        let locks = p
            .test
            .locations
            .iter()
            .zip(&p.locks)
            .map(|(l, &is)| is.then(|| SpinLock::new(&l.name)))
            .collect();
        let srcus = p
            .srcus
            .iter()
            .map(|&is| is.then(|| Rcu::with_flavor(RcuFlavor::PreV420)))
            .collect();
        Mem {
            words,
            locks,
            srcus,
            rcu: Rcu::new(),
            orphaned: p.locks.iter().map(|_| Default::default()).collect(),
            void: Default::default(),
            races: (seek == Seek::Race)
                .then(|| RaceLog::new(p.test.locations.iter().map(|l| l.name.clone()).collect())),
        }
    }
}

/// A thread's registers at its end, in the order it declared them.
type Regs = Vec<(String, u64)>;

/// The threads' function names, which label their steps.
const PROCS: [&str; MAX_THREADS] = ["P0", "P1", "P2", "P3", "P4"];

/// One execution of `p`: spawn the threads, join them, judge the final
/// state; raises `exists` if it is the state `seek` looks for.
pub fn execute(p: &Arc<Program>, seek: Seek) {
    let mem = Arc::new(Mem::new(p, seek));
    let n = p.test.threads.len();
    let regs: Arc<Mutex<Vec<Regs>>> = Arc::new(Mutex::new(vec![Vec::new(); n]));
    let run = |i: usize, p: &Program, mem: &Mem, regs: &Mutex<Vec<Regs>>| {
        let t = Task::new(PROCS[i], Context::Task);
        let _f = t.enter(PROCS[i]);
        let r = Interp::run(p, mem, &t, i);
        regs.lock().unwrap_or_else(|e| e.into_inner())[i] = r;
    };
    // loom runs four spawned threads: the fifth runs here.
    let spawned = n.min(MAX_THREADS - 1);
    let handles: Vec<_> = (0..spawned)
        .map(|i| {
            let (p, mem, regs) = (p.clone(), mem.clone(), regs.clone());
            exec::spawn(PROCS[i], move || run(i, &p, &mem, &regs))
        })
        .collect();
    for i in spawned..n {
        run(i, p, &mem, &regs);
    }
    for h in handles {
        h.join();
    }
    if mem.void.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let regs = regs.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let finals: Vec<u64> = mem.words.iter().map(Atomic::value_at_quiescence).collect();
    let o = Final {
        p,
        regs: &regs,
        finals: &finals,
    };
    if let Some(f) = &p.test.filter {
        if !o.holds(f) {
            return;
        }
    }
    if let Some(races) = &mem.races {
        if let Some(race) = races.first() {
            exec::check_final("main", DATA_RACE, || Err(format!("{race}: {}", o.render())));
        }
        return;
    }
    let sat = o.holds(&p.test.cond);
    let hit = match seek {
        Seek::Satisfying => sat,
        Seek::Failing | Seek::Race => !sat,
    };
    if hit {
        exec::check_final("main", "exists", || {
            Err(format!(
                "{} ({}) is {}: {}",
                match p.test.quantifier {
                    Quantifier::Exists => "exists",
                    Quantifier::NotExists => "~exists",
                    Quantifier::Forall => "forall",
                },
                p.test.cond,
                if sat { "satisfied" } else { "not satisfied" },
                o.render()
            ))
        });
    }
}

/// The final state the clause judges.
struct Final<'a> {
    p: &'a Program,
    regs: &'a [Regs],
    finals: &'a [u64],
}

impl Final<'_> {
    fn term(&self, t: &Term) -> u64 {
        match t {
            Term::Int(n) => *n as u64,
            Term::Reg(n, r, _) => self.regs[*n]
                .iter()
                .find(|(q, _)| q == r)
                .map(|(_, v)| *v)
                .or_else(|| {
                    self.p
                        .test
                        .reg_init
                        .iter()
                        .find(|(m, q, _)| m == n && q == r)
                        .map(|(_, _, v)| self.p.init_value(v))
                })
                .unwrap_or(0),
            Term::Loc(l, _) => self.p.test.location(l).map_or(0, |i| self.finals[i]),
            Term::Addr(l, _) => self.p.test.location(l).map_or(0, |i| self.p.addrs[i]),
        }
    }

    fn holds(&self, c: &Cond) -> bool {
        match c {
            Cond::True => true,
            Cond::False => false,
            Cond::Eq { lhs, rhs, eq } => (self.term(lhs) == self.term(rhs)) == *eq,
            Cond::Not(c) => !self.holds(c),
            Cond::And(a, b) => self.holds(a) && self.holds(b),
            Cond::Or(a, b) => self.holds(a) || self.holds(b),
        }
    }

    fn render(&self) -> String {
        let mut parts = Vec::new();
        for (i, regs) in self.regs.iter().enumerate() {
            for (name, v) in regs {
                parts.push(format!("{i}:{name}={}", show_value(*v)));
            }
        }
        for (l, v) in self.p.test.locations.iter().zip(self.finals) {
            if l.kind == LocKind::Word && !self.p.locks[self.p.test.location(&l.name).unwrap_or(0)]
            {
                parts.push(format!("{}={}", l.name, show_value(*v)));
            }
        }
        parts.join(" ")
    }
}

/// One thread's interpretation.
struct Interp<'a> {
    p: &'a Program,
    mem: &'a Mem,
    t: &'a Task,
    thread: usize,
    regs: Regs,
    guards: Vec<(usize, SpinGuard<'a>)>,
}

impl<'a> Interp<'a> {
    fn run(p: &'a Program, mem: &'a Mem, t: &'a Task, thread: usize) -> Regs {
        let mut regs: Regs = Vec::new();
        for (n, r, v) in &p.test.reg_init {
            if *n == thread {
                regs.push((r.clone(), p.init_value(v)));
            }
        }
        let mut me = Interp {
            p,
            mem,
            t,
            thread,
            regs,
            guards: Vec::new(),
        };
        me.stmts(&p.test.threads[thread].body);
        // Locks still held stay held for herd7: released here, but marked
        // so that an execution in which another thread takes one is void.
        while let Some((l, g)) = me.guards.pop() {
            mem.orphaned[l].store(true, std::sync::atomic::Ordering::Relaxed);
            g.unlock();
        }
        me.regs
    }

    /// This thread took lock `l`: if a thread ended holding it, herd7 has
    /// no such execution.
    fn took(&self, l: usize) {
        if self.mem.orphaned[l].load(std::sync::atomic::Ordering::Relaxed) {
            self.mem
                .void
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Stamps an access of location `loc` when the search looks for races.
    fn race_before(&self, loc: usize, plain: bool) -> Option<Pending> {
        self.mem.races.as_ref()?.before(loc, self.thread, plain)
    }

    /// Logs the access `race` stamped, now that its operation is done.
    fn race_after(&self, race: Option<Pending>, write: bool, how: &'static str) {
        if let Some(races) = &self.mem.races {
            races.after(race, write, how, &PROCS);
        }
    }

    /// `atomic_add_unless(v, a, u)`: adds `a` unless the word is `u`;
    /// whether it added.
    fn add_unless(&self, l: usize, a: u64, u: u64) -> bool {
        let (t, w) = (self.t, &self.mem.words[l]);
        if (a, u) == (1, 0) {
            return w.atomic_inc_not_zero(t);
        }
        let mut v = w.atomic_read(t);
        loop {
            if v == u {
                return false;
            }
            let seen = w.cmpxchg(t, v, v.wrapping_add(a));
            if seen == v {
                return true;
            }
            v = seen;
            sync::yield_now();
        }
    }

    fn fail(&self, pos: Pos, what: String) -> ! {
        exec::raise(
            PROCS[self.thread],
            LITMUS_ERROR,
            format!("{}:{pos}: {what}", self.p.origin),
        )
    }

    fn set(&mut self, name: &str, v: u64) {
        match self.regs.iter_mut().find(|(n, _)| n == name) {
            Some(r) => r.1 = v,
            None => self.regs.push((name.to_string(), v)),
        }
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::Decl { name, init, .. } => {
                    // A register exists (as 0, herd7's initial value) from
                    // its declaration on, its own initialiser included.
                    if !self.regs.iter().any(|(n, _)| n == name) {
                        self.set(name, 0);
                    }
                    let v = init.as_ref().map_or(0, |e| self.eval(e));
                    self.set(name, v);
                }
                Stmt::Assign { target, value } => match target {
                    Target::Reg(r, _) => {
                        let v = self.eval(value);
                        self.set(r, v);
                    }
                    Target::Mem(e) => {
                        let loc = self.deref(e, expr_pos(e));
                        let v = self.eval(value);
                        let race = self.race_before(loc, true);
                        self.mem.words[loc].store_plain(self.t, v);
                        self.race_after(race, true, PLAIN_STORE);
                    }
                },
                Stmt::Expr(e) => {
                    self.eval(e);
                }
                Stmt::If { cond, then, els } => {
                    if self.eval(cond) != 0 {
                        self.stmts(then);
                    } else {
                        self.stmts(els);
                    }
                }
            }
        }
    }

    /// The location the address `e` evaluates to.
    fn deref(&mut self, e: &Expr, pos: Pos) -> usize {
        let a = self.eval(e);
        match self.p.loc_of_addr(a) {
            Some(l) => l,
            None => self.fail(
                pos,
                format!(
                    "dereference of {}, which is no location's address",
                    show_value(a)
                ),
            ),
        }
    }

    /// The location an access names: `*e` (the ONCE forms) or the pointer
    /// `e` itself (`smp_load_acquire(x)`, `atomic_inc(v)`).
    fn loc_arg(&mut self, e: &Expr, pos: Pos) -> usize {
        match e {
            Expr::Deref(inner, p) => self.deref(inner, *p),
            Expr::AddrOf(inner, p) => match &**inner {
                Expr::Deref(x, q) => self.deref(x, *q),
                _ => self.fail(*p, "'&' of something that is not '*pointer'".to_string()),
            },
            _ => self.deref(e, pos),
        }
    }

    fn lock_of(&mut self, e: &Expr, pos: Pos) -> (usize, &'a SpinLock) {
        let l = self.loc_arg(e, pos);
        let mem: &'a Mem = self.mem;
        match &mem.locks[l] {
            Some(lock) => (l, lock),
            None => self.fail(
                pos,
                format!("'{}' is not a spinlock", self.p.test.locations[l].name),
            ),
        }
    }

    fn srcu_of(&mut self, e: &Expr, pos: Pos) -> &'a Rcu {
        let l = self.loc_arg(e, pos);
        let mem: &'a Mem = self.mem;
        match &mem.srcus[l] {
            Some(s) => s,
            None => self.fail(
                pos,
                format!("'{}' is not an srcu_struct", self.p.test.locations[l].name),
            ),
        }
    }

    fn eval(&mut self, e: &Expr) -> u64 {
        match e {
            Expr::Int(n) => *n as u64,
            Expr::Name(n, pos) => {
                if let Some((_, v)) = self.regs.iter().find(|(r, _)| r == n) {
                    return *v;
                }
                match self.p.test.location(n) {
                    Some(i) => self.p.addrs[i],
                    None => self.fail(*pos, format!("'{n}' has no value")),
                }
            }
            Expr::Deref(inner, pos) => {
                let l = self.deref(inner, *pos);
                let race = self.race_before(l, true);
                let v = self.mem.words[l].load_plain(self.t);
                self.race_after(race, false, PLAIN_LOAD);
                v
            }
            Expr::AddrOf(inner, pos) => match &**inner {
                Expr::Deref(x, _) => self.eval(x),
                _ => self.fail(*pos, "'&' of something that is not '*pointer'".to_string()),
            },
            Expr::Un(op, a) => {
                let v = self.eval(a);
                match op {
                    UnOp::Not => u64::from(v == 0),
                    UnOp::BitNot => !v,
                    UnOp::Neg => v.wrapping_neg(),
                }
            }
            Expr::Bin(op, a, b) => {
                let x = self.eval(a);
                // && and || do not evaluate their right side needlessly.
                match op {
                    BinOp::LogAnd if x == 0 => return 0,
                    BinOp::LogOr if x != 0 => return 1,
                    _ => {}
                }
                let y = self.eval(b);
                let (sx, sy) = (x as i64, y as i64);
                match op {
                    BinOp::Add => x.wrapping_add(y),
                    BinOp::Sub => x.wrapping_sub(y),
                    BinOp::Mul => x.wrapping_mul(y),
                    BinOp::Div => sx.checked_div(sy).unwrap_or(0) as u64,
                    BinOp::Rem => sx.checked_rem(sy).unwrap_or(0) as u64,
                    BinOp::And => x & y,
                    BinOp::Or => x | y,
                    BinOp::Xor => x ^ y,
                    BinOp::Shl => x.wrapping_shl(y as u32),
                    BinOp::Shr => x.wrapping_shr(y as u32),
                    BinOp::Eq => u64::from(x == y),
                    BinOp::Ne => u64::from(x != y),
                    BinOp::Lt => u64::from(sx < sy),
                    BinOp::Le => u64::from(sx <= sy),
                    BinOp::Gt => u64::from(sx > sy),
                    BinOp::Ge => u64::from(sx >= sy),
                    BinOp::LogAnd | BinOp::LogOr => u64::from(y != 0),
                }
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c) != 0 {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::Call(c) => self.call(c),
        }
    }

    fn call(&mut self, c: &Call) -> u64 {
        let t = self.t;
        let pos = c.pos;
        match c.func {
            Func::Load(_) => {
                let l = self.loc_arg(&c.args[0], pos);
                let w = &self.mem.words[l];
                let race = self.race_before(l, false);
                let v = match c.name {
                    "smp_load_acquire" => w.load_acquire(t),
                    "rcu_dereference" => w.rcu_dereference(t),
                    "rcu_access_pointer" => w.rcu_access_pointer(t),
                    "atomic_read" => w.atomic_read(t),
                    "atomic_read_acquire" => w.atomic_read_acquire(t),
                    _ => w.read_once(t),
                };
                self.race_after(race, false, c.name);
                v
            }
            Func::Store(_) => {
                let l = self.loc_arg(&c.args[0], pos);
                let v = self.eval(&c.args[1]);
                let w = &self.mem.words[l];
                let race = self.race_before(l, false);
                match c.name {
                    "smp_store_release" | "atomic_set_release" => w.store_release(t, v),
                    "rcu_assign_pointer" => w.rcu_assign_pointer(t, v),
                    "atomic_set" => w.atomic_set(t, v),
                    _ => w.write_once(t, v),
                }
                self.race_after(race, true, c.name);
                0
            }
            Func::Rmw {
                op,
                ret,
                order,
                implicit,
            } => {
                let (Some(loc), operand) = (c.loc_arg(), c.operand()) else {
                    self.fail(pos, format!("{} without a location", c.name))
                };
                let d = match (implicit, operand) {
                    (Some(d), _) => d as u64,
                    (None, Some(e)) => self.eval(e),
                    (None, None) => self.fail(pos, format!("{} without an operand", c.name)),
                };
                let l = self.loc_arg(loc, pos);
                let arith = match op {
                    RmwOp::Add => RmwArith::Add(d),
                    RmwOp::Sub => RmwArith::Sub(d),
                    RmwOp::And => RmwArith::And(d),
                    RmwOp::Or => RmwArith::Or(d),
                    RmwOp::AndNot => RmwArith::AndNot(d),
                    RmwOp::Set => RmwArith::Set(d),
                };
                let race = self.race_before(l, false);
                let old = self.mem.words[l].rmw_ordered(t, c.name, rmw_order(order), arith);
                self.race_after(race, true, c.name);
                let new = match op {
                    RmwOp::Add => old.wrapping_add(d),
                    RmwOp::Sub => old.wrapping_sub(d),
                    RmwOp::And => old & d,
                    RmwOp::Or => old | d,
                    RmwOp::AndNot => old & !d,
                    RmwOp::Set => d,
                };
                match ret {
                    Ret::Void => 0,
                    Ret::Old => old,
                    Ret::New => new,
                    Ret::IsZero => u64::from(new == 0),
                    Ret::IsNeg => u64::from((new as i64) < 0),
                }
            }
            Func::Cmpxchg(order) => {
                let l = self.loc_arg(&c.args[0], pos);
                let old = self.eval(&c.args[1]);
                let new = self.eval(&c.args[2]);
                let race = self.race_before(l, false);
                let seen = self.mem.words[l].cmpxchg_ordered(t, c.name, rmw_order(order), old, new);
                // A failed cmpxchg only reads.
                self.race_after(race, seen == old, c.name);
                seen
            }
            Func::AddUnless { inc_not_zero } => {
                let l = self.loc_arg(&c.args[0], pos);
                let (a, u) = if inc_not_zero {
                    (1, 0)
                } else {
                    (self.eval(&c.args[1]), self.eval(&c.args[2]))
                };
                let race = self.race_before(l, false);
                let added = self.add_unless(l, a, u);
                self.race_after(race, added, c.name);
                u64::from(added)
            }
            Func::SmpMb => {
                smp_mb(t);
                0
            }
            Func::SmpRmb => {
                smp_rmb(t);
                0
            }
            Func::SmpWmb => {
                smp_wmb(t);
                0
            }
            Func::MbAfter => {
                match c.name {
                    "smp_mb__after_atomic" => smp_mb__after_atomic(t),
                    "smp_mb__after_spinlock" => smp_mb__after_spinlock(t),
                    name => full_barrier_as(t, name),
                }
                0
            }
            Func::Barrier => 0,
            Func::RcuReadLock => {
                self.mem.rcu.rcu_read_lock(t);
                0
            }
            Func::RcuReadUnlock => {
                if t.rcu_depth() == 0 {
                    self.fail(
                        pos,
                        "rcu_read_unlock outside a read-side section".to_string(),
                    );
                }
                self.mem.rcu.rcu_read_unlock(t);
                0
            }
            Func::SynchronizeRcu => {
                self.mem.rcu.synchronize_rcu(t);
                0
            }
            Func::SrcuReadLock => self.srcu_of(&c.args[0], pos).srcu_read_lock(t),
            Func::SrcuReadUnlock => {
                self.eval(&c.args[1]);
                self.srcu_of(&c.args[0], pos).srcu_read_unlock(t);
                0
            }
            Func::SynchronizeSrcu => {
                self.srcu_of(&c.args[0], pos).synchronize_srcu(t);
                0
            }
            Func::SpinLock => {
                let (l, lock) = self.lock_of(&c.args[0], pos);
                if self.guards.iter().any(|(h, _)| *h == l) {
                    exec::raise(
                        PROCS[self.thread],
                        "deadlock",
                        format!(
                            "{}:{pos}: spin_lock of a lock this thread holds (self-deadlock)",
                            self.p.origin
                        ),
                    );
                }
                let g = lock.spin_lock(t);
                self.took(l);
                self.guards.push((l, g));
                0
            }
            Func::SpinTrylock => {
                let (l, lock) = self.lock_of(&c.args[0], pos);
                if self.guards.iter().any(|(h, _)| *h == l) {
                    return 0;
                }
                match lock.spin_trylock(t) {
                    Some(g) => {
                        self.took(l);
                        self.guards.push((l, g));
                        1
                    }
                    None => 0,
                }
            }
            Func::SpinUnlock => {
                let (l, _) = self.lock_of(&c.args[0], pos);
                match self.guards.iter().position(|(h, _)| *h == l) {
                    Some(i) => {
                        let (_, g) = self.guards.remove(i);
                        g.unlock();
                    }
                    None => self.fail(
                        pos,
                        "spin_unlock of a lock this thread does not hold".to_string(),
                    ),
                }
                0
            }
            Func::SpinIsLocked => {
                let (_, lock) = self.lock_of(&c.args[0], pos);
                u64::from(lock.spin_is_locked(t))
            }
        }
    }
}

fn rmw_order(o: Order) -> RmwOrder {
    match o {
        Order::Relaxed => RmwOrder::Relaxed,
        Order::Acquire => RmwOrder::Acquire,
        Order::Release => RmwOrder::Release,
        Order::Full => RmwOrder::Full,
    }
}

fn expr_pos(e: &Expr) -> Pos {
    match e {
        Expr::Name(_, p) | Expr::Deref(_, p) | Expr::AddrOf(_, p) => *p,
        Expr::Call(c) => c.pos,
        Expr::Bin(_, a, _) | Expr::Un(_, a) | Expr::Cond(a, _, _) => expr_pos(a),
        Expr::Int(_) => Pos::default(),
    }
}
