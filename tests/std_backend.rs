//! The std backend (the stress engine's real threads), in a binary of its
//! own: the OS threads it keeps between executions are shared by the whole
//! process, so a stress search running beside this test would take them.

use vfsmc_model::sync;

/// Runs `f` as a model thread under the std backend and joins it; its panic
/// comes back as the error.
fn on_std<T: Send + 'static>(f: fn() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(|| sync::with_backend(sync::Backend::Std, || sync::spawn(f).join()))
}

/// Model threads run on OS threads kept between executions
/// (`model/rt/src/sync/std_threads.rs`): a model thread's panic comes back
/// on join as a fresh thread's would, and the OS thread that ran a model
/// thread is idle again by the time the join returns, so the next one runs
/// on it (were the joiner woken first, the next spawn could start a new OS
/// thread, and a stress search would keep starting them). With the joiner
/// woken first, the test failed 9 of 20 runs; as it is, 0 of 20.
#[test]
fn model_threads_reuse_the_os_thread_that_ran_the_last_one() {
    let first = on_std(|| std::thread::current().id()).unwrap();
    let panicked = on_std(|| -> u32 { std::panic::panic_any(7u32) });
    let payload = panicked.expect_err("the model thread's panic comes back on join");
    assert_eq!(payload.downcast_ref::<u32>(), Some(&7));
    let next = on_std(|| std::thread::current().id()).unwrap();
    assert_eq!(first, next, "the next model thread ran on a new OS thread");
}
