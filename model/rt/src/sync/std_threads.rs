//! The std backend's model threads (the stress engine), kept between
//! executions.
//!
//! A stress run spawns a few threads per execution, thousands of executions
//! a search. Starting and ending an OS thread maps and unmaps its stack and
//! its signal stack; each unmap makes the kernel shoot down the TLB of every
//! other core. The 1,500-execution sweep of `tests/engines.rs` spent 39 s of
//! its 53 CPU-seconds in the kernel that way. Here a thread that finishes
//! its model thread parks and takes the next one instead.
//!
//! A model thread sees what it saw on a fresh thread: the facade's
//! thread-locals (backend, current execution, atomic-section depth) are set
//! and reset by guards around the model thread's body, so none survives it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// A model thread's body. It returns what hands its result to the joiner,
/// so the OS thread is back among the idle ones before the joiner wakes and
/// spawns the next execution's threads (else each spawn could start a new
/// OS thread while the last one was still on its way back).
type Job = Box<dyn FnOnce() -> Publish + Send>;
type Publish = Box<dyn FnOnce()>;

/// Threads waiting for a model thread to run, each on its own channel.
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a model thread leaves its result (a panic included) for the one
/// that joins it.
type Outcome<T> = Arc<(Mutex<Option<std::thread::Result<T>>>, Condvar)>;

/// A model thread running on a pooled OS thread.
pub struct Handle<T>(Outcome<T>);

impl<T> Handle<T> {
    /// Waits for the model thread; its panic comes back as the error, as
    /// `std::thread::JoinHandle::join` gives it.
    pub fn join(self) -> std::thread::Result<T> {
        let (slot, done) = &*self.0;
        let mut result = lock(slot);
        loop {
            if let Some(r) = result.take() {
                return r;
            }
            result = done.wait(result).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Runs `f` as a model thread on an idle pooled thread, or a new one.
pub fn spawn<T, F>(f: F) -> Handle<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let outcome: Outcome<T> = Arc::new((Mutex::new(None), Condvar::new()));
    let slot = outcome.clone();
    let job: Job = Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(f));
        Box::new(move || {
            let (cell, done) = &*slot;
            *lock(cell) = Some(result);
            done.notify_all();
        })
    });
    let idle = lock(&IDLE).pop();
    match idle {
        Some(thread) => {
            if thread.send(job).is_err() {
                unreachable!("a pooled thread never drops its receiver");
            }
        }
        None => start_thread(job),
    }
    Handle(outcome)
}

/// A new pooled thread: runs `first`, then whatever it is sent.
fn start_thread(first: Job) {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .spawn(move || {
            let mut job = first;
            loop {
                let publish = job();
                lock(&IDLE).push(tx.clone());
                publish();
                let Ok(next) = rx.recv() else { return };
                job = next;
            }
        })
        .expect("vfsmc-runtime: the OS refused a thread for the std backend");
}
