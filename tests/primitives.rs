//! The primitives' own tests: the verdict table of the `primitives` model on
//! loom (exhaustive, no preemption bound) and on shuttle PCT, each compared
//! with the registry, and one snapshot of the shortest trace per invariant
//! the model breaks.
//!
//! `seqcount-retry-without-rmb` and `seqcount-begin-without-wmb` are
//! weak-memory bugs: shuttle runs every access sequentially
//! consistently and cannot find them, so the PCT table reports them without
//! judging them.

mod common;

use vfsmc::check::{Report, Verdict};
use vfsmc::engine::EngineKind;

#[test]
fn verdict_table_on_registry_engines() {
    let reports = common::registry_verdicts("primitives");
    let partial: Vec<String> = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Holds && !r.exhaustive)
        .map(Report::text)
        .collect();
    assert!(
        partial.is_empty(),
        "the search did not finish:\n{}",
        partial.join("\n")
    );
}

/// Weak-memory variants are reported, not judged: they need weak memory,
/// which PCT is blind to.
#[test]
fn verdict_table_on_shuttle_pct() {
    let m = common::model("primitives");
    let pct = EngineKind::Pct.engine();
    for v in ["seqcount-retry-without-rmb", "seqcount-begin-without-wmb"] {
        assert!(pct.cannot_judge(m.needs(v)).is_some(), "{v}");
    }
    common::verdicts("primitives", EngineKind::Pct, |c| {
        c.budget.iterations = 2_000
    });
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("primitives");
}

#[test]
fn shortest_trace_per_variant() {
    common::variant_snapshots("primitives");
}

#[test]
fn corpus_replays() {
    common::corpus("primitives");
}

/// The deep tier: the same registry on the scenarios kept out of the PR tier
/// (higher loom bounds), every holding variant proved there.
#[test]
#[ignore = "deep tier: minutes of loom; run with --ignored"]
fn verdict_table_loom_deep() {
    let m = common::model("primitives");
    let checks = vfsmc::check::registry_checks_in(m, EngineKind::Loom, vfsmc_specs::Tier::Deep);
    let table = vfsmc::check::verdict_table(checks);
    assert!(
        table.disagreements.is_empty(),
        "{}",
        table.disagreements.join("\n")
    );
}
