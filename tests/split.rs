//! One loom search split by its schedule prefix (vendor/loom/VFSMC-PATCHES.md
//! section 2) is the unsplit search, divided: on six scenarios of five
//! models (holding at a bound, holding unbounded, a weak-memory bug, bugs
//! that need two preemptions) the parts of a split into N = 1, 2, 3, 4
//! together explore exactly the executions the unsplit search explores (the
//! same set of fingerprints), at most 15 % more executions in total, and
//! `vfsmc merge`'s combination of them gives the unsplit verdict and the
//! same shortest trace.
//!
//! The parts explore more than the unsplit search only where two of them
//! found the same alternative of the prefix on their own, and each explored
//! it; the split enumerates nothing DPOR does not choose (docs/engines.md
//! has the measurements).

mod common;

use std::collections::BTreeSet;

use vfsmc::check::{snapshot_text, Check, Report, Verdict};
use vfsmc::engine::{self, EngineKind, Part};
use vfsmc::shard;

/// (model, variant, scenario, preemption bound if not the scenario's): what
/// each row stands for is in its comment.
const ROWS: [(&str, &str, &str, Option<usize>); 6] = [
    // holds at preemption bound 3
    ("fdtable", "current", "churn", None),
    // holds unbounded
    ("freelist", "classic", "slowpath", None),
    // holds at bound 1, a third model
    ("open_creat", "current", "excl-vs-excl", None),
    // a weak-memory outcome (store→load message passing without ordering)
    ("litmus", "MP+poonceonces", "litmus", None),
    // needs two preemptions
    ("freelist", "prefetch-loads-next-early", "two-tasks", None),
    // needs two preemptions (holds at bound 1), searched at 2: at its
    // scenario's bound 3 the parts the bug is not in explore most of the
    // 395,877 executions of the holding search, a minute of this test
    (
        "unlazy",
        "mntput-legitimize-race-2018",
        "umount-vs-walk",
        Some(2),
    ),
];

fn check(model: &str, variant: &str, scenario: &str) -> Check {
    let m = common::model(model);
    let v = m.variant(variant).expect("a registered variant");
    let s = m.scenario(scenario).expect("a registered scenario");
    Check::new(m, v, s, EngineKind::Loom)
}

/// A row's check, at the row's bound where it names one.
fn row_check((model, variant, scenario, bound): (&str, &str, &str, Option<usize>)) -> Check {
    let mut c = check(model, variant, scenario);
    if bound.is_some() {
        c.budget.max_preemptions = bound;
    }
    c
}

/// Part `index` of `count` of `c`.
fn part(c: &Check, index: usize, count: usize) -> Check {
    let mut p = c.clone();
    p.budget.part = Some(Part { index, count });
    p
}

/// What a search explored: its executions, and the fingerprint of every
/// one of them.
struct Explored {
    executions: usize,
    fingerprints: BTreeSet<u64>,
}

/// What `c`'s search explores at its bound.
fn fingerprints(c: &Check) -> Explored {
    let mut budget = c.budget.clone();
    budget.fingerprints = true;
    let e = engine::explore(c.engine, &budget, c.body());
    assert!(e.failure.is_none(), "a holding row's search fails");
    Explored {
        executions: e.executions,
        fingerprints: e.fingerprints.expect("fingerprints asked for"),
    }
}

/// What the parts of `c` split into `n` explore: their executions summed,
/// their fingerprints united.
fn parts_explore(c: &Check, n: usize) -> Explored {
    let mut all = Explored {
        executions: 0,
        fingerprints: BTreeSet::new(),
    };
    for k in 0..n {
        let part = fingerprints(&part(c, k, n));
        all.executions += part.executions;
        all.fingerprints.extend(part.fingerprints);
    }
    all
}

/// Checks that the parts of `c` split into `n` explore exactly the
/// executions of `whole`, and returns their executions in all.
fn assert_parts_are_the_search(c: &Check, whole: &Explored, n: usize, what: &str) -> usize {
    let parts = parts_explore(c, n);
    let missed = whole.fingerprints.difference(&parts.fingerprints).count();
    let extra = parts.fingerprints.difference(&whole.fingerprints).count();
    assert_eq!(
        (missed, extra),
        (0, 0),
        "{what} in {n} parts: (executions of the unsplit search explored by no part, \
         executions of the parts the unsplit search does not explore)"
    );
    parts.executions
}

#[test]
fn the_parts_of_a_holding_search_explore_exactly_the_unsplit_one() {
    for row @ (model, variant, scenario, _) in ROWS {
        let c = row_check(row);
        if c.run().unwrap().verdict != Verdict::Holds {
            continue;
        }
        let whole = fingerprints(&c);
        let unsplit = whole.executions;
        let what = format!("{model}/{variant} [{scenario}]");
        for n in 1..=4 {
            let total = assert_parts_are_the_search(&c, &whole, n, &what);
            if n == 1 {
                assert_eq!(total, unsplit, "{what}: one part runs the unsplit search");
            }
            let ratio = total as f64 / unsplit as f64;
            println!(
                "{model}/{variant} [{scenario}] {n} parts: {total} executions, unsplit {unsplit} \
                 ({ratio:.3}x)"
            );
            assert!(
                ratio <= 1.15,
                "{model}/{variant} [{scenario}] in {n} parts explores {total} executions, \
                 {ratio:.3}x the unsplit {unsplit}"
            );
        }
    }
}

/// The deep tier's prefix: `--split-depth` and `--split-extend` of its
/// nightly job (`.github/workflows/vfsmc.yml`, `deploy/k8s/deep-tier.yaml`).
const DEEP_DEPTH: usize = 64;
const DEEP_EXTEND: usize = 32;

/// At the deep tier's depth, where a prefix holds most of an execution's
/// choice points, the parts of each holding row under a preemption bound
/// still explore exactly the executions of the unsplit search.
#[test]
fn a_deep_split_explores_exactly_the_unsplit_search() {
    for row @ (model, variant, scenario, _) in ROWS {
        let mut c = row_check(row);
        c.budget.split_depth = DEEP_DEPTH;
        c.budget.split_extend = DEEP_EXTEND;
        let whole = c.run().unwrap();
        if whole.verdict != Verdict::Holds || whole.max_preemptions.is_none() {
            continue;
        }
        let what = format!("{model}/{variant} [{scenario}] at depth {DEEP_DEPTH} + {DEEP_EXTEND}");
        let whole = fingerprints(&c);
        for n in [1, 3] {
            assert_parts_are_the_search(&c, &whole, n, &what);
        }
    }
}

/// The combined report of `c` split into `n` parts, as `vfsmc merge` makes it.
fn split_report(c: &Check, n: usize) -> Report {
    let reports = (0..n).map(|k| part(c, k, n).run().unwrap()).collect();
    shard::combine(reports)
}

#[test]
fn a_split_search_gives_the_unsplit_verdict_and_shortest_trace() {
    for row @ (model, variant, scenario, _) in ROWS {
        let c = row_check(row);
        let whole = c.run().unwrap();
        for n in 1..=4 {
            let r = split_report(&c, n);
            let what = format!("{model}/{variant} [{scenario}] in {n} parts");
            assert_eq!(r.verdict, whole.verdict, "{what}: {}", r.text());
            assert_eq!(r.invariant, whole.invariant, "{what}");
            assert_eq!(r.max_preemptions, whole.max_preemptions, "{what}");
            assert_eq!(r.exhaustive, whole.exhaustive, "{what}");
            if whole.record.is_some() {
                assert_eq!(snapshot_text(&r), snapshot_text(&whole), "{what}");
            }
        }
    }
}

#[test]
fn every_part_reports_the_same_subtrees_and_probes() {
    let c = check("fdtable", "current", "churn");
    let n = 3;
    let reports: Vec<Report> = (0..n).map(|k| part(&c, k, n).run().unwrap()).collect();
    let subtrees = reports[0].subtrees;
    assert!(subtrees >= n, "{subtrees} subtrees: too few to divide");
    for r in &reports {
        // Every part runs the first execution of every subtree to learn
        // its prefix: its own as the first of its search, the others' as
        // probes.
        assert_eq!(r.subtrees, subtrees, "{}", r.summary());
    }
    // Each subtree is one part's: the others probe it.
    let owned: usize = reports.iter().map(|r| r.subtrees - r.probes).sum();
    assert_eq!(owned, subtrees);
}

/// An optimal search split at a choice depth is the unsplit search,
/// partitioned: the parts' own executions are disjoint, together they are
/// exactly the unsplit search's, and the combined verdict is the unsplit
/// one (two holding rows, a bug).
#[test]
fn the_parts_of_an_optimal_search_partition_the_unsplit_one() {
    let rows = [
        ("fdtable", "current", "fork-vs-expand", 12, 3),
        ("freelist", "classic", "slowpath", 4, 2),
        ("litmus", "MP+poonceonces", "litmus", 2, 2),
    ];
    for (model, variant, scenario, depth, n) in rows {
        let mut c = check(model, variant, scenario);
        c.engine = EngineKind::Optimal;
        // Unbounded, as the registry runs it (the scenario bound is loom's).
        c.budget.max_preemptions = None;
        c.budget.optimal_split_depth = depth;
        let whole = c.run().unwrap();
        let what = format!("{model}/{variant} [{scenario}] in {n} parts at depth {depth}");
        let r = split_report(&c, n);
        assert_eq!(
            (r.verdict, &r.invariant),
            (whole.verdict, &whole.invariant),
            "{what}"
        );
        if whole.verdict != Verdict::Holds {
            continue;
        }
        let whole = fingerprints(&c);
        let parts = parts_explore(&c, n);
        assert_eq!(parts.executions, whole.executions, "{what}: executions");
        assert_eq!(
            parts.fingerprints, whole.fingerprints,
            "{what}: fingerprints"
        );
    }
}
