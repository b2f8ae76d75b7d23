//! The primitives' own tests: the verdict table of the `primitives` model on
//! loom (exhaustive, no preemption bound) and on shuttle PCT, each compared
//! with the registry, and one snapshot of the shortest trace per invariant
//! the model breaks.
//!
//! `seqcount-retry-without-rmb` and `seqcount-begin-without-wmb` are
//! weak-memory bugs (`LOOM_ONLY`): shuttle runs every access sequentially
//! consistently and cannot find them, so the PCT table reports them without
//! judging them.

use vfsmc::check::{invariant_witnesses, registry_checks, Check, Report, Verdict};
use vfsmc::engine::EngineKind;
use vfsmc::render::text_trace;
use vfsmc_specs::primitives::LOOM_ONLY;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    vfsmc_specs::model("primitives").expect("primitives is registered")
}

fn run(check: &Check) -> Report {
    let r = check.run().expect("a search, not a replay");
    println!("{}", r.summary());
    r
}

#[test]
fn verdict_table_on_loom() {
    let mut wrong = Vec::new();
    for mut c in registry_checks(model(), EngineKind::Loom) {
        c.budget.max_preemptions = None;
        let r = run(&c);
        let exhaustive_hold = r.verdict != Verdict::Holds || r.exhaustive;
        if !r.matches_expected() || !exhaustive_hold {
            wrong.push(r.text());
        }
    }
    assert!(
        wrong.is_empty(),
        "loom disagrees with the registry:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn verdict_table_on_shuttle_pct() {
    let mut wrong = Vec::new();
    for mut c in registry_checks(model(), EngineKind::Pct) {
        c.budget.iterations = 2_000;
        let r = run(&c);
        if LOOM_ONLY.contains(&c.variant.name) {
            println!("  (weak-memory variant: not judged under sequentially consistent shuttle)");
            continue;
        }
        if !r.matches_expected() {
            wrong.push(r.text());
        }
    }
    assert!(
        wrong.is_empty(),
        "PCT disagrees with the registry:\n{}",
        wrong.join("\n")
    );
}

/// Every declared invariant is broken by some variant, and the shortest
/// loom trace of the first such variant is the reviewed record.
#[test]
fn shortest_trace_per_invariant() {
    for (invariant, c) in invariant_witnesses(model()).unwrap() {
        let r = c.run().expect("loom runs");
        assert!(r.matches_expected(), "{}", r.text());
        let record = r.record.expect("a violation carries its trace");
        insta::assert_snapshot!(format!("primitives__{invariant}"), text_trace(&record));
    }
}
