//! The primitives' own tests: the verdict table of the `primitives` model on
//! loom (exhaustive, no preemption bound) and on shuttle PCT, each compared
//! with the registry, and one snapshot of the shortest trace per invariant
//! the model breaks.
//!
//! `seqcount-retry-without-rmb` and `seqcount-begin-without-wmb` are
//! weak-memory bugs (`LOOM_ONLY`): shuttle runs every access sequentially
//! consistently and cannot find them, so the PCT table reports them without
//! judging them.

use vfsmc::check::{registry_checks, verdict_table, witness_traces, Report, Verdict};
use vfsmc::engine::EngineKind;
use vfsmc_specs::primitives::LOOM_ONLY;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    vfsmc_specs::model("primitives").expect("primitives is registered")
}

#[test]
fn verdict_table_on_loom() {
    let checks = registry_checks(model(), EngineKind::Loom)
        .into_iter()
        .map(|mut c| {
            c.budget.max_preemptions = None;
            c
        });
    let table = verdict_table(checks);
    let partial: Vec<String> = table
        .reports
        .iter()
        .filter(|r| r.verdict == Verdict::Holds && !r.exhaustive)
        .map(Report::text)
        .collect();
    assert!(
        table.disagreements.is_empty() && partial.is_empty(),
        "loom disagrees with the registry:\n{}{}",
        table.disagreements.join("\n"),
        partial.join("\n")
    );
}

/// Weak-memory variants (`LOOM_ONLY`) are reported, not judged: they need
/// weak memory, which PCT is blind to.
#[test]
fn verdict_table_on_shuttle_pct() {
    let pct = EngineKind::Pct.engine();
    assert!(LOOM_ONLY
        .iter()
        .all(|v| pct.cannot_judge(model().needs(v)).is_some()));
    let checks = registry_checks(model(), EngineKind::Pct)
        .into_iter()
        .map(|mut c| {
            c.budget.iterations = 2_000;
            c
        });
    let table = verdict_table(checks);
    assert!(
        table.disagreements.is_empty(),
        "PCT disagrees with the registry:\n{}",
        table.disagreements.join("\n")
    );
}

/// Every declared invariant is broken by some variant, and the shortest
/// loom trace of the first such variant is the reviewed record.
#[test]
fn shortest_trace_per_invariant() {
    for (invariant, trace) in witness_traces(model()).unwrap_or_else(|e| panic!("{e}")) {
        insta::assert_snapshot!(format!("primitives__{invariant}"), trace);
    }
}
