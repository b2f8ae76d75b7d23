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

/// Acquire and release operations on locks, sleeping or not, each under
/// the name of the kernel function that does it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockOp {
    SpinLock,
    /// spin_lock_nested: a lock of a class the caller already holds one
    /// of, as lockdep subclass `subclass`.
    SpinLockNested {
        subclass: u8,
    },
    SpinLockIrqsave,
    /// spin_trylock that took the lock.
    SpinTrylock,
    SpinUnlock,
    SpinUnlockIrqrestore,
    /// spin_trylock found the lock held.
    SpinTrylockBusy,
    /// spin_lock found the lock held and spins (a lock whose spinning is
    /// modelled step by step: lockref's embedded lock).
    SpinLockBusy,
    MutexLock,
    MutexUnlock,
    DownWrite,
    UpWrite,
}

impl LockOp {
    /// The kernel function.
    pub fn func(self) -> &'static str {
        match self {
            LockOp::SpinLock | LockOp::SpinLockBusy => "spin_lock",
            LockOp::SpinLockNested { .. } => "spin_lock_nested",
            LockOp::SpinLockIrqsave => "spin_lock_irqsave",
            LockOp::SpinTrylock | LockOp::SpinTrylockBusy => "spin_trylock",
            LockOp::SpinUnlock => "spin_unlock",
            LockOp::SpinUnlockIrqrestore => "spin_unlock_irqrestore",
            LockOp::MutexLock => "mutex_lock",
            LockOp::MutexUnlock => "mutex_unlock",
            LockOp::DownWrite => "down_write",
            LockOp::UpWrite => "up_write",
        }
    }

    /// Whether the operation took the lock.
    pub fn acquires(self) -> bool {
        matches!(
            self,
            LockOp::SpinLock
                | LockOp::SpinLockNested { .. }
                | LockOp::SpinLockIrqsave
                | LockOp::SpinTrylock
                | LockOp::MutexLock
                | LockOp::DownWrite
        )
    }

    /// Whether the operation released the lock.
    pub fn releases(self) -> bool {
        matches!(
            self,
            LockOp::SpinUnlock
                | LockOp::SpinUnlockIrqrestore
                | LockOp::MutexUnlock
                | LockOp::UpWrite
        )
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
    /// A load: `how` is the kernel accessor (`READ_ONCE`,
    /// `smp_load_acquire`, `rcu_dereference`, `atomic_read`,
    /// `read_seqcount_begin`, …), empty for a plain read by the only writer
    /// (a lock holder reading what its lock protects).
    Load {
        how: &'static str,
        var: Name,
        val: Val,
    },
    /// A store: `how` is the kernel accessor (`WRITE_ONCE`,
    /// `smp_store_release`, `rcu_assign_pointer`, `atomic_set`,
    /// `write_seqcount_begin`, …), empty for a plain store by the only
    /// writer.
    Store {
        how: &'static str,
        var: Name,
        old: Val,
        new: Val,
    },
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
    /// A read-side section begins (`lock`) or ends; `func` is the kernel
    /// function (`rcu_read_lock`, `rcu_read_unlock_sched`, …).
    RcuRead { func: &'static str, lock: bool },
    /// A grace period ended, waited for by `func` (`synchronize_rcu`, or
    /// `rcu_gp_kthread` for the callbacks' grace period); `waited` is a bit
    /// mask of the threads (by trace column) whose read-side sections it
    /// waited for.
    GracePeriod {
        func: &'static str,
        gp: u64,
        waited: u32,
    },
    /// `call_rcu` of `func(obj)` (or of an object's own callback).
    CallRcu {
        func: Option<&'static str>,
        obj: Val,
    },
    /// An allocation of object `obj` of `cache` by the kernel allocator
    /// `func` (`kmem_cache_alloc`, `kmalloc`; a recycled
    /// SLAB_TYPESAFE_BY_RCU object carries its new generation).
    Alloc {
        func: &'static str,
        cache: Name,
        obj: u64,
        recycled_gen: Option<u32>,
    },
    /// A free by `func` (`kmem_cache_free`, `kfree`).
    Free {
        func: &'static str,
        cache: Name,
        obj: u64,
    },
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

impl Effect {
    /// Whether the effect writes `var` (a store, an RMW, a successful
    /// cmpxchg, or a part of a plain update).
    pub fn writes(&self, var: &str) -> bool {
        match *self {
            Effect::Store { var: v, .. } | Effect::Rmw { var: v, .. } => v == var,
            Effect::Cmpxchg { var: v, ok, .. } => ok && v == var,
            Effect::Update { parts, .. } => parts.iter().any(|p| match *p {
                Part::SetBit { map, .. } | Part::ClearBit { map, .. } => map == var,
                Part::Store { var: v, .. } | Part::Assign { var: v, .. } => v == var,
            }),
            _ => false,
        }
    }

    /// The old and new value of `var` when the effect changes it as a
    /// whole (a store, an RMW, a successful cmpxchg, a stored field).
    pub fn change_of(&self, var: &str) -> Option<(u64, u64)> {
        match *self {
            Effect::Store {
                var: v, old, new, ..
            }
            | Effect::Rmw {
                var: v, old, new, ..
            } if v == var => Some((old.raw, new.raw)),
            Effect::Cmpxchg {
                var: v,
                ok: true,
                old,
                new,
                ..
            } if v == var => Some((old.raw, new.raw)),
            Effect::Update { parts, .. } => parts.iter().find_map(|p| match *p {
                Part::Store { var: v, old, new } if v == var => Some((old.raw, new.raw)),
                _ => None,
            }),
            _ => None,
        }
    }
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
