//! vfsmc patch (see VFSMC-PATCHES.md, 3): `causality::Epoch` answers
//! happens-before queries without panicking and without adding executions.
#![deny(warnings, rust_2018_idioms)]

use loom::causality::Epoch;
use loom::sync::atomic::AtomicUsize;
use loom::thread;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::{self, Acquire, Relaxed, Release};
// Ghost state: not loom's types, which would add operations of their own.
use std::sync::{Arc, Mutex};

/// What the reader saw: the flag, and whether the writer's stamp (if taken
/// yet) happens-before the reader's point after its load.
type Seen = (usize, Option<bool>);

/// Every `Seen` of message passing on one flag, with the writer's stamp
/// taken before or after its store, and how many executions loom ran.
fn message_passing(store: Ordering, load: Ordering, stamp_first: bool) -> (BTreeSet<Seen>, usize) {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let runs = Arc::new(Mutex::new(0));
    let (s, r) = (seen.clone(), runs.clone());
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = None;
    builder.check(move || {
        *r.lock().unwrap() += 1;
        let flag = Arc::new(AtomicUsize::new(0));
        let stamp: Arc<Mutex<Option<Epoch>>> = Arc::new(Mutex::new(None));
        let (f, st) = (flag.clone(), stamp.clone());
        let writer = thread::spawn(move || {
            if stamp_first {
                *st.lock().unwrap() = Some(Epoch::now());
            }
            f.store(1, store);
            if !stamp_first {
                *st.lock().unwrap() = Some(Epoch::now());
            }
        });
        let v = flag.load(load);
        let known = stamp.lock().unwrap().map(|e| e.happens_before_now());
        s.lock().unwrap().insert((v, known));
        writer.join().unwrap();
    });
    let seen = seen.lock().unwrap().clone();
    let runs = *runs.lock().unwrap();
    (seen, runs)
}

#[test]
fn acquire_of_a_release_orders_what_came_before_it() {
    let (seen, _) = message_passing(Release, Acquire, true);
    assert!(seen.contains(&(1, Some(true))), "{seen:?}");
    assert!(!seen.contains(&(1, Some(false))), "{seen:?}");
}

#[test]
fn a_relaxed_flag_orders_nothing() {
    let (seen, _) = message_passing(Relaxed, Relaxed, true);
    assert!(seen.contains(&(1, Some(false))), "{seen:?}");
    assert!(!seen.contains(&(1, Some(true))), "{seen:?}");
}

/// The stamp advances the writer's own clock entry: a point after the
/// release is not known to the thread that acquired it.
#[test]
fn a_point_after_the_release_is_not_ordered() {
    let (seen, _) = message_passing(Release, Acquire, false);
    assert!(seen.iter().all(|s| s.1 != Some(true)), "{seen:?}");
    assert!(seen.contains(&(1, Some(false))), "{seen:?}");
}

/// Stamping is no branch point: the same executions either way.
#[test]
fn stamps_add_no_executions() {
    let (_, with_stamps) = message_passing(Relaxed, Relaxed, true);
    let runs = Arc::new(Mutex::new(0));
    let r = runs.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = None;
    builder.check(move || {
        *r.lock().unwrap() += 1;
        let flag = Arc::new(AtomicUsize::new(0));
        let f = flag.clone();
        let writer = thread::spawn(move || f.store(1, Relaxed));
        let _ = flag.load(Relaxed);
        writer.join().unwrap();
    });
    assert_eq!(with_stamps, *runs.lock().unwrap());
}
