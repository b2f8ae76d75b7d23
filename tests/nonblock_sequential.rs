//! The nonblock model against its sequential reference: generated mixes of
//! io_uring openat requests (O_RDONLY, O_RDWR, O_DIRECTORY, O_CREAT, with
//! and without RESOLVE_CACHED, of cached and uncached names, through a
//! symlink and /proc/thread-self) and namespace changes, one at a time
//! under the sequential engine, punted requests run by an io-wq worker:
//! every CQE is one of the results the reference allows for it (what a
//! blocking open(2) returns, and -EAGAIN when RESOLVE_CACHED was asked),
//! in the current code and with the worker's RCU attempt skipped, and no
//! invariant of the model fires.

mod common;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::namei::open::{O_CREAT, O_DIRECTORY, O_RDWR};
use vfsmc_model::vfs::Node;
use vfsmc_specs::nonblock::reference::{run, run_single, Outcome, SeqOp};
use vfsmc_specs::nonblock::Request;
use vfsmc_specs::unlazy::reference::Reference;
use vfsmc_specs::unlazy::Op;

/// The variants that must give the same answers.
const VARIANTS: &[&str] = &["current", "retry-no-rcu"];

/// /tmp with a cached file a, a file x and a directory d only on disk, a
/// symlink l → a, and /proc with the process's directory on disk only.
const TREE: &[Node] = &[
    Node::Dir("/tmp"),
    Node::File("/tmp/a"),
    Node::Uncached("/tmp/x"),
    Node::UncachedDir("/tmp/d"),
    Node::File("/tmp/d/c"),
    Node::Symlink("/tmp/l", "a"),
    Node::Dir("/proc"),
    Node::SelfLink("/proc/thread-self"),
    Node::UncachedDir("/proc/1"),
    Node::File("/proc/1/comm"),
];

const PATHS: &[&str] = &[
    "/tmp",
    "/tmp/a",
    "/tmp/b",
    "/tmp/x",
    "/tmp/d",
    "/tmp/d/c",
    "/tmp/l",
    "/tmp/a/x",
    "/tmp/d/",
    "/proc/thread-self/comm",
    "/proc/thread-self",
];

const FLAGS: &[u32] = &[0, O_RDWR, O_DIRECTORY, O_RDWR | O_CREAT];

/// Changes of names the dcache holds (the model's actor changes cached
/// names only).
const CHANGES: &[Op] = &[
    Op::Unlink("/tmp/a"),
    Op::Unlink("/tmp/b"),
    Op::Rename("/tmp/a", "/tmp/b"),
    Op::Rename("/tmp/b", "/tmp/a"),
    Op::Rename("/tmp/l", "/tmp/b"),
    Op::Create("/tmp/b"),
    Op::Mkdir("/tmp/b"),
];

fn model_results(variant: &'static str, ops: &[SeqOp]) -> Vec<Outcome> {
    let ops = ops.to_vec();
    common::sequential(move || run_single(variant, TREE, &ops))
        .unwrap_or_else(|v| panic!("{variant}: an invariant fired: {v}"))
}

/// Every variant's outcome for each request is one the reference allows.
fn check(ops: &[SeqOp]) -> Result<(), TestCaseError> {
    let (accepted, allowed) = run(&mut Reference::new(TREE), ops);
    for &variant in VARIANTS {
        let got = model_results(variant, &accepted);
        prop_assert_eq!(got.len(), allowed.len());
        for (i, (g, set)) in got.iter().zip(&allowed).enumerate() {
            prop_assert!(
                set.contains(g),
                "{}: request {} returned {:?}, the reference allows {:?} (steps {:?})",
                variant,
                i,
                g,
                set,
                accepted
            );
        }
    }
    Ok(())
}

fn request() -> impl Strategy<Value = Request> {
    (
        proptest::sample::select(PATHS),
        proptest::sample::select(FLAGS),
        any::<bool>(),
    )
        .prop_map(|(path, flags, resolve_cached)| Request {
            path,
            flags,
            resolve_cached,
        })
}

fn seq_op() -> impl Strategy<Value = SeqOp> {
    prop_oneof![
        3 => proptest::sample::select(CHANGES).prop_map(SeqOp::Change),
        7 => request().prop_map(SeqOp::Submit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/nonblock_sequential.txt",
        ))),
        ..crate::common::proptest_config(512)
    })]

    /// Random request mixes between namespace changes: every CQE is
    /// allowed, in both variants, and no invariant fires.
    #[test]
    fn requests_match_the_reference(ops in proptest::collection::vec(seq_op(), 0..10)) {
        check(&ops)?;
    }
}

/// Hand-picked cases; each states what openat2(2) says and checks that the
/// reference says it and that the model agrees.
mod tricky {
    use super::*;

    fn inode_of(path: &'static str) -> u64 {
        Reference::new(TREE).lookup(path).expect("the path exists")
    }

    fn allowed(ops: &[SeqOp]) -> Vec<Vec<Outcome>> {
        run(&mut Reference::new(TREE), ops).1
    }

    fn submit(path: &'static str, flags: u32, resolve_cached: bool) -> SeqOp {
        SeqOp::Submit(Request {
            path,
            flags,
            resolve_cached,
        })
    }

    /// openat2(2), RESOLVE_CACHED: "the lookup will fail with EAGAIN"
    /// when it needs I/O, and "O_CREAT, O_TRUNC and O_TMPFILE ... always
    /// fail with EAGAIN"; a plain io_uring openat of the same uncached
    /// name is punted and opens it. O_DIRECTORY alone is not O_TMPFILE.
    #[test]
    fn resolve_cached() {
        let (x, tmp) = (inode_of("/tmp/x"), inode_of("/tmp"));
        let ops = [
            submit("/tmp/x", 0, true),
            submit("/tmp/a", O_RDWR | O_CREAT, true),
            submit("/tmp", O_DIRECTORY, true),
            submit("/tmp/x", 0, false),
        ];
        assert_eq!(
            allowed(&ops),
            vec![
                vec![Ok(x), Err(Errno::EAGAIN)],
                vec![Err(Errno::EAGAIN)],
                vec![Ok(tmp), Err(Errno::EAGAIN)],
                vec![Ok(x)],
            ]
        );
        for &variant in VARIANTS {
            let got = model_results(variant, &ops);
            assert_eq!(
                got,
                vec![Err(Errno::EAGAIN), Err(Errno::EAGAIN), Ok(tmp), Ok(x)],
                "{variant}: x is not in the dcache, /tmp is"
            );
        }
    }

    /// proc(5): /proc/thread-self names the calling thread's directory; a
    /// punted open of it must name the submitter's.
    #[test]
    fn thread_self_is_the_submitter() {
        let comm = inode_of("/proc/1/comm");
        let ops = [submit("/proc/thread-self/comm", 0, false)];
        assert_eq!(allowed(&ops), vec![vec![Ok(comm)]]);
        for &variant in VARIANTS {
            assert_eq!(model_results(variant, &ops), vec![Ok(comm)], "{variant}");
        }
    }
}
