//! One execution as the checker sees it: the trace of labelled steps, the
//! invariants checked after every step, the reachability tracepoints hit, the
//! cost counters, and the first violation.
//!
//! All of this is ghost state kept in std types, invisible to the engines: it
//! adds no scheduling point and no happens-before edge. loom and shuttle run
//! every model thread as a coroutine on the driver's OS thread, so the push
//! order of steps is the explored interleaving. Under the std backend steps of
//! real threads are serialised by [`atomic_section`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::sync::{self, Backend};

/// Where a step ran: the kernel's notion of context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Context::Task => "task",
            Context::Irq => "irq",
            Context::Nmi => "nmi",
            Context::Kthread => "kthread",
        })
    }
}

/// One labelled step of an execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Logical thread name, the trace column ("T0", "irq0", "main").
    pub thread: String,
    /// Context and CPU, e.g. "task cpu0"; empty when the model has no CPUs.
    pub context: String,
    /// Innermost kernel function the step belongs to.
    pub func: String,
    /// The effect on state, e.g. `open_fds[0] |= 1<<3` or `d_seq 4→5`.
    pub effect: String,
}

/// The first broken invariant of an execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
    pub thread: String,
    /// Index of the step after which it was detected.
    pub step: usize,
    /// The observed state that breaks it, rendered by the scenario.
    pub state: String,
}

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
}

impl Counter {
    pub const ALL: [Counter; 8] = [
        Counter::LockAcquire,
        Counter::LockHeldSteps,
        Counter::SleepingLock,
        Counter::AtomicRmw,
        Counter::CmpxchgDouble,
        Counter::BitmapWordsRead,
        Counter::IrqToggle,
        Counter::FullBarrier,
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
        }
    }
}

/// Counters summed over every call of one operation in one execution.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpCost {
    pub calls: u64,
    pub counters: BTreeMap<Counter, u64>,
}

/// Everything one execution left behind.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Trace columns, in spawn order.
    pub columns: Vec<String>,
    pub events: Vec<Event>,
    pub violation: Option<Violation>,
    /// Tracepoints hit (reachability goals are judged against these).
    pub reached: BTreeSet<String>,
    /// Cost per operation (outermost kernel function of a thread).
    pub costs: BTreeMap<String, OpCost>,
}

type Check = Box<dyn Fn() -> Result<(), String> + Send + Sync>;
type Observe = Box<dyn Fn() -> String + Send + Sync>;

#[derive(Default)]
struct State {
    record: Record,
    frozen: bool,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    invariants: Mutex<Vec<(String, Arc<Check>)>>,
    observer: Mutex<Option<Arc<Observe>>>,
    /// Serialises steps of real threads under the std backend.
    serial: std::sync::atomic::AtomicBool,
}

/// Handle to the execution being explored on this OS thread.
#[derive(Clone, Default)]
pub struct Exec(Arc<Inner>);

thread_local! {
    static CURRENT: RefCell<Option<Exec>> = const { RefCell::new(None) };
}

/// The panic payload of a violation: the violation itself is in the record.
#[derive(Debug)]
pub struct ViolationRaised;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Exec {
    /// Starts a fresh execution and makes it current on this OS thread until
    /// the returned guard is dropped.
    pub fn begin() -> (Exec, CurrentGuard) {
        let exec = Exec::default();
        let prev = CURRENT.with(|c| c.replace(Some(exec.clone())));
        (exec, CurrentGuard(prev))
    }

    /// What the execution recorded (a copy; the execution may go on).
    pub fn record(&self) -> Record {
        lock(&self.0.state).record.clone()
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut lock(&self.0.state))
    }
}

/// Restores the previous current execution on drop.
pub struct CurrentGuard(Option<Exec>);

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Whether an execution is being explored on this OS thread (the checker's
/// panic hook stays silent then: violations are reported with their trace).
pub fn active() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// What the current execution has recorded so far.
pub fn current_record() -> Record {
    current().record()
}

fn current() -> Exec {
    CURRENT.with(|c| {
        c.borrow()
            .clone()
            .expect("vfsmc-model: a step was recorded outside an execution")
    })
}

/// The execution handle a std thread inherits from its spawner.
pub struct Inherited(Option<Exec>);

/// Captures the current execution for a std thread about to be spawned.
pub fn inherit() -> Inherited {
    Inherited(CURRENT.with(|c| c.borrow().clone()))
}

impl Inherited {
    /// Runs `f` with the inherited execution current on this OS thread.
    pub fn enter<R>(self, f: impl FnOnce() -> R) -> R {
        let prev = CURRENT.with(|c| c.replace(self.0));
        let _restore = CurrentGuard(prev);
        f()
    }
}

/// Guard of [`atomic_section`]; releases the section on drop.
pub struct Section(Option<Exec>);

impl Drop for Section {
    fn drop(&mut self) {
        if let Some(exec) = &self.0 {
            exec.0
                .serial
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }
}

/// Makes an engine operation, its ghost update and its trace step one
/// indivisible step for the observers. Under loom and shuttle this is free:
/// coroutines only switch at engine operations. Under std (real threads) it
/// is a per-execution spin lock; never block inside a section.
pub fn atomic_section() -> Section {
    if sync::backend() != Backend::Std {
        return Section(None);
    }
    let exec = current();
    while exec
        .0
        .serial
        .compare_exchange_weak(
            false,
            true,
            std::sync::atomic::Ordering::Acquire,
            std::sync::atomic::Ordering::Relaxed,
        )
        .is_err()
    {
        std::thread::yield_now();
    }
    Section(Some(exec))
}

/// Registers an invariant checked after every step of this execution. It must
/// only observe ghost state (`peek`), never perform engine operations.
pub fn invariant(name: &str, check: impl Fn() -> Result<(), String> + Send + Sync + 'static) {
    lock(&current().0.invariants).push((name.to_string(), Arc::new(Box::new(check))));
}

/// Registers how to render the observed state when an invariant breaks.
pub fn observe(render: impl Fn() -> String + Send + Sync + 'static) {
    *lock(&current().0.observer) = Some(Arc::new(Box::new(render)));
}

/// Registers a trace column for a logical thread (call in spawn order).
pub fn column(name: &str) {
    current().with_state(|s| {
        if !s.record.columns.iter().any(|c| c == name) {
            s.record.columns.push(name.to_string());
        }
    });
}

/// Spawns a model thread named `name` (its trace column) under the bound
/// backend.
pub fn spawn<T, F>(name: &str, f: F) -> sync::JoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    column(name);
    sync::spawn(f)
}

/// A logical thread of the model: its name, context, CPU and the kernel's
/// per-task bookkeeping that `might_sleep` and lockdep consult.
pub struct Task {
    name: String,
    context: Cell<Context>,
    cpu: Cell<Option<usize>>,
    funcs: RefCell<Vec<&'static str>>,
    held: RefCell<Vec<String>>,
    rcu_depth: Cell<u32>,
    irqs_off: Cell<u32>,
    preempt_count: Cell<u32>,
    nonblock: Cell<bool>,
}

/// Pops the kernel function entered with [`Task::enter`].
pub struct FnGuard<'a>(&'a Task);

impl Drop for FnGuard<'_> {
    fn drop(&mut self) {
        self.0.funcs.borrow_mut().pop();
    }
}

impl Task {
    pub fn new(name: &str, context: Context) -> Task {
        column(name);
        Task {
            name: name.to_string(),
            context: Cell::new(context),
            cpu: Cell::new(None),
            funcs: RefCell::new(Vec::new()),
            held: RefCell::new(Vec::new()),
            rcu_depth: Cell::new(0),
            irqs_off: Cell::new(0),
            preempt_count: Cell::new(0),
            nonblock: Cell::new(false),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn context(&self) -> Context {
        self.context.get()
    }
    pub fn cpu(&self) -> Option<usize> {
        self.cpu.get()
    }
    pub fn set_cpu(&self, cpu: usize) {
        self.cpu.set(Some(cpu));
    }

    /// Enters kernel function `func`: steps are labelled with it until the
    /// guard drops. The outermost function of a thread is the *operation* that
    /// cost counters are charged to.
    pub fn enter(&self, func: &'static str) -> FnGuard<'_> {
        let outermost = self.funcs.borrow().is_empty();
        self.funcs.borrow_mut().push(func);
        if outermost {
            self.with_cost(|c| c.calls += 1);
        }
        FnGuard(self)
    }

    fn func(&self) -> &'static str {
        self.funcs.borrow().last().copied().unwrap_or("-")
    }

    fn operation(&self) -> &'static str {
        self.funcs.borrow().first().copied().unwrap_or("-")
    }

    fn context_label(&self) -> String {
        match self.cpu.get() {
            Some(cpu) => format!("{} cpu{cpu}", self.context.get()),
            None => String::new(),
        }
    }

    /// Records one labelled step, then checks every registered invariant.
    pub fn step(&self, effect: impl Into<String>) {
        let exec = current();
        let recorded = exec.with_state(|s| {
            if s.frozen {
                return false;
            }
            s.record.events.push(Event {
                thread: self.name.clone(),
                context: self.context_label(),
                func: self.func().to_string(),
                effect: effect.into(),
            });
            true
        });
        if !recorded {
            return;
        }
        if !self.held.borrow().is_empty() {
            self.cost(Counter::LockHeldSteps, 1);
        }
        let checks: Vec<(String, Arc<Check>)> = lock(&exec.0.invariants).clone();
        for (name, check) in checks {
            if let Err(msg) = check() {
                self.violation(&name, msg);
            }
        }
    }

    /// Reports a broken invariant: records it with the observed state, freezes
    /// the trace, and unwinds this model thread (the engine fails the run).
    pub fn violation(&self, invariant: &str, message: impl Into<String>) -> ! {
        raise(&self.name, invariant, message.into());
    }

    /// Marks a reachability tracepoint as hit in this execution.
    pub fn tracepoint(&self, name: &str) {
        current().with_state(|s| {
            if !s.frozen {
                s.record.reached.insert(name.to_string());
            }
        });
    }

    /// Adds `n` to a cost counter of the current operation.
    pub fn cost(&self, counter: Counter, n: u64) {
        self.with_cost(|c| *c.counters.entry(counter).or_default() += n);
    }

    fn with_cost(&self, f: impl FnOnce(&mut OpCost)) {
        let op = self.operation();
        current().with_state(|s| {
            if !s.frozen {
                f(s.record.costs.entry(op.to_string()).or_default());
            }
        });
    }

    // --- the kernel's per-task bookkeeping -------------------------------

    pub fn held_locks(&self) -> Vec<String> {
        self.held.borrow().clone()
    }
    pub fn push_held(&self, lock: &str) {
        self.held.borrow_mut().push(lock.to_string());
    }
    pub fn pop_held(&self, lock: &str) {
        let mut held = self.held.borrow_mut();
        if let Some(i) = held.iter().rposition(|h| h == lock) {
            held.remove(i);
        }
    }
    pub fn rcu_depth(&self) -> u32 {
        self.rcu_depth.get()
    }
    pub fn set_rcu_depth(&self, d: u32) {
        self.rcu_depth.set(d);
    }
    pub fn irqs_disabled(&self) -> bool {
        self.irqs_off.get() > 0
    }
    pub fn set_irqs_off(&self, n: u32) {
        self.irqs_off.set(n);
    }
    pub fn irqs_off_depth(&self) -> u32 {
        self.irqs_off.get()
    }
    pub fn preempt_count(&self) -> u32 {
        self.preempt_count.get()
    }
    pub fn set_preempt_count(&self, n: u32) {
        self.preempt_count.set(n);
    }
    /// Whether the task is in a walk that promised not to block
    /// (LOOKUP_NONBLOCK / LOOKUP_CACHED): a ghost flag for `might_sleep`.
    pub fn nonblock(&self) -> bool {
        self.nonblock.get()
    }
    pub fn set_nonblock(&self, on: bool) {
        self.nonblock.set(on);
    }

    /// kernel/sched/core.c:__might_sleep — a sleeping primitive is about to
    /// block; that is a bug in atomic context. Also catches a non-blocking walk
    /// that would sleep.
    pub fn might_sleep(&self, what: &str) {
        let reason = if self.rcu_depth() > 0 {
            Some("inside an RCU read-side critical section")
        } else if !self.held.borrow().is_empty() {
            Some("while holding a spinlock")
        } else if self.irqs_disabled() {
            Some("with interrupts disabled")
        } else if self.preempt_count() > 0 {
            Some("with preemption disabled")
        } else if self.context() != Context::Task && self.context() != Context::Kthread {
            Some("in interrupt context")
        } else if self.nonblock() {
            Some("in a walk marked non-blocking")
        } else {
            None
        };
        if let Some(reason) = reason {
            let held = self.held.borrow().join(", ");
            let held = if held.is_empty() {
                String::new()
            } else {
                format!(" (held: {held})")
            };
            self.violation(
                "might_sleep",
                format!("{what} may sleep, called {reason}{held}"),
            );
        }
    }
}

/// Records a violation for `thread` and unwinds. Exposed for actors that have
/// no [`Task`] (final checks in the driver's thread).
pub fn raise(thread: &str, invariant: &str, message: String) -> ! {
    let exec = current();
    let observer = lock(&exec.0.observer).clone();
    let state = observer.map(|o| o()).unwrap_or_default();
    exec.with_state(|s| {
        if s.frozen {
            return;
        }
        let step = s.record.events.len();
        s.record.violation = Some(Violation {
            invariant: invariant.to_string(),
            message,
            thread: thread.to_string(),
            step,
            state,
        });
        s.frozen = true;
    });
    std::panic::panic_any(ViolationRaised)
}

/// Checks an end-of-execution property (results, balance at quiescence).
pub fn check_final(thread: &str, invariant: &str, result: Result<(), String>) {
    if let Err(msg) = result {
        raise(thread, invariant, msg);
    }
}

/// Records that the engine failed the execution for a reason of its own
/// (deadlock, step limit, a panic in model code) unless a violation was
/// already recorded.
pub fn record_engine_failure(exec: &Exec, invariant: &str, message: String) {
    exec.with_state(|s| {
        if s.record.violation.is_none() && !s.frozen {
            let step = s.record.events.len();
            s.record.violation = Some(Violation {
                invariant: invariant.to_string(),
                message,
                thread: String::new(),
                step,
                state: String::new(),
            });
            s.frozen = true;
        }
    });
}

impl Exec {
    /// The tracepoints this execution hit.
    pub fn reached(&self) -> BTreeSet<String> {
        self.with_state(|s| s.record.reached.clone())
    }

    /// The violation recorded in this execution, if any.
    pub fn violation(&self) -> Option<Violation> {
        self.with_state(|s| s.record.violation.clone())
    }
}
