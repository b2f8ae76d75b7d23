//! A litmus test in herd7's C dialect, as [`super::parse`] reads it: the
//! name, the `Result:` word of the leading comment, the initial state, one
//! program per thread, and the final clause. Nothing here runs a test
//! ([`super::interp`] does) or knows an engine.

use std::fmt;

/// A place in a file: 1-based line and column (columns count characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Why a file was not read: malformed text (exit 2), or a construct the
/// reader knows it does not support (an `unsupported` verdict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub pos: Pos,
    pub kind: ErrorKind,
    /// What was expected or which construct, in a few words.
    pub what: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not a litmus test: a deleted brace, a bad register, a
    /// truncated clause.
    Malformed,
    /// Well-formed as far as the reader can tell, but a construct it does
    /// not run (a loop, an array, another dialect).
    Unsupported,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Malformed => write!(f, "{}: {}", self.pos, self.what),
            ErrorKind::Unsupported => write!(f, "{}: unsupported: {}", self.pos, self.what),
        }
    }
}

/// The word after `Result:` in the leading comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Never,
    Sometimes,
    Always,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Never => "Never",
            Outcome::Sometimes => "Sometimes",
            Outcome::Always => "Always",
        }
    }

    pub fn from_word(w: &str) -> Option<Outcome> {
        match w {
            "Never" => Some(Outcome::Never),
            "Sometimes" => Some(Outcome::Sometimes),
            "Always" => Some(Outcome::Always),
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// An initial value: a number or the address of a location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Addr(String),
}

/// What a location is, as the parameter lists and the init block declare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocKind {
    /// A memory word (int, intptr_t, atomic_t, a pointer).
    Word,
    /// A `spinlock_t`.
    SpinLock,
    /// A `struct srcu_struct`.
    Srcu,
}

/// A shared location, in first-mention order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub name: String,
    pub kind: LocKind,
    pub init: Value,
    /// Declared as a pointer to a pointer (`int **p`), or initialised with
    /// an address: its values show as `&name`.
    pub pointer: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogAnd,
    LogOr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    BitNot,
    Neg,
}

/// An expression of a thread's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Int(i64),
    /// A register, or a parameter (whose value is a location's address).
    Name(String, Pos),
    /// `*e`: the location `e` points to (as a value: a plain load).
    Deref(Box<Expr>, Pos),
    /// `&e` of a location expression.
    AddrOf(Box<Expr>, Pos),
    /// A kernel API call.
    Call(Call),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Un(UnOp, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A call of the kernel API: the primitive it maps to and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub func: Func,
    /// The name as written (`atomic_fetch_add_release`).
    pub name: &'static str,
    pub args: Vec<Expr>,
    pub pos: Pos,
}

impl Call {
    /// The argument naming the location: the second for the kernel's
    /// `atomic_add(i, v)` family (operand first), else the first.
    pub fn loc_arg(&self) -> Option<&Expr> {
        match self.func {
            Func::Rmw {
                op, implicit: None, ..
            } if op != RmwOp::Set => self.args.get(1),
            _ => self.args.first(),
        }
    }

    /// The operand of an RMW with one (`atomic_add(i, v)`, `xchg(p, v)`).
    pub fn operand(&self) -> Option<&Expr> {
        match self.func {
            Func::Rmw {
                op, implicit: None, ..
            } if op != RmwOp::Set => self.args.first(),
            Func::Rmw { implicit: None, .. } => self.args.get(1),
            _ => None,
        }
    }
}

/// How an RMW or a marked access is ordered (the `_relaxed`, `_acquire`,
/// `_release` suffixes; no suffix on a value-returning RMW is full).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Relaxed,
    Acquire,
    Release,
    Full,
}

/// The arithmetic of an RMW.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    Add,
    Sub,
    And,
    Or,
    AndNot,
    /// `xchg`: the new value replaces the old.
    Set,
}

/// What an RMW returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    /// `atomic_inc`: nothing.
    Void,
    /// `atomic_fetch_add`, `xchg`: the old value.
    Old,
    /// `atomic_add_return`: the new value.
    New,
    /// `atomic_dec_and_test`: whether the new value is zero.
    IsZero,
    /// `atomic_add_negative`: whether the new value is negative.
    IsNeg,
}

/// The kernel API the reader knows (linux-kernel.def), by what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    /// READ_ONCE, smp_load_acquire, atomic_read(_acquire), rcu_dereference.
    Load(Order),
    /// WRITE_ONCE, smp_store_release, atomic_set(_release),
    /// rcu_assign_pointer.
    Store(Order),
    /// `(loc, operand)` or, with `implicit`, `(loc)` and that operand
    /// (`atomic_inc` adds 1).
    Rmw {
        op: RmwOp,
        ret: Ret,
        order: Order,
        implicit: Option<i64>,
    },
    /// cmpxchg(loc, old, new): returns the value seen.
    Cmpxchg(Order),
    /// atomic_add_unless(loc, a, u): adds unless the value is u; whether it
    /// added. atomic_inc_not_zero(loc) is (loc, 1, 0).
    AddUnless {
        inc_not_zero: bool,
    },
    SmpMb,
    SmpRmb,
    SmpWmb,
    /// smp_mb__before_atomic, smp_mb__after_atomic, smp_mb__after_spinlock,
    /// smp_mb__after_unlock_lock, smp_mb__after_srcu_read_unlock: full
    /// barriers where they are allowed.
    MbAfter,
    /// barrier(): compiler only.
    Barrier,
    RcuReadLock,
    RcuReadUnlock,
    SynchronizeRcu,
    SrcuReadLock,
    SrcuReadUnlock,
    SynchronizeSrcu,
    SpinLock,
    SpinUnlock,
    SpinTrylock,
    SpinIsLocked,
}

/// A location expression or a register as the target of `=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Reg(String, Pos),
    /// `*e = v`: a plain store.
    Mem(Expr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// `int r0;` or `int r0 = e;`.
    Decl {
        name: String,
        init: Option<Expr>,
        pos: Pos,
    },
    Assign {
        target: Target,
        value: Expr,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
}

/// One `P<n>(…) { … }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thread {
    pub index: usize,
    pub params: Vec<String>,
    pub body: Vec<Stmt>,
    pub pos: Pos,
}

/// A term of the final clause: `n:r`, a location's final value, a number,
/// or a location's address (`1:r0=x` with `x` a pointer target).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    Reg(usize, String, Pos),
    Loc(String, Pos),
    /// A location's address (`1:r0=x`: the right side names a location).
    Addr(String, Pos),
    Int(i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    True,
    False,
    /// `a=b` (or `a!=b` with `eq` false).
    Eq {
        lhs: Term,
        rhs: Term,
        eq: bool,
    },
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

/// A term as herd7 writes it: `1:r0`, `x`, `&x` is written `x` on the
/// right of `=` (as the clause has it), a number.
impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Reg(n, r, _) => write!(f, "{n}:{r}"),
            Term::Loc(l, _) | Term::Addr(l, _) => f.write_str(l),
            Term::Int(n) => write!(f, "{n}"),
        }
    }
}

/// A condition as herd7 writes it, without spaces around `=`:
/// `1:r0=1 /\ 1:r1=0`; an `\/` inside an `/\` and any negated compound
/// are parenthesised.
impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn atom(c: &Cond) -> bool {
            matches!(c, Cond::True | Cond::False | Cond::Eq { .. } | Cond::Not(_))
        }
        match self {
            Cond::True => f.write_str("true"),
            Cond::False => f.write_str("false"),
            Cond::Eq { lhs, rhs, eq } => write!(f, "{lhs}{}{rhs}", if *eq { "=" } else { "!=" }),
            Cond::Not(c) if atom(c) => write!(f, "~{c}"),
            Cond::Not(c) => write!(f, "~({c})"),
            Cond::And(a, b) => {
                for (i, c) in [a, b].into_iter().enumerate() {
                    if i > 0 {
                        f.write_str(" /\\ ")?;
                    }
                    if matches!(**c, Cond::Or(..)) {
                        write!(f, "({c})")?;
                    } else {
                        write!(f, "{c}")?;
                    }
                }
                Ok(())
            }
            Cond::Or(a, b) => write!(f, "{a} \\/ {b}"),
        }
    }
}

/// The quantifier of the final clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Exists,
    NotExists,
    Forall,
}

/// A litmus test, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    pub name: String,
    /// The word after `Result:`, as written (`Never`, `Sometimes`,
    /// `Always`, `DEADLOCK`, `Maybe`…), and where.
    pub result: Option<(String, Pos)>,
    pub locations: Vec<Location>,
    /// Registers given an initial value in the init block (`0:r1=2`).
    pub reg_init: Vec<(usize, String, Value)>,
    pub threads: Vec<Thread>,
    pub filter: Option<Cond>,
    pub quantifier: Quantifier,
    pub cond: Cond,
    /// The clause as written, for messages.
    pub clause: String,
}

impl Test {
    pub fn location(&self, name: &str) -> Option<usize> {
        self.locations.iter().position(|l| l.name == name)
    }
}
