//! Items on a pool of worker threads, results in order.
//!
//! A run's items (a variant on a scenario on an engine, one seed) are
//! independent searches: each engine keeps its state in thread-locals of the
//! OS thread it runs on, so N searches on N threads share nothing but the
//! interned names and the progress counters. [`ordered`] hands item numbers
//! to `jobs` workers as they free up (the slow items of a registry do not
//! wait behind one another) and gives the results to the caller in item
//! order, as each becomes next: what a run prints does not depend on the
//! number of workers or on which finished first.
//!
//! A worker that panics loses only its item: [`guarded`] turns the panic
//! into that item's error, and the run goes on.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// The environment variable that sets the default number of workers.
pub const JOBS_VAR: &str = "VFSMC_JOBS";

/// Stack of a worker: as much as the main thread's, which the engines were
/// measured on (loom's and shuttle's model threads have their own stacks,
/// but the search itself and the shortest-trace pass run on this one).
pub(crate) const WORKER_STACK: usize = 64 << 20;

/// The number of workers: `flag` (`--jobs`), else `VFSMC_JOBS` (as `var`
/// gives it), else the available cores. An error names the source.
pub fn jobs_from(
    flag: Option<usize>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<usize, String> {
    if let Some(n) = flag {
        return positive("--jobs", &n.to_string());
    }
    if let Some(text) = var(JOBS_VAR) {
        return positive(JOBS_VAR, &text);
    }
    Ok(std::thread::available_parallelism().map_or(1, usize::from))
}

/// [`jobs_from`] with the process environment.
pub fn jobs(flag: Option<usize>) -> Result<usize, String> {
    jobs_from(flag, |k| std::env::var(k).ok())
}

fn positive(source: &str, text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{source}={text}: expected a positive number of workers, e.g. 2"
        )),
    }
}

/// Runs `work(0..count)` on `jobs` workers and calls `done(i, result)` on
/// the calling thread for i = 0, 1, … in order, each as soon as it and every
/// item before it have finished. When `done` returns false, items not yet
/// started are skipped and `ordered` returns after the running ones end
/// (their results are dropped). With one job everything runs on the calling
/// thread, item after item.
pub fn ordered<T: Send>(
    jobs: usize,
    count: usize,
    work: impl Fn(usize) -> T + Sync,
    mut done: impl FnMut(usize, T) -> bool,
) {
    if jobs <= 1 || count <= 1 {
        for i in 0..count {
            if !done(i, work(i)) {
                return;
            }
        }
        return;
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|s| {
        for w in 0..jobs.min(count) {
            let (tx, next, stop, work) = (tx.clone(), &next, &stop, &work);
            std::thread::Builder::new()
                .name(format!("vfsmc-worker-{w}"))
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    if tx.send((i, work(i))).is_err() {
                        return;
                    }
                })
                .expect("a worker thread starts");
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut want = 0;
        for (i, r) in rx.iter() {
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&want) {
                if !done(want, r) {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
                want += 1;
            }
        }
    });
}

/// Every item's result, in item order: `work(0..count)` on `jobs` workers.
pub fn all<T: Send>(jobs: usize, count: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = Vec::with_capacity(count);
    ordered(jobs, count, work, |_, r| {
        out.push(r);
        true
    });
    out
}

/// Runs `f`, turning a panic into an error with the panic's message.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_item_order_whatever_the_workers() {
        for jobs in 1..=4 {
            let mut seen = Vec::new();
            ordered(
                jobs,
                20,
                |i| {
                    // Later items finish first.
                    std::thread::sleep(std::time::Duration::from_millis((20 - i as u64) / 4));
                    i * i
                },
                |i, r| {
                    seen.push((i, r));
                    true
                },
            );
            let want: Vec<(usize, usize)> = (0..20).map(|i| (i, i * i)).collect();
            assert_eq!(seen, want, "{jobs} jobs");
        }
    }

    #[test]
    fn all_gives_every_result_in_item_order() {
        for jobs in 1..=3 {
            assert_eq!(
                all(jobs, 7, |i| 10 - i),
                vec![10, 9, 8, 7, 6, 5, 4],
                "{jobs} jobs"
            );
        }
    }

    #[test]
    fn done_returning_false_stops_the_run() {
        for jobs in [1, 3] {
            let mut seen = Vec::new();
            ordered(
                jobs,
                50,
                |i| i,
                |i, _| {
                    seen.push(i);
                    i < 4
                },
            );
            assert_eq!(seen, vec![0, 1, 2, 3, 4], "{jobs} jobs");
        }
    }

    #[test]
    fn a_panicking_item_is_that_items_error() {
        let mut out = Vec::new();
        ordered(
            2,
            3,
            |i| guarded(|| if i == 1 { panic!("item one broke") } else { i }),
            |_, r| {
                out.push(r);
                true
            },
        );
        assert_eq!(out, vec![Ok(0), Err("item one broke".to_string()), Ok(2)]);
    }

    #[test]
    fn jobs_come_from_the_flag_then_the_environment() {
        let env = |v: Option<&'static str>| move |_: &str| v.map(str::to_string);
        assert_eq!(jobs_from(Some(3), env(Some("5"))), Ok(3));
        assert_eq!(jobs_from(None, env(Some("5"))), Ok(5));
        assert!(jobs_from(None, env(None)).unwrap() >= 1);
        let e = jobs_from(None, env(Some("many"))).unwrap_err();
        assert!(
            e.contains("VFSMC_JOBS=many") && e.contains("positive"),
            "{e}"
        );
        assert!(jobs_from(Some(0), env(None))
            .unwrap_err()
            .contains("--jobs=0"));
    }
}
