//! One process-wide panic hook for both engines.
//!
//! loom (through its coroutine crate) and shuttle each install a global hook
//! the first time they run; shuttle's prints a schedule for every failing
//! execution. Violations are our own reports, with their trace, so while a
//! search runs on this OS thread every panic is silent. The engines' hooks
//! are installed first (by running each engine once on an empty model) and
//! ours goes on top; outside a search, panics reach the previous hooks.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

/// Whether searches also mute file descriptor 2 (the CLI asks for it).
static MUTE_STDERR: AtomicBool = AtomicBool::new(false);

/// shuttle prints "test panicked in task …" and "failing seed" straight to
/// stderr for every failing execution, outside any hook; a CLI user gets the
/// trace and replay line instead. Called once by the CLI, never by tests
/// (libtest captures those prints per test already).
pub fn mute_engine_stderr() {
    MUTE_STDERR.store(true, Ordering::Relaxed);
}

/// Points fd 2 at /dev/null until the last of them is dropped. Descriptor 2
/// is the process's, and searches run on several threads at once
/// (`crate::pool`): the first search to start mutes it and the last to end
/// restores it, so no search restores what another one saved.
struct MutedStderr(bool);

/// Searches muting fd 2 now, and the descriptor the first one saved.
static MUTED: Mutex<(usize, Option<i32>)> = Mutex::new((0, None));

impl MutedStderr {
    fn new() -> MutedStderr {
        if !MUTE_STDERR.load(Ordering::Relaxed) {
            return MutedStderr(false);
        }
        let mut muted = MUTED.lock().unwrap_or_else(|p| p.into_inner());
        if muted.0 == 0 {
            muted.1 = point_stderr_at_null();
        }
        muted.0 += 1;
        MutedStderr(true)
    }
}

/// Duplicates fd 2 and points it at /dev/null; the duplicate, if both
/// descriptors could be had.
fn point_stderr_at_null() -> Option<i32> {
    // SAFETY: plain descriptor calls; fd 2 is restored by the last drop.
    unsafe {
        let saved = libc::dup(2);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved < 0 || null < 0 {
            return None;
        }
        libc::dup2(null, 2);
        libc::close(null);
        Some(saved)
    }
}

impl Drop for MutedStderr {
    fn drop(&mut self) {
        if !self.0 {
            return;
        }
        let mut muted = MUTED.lock().unwrap_or_else(|p| p.into_inner());
        muted.0 -= 1;
        if muted.0 > 0 {
            return;
        }
        if let Some(saved) = muted.1.take() {
            // SAFETY: `saved` is the descriptor duplicated by the first search.
            unsafe {
                libc::dup2(saved, 2);
                libc::close(saved);
            }
        }
    }
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        loom::model::Builder::new().check(|| {});
        let mut config = shuttle::Config::new();
        config.silence_warnings = true;
        config.failure_persistence = shuttle::FailurePersistence::None;
        shuttle::Runner::new(shuttle::scheduler::RandomScheduler::new(1), config).run(|| {});
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let searching = DEPTH.with(Cell::get) > 0 || vfsmc_model::driver::active();
            if !searching {
                previous(info);
            }
        }));
    });
}

/// Runs a search with panics silenced on this OS thread.
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    install();
    let outermost = DEPTH.with(|d| d.replace(d.get() + 1)) == 0;
    let _leave = Leave;
    let _muted = if outermost {
        Some(MutedStderr::new())
    } else {
        None
    };
    f()
}

/// Runs one engine run on an OS thread of its own, silenced, and returns
/// what it returned (its panic, resumed here).
///
/// The model's guards ask `std::thread::panicking()` whether the task they
/// run on is unwinding, so that a drop during a violation makes no engine
/// operation. That answer is the OS thread's panic count, and shuttle
/// leaks it: when an execution fails while a task that switched out is still
/// unwinding, teardown abandons that task's stack mid-unwind
/// (shuttle-engine 0.1.8, `runtime/execution.rs`, `tear_down`), so the count
/// stays raised for every later run on the thread, whose guards then drop
/// steps (a replay once lost a `spin_unlock`). A fresh thread per run keeps
/// one run's failure out of the next.
pub fn on_own_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        let run = std::thread::Builder::new()
            .name("vfsmc-run".into())
            .stack_size(crate::pool::WORKER_STACK)
            .spawn_scoped(s, || quietly(f))
            .expect("an OS thread for an engine run");
        run.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}
