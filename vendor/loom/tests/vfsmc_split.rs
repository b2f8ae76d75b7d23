//! vfsmc patch (see VFSMC-PATCHES.md, section 2): `Builder::split` divides
//! one exhaustive search into disjoint parts that together explore every
//! execution the unsplit search explores.
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

/// The parts of a split at `depth` into `count`, exploring every subtree.
pub(crate) fn parts(depth: usize, count: usize) -> impl Iterator<Item = Split> {
    split_parts(Depth::fixed(depth), count, false)
}

/// The parts of a split at `depth` into `count`, skipping subtrees whose
/// prefixes are equivalent to an earlier one's if `skip_equivalent`.
fn split_parts(depth: Depth, count: usize, skip_equivalent: bool) -> impl Iterator<Item = Split> {
    (0..count).map(move |index| Split {
        depth: depth.choices,
        extend: depth.extend,
        index,
        count,
        skip_equivalent,
    })
}

/// Every part reports the same subtrees (and duplicates) and owns those
/// numbered its index modulo the count, probing each of the others once, or,
/// skipping equivalent prefixes, scouting every subtree and duplicate once.
fn assert_disjoint(name: &str, parts: &[Explored], skip_equivalent: bool) {
    let count = parts.len();
    let subtrees = parts[0].stats.subtrees;
    let duplicates = parts[0].stats.duplicates;
    if !skip_equivalent {
        assert_eq!(duplicates, 0, "{name}");
    }
    for (index, part) in parts.iter().enumerate() {
        let stats = part.stats;
        assert_eq!(
            (stats.subtrees, stats.duplicates),
            (subtrees, duplicates),
            "{name}: part {index}/{count}"
        );
        assert_eq!(
            stats.owned,
            (subtrees + count - 1 - index) / count,
            "{name}: part {index}/{count}"
        );
        let probes = if skip_equivalent {
            subtrees + duplicates
        } else {
            subtrees - stats.owned
        };
        assert_eq!(stats.probes, probes, "{name}: part {index}/{count}");
    }
    let owned: usize = parts.iter().map(|part| part.stats.owned).sum();
    assert_eq!(owned, subtrees, "{name}: {count} parts");
}

/// The parts of every split of `program` explore, between them, the same
/// executions whatever the number of parts, and every execution of the
/// unsplit search.
fn assert_split_covers(program: &Program, bound: Option<usize>) {
    let whole = explore(program, bound, None);
    let unsplit: BTreeSet<_> = whole.fingerprints.iter().collect();
    for depth in DEPTHS {
        let (_, fingerprints) = assert_parts_agree(program, bound, depth, false);
        let union: BTreeSet<_> = fingerprints.iter().collect();
        let name = format!("{} bound {bound:?} depth {depth}", program.name);
        assert!(union.is_superset(&unsplit), "{name}");
    }
}

/// Each thread's part of a fingerprint, thread by thread, then the outcome:
/// what stays the same when independent operations of different threads are
/// reordered. An independent check of the equivalence `rt::class` computes
/// inside loom, which it does not use.
fn behaviour(fingerprint: &Fingerprint) -> Fingerprint {
    let mut events = fingerprint.clone();
    events.sort_by_key(|&(thread, _)| thread);
    events
}

/// Skipping equivalent prefixes, the parts of every split of `program`
/// explore, between them, the same executions whatever the number of parts,
/// no more than the split without skipping, and every behaviour of the
/// unsplit search. Returns the executions of the split at each depth
/// without and with skipping.
fn assert_skipping_covers(program: &Program, bound: Option<usize>) -> Vec<(usize, usize)> {
    let whole = explore(program, bound, None);
    let unsplit: BTreeSet<_> = whole.fingerprints.iter().map(behaviour).collect();
    DEPTHS
        .into_iter()
        .map(|depth| {
            let name = format!("{} bound {bound:?} depth {depth}", program.name);
            let (_, every) = assert_parts_agree(program, bound, depth, false);
            let (_, skipping) = assert_parts_agree(program, bound, depth, true);
            let covered: BTreeSet<_> = skipping.iter().map(behaviour).collect();
            let missed: Vec<_> = unsplit.difference(&covered).collect();
            assert!(missed.is_empty(), "{name}: behaviours missed {missed:?}");
            assert!(skipping.len() <= every.len(), "{name}");
            (every.len(), skipping.len())
        })
        .collect()
}

/// Splits `program` at `depth` into 1 to `MAX_PARTS` parts and checks that
/// the parts are disjoint (`assert_disjoint`) and explore, between them, the
/// same executions whatever their number. Returns the subtrees and the
/// executions' fingerprints, sorted.
fn assert_parts_agree(
    program: &Program,
    bound: Option<usize>,
    depth: Depth,
    skip_equivalent: bool,
) -> (usize, Vec<Fingerprint>) {
    let name = format!(
        "{} bound {bound:?} depth {depth} skipping {skip_equivalent}",
        program.name
    );
    let mut first_split: Option<(usize, Vec<_>)> = None;
    let mut largest_part = 0;
    for count in 1..=MAX_PARTS {
        let explored: Vec<_> = split_parts(depth, count, skip_equivalent)
            .map(|split| explore(program, bound, Some(split)))
            .collect();
        assert_disjoint(&name, &explored, skip_equivalent);
        let subtrees = explored[0].stats.subtrees;
        largest_part = explored
            .iter()
            .map(|part| part.stats.executions)
            .max()
            .unwrap();
        let mut fingerprints: Vec<_> = explored
            .into_iter()
            .flat_map(|part| part.fingerprints)
            .collect();
        fingerprints.sort();
        // Each part explores its subtrees as the single part does.
        let first = first_split.get_or_insert_with(|| (subtrees, fingerprints.clone()));
        assert_eq!(*first, (subtrees, fingerprints), "{name}: {count} parts");
    }
    let (subtrees, fingerprints) = first_split.unwrap();
    println!(
        "{name}: {subtrees} subtrees, {} executions, largest of {MAX_PARTS} parts {largest_part}",
        fingerprints.len()
    );
    (subtrees, fingerprints)
}

#[test]
fn parts_cover_the_unsplit_search_unbounded() {
    for program in ALL {
        assert_split_covers(program, None);
    }
}

#[test]
fn parts_cover_the_unsplit_search_bounded() {
    for program in ALL {
        for bound in [Some(1), Some(2)] {
            assert_split_covers(program, bound);
        }
    }
}

/// Some part fails exactly when the unsplit search does, whether or not
/// the split skips equivalent prefixes.
fn assert_verdict(program: &Program, bound: Option<usize>, buggy: bool) {
    let name = format!("{} bound {bound:?}", program.name);
    assert_eq!(fails(program, bound, None), buggy, "{name}: unsplit");
    for depth in DEPTHS {
        for count in 1..=MAX_PARTS {
            for skip in [false, true] {
                let failing = split_parts(depth, count, skip)
                    .filter(|&split| fails(program, bound, Some(split)))
                    .count();
                assert_eq!(
                    failing > 0,
                    buggy,
                    "{name} depth {depth} skipping {skip}: {count} parts"
                );
            }
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
                duplicates: 0,
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
            skip_equivalent: false,
        }),
        Some(Split {
            depth: 2,
            extend: 0,
            index: 1,
            count: 3,
            skip_equivalent: true,
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

/// Without a preemption bound a split search enumerates no branch whose
/// default thread performs no operation; DPOR adds an alternative to one only
/// when a race in a critical section backtracks past the section, and a split
/// search refuses that rather than let the parts disagree on their subtrees.
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
#[should_panic(expected = "does not support races in critical sections")]
fn an_unbounded_split_refuses_a_race_in_a_critical_section() {
    explore(&CRITICAL_SECTION, None, parts(1, 1).next());
}

#[test]
fn a_bounded_split_supports_a_race_in_a_critical_section() {
    assert_split_covers(&CRITICAL_SECTION, Some(1));
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

/// Skipping subtrees whose prefixes are equivalent (VFSMC-PATCHES.md,
/// section 5) keeps every behaviour of the unsplit search, in every program,
/// under every bound, at every depth, and the parts still agree; it explores
/// fewer executions than the split that enumerates every subtree (and, on
/// these programs, never more).
#[test]
fn skipping_equivalent_prefixes_keeps_every_behaviour() {
    let mut saved = 0;
    for program in ALL.into_iter().chain([&CRITICAL_SECTION]) {
        for bound in [Some(0), Some(1), Some(2), None] {
            if program.name == CRITICAL_SECTION.name && bound.is_none() {
                continue;
            }
            for (every, skipping) in assert_skipping_covers(program, bound) {
                saved += every - skipping;
            }
        }
    }
    assert!(saved > 0, "no split skipped an execution");
}

/// With preemptions left, an extended prefix goes deeper, so it divides a
/// bounded search into more subtrees than the prefix of the same depth
/// without extension (and the tests above check that its parts still cover
/// the unsplit search).
#[test]
fn an_extended_prefix_divides_a_bounded_search_further() {
    let subtrees = |depth| {
        let split = split_parts(depth, 1, true).next().unwrap();
        explore(&COUNTER, Some(2), Some(split)).stats.subtrees
    };
    let fixed = subtrees(Depth::fixed(1));
    let extended = subtrees(Depth::extended(1, 2));
    assert!(
        extended > fixed,
        "{extended} subtrees extended, {fixed} not"
    );
}
