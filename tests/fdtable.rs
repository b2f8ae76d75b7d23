//! The fdtable model (fs/file.c) against its registry: verdicts on loom and
//! PCT, the shortest trace per invariant, the sequential reference, generated
//! scenarios under shuttle with replay, and the series' cost claim.

mod common;

use vfsmc::check::{Check, Verdict};
use vfsmc::engine::EngineKind;
use vfsmc_specs::Model;

fn model() -> &'static dyn Model {
    common::model("fdtable")
}

mod verdicts {
    use super::*;

    /// The deep tier: the holding kernels on every Tier::Deep scenario (the
    /// expand-vs-fget races at preemption bound 5 with the old table freed
    /// at the end, at bound 3 with the grace-period kthread) under loom.
    #[test]
    #[ignore = "deep tier: about 75 minutes on 2 cores (expand-vs-fget-deep is most of it)"]
    fn loom_deep_tier_holds() {
        common::deep_tier_holds("fdtable", &["v6.10", "current"]);
    }

    /// Each check on the engine that gives its registry verdict: optimal
    /// (exhaustive, unbounded) for the holding variants on the scenarios
    /// the registry judges on it, loom at the scenario's bound for the rest.
    #[test]
    fn registry_engines_agree_with_registry() {
        common::registry_verdicts("fdtable");
    }

    #[test]
    fn pct_agrees_with_registry() {
        common::verdicts("fdtable", EngineKind::Pct, |_| {});
    }
}

#[test]
fn shortest_trace_per_invariant() {
    common::snapshots("fdtable");
}

/// Issue 9's variants that break an invariant another variant already
/// witnesses more briefly: each one's own shortest loom trace is reviewed
/// too (`tests/snapshots/fdtable__variant__<name>.snap`).
#[test]
fn shortest_trace_per_new_variant() {
    let m = model();
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_snapshot_path("snapshots");
    let variants: Vec<_> = [
        "v1-fast-path-returns-bits-per-long",
        "file-ref-get-rewrites-dead",
        "file-ref-put-ignores-revival",
        "range-close-keeps-stale-table",
        "dup-fd-keeps-stale-table",
        "fget-light-relaxed-count",
        "init-file-count-first",
        "close-on-exec-puts-before-unpublish",
    ]
    .into_iter()
    .map(|name| m.variant(name).unwrap())
    .collect();
    vfsmc::check::prefetch_witnesses(m, &variants);
    for v in variants {
        let name = v.name;
        let r = vfsmc::check::variant_witness(m, v).unwrap_or_else(|e| panic!("{e}"));
        let trace = vfsmc::check::snapshot_text(&r);
        settings.bind(|| insta::assert_snapshot!(format!("fdtable__variant__{name}"), trace));
    }
}

#[test]
fn corpus_replays() {
    common::corpus("fdtable");
}

mod sequential_reference {
    use std::sync::{Arc, Mutex};

    use proptest::prelude::*;
    use proptest::test_runner::FileFailurePersistence;
    use vfsmc::engine::{self, Body};
    use vfsmc_specs::fdtable::{generated_init, run_single, Fd, Op, OpResult, Reference};

    fn op() -> impl Strategy<Value = Op> {
        let fd = 0u32..6;
        prop_oneof![
            4 => Just(Op::Open),
            1 => Just(Op::OpenFails),
            1 => Just(Op::OpenDenied),
            1 => Just(Op::OpenCloexec),
            1 => Just(Op::Exec),
            1 => Just(Op::OpenElsewhere),
            1 => fd.clone().prop_map(Op::FgetTask),
            2 => Just(Op::Close(Fd::Last)),
            2 => fd.clone().prop_map(|n| Op::Close(Fd::N(n))),
            1 => (fd.clone(), fd.clone()).prop_map(|(a, b)| Op::Dup2(a, b)),
            1 => (fd.clone(), fd.clone()).prop_map(|(fd, min)| Op::DupFd { fd, min }),
            1 => fd.clone().prop_map(Op::Fget),
            1 => fd.clone().prop_map(Op::Fdget),
            1 => Just(Op::OpenPath),
            1 => (fd.clone(), fd.clone()).prop_map(|(a, b)| Op::CloseRange(a, b)),
            1 => (fd.clone(), fd).prop_map(|(a, b)| Op::Dup3(a, b)),
            1 => Just(Op::Fork),
            1 => (2u32..=16).prop_map(Op::SetRlimit),
        ]
    }

    fn model_results(variant: &'static str, ops: &[Op]) -> Vec<OpResult> {
        let out: Arc<Mutex<Vec<OpResult>>> = Arc::default();
        let (o, ops) = (out.clone(), ops.to_vec());
        let body: Body = Arc::new(move || {
            *o.lock().unwrap() = run_single(variant, &generated_init(), &ops);
        });
        let e = engine::sequential(body);
        assert!(
            e.record.violation.is_none(),
            "the model failed: {:?}",
            e.record.violation
        );
        let r = out.lock().unwrap().clone();
        r
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                "proptest-regressions/fdtable.txt",
            ))),
            ..crate::common::proptest_config(128)
        })]

        /// open (O_PATH, O_CLOEXEC, refused by an LSM)/close/close_range/
        /// dup2/dup3/F_DUPFD/fget/fdget/pidfd_getfd/execve/expand, one
        /// thread at a time: the model returns what the reference, written
        /// from the man pages, returns.
        #[test]
        fn matches_lowest_free_set(ops in proptest::collection::vec(op(), 0..14)) {
            let want = Reference::new(&generated_init()).run(&ops);
            for variant in ["current", "v6.10"] {
                prop_assert_eq!(&model_results(variant, &ops), &want, "variant {}", variant);
            }
        }
    }
}

/// Where the model and the documented reference could disagree, each
/// case says which one is right (the man page, checked against the kernel
/// code read).
mod documented_errors {
    use std::sync::{Arc, Mutex};

    use vfsmc::engine::{self, Body};
    use vfsmc_model::fdtable::Errno;
    use vfsmc_specs::fdtable::{generated_init, run_single, Op, OpResult, Reference};

    fn both(ops: &[Op]) -> (Vec<OpResult>, Vec<OpResult>) {
        let out: Arc<Mutex<Vec<OpResult>>> = Arc::default();
        let (o, v) = (out.clone(), ops.to_vec());
        let body: Body = Arc::new(move || {
            *o.lock().unwrap() = run_single("current", &generated_init(), &v);
        });
        engine::sequential(body);
        let model = out.lock().unwrap().clone();
        (model, Reference::new(&generated_init()).run(ops))
    }

    /// dup2(2): "If oldfd is a valid file descriptor, and newfd has the same
    /// value as oldfd, then dup2() does nothing, and returns newfd"; dup3
    /// gives EINVAL. The model before issue 9 said EINVAL for both: the
    /// model was wrong, the man page (and fs/file.c's dup2) right.
    #[test]
    fn dup2_onto_itself_returns_the_fd_dup3_says_einval() {
        let ops = [Op::Dup2(0, 0), Op::Dup2(5, 5), Op::Dup3(0, 0)];
        let (model, reference) = both(&ops);
        let want = vec![Ok(0), Err(Errno::Ebadf), Err(Errno::Einval)];
        assert_eq!(reference, want, "the reference reads the man page");
        assert_eq!(model, want, "the model is wrong where it differs");
    }

    /// execve(2) closes the fds marked close-on-exec; dup(2): "the
    /// close-on-exec flag (FD_CLOEXEC) for the duplicate descriptor is
    /// off", for dup2 and F_DUPFD alike (fs/file.c's do_dup2 and f_dupfd
    /// pass no O_CLOEXEC, do_close_on_exec reads only close_on_exec).
    #[test]
    fn exec_closes_only_the_cloexec_fd_not_its_duplicates() {
        let ops = [
            Op::OpenCloexec,
            Op::Dup2(3, 4),
            Op::DupFd { fd: 3, min: 0 },
            Op::Exec,
            Op::Fget(3),
            Op::Fget(4),
            Op::FgetTask(5),
        ];
        let (model, reference) = both(&ops);
        let want = vec![Ok(3), Ok(4), Ok(5), Ok(0), Err(Errno::Ebadf), Ok(4), Ok(5)];
        assert_eq!(reference, want, "the reference reads the man pages");
        assert_eq!(model, want, "the model is wrong where it differs");
    }

    /// fcntl(2) F_DUPFD: EINVAL when arg is beyond the maximum allowable
    /// fd (RLIMIT_NOFILE), checked after EBADF for a closed fd. The model
    /// before issue 9 said EMFILE: it was wrong (fs/file.c:f_dupfd agrees
    /// with the page).
    #[test]
    fn f_dupfd_from_at_the_limit_is_einval() {
        let ops = [
            Op::SetRlimit(4),
            Op::DupFd { fd: 0, min: 4 },
            Op::DupFd { fd: 5, min: 4 },
        ];
        let (model, reference) = both(&ops);
        let want = vec![Ok(0), Err(Errno::Einval), Err(Errno::Ebadf)];
        assert_eq!(reference, want, "the reference reads the man page");
        assert_eq!(model, want, "the model is wrong where it differs");
    }
}

mod generated {
    use super::*;
    use vfsmc::render::text_trace;
    use vfsmc_specs::fdtable::{encode, Fd, Op};

    /// CVE-2021-4083 as a generated scenario: fds 0 and 1 share a file,
    /// T0 fgets fd 0 while T1 closes it.
    fn cve_bytes() -> Vec<u8> {
        encode(&[vec![Op::Fget(0)], vec![Op::Close(Fd::N(0))]])
    }

    #[test]
    fn pct_finds_bug_and_schedule_replays() {
        let m = model();
        let v = m.variant("fget-skips-slot-recheck").unwrap();
        let s = m.scenario("generated").unwrap();
        let mut c = Check::new(m, v, s, EngineKind::Pct);
        c.input = cve_bytes();
        let r = c.run().unwrap();
        println!("{}", r.text());
        assert!(r.matches_expected(), "{}", r.text());
        let schedule = r
            .schedule
            .clone()
            .expect("a shuttle failure carries its schedule");
        let replay = |c: &Check| {
            let mut c = c.clone();
            c.schedule = Some(schedule.clone());
            let r = c.run().expect("the schedule replays");
            assert_eq!(r.verdict, Verdict::Violates);
            text_trace(r.record.as_ref().unwrap())
        };
        let (a, b) = (replay(&c), replay(&c));
        assert_eq!(
            a, b,
            "replaying the same (bytes, schedule) twice gives the same trace"
        );
        assert_eq!(a, text_trace(r.record.as_ref().unwrap()));
    }

    /// Pseudo-random scenario bytes (a fixed LCG: deterministic).
    fn byte_strings(n: usize, len: usize) -> Vec<Vec<u8>> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..n)
            .map(|_| {
                (0..len)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        (x >> 33) as u8
                    })
                    .collect()
            })
            .collect()
    }

    /// The correct kernels hold on generated programs, under PCT and under
    /// loom with preemption bound 1 (no false alarms from the invariants on
    /// shapes nobody wrote by hand; 400 programs x 1000 PCT runs were also
    /// clean when this was written).
    #[test]
    fn correct_kernels_hold_on_generated_programs() {
        let m = model();
        let s = m.scenario("generated").unwrap();
        for variant in ["current", "v6.10"] {
            let v = m.variant(variant).unwrap();
            for input in byte_strings(40, 16) {
                for engine in [EngineKind::Pct, EngineKind::Loom] {
                    let mut c = Check::new(m, v, s, engine);
                    c.input = input.clone();
                    c.budget.iterations = 200;
                    c.budget.max_preemptions = Some(1);
                    let r = c.run().unwrap();
                    if !r.matches_expected() {
                        println!("{}", r.text());
                    }
                    assert!(r.matches_expected(), "{}", r.summary());
                }
            }
        }
    }

    #[test]
    fn correct_kernel_holds_on_same_bytes() {
        let m = model();
        let v = m.variant("current").unwrap();
        let s = m.scenario("generated").unwrap();
        let mut c = Check::new(m, v, s, EngineKind::Loom);
        c.input = cve_bytes();
        let r = c.run().unwrap();
        assert!(r.matches_expected(), "{}", r.text());
    }
}

mod costs {
    use super::*;
    use vfsmc::check;
    use vfsmc_model::exec::Counter;
    use vfsmc_specs::Run;

    fn per_call(variant: &str, op: &str, counter: Counter) -> (u64, u64) {
        let run = Run {
            variant: variant.to_string(),
            scenario: "churn".to_string(),
            input: Vec::new(),
        };
        let costs = check::costs(model(), &run);
        let c = &costs[op];
        (c.get(counter), c.calls)
    }

    /// The series' claim, on the churn scenario's canonical execution:
    /// open's alloc_fd (charged to get_unused_fd_flags, the outermost
    /// function) reads fewer bitmap words and holds file_lock for fewer steps
    /// (no sanity check), with the same number of lock acquisitions.
    #[test]
    fn fast_path_reads_fewer_words() {
        let table = |v: &str| {
            check::costs(
                model(),
                &Run {
                    variant: v.to_string(),
                    scenario: "churn".to_string(),
                    input: Vec::new(),
                },
            )
        };
        let (old, new) = (table("v6.10"), table("current"));
        println!(
            "{:<18} {:<14} {:>6} {:>8}",
            "operation", "counter", "v6.10", "current"
        );
        for (op, c) in &old {
            for counter in Counter::ALL {
                let a = c.get(counter);
                let b = new.get(op).map_or(0, |n| n.get(counter));
                if a != 0 || b != 0 {
                    println!("{op:<18} {:<14} {a:>6} {b:>8}", counter.name());
                }
            }
        }
        let open = "get_unused_fd_flags";
        let (old, calls_old) = per_call("v6.10", open, Counter::BitmapWordsRead);
        let (new, calls_new) = per_call("current", open, Counter::BitmapWordsRead);
        assert_eq!(calls_old, calls_new);
        assert!(
            new < old,
            "current reads {new} bitmap words in alloc_fd, v6.10 {old}"
        );
        let held = |v| per_call(v, open, Counter::LockHeldSteps).0;
        assert!(held("current") < held("v6.10"));
        let locks = |v| per_call(v, open, Counter::LockAcquire).0;
        assert_eq!(locks("current"), locks("v6.10"));
    }
}
