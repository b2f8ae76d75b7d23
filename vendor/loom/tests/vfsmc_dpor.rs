//! vfsmc patch (see VFSMC-PATCHES.md): a thread that loads an atomic and then
//! stores to it must not hide another thread's earlier load of it from DPOR.
#![deny(warnings, rust_2018_idioms)]

use loom::sync::atomic::AtomicUsize;
use loom::thread;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
// Not loom's `Arc`: its reference counts are scheduling points whose races
// would add the missing interleavings by another route.
use std::sync::{Arc, Mutex};

/// Every value `body` returns over a whole (unbounded) exploration.
fn outcomes(body: fn() -> Vec<usize>) -> BTreeSet<Vec<usize>> {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let s = seen.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = None;
    builder.check(move || {
        let v = body();
        s.lock().unwrap().insert(v);
    });
    let seen = seen.lock().unwrap();
    seen.clone()
}

/// tokio-rs/loom#392: the spawned thread loads `a` before storing to it; the
/// main thread's load may run after that store.
#[test]
fn first_op_load_does_not_hide_the_store() {
    let seen = outcomes(|| {
        let a1 = Arc::new(AtomicUsize::new(0));
        let a2 = a1.clone();
        let th = thread::spawn(move || {
            let _ = a1.load(Relaxed);
            a1.store(1, Relaxed);
        });
        let v = a2.load(Relaxed);
        th.join().unwrap();
        vec![v]
    });
    assert_eq!(seen, [vec![0], vec![1]].into_iter().collect());
}

/// Message passing where the writer reads its flag before storing it
/// (tokio-rs/loom#166): the reader may see the flag without the data, as it
/// may when the writer stores the flag without reading it first.
fn message_passing(read_flag_first: bool) -> BTreeSet<Vec<usize>> {
    let body = if read_flag_first {
        || mp(true)
    } else {
        || mp(false)
    };
    outcomes(body)
}

fn mp(read_flag_first: bool) -> Vec<usize> {
    let data = Arc::new(AtomicUsize::new(0));
    let flag = Arc::new(AtomicUsize::new(0));
    let (d, f) = (data.clone(), flag.clone());
    let th = thread::spawn(move || {
        d.store(1, Relaxed);
        let old = if read_flag_first { f.load(Relaxed) } else { 0 };
        f.store(old | 1, Relaxed);
    });
    let r0 = flag.load(Relaxed);
    let r1 = data.load(Relaxed);
    th.join().unwrap();
    vec![r0, r1]
}

#[test]
fn a_load_before_a_store_hides_no_outcome() {
    let without = message_passing(false);
    assert!(without.contains(&vec![1, 0]));
    assert_eq!(message_passing(true), without);
}
