//! A logical thread of the model and the kernel's per-task bookkeeping:
//! the function it is in, its context and CPU, the locks it holds (with
//! their lock classes), its RCU nesting, IRQ and preempt state, and the ghost
//! "non-blocking walk" flag. `might_sleep` and lockdep read this; only the
//! primitives in this crate change it.
//!
//! Lock order (kernel/locking/lockdep.c:check_prev_add → check_noncircular
//! and check_deadlock as read at torvalds/linux baf9c8c18436, a v4.14-era
//! copy, merge not identified; reduced to what a model needs): every acquisition while another lock is held adds an edge
//! "held class → new class" to the execution's lock graph. Taking a class
//! that can already reach a held class is an inversion (a possible ABBA
//! deadlock), reported as `lock_order` with the step where each order was
//! taken. Taking a second lock of a class already held is recursive locking
//! unless the caller says how the two nest (`spin_lock_nested`, as the dcache
//! does with `DENTRY_D_LOCK_NESTED` for a child's `d_lock` under its
//! parent's).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crate::exec::{self, atomic_section, Counter, LockEdge, Recorded};
use crate::sync::{self, Ordering};
use crate::trace::{intern, Context, Effect, Name, Note, Step, Val};

/// The identity of the modelled process's tasks (an io-wq worker created by
/// `create_io_thread` shares it).
pub const SUBMITTER_IDENT: u32 = 1;

/// A lock this task holds.
#[derive(Clone, Copy, Debug)]
struct Held {
    class: Name,
    subclass: u8,
    lock: Name,
    id: usize,
}

/// Where a task placed on a CPU sits (`kernel::percpu`): what it does before
/// each of its engine operations, each one an interrupt point and, with
/// preemption enabled, a preemption point.
pub(crate) trait Seat {
    fn engine_op(&self, t: &Task);
    /// The task sleeps: it leaves its CPU while `wait` blocks, then takes
    /// it back.
    fn sleep(&self, t: &Task, wait: &mut dyn FnMut());
}

/// A logical thread of the model: its name (the trace column), context, CPU
/// and the kernel's per-task state.
pub struct Task {
    name: Name,
    id: u8,
    context: Cell<Context>,
    cpu: Cell<Option<u8>>,
    funcs: RefCell<Vec<&'static str>>,
    held: RefCell<Vec<Held>>,
    rcu_depth: Cell<u32>,
    irqs_off: Cell<u32>,
    preempt_count: Cell<u32>,
    /// migrate_disable depth: the task stays on its CPU but stays
    /// preemptible.
    migrate_disabled: Cell<u32>,
    nonblock: Cell<bool>,
    /// The identity procfs names for this task (`current`'s pid as
    /// `/proc/self` and `/proc/thread-self` resolve it), as data.
    ident: Cell<u32>,
    /// The CPU seat while the task runs on a CPU, consulted by every
    /// primitive before its engine operation ([`Task::engine_op`]).
    seat: RefCell<Option<Box<dyn Seat>>>,
    /// The task's RCU-sched word, which `synchronize_rcu` reads
    /// (`kernel::rcu`): odd while the task has preemption or IRQs disabled
    /// (a held spinlock disables preemption), a region that is a read-side
    /// critical section of every RCU flavour since the flavour
    /// consolidation (around v4.20, see `kernel::rcu::RcuFlavor`).
    sched_rcu: Arc<sync::AtomicU64>,
    /// Whether the task's first RCU-sched region has synchronised its claim
    /// with the grace periods (`exec::sync_sched_rcu_claim`).
    sched_rcu_synced: Cell<bool>,
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
        let name = intern(name);
        let id = exec::column(name);
        let sched_rcu = exec::claim_sched_rcu(id);
        Task {
            name,
            id,
            context: Cell::new(context),
            cpu: Cell::new(None),
            funcs: RefCell::new(Vec::new()),
            held: RefCell::new(Vec::new()),
            rcu_depth: Cell::new(0),
            irqs_off: Cell::new(0),
            preempt_count: Cell::new(0),
            migrate_disabled: Cell::new(0),
            nonblock: Cell::new(false),
            ident: Cell::new(SUBMITTER_IDENT),
            seat: RefCell::new(None),
            sched_rcu,
            sched_rcu_synced: Cell::new(false),
        }
    }

    pub fn name(&self) -> Name {
        self.name
    }
    /// The task's trace column.
    pub fn id(&self) -> u8 {
        self.id
    }
    pub fn context(&self) -> Context {
        self.context.get()
    }
    pub fn cpu(&self) -> Option<usize> {
        self.cpu.get().map(usize::from)
    }
    pub(crate) fn set_cpu(&self, cpu: usize) {
        self.cpu
            .set(Some(u8::try_from(cpu).expect("fewer than 256 CPUs")));
    }

    /// Seats the task on a CPU (`kernel::percpu`), replacing nothing: a task
    /// sits on one CPU at a time.
    pub(crate) fn sit(&self, seat: Box<dyn Seat>) {
        let old = self.seat.borrow_mut().replace(seat);
        assert!(old.is_none(), "{} already sits on a CPU", self.name);
    }

    /// Takes the task off its CPU; dropping the seat releases the CPU.
    pub(crate) fn unseat(&self) -> Option<Box<dyn Seat>> {
        self.seat.borrow_mut().take()
    }

    /// Called by every primitive right before its engine operation (outside
    /// any atomic section): for a task on a CPU this is where an interrupt
    /// may arrive and, with preemption enabled, where the task may be
    /// preempted or migrated. Model code never places these points; a task
    /// on no CPU has none.
    pub(crate) fn engine_op(&self) {
        if let Some(seat) = self.seat.borrow().as_ref() {
            seat.engine_op(self);
        }
    }

    /// Blocks in `wait` the way a task sleeps: a task on a CPU leaves it
    /// meanwhile (another task of the CPU, or the one it waits for, runs).
    pub(crate) fn sleep(&self, wait: impl FnOnce()) {
        let mut wait = Some(wait);
        let mut run = || {
            if let Some(w) = wait.take() {
                w();
            }
        };
        match self.seat.borrow().as_ref() {
            Some(seat) => seat.sleep(self, &mut run),
            None => run(),
        }
    }

    /// Enters kernel function `func`: steps are labelled with it until the
    /// guard drops. The outermost function of a thread is the *operation* that
    /// cost counters are charged to.
    pub fn enter(&self, func: &'static str) -> FnGuard<'_> {
        let outermost = self.funcs.borrow().is_empty();
        self.funcs.borrow_mut().push(func);
        if outermost {
            exec::call(func);
        }
        FnGuard(self)
    }

    fn func(&self) -> &'static str {
        self.funcs.borrow().last().copied().unwrap_or("-")
    }

    fn operation(&self) -> &'static str {
        self.funcs.borrow().first().copied().unwrap_or("-")
    }

    /// Records one step, then checks every registered invariant.
    pub fn step(&self, effect: Effect) {
        let _section = atomic_section();
        let step = Step {
            thread: self.id,
            context: self.context.get(),
            cpu: self.cpu.get(),
            func: self.func(),
            effect,
        };
        let broke = match exec::record(step) {
            Recorded::Skipped => return,
            Recorded::Held => None,
            Recorded::Broke(name, msg) => Some((name, msg)),
        };
        if !self.held.borrow().is_empty() {
            self.cost(Counter::LockHeldSteps, 1);
        }
        self.charge(&effect);
        if let Some((name, msg)) = broke {
            self.violation(name, msg);
        }
    }

    /// The costs a step's effect carries by itself: the words it writes
    /// and the RCU sections it enters.
    fn charge(&self, effect: &Effect) {
        use crate::trace::Part;
        let op = self.operation();
        match *effect {
            Effect::Store { var, .. } | Effect::Rmw { var, .. } => exec::wrote(op, var),
            Effect::Cmpxchg { var, ok: true, .. } => exec::wrote(op, var),
            Effect::Update { parts, .. } => {
                for p in parts.iter() {
                    match *p {
                        Part::SetBit { map, .. } | Part::ClearBit { map, .. } => {
                            exec::wrote(op, map)
                        }
                        Part::Store { var, .. } | Part::Assign { var, .. } => exec::wrote(op, var),
                    }
                }
            }
            Effect::RcuRead { lock: true, .. } => self.cost(Counter::RcuSections, 1),
            _ => {}
        }
    }

    /// Counts a write of `var` that the step recording it does not show as
    /// one (a lock word a primitive's lock step writes).
    pub(crate) fn wrote(&self, var: Name) {
        exec::wrote(self.operation(), var);
    }

    /// Records a step that fits no typed effect: `text` with each `{}`
    /// standing for the next of `args`.
    pub fn note(&self, text: &'static str, args: &[Val]) {
        self.step(Effect::Note(Note::new(text, args)));
    }

    /// Reports a broken invariant: records it with the observed state, freezes
    /// the trace, and unwinds this model thread (the engine fails the run).
    pub fn violation(&self, invariant: &str, message: impl Into<String>) -> ! {
        exec::raise(self.name, invariant, message.into());
    }

    /// Marks a reachability tracepoint as hit in this execution.
    pub fn tracepoint(&self, name: &'static str) {
        exec::tracepoint(name);
    }

    /// Counts an acquisition of a lock of `class` (`counter`: a spinning
    /// or a sleeping lock) against the current operation, in all and by
    /// class.
    pub(crate) fn took_lock(&self, counter: Counter, class: Name) {
        self.cost(counter, 1);
        exec::took_lock(self.operation(), class);
    }

    /// Adds `n` to a cost counter of the current operation.
    pub fn cost(&self, counter: Counter, n: u64) {
        exec::cost(self.operation(), counter, n);
    }

    // --- the kernel's per-task bookkeeping -------------------------------

    pub fn rcu_depth(&self) -> u32 {
        self.rcu_depth.get()
    }
    pub(crate) fn set_rcu_depth(&self, d: u32) {
        self.rcu_depth.set(d);
    }
    pub fn irqs_disabled(&self) -> bool {
        self.irqs_off.get() > 0
    }
    pub(crate) fn set_irqs_off(&self, n: u32) {
        let was = self.in_sched_region();
        self.irqs_off.set(n);
        self.sched_region_changed(was);
    }
    pub(crate) fn irqs_off_depth(&self) -> u32 {
        self.irqs_off.get()
    }
    pub fn preempt_count(&self) -> u32 {
        self.preempt_count.get()
    }
    pub(crate) fn set_preempt_count(&self, n: u32) {
        let was = self.in_sched_region();
        self.preempt_count.set(n);
        self.sched_region_changed(was);
    }

    /// Whether migrate_disable is in effect.
    pub fn migrate_disabled(&self) -> bool {
        self.migrate_disabled.get() > 0
    }
    pub(crate) fn set_migrate_disabled(&self, n: u32) {
        self.migrate_disabled.set(n);
    }
    pub(crate) fn migrate_disabled_depth(&self) -> u32 {
        self.migrate_disabled.get()
    }

    /// Whether preemption or IRQs are disabled: an RCU read-side critical
    /// section without rcu_read_lock (since the flavour consolidation,
    /// around v4.20; see `kernel::rcu::RcuFlavor`).
    pub fn in_sched_region(&self) -> bool {
        self.preempt_count.get() > 0 || self.irqs_off.get() > 0
    }

    /// Announces entering or leaving a sched region on the task's RCU-sched
    /// word (`kernel::rcu`). Both are read-modify-writes, as is the grace
    /// period's read of the word, so the two are ordered on the word itself:
    /// a grace period that reads the word before the entry synchronises
    /// with it (the region sees what preceded the grace period), one that
    /// reads it after waits for the exit, whose release orders the region's
    /// accesses before the grace period's end. Unlike a full fence, this
    /// orders nothing for a task no grace period looks at. Part of the
    /// transition, so no interrupt point of its own; skipped while a
    /// violation unwinds.
    fn sched_region_changed(&self, was: bool) {
        let now = self.in_sched_region();
        if now == was || std::thread::panicking() {
            return;
        }
        let old = {
            let _s = atomic_section();
            if now && !self.sched_rcu_synced.replace(true) {
                exec::sync_sched_rcu_claim(self.id());
            }
            let order = if now {
                Ordering::AcqRel
            } else {
                Ordering::Release
            };
            self.sched_rcu.fetch_add(1, order)
        };
        if !now && old >> crate::kernel::rcu::WAITER_SHIFT != 0 {
            let wake = exec::sched_rcu_wake();
            crate::kernel::rcu::wake_grace_periods(&wake.0, &wake.1);
        }
    }

    /// Whether the task is in a walk that promised not to block
    /// (LOOKUP_NONBLOCK / LOOKUP_CACHED): a ghost flag for `might_sleep`.
    pub fn nonblock(&self) -> bool {
        self.nonblock.get()
    }
    /// The walk's LOOKUP_CACHED changed: set or clear the ghost flag.
    pub fn set_nonblock(&self, on: bool) {
        self.nonblock.set(on);
    }

    /// The identity procfs resolves `self` links with (every task of the
    /// modelled process has [`SUBMITTER_IDENT`] unless it was made a thread
    /// of its own).
    pub fn ident(&self) -> u32 {
        self.ident.get()
    }
    /// Gives the task an identity of its own (a kernel thread that is not
    /// a thread of the submitting process).
    pub fn set_ident(&self, ident: u32) {
        self.ident.set(ident);
    }
    /// Whether the task holds any spinlock.
    pub fn holds_spinlock(&self) -> bool {
        !self.held.borrow().is_empty()
    }

    /// lockdep's check before an acquisition of lock `lock` (instance `id`)
    /// of `class`, nested as `subclass` (0 unless the caller annotates the
    /// nesting): reports recursive locking and order inversions, then
    /// records the new edges.
    pub(crate) fn lockdep_acquire(&self, class: Name, subclass: u8, lock: Name) {
        let n = self.held.borrow().len();
        for i in 0..n {
            let h = self.held.borrow()[i];
            if (h.class, h.subclass) == (class, subclass) {
                self.violation(
                    "lock_order",
                    format!(
                        "possible recursive locking: {} takes {lock} while holding {} of the \
                         same class {class} (annotate the nesting with spin_lock_nested)",
                        self.name, h.lock
                    ),
                );
            }
            self.lock_edge((h.class, h.subclass), (class, subclass), h.lock, lock);
        }
    }

    fn lock_edge(&self, from: (Name, u8), to: (Name, u8), held: Name, taking: Name) {
        let inversion = exec::with_current(|e| {
            e.with_state(|s| {
                let step = s.steps.len() + 1;
                let reverse = reaches(&s.lock_edges, to, from);
                if reverse.is_none() && !s.lock_edges.iter().any(|x| (x.from, x.to) == (from, to)) {
                    s.lock_edges.push(LockEdge {
                        from,
                        to,
                        thread: self.name,
                        step,
                    });
                }
                reverse.map(|r| (r, step))
            })
        });
        if let Some((r, step)) = inversion {
            self.violation(
                "lock_order",
                format!(
                    "possible circular locking: {} takes {taking} (class {}) while holding \
                     {held} (class {}), after step {}; {} took class {} while holding class {} \
                     at step {}",
                    self.name,
                    class_label(to),
                    class_label(from),
                    step - 1,
                    r.thread,
                    class_label(r.to),
                    class_label(r.from),
                    r.step
                ),
            );
        }
    }

    /// The lock is now held.
    pub(crate) fn push_held(&self, class: Name, subclass: u8, lock: Name, id: usize) {
        self.held.borrow_mut().push(Held {
            class,
            subclass,
            lock,
            id,
        });
    }

    /// The lock with instance `id` is no longer held.
    pub(crate) fn pop_held(&self, id: usize) {
        let mut held = self.held.borrow_mut();
        if let Some(i) = held.iter().rposition(|h| h.id == id) {
            held.remove(i);
        }
    }

    /// kernel/sched/core.c:__might_sleep (read at torvalds/linux
    /// 4353dd3b7078, a v5.x copy) — a sleeping primitive `func` (on
    /// `arg`, e.g. the lock) is about to block; that is a bug in atomic
    /// context. Also catches a non-blocking walk that would sleep.
    pub fn might_sleep(&self, func: &'static str, arg: Option<Name>) {
        let reason = if self.rcu_depth() > 0 {
            Some("inside an RCU read-side critical section")
        } else if self.holds_spinlock() {
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
            let held: Vec<&str> = self.held.borrow().iter().map(|h| h.lock).collect();
            let held = if held.is_empty() {
                String::new()
            } else {
                format!(" (held: {})", held.join(", "))
            };
            let what = match arg {
                Some(a) => format!("{func}({a})"),
                None => func.to_string(),
            };
            self.violation(
                "might_sleep",
                format!("{what} may sleep, called {reason}{held}"),
            );
        }
    }
}

fn class_label((class, subclass): (Name, u8)) -> String {
    if subclass == 0 {
        class.to_string()
    } else {
        format!("{class}/{subclass}")
    }
}

/// The edge that closes a path `from` →* `to` in the lock graph (the last
/// edge into `to`), if there is such a path. Depth-first over at most
/// [`MAX_CLASSES`] classes, without allocating.
fn reaches(edges: &[LockEdge], from: (Name, u8), to: (Name, u8)) -> Option<LockEdge> {
    let mut stack = [from; MAX_CLASSES];
    let mut seen = [from; MAX_CLASSES];
    let (mut depth, mut nseen) = (1, 1);
    while depth > 0 {
        depth -= 1;
        let n = stack[depth];
        for e in edges.iter().filter(|e| e.from == n) {
            if e.to == to {
                return Some(*e);
            }
            if !seen[..nseen].contains(&e.to) {
                assert!(nseen < MAX_CLASSES, "more lock classes than lockdep tracks");
                seen[nseen] = e.to;
                nseen += 1;
                stack[depth] = e.to;
                depth += 1;
            }
        }
    }
    None
}

/// Lock classes (with subclass) one execution may order.
const MAX_CLASSES: usize = 32;
