//! The open_creat model (fs/namei.c open_last_lookups with the O_CREAT
//! opportunistic lookup, on the walk model and the VFS substrate) against
//! its registry: verdicts on loom and PCT, the shortest trace per invariant
//! and per bug variant, the corpus, and the seed's cost claim (the parent's
//! i_rwsem 1 → 0 on an O_CREAT open of an existing file). The sequential
//! reference is in tests/open_creat_sequential.rs.

mod common;

use vfsmc::engine::EngineKind;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    common::model("open_creat")
}

mod verdicts {
    use super::*;

    /// Each check on the engine that gives its registry verdict: optimal
    /// (exhaustive, unbounded) for the holding variants on the scenarios
    /// the registry judges on it, loom at the scenario's bound for the rest.
    #[test]
    fn registry_engines_agree_with_registry() {
        common::registry_verdicts("open_creat");
    }

    #[test]
    fn pct_agrees_with_registry() {
        common::verdicts("open_creat", EngineKind::Pct, |_| {});
    }

    /// The deep tier: the holding variants on every Tier::Deep scenario they
    /// apply to, under loom (tests/common).
    #[test]
    #[ignore = "deep tier: the bound-1 create-vs-create and bound-2 searches take minutes"]
    fn loom_deep_tier_holds() {
        common::deep_tier_holds("open_creat", &[]);
    }
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("open_creat");
}

#[test]
fn shortest_trace_per_bug_variant() {
    common::variant_snapshots("open_creat");
}

#[test]
fn corpus_replays() {
    common::corpus("open_creat");
}

mod cost {
    use super::*;
    use vfsmc::check;
    use vfsmc_model::exec::Counter;
    use vfsmc_specs::Run;

    fn per_call(variant: &str, scenario: &str, counter: Counter) -> f64 {
        let costs = check::costs(
            model(),
            &Run {
                variant: variant.to_string(),
                scenario: scenario.to_string(),
                input: Vec::new(),
            },
        );
        let c = &costs["do_file_open"];
        c.get(counter) as f64 / c.calls as f64
    }

    /// The seed's claim on opencreate1's canonical sequential execution
    /// (each opener O_CREATs its own existing, cached name, nothing else
    /// runs): v6.11 takes the parent's i_rwsem once per open, the current
    /// code never; and the current code writes fewer refcounts (it stays
    /// lazy until complete_walk).
    #[test]
    fn existing_file_takes_no_parent_lock() {
        let (old, new) = (
            per_call("v6.11", "opencreate1", Counter::SleepingLock),
            per_call("current", "opencreate1", Counter::SleepingLock),
        );
        assert_eq!((old, new), (1.0, 0.0), "sleeping locks per O_CREAT open");
        let (old, new) = (
            per_call("v6.11", "opencreate1", Counter::AtomicRmw),
            per_call("current", "opencreate1", Counter::AtomicRmw),
        );
        assert!(
            new < old,
            "atomic RMWs per open: v6.11 {old}, current {new}"
        );
    }

    /// For a missing name (rmdir-vs-open's canonical execution: the
    /// opener creates /tmp/d/x before the rmdir runs) the fast path adds one
    /// failed dcache lookup and nothing else: the same parent lock and the
    /// same single legitimization.
    #[test]
    fn missing_name_costs_no_extra_lock() {
        for counter in [Counter::SleepingLock, Counter::Legitimize] {
            let old = per_call("v6.11", "rmdir-vs-open", counter);
            let new = per_call("current", "rmdir-vs-open", counter);
            assert_eq!((old, new), (1.0, 1.0), "{} per create", counter.name());
        }
    }
}
