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
use std::sync::Once;

/// Whether searches also mute file descriptor 2 (the CLI asks for it).
static MUTE_STDERR: AtomicBool = AtomicBool::new(false);

/// shuttle prints "test panicked in task …" and "failing seed" straight to
/// stderr for every failing execution, outside any hook; a CLI user gets the
/// trace and replay line instead. Called once by the CLI, never by tests
/// (libtest captures those prints per test already).
pub fn mute_engine_stderr() {
    MUTE_STDERR.store(true, Ordering::Relaxed);
}

/// Points fd 2 at /dev/null until dropped.
struct MutedStderr(Option<i32>);

impl MutedStderr {
    fn new() -> MutedStderr {
        if !MUTE_STDERR.load(Ordering::Relaxed) {
            return MutedStderr(None);
        }
        // SAFETY: plain descriptor calls; fd 2 is restored in `drop`.
        unsafe {
            let saved = libc::dup(2);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if saved < 0 || null < 0 {
                return MutedStderr(None);
            }
            libc::dup2(null, 2);
            libc::close(null);
            MutedStderr(Some(saved))
        }
    }
}

impl Drop for MutedStderr {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: `saved` is the descriptor duplicated in `new`.
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
