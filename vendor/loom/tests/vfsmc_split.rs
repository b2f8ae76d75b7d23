//! vfsmc patch (see VFSMC-PATCHES.md, section 2): `Builder::split` divides
//! one exhaustive search into parts that together explore every execution
//! the unsplit search explores, and no other.
#![deny(warnings, rust_2018_idioms)]

use loom::model::{is_probe, Builder, Split, SplitStats};
use loom::sync::atomic::AtomicUsize;
use loom::sync::Mutex;
use loom::thread;

use std::collections::BTreeSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
// Not loom's `Arc`: its reference counts would add branch points of their own.
use std::sync::{Arc, Mutex as StdMutex, Once};

/// What one execution did: each thread's operations and the values they
/// observed, in the order they ran, then the program's outcome.
type Fingerprint = Vec<(usize, usize)>;

/// Thread number standing for the outcome in a fingerprint.
const OUTCOME: usize = usize::MAX;

/// In the message of every assertion the programs are expected to fail.
const BUG: &str = "vfsmc-split expected bug";

/// The events of one execution. loom runs one thread at a time and switches
/// only inside its own operations, so the order of the notes is the order of
/// the operations they follow.
#[derive(Clone)]
struct Log {
    events: Arc<StdMutex<Fingerprint>>,
    probe: bool,
}

impl Log {
    fn new() -> Log {
        Log {
            events: Default::default(),
            probe: is_probe(),
        }
    }

    /// Notes that `thread` observed `value`; checks on the way that every
    /// thread sees the same `is_probe()` throughout the execution.
    fn note(&self, thread: usize, value: usize) {
        assert_eq!(is_probe(), self.probe, "is_probe() changed");
        self.events.lock().unwrap().push((thread, value));
    }

    fn fingerprint(&self, outcome: &[usize]) -> Fingerprint {
        let mut events = self.events.lock().unwrap().clone();
        events.extend(outcome.iter().map(|&value| (OUTCOME, value)));
        events
    }
}

pub(crate) struct Program {
    pub(crate) name: &'static str,
    body: fn(&Log) -> Vec<usize>,
    /// Whether an outcome is a bug.
    bug: fn(&[usize]) -> bool,
}

const MESSAGE_PASSING: Program = Program {
    name: "message_passing",
    body: message_passing,
    bug: |outcome| outcome != [1],
};

const COUNTER: Program = Program {
    name: "counter",
    body: counter,
    bug: |outcome| outcome != [3],
};

const MUTEX: Program = Program {
    name: "mutex",
    body: mutex,
    bug: |outcome| outcome != [2],
};

const LOST_UPDATE: Program = Program {
    name: "lost_update",
    body: lost_update,
    bug: |outcome| outcome != [2],
};

const TWO_PREEMPTIONS: Program = Program {
    name: "two_preemptions",
    body: two_preemptions,
    bug: |outcome| outcome == [1, 2],
};

const STORE_BUFFERING: Program = Program {
    name: "store_buffering",
    body: store_buffering,
    bug: |outcome| outcome == [0, 0],
};

/// Release/acquire message passing, the reader spinning with `yield_now`.
fn message_passing(log: &Log) -> Vec<usize> {
    let data = Arc::new(AtomicUsize::new(0));
    let flag = Arc::new(AtomicUsize::new(0));
    let (d, f, l) = (data.clone(), flag.clone(), log.clone());
    let writer = thread::spawn(move || {
        d.store(1, Relaxed);
        l.note(1, 1);
        f.store(1, Release);
        l.note(1, 2);
    });
    while flag.load(Acquire) == 0 {
        log.note(0, 0);
        thread::yield_now();
    }
    let seen = data.load(Relaxed);
    log.note(0, seen);
    writer.join().unwrap();
    vec![seen]
}

/// Three threads increment a counter: `fetch_add` and a `compare_exchange`
/// loop.
fn counter(log: &Log) -> Vec<usize> {
    let n = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (1..=3)
        .map(|t| {
            let (n, l) = (n.clone(), log.clone());
            thread::spawn(move || match t {
                1 => l.note(t, n.fetch_add(1, AcqRel)),
                2 => l.note(t, n.fetch_add(1, SeqCst)),
                _ => {
                    let mut cur = n.load(Relaxed);
                    l.note(t, cur);
                    while let Err(actual) = n.compare_exchange(cur, cur + 1, AcqRel, Relaxed) {
                        l.note(t, actual);
                        cur = actual;
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    vec![n.load(Acquire)]
}

/// Two threads increment a counter under a mutex.
fn mutex(log: &Log) -> Vec<usize> {
    let m = Arc::new(Mutex::new(0));
    let (m2, l) = (m.clone(), log.clone());
    let th = thread::spawn(move || {
        let mut v = m2.lock().unwrap();
        l.note(1, *v);
        *v += 1;
    });
    {
        let mut v = m.lock().unwrap();
        log.note(0, *v);
        *v += 1;
    }
    th.join().unwrap();
    let v = *m.lock().unwrap();
    vec![v]
}

/// Two threads increment with a load and a store: one preemption loses an
/// update.
fn lost_update(log: &Log) -> Vec<usize> {
    let n = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (1..=2)
        .map(|t| {
            let (n, l) = (n.clone(), log.clone());
            thread::spawn(move || {
                let v = n.load(SeqCst);
                l.note(t, v);
                n.store(v + 1, SeqCst);
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    vec![n.load(SeqCst)]
}

/// The reader sees both of the writer's values only if each thread preempts
/// the other once.
fn two_preemptions(log: &Log) -> Vec<usize> {
    let m = Arc::new(Mutex::new(0));
    let (m2, l) = (m.clone(), log.clone());
    let reader = thread::spawn(move || {
        let r1 = *m2.lock().unwrap();
        l.note(1, r1);
        let r2 = *m2.lock().unwrap();
        l.note(1, r2);
        vec![r1, r2]
    });
    *m.lock().unwrap() = 1;
    log.note(0, 1);
    *m.lock().unwrap() = 2;
    log.note(0, 2);
    reader.join().unwrap()
}

/// Store buffering with relaxed atomics: both loads may read 0.
fn store_buffering(log: &Log) -> Vec<usize> {
    let x = Arc::new(AtomicUsize::new(0));
    let y = Arc::new(AtomicUsize::new(0));
    let (x2, y2, l) = (x.clone(), y.clone(), log.clone());
    let th = thread::spawn(move || {
        y2.store(1, Relaxed);
        let r = x2.load(Relaxed);
        l.note(1, r);
        r
    });
    x.store(1, Relaxed);
    let r0 = y.load(Relaxed);
    log.note(0, r0);
    let r1 = th.join().unwrap();
    vec![r0, r1]
}

const CORRECT: [&Program; 3] = [&MESSAGE_PASSING, &COUNTER, &MUTEX];
pub(crate) const ALL: [&Program; 6] = [
    &MESSAGE_PASSING,
    &COUNTER,
    &MUTEX,
    &LOST_UPDATE,
    &TWO_PREEMPTIONS,
    &STORE_BUFFERING,
];

const BOUNDS: [Option<usize>; 3] = [None, Some(1), Some(2)];
const DEPTHS: [Depth; 7] = [
    Depth::fixed(1),
    Depth::fixed(2),
    Depth::fixed(3),
    Depth::fixed(4),
    Depth::fixed(8),
    Depth::extended(1, 2),
    Depth::extended(2, 4),
];

/// How deep a split's prefixes go: `choices` choice points, and `extend`
/// more for each preemption left beyond one (`Split::extend`).
#[derive(Clone, Copy, Debug)]
struct Depth {
    choices: usize,
    extend: usize,
}

impl Depth {
    const fn fixed(choices: usize) -> Depth {
        Depth::extended(choices, 0)
    }

    const fn extended(choices: usize, extend: usize) -> Depth {
        Depth { choices, extend }
    }
}

impl std::fmt::Display for Depth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.choices)?;
        if self.extend > 0 {
            write!(f, " + {} per preemption left", self.extend)?;
        }
        Ok(())
    }
}

const MAX_PARTS: usize = 4;

/// What a search (or one part of it) explored.
pub(crate) struct Explored {
    pub(crate) stats: SplitStats,
    /// Fingerprints of the executions that are not probes, sorted.
    fingerprints: Vec<Fingerprint>,
}

fn builder(bound: Option<usize>, split: Option<Split>) -> Builder {
    let mut builder = Builder::new();
    builder.preemption_bound = bound;
    builder.split = split;
    builder
}

/// Explores `program`, ignoring its bugs.
pub(crate) fn explore(program: &Program, bound: Option<usize>, split: Option<Split>) -> Explored {
    let seen = Arc::new(StdMutex::new(Vec::new()));
    let probes = Arc::new(StdMutex::new(0));
    let (s, p, body) = (seen.clone(), probes.clone(), program.body);
    let stats = builder(bound, split).check_split(move || {
        let log = Log::new();
        let outcome = body(&log);
        if is_probe() {
            *p.lock().unwrap() += 1;
        } else {
            s.lock().unwrap().push(log.fingerprint(&outcome));
        }
    });
    let mut fingerprints = seen.lock().unwrap().clone();
    fingerprints.sort();
    assert_eq!(fingerprints.len(), stats.executions, "{}", program.name);
    assert_eq!(*probes.lock().unwrap(), stats.probes, "{}", program.name);
    Explored {
        stats,
        fingerprints,
    }
}

/// Whether checking `program` fails: some execution reaches a bug.
fn fails(program: &Program, bound: Option<usize>, split: Option<Split>) -> bool {
    quiet_expected_panics();
    let (name, body, bug) = (program.name, program.body, program.bug);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        builder(bound, split).check(move || {
            let outcome = body(&Log::new());
            assert!(!bug(&outcome), "{BUG}: {name} reached {outcome:?}");
        })
    }));
    match result {
        Ok(()) => false,
        Err(payload) if message(&*payload).contains(BUG) => true,
        Err(payload) => panic::resume_unwind(payload),
    }
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else {
        String::new()
    }
}

/// Keeps the expected failures off stderr; every other panic is reported.
fn quiet_expected_panics() {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let report = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !message(info.payload()).contains(BUG) {
                report(info);
            }
        }));
    });
}

/// The parts of a split at `depth` into `count`.
pub(crate) fn parts(depth: usize, count: usize) -> impl Iterator<Item = Split> {
    split_parts(Depth::fixed(depth), count)
}

/// The parts of a split at `depth` into `count`.
fn split_parts(depth: Depth, count: usize) -> impl Iterator<Item = Split> {
    (0..count).map(move |index| Split {
        depth: depth.choices,
        extend: depth.extend,
        index,
        count,
    })
}

/// Every part reports the same subtrees and owns those numbered its index
/// modulo the count, probing each of the others once.
fn assert_disjoint(name: &str, parts: &[Explored]) {
    let count = parts.len();
    let subtrees = parts[0].stats.subtrees;
    for (index, part) in parts.iter().enumerate() {
        let stats = part.stats;
        assert_eq!(stats.subtrees, subtrees, "{name}: part {index}/{count}");
        assert_eq!(
            stats.owned,
            (subtrees + count - 1 - index) / count,
            "{name}: part {index}/{count}"
        );
        assert_eq!(
            stats.probes,
            subtrees - stats.owned,
            "{name}: part {index}/{count}"
        );
    }
    let owned: usize = parts.iter().map(|part| part.stats.owned).sum();
    assert_eq!(owned, subtrees, "{name}: {count} parts");
}

/// The parts of every split of `program` explore, between them, exactly the
/// executions of the unsplit search: one part explores each of them once;
/// more parts explore each at least once and nothing else, and only an
/// execution below an alternative a part added on its own (`private`) more
/// than once. Returns the private executions of all splits.
fn assert_split_covers(program: &Program, bound: Option<usize>) -> usize {
    let whole = explore(program, bound, None);
    let unsplit: BTreeSet<_> = whole.fingerprints.iter().collect();
    let mut private = 0;
    for depth in DEPTHS {
        for count in 1..=MAX_PARTS {
            let name = format!(
                "{} bound {bound:?} depth {depth}: {count} parts",
                program.name
            );
            let explored: Vec<_> = split_parts(depth, count)
                .map(|split| explore(program, bound, Some(split)))
                .collect();
            assert_disjoint(&name, &explored);
            let shared: usize = explored
                .iter()
                .map(|part| part.stats.executions - part.stats.private)
                .sum();
            private += explored
                .iter()
                .map(|part| part.stats.private)
                .sum::<usize>();
            let fingerprints: Vec<_> = explored
                .iter()
                .flat_map(|part| &part.fingerprints)
                .collect();
            let union: BTreeSet<_> = fingerprints.iter().copied().collect();
            assert_eq!(union, unsplit, "{name}");
            let executions = whole.fingerprints.len();
            assert!(
                shared <= executions,
                "{name}: {shared} shared of {executions}"
            );
            if count == 1 {
                assert_eq!(explored[0].fingerprints, whole.fingerprints, "{name}");
            }
        }
    }
    private
}

/// The parts of a split explore alternatives of the prefix that only their
/// own races found, and still cover the unsplit search exactly
/// (`assert_split_covers`): without such alternatives, or with them
/// explored by nobody, the parts would miss executions.
#[test]
fn parts_cover_the_unsplit_search_unbounded() {
    let private: usize = ALL
        .into_iter()
        .map(|program| assert_split_covers(program, None))
        .sum();
    assert!(private > 0, "no part explored an alternative of its own");
}

#[test]
fn parts_cover_the_unsplit_search_bounded() {
    let private: usize = ALL
        .into_iter()
        .flat_map(|program| [Some(1), Some(2)].map(|bound| (program, bound)))
        .map(|(program, bound)| assert_split_covers(program, bound))
        .sum();
    assert!(private > 0, "no part explored an alternative of its own");
}

/// Some part fails exactly when the unsplit search does.
fn assert_verdict(program: &Program, bound: Option<usize>, buggy: bool) {
    let name = format!("{} bound {bound:?}", program.name);
    assert_eq!(fails(program, bound, None), buggy, "{name}: unsplit");
    for depth in DEPTHS {
        for count in 1..=MAX_PARTS {
            let failing = split_parts(depth, count)
                .filter(|&split| fails(program, bound, Some(split)))
                .count();
            assert_eq!(failing > 0, buggy, "{name} depth {depth}: {count} parts");
        }
    }
}

#[test]
fn correct_programs_hold_in_every_part() {
    for program in CORRECT {
        for bound in BOUNDS {
            assert_verdict(program, bound, false);
        }
    }
}

#[test]
fn a_lost_update_fails_in_some_part() {
    for bound in BOUNDS {
        assert_verdict(&LOST_UPDATE, bound, true);
    }
}

#[test]
fn a_bug_behind_two_preemptions_fails_in_some_part_within_the_bound() {
    assert_verdict(&TWO_PREEMPTIONS, None, true);
    assert_verdict(&TWO_PREEMPTIONS, Some(1), false);
    assert_verdict(&TWO_PREEMPTIONS, Some(2), true);
}

#[test]
fn store_buffering_fails_in_some_part() {
    for bound in BOUNDS {
        assert_verdict(&STORE_BUFFERING, bound, true);
    }
}

/// Executions of the unsplit search of each program, by bound (`None`,
/// `Some(1)`, `Some(2)`), as loom explored them before the split existed.
const UNSPLIT_EXECUTIONS: [(&str, [usize; 3]); 6] = [
    ("message_passing", [12, 5, 10]),
    ("counter", [1834, 31, 167]),
    ("mutex", [4, 2, 4]),
    ("lost_update", [72, 14, 40]),
    ("two_preemptions", [14, 3, 9]),
    ("store_buffering", [30, 8, 22]),
];

#[test]
fn an_unsplit_search_is_unchanged() {
    for (program, (name, counts)) in ALL.into_iter().zip(UNSPLIT_EXECUTIONS) {
        assert_eq!(program.name, name);
        for (bound, expected) in BOUNDS.into_iter().zip(counts) {
            let checked = Arc::new(StdMutex::new(0));
            let (c, body) = (checked.clone(), program.body);
            builder(bound, None).check(move || {
                body(&Log::new());
                *c.lock().unwrap() += 1;
            });
            let explored = explore(program, bound, None);
            let expected_stats = SplitStats {
                subtrees: 1,
                owned: 1,
                executions: expected,
                probes: 0,
                private: 0,
            };
            assert_eq!(*checked.lock().unwrap(), expected, "{name} {bound:?}");
            assert_eq!(explored.stats, expected_stats, "{name} {bound:?}");
            // A prefix of no choice points is the unsplit search.
            let depth0 = explore(program, bound, Some(parts(0, 1).next().unwrap()));
            assert_eq!(depth0.stats, expected_stats, "{name} {bound:?}");
            assert_eq!(depth0.fingerprints, explored.fingerprints, "{name}");
        }
    }
}

/// `max_permutations` counts every execution, probes included.
#[test]
fn max_permutations_bounds_a_part() {
    for split in [
        None,
        Some(Split {
            depth: 2,
            extend: 0,
            index: 1,
            count: 3,
        }),
    ] {
        let mut builder = builder(None, split);
        builder.checkpoint_interval = 1;
        builder.max_permutations = Some(5);
        let stats = builder.check_split(|| {
            counter(&Log::new());
        });
        assert_eq!(stats.executions + stats.probes, 4, "{split:?}");
    }
}

/// A race after a critical section backtracks past the section to the
/// nearest branch point that explores, which may be any branch of the prefix,
/// even one that counts as no choice point (without a bound, a branch whose
/// default thread performs no operation there).
fn race_after_a_critical_section(log: &Log) -> Vec<usize> {
    let x = Arc::new(AtomicUsize::new(0));
    let (x1, x2, l) = (x.clone(), x.clone(), log.clone());
    let writer = thread::spawn(move || {
        loom::stop_exploring();
        x1.store(1, Relaxed);
        loom::explore();
    });
    let reader = thread::spawn(move || l.note(2, x2.load(Relaxed)));
    writer.join().unwrap();
    reader.join().unwrap();
    vec![x.load(Relaxed)]
}

const CRITICAL_SECTION: Program = Program {
    name: "critical_section",
    body: race_after_a_critical_section,
    bug: |_| false,
};

#[test]
fn a_split_supports_a_race_in_a_critical_section() {
    for bound in [None, Some(1)] {
        assert_split_covers(&CRITICAL_SECTION, bound);
    }
}

/// A bound of 0 is spent from the first schedule, yet its search still
/// divides by the values its loads may read: the spent-bound rule, which
/// ends a prefix once the bound is used up, exempts it (a search that
/// cannot be divided would leave every part but one with nothing to do).
#[test]
fn a_zero_bound_divides_by_its_loads() {
    for program in ALL {
        assert_split_covers(program, Some(0));
    }
    let split = parts(8, 1).next().unwrap();
    let stats = explore(&STORE_BUFFERING, Some(0), Some(split)).stats;
    assert!(
        stats.subtrees > 1,
        "store_buffering at bound 0: {} subtree(s)",
        stats.subtrees
    );
}

/// With preemptions left, an extended prefix goes deeper, so it divides a
/// bounded search into more subtrees than the prefix of the same depth
/// without extension (and the tests above check that its parts still cover
/// the unsplit search).
#[test]
fn an_extended_prefix_divides_a_bounded_search_further() {
    let subtrees = |depth| {
        let split = split_parts(depth, 1).next().unwrap();
        explore(&COUNTER, Some(2), Some(split)).stats.subtrees
    };
    let fixed = subtrees(Depth::fixed(1));
    let extended = subtrees(Depth::extended(1, 2));
    assert!(
        extended > fixed,
        "{extended} subtrees extended, {fixed} not"
    );
}
