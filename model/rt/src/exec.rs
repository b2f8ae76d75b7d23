//! The execution being explored, as models see it: spawning named threads,
//! recording steps, tracepoints and costs, registering invariants, raising
//! violations.
//!
//! All of this is ghost state kept in std types, invisible to the engines: it
//! adds no scheduling point and no happens-before edge. loom and shuttle run
//! every model thread as a coroutine on the driver's OS thread, so the order
//! steps are pushed in is the explored interleaving. Under the std backend
//! steps of real threads are serialised by [`atomic_section`].
//!
//! During a search nothing here allocates per step: a step is a fixed-size
//! [`Step`] pushed into a buffer that lives as long as the search, and the
//! invariants read the model's ghost state by reference. The engine side of
//! the same state (starting executions, materialising a trace) is
//! [`crate::driver`], which models never use.
//!
//! Since this module lives in its own crate (model/rt), what the kernel
//! primitives of the model crate record through it (steps, costs, lock
//! edges, the RCU-sched words) is `pub`; what only the driver and the
//! recording of variant sites use stays private to this crate.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::sync::{self, Backend};
use crate::trace::{intern, Name, Step};

/// Per-operation cost counters: the quantities the patches make claims about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Counter {
    /// Exclusive (spin) lock acquisitions.
    LockAcquire,
    /// Steps executed while holding a spinlock (critical-section length).
    LockHeldSteps,
    /// Sleeping lock acquisitions (mutex, rwsem).
    SleepingLock,
    /// Atomic read-modify-writes (single width), cmpxchg included.
    AtomicRmw,
    /// Double-width cmpxchg (cmpxchg16b class).
    CmpxchgDouble,
    /// Bitmap words read by searches and tests.
    BitmapWordsRead,
    /// local_irq_save/restore (or disable/enable) trips.
    IrqToggle,
    /// Full memory barriers (smp_mb and fully ordered RMWs).
    FullBarrier,
    /// Successful lazy-to-legit transitions of a path walk.
    Legitimize,
    /// Stores to shared memory: plain and atomic stores, RMWs, successful
    /// cmpxchgs, updates of ghost-visible fields.
    Stores,
    /// Distinct words the operation wrote in the execution (each a cache
    /// line it dirtied, at word granularity).
    DirtiedWords,
    /// RCU read-side critical sections entered.
    RcuSections,
}

impl Counter {
    pub const ALL: [Counter; 12] = [
        Counter::LockAcquire,
        Counter::LockHeldSteps,
        Counter::SleepingLock,
        Counter::AtomicRmw,
        Counter::CmpxchgDouble,
        Counter::BitmapWordsRead,
        Counter::IrqToggle,
        Counter::FullBarrier,
        Counter::Legitimize,
        Counter::Stores,
        Counter::DirtiedWords,
        Counter::RcuSections,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Counter::LockAcquire => "locks",
            Counter::LockHeldSteps => "held_steps",
            Counter::SleepingLock => "sleeping_locks",
            Counter::AtomicRmw => "atomic_rmw",
            Counter::CmpxchgDouble => "cmpxchg_double",
            Counter::BitmapWordsRead => "bitmap_words",
            Counter::IrqToggle => "irq_toggles",
            Counter::FullBarrier => "full_barriers",
            Counter::Legitimize => "legitimize",
            Counter::Stores => "stores",
            Counter::DirtiedWords => "dirtied_words",
            Counter::RcuSections => "rcu_sections",
        }
    }
}

/// Lock classes one operation's acquisitions are counted by, at most.
const CLASSES: usize = 8;

/// Counters summed over every call of one operation in one execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCost {
    pub calls: u64,
    counters: [u64; Counter::ALL.len()],
    /// Lock acquisitions by lock class, first taken first.
    classes: [Option<(Name, u64)>; CLASSES],
}

impl OpCost {
    pub fn get(&self, c: Counter) -> u64 {
        self.counters[c as usize]
    }

    /// Acquisitions of each lock class the operation took.
    pub fn lock_classes(&self) -> impl Iterator<Item = (Name, u64)> + '_ {
        self.classes.iter().flatten().copied()
    }

    /// Counts one acquisition of a lock of `class` (an operation taking
    /// more classes than [`CLASSES`] counts the rest in the last one's
    /// total of [`Counter::LockAcquire`] only).
    fn took(&mut self, class: Name) {
        for slot in &mut self.classes {
            match slot {
                Some((c, n)) if *c == class => {
                    *n += 1;
                    return;
                }
                None => {
                    *slot = Some((class, 1));
                    return;
                }
                Some(_) => {}
            }
        }
    }
}

/// The first broken invariant of an execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
    pub thread: String,
    /// Index of the step after which it was detected.
    pub step: usize,
    /// The step (1-based, as traces number them) that caused it, where the
    /// check knows it and it is not the step it was detected after: the
    /// put that underflowed a count an end-of-execution check compares.
    pub cause: Option<usize>,
    /// The observed state that breaks it, rendered by the scenario.
    pub state: String,
}

/// An end-of-execution check's failure: what is wrong, and the step that
/// made it so where the check can tell (see [`last_write`],
/// [`last_step_of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub message: String,
    pub cause: Option<usize>,
}

impl Broken {
    /// `message`, caused by step `cause` (1-based) if known.
    pub fn at(message: String, cause: Option<usize>) -> Broken {
        Broken { message, cause }
    }
}

impl From<String> for Broken {
    fn from(message: String) -> Broken {
        Broken {
            message,
            cause: None,
        }
    }
}

/// An invariant checked after every step: `Err` carries the message.
type StepCheck = Box<dyn Fn() -> Result<(), String> + Send + Sync>;
type Observe = Box<dyn Fn() -> String + Send + Sync>;

/// One edge of the lock-order graph: `from` was held when `to` was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockEdge {
    pub from: (Name, u8),
    pub to: (Name, u8),
    pub thread: Name,
    /// The step (1-based, as traces number them) that took `to`.
    pub step: usize,
}

/// What one execution leaves behind, kept for the length of a search and
/// reset (capacity kept) at the start of each execution.
pub struct State {
    pub threads: Vec<Name>,
    pub steps: Vec<Step>,
    pub violation: Option<Violation>,
    pub reached: Vec<&'static str>,
    /// Variant sites and exits that ran ([`crate::patch`]).
    pub hits: Vec<crate::patch::Hit>,
    pub costs: Vec<(&'static str, OpCost)>,
    /// The words each operation wrote (for [`Counter::DirtiedWords`]).
    pub dirtied: Vec<(&'static str, Name)>,
    pub lock_edges: Vec<LockEdge>,
    /// The RCU-sched words (`kernel::task`) of this execution, created when
    /// it starts, before any thread: every thread's later accesses happen
    /// after their creation.
    /// Word `i` belongs to the task in trace column `i`.
    pub sched_rcu: Vec<Arc<sync::AtomicU64>>,
    /// Claims of RCU-sched words, one bit per trace column, ordered against
    /// grace periods (see [`sched_rcu_claimed`]); created with the words.
    pub sched_rcu_claims: Option<Arc<sync::AtomicU64>>,
    /// Where grace periods sleep until a task leaves its RCU-sched region;
    /// created with the words.
    pub sched_rcu_wake: Option<Arc<(sync::Mutex, sync::Condvar)>>,
    pub frozen: bool,
}

/// Tasks one execution may create: more than any scenario has.
const MAX_TASKS: usize = 12;

impl State {
    fn reset(&mut self) {
        self.sched_rcu.clear();
        self.sched_rcu
            .extend((0..MAX_TASKS).map(|_| Arc::new(sync::AtomicU64::new(0))));
        self.sched_rcu_claims = Some(Arc::new(sync::AtomicU64::new(0)));
        self.sched_rcu_wake = Some(Arc::new((sync::Mutex::new(), sync::Condvar::new())));
        self.threads.clear();
        self.steps.clear();
        self.violation = None;
        self.reached.clear();
        self.hits.clear();
        self.costs.clear();
        self.dirtied.clear();
        self.lock_edges.clear();
        self.frozen = false;
    }

    fn cost_of(&mut self, op: &'static str) -> &mut OpCost {
        let i = match self.costs.iter().position(|(o, _)| *o == op) {
            Some(i) => i,
            None => {
                self.costs.push((op, OpCost::default()));
                self.costs.len() - 1
            }
        };
        &mut self.costs[i].1
    }
}

pub(crate) struct Inner {
    pub state: Mutex<State>,
    checks: Mutex<Vec<(&'static str, StepCheck)>>,
    observer: Mutex<Option<Observe>>,
    /// Whether steps are recorded and invariants checked (the overhead
    /// benchmark turns both off; everything else keeps them on).
    pub recording: AtomicBool,
    /// Serialises steps of real threads under the std backend.
    serial: AtomicBool,
}

/// Handle to the execution being explored on this OS thread.
#[derive(Clone)]
pub struct Exec(pub(crate) Arc<Inner>);

thread_local! {
    static CURRENT: RefCell<Option<Exec>> = const { RefCell::new(None) };
}

/// The panic payload of a violation: the violation itself is in the record.
#[derive(Debug)]
pub struct ViolationRaised;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Steps one execution may record before its buffer grows (and allocates):
/// far more than any scenario takes.
const STEP_CAPACITY: usize = 4096;

impl Exec {
    pub(crate) fn new(recording: bool) -> Exec {
        // Every buffer is sized once, for the whole search, so recording a
        // step or checking an invariant never allocates.
        let state = State {
            threads: Vec::with_capacity(16),
            steps: Vec::with_capacity(STEP_CAPACITY),
            violation: None,
            reached: Vec::with_capacity(16),
            hits: Vec::with_capacity(16),
            costs: Vec::with_capacity(16),
            dirtied: Vec::with_capacity(64),
            lock_edges: Vec::with_capacity(32),
            sched_rcu: Vec::with_capacity(MAX_TASKS),
            sched_rcu_claims: None,
            sched_rcu_wake: None,
            frozen: false,
        };
        Exec(Arc::new(Inner {
            state: Mutex::new(state),
            checks: Mutex::new(Vec::with_capacity(16)),
            observer: Mutex::new(None),
            recording: AtomicBool::new(recording),
            serial: AtomicBool::new(false),
        }))
    }

    /// Starts the next execution: forgets the last one's steps, checks and
    /// observer, keeping the buffers.
    pub(crate) fn reset(&self) {
        lock(&self.0.state).reset();
        lock(&self.0.checks).clear();
        *lock(&self.0.observer) = None;
    }

    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut lock(&self.0.state))
    }

    fn recording(&self) -> bool {
        self.0.recording.load(Ordering::Relaxed)
    }

    /// Makes this execution current on this OS thread until the guard drops.
    pub(crate) fn enter(&self) -> CurrentGuard {
        CurrentGuard(CURRENT.with(|c| c.replace(Some(self.clone()))))
    }

    /// Runs every per-step invariant; the first that breaks, with its
    /// message.
    fn check(&self) -> Option<(&'static str, String)> {
        let checks = lock(&self.0.checks);
        checks
            .iter()
            .find_map(|(name, check)| check().err().map(|msg| (*name, msg)))
    }
}

/// Restores the previous current execution on drop.
pub(crate) struct CurrentGuard(Option<Exec>);

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Whether an execution is being explored on this OS thread.
pub(crate) fn active() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

pub fn with_current<R>(f: impl FnOnce(&Exec) -> R) -> R {
    CURRENT.with(|c| {
        f(c.borrow()
            .as_ref()
            .expect("vfsmc-model: a step was recorded outside an execution"))
    })
}

thread_local! {
    /// Sections this OS thread holds (they nest: a primitive's section
    /// contains the step it records, which takes one too).
    static SECTION_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Guard of [`atomic_section`]; releases the section on drop.
pub struct Section(Option<Exec>);

impl Drop for Section {
    fn drop(&mut self) {
        if let Some(exec) = &self.0 {
            SECTION_DEPTH.with(|d| d.set(d.get() - 1));
            if SECTION_DEPTH.with(Cell::get) == 0 {
                exec.0.serial.store(false, Ordering::Release);
            }
        }
    }
}

/// Makes an engine operation, its ghost update, its trace step and the
/// invariant checks that follow one indivisible step for the observers.
/// Under loom and shuttle this is free: coroutines only switch at engine
/// operations. Under std (real threads) it is a per-execution lock, reentrant
/// on one thread; never block inside a section.
pub fn atomic_section() -> Section {
    if sync::backend() != Backend::Std {
        return Section(None);
    }
    let exec = with_current(Exec::clone);
    if SECTION_DEPTH.with(Cell::get) == 0 {
        while exec
            .0
            .serial
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
    }
    SECTION_DEPTH.with(|d| d.set(d.get() + 1));
    Section(Some(exec))
}

/// The RCU-sched word (`kernel::task`) of the task in trace column
/// `column`: the word is the column's, so which word a task uses never
/// depends on the order tasks were created in.
///
/// # Panics
/// When an execution creates more tasks than [`MAX_TASKS`].
pub fn claim_sched_rcu(column: u8) -> Arc<sync::AtomicU64> {
    let i = usize::from(column);
    assert!(
        i < MAX_TASKS,
        "more than {MAX_TASKS} tasks in one execution"
    );
    with_current(|e| e.with_state(|s| s.sched_rcu[i].clone()))
}

/// Claims the word of the task in trace column `column` for grace periods:
/// sets its bit in the claims word with a read-modify-write, ordered after
/// every grace period whose RMW of the claims word came first (see
/// [`sched_rcu_claimed`]). Done at the task's first region, not when it is
/// created: an RMW of one shared word by every new task would make loom
/// order all task starts against each other.
pub fn sync_sched_rcu_claim(column: u8) {
    let claims = with_current(|e| e.with_state(claims_word));
    claims.fetch_or(1 << column, sync::Ordering::AcqRel);
}

fn claims_word(s: &mut State) -> Arc<sync::AtomicU64> {
    s.sched_rcu_claims
        .clone()
        .expect("an execution creates its claims word when it starts")
}

/// Where grace periods wait for RCU-sched regions to end (see
/// `kernel::rcu`'s sleeping grace period).
pub fn sched_rcu_wake() -> Arc<(sync::Mutex, sync::Condvar)> {
    with_current(|e| {
        e.with_state(|s| {
            s.sched_rcu_wake
                .clone()
                .expect("an execution creates its sched wait queue when it starts")
        })
    })
}

/// The RCU-sched words claimed so far, with their owners' trace columns:
/// the bits a read-modify-write of the claims word reads. A task that
/// claims one later reads this grace period's RMW there and sees
/// everything before it (the scheme of `kernel::rcu`'s reader slots). The
/// words follow from the value read, never from ghost state, so an engine
/// that replays an execution graph sees the same accesses.
pub fn sched_rcu_claimed() -> Vec<(u8, Arc<sync::AtomicU64>)> {
    let (claims, words) = with_current(|e| e.with_state(|s| (claims_word(s), s.sched_rcu.clone())));
    let mask = claims.fetch_or(0, sync::Ordering::AcqRel);
    (0..MAX_TASKS)
        .filter(|&i| mask & (1 << i) != 0)
        .map(|i| {
            (
                u8::try_from(i).expect("MAX_TASKS fits a column"),
                words[i].clone(),
            )
        })
        .collect()
}

/// Registers an invariant checked after every step of this execution. It must
/// only read ghost state (`peek`), never perform engine operations.
pub fn invariant(
    name: &'static str,
    check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
) {
    with_current(|e| lock(&e.0.checks).push((name, Box::new(check))));
}

/// Steps recorded so far in this execution: invariants that derive one view
/// of the state for several checks compute it once per step with it.
pub fn steps_recorded() -> usize {
    with_current(|e| e.with_state(|s| s.steps.len()))
}

/// Registers how to render the observed state when an invariant breaks.
pub fn observe(render: impl Fn() -> String + Send + Sync + 'static) {
    with_current(|e| *lock(&e.0.observer) = Some(Box::new(render)));
}

/// Registers a trace column for a logical thread (call in spawn order) and
/// returns its number.
pub fn column(name: Name) -> u8 {
    with_current(|e| {
        e.with_state(|s| {
            let i = match s.threads.iter().position(|c| *c == name) {
                Some(i) => i,
                None => {
                    s.threads.push(name);
                    s.threads.len() - 1
                }
            };
            u8::try_from(i).expect("fewer than 256 threads per execution")
        })
    })
}

/// Spawns a model thread named `name` (its trace column) under the bound
/// backend.
pub fn spawn<T, F>(name: &str, f: F) -> sync::JoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    column(intern(name));
    if sync::backend() != Backend::Std {
        return sync::spawn(f);
    }
    // A real thread: give it this execution.
    let exec = with_current(Exec::clone);
    sync::spawn(move || {
        let _current = exec.enter();
        f()
    })
}

/// What became of a step handed to [`record`].
pub enum Recorded {
    /// Not recorded: the trace is frozen or the search does not record.
    Skipped,
    /// Recorded; every invariant holds.
    Held,
    /// Recorded; this invariant broke, with this message.
    Broke(&'static str, String),
}

/// Records `step` and checks the invariants.
pub fn record(step: Step) -> Recorded {
    with_current(|e| {
        if !e.recording() {
            return Recorded::Skipped;
        }
        let recorded = e.with_state(|s| {
            if s.frozen {
                return false;
            }
            s.steps.push(step);
            true
        });
        if !recorded {
            return Recorded::Skipped;
        }
        // Real threads (the stress engine) update ghost state and run engine
        // operations in separate instructions, so another thread can observe
        // a half-made step: step invariants are judged under loom and
        // shuttle only; stress judges the end-of-execution checks and the
        // primitives' own.
        if sync::backend() == Backend::Std {
            return Recorded::Held;
        }
        match e.check() {
            None => Recorded::Held,
            Some((name, msg)) => Recorded::Broke(name, msg),
        }
    })
}

/// Marks a reachability tracepoint as hit in this execution.
pub fn tracepoint(name: &'static str) {
    with_current(|e| {
        e.with_state(|s| {
            if !s.frozen && !s.reached.contains(&name) {
                s.reached.push(name);
            }
        })
    });
}

/// Records that a variant site or exit ran ([`crate::patch`]).
pub(crate) fn hit(h: crate::patch::Hit) {
    with_current(|e| {
        e.with_state(|s| {
            if !s.frozen && !s.hits.contains(&h) {
                s.hits.push(h);
            }
        })
    });
}

/// Adds `n` to `counter` of operation `op`.
pub fn cost(op: &'static str, counter: Counter, n: u64) {
    with_current(|e| {
        e.with_state(|s| {
            if !s.frozen {
                s.cost_of(op).counters[counter as usize] += n;
            }
        })
    });
}

/// Counts a write of `word` by operation `op`: a store, and a dirtied word
/// the first time `op` writes it in this execution.
pub fn wrote(op: &'static str, word: Name) {
    with_current(|e| {
        e.with_state(|s| {
            if s.frozen {
                return;
            }
            s.cost_of(op).counters[Counter::Stores as usize] += 1;
            if !s.dirtied.contains(&(op, word)) {
                s.dirtied.push((op, word));
                s.cost_of(op).counters[Counter::DirtiedWords as usize] += 1;
            }
        })
    });
}

/// Counts an acquisition of a lock of `class` by operation `op`.
pub fn took_lock(op: &'static str, class: Name) {
    with_current(|e| {
        e.with_state(|s| {
            if !s.frozen {
                s.cost_of(op).took(class);
            }
        })
    });
}

/// Counts one call of operation `op`.
pub fn call(op: &'static str) {
    with_current(|e| {
        e.with_state(|s| {
            if !s.frozen {
                s.cost_of(op).calls += 1;
            }
        })
    });
}

/// Records a violation for `thread` and unwinds. Exposed for actors that have
/// no task (final checks in the driver's thread).
pub fn raise(thread: &str, invariant: &str, message: String) -> ! {
    raise_at(thread, invariant, Broken::from(message))
}

/// [`raise`] with the step that caused the violation, where known.
pub fn raise_at(thread: &str, invariant: &str, broken: Broken) -> ! {
    with_current(|e| {
        let state = lock(&e.0.observer)
            .as_ref()
            .map(|o| o())
            .unwrap_or_default();
        e.with_state(|s| {
            if s.frozen {
                return;
            }
            let step = s.steps.len();
            s.violation = Some(Violation {
                invariant: invariant.to_string(),
                message: broken.message,
                thread: thread.to_string(),
                step,
                cause: broken.cause.filter(|&c| c != step),
                state,
            });
            s.frozen = true;
        });
    });
    std::panic::panic_any(ViolationRaised)
}

/// Checks an end-of-execution property (results, balance at quiescence);
/// skipped when the search does not record.
pub fn check_final<E: Into<Broken>>(
    thread: &str,
    invariant: &str,
    result: impl FnOnce() -> Result<(), E>,
) {
    if !with_current(Exec::recording) {
        return;
    }
    if let Err(e) = result() {
        raise_at(thread, invariant, e.into());
    }
}

/// Checks the step invariants once more when the execution ends: ghost
/// state a thread updates after its last step (a fork child's table, pushed
/// when dup_fd returns) is otherwise judged only if another thread's step
/// follows, which depends on the order the engine replays the threads in.
/// Skipped when the search does not record.
pub fn check_steps_at_end(thread: &str) {
    if !with_current(Exec::recording) {
        return;
    }
    if let Some((name, msg)) = with_current(Exec::check) {
        raise_at(thread, name, msg.into());
    }
}

/// The last step (1-based) so far that wrote `var`: where a count an end
/// check finds wrong was last changed.
pub fn last_write(var: &str) -> Option<usize> {
    last_step(|s| s.effect.writes(var))
}

/// The last step (1-based) so far in which the thread named `thread` wrote
/// `var`: the get of a reference it never put back.
pub fn last_write_by(thread: &str, var: &str) -> Option<usize> {
    let col = column_of(thread)?;
    last_step(|s| s.thread == col && s.effect.writes(var))
}

/// The step (1-based) that left the count in `var` wrong, reading each
/// write's change of the count `decode` makes of the word. Per thread, a
/// decrease undoes that thread's latest increase not yet undone (a get and
/// its put); what stays unmatched is a get never put or a put of a
/// reference never got. `excess`: the count ended too high, so the cause is
/// the last unmatched increase (of `thread` only, if given); else the last
/// unmatched decrease: the put that underflowed.
pub fn unmatched_change(
    var: &str,
    thread: Option<&str>,
    excess: bool,
    decode: impl Fn(u64) -> i64,
) -> Option<usize> {
    let only = match thread {
        Some(name) => Some(column_of(name)?),
        None => None,
    };
    with_current(|e| {
        e.with_state(|s| {
            let mut open: Vec<(u8, usize, i64)> = Vec::new();
            let mut cause = None;
            for (i, st) in s.steps.iter().enumerate() {
                let Some((old, new)) = st.effect.change_of(var) else {
                    continue;
                };
                let mut delta = decode(new) - decode(old);
                while delta < 0 {
                    let Some(k) = open.iter().rposition(|o| o.0 == st.thread) else {
                        break;
                    };
                    let undone = delta.abs().min(open[k].2);
                    open[k].2 -= undone;
                    delta += undone;
                    if open[k].2 == 0 {
                        open.remove(k);
                    }
                }
                if delta > 0 {
                    open.push((st.thread, i + 1, delta));
                } else if delta < 0 && !excess && only.is_none_or(|c| c == st.thread) {
                    cause = Some(i + 1);
                }
            }
            if excess {
                cause = open
                    .iter()
                    .filter(|o| only.is_none_or(|c| c == o.0))
                    .map(|o| o.1)
                    .max();
            }
            cause
        })
    })
}

/// The trace column of the thread named `thread`, if it has one.
fn column_of(thread: &str) -> Option<u8> {
    with_current(|e| {
        e.with_state(|s| {
            let col = s.threads.iter().position(|t| *t == thread)?;
            u8::try_from(col).ok()
        })
    })
}

/// The last step (1-based) so far of the thread named `thread`: where its
/// operation returned the result an end check rejects.
pub fn last_step_of(thread: &str) -> Option<usize> {
    let col = column_of(thread)?;
    last_step(|s| s.thread == col)
}

/// The last step (1-based) so far for which `pred` holds.
fn last_step(pred: impl Fn(&Step) -> bool) -> Option<usize> {
    with_current(|e| e.with_state(|s| s.steps.iter().rposition(pred).map(|i| i + 1)))
}
