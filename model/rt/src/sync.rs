//! The engine facade: the only module that names loom, shuttle or std
//! synchronisation types. A leaf: it imports nothing from this crate.
//!
//! Models are written once against these types and run unchanged under every
//! engine. The backend is chosen at run time (a thread-local set by the engine
//! driver with [`with_backend`]), so one test binary runs loom and shuttle side
//! by side without a `--cfg loom` rebuild. Each type is an enum over the three
//! implementations; the dispatch cost is noise next to an engine's own
//! bookkeeping.
//!
//! What each backend cannot see, stated once here:
//! - loom treats `SeqCst` *accesses* as `AcqRel` (tokio-rs/loom#180). Kernel
//!   primitives therefore never use `SeqCst` accesses; `smp_mb()` is a
//!   `SeqCst` fence, which loom does model.
//! - shuttle runs every atomic as `SeqCst`: it finds interleaving bugs, never
//!   weak-memory bugs (a relaxed message-passing bug passes under shuttle).
//! - std (the `stress` engine) sees whatever the host CPU does, under the OS
//!   scheduler; it is neither exhaustive nor replayable.
//! - Neither loom nor shuttle models a spurious `compare_exchange_weak`
//!   failure; the facade offers only the strong form.
//! - an execution-graph engine ([`GraphRuntime`], the checker's `optimal`
//!   engine) sees exactly these operations as events, and takes every
//!   `yield_now` for a failed round of a wait that will read the same
//!   values again ([`yield_now`], [`yield_bounded`]).
//! - only loom answers happens-before queries ([`epoch`], for reporting
//!   data races): shuttle runs every access as `SeqCst`, so any atomic
//!   access between two plain ones would order them, std has no clocks, and
//!   the execution-graph runtime offers none. On those [`epoch`] is `None`
//!   and a caller must not take "no race seen" for "no race".

mod std_threads;

use std::cell::Cell;
use std::marker::PhantomData;
pub use std::sync::atomic::Ordering;

/// Which implementation the facade types use on this OS thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Loom,
    Shuttle,
    Std,
    /// An engine of the checker that runs model threads as its own
    /// coroutines and records each operation below as an event of an
    /// execution graph ([`with_graph_runtime`]).
    Graph,
}

thread_local! {
    static BACKEND: Cell<Option<Backend>> = const { Cell::new(None) };
    static GRAPH: Cell<Option<*const (dyn GraphRuntime + 'static)>> = const { Cell::new(None) };
}

/// The read-modify-writes of [`AtomicU64`], as an execution-graph engine
/// receives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmwOp {
    Add(u64),
    Sub(u64),
    Or(u64),
    And(u64),
    Swap(u64),
}

impl RmwOp {
    /// The value the operation stores over `old`.
    pub fn apply(self, old: u64) -> u64 {
        match self {
            RmwOp::Add(v) => old.wrapping_add(v),
            RmwOp::Sub(v) => old.wrapping_sub(v),
            RmwOp::Or(v) => old | v,
            RmwOp::And(v) => old & v,
            RmwOp::Swap(v) => v,
        }
    }
}

/// What an execution-graph engine implements to run the models: every
/// operation of the facade's types, on objects it numbers itself. Each
/// call is made from a model thread the engine runs (a coroutine on the OS
/// thread that called [`with_graph_runtime`]) and may switch to another.
pub trait GraphRuntime {
    fn atomic_new(&self, v: u64) -> u32;
    fn load(&self, loc: u32, o: Ordering) -> u64;
    fn store(&self, loc: u32, v: u64, o: Ordering);
    /// Returns the value before the operation.
    fn rmw(&self, loc: u32, op: RmwOp, o: Ordering) -> u64;
    fn compare_exchange(
        &self,
        loc: u32,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    fn fence(&self, o: Ordering);
    fn mutex_new(&self) -> u32;
    /// Blocks until the mutex is free, then takes it.
    fn lock(&self, mutex: u32);
    fn try_lock(&self, mutex: u32) -> bool;
    fn unlock(&self, mutex: u32);
    fn condvar_new(&self) -> u32;
    /// Releases `mutex`, blocks until a notification after the call, takes
    /// `mutex` again.
    fn wait(&self, condvar: u32, mutex: u32);
    fn notify_all(&self, condvar: u32);
    /// Starts `f` as a new model thread; returns its number.
    fn spawn(&self, f: Box<dyn FnOnce() + Send>) -> u32;
    /// Blocks until thread `thread` has finished.
    fn join(&self, thread: u32);
    /// A failed round of a wait ([`yield_now`]).
    fn yield_now(&self);
    /// A failed round of a loop with a bound of its own ([`yield_bounded`]).
    fn yield_bounded(&self);
}

/// Runs `f` with the facade bound to the execution-graph engine `rt` on
/// this OS thread; the engine's coroutines run inside `f`.
pub fn with_graph_runtime<R>(rt: &dyn GraphRuntime, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const (dyn GraphRuntime + 'static)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            GRAPH.with(|g| g.set(self.0));
        }
    }
    // SAFETY: only the lifetime is erased; the pointer is cleared again
    // when this frame ends, and it is only used by facade calls made while
    // `f` runs (on this OS thread, which owns `rt`'s coroutines).
    let erased: *const (dyn GraphRuntime + 'static) =
        unsafe { std::mem::transmute(rt as *const dyn GraphRuntime) };
    let _restore = Restore(GRAPH.with(|g| g.replace(Some(erased))));
    with_backend(Backend::Graph, f)
}

/// The execution-graph engine bound to this OS thread.
fn graph() -> &'static dyn GraphRuntime {
    let rt = GRAPH
        .with(Cell::get)
        .expect("vfsmc-model: the graph backend is bound without a runtime");
    // SAFETY: set by `with_graph_runtime`, whose frame outlives every call
    // made through the facade while it is set.
    unsafe { &*rt }
}

/// Runs `f` with the facade bound to `backend` on this OS thread. loom and
/// shuttle run every model thread as a coroutine on the caller's OS thread, so
/// the binding covers all of them; std threads inherit it in [`spawn`].
pub fn with_backend<R>(backend: Backend, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Backend>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BACKEND.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BACKEND.with(|b| b.replace(Some(backend))));
    f()
}

/// The backend bound to this OS thread.
///
/// # Panics
/// When no engine is driving this thread: model objects only exist inside an
/// exploration, as with loom and shuttle themselves.
pub fn backend() -> Backend {
    BACKEND
        .with(Cell::get)
        .expect("vfsmc-model: model code ran outside an engine (no backend bound)")
}

/// A 64-bit atomic word: every atomic in the models is one of these (values
/// are packed where the kernel uses two words, see `kernel::cmpxchg_double`).
pub enum AtomicU64 {
    Loom(loom::sync::atomic::AtomicU64),
    Shuttle(shuttle::sync::atomic::AtomicU64),
    Std(std::sync::atomic::AtomicU64),
    Graph(u32),
}

macro_rules! dispatch {
    ($self:expr, $a:ident => $e:expr, $loc:ident => $g:expr) => {
        match $self {
            Self::Loom($a) => $e,
            Self::Shuttle($a) => $e,
            Self::Std($a) => $e,
            Self::Graph($loc) => $g,
        }
    };
}

impl AtomicU64 {
    pub fn new(v: u64) -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::atomic::AtomicU64::new(v)),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::atomic::AtomicU64::new(v)),
            Backend::Std => Self::Std(std::sync::atomic::AtomicU64::new(v)),
            Backend::Graph => Self::Graph(graph().atomic_new(v)),
        }
    }
    pub fn load(&self, o: Ordering) -> u64 {
        dispatch!(self, a => a.load(o), l => graph().load(*l, o))
    }
    pub fn store(&self, v: u64, o: Ordering) {
        dispatch!(self, a => a.store(v, o), l => graph().store(*l, v, o))
    }
    pub fn swap(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.swap(v, o), l => graph().rmw(*l, RmwOp::Swap(v), o))
    }
    pub fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        dispatch!(
            self,
            a => a.compare_exchange(current, new, success, failure),
            l => graph().compare_exchange(*l, current, new, success, failure)
        )
    }
    pub fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_add(v, o), l => graph().rmw(*l, RmwOp::Add(v), o))
    }
    pub fn fetch_sub(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_sub(v, o), l => graph().rmw(*l, RmwOp::Sub(v), o))
    }
    pub fn fetch_or(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_or(v, o), l => graph().rmw(*l, RmwOp::Or(v), o))
    }
    pub fn fetch_and(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_and(v, o), l => graph().rmw(*l, RmwOp::And(v), o))
    }
}

/// A blocking mutex with no payload: the engines see the scheduling and the
/// happens-before edges; the data it guards lives in ghost-visible cells
/// (see `kernel::spinlock`), so specs can observe it without engine operations.
pub enum Mutex {
    Loom(loom::sync::Mutex<()>),
    Shuttle(shuttle::sync::Mutex<()>),
    Std(std::sync::Mutex<()>),
    Graph(u32),
}

/// Proof that a [`Mutex`] is held; dropping it releases the mutex.
pub enum MutexGuard<'a> {
    Loom(loom::sync::MutexGuard<'a, ()>),
    Shuttle(shuttle::sync::MutexGuard<'a, ()>),
    Std(std::sync::MutexGuard<'a, ()>),
    Graph(GraphGuard<'a>),
}

/// A held mutex of the execution-graph engine; unlocks on drop.
pub struct GraphGuard<'a> {
    mutex: u32,
    _held: PhantomData<&'a Mutex>,
}

impl Drop for GraphGuard<'_> {
    fn drop(&mut self) {
        // A thread the engine abandons unwinds through its guards: it makes
        // no more operations.
        if !std::thread::panicking() {
            graph().unlock(self.mutex);
        }
    }
}

impl GraphGuard<'_> {
    fn held(mutex: u32) -> Self {
        GraphGuard {
            mutex,
            _held: PhantomData,
        }
    }
}

impl Mutex {
    pub fn new() -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::Mutex::new(())),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::Mutex::new(())),
            Backend::Std => Self::Std(std::sync::Mutex::new(())),
            Backend::Graph => Self::Graph(graph().mutex_new()),
        }
    }
    pub fn lock(&self) -> MutexGuard<'_> {
        // A model panic poisons the mutex; the execution is already failing, so
        // later lockers proceed and let the first failure be the one reported.
        match self {
            Self::Loom(m) => MutexGuard::Loom(m.lock().unwrap_or_else(|p| p.into_inner())),
            Self::Shuttle(m) => MutexGuard::Shuttle(m.lock().unwrap_or_else(|p| p.into_inner())),
            Self::Std(m) => MutexGuard::Std(m.lock().unwrap_or_else(|p| p.into_inner())),
            Self::Graph(m) => {
                graph().lock(*m);
                MutexGuard::Graph(GraphGuard::held(*m))
            }
        }
    }
    pub fn try_lock(&self) -> Option<MutexGuard<'_>> {
        match self {
            Self::Loom(m) => m.try_lock().ok().map(MutexGuard::Loom),
            Self::Shuttle(m) => m.try_lock().ok().map(MutexGuard::Shuttle),
            Self::Std(m) => m.try_lock().ok().map(MutexGuard::Std),
            Self::Graph(m) => graph()
                .try_lock(*m)
                .then(|| MutexGuard::Graph(GraphGuard::held(*m))),
        }
    }
}

impl Default for Mutex {
    fn default() -> Self {
        Self::new()
    }
}

/// A condition variable paired with a [`Mutex`]: a thread that waits is
/// blocked (not spinning) until another notifies it, so an engine may run it
/// at any later point. No spurious wake-ups are modelled; callers re-check
/// their condition anyway.
pub enum Condvar {
    Loom(loom::sync::Condvar),
    Shuttle(shuttle::sync::Condvar),
    Std(std::sync::Condvar),
    Graph(u32),
}

impl Condvar {
    pub fn new() -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::Condvar::new()),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::Condvar::new()),
            Backend::Std => Self::Std(std::sync::Condvar::new()),
            Backend::Graph => Self::Graph(graph().condvar_new()),
        }
    }

    /// Releases `guard`'s mutex, blocks until notified, re-takes it.
    pub fn wait<'a>(&self, guard: MutexGuard<'a>) -> MutexGuard<'a> {
        match (self, guard) {
            (Self::Loom(c), MutexGuard::Loom(g)) => {
                MutexGuard::Loom(c.wait(g).unwrap_or_else(|p| p.into_inner()))
            }
            (Self::Shuttle(c), MutexGuard::Shuttle(g)) => {
                MutexGuard::Shuttle(c.wait(g).unwrap_or_else(|p| p.into_inner()))
            }
            (Self::Std(c), MutexGuard::Std(g)) => {
                MutexGuard::Std(c.wait(g).unwrap_or_else(|p| p.into_inner()))
            }
            (Self::Graph(c), MutexGuard::Graph(g)) => {
                let m = g.mutex;
                // The engine releases and re-takes the mutex itself.
                std::mem::forget(g);
                graph().wait(*c, m);
                MutexGuard::Graph(GraphGuard::held(m))
            }
            _ => unreachable!("a condition variable and its mutex share one backend"),
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        match self {
            Self::Loom(c) => c.notify_all(),
            Self::Shuttle(c) => c.notify_all(),
            Self::Std(c) => c.notify_all(),
            Self::Graph(c) => graph().notify_all(*c),
        }
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

/// A model thread's handle.
pub enum JoinHandle<T> {
    Loom(loom::thread::JoinHandle<T>),
    Shuttle(shuttle::thread::JoinHandle<T>),
    Std(std_threads::Handle<T>),
    /// The engine's thread number and where the thread leaves its result
    /// (a panic in it ends the execution in the engine instead).
    Graph(u32, std::sync::Arc<std::sync::Mutex<Option<T>>>),
}

impl<T> JoinHandle<T> {
    /// Waits for the thread; a panic in it (a violation) is re-raised here.
    pub fn join(self) -> T {
        let r = match self {
            Self::Loom(h) => h.join(),
            Self::Shuttle(h) => h.join(),
            Self::Std(h) => h.join(),
            Self::Graph(thread, result) => {
                graph().join(thread);
                let value = result.lock().unwrap_or_else(|p| p.into_inner()).take();
                return value.expect("a joined thread of the graph engine left its result");
            }
        };
        r.unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

/// Spawns a model thread under the bound backend.
pub fn spawn<T, F>(f: F) -> JoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match backend() {
        Backend::Loom => JoinHandle::Loom(loom::thread::spawn(f)),
        Backend::Shuttle => JoinHandle::Shuttle(shuttle::thread::spawn(f)),
        Backend::Std => JoinHandle::Std(std_threads::spawn(move || with_backend(Backend::Std, f))),
        Backend::Graph => {
            let result = std::sync::Arc::new(std::sync::Mutex::new(None));
            let slot = result.clone();
            let thread = graph().spawn(Box::new(move || {
                let value = f();
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
            }));
            JoinHandle::Graph(thread, result)
        }
    }
}

/// A scheduling hint in every spin or retry loop: without it loom reports
/// "exceeded maximum number of branches" and shuttle's PCT cannot deprioritise
/// the spinner.
///
/// To an execution-graph engine it marks the end of a failed round of a
/// wait: the loop will read the same locations again and round after round
/// fail the same way until another thread writes one of them. A round that
/// wrote nothing since the thread's last yield therefore blocks the thread
/// there (GenMC's spin-assume): a later write that a read of the round
/// could see takes the execution where the round succeeds. A loop whose
/// rounds are bounded by a count of its own must use [`yield_bounded`].
pub fn yield_now() {
    match backend() {
        Backend::Loom => loom::thread::yield_now(),
        Backend::Shuttle => shuttle::thread::yield_now(),
        Backend::Std => std::thread::yield_now(),
        Backend::Graph => graph().yield_now(),
    }
}

/// [`yield_now`] in a loop whose rounds are bounded by a count of its own
/// (lockref's lockless retries): the same hint to loom, shuttle and std,
/// but never a blocking point to an execution-graph engine, since the round
/// after the bound takes another path.
pub fn yield_bounded() {
    match backend() {
        Backend::Loom => loom::thread::yield_now(),
        Backend::Shuttle => shuttle::thread::yield_now(),
        Backend::Std => std::thread::yield_now(),
        Backend::Graph => graph().yield_bounded(),
    }
}

/// A memory fence under the bound backend.
pub fn fence(o: Ordering) {
    match backend() {
        Backend::Loom => loom::sync::atomic::fence(o),
        Backend::Shuttle => shuttle::sync::atomic::fence(o),
        Backend::Std => std::sync::atomic::fence(o),
        Backend::Graph => graph().fence(o),
    }
}

/// A point of a model thread's history, for a data-race check that records
/// a race instead of aborting the search (loom's `UnsafeCell` panics at the
/// first one). loom's `causality::Epoch`, a vfsmc patch
/// (vendor/loom/VFSMC-PATCHES.md, 3).
#[derive(Clone, Copy, Debug)]
pub struct Epoch(loom::causality::Epoch);

/// The running model thread's point now, on a backend that tracks
/// happens-before (loom); `None` on the others (see the module header). It
/// advances the thread's own clock entry but is no scheduling point: a
/// model that takes epochs explores the executions it explores without.
pub fn epoch() -> Option<Epoch> {
    match backend() {
        Backend::Loom => Some(Epoch(loom::causality::Epoch::now())),
        Backend::Shuttle | Backend::Std | Backend::Graph => None,
    }
}

impl Epoch {
    /// Whether the point this epoch stamps happens-before the running
    /// thread's current point.
    pub fn happens_before_now(&self) -> bool {
        self.0.happens_before_now()
    }
}
