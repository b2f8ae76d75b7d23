//! The `freelist` model (mm/slub.c per-CPU freelist and Guzik's 8-byte
//! proposal) judged by the engines against its registry.
//!
//! Every verdict comes from an engine and is compared with the registry's
//! expectation; nothing here states what an engine should report beyond
//! that. Speed is measured in `benches/native_cmpxchg.rs`, never here.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use vfsmc::check::{self, Check, Report, Verdict};
use vfsmc::engine::{self, EngineKind};
use vfsmc::render::text_trace;
use vfsmc_model::exec::Counter;
use vfsmc_specs::freelist::{check_sequential, Op};
use vfsmc_specs::{Expected, Model, Run};

fn model() -> &'static dyn Model {
    common::model("freelist")
}

/// PCT depth for the buggy variants: the deepest witness (the NMI inside the
/// slow path after an IRQ refilled the freelist) needs three preemptions.
const PCT_DEPTH: usize = 4;
const PCT_ITERATIONS: usize = 20_000;

/// The registry's engines: every holding variant is proved on every
/// scenario that applies (by optimal, unbounded, where the registry judges
/// the scenario on it; by loom, exhaustively or within the scenario's stated
/// preemption bound, elsewhere), and loom finds every buggy variant on its
/// witness.
#[test]
fn verdict_table_registry() {
    let reports = common::registry_verdicts("freelist");
    for r in reports.iter().filter(|r| r.expected == Expected::Holds) {
        assert!(r.exhaustive, "{} did not finish {}", r.engine, r.summary());
    }
}

/// shuttle PCT: the same table; every buggy variant must be found.
#[test]
fn verdict_table_pct() {
    common::verdicts("freelist", EngineKind::Pct, |c| {
        if matches!(c.variant.expected, Expected::Violates(_)) {
            c.budget.pct_depth = PCT_DEPTH;
            c.budget.iterations = PCT_ITERATIONS;
        }
    });
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("freelist");
}

#[test]
fn shortest_trace_per_variant() {
    common::variant_snapshots("freelist");
}

#[test]
fn corpus_replays() {
    common::corpus("freelist");
}

/// Generated scenarios under loom: every holding variant that runs with an
/// IRQ handler holds on each of the first 100 inputs (preemption bound 2).
#[test]
fn generated_scenarios_hold_under_loom() {
    let m = model();
    let s = m.scenario("generated").unwrap();
    for v in m
        .variants()
        .iter()
        .filter(|v| v.expected == Expected::Holds && m.applies(v.name, s.name))
    {
        let mut executions = 0;
        for n in 0..100 {
            let mut c = Check::new(m, v, s, EngineKind::Loom);
            c.input = input(n);
            let r = c.run().unwrap();
            assert!(r.matches_expected(), "{}", r.text());
            executions += r.executions;
        }
        println!(
            "{}: 100 generated scenarios hold, {executions} loom executions",
            v.name
        );
    }
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Alloc),
        Just(Op::Write),
        Just(Op::FreeOldest),
        Just(Op::FreeNewest),
        Just(Op::Flush)
    ]
}

fn sequential(variant: &'static str, objects: u64, ops: Vec<Op>) -> Result<(), String> {
    let out: Arc<Mutex<Option<Result<(), String>>>> = Arc::default();
    let o2 = out.clone();
    let record = engine::sequential(Arc::new(move || {
        let r = check_sequential(variant, objects, &ops);
        *o2.lock().unwrap() = Some(r);
    }));
    if let Some(v) = record.record.violation {
        return Err(format!("{}: {}", v.invariant, v.message));
    }
    let r = out.lock().unwrap().take();
    r.unwrap_or_else(|| Err("the execution did not finish".to_string()))
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64))]

    /// A single task's alloc/free sequence returns what a multiset of free
    /// objects allows, for the kernel's design and for the proposal.
    #[test]
    fn sequential_matches_multiset(objects in 1u64..=4, ops in proptest::collection::vec(op_strategy(), 0..12)) {
        for variant in ["classic", "guzik-8byte"] {
            let r = sequential(variant, objects, ops.clone());
            prop_assert!(r.is_ok(), "{variant}: {:?}", r);
        }
    }
}

/// Deterministic scenario bytes: the n-th input tried (xorshift64).
fn input(n: u64) -> Vec<u8> {
    let mut x = check::fnv1a(&n.to_le_bytes());
    (0..16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// A generated scenario finds `pointer-only` under shuttle PCT; the failing
/// (input, schedule) pair replays twice to the same trace.
#[test]
fn generated_scenario_finds_pointer_only_and_replays() {
    let m = model();
    let v = m.variant("pointer-only").unwrap();
    let s = m.scenario("generated").unwrap();
    let found = (0..200).find_map(|n| {
        let mut c = Check::new(m, v, s, EngineKind::Pct);
        c.input = input(n);
        c.budget.pct_depth = PCT_DEPTH;
        c.budget.iterations = 2_000;
        let r = c.run().unwrap();
        r.matches_expected().then_some((c, r))
    });
    let (c, r) = found.expect("no generated scenario exposed pointer-only");
    let schedule = r
        .schedule
        .clone()
        .expect("a shuttle failure has a schedule");
    println!(
        "failing pair: --input {} --schedule {schedule}\n{}",
        check::hex(&c.input),
        r.text()
    );
    let replay = || {
        let mut c = c.clone();
        c.schedule = Some(schedule.clone());
        c.run().unwrap()
    };
    let (a, b) = (replay(), replay());
    assert_eq!(a.verdict, Verdict::Violates, "{}", a.text());
    assert_eq!(a.invariant, r.invariant);
    let trace = |r: &Report| text_trace(r.record.as_ref().expect("violation has a trace"));
    assert_eq!(trace(&a), trace(&b), "replays differ");
    assert_eq!(trace(&a), trace(&r), "replay differs from the search");
}

fn cost_table(
    variant: &str,
    scenario: &str,
) -> BTreeMap<&'static str, BTreeMap<&'static str, u64>> {
    let run = Run {
        variant: variant.to_string(),
        scenario: scenario.to_string(),
        input: Vec::new(),
    };
    check::costs(model(), &run)
        .into_iter()
        .map(|(op, c)| {
            let mut row: BTreeMap<&'static str, u64> =
                Counter::ALL.iter().map(|k| (k.name(), c.get(*k))).collect();
            row.insert("calls", c.calls);
            (op, row)
        })
        .collect()
}

/// The proposal's claim, computed from the canonical executions: its
/// allocation and free fast paths use no double-width cmpxchg (the kernel's
/// do), one single-width cmpxchg instead, and no more IRQ trips; its price
/// shows on the drain path.
#[test]
fn guzik_fast_path_has_no_double_width_cmpxchg() {
    let get = |t: &BTreeMap<&'static str, BTreeMap<&'static str, u64>>, op: &str, k: &str| t[op][k];
    let classic = cost_table("classic", "irq");
    let guzik = cost_table("guzik-8byte", "irq");
    println!("classic [irq]: {classic:?}\nguzik-8byte [irq]: {guzik:?}");
    for op in ["kmem_cache_alloc", "kmem_cache_free"] {
        assert!(get(&classic, op, "cmpxchg_double") >= get(&classic, op, "calls"));
        assert_eq!(get(&guzik, op, "cmpxchg_double"), 0, "{op}");
        assert!(
            get(&guzik, op, "atomic_rmw") >= get(&guzik, op, "calls"),
            "{op}"
        );
        assert!(
            get(&guzik, op, "irq_toggles") <= get(&classic, op, "irq_toggles"),
            "{op}"
        );
    }
    let drain = cost_table("guzik-8byte", "guzik-drain");
    println!("guzik-8byte [guzik-drain]: {drain:?}");
    assert!(get(&drain, "kmem_cache_alloc", "irq_toggles") > 0);
}

/// The deep tier: the same registry on the scenarios kept out of the PR tier
/// (higher loom bounds), every holding variant proved there.
#[test]
#[ignore = "deep tier: minutes of loom; run with --ignored"]
fn verdict_table_loom_deep() {
    let m = common::model("freelist");
    let checks = vfsmc::check::registry_checks_in(m, EngineKind::Loom, vfsmc_specs::Tier::Deep);
    let table = vfsmc::check::verdict_table(checks);
    assert!(
        table.disagreements.is_empty(),
        "{}",
        table.disagreements.join("\n")
    );
}
