//! The kernel's litmus tests against the primitives, and vfsmc's engine
//! probes (`probe-…`), each a file of tests/litmus/ named by the registry (`specs/src/litmus/mod.rs`), one `#[test]` each,
//! judged by the registry's engine with no preemption bound (loom; optimal
//! DPOR for a test that holds): a `Sometimes` test must be observed (loom
//! reports `exists` satisfied, with its trace), a `Never` test must hold
//! exhaustively. Tests whose verdict loom cannot reproduce are
//! `#[ignore]`d with the registry's reason; `--ignored` runs them and shows
//! what loom does. The same tests run under shuttle PCT, which is
//! sequentially consistent: every `Never` test must hold there too, and an
//! outcome sequential consistency reaches (`probe-first-op-load`) must be
//! observed.
//!
//! The per-test `#[test]`s are this model's verdict table (one per row, so
//! loom's limits can be `#[ignore]`d with their reason).

mod common;

use vfsmc::check::{registry_engine, Check, Report};
use vfsmc::engine::EngineKind;
use vfsmc_specs::litmus::{self, Documented};

fn check(name: &str, engine: EngineKind) -> (Report, &'static litmus::LitmusTest) {
    let model = vfsmc_specs::model("litmus").expect("litmus is registered");
    let variant = model
        .variant(name)
        .expect("every test here is a registered variant");
    let scenario = model.scenario("litmus").expect("the litmus scenario");
    let test = litmus::test_named(name).expect("every variant is a litmus test");
    let mut c = Check::new(model, variant, scenario, engine);
    if engine == EngineKind::Loom {
        c.budget.max_preemptions = None;
    } else {
        c.budget.iterations = 1_000;
    }
    (c.run().expect("a search, not a replay"), test)
}

/// Judges one test on the engine that gives its registry verdict;
/// `ignored` says whether this file ignores it, which must agree with the
/// registry's record of what loom cannot judge.
fn judge(name: &str, ignored: bool) {
    let model = vfsmc_specs::model("litmus").expect("litmus is registered");
    let variant = model.variant(name).expect("a registered variant");
    let scenario = model.scenario("litmus").expect("the litmus scenario");
    let (report, test) = check(name, registry_engine(model, variant, scenario));
    assert_eq!(
        test.loom.is_some_and(|l| l.ignored()),
        ignored,
        "{name}: the registry and this file disagree on whether loom can judge it"
    );
    println!("{}", report.text());
    assert!(
        report.matches_expected(),
        "{name}: documented {:?}, {} says {}",
        test.result,
        report.engine,
        report.summary()
    );
    if test.result == Documented::Never {
        assert!(
            report.exhaustive,
            "{name}: a Never verdict needs the whole space"
        );
    }
}

macro_rules! litmus_tests {
    ($($(#[ignore = $why:literal])? $test:ident => $name:literal;)*) => {
        const ALL: &[&str] = &[$($name),*];
        $(
            #[test]
            $(#[ignore = $why])?
            fn $test() {
                judge($name, false $(|| !$why.is_empty())?);
            }
        )*
    };
}

litmus_tests! {
    corr_poonceonce_once => "CoRR+poonceonce+Once";
    corw_poonceonce_once => "CoRW+poonceonce+Once";
    cowr_poonceonce_once => "CoWR+poonceonce+Once";
    coww_poonceonce => "CoWW+poonceonce";
    iriw_fencembonceonces_onceonce => "IRIW+fencembonceonces+OnceOnce";
    iriw_poonceonces_onceonce => "IRIW+poonceonces+OnceOnce";
    #[ignore = "loom cannot express this verdict: C11 relaxed reads after a lock chain synchronise with nothing (LKMM lock ordering is cumulative)"]
    isa2_pooncelock_pooncelock_pombonce => "ISA2+pooncelock+pooncelock+pombonce";
    isa2_poonceonces => "ISA2+poonceonces";
    isa2_pooncerelease_poacquirerelease_poacquireonce => "ISA2+pooncerelease+poacquirerelease+poacquireonce";
    lb_fencembonceonce_ctrlonceonce => "LB+fencembonceonce+ctrlonceonce";
    lb_poacquireonce_pooncerelease => "LB+poacquireonce+pooncerelease";
    #[ignore = "loom cannot express this verdict: no load buffering (a load never reads a store that has not run)"]
    lb_poonceonces => "LB+poonceonces";
    lb_unlocklockonceonce_poacquireonce => "LB+unlocklockonceonce+poacquireonce";
    mp_fencewmbonceonce_fencermbonceonce => "MP+fencewmbonceonce+fencermbonceonce";
    mp_onceassign_derefonce => "MP+onceassign+derefonce";
    mp_polockmbonce_poacquiresilsil => "MP+polockmbonce+poacquiresilsil";
    #[ignore = "loom cannot express this verdict: spin_is_locked is a try_lock on an engine mutex, sequentially consistent under loom"]
    mp_polockonce_poacquiresilsil => "MP+polockonce+poacquiresilsil";
    mp_polocks => "MP+polocks";
    mp_poonceonces => "MP+poonceonces";
    mp_pooncerelease_poacquireonce => "MP+pooncerelease+poacquireonce";
    mp_porevlocks => "MP+porevlocks";
    #[ignore = "loom cannot express this verdict: C11 orders nothing across an unlock and a lock of different locks"]
    mp_unlocklockonceonce_fencermbonceonce => "MP+unlocklockonceonce+fencermbonceonce";
    r_fencembonceonces => "R+fencembonceonces";
    r_poonceonces => "R+poonceonces";
    s_fencewmbonceonce_poacquireonce => "S+fencewmbonceonce+poacquireonce";
    s_poonceonces => "S+poonceonces";
    sb_fencembonceonces => "SB+fencembonceonces";
    sb_poonceonces => "SB+poonceonces";
    sb_rfionceonce_poonceonces => "SB+rfionceonce-poonceonces";
    wrc_poonceonces_once => "WRC+poonceonces+Once";
    wrc_pooncerelease_fencermbonceonce_once => "WRC+pooncerelease+fencermbonceonce+Once";
    z6_0_pooncelock_poonce_lock_pombonce => "Z6.0+pooncelock+poonceLock+pombonce";
    z6_0_pooncelock_pooncelock_pombonce => "Z6.0+pooncelock+pooncelock+pombonce";
    z6_0_pooncerelease_poacquirerelease_fencembonceonce => "Z6.0+pooncerelease+poacquirerelease+fencembonceonce";
    dep_plain => "dep+plain";
    atomic_rmw_mb_after_atomic_is_stronger_than_acquire => "Atomic-RMW+mb__after_atomic-is-stronger-than-acquire";
    #[ignore = "loom cannot express this verdict: loom RMW atomicity bug (tokio-rs/loom#254) lets atomic_set land inside atomic_add_unless"]
    atomic_rmw_ops_are_atomic_wrt_atomic_set => "Atomic-RMW-ops-are-atomic-WRT-atomic_set";
    cmpxchg_fail_ordered_1 => "cmpxchg-fail-ordered-1";
    cmpxchg_fail_ordered_2 => "cmpxchg-fail-ordered-2";
    cmpxchg_fail_unordered_1 => "cmpxchg-fail-unordered-1";
    cmpxchg_fail_unordered_2 => "cmpxchg-fail-unordered-2";
    dcl_broken => "DCL-broken";
    dcl_fixed => "DCL-fixed";
    rm_broken => "RM-broken";
    rm_fixed => "RM-fixed";
    rcu_sync_free => "RCU+sync+free";
    rcu_sync_read => "RCU+sync+read";
    probe_mp_flag_load_store => "probe-MP+flag-load-store";
    probe_mp_flag_load_cmpxchg => "probe-MP+flag-load-cmpxchg";
    probe_mp_cmpxchg => "probe-MP+cmpxchg";
    probe_first_op_load => "probe-first-op-load";
    mnt_legitimize_mntput => "MNT+legitimize+mntput";
    mnt_legitimize_mntput_2018 => "MNT+legitimize+mntput-2018";
}

#[test]
fn every_registered_test_has_a_loom_test() {
    let registered: Vec<&str> = litmus::TESTS.iter().map(|t| t.name).collect();
    assert_eq!(
        registered, ALL,
        "one #[test] per registered litmus test, in registry order"
    );
}

/// shuttle is sequentially consistent: a `Never` outcome is forbidden by SC
/// too, so PCT must hold every `Never` test, and observe every `Sometimes`
/// outcome that SC reaches (the probes that say so). What PCT finds of an
/// outcome that needs weak memory is printed, not asserted. A one-thread test
/// (CoWW) has no scheduling choice, which shuttle's PCT refuses to run.
#[test]
fn shuttle_pct_holds_every_never_test() {
    for test in litmus::TESTS.iter().filter(|t| t.threads() > 1) {
        let (report, _) = check(test.name, EngineKind::Pct);
        println!("{}", report.summary());
        if test.result == Documented::Never || !test.weak {
            assert!(
                report.matches_expected(),
                "{}: {}",
                test.name,
                report.text()
            );
        }
    }
}

/// The invariant `exists` breaks on every `Sometimes` test; the reviewed
/// record is loom's shortest trace over all of them.
#[test]
fn shortest_trace_of_exists() {
    common::snapshots("litmus");
}

#[test]
fn corpus_replays() {
    common::corpus("litmus");
}
