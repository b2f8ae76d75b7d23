//! The unlazy model (fs/namei.c RCU-walk → ref-walk over fs/dcache.c and
//! fs/namespace.c) against its registry: verdicts on loom and PCT, the
//! shortest trace per invariant and per bug variant, the corpus, and the
//! lazy walk's cost claim. The sequential reference is in
//! tests/unlazy_sequential.rs.

mod common;

use vfsmc::engine::EngineKind;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    common::model("unlazy")
}

mod verdicts {
    use super::*;

    /// Each check on the engine that gives its registry verdict: optimal
    /// (exhaustive, unbounded) for the holding variants on the scenarios
    /// the registry judges on it, loom at the scenario's bound for the rest.
    #[test]
    fn registry_engines_agree_with_registry() {
        common::registry_verdicts("unlazy");
    }

    #[test]
    fn pct_agrees_with_registry() {
        common::verdicts("unlazy", EngineKind::Pct, |_| {});
    }

    /// The deep tier: `current` on every Tier::Deep scenario under loom.
    #[test]
    #[ignore = "deep tier: the bound-2 kill-vs-walk search explores about 1.6 million executions"]
    fn loom_deep_tier_holds() {
        common::deep_tier_holds("unlazy", &["current"]);
    }
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("unlazy");
}

#[test]
fn shortest_trace_per_bug_variant() {
    common::variant_snapshots("unlazy");
}

#[test]
fn corpus_replays() {
    common::corpus("unlazy");
}

mod cost {
    use super::*;
    use vfsmc::check;
    use vfsmc_model::exec::Counter;
    use vfsmc_specs::Run;

    fn per_call(scenario: &str, op: &str, counter: Counter) -> f64 {
        let costs = check::costs(
            model(),
            &Run {
                variant: "current".to_string(),
                scenario: scenario.to_string(),
                input: Vec::new(),
            },
        );
        let c = &costs[op];
        c.get(counter) as f64 / c.calls as f64
    }

    /// Issue 8's performance invariant, on rename-vs-walk's canonical
    /// sequential execution (the walker runs first, undisturbed, over a
    /// cached /a/b/c): the lazy walk writes no refcount but the two it
    /// returns (the final dentry and its mount) and legitimizes once; the
    /// ref-walk of a path as long (negative-to-positive's /a/b/c) writes
    /// more.
    #[test]
    fn cached_lazy_walk_takes_only_the_references_it_returns() {
        let lazy = "filename_lookup";
        assert_eq!(
            per_call("rename-vs-walk", lazy, Counter::Legitimize),
            1.0,
            "legitimizations per lazy walk"
        );
        let rmw = per_call("rename-vs-walk", lazy, Counter::AtomicRmw);
        assert_eq!(rmw, 2.0, "refcount RMWs per cached lazy walk");
        // ref_walk_lookup is charged to filename_lookup, the function it
        // stands for (do_file_open's second attempt).
        let ref_walk = per_call("negative-to-positive", lazy, Counter::AtomicRmw);
        assert!(
            ref_walk > rmw,
            "ref-walk does {ref_walk} RMWs per walk, the lazy walk {rmw}"
        );
    }
}
