//! The litmus model: the kernel's litmus tests
//! (tools/memory-model/litmus-tests and Documentation/litmus-tests/
//! {atomic,locking,rcu}), vfsmc's engine probes and kernel code shapes, each
//! a `.litmus` file in herd7's C dialect under tests/litmus/ (in our own
//! words; the names are the literature's), read by [`parse`] and run by
//! [`interp`] on the kernel primitives every model uses — the reader and
//! interpreter `vfsmc litmus` runs on any file. This module is the manifest
//! of those files: per test, where the kernel's copy was read, what the test
//! shows in one sentence, and where loom cannot give its verdict. The
//! program, the initial state, the `Result:` and the clause are the file's.
//!
//! A test is a variant of the `litmus` model. Its final clause is the
//! invariant `exists`: a test whose `Result:` is `Never` must hold (loom:
//! exhaustively), and one whose result is `Sometimes` must be *observed* —
//! the engine has to find an execution satisfying the clause, which it
//! reports as a violation of `exists` with the trace that reaches it.
//!
//! loom explores C11, not LKMM, and only executions in which every load reads
//! a store that already ran. Where that cannot reproduce the documented
//! verdict, the test says why in [`LitmusTest::loom`]; the test suite keeps it
//! `#[ignore]`d with that reason (it still runs with `--ignored`).
//!
//! # vfsmc engine probes
//!
//! The `probe-…` tests are not the kernel's: they are vfsmc's own probes of
//! the engines, with [`PROBE`] for a directory. Each is a shape an engine
//! once got wrong, written and judged like any other litmus test, so a
//! regression in an engine (or an engine upgrade) shows up as a verdict that
//! differs. The four probe loom's DPOR: loom 0.7.3 kept one last access per
//! atomic, so when a thread loads a location and then stores to it (the
//! kernel's flag update: `READ_ONCE` the flags, then store or `cmpxchg` new
//! ones, as fs/dcache.c:__d_set_inode_and_type does with
//! `smp_store_release`, vfs-7.3-rc5.fixes), the store was compared with that
//! thread's own load only, and a reader that ran earlier was never moved
//! after the store (tokio-rs/loom#166, #392). vfsmc's loom is patched
//! (`vendor/loom/VFSMC-PATCHES.md`); these probes are what the patch must
//! find. They use plain `WRITE_ONCE` flag stores so that the outcome is
//! allowed: they test the engine's search, not the kernel's ordering. P0
//! runs first when nothing preempts it; two handshakes on `z` make the
//! outcome need P0 preempted twice (without them loom 0.7.3 still found the
//! outcomes at preemption bound 1 and missed them only unbounded).
//!
//! # Kernel code shapes
//!
//! Tests named `MNT+…` ([`SHAPES`]) are not in the kernel's suite either:
//! they are the ordering a model relies on, cut down to litmus size, so the
//! primitives are checked on exactly that shape. `MNT+legitimize+mntput` is
//! 119e1ef80ecf's store buffering between fs/namespace.c:__legitimize_mnt
//! (count increment, `smp_mb()`, re-read of `mount_lock`) and
//! mntput_no_expire's slow path (`lock_mount_hash()` bumps the seqcount,
//! `smp_mb()`, count read), as read at torvalds/linux c3d6d6dde3a3
//! (vfs-7.3-rc1.mount), where the slow path is mntput_no_expire_slowpath;
//! without the two barriers (the code before that commit, not read here)
//! both sides can miss each other.

pub mod ast;
pub mod interp;
pub mod parse;
pub mod race;

use std::sync::{Arc, LazyLock};

use crate::{
    Check, Expected, Invariant, Judge, Need, Scenario, ScenarioRow, Spec, Tier, Variant, Watch,
};
use interp::{Program, Seek};

/// The `Result:` a test documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Documented {
    /// Some execution satisfies `exists`: the engine must observe one.
    Sometimes,
    /// No execution does: the engine must hold exhaustively.
    Never,
}

/// Where loom's C11 exploration cannot judge a test the way LKMM does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoomLimit {
    /// The `Sometimes` outcome needs what loom cannot produce (load
    /// buffering, a coherence order that differs from execution order): the
    /// test is ignored.
    CannotObserve(Need),
    /// C11 allows an outcome LKMM forbids, so loom reports a false alarm on
    /// a `Never` test: the test is ignored.
    WeakerThanLkmm(&'static str),
    /// A loom defect produces an execution C11 forbids, so a `Never` test
    /// fails: the test is ignored. The need is what loom gets wrong.
    LoomBug(Need),
    /// The `Never` verdict holds under loom, but loom could not have produced
    /// the outcome with or without the barriers the test is about.
    Vacuous(&'static str),
}

impl LoomLimit {
    /// Whether the loom verdict cannot be the documented one.
    pub fn ignored(self) -> bool {
        self.need().is_some()
    }

    /// What the documented verdict needs that loom cannot give, if anything.
    pub fn need(self) -> Option<Need> {
        match self {
            LoomLimit::CannotObserve(need) | LoomLimit::LoomBug(need) => Some(need),
            LoomLimit::WeakerThanLkmm(why) => Some(Need::LkmmOrdering(why)),
            LoomLimit::Vacuous(_) => None,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            LoomLimit::CannotObserve(need) | LoomLimit::LoomBug(need) => need.why(),
            LoomLimit::WeakerThanLkmm(r) | LoomLimit::Vacuous(r) => r,
        }
    }
}

/// A litmus test of the model: its manifest row and its file, read.
pub struct LitmusTest {
    pub name: &'static str,
    /// Directory of the `.litmus` file in the kernel tree, or [`PROBE`] /
    /// [`SHAPES`].
    pub dir: &'static str,
    /// The file's text (tests/litmus/NAME.litmus).
    pub source: &'static str,
    /// The file, read and ready to run.
    pub program: Arc<Program>,
    /// The file's `Result:`.
    pub result: Documented,
    /// Whether the `Sometimes` outcome needs weak memory (every kernel
    /// test's does; a probe's may be reachable under sequential consistency,
    /// and then shuttle must observe it too).
    pub weak: bool,
    /// What the test shows, in one sentence.
    pub about: &'static str,
    /// loom cannot express this verdict: why.
    pub loom: Option<LoomLimit>,
    /// The copy of the kernel file the test was checked against; every
    /// test but the engine probes names one.
    pub copy: Option<KernelCopy>,
}

impl LitmusTest {
    /// How many threads the test runs.
    pub fn threads(&self) -> usize {
        self.program.test.threads.len()
    }
}

/// A test by its name (a registry variant's code is printed this way).
impl std::fmt::Debug for LitmusTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LitmusTest({})", self.name)
    }
}

/// One row of the manifest: the test's file and what vfsmc knows of it.
pub struct Row {
    pub name: &'static str,
    pub dir: &'static str,
    pub source: &'static str,
    pub about: &'static str,
    pub weak: bool,
    pub loom: Option<LoomLimit>,
    pub copy: Option<KernelCopy>,
}

impl Row {
    const fn loom(self, limit: LoomLimit) -> Row {
        Row {
            loom: Some(limit),
            ..self
        }
    }
    /// The `Sometimes` outcome is reachable under sequential consistency.
    const fn sequentially_consistent(self) -> Row {
        Row {
            weak: false,
            ..self
        }
    }
    const fn read_at(self, commit: &'static str, era: &'static str) -> Row {
        Row {
            copy: Some(KernelCopy { commit, era }),
            ..self
        }
    }

    /// The row with its file read. A file of the repository that does not
    /// read, or whose `Result:` is not `Never` or `Sometimes`, is a bug of
    /// the repository: tests/litmus.rs fails on it.
    fn read(&'static self) -> LitmusTest {
        let test = parse::parse(self.source)
            .unwrap_or_else(|e| panic!("tests/litmus/{}.litmus:{e}", self.name));
        assert_eq!(
            test.name, self.name,
            "tests/litmus/{}.litmus: its C line",
            self.name
        );
        let result = match test.result.as_ref().map(|(w, _)| w.as_str()) {
            Some("Never") => Documented::Never,
            Some("Sometimes") => Documented::Sometimes,
            other => panic!(
                "tests/litmus/{}.litmus: Result {other:?} is neither Never nor Sometimes",
                self.name
            ),
        };
        let program = Program::new(test, &format!("tests/litmus/{}.litmus", self.name))
            .unwrap_or_else(|e| panic!("tests/litmus/{}.litmus:{e}", self.name));
        LitmusTest {
            name: self.name,
            dir: self.dir,
            source: self.source,
            program: Arc::new(program),
            result,
            weak: self.weak,
            about: self.about,
            loom: self.loom,
            copy: self.copy,
        }
    }
}

/// A manifest row for tests/litmus/NAME.litmus.
macro_rules! row {
    ($name:literal, $dir:expr, $about:literal) => {
        Row {
            name: $name,
            dir: $dir,
            source: include_str!(concat!("../../../tests/litmus/", $name, ".litmus")),
            about: $about,
            weak: true,
            loom: None,
            copy: None,
        }
    };
}

/// A stored copy of a kernel file: the torvalds/linux commit it was read
/// at and what is known of its age.
#[derive(Clone, Copy)]
pub struct KernelCopy {
    pub commit: &'static str,
    pub era: &'static str,
}

const TOOLS: &str = "tools/memory-model/litmus-tests";
const ATOMIC: &str = "Documentation/litmus-tests/atomic";
const LOCKING: &str = "Documentation/litmus-tests/locking";
const RCU: &str = "Documentation/litmus-tests/rcu";
/// The directory of vfsmc's own engine probes (see the module doc).
pub const PROBE: &str = "vfsmc engine probe";
/// The directory of kernel code shapes (see the module doc).
pub const SHAPES: &str = "vfsmc kernel code shape";
/// The kernel code the [`SHAPES`] tests are cut from.
const SHAPE_CODE: &str = "fs/namespace.c:__legitimize_mnt and mntput_no_expire_slowpath";

// What is known of the age of each kernel copy read (find_files lists one
// stored version per file; the merge it was taken at is mostly unknown, so
// the era comes from the file's own text where it can).
/// The typed declarations (`{ int x; }`) that 1947bfcf81a9 "Add types to
/// litmus tests" added (tip core/rcu, Dec 2020) and 5c587f9b9c35 "Remove
/// redundant initialization in litmus tests" removed (tip locking/core,
/// Feb 2021).
const TYPED: &str = "a copy with the typed declarations of 1947bfcf81a9, \
     which 5c587f9b9c35 removed again: Nov 2020 to Feb 2021";
const ADD_TYPES: &str = "the commit 'tools/memory-model: Add types to litmus tests', Nov 2020";
const DRM_2021: &str = "'Merge drm/drm-next into drm-intel-gt-next', Jan 2021, \
     with the typed declarations of 1947bfcf81a9";
const BEFORE_TYPES: &str = "a copy older than 1947bfcf81a9 (Nov 2020): \
     no typed declarations and no Producer/Consumer comments";
const AFTER_TYPES: &str = "a copy without types but with the Producer/Consumer \
     comments, so after 5c587f9b9c35 (Feb 2021)";
const UNLOCK_LOCK: &str = "a tree that has the unlock-lock tests, \
     added by a patch series of autumn 2021; merge not identified";
const UNDATED: &str = "merge not identified";
const MOUNT_7_3: &str = "vfs-7.3-rc1.mount: the smp_mb pair of 119e1ef80ecf \
     'fix __legitimize_mnt()/mntput() race'";
const MOUNT_7_3_WITHOUT_MB: &str = "vfs-7.3-rc1.mount with the two smp_mb \
     of 119e1ef80ecf taken out; the code before that commit was not read";

const NO_LB: &str =
    "loom never lets a load read from a store that has not run yet (no load buffering)";
const SIL_IS_SC: &str = "spin_is_locked is an engine try_lock on the lock's mutex, whose state loom keeps sequentially consistent";
const LOAD_BUFFERING: Need = Need::LoadBuffering(NO_LB);
const WEAK_LOCK_STATE: Need = Need::WeakLockState(SIL_IS_SC);

use Documented::{Never, Sometimes};
use LoomLimit::{CannotObserve, LoomBug, Vacuous, WeakerThanLkmm};

/// The manifest, in `vfsmc list` order (the kernel directories, each
/// alphabetical, then vfsmc's engine probes and kernel code shapes).
#[rustfmt::skip]
static ROWS: &[Row] = &[
    row!("CoRR+poonceonce+Once", TOOLS,
        "two reads of one location by one thread never go back in coherence order")
        .read_at("84a83eba5c5a", TYPED),
    row!("CoRW+poonceonce+Once", TOOLS,
        "a read never sees a store that is coherence-after the reader's own later store")
        .read_at("84a83eba5c5a", TYPED),
    row!("CoWR+poonceonce+Once", TOOLS,
        "a read after a thread's own store never sees a store coherence-before it")
        .read_at("1947bfcf81a9", ADD_TYPES),
    row!("CoWW+poonceonce", TOOLS,
        "two stores of one thread to one location keep program order in coherence")
        .read_at("cbecf716ca61", TYPED),
    row!("IRIW+fencembonceonces+OnceOnce", TOOLS,
        "smp_mb between the reads makes two readers agree on the order of independent writes")
        .read_at("8db90aa36063", TYPED),
    row!("IRIW+poonceonces+OnceOnce", TOOLS,
        "without barriers two readers may see independent writes in opposite orders")
        .read_at("b7e1a1e9ae49", UNDATED),
    row!("ISA2+pooncelock+pooncelock+pombonce", TOOLS,
        "store ordering from two critical sections of one lock is visible to an outside smp_mb reader")
        .loom(WeakerThanLkmm("in C11 the outside thread's relaxed read of z synchronises with nothing, and a SeqCst fence on one side alone orders nothing; LKMM's lock ordering is cumulative"))
        .read_at("2313f4700327", TYPED),
    row!("ISA2+poonceonces", TOOLS,
        "an unordered three-thread message-passing chain can lose the first store")
        .read_at("8c1dccc80380", TYPED),
    row!("ISA2+pooncerelease+poacquirerelease+poacquireonce", TOOLS,
        "a release-acquire chain with one non-reads-from link orders the first store before the last read")
        .read_at("2555693dd85c", UNDATED),
    row!("LB+fencembonceonce+ctrlonceonce", TOOLS,
        "a control dependency and smp_mb forbid load buffering")
        .loom(Vacuous(NO_LB))
        .read_at("102056180529", TYPED),
    row!("LB+poacquireonce+pooncerelease", TOOLS,
        "a release-acquire pair forbids load buffering")
        .loom(Vacuous(NO_LB))
        .read_at("0b77b9706662", UNDATED),
    row!("LB+poonceonces", TOOLS,
        "without ordering each load may read the other thread's later store")
        .loom(CannotObserve(LOAD_BUFFERING))
        .read_at("281a94b0f2f0", TYPED),
    row!("LB+unlocklockonceonce+poacquireonce", TOOLS,
        "critical sections of different locks on one CPU execute in order")
        .loom(Vacuous(NO_LB))
        .read_at("0cfa80d3c398", UNLOCK_LOCK),
    row!("MP+fencewmbonceonce+fencermbonceonce", TOOLS,
        "smp_wmb paired with smp_rmb forbids message-passing reordering")
        .read_at("415e915fdfc7", TYPED),
    row!("MP+onceassign+derefonce", TOOLS,
        "rcu_assign_pointer and rcu_dereference hide pre-initialisation contents from a reader (rcu_dereference is an acquire load here, stronger than the address dependency LKMM relies on)")
        .read_at("84a83eba5c5a", TYPED),
    row!("MP+polockmbonce+poacquiresilsil", TOOLS,
        "spin_lock with smp_mb__after_spinlock is seen in order by a spin_is_locked observer")
        .loom(Vacuous(SIL_IS_SC))
        .read_at("3d34933a1c9a", BEFORE_TYPES),
    row!("MP+polockonce+poacquiresilsil", TOOLS,
        "without smp_mb__after_spinlock a spin_is_locked observer may see the lock taken after the section's store")
        .loom(CannotObserve(WEAK_LOCK_STATE))
        .read_at("fbda16fbaf29", AFTER_TYPES),
    row!("MP+polocks", TOOLS,
        "lock and unlock stand in for acquire and release in message passing")
        .read_at("b6ff30849ca7", TYPED),
    row!("MP+poonceonces", TOOLS,
        "unordered message passing can see the flag without the data")
        .read_at("d263dfa7d269", DRM_2021),
    row!("MP+pooncerelease+poacquireonce", TOOLS,
        "smp_store_release paired with smp_load_acquire forbids message-passing reordering")
        .read_at("3765d01bab73", AFTER_TYPES),
    row!("MP+porevlocks", TOOLS,
        "a lock holder sees every access its predecessor made before releasing the lock")
        .read_at("550d14e3942c", AFTER_TYPES),
    row!("MP+unlocklockonceonce+fencermbonceonce", TOOLS,
        "stores of two critical sections on one CPU propagate in order, even under different locks")
        .loom(WeakerThanLkmm("C11 gives no order between an unlock and a lock of different locks, LKMM does (po-unlock-lock-po)"))
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    row!("R+fencembonceonces", TOOLS,
        "smp_mb on both sides forbids the R pattern")
        .read_at("9d4d8572a539", TYPED),
    row!("R+poonceonces", TOOLS,
        "without barriers a store may be overwritten while the other thread reads stale data")
        .read_at("84a83eba5c5a", TYPED),
    row!("S+fencewmbonceonce+poacquireonce", TOOLS,
        "smp_wmb and an acquire order a store before a later store of another thread")
        .read_at("b5630b0af3ca", UNDATED),
    row!("S+poonceonces", TOOLS,
        "without ordering a thread's first store may land after another thread's store it preceded")
        .read_at("50df51d12c31", TYPED),
    row!("SB+fencembonceonces", TOOLS,
        "smp_mb on both sides forbids store buffering")
        .read_at("55b024554aae", UNDATED),
    row!("SB+poonceonces", TOOLS,
        "without barriers both threads may miss each other's store")
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    row!("SB+rfionceonce-poonceonces", TOOLS,
        "reading one's own store first does not stop store buffering (LKMM is not multicopy atomic)")
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    row!("WRC+poonceonces+Once", TOOLS,
        "write-to-read causality fails without ordering")
        .read_at("84a83eba5c5a", TYPED),
    row!("WRC+pooncerelease+fencermbonceonce+Once", TOOLS,
        "smp_store_release is A-cumulative: with smp_rmb it restores write-to-read causality")
        .read_at("84a83eba5c5a", TYPED),
    row!("Z6.0+pooncelock+poonceLock+pombonce", TOOLS,
        "smp_mb__after_spinlock makes the lock chain order stores for an outside smp_mb thread")
        .read_at("552c69b36ebd", UNDATED),
    row!("Z6.0+pooncelock+pooncelock+pombonce", TOOLS,
        "a lock chain alone does not order stores for an outside thread")
        .read_at("d0034a7a4ac7", UNDATED),
    row!("Z6.0+pooncerelease+poacquirerelease+fencembonceonce", TOOLS,
        "a release-acquire chain does not suffice with two non-reads-from links")
        .read_at("8db90aa36063", TYPED),
    row!("dep+plain", TOOLS,
        "a value carried through plain locations still heads a control dependency")
        .loom(Vacuous(NO_LB))
        .read_at("0604aa87b098", UNDATED),
    row!("Atomic-RMW+mb__after_atomic-is-stronger-than-acquire", ATOMIC,
        "an atomic RMW followed by smp_mb__after_atomic orders both its parts before later accesses")
        .read_at("fc4b04d84027", UNDATED),
    row!("Atomic-RMW-ops-are-atomic-WRT-atomic_set", ATOMIC,
        "atomic_set cannot split an atomic_add_unless")
        .loom(LoomBug(Need::AtomicRmw("loom orders a plain store between an RMW and the value it read (tokio-rs/loom#254, #389): the trace cmpxchg(v, 1→2), atomic_set(v, 0) ends with v=2, impossible in C11; shuttle holds it")))
        .read_at("65e575744264", UNDATED),
    row!("cmpxchg-fail-ordered-1", ATOMIC,
        "a failed cmpxchg followed by smp_mb__after_atomic is a full barrier")
        .read_at("d754ed2821fd", UNDATED),
    row!("cmpxchg-fail-ordered-2", ATOMIC,
        "smp_mb__after_atomic gives a failed cmpxchg acquire ordering")
        .read_at("c771600c6af1", UNDATED),
    row!("cmpxchg-fail-unordered-1", ATOMIC,
        "a failed cmpxchg is not a full barrier")
        .read_at("2ba5b4130e3d", UNDATED),
    row!("cmpxchg-fail-unordered-2", ATOMIC,
        "a failed cmpxchg is neither acquire nor release")
        .read_at("7237cb3e1544", UNDATED),
    row!("DCL-broken", LOCKING,
        "double-checked locking needs more than the lock: the unlocked fast path can see the flag without the data")
        .read_at("03c601927b67", UNDATED),
    row!("DCL-fixed", LOCKING,
        "double-checked locking with smp_load_acquire and smp_store_release on the flag")
        .read_at("6757641d3982", UNDATED),
    row!("RM-broken", LOCKING,
        "documented `Result: DEADLOCK`: with both reads inside the critical section no execution passes the filter, so the clause is never satisfied")
        .read_at("d5984d29afdb", UNDATED),
    row!("RM-fixed", LOCKING,
        "seeing the critical section's store means entering the lock after it (no roach-motel reordering)")
        .read_at("9c3a985f88fa", UNDATED),
    row!("RCU+sync+free", RCU,
        "a reader that saw the old pointer never sees the writes after the grace period (rcu_dereference is an acquire load here, stronger than the address dependency)")
        .read_at("3bec5b6aae83", UNDATED),
    row!("RCU+sync+read", RCU,
        "after a grace period the updater sees every store of the read-side sections it waited for")
        .read_at("a68415c27ff3", UNDATED),
    row!("probe-MP+flag-load-store", PROBE,
        "unordered message passing where the writer reads its flag before storing it (tokio-rs/loom#166: loom 0.7.3 never ran the reader after the flag store)"),
    row!("probe-MP+flag-load-cmpxchg", PROBE,
        "the same with a relaxed cmpxchg loop as the flag update (an RMW after the writer's own load)"),
    row!("probe-MP+cmpxchg", PROBE,
        "a fully ordered cmpxchg orders nothing for a reader without barriers; its stand-in loads before the RMW, the same shape"),
    row!("probe-first-op-load", PROBE,
        "a thread that loads a location before storing to it can still be run before another thread's load of it (tokio-rs/loom#392)")
        .sequentially_consistent(),
    row!("MNT+legitimize+mntput", SHAPES,
        "__legitimize_mnt and mntput_no_expire each see the other (the smp_mb pair of 119e1ef80ecf): the walker sees the umount's seqcount or the final put sees the walker's count")
        .read_at("c3d6d6dde3a3", MOUNT_7_3),
    row!("MNT+legitimize+mntput-2018", SHAPES,
        "before 119e1ef80ecf: the walker keeps its reference on a mount whose final put did not count it")
        .read_at("c3d6d6dde3a3", MOUNT_7_3_WITHOUT_MB),
];

/// Every litmus test, its file read, in manifest order.
pub static TESTS: LazyLock<Vec<LitmusTest>> =
    LazyLock::new(|| ROWS.iter().map(Row::read).collect());

/// The test called `name`.
pub fn test_named(name: &str) -> Option<&'static LitmusTest> {
    TESTS.iter().find(|t| t.name == name)
}

fn variant_of(t: &'static LitmusTest) -> Variant<&'static LitmusTest> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let about = match t.loom {
        Some(l) if l.ignored() => leak(format!(
            "{}; loom cannot express this verdict: {}",
            t.about,
            l.reason()
        )),
        Some(l) => leak(format!(
            "{}; holds vacuously under loom: {}",
            t.about,
            l.reason()
        )),
        None => t.about,
    };
    Variant {
        name: t.name,
        expected: match t.result {
            Sometimes => Expected::Violates("exists"),
            Never => Expected::Holds,
        },
        witness: "litmus",
        kernel: match t.copy {
            None if t.dir == PROBE => leak(format!(
                "tests/litmus/{}.litmus: a vfsmc engine probe, not a kernel test",
                t.name
            )),
            None => panic!("litmus test {} names no kernel copy", t.name),
            Some(c) if t.dir == SHAPES => leak(format!(
                "{SHAPE_CODE} (read at torvalds/linux {}, {})",
                c.commit, c.era
            )),
            Some(c) => leak(format!(
                "{}/{}.litmus (read at torvalds/linux {}, {})",
                t.dir, t.name, c.commit, c.era
            )),
        },
        about,
        code: t,
    }
}

/// One variant per test, its text built from the test's own fields.
static VARIANTS: LazyLock<Vec<Variant<&'static LitmusTest>>> =
    LazyLock::new(|| TESTS.iter().map(variant_of).collect());

const SCENARIOS: &[ScenarioRow<()>] = &[Scenario {
    name: "litmus",
    about: "the test's own threads, from the test's initial state",
    goals: &[],
    loom_bound: None,
    judge: Judge::Optimal,
    tier: Tier::Pr,
    generated: false,
    split: false,
    plan: |_| (),
}];

const INVARIANTS: &[Invariant<Check<()>>] = &[Invariant {
    name: "exists",
    about: "the test's exists clause is never satisfied (judged on the final state)",
    check: Check::Raised,
}];

/// What a `Sometimes` outcome that needs weak memory needs.
const SOMETIMES: Need = Need::WeakMemory(
    "this Sometimes outcome needs weak memory: shuttle is sequentially \
     consistent, and real threads show it only by chance",
);

/// What each test's documented verdict needs, in [`TESTS`] order: weak
/// memory for a `Sometimes` outcome first, then what loom cannot give.
static NEEDS: LazyLock<Vec<Vec<Need>>> = LazyLock::new(|| {
    TESTS
        .iter()
        .map(|t| {
            let weak = (t.result == Sometimes && t.weak).then_some(SOMETIMES);
            weak.into_iter()
                .chain(t.loom.and_then(LoomLimit::need))
                .collect()
        })
        .collect()
});

/// The litmus model: one variant per test.
pub struct Litmus;

impl Spec for Litmus {
    type Code = &'static LitmusTest;
    type Plan = ();
    type State = ();

    const NAME: &'static str = "litmus";
    const ABOUT: &'static str =
        "the kernel's memory-model litmus tests, judged against the primitives";
    /// A litmus test exercises the memory model alone.
    const SHARED: &'static [Invariant] = &[];

    fn variants() -> &'static [Variant<&'static LitmusTest>] {
        &VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<()>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Invariant<Check<()>>] {
        INVARIANTS
    }

    fn execute(test: &'static LitmusTest, _: &(), _: &Watch<Self>) {
        interp::execute(&test.program, Seek::Satisfying);
    }

    fn render(_: &()) -> String {
        String::new()
    }

    fn needs(v: &Variant<&'static LitmusTest>) -> &'static [Need] {
        TESTS
            .iter()
            .position(|t| t.name == v.name)
            .map_or(&[], |i| NEEDS[i].as_slice())
    }
}
