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

use std::cell::Cell;
pub use std::sync::atomic::Ordering;

/// Which implementation the facade types use on this OS thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Loom,
    Shuttle,
    Std,
}

thread_local! {
    static BACKEND: Cell<Option<Backend>> = const { Cell::new(None) };
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
}

macro_rules! dispatch {
    ($self:expr, $a:ident => $e:expr) => {
        match $self {
            Self::Loom($a) => $e,
            Self::Shuttle($a) => $e,
            Self::Std($a) => $e,
        }
    };
}

impl AtomicU64 {
    pub fn new(v: u64) -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::atomic::AtomicU64::new(v)),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::atomic::AtomicU64::new(v)),
            Backend::Std => Self::Std(std::sync::atomic::AtomicU64::new(v)),
        }
    }
    pub fn load(&self, o: Ordering) -> u64 {
        dispatch!(self, a => a.load(o))
    }
    pub fn store(&self, v: u64, o: Ordering) {
        dispatch!(self, a => a.store(v, o))
    }
    pub fn swap(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.swap(v, o))
    }
    pub fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        dispatch!(self, a => a.compare_exchange(current, new, success, failure))
    }
    pub fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_add(v, o))
    }
    pub fn fetch_sub(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_sub(v, o))
    }
    pub fn fetch_or(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_or(v, o))
    }
    pub fn fetch_and(&self, v: u64, o: Ordering) -> u64 {
        dispatch!(self, a => a.fetch_and(v, o))
    }
}

/// A blocking mutex with no payload: the engines see the scheduling and the
/// happens-before edges; the data it guards lives in ghost-visible cells
/// (see `kernel::spinlock`), so specs can observe it without engine operations.
pub enum Mutex {
    Loom(loom::sync::Mutex<()>),
    Shuttle(shuttle::sync::Mutex<()>),
    Std(std::sync::Mutex<()>),
}

/// Proof that a [`Mutex`] is held; dropping it releases the mutex.
pub enum MutexGuard<'a> {
    Loom(loom::sync::MutexGuard<'a, ()>),
    Shuttle(shuttle::sync::MutexGuard<'a, ()>),
    Std(std::sync::MutexGuard<'a, ()>),
}

impl Mutex {
    pub fn new() -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::Mutex::new(())),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::Mutex::new(())),
            Backend::Std => Self::Std(std::sync::Mutex::new(())),
        }
    }
    pub fn lock(&self) -> MutexGuard<'_> {
        // A model panic poisons the mutex; the execution is already failing, so
        // later lockers proceed and let the first failure be the one reported.
        match self {
            Self::Loom(m) => MutexGuard::Loom(m.lock().unwrap_or_else(|p| p.into_inner())),
            Self::Shuttle(m) => MutexGuard::Shuttle(m.lock().unwrap_or_else(|p| p.into_inner())),
            Self::Std(m) => MutexGuard::Std(m.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }
    pub fn try_lock(&self) -> Option<MutexGuard<'_>> {
        match self {
            Self::Loom(m) => m.try_lock().ok().map(MutexGuard::Loom),
            Self::Shuttle(m) => m.try_lock().ok().map(MutexGuard::Shuttle),
            Self::Std(m) => m.try_lock().ok().map(MutexGuard::Std),
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
}

impl Condvar {
    pub fn new() -> Self {
        match backend() {
            Backend::Loom => Self::Loom(loom::sync::Condvar::new()),
            Backend::Shuttle => Self::Shuttle(shuttle::sync::Condvar::new()),
            Backend::Std => Self::Std(std::sync::Condvar::new()),
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
            _ => unreachable!("a condition variable and its mutex share one backend"),
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        match self {
            Self::Loom(c) => c.notify_all(),
            Self::Shuttle(c) => c.notify_all(),
            Self::Std(c) => c.notify_all(),
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
    Std(std::thread::JoinHandle<T>),
}

impl<T> JoinHandle<T> {
    /// Waits for the thread; a panic in it (a violation) is re-raised here.
    pub fn join(self) -> T {
        let r = match self {
            Self::Loom(h) => h.join(),
            Self::Shuttle(h) => h.join(),
            Self::Std(h) => h.join(),
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
        Backend::Std => JoinHandle::Std(std::thread::spawn(move || with_backend(Backend::Std, f))),
    }
}

/// A scheduling hint in every spin or retry loop: without it loom reports
/// "exceeded maximum number of branches" and shuttle's PCT cannot deprioritise
/// the spinner.
pub fn yield_now() {
    match backend() {
        Backend::Loom => loom::thread::yield_now(),
        Backend::Shuttle => shuttle::thread::yield_now(),
        Backend::Std => std::thread::yield_now(),
    }
}

/// A memory fence under the bound backend.
pub fn fence(o: Ordering) {
    match backend() {
        Backend::Loom => loom::sync::atomic::fence(o),
        Backend::Shuttle => shuttle::sync::atomic::fence(o),
        Backend::Std => std::sync::atomic::fence(o),
    }
}
