//! One process-wide panic hook for both engines.
//!
//! loom (through its coroutine crate) and shuttle each install a global hook
//! the first time they run; shuttle's prints a schedule for every failing
//! execution. Violations are our own reports, with their trace, so while a
//! search runs on this OS thread every panic is silent. The engines' hooks
//! are installed first (by running each engine once on an empty model) and
//! ours goes on top; outside a search, panics reach the previous hooks.

use std::cell::Cell;
use std::sync::Once;

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
            let searching = DEPTH.with(Cell::get) > 0 || vfsmc_model::exec::active();
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
    DEPTH.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}
