//! The nonblock model (LOOKUP_CACHED and io_uring's openat punt, composed
//! of the open path, the fd table and the io_uring request path) against
//! its registry: verdicts on loom and PCT, the shortest trace per invariant
//! and per bug variant, the corpus, and the seed's cost claim (a cached
//! open completes inline without a sleeping lock; a cold one costs one
//! failed RCU attempt and a punt). The sequential reference is in
//! tests/nonblock_sequential.rs.

mod common;

use vfsmc::engine::EngineKind;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    common::model("nonblock")
}

mod verdicts {
    use super::*;

    /// Each check on the engine that gives its registry verdict: optimal
    /// (exhaustive, unbounded) for the holding variants on the scenarios
    /// the registry judges on it, loom at the scenario's bound for the rest.
    #[test]
    fn registry_engines_agree_with_registry() {
        common::registry_verdicts("nonblock");
    }

    #[test]
    fn pct_agrees_with_registry() {
        common::verdicts("nonblock", EngineKind::Pct, |_| {});
    }

    /// The deep tier: the holding variants on every Tier::Deep scenario they
    /// apply to, under loom (tests/common).
    #[test]
    #[ignore = "deep tier: bound-3 searches of hot-open and rename-vs-cached-open, bound 2 of creat-vs-hot"]
    fn loom_deep_tier_holds() {
        common::deep_tier_holds("nonblock", &[]);
    }
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("nonblock");
}

#[test]
fn shortest_trace_per_bug_variant() {
    common::variant_snapshots("nonblock");
}

#[test]
fn corpus_replays() {
    common::corpus("nonblock");
}

/// Each invariant the composition keeps on from one of its parts, without
/// a breaking variant of its own, is broken by a variant of another
/// registered model (where its shortest trace is recorded).
#[test]
fn invariants_witnessed_elsewhere_have_a_witness() {
    use vfsmc_specs::{Expected, Spec};
    for &name in vfsmc_specs::nonblock::Nonblock::WITNESSED_ELSEWHERE {
        let breakers: Vec<String> = vfsmc_specs::models()
            .into_iter()
            .filter(|m| m.name() != "nonblock")
            .flat_map(|m| {
                m.variants()
                    .iter()
                    .filter(|v| v.expected == Expected::Violates(name))
                    .map(move |v| format!("{}/{}", m.name(), v.name))
            })
            .collect();
        assert!(
            !breakers.is_empty(),
            "no other model's variant breaks {name}"
        );
    }
}

mod cost {
    use super::*;
    use vfsmc::check;
    use vfsmc_model::exec::{Counter, OpCost};
    use vfsmc_specs::Run;

    fn costs(variant: &str, scenario: &str) -> std::collections::BTreeMap<String, OpCost> {
        check::costs(
            model(),
            &Run {
                variant: variant.to_string(),
                scenario: scenario.to_string(),
                input: Vec::new(),
            },
        )
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// hot-open's canonical sequential execution: both requests complete
    /// inline (no worker runs) and the submitter takes no sleeping lock.
    #[test]
    fn cached_opens_complete_inline_without_sleeping() {
        let c = costs("current", "hot-open");
        assert!(
            !c.contains_key("io_wq_submit_work"),
            "no request is punted: {c:?}"
        );
        let submit = &c["io_submit_sqe"];
        assert_eq!(submit.calls, 2);
        assert_eq!(
            submit.get(Counter::SleepingLock),
            0,
            "sleeping locks inline"
        );
    }

    /// cold-miss: the inline attempt takes no sleeping lock and legitimizes
    /// nothing; the worker's blocking open takes the parent's i_rwsem.
    #[test]
    fn a_cold_open_sleeps_only_in_the_worker() {
        let c = costs("current", "cold-miss");
        let submit = &c["io_submit_sqe"];
        assert_eq!(submit.get(Counter::SleepingLock), 0, "inline: {submit:?}");
        assert_eq!(submit.get(Counter::Legitimize), 0, "inline: {submit:?}");
        let worker = c.get("io_wq_submit_work").expect("the request is punted");
        assert!(worker.get(Counter::SleepingLock) > 0, "worker: {worker:?}");
    }
}
