//! The `open_creat` model against its sequential reference: generated
//! sequences of open(2) calls (O_RDWR, O_CREAT, O_CREAT|O_EXCL) and
//! namespace changes, one thread at a time, under the sequential engine;
//! every open returns what the reference says (written from open(2) and
//! path_resolution(7)), in both the v6.11 and the current shape of the
//! open path, and no invariant of the model fires.

mod common;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::namei::open::{O_CREAT, O_EXCL, O_RDWR};
use vfsmc_model::vfs::Node;
use vfsmc_specs::open_creat::reference::{run, run_single, OpenOutcome, SeqOp};
use vfsmc_specs::unlazy::reference::Reference;
use vfsmc_specs::unlazy::Op;

const CREAT: u32 = O_RDWR | O_CREAT;
const EXCL: u32 = O_RDWR | O_CREAT | O_EXCL;
const FLAGS: &[u32] = &[O_RDWR, CREAT, EXCL];

/// The open paths the model implements in two shapes.
const VARIANTS: &[&str] = &["v6.11", "current"];

/// /tmp with a file a, a directory d holding x, and a symlink l → a.
const TREE: &[Node] = &[
    Node::Dir("/tmp"),
    Node::File("/tmp/a"),
    Node::Dir("/tmp/d"),
    Node::File("/tmp/d/x"),
    Node::Symlink("/tmp/l", "a"),
];

const PATHS: &[&str] = &[
    "/",
    "/tmp",
    "/tmp/a",
    "/tmp/b",
    "/tmp/c",
    "/tmp/d",
    "/tmp/d/x",
    "/tmp/d/c",
    "/tmp/d/..",
    "/tmp/b/x",
    "/tmp/b2/x",
    "/tmp/a/x",
    "/tmp/l",
    "/tmp/a/",
    "/tmp/c/",
    "/tmp/d/",
    "/tmp/l/",
    "tmp/a",
    "x",
];

/// Cases where the invariants once judged the man page's answer wrong: an
/// O_EXCL of a symlink moved to name a file that never existed, and O_CREAT
/// of a name with a trailing slash under a directory that is missing.
const GAP_PATHS: &[&str] = &["/tmp/d/l", "/tmp/d/x/", "/tmp/b/x/"];

const CHANGES: &[Op] = &[
    Op::Unlink("/tmp/a"),
    Op::Unlink("/tmp/c"),
    Op::Unlink("/tmp/d/x"),
    Op::Unlink("/tmp/l"),
    Op::Unlink("/tmp/d/l"),
    Op::Rename("/tmp/a", "/tmp/b"),
    Op::Rename("/tmp/b", "/tmp/a"),
    Op::Rename("/tmp/c", "/tmp/a"),
    Op::Rename("/tmp/d", "/tmp/b2"),
    Op::Rename("/tmp/b2", "/tmp/d"),
    Op::Rename("/tmp/d/x", "/tmp/x"),
    Op::Rename("/tmp/l", "/tmp/d/l"),
    Op::Rmdir("/tmp/d"),
    Op::Rmdir("/tmp/b"),
    Op::Mkdir("/tmp/b"),
    Op::Mkdir("/tmp/d"),
    Op::Create("/tmp/a"),
    Op::Create("/tmp/c"),
    Op::Create("/tmp/d/x"),
    Op::Create("/tmp/b/x"),
];

fn model_results(variant: &'static str, ops: &[SeqOp]) -> Vec<OpenOutcome> {
    let ops = ops.to_vec();
    common::sequential(move || run_single(variant, TREE, &ops))
        .unwrap_or_else(|v| panic!("{variant}: an invariant fired: {v}"))
}

/// The reference's outcomes for `ops`, and each variant's for the ones the
/// reference accepted.
fn both(ops: &[SeqOp]) -> (Vec<(&'static str, Vec<OpenOutcome>)>, Vec<OpenOutcome>) {
    let (accepted, want) = run(&mut Reference::new(TREE), ops);
    let models = VARIANTS
        .iter()
        .map(|&v| (v, model_results(v, &accepted)))
        .collect();
    (models, want)
}

mod generated {
    use super::*;

    fn seq_op() -> impl Strategy<Value = SeqOp> {
        prop_oneof![
            4 => proptest::sample::select(CHANGES).prop_map(SeqOp::Change),
            6 => (proptest::sample::select(PATHS), proptest::sample::select(FLAGS))
                .prop_map(|(p, f)| SeqOp::Open(p, f)),
            2 => (proptest::sample::select(GAP_PATHS), proptest::sample::select(FLAGS))
                .prop_map(|(p, f)| SeqOp::Open(p, f)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                "proptest-regressions/open_creat_sequential.txt",
            ))),
            ..crate::common::proptest_config(1024)
        })]

        /// Opens with and without O_CREAT and O_EXCL (of existing and
        /// missing names, under missing directories and files, with a
        /// trailing slash, through a symlink) between unlinks, renames,
        /// rmdirs, mkdirs and creates (the ones the reference accepts):
        /// every open returns what the reference says, in both variants,
        /// and no invariant of the model fires.
        #[test]
        fn opens_match_the_reference(ops in proptest::collection::vec(seq_op(), 0..12)) {
            let (models, want) = both(&ops);
            for (variant, model) in models {
                prop_assert_eq!(&model, &want, "variant {}", variant);
            }
        }
    }
}

/// Hand-picked cases; each states the man page's answer and checks the
/// reference against it and every variant against the reference.
mod tricky {
    use super::*;

    fn inode_of(path: &'static str) -> u64 {
        Reference::new(TREE).lookup(path).expect("the path exists")
    }

    fn check(ops: &[SeqOp], want: Vec<OpenOutcome>) {
        let (models, reference) = both(ops);
        assert_eq!(reference, want, "the reference reads the page");
        for (variant, model) in models {
            assert_eq!(
                model, reference,
                "{variant}: the model is wrong where it differs"
            );
        }
    }

    /// open(2): O_CREAT of an existing file opens it (O_EXCL is what makes
    /// an existing name fail, with EEXIST), also through the symlink l → a;
    /// O_CREAT|O_EXCL of the symlink itself is EEXIST, since O_EXCL does
    /// not follow it.
    #[test]
    fn creat_of_an_existing_file_opens_it() {
        let a = inode_of("/tmp/a");
        let ops = [
            SeqOp::Open("/tmp/a", CREAT),
            SeqOp::Open("/tmp/a", EXCL),
            SeqOp::Open("/tmp/l", CREAT),
            SeqOp::Open("/tmp/l", EXCL),
            SeqOp::Open("/tmp/a", O_RDWR),
        ];
        let want = vec![
            Ok((a, false)),
            Err(Errno::EEXIST),
            Ok((a, false)),
            Err(Errno::EEXIST),
            Ok((a, false)),
        ];
        check(&ops, want);
    }

    /// open(2): O_CREAT creates a regular file only, so a name ending in "/"
    /// is EISDIR with O_CREAT, whether it exists or not; without O_CREAT a
    /// trailing "/" requires a directory (path_resolution(7)): ENOTDIR for
    /// the file, ENOENT for the missing name, and EISDIR for the directory
    /// opened O_RDWR.
    #[test]
    fn trailing_slash() {
        let ops = [
            SeqOp::Open("/tmp/a/", CREAT),
            SeqOp::Open("/tmp/c/", CREAT),
            SeqOp::Open("/tmp/d/", EXCL),
            SeqOp::Open("/tmp/a/", O_RDWR),
            SeqOp::Open("/tmp/c/", O_RDWR),
            SeqOp::Open("/tmp/d/", O_RDWR),
            SeqOp::Open("/tmp/c", O_RDWR),
        ];
        let want = vec![
            Err(Errno::EISDIR),
            Err(Errno::EISDIR),
            Err(Errno::EISDIR),
            Err(Errno::ENOTDIR),
            Err(Errno::ENOENT),
            Err(Errno::EISDIR),
            Err(Errno::ENOENT),
        ];
        check(&ops, want);
    }

    /// unlink(2) removes the name; O_CREAT then creates a new file, a new
    /// inode (the next one: the tree holds six, "/" included), which a
    /// second O_CREAT opens and O_CREAT|O_EXCL refuses; after unlink of
    /// /tmp/a the symlink l → a dangles, and O_CREAT through it creates
    /// /tmp/a again (the body resolved from the link's directory).
    #[test]
    fn create_after_unlink_is_a_new_inode() {
        let a = inode_of("/tmp/a");
        let ops = [
            SeqOp::Change(Op::Unlink("/tmp/a")),
            SeqOp::Open("/tmp/a", O_RDWR),
            SeqOp::Open("/tmp/a", CREAT),
            SeqOp::Open("/tmp/a", CREAT),
            SeqOp::Open("/tmp/a", EXCL),
            SeqOp::Change(Op::Unlink("/tmp/a")),
            SeqOp::Open("/tmp/l", EXCL),
            SeqOp::Open("/tmp/l", CREAT),
            SeqOp::Open("/tmp/a", O_RDWR),
        ];
        let want = vec![
            Err(Errno::ENOENT),
            Ok((7, true)),
            Ok((7, false)),
            Err(Errno::EEXIST),
            Err(Errno::EEXIST),
            Ok((8, true)),
            Ok((8, false)),
        ];
        assert_ne!(a, 7);
        check(&ops, want);
    }
}

/// Cases where the model returned what open(2) says but one of its own
/// end-of-execution invariants fired (found by this test's first version):
/// `o_excl` followed a final symlink, and `trailing_slash_eisdir` wanted
/// EISDIR where the walk fails on the parent first. They must pass.
mod invariant_gaps {
    use super::*;

    /// The model's outcomes, or the invariant that fired.
    fn model(variant: &'static str, ops: &[SeqOp]) -> Result<Vec<OpenOutcome>, String> {
        let ops = ops.to_vec();
        common::sequential(move || run_single(variant, TREE, &ops))
    }

    fn check(ops: &[SeqOp], want: Vec<OpenOutcome>) {
        let (accepted, reference) = run(&mut Reference::new(TREE), ops);
        assert_eq!(
            accepted.len(),
            ops.len(),
            "the reference accepts every step"
        );
        assert_eq!(reference, want, "the reference reads the page");
        let got: Vec<_> = VARIANTS.iter().map(|&v| (v, model(v, ops))).collect();
        let agree: Vec<_> = VARIANTS
            .iter()
            .map(|&v| (v, Ok(reference.clone())))
            .collect();
        assert_eq!(got, agree, "every variant returns the reference's outcomes");
    }

    /// open(2), O_EXCL: "if pathname is a symbolic link, then open() fails
    /// regardless of where the symbolic link points", so O_CREAT|O_EXCL of
    /// l → a moved to /tmp/d (naming /tmp/d/a, which never existed) is
    /// EEXIST.
    #[test]
    fn o_excl_of_a_dangling_symlink() {
        let ops = [
            SeqOp::Change(Op::Rename("/tmp/l", "/tmp/d/l")),
            SeqOp::Open("/tmp/d/l", EXCL),
        ];
        check(&ops, vec![Err(Errno::EEXIST)]);
    }

    /// path_resolution(7): a missing directory component is ENOENT; the
    /// walk never reaches the last component, so O_CREAT of "/tmp/b/x/"
    /// (no /tmp/b) fails with ENOENT, as the kernel's link_path_walk fails
    /// before open_last_lookups tests the trailing slash.
    #[test]
    fn creat_with_a_trailing_slash_under_a_missing_directory() {
        check(&[SeqOp::Open("/tmp/b/x/", CREAT)], vec![Err(Errno::ENOENT)]);
        let ops = [
            SeqOp::Change(Op::Rename("/tmp/d", "/tmp/b2")),
            SeqOp::Open("/tmp/d/x/", CREAT),
        ];
        check(&ops, vec![Err(Errno::ENOENT)]);
    }
}
