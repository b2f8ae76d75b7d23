//! A trace step as data: which thread, in which context on which CPU, inside
//! which kernel function, did what. Nothing here is prose: the checker's
//! renderer (`src/render.rs`) turns steps into 80-column text, JSON or a
//! diagram, and the corpus fingerprint hashes their structure.
//!
//! Every type here is `Copy` and fixed-size, so recording a step during a
//! search allocates nothing. Names of variables, locks and caches are
//! interned once, when the object is created ([`intern`]).

use std::collections::HashSet;
use std::sync::Mutex;

/// An interned name: a variable (`files->fdt`, `fdtable#1.fd[0]`), a lock, a
/// cache, a thread.
pub type Name = &'static str;

/// Interns `s`: the same text always gives the same `&'static str`. Names
/// are few (one per modelled object field), so the table stays small.
pub fn intern(s: &str) -> Name {
    static TABLE: Mutex<Option<HashSet<Name>>> = Mutex::new(None);
    let mut table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    let table = table.get_or_insert_with(HashSet::new);
    if let Some(&name) = table.get(s) {
        return name;
    }
    let name: Name = Box::leak(s.to_owned().into_boxed_str());
    table.insert(name);
    name
}

/// Where a step ran: the kernel's notion of context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Context {
    /// Process context (a syscall on behalf of a task).
    Task,
    /// A hardware interrupt handler, run to completion on one CPU.
    Irq,
    /// A non-maskable interrupt: runs even where IRQs are disabled.
    Nmi,
    /// A background kernel actor (grace-period kthread, flush worker).
    Kthread,
}

impl Context {
    /// The kernel's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Context::Task => "task",
            Context::Irq => "irq",
            Context::Nmi => "nmi",
            Context::Kthread => "kthread",
        }
    }
}

/// How a value is shown to people. A renderer decides the words; the model
/// only says what kind of value a word holds.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Show {
    /// An unsigned number.
    Dec,
    /// A pair packed into one word, `{lo, hi}`, the low word `lo_bits` wide.
    Pair { lo_bits: u8 },
    /// A bitmap of `nbits` bits in words of `word_bits`: `1110 0000`.
    Bits { nbits: u8, word_bits: u8 },
    /// `true` / `false`.
    Bool,
    /// A model-specific form (a pointer named after its object, a packed
    /// lockref word); called only when a trace is rendered.
    With(fn(u64) -> String),
}

/// A value as recorded: the raw word and how to show it.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Val {
    pub raw: u64,
    pub show: Show,
}

impl Val {
    pub fn dec(raw: u64) -> Val {
        Val {
            raw,
            show: Show::Dec,
        }
    }

    pub fn with(raw: u64, show: Show) -> Val {
        Val { raw, show }
    }
}

/// Acquire and release operations on locks, sleeping or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockOp {
    SpinLock,
    SpinUnlock,
    /// spin_trylock found the lock held.
    SpinTrylockBusy,
    MutexLock,
    MutexUnlock,
    DownWrite,
    UpWrite,
}

impl LockOp {
    /// The kernel function.
    pub fn func(self) -> &'static str {
        match self {
            LockOp::SpinLock => "spin_lock",
            LockOp::SpinUnlock => "spin_unlock",
            LockOp::SpinTrylockBusy => "spin_trylock",
            LockOp::MutexLock => "mutex_lock",
            LockOp::MutexUnlock => "mutex_unlock",
            LockOp::DownWrite => "down_write",
            LockOp::UpWrite => "up_write",
        }
    }
}

/// Interrupts, preemption and migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuEvent {
    IrqEnter {
        cpu: u8,
    },
    IrqExit,
    NmiEnter {
        cpu: u8,
    },
    NmiExit,
    LocalIrqSave,
    LocalIrqRestore,
    /// The scheduler asks the next task passing a preemption point to move.
    MigrationRequest {
        cpu: u8,
    },
    /// The task was preempted and resumed on another CPU.
    Migrated {
        from: u8,
        to: u8,
    },
}

/// One part of a plain-memory update (data under a lock, written with
/// non-atomic stores).
#[derive(Clone, Copy, Debug, Hash)]
pub enum Part {
    /// `__set_bit`: `map[word] |= 1<<bit`.
    SetBit { map: Name, word: u8, bit: u8 },
    /// `__clear_bit`: `map[word] &= ~(1<<bit)`.
    ClearBit { map: Name, word: u8, bit: u8 },
    /// A field changes value.
    Store { var: Name, old: Val, new: Val },
    /// A field is (re)written as a whole, e.g. a copied bitmap.
    Assign { var: Name, val: Val },
}

/// Up to three parts of one update, applied together under one lock.
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct Parts([Option<Part>; 3]);

impl Parts {
    pub fn one(p: Part) -> Parts {
        Parts([Some(p), None, None])
    }

    /// Appends a part.
    ///
    /// # Panics
    /// When the update already has three parts: a model bug.
    pub fn and(mut self, p: Part) -> Parts {
        let free = self
            .0
            .iter_mut()
            .find(|s| s.is_none())
            .expect("an update records at most three parts");
        *free = Some(p);
        self
    }

    pub fn iter(&self) -> impl Iterator<Item = &Part> {
        self.0.iter().flatten()
    }
}

/// What fits no other kind: a short fixed text with up to three values,
/// each `{}` in `text` standing for the next one.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Note {
    pub text: &'static str,
    pub args: [Option<Val>; 3],
}

impl Note {
    pub fn new(text: &'static str, args: &[Val]) -> Note {
        assert!(args.len() <= 3, "a note carries at most three values");
        let mut a = [None; 3];
        for (slot, v) in a.iter_mut().zip(args) {
            *slot = Some(*v);
        }
        Note { text, args: a }
    }
}

/// The effect of one step on state.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Effect {
    /// A marked load: `how` is the kernel accessor (`READ_ONCE`,
    /// `smp_load_acquire`, `rcu_dereference`, `atomic_read`, …).
    Load {
        how: &'static str,
        var: Name,
        val: Val,
    },
    /// A store (marked, release or plain by the only writer).
    Store { var: Name, old: Val, new: Val },
    /// An atomic read-modify-write; `op` is the kernel function.
    Rmw {
        op: &'static str,
        var: Name,
        old: Val,
        new: Val,
    },
    /// A compare-and-exchange (single or double width): expected `old`,
    /// proposed `new`; on failure `seen` is what the word held.
    Cmpxchg {
        op: &'static str,
        var: Name,
        old: Val,
        new: Val,
        ok: bool,
        seen: Val,
    },
    /// A barrier (`smp_mb`, `smp_rmb`, …).
    Fence(&'static str),
    /// A lock operation on instance `lock` of lock class `class`.
    Lock { op: LockOp, class: Name, lock: Name },
    /// `spin_is_locked`: a look at a lock without taking it.
    LockTest { lock: Name, locked: bool },
    /// `rcu_read_lock` (true) or `rcu_read_unlock` (false).
    RcuRead { lock: bool },
    /// A grace period ended; `waited` is a bit mask of the threads (by trace
    /// column) whose read-side sections it waited for.
    GracePeriod { gp: u64, waited: u32 },
    /// `call_rcu` of `func(obj)` (or of an object's own callback).
    CallRcu {
        func: Option<&'static str>,
        obj: Val,
    },
    /// A slab allocation of object `obj` of `cache` (a recycled
    /// SLAB_TYPESAFE_BY_RCU object carries its new generation).
    Alloc {
        cache: Name,
        obj: u64,
        recycled_gen: Option<u32>,
    },
    /// A slab free.
    Free { cache: Name, obj: u64 },
    /// Interrupts, preemption, migration.
    Cpu(CpuEvent),
    /// Plain memory written under a lock; `scope` names whose copy it is
    /// (a fork child's table) when it is not the shared one.
    Update {
        scope: Option<&'static str>,
        parts: Parts,
    },
    /// A kernel function returns a value its caller acts on.
    Return(Val),
    /// Anything else.
    Note(Note),
}

/// One step of an execution.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Step {
    /// The thread (trace column, in spawn order).
    pub thread: u8,
    pub context: Context,
    /// The CPU, for models that place tasks on CPUs.
    pub cpu: Option<u8>,
    /// The innermost kernel function the step belongs to.
    pub func: &'static str,
    pub effect: Effect,
}
