//! The kernel's litmus tests (tools/memory-model/litmus-tests and
//! Documentation/litmus-tests/{atomic,locking,rcu}), each written
//! against vfsmc's kernel primitives and judged by the engines. Each test
//! names the torvalds/linux copy of its `.litmus` file that was read
//! ([`LitmusTest::copy`]); the copies differ in age (from before Nov 2020
//! to at least late 2021 where the text dates them) and every `Result:`
//! line and `exists` clause in them is the one registered here.
//!
//! A test is a variant of the `litmus` model. Its `exists` clause is the
//! invariant `exists`: a test whose documented result is `Never` must hold
//! (loom: exhaustively), and one whose result is `Sometimes` must be
//! *observed* — the engine has to find an execution satisfying the clause,
//! which it reports as a violation of `exists` with the trace that reaches it.
//!
//! Shared locations are `x`, `y`, `z` (initially 0 unless the test says
//! otherwise); a thread's registers keep the kernel test's names (`r0`,
//! `r1`, …) and are judged after every thread joined. Tests that store
//! pointers keep them in `y` as `&x` / `&z`.
//!
//! loom explores C11, not LKMM, and only executions in which every load reads
//! a store that already ran. Where that cannot reproduce the documented
//! verdict, the test says why in [`LitmusTest::loom`]; the test suite keeps it
//! `#[ignore]`d with that reason (it still runs with `--ignored`).
//!
//! # vfsmc engine probes
//!
//! The last tests are not the kernel's: they are vfsmc's own probes of the
//! engines, named `probe-…`, with [`PROBE`] for a directory. Each is a shape
//! an engine once got wrong, written and judged like any other litmus test,
//! so a regression in an engine (or an engine upgrade) shows up as a verdict
//! that differs. The four below probe loom's DPOR: loom 0.7.3 kept one last
//! access per atomic, so when a thread loads a location and then stores to it
//! (the kernel's flag update: `READ_ONCE` the flags, then store or `cmpxchg`
//! new ones, as fs/dcache.c:__d_set_inode_and_type does with
//! `smp_store_release`, vfs-7.3-rc5.fixes), the store was compared with that
//! thread's own load only, and a reader that ran earlier was never moved
//! after the store (tokio-rs/loom#166, #392). vfsmc's loom is patched
//! (`vendor/loom/VFSMC-PATCHES.md`); these probes are what the patch must
//! find. The probes use plain `WRITE_ONCE` flag stores so that the outcome
//! is allowed: they test the engine's search, not the kernel's ordering.
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

use std::sync::{Arc, LazyLock, Mutex};

use vfsmc_model::exec;
use vfsmc_model::kernel::atomic::{
    smp_mb, smp_mb__after_atomic, smp_mb__after_spinlock, smp_rmb, smp_wmb, Atomic,
};
use vfsmc_model::kernel::rcu::Rcu;
use vfsmc_model::kernel::spinlock::SpinLock;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::{Context, Show};

use crate::{Check, Expected, Invariant, Need, Scenario, ScenarioRow, Spec, Tier, Variant, Watch};

/// `&x` as stored in a pointer location.
pub const PTR_X: u64 = 1;
/// `&z` as stored in a pointer location.
pub const PTR_Z: u64 = 3;

fn show_ptr(v: u64) -> String {
    match v {
        0 => "NULL".to_string(),
        PTR_X => "&x".to_string(),
        PTR_Z => "&z".to_string(),
        v => format!("{v}?"),
    }
}

/// The shared memory of one litmus execution.
pub struct Mem {
    pub x: Atomic,
    pub y: Atomic,
    pub z: Atomic,
    /// `mylock` / `s` / `lo` / `lck` of the lock-based tests.
    pub lock: SpinLock,
    /// `t`, the second lock of the unlock-lock tests.
    pub lock2: SpinLock,
    pub rcu: Rcu,
}

impl Mem {
    fn new(test: &LitmusTest) -> Mem {
        let [x, y, z] = test.init;
        Mem {
            x: Atomic::new("x", x),
            y: if test.y_is_pointer {
                Atomic::with_format("y", y, Show::With(show_ptr))
            } else {
                Atomic::new("y", y)
            },
            z: Atomic::new("z", z),
            lock: SpinLock::new("mylock"),
            lock2: SpinLock::new("t"),
            rcu: Rcu::new(),
        }
    }

    /// The location a pointer value names (`*r0`).
    pub fn at(&self, ptr: u64) -> &Atomic {
        match ptr {
            PTR_X => &self.x,
            PTR_Z => &self.z,
            _ => panic!("litmus pointer {ptr} names no location"),
        }
    }
}

/// A thread's registers at its end, by name.
pub type Regs = Vec<(&'static str, u64)>;

/// One thread of a litmus test.
pub type Thread = fn(&Mem, &Task) -> Regs;

/// The final state an `exists` clause judges.
pub struct Outcome {
    pub regs: Vec<Regs>,
    pub x: u64,
    pub y: u64,
    pub z: u64,
}

impl Outcome {
    /// `thread:reg`, e.g. `o.r(1, "r0")` for `1:r0`.
    pub fn r(&self, thread: usize, reg: &str) -> u64 {
        self.regs[thread]
            .iter()
            .find(|(n, _)| *n == reg)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("P{thread} has no register {reg}"))
    }
}

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

/// A litmus test as the kernel documents it.
pub struct LitmusTest {
    pub name: &'static str,
    /// Directory of the `.litmus` file in the kernel tree, or [`PROBE`].
    pub dir: &'static str,
    pub result: Documented,
    /// Whether the `Sometimes` outcome needs weak memory (every kernel
    /// test's does; a probe's may be reachable under sequential consistency,
    /// and then shuttle must observe it too).
    pub weak: bool,
    /// Initial values of `x`, `y`, `z`.
    pub init: [u64; 3],
    /// Whether `y` holds a pointer (`&x`, `&z`).
    pub y_is_pointer: bool,
    pub threads: &'static [Thread],
    /// The `exists` clause (with the test's `filter`, if any).
    pub exists: fn(&Outcome) -> bool,
    pub clause: &'static str,
    /// What the test shows, in one sentence.
    pub about: &'static str,
    /// loom cannot express this verdict: why.
    pub loom: Option<LoomLimit>,
    /// The copy of the kernel file the test was checked against; every
    /// test but the engine probes names one.
    pub copy: Option<KernelCopy>,
}

/// A test by its name (a registry variant's code is printed this way).
impl std::fmt::Debug for LitmusTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LitmusTest({})", self.name)
    }
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
/// The clause of the message-passing probes.
const PROBE_MP: &str = "0:r0=1 /\\ 0:r1=0 /\\ 1:r2=1 /\\ 1:r3=2";

const NO_LB: &str =
    "loom never lets a load read from a store that has not run yet (no load buffering)";
const SIL_IS_SC: &str = "spin_is_locked is an engine try_lock on the lock's mutex, whose state loom keeps sequentially consistent";
const LOAD_BUFFERING: Need = Need::LoadBuffering(NO_LB);
const WEAK_LOCK_STATE: Need = Need::WeakLockState(SIL_IS_SC);

// --- coherence -----------------------------------------------------------

fn w_x1(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    vec![]
}
fn w_x2(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 2);
    vec![]
}
fn w_y1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 1);
    vec![]
}
fn corr_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn corw_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.x.write_once(t, 1);
    vec![("r0", r0)]
}
fn cowr_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    let r0 = m.x.read_once(t);
    vec![("r0", r0)]
}
fn coww_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    m.x.write_once(t, 2);
    vec![]
}

// --- IRIW ----------------------------------------------------------------

fn iriw_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    let r1 = m.y.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn iriw_p3(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn iriw_mb_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    smp_mb(t);
    let r1 = m.y.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn iriw_mb_p3(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    smp_mb(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn iriw_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.r(1, "r1") == 0 && o.r(3, "r0") == 1 && o.r(3, "r1") == 0
}

// --- ISA2 and WRC --------------------------------------------------------

fn locked_xy_p0(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    m.x.write_once(t, 1);
    m.y.write_once(t, 1);
    g.unlock();
    vec![]
}
fn isa2_lock_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    let r0 = m.y.read_once(t);
    m.z.write_once(t, 1);
    g.unlock();
    vec![("r0", r0)]
}
fn isa2_lock_p2(m: &Mem, t: &Task) -> Regs {
    let r2 = m.z.read_once(t);
    smp_mb(t);
    let r1 = m.x.read_once(t);
    vec![("r1", r1), ("r2", r2)]
}
fn isa2_lock_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.r(2, "r2") == 1 && o.r(2, "r1") == 0
}
fn xy_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    m.y.write_once(t, 1);
    vec![]
}
fn isa2_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    m.z.write_once(t, 1);
    vec![("r0", r0)]
}
fn isa2_p2(m: &Mem, t: &Task) -> Regs {
    let r0 = m.z.read_once(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn x_release_y_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    m.y.store_release(t, 1);
    vec![]
}
fn isa2_rel_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.load_acquire(t);
    m.z.store_release(t, 1);
    vec![("r0", r0)]
}
fn isa2_rel_p2(m: &Mem, t: &Task) -> Regs {
    let r0 = m.z.load_acquire(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn chain3_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.r(2, "r0") == 1 && o.r(2, "r1") == 0
}
fn wrc_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.y.write_once(t, 1);
    vec![("r0", r0)]
}
fn wrc_p2(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn wrc_rel_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.y.store_release(t, 1);
    vec![("r0", r0)]
}
fn wrc_rmb_p2(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    smp_rmb(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}

// --- LB ------------------------------------------------------------------

fn lb_ctrl_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    if r0 != 0 {
        m.y.write_once(t, 1);
    }
    vec![("r0", r0)]
}
fn lb_mb_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    smp_mb(t);
    m.x.write_once(t, 1);
    vec![("r0", r0)]
}
fn lb_release_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.y.store_release(t, 1);
    vec![("r0", r0)]
}
fn lb_acquire_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.load_acquire(t);
    m.x.write_once(t, 1);
    vec![("r0", r0)]
}
fn lb_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.y.write_once(t, 1);
    vec![("r0", r0)]
}
fn lb_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    m.x.write_once(t, 1);
    vec![("r0", r0)]
}
fn lb_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == 1 && o.r(1, "r0") == 1
}
fn lb_unlocklock_p0(m: &Mem, t: &Task) -> Regs {
    let s = m.lock.spin_lock(t);
    let r1 = m.x.read_once(t);
    s.unlock();
    let g = m.lock2.spin_lock(t);
    m.y.write_once(t, 1);
    g.unlock();
    vec![("r1", r1)]
}
fn lb_unlocklock_p1(m: &Mem, t: &Task) -> Regs {
    let r2 = m.y.load_acquire(t);
    m.x.write_once(t, 1);
    vec![("r2", r2)]
}
fn lb_unlocklock_exists(o: &Outcome) -> bool {
    o.r(0, "r1") == 1 && o.r(1, "r2") == 1
}

// --- MP ------------------------------------------------------------------

fn mp_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.r(1, "r1") == 0
}
fn mp_r1r2_exists(o: &Outcome) -> bool {
    o.r(1, "r1") == 1 && o.r(1, "r2") == 0
}
fn mp_wmb_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    smp_wmb(t);
    m.y.write_once(t, 1);
    vec![]
}
fn mp_rmb_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    smp_rmb(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn mp_assign_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    m.y.rcu_assign_pointer(t, PTR_X);
    vec![]
}
fn mp_deref_p1(m: &Mem, t: &Task) -> Regs {
    m.rcu.rcu_read_lock(t);
    let r0 = m.y.rcu_dereference(t);
    let r1 = m.at(r0).read_once(t);
    m.rcu.rcu_read_unlock(t);
    vec![("r0", r0), ("r1", r1)]
}
fn mp_deref_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == PTR_X && o.r(1, "r1") == 0
}
fn lock_mb_x_p0(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    smp_mb__after_spinlock(t);
    m.x.write_once(t, 1);
    g.unlock();
    vec![]
}
fn lock_x_p0(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    m.x.write_once(t, 1);
    g.unlock();
    vec![]
}
fn silsil_p1(m: &Mem, t: &Task) -> Regs {
    let r1 = m.x.load_acquire(t);
    let r2 = u64::from(m.lock.spin_is_locked(t));
    let r3 = u64::from(m.lock.spin_is_locked(t));
    vec![("r1", r1), ("r2", r2), ("r3", r3)]
}
fn silsil_exists(o: &Outcome) -> bool {
    o.r(1, "r1") == 1 && o.r(1, "r2") == 0 && o.r(1, "r3") == 1
}
fn mp_polocks_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    let g = m.lock.spin_lock(t);
    m.y.write_once(t, 1);
    g.unlock();
    vec![]
}
fn mp_polocks_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    let r0 = m.y.read_once(t);
    g.unlock();
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn mp_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn mp_acquire_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.load_acquire(t);
    let r1 = m.x.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn mp_revlocks_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.y.read_once(t);
    let g = m.lock.spin_lock(t);
    let r1 = m.x.read_once(t);
    g.unlock();
    vec![("r0", r0), ("r1", r1)]
}
fn mp_revlocks_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    m.x.write_once(t, 1);
    g.unlock();
    m.y.write_once(t, 1);
    vec![]
}
fn mp_revlocks_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == 1 && o.r(0, "r1") == 0
}
fn mp_unlocklock_p0(m: &Mem, t: &Task) -> Regs {
    let s = m.lock.spin_lock(t);
    m.x.write_once(t, 1);
    s.unlock();
    let g = m.lock2.spin_lock(t);
    m.y.write_once(t, 1);
    g.unlock();
    vec![]
}
fn mp_rmb_r1r2_p1(m: &Mem, t: &Task) -> Regs {
    let r1 = m.y.read_once(t);
    smp_rmb(t);
    let r2 = m.x.read_once(t);
    vec![("r1", r1), ("r2", r2)]
}

// --- R, S, SB ------------------------------------------------------------

fn r_mb_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    smp_mb(t);
    m.y.write_once(t, 1);
    vec![]
}
fn r_mb_p1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 2);
    smp_mb(t);
    let r0 = m.x.read_once(t);
    vec![("r0", r0)]
}
fn r_p1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 2);
    let r0 = m.x.read_once(t);
    vec![("r0", r0)]
}
fn r_exists(o: &Outcome) -> bool {
    o.y == 2 && o.r(1, "r0") == 0
}
fn s_wmb_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 2);
    smp_wmb(t);
    m.y.write_once(t, 1);
    vec![]
}
fn s_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 2);
    m.y.write_once(t, 1);
    vec![]
}
fn s_exists(o: &Outcome) -> bool {
    o.x == 2 && o.r(1, "r0") == 1
}
fn sb_mb_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    smp_mb(t);
    let r0 = m.y.read_once(t);
    vec![("r0", r0)]
}
fn sb_mb_p1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 1);
    smp_mb(t);
    let r0 = m.x.read_once(t);
    vec![("r0", r0)]
}
fn sb_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    let r0 = m.y.read_once(t);
    vec![("r0", r0)]
}
fn sb_p1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 1);
    let r0 = m.x.read_once(t);
    vec![("r0", r0)]
}
/// __legitimize_mnt: the walker's count increment, then the seqcount re-read.
/// Its partner, mntput_no_expire's slow path (mount_lock's seqcount bumped,
/// then the count read), is SB's second thread: `sb_mb_p1`, and `sb_p1`
/// before 119e1ef80ecf.
fn mnt_legitimize_p0(m: &Mem, t: &Task) -> Regs {
    m.x.atomic_add(t, 1);
    smp_mb(t);
    let r0 = m.y.read_once(t);
    vec![("r0", r0)]
}
/// Before 119e1ef80ecf: no barrier on either side.
fn mnt_legitimize_2018_p0(m: &Mem, t: &Task) -> Regs {
    m.x.atomic_add(t, 1);
    let r0 = m.y.read_once(t);
    vec![("r0", r0)]
}
fn sb_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == 0 && o.r(1, "r0") == 0
}
fn sb_rfi_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    let r1 = m.x.read_once(t);
    let r2 = m.y.read_once(t);
    vec![("r1", r1), ("r2", r2)]
}
fn sb_rfi_p1(m: &Mem, t: &Task) -> Regs {
    m.y.write_once(t, 1);
    let r3 = m.y.read_once(t);
    let r4 = m.x.read_once(t);
    vec![("r3", r3), ("r4", r4)]
}
fn sb_rfi_exists(o: &Outcome) -> bool {
    o.r(0, "r2") == 0 && o.r(1, "r4") == 0
}

// --- Z6.0 ----------------------------------------------------------------

fn z6_lock_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    let r0 = m.y.read_once(t);
    m.z.write_once(t, 1);
    g.unlock();
    vec![("r0", r0)]
}
fn z6_lock_mb_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    smp_mb__after_spinlock(t);
    let r0 = m.y.read_once(t);
    m.z.write_once(t, 1);
    g.unlock();
    vec![("r0", r0)]
}
fn z6_p2(m: &Mem, t: &Task) -> Regs {
    m.z.write_once(t, 2);
    smp_mb(t);
    let r1 = m.x.read_once(t);
    vec![("r1", r1)]
}
fn z6_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.z == 2 && o.r(2, "r1") == 0
}

// --- dep+plain -----------------------------------------------------------

fn dep_plain_p0(m: &Mem, t: &Task) -> Regs {
    let a = m.x.read_once(t);
    // `z1` and `z2` are plain locations only P0 touches: the value flows
    // through them as through registers.
    let z1 = a;
    let z2 = z1;
    if z2 == 1 {
        m.y.write_once(t, 1);
    }
    vec![]
}
fn dep_plain_p1(m: &Mem, t: &Task) -> Regs {
    let r = m.y.load_acquire(t);
    m.x.store_release(t, r);
    vec![("r", r)]
}
fn dep_plain_exists(o: &Outcome) -> bool {
    o.x == 1 && o.y == 1
}

// --- Documentation/litmus-tests/atomic -----------------------------------

fn rmw_mb_p0(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    smp_rmb(t);
    let r1 = m.y.atomic_read(t);
    vec![("r0", r0), ("r1", r1)]
}
fn rmw_mb_p1(m: &Mem, t: &Task) -> Regs {
    m.y.atomic_add(t, 1);
    smp_mb__after_atomic(t);
    m.x.write_once(t, 1);
    vec![]
}
fn rmw_mb_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == 1 && o.r(0, "r1") == 0
}
/// `v` is `x` here.
fn add_unless_p0(m: &Mem, t: &Task) -> Regs {
    // atomic_add_unless(v, 1, 0) is atomic_inc_not_zero(v).
    m.x.atomic_inc_not_zero(t);
    vec![]
}
fn atomic_set_p1(m: &Mem, t: &Task) -> Regs {
    m.x.atomic_set(t, 0);
    vec![]
}
fn v_is_2(o: &Outcome) -> bool {
    o.x == 2
}
fn cmpxchg_fail_1(m: &Mem, t: &Task, mine: &Atomic, other: &Atomic, mb: bool) -> Regs {
    mine.write_once(t, 1);
    let r1 = m.z.cmpxchg(t, 1, 0);
    if mb {
        smp_mb__after_atomic(t);
    }
    let r0 = other.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn cfo1_p0(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_1(m, t, &m.x, &m.y, true)
}
fn cfo1_p1(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_1(m, t, &m.y, &m.x, true)
}
fn cfu1_p0(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_1(m, t, &m.x, &m.y, false)
}
fn cfu1_p1(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_1(m, t, &m.y, &m.x, false)
}
fn cmpxchg_fail_2_p0(m: &Mem, t: &Task) -> Regs {
    m.x.write_once(t, 1);
    let r1 = m.y.cmpxchg(t, 0, 1);
    vec![("r1", r1)]
}
fn cmpxchg_fail_2_p1(m: &Mem, t: &Task, mb: bool) -> Regs {
    let r1 = m.y.cmpxchg(t, 0, 1);
    if mb {
        smp_mb__after_atomic(t);
    }
    let r2 = m.x.read_once(t);
    vec![("r1", r1), ("r2", r2)]
}
fn cfo2_p1(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_2_p1(m, t, true)
}
fn cfu2_p1(m: &Mem, t: &Task) -> Regs {
    cmpxchg_fail_2_p1(m, t, false)
}
fn cmpxchg_fail_2_exists(o: &Outcome) -> bool {
    o.r(0, "r1") == 0 && o.r(1, "r1") == 1 && o.r(1, "r2") == 0
}

// --- Documentation/litmus-tests/locking ----------------------------------

/// Double-checked initialisation of `data` (= `y`) under `flag` (= `x`).
fn dcl(m: &Mem, t: &Task, fixed: bool) -> Regs {
    let (flag, data) = (&m.x, &m.y);
    let r0 = if fixed {
        flag.load_acquire(t)
    } else {
        flag.read_once(t)
    };
    let mut r1 = 0;
    if r0 == 0 {
        let g = m.lock.spin_lock(t);
        r1 = flag.read_once(t);
        if r1 == 0 {
            data.write_once(t, 1);
            if fixed {
                flag.store_release(t, 1);
            } else {
                flag.write_once(t, 1);
            }
        }
        g.unlock();
    }
    let r2 = data.read_once(t);
    vec![("r0", r0), ("r1", r1), ("r2", r2)]
}
fn dcl_broken(m: &Mem, t: &Task) -> Regs {
    dcl(m, t, false)
}
fn dcl_fixed(m: &Mem, t: &Task) -> Regs {
    dcl(m, t, true)
}
fn dcl_exists(o: &Outcome) -> bool {
    o.r(0, "r2") == 0 || o.r(1, "r2") == 0
}
/// `x` is `x`, the atomic `y` is `y`.
fn rm_p0(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    let r2 = m.y.atomic_add_return(t, 1);
    m.x.write_once(t, 1);
    g.unlock();
    vec![("r2", r2)]
}
fn rm_broken_p1(m: &Mem, t: &Task) -> Regs {
    let g = m.lock.spin_lock(t);
    let r0 = m.x.read_once(t);
    let r1 = m.x.read_once(t);
    let r2 = m.y.atomic_add_return(t, 1);
    g.unlock();
    vec![("r0", r0), ("r1", r1), ("r2", r2)]
}
fn rm_fixed_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    let r1 = m.x.read_once(t);
    let g = m.lock.spin_lock(t);
    let r2 = m.y.atomic_add_return(t, 1);
    g.unlock();
    vec![("r0", r0), ("r1", r1), ("r2", r2)]
}
fn rm_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 0 && o.r(1, "r1") == 1 && o.r(1, "r2") == 1
}

// --- Documentation/litmus-tests/rcu --------------------------------------

fn rcu_free_p0(m: &Mem, t: &Task) -> Regs {
    m.rcu.rcu_read_lock(t);
    let r0 = m.y.rcu_dereference(t);
    let r1 = m.at(r0).read_once(t);
    m.rcu.rcu_read_unlock(t);
    vec![("r0", r0), ("r1", r1)]
}
fn rcu_free_p1(m: &Mem, t: &Task) -> Regs {
    m.y.rcu_assign_pointer(t, PTR_Z);
    m.rcu.synchronize_rcu(t);
    m.x.write_once(t, 0);
    vec![]
}
fn rcu_free_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == PTR_X && o.r(0, "r1") == 0
}
fn rcu_read_p0(m: &Mem, t: &Task) -> Regs {
    m.rcu.rcu_read_lock(t);
    m.x.write_once(t, 1);
    m.y.write_once(t, 1);
    m.rcu.rcu_read_unlock(t);
    vec![]
}
fn rcu_read_p1(m: &Mem, t: &Task) -> Regs {
    let r0 = m.x.read_once(t);
    m.rcu.synchronize_rcu(t);
    let r1 = m.y.read_once(t);
    vec![("r0", r0), ("r1", r1)]
}
fn rcu_read_exists(o: &Outcome) -> bool {
    o.r(1, "r0") == 1 && o.r(1, "r1") == 0
}

// --- vfsmc engine probes: a thread loads, then stores, the same location --
//
// P0 runs first when nothing preempts it. Two handshakes on `z` make the
// outcome need P0 preempted twice: P1 reads P0's first store to `z` before
// its update, and P0's second store to `z` after it. Without them loom 0.7.3
// still found these outcomes at preemption bound 1, by the extra backtrack
// point its bounded search adds at the previous context switch, and missed
// them only unbounded; with them it misses them at every bound.

fn probe_reader_p0(m: &Mem, t: &Task) -> Regs {
    m.z.write_once(t, 1);
    let r0 = m.y.read_once(t);
    let r1 = m.x.read_once(t);
    m.z.write_once(t, 2);
    vec![("r0", r0), ("r1", r1)]
}
fn probe_mp_exists(o: &Outcome) -> bool {
    o.r(0, "r0") == 1 && o.r(0, "r1") == 0 && o.r(1, "r2") == 1 && o.r(1, "r3") == 2
}
/// P1: `update` between the handshakes.
fn probe_writer(m: &Mem, t: &Task, update: fn(&Mem, &Task)) -> Regs {
    let r2 = m.z.read_once(t);
    update(m, t);
    let r3 = m.z.read_once(t);
    vec![("r2", r2), ("r3", r3)]
}
/// A flag update by its only writer: store the data, read the flags, store
/// them with a bit set.
fn probe_flag_load_store_p1(m: &Mem, t: &Task) -> Regs {
    probe_writer(m, t, |m, t| {
        m.x.write_once(t, 1);
        let flags = m.y.read_once(t);
        m.y.write_once(t, flags | 1);
    })
}
/// The same with the kernel's `try_cmpxchg` loop, relaxed.
fn probe_flag_load_cmpxchg_p1(m: &Mem, t: &Task) -> Regs {
    probe_writer(m, t, |m, t| {
        m.x.write_once(t, 1);
        let mut flags = m.y.read_once(t);
        loop {
            let seen = m.y.cmpxchg_relaxed(t, flags, flags | 1);
            if seen == flags {
                break;
            }
            flags = seen;
        }
    })
}
/// A fully ordered `cmpxchg`, whose stand-in loads before its RMW (see
/// `Atomic::cas`): the same shape without a load in the test.
fn probe_cmpxchg_p1(m: &Mem, t: &Task) -> Regs {
    probe_writer(m, t, |m, t| {
        m.x.write_once(t, 1);
        m.y.cmpxchg(t, 0, 1);
    })
}
fn probe_load_p0(m: &Mem, t: &Task) -> Regs {
    m.z.write_once(t, 1);
    let r0 = m.x.read_once(t);
    m.z.write_once(t, 2);
    vec![("r0", r0)]
}
/// tokio-rs/loom#392: a thread whose first operation is a load, and which
/// loads `x` before storing to it.
fn probe_load_store_p1(m: &Mem, t: &Task) -> Regs {
    probe_writer(m, t, |m, t| {
        m.x.read_once(t);
        m.x.write_once(t, 1);
    })
}

const fn test(
    name: &'static str,
    dir: &'static str,
    result: Documented,
    threads: &'static [Thread],
    exists: fn(&Outcome) -> bool,
    clause: &'static str,
    about: &'static str,
) -> LitmusTest {
    LitmusTest {
        name,
        dir,
        result,
        weak: true,
        init: [0, 0, 0],
        y_is_pointer: false,
        threads,
        exists,
        clause,
        about,
        loom: None,
        copy: None,
    }
}

impl LitmusTest {
    const fn loom(self, limit: LoomLimit) -> LitmusTest {
        LitmusTest {
            loom: Some(limit),
            ..self
        }
    }
    /// The `Sometimes` outcome is reachable under sequential consistency.
    const fn sequentially_consistent(self) -> LitmusTest {
        LitmusTest {
            weak: false,
            ..self
        }
    }
    const fn read_at(self, commit: &'static str, era: &'static str) -> LitmusTest {
        LitmusTest {
            copy: Some(KernelCopy { commit, era }),
            ..self
        }
    }
    const fn init(self, init: [u64; 3], y_is_pointer: bool) -> LitmusTest {
        LitmusTest {
            init,
            y_is_pointer,
            ..self
        }
    }
}

use Documented::{Never, Sometimes};
use LoomLimit::{CannotObserve, LoomBug, Vacuous, WeakerThanLkmm};

/// Every litmus test, in `vfsmc list` order (the kernel directories, each
/// alphabetical, then vfsmc's engine probes).
pub static TESTS: &[LitmusTest] = &[
    test("CoRR+poonceonce+Once", TOOLS, Never, &[w_x1, corr_p1],
        |o| o.r(1, "r0") == 1 && o.r(1, "r1") == 0, "1:r0=1 /\\ 1:r1=0",
        "two reads of one location by one thread never go back in coherence order")
        .read_at("84a83eba5c5a", TYPED),
    test("CoRW+poonceonce+Once", TOOLS, Never, &[corw_p0, w_x2],
        |o| o.x == 2 && o.r(0, "r0") == 2, "x=2 /\\ 0:r0=2",
        "a read never sees a store that is coherence-after the reader's own later store")
        .read_at("84a83eba5c5a", TYPED),
    test("CoWR+poonceonce+Once", TOOLS, Never, &[cowr_p0, w_x2],
        |o| o.x == 1 && o.r(0, "r0") == 2, "x=1 /\\ 0:r0=2",
        "a read after a thread's own store never sees a store coherence-before it")
        .read_at("1947bfcf81a9", ADD_TYPES),
    test("CoWW+poonceonce", TOOLS, Never, &[coww_p0],
        |o| o.x == 1, "x=1",
        "two stores of one thread to one location keep program order in coherence")
        .read_at("cbecf716ca61", TYPED),
    test("IRIW+fencembonceonces+OnceOnce", TOOLS, Never, &[w_x1, iriw_mb_p1, w_y1, iriw_mb_p3],
        iriw_exists, "1:r0=1 /\\ 1:r1=0 /\\ 3:r0=1 /\\ 3:r1=0",
        "smp_mb between the reads makes two readers agree on the order of independent writes")
        .read_at("8db90aa36063", TYPED),
    test("IRIW+poonceonces+OnceOnce", TOOLS, Sometimes, &[w_x1, iriw_p1, w_y1, iriw_p3],
        iriw_exists, "1:r0=1 /\\ 1:r1=0 /\\ 3:r0=1 /\\ 3:r1=0",
        "without barriers two readers may see independent writes in opposite orders")
        .read_at("b7e1a1e9ae49", UNDATED),
    test("ISA2+pooncelock+pooncelock+pombonce", TOOLS, Never, &[locked_xy_p0, isa2_lock_p1, isa2_lock_p2],
        isa2_lock_exists, "1:r0=1 /\\ 2:r2=1 /\\ 2:r1=0",
        "store ordering from two critical sections of one lock is visible to an outside smp_mb reader")
        .loom(WeakerThanLkmm("in C11 the outside thread's relaxed read of z synchronises with nothing, and a SeqCst fence on one side alone orders nothing; LKMM's lock ordering is cumulative"))
        .read_at("2313f4700327", TYPED),
    test("ISA2+poonceonces", TOOLS, Sometimes, &[xy_p0, isa2_p1, isa2_p2],
        chain3_exists, "1:r0=1 /\\ 2:r0=1 /\\ 2:r1=0",
        "an unordered three-thread message-passing chain can lose the first store")
        .read_at("8c1dccc80380", TYPED),
    test("ISA2+pooncerelease+poacquirerelease+poacquireonce", TOOLS, Never, &[x_release_y_p0, isa2_rel_p1, isa2_rel_p2],
        chain3_exists, "1:r0=1 /\\ 2:r0=1 /\\ 2:r1=0",
        "a release-acquire chain with one non-reads-from link orders the first store before the last read")
        .read_at("2555693dd85c", UNDATED),
    test("LB+fencembonceonce+ctrlonceonce", TOOLS, Never, &[lb_ctrl_p0, lb_mb_p1],
        lb_exists, "0:r0=1 /\\ 1:r0=1",
        "a control dependency and smp_mb forbid load buffering")
        .loom(Vacuous(NO_LB))
        .read_at("102056180529", TYPED),
    test("LB+poacquireonce+pooncerelease", TOOLS, Never, &[lb_release_p0, lb_acquire_p1],
        lb_exists, "0:r0=1 /\\ 1:r0=1",
        "a release-acquire pair forbids load buffering")
        .loom(Vacuous(NO_LB))
        .read_at("0b77b9706662", UNDATED),
    test("LB+poonceonces", TOOLS, Sometimes, &[lb_p0, lb_p1],
        lb_exists, "0:r0=1 /\\ 1:r0=1",
        "without ordering each load may read the other thread's later store")
        .loom(CannotObserve(LOAD_BUFFERING))
        .read_at("281a94b0f2f0", TYPED),
    test("LB+unlocklockonceonce+poacquireonce", TOOLS, Never, &[lb_unlocklock_p0, lb_unlocklock_p1],
        lb_unlocklock_exists, "0:r1=1 /\\ 1:r2=1",
        "critical sections of different locks on one CPU execute in order")
        .loom(Vacuous(NO_LB))
        .read_at("0cfa80d3c398", UNLOCK_LOCK),
    test("MP+fencewmbonceonce+fencermbonceonce", TOOLS, Never, &[mp_wmb_p0, mp_rmb_p1],
        mp_exists, "1:r0=1 /\\ 1:r1=0",
        "smp_wmb paired with smp_rmb forbids message-passing reordering")
        .read_at("415e915fdfc7", TYPED),
    test("MP+onceassign+derefonce", TOOLS, Never, &[mp_assign_p0, mp_deref_p1],
        mp_deref_exists, "1:r0=x /\\ 1:r1=0",
        "rcu_assign_pointer and rcu_dereference hide pre-initialisation contents from a reader (rcu_dereference is an acquire load here, stronger than the address dependency LKMM relies on)")
        .init([0, PTR_Z, 0], true)
        .read_at("84a83eba5c5a", TYPED),
    test("MP+polockmbonce+poacquiresilsil", TOOLS, Never, &[lock_mb_x_p0, silsil_p1],
        silsil_exists, "1:r1=1 /\\ 1:r2=0 /\\ 1:r3=1",
        "spin_lock with smp_mb__after_spinlock is seen in order by a spin_is_locked observer")
        .loom(Vacuous(SIL_IS_SC))
        .read_at("3d34933a1c9a", BEFORE_TYPES),
    test("MP+polockonce+poacquiresilsil", TOOLS, Sometimes, &[lock_x_p0, silsil_p1],
        silsil_exists, "1:r1=1 /\\ 1:r2=0 /\\ 1:r3=1",
        "without smp_mb__after_spinlock a spin_is_locked observer may see the lock taken after the section's store")
        .loom(CannotObserve(WEAK_LOCK_STATE))
        .read_at("fbda16fbaf29", AFTER_TYPES),
    test("MP+polocks", TOOLS, Never, &[mp_polocks_p0, mp_polocks_p1],
        mp_exists, "1:r0=1 /\\ 1:r1=0",
        "lock and unlock stand in for acquire and release in message passing")
        .read_at("b6ff30849ca7", TYPED),
    test("MP+poonceonces", TOOLS, Sometimes, &[xy_p0, mp_p1],
        mp_exists, "1:r0=1 /\\ 1:r1=0",
        "unordered message passing can see the flag without the data")
        .read_at("d263dfa7d269", DRM_2021),
    test("MP+pooncerelease+poacquireonce", TOOLS, Never, &[x_release_y_p0, mp_acquire_p1],
        mp_exists, "1:r0=1 /\\ 1:r1=0",
        "smp_store_release paired with smp_load_acquire forbids message-passing reordering")
        .read_at("3765d01bab73", AFTER_TYPES),
    test("MP+porevlocks", TOOLS, Never, &[mp_revlocks_p0, mp_revlocks_p1],
        mp_revlocks_exists, "0:r0=1 /\\ 0:r1=0",
        "a lock holder sees every access its predecessor made before releasing the lock")
        .read_at("550d14e3942c", AFTER_TYPES),
    test("MP+unlocklockonceonce+fencermbonceonce", TOOLS, Never, &[mp_unlocklock_p0, mp_rmb_r1r2_p1],
        mp_r1r2_exists, "1:r1=1 /\\ 1:r2=0",
        "stores of two critical sections on one CPU propagate in order, even under different locks")
        .loom(WeakerThanLkmm("C11 gives no order between an unlock and a lock of different locks, LKMM does (po-unlock-lock-po)"))
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    test("R+fencembonceonces", TOOLS, Never, &[r_mb_p0, r_mb_p1],
        r_exists, "y=2 /\\ 1:r0=0",
        "smp_mb on both sides forbids the R pattern")
        .read_at("9d4d8572a539", TYPED),
    test("R+poonceonces", TOOLS, Sometimes, &[xy_p0, r_p1],
        r_exists, "y=2 /\\ 1:r0=0",
        "without barriers a store may be overwritten while the other thread reads stale data")
        .read_at("84a83eba5c5a", TYPED),
    test("S+fencewmbonceonce+poacquireonce", TOOLS, Never, &[s_wmb_p0, lb_acquire_p1],
        s_exists, "x=2 /\\ 1:r0=1",
        "smp_wmb and an acquire order a store before a later store of another thread")
        .read_at("b5630b0af3ca", UNDATED),
    test("S+poonceonces", TOOLS, Sometimes, &[s_p0, lb_p1],
        s_exists, "x=2 /\\ 1:r0=1",
        "without ordering a thread's first store may land after another thread's store it preceded")
        .read_at("50df51d12c31", TYPED),
    test("SB+fencembonceonces", TOOLS, Never, &[sb_mb_p0, sb_mb_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "smp_mb on both sides forbids store buffering")
        .read_at("55b024554aae", UNDATED),
    test("SB+poonceonces", TOOLS, Sometimes, &[sb_p0, sb_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "without barriers both threads may miss each other's store")
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    test("SB+rfionceonce-poonceonces", TOOLS, Sometimes, &[sb_rfi_p0, sb_rfi_p1],
        sb_rfi_exists, "0:r2=0 /\\ 1:r4=0",
        "reading one's own store first does not stop store buffering (LKMM is not multicopy atomic)")
        .read_at("9695e7a856bf", UNLOCK_LOCK),
    test("WRC+poonceonces+Once", TOOLS, Sometimes, &[w_x1, wrc_p1, wrc_p2],
        chain3_exists, "1:r0=1 /\\ 2:r0=1 /\\ 2:r1=0",
        "write-to-read causality fails without ordering")
        .read_at("84a83eba5c5a", TYPED),
    test("WRC+pooncerelease+fencermbonceonce+Once", TOOLS, Never, &[w_x1, wrc_rel_p1, wrc_rmb_p2],
        chain3_exists, "1:r0=1 /\\ 2:r0=1 /\\ 2:r1=0",
        "smp_store_release is A-cumulative: with smp_rmb it restores write-to-read causality")
        .read_at("84a83eba5c5a", TYPED),
    test("Z6.0+pooncelock+poonceLock+pombonce", TOOLS, Never, &[locked_xy_p0, z6_lock_mb_p1, z6_p2],
        z6_exists, "1:r0=1 /\\ z=2 /\\ 2:r1=0",
        "smp_mb__after_spinlock makes the lock chain order stores for an outside smp_mb thread")
        .read_at("552c69b36ebd", UNDATED),
    test("Z6.0+pooncelock+pooncelock+pombonce", TOOLS, Sometimes, &[locked_xy_p0, z6_lock_p1, z6_p2],
        z6_exists, "1:r0=1 /\\ z=2 /\\ 2:r1=0",
        "a lock chain alone does not order stores for an outside thread")
        .read_at("d0034a7a4ac7", UNDATED),
    test("Z6.0+pooncerelease+poacquirerelease+fencembonceonce", TOOLS, Sometimes, &[x_release_y_p0, isa2_rel_p1, z6_p2],
        z6_exists, "1:r0=1 /\\ z=2 /\\ 2:r1=0",
        "a release-acquire chain does not suffice with two non-reads-from links")
        .read_at("8db90aa36063", TYPED),
    test("dep+plain", TOOLS, Never, &[dep_plain_p0, dep_plain_p1],
        dep_plain_exists, "x=1 /\\ y=1",
        "a value carried through plain locations still heads a control dependency")
        .loom(Vacuous(NO_LB))
        .read_at("0604aa87b098", UNDATED),
    test("Atomic-RMW+mb__after_atomic-is-stronger-than-acquire", ATOMIC, Never, &[rmw_mb_p0, rmw_mb_p1],
        rmw_mb_exists, "0:r0=1 /\\ 0:r1=0",
        "an atomic RMW followed by smp_mb__after_atomic orders both its parts before later accesses")
        .read_at("fc4b04d84027", UNDATED),
    test("Atomic-RMW-ops-are-atomic-WRT-atomic_set", ATOMIC, Never, &[add_unless_p0, atomic_set_p1],
        v_is_2, "v=2",
        "atomic_set cannot split an atomic_add_unless")
        .loom(LoomBug(Need::AtomicRmw("loom orders a plain store between an RMW and the value it read (tokio-rs/loom#254, #389): the trace cmpxchg(v, 1→2), atomic_set(v, 0) ends with v=2, impossible in C11; shuttle holds it")))
        .init([1, 0, 0], false)
        .read_at("65e575744264", UNDATED),
    test("cmpxchg-fail-ordered-1", ATOMIC, Never, &[cfo1_p0, cfo1_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "a failed cmpxchg followed by smp_mb__after_atomic is a full barrier")
        .read_at("d754ed2821fd", UNDATED),
    test("cmpxchg-fail-ordered-2", ATOMIC, Never, &[cmpxchg_fail_2_p0, cfo2_p1],
        cmpxchg_fail_2_exists, "0:r1=0 /\\ 1:r1=1 /\\ 1:r2=0",
        "smp_mb__after_atomic gives a failed cmpxchg acquire ordering")
        .read_at("c771600c6af1", UNDATED),
    test("cmpxchg-fail-unordered-1", ATOMIC, Sometimes, &[cfu1_p0, cfu1_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "a failed cmpxchg is not a full barrier")
        .read_at("2ba5b4130e3d", UNDATED),
    test("cmpxchg-fail-unordered-2", ATOMIC, Sometimes, &[cmpxchg_fail_2_p0, cfu2_p1],
        cmpxchg_fail_2_exists, "0:r1=0 /\\ 1:r1=1 /\\ 1:r2=0",
        "a failed cmpxchg is neither acquire nor release")
        .read_at("7237cb3e1544", UNDATED),
    test("DCL-broken", LOCKING, Sometimes, &[dcl_broken, dcl_broken],
        dcl_exists, "0:r2=0 \\/ 1:r2=0",
        "double-checked locking needs more than the lock: the unlocked fast path can see the flag without the data")
        .read_at("03c601927b67", UNDATED),
    test("DCL-fixed", LOCKING, Never, &[dcl_fixed, dcl_fixed],
        dcl_exists, "0:r2=0 \\/ 1:r2=0",
        "double-checked locking with smp_load_acquire and smp_store_release on the flag")
        .read_at("6757641d3982", UNDATED),
    test("RM-broken", LOCKING, Never, &[rm_p0, rm_broken_p1],
        rm_exists, "filter (1:r0=0 /\\ 1:r1=1) exists (1:r2=1)",
        "documented `Result: DEADLOCK`: with both reads inside the critical section no execution passes the filter, so the clause is never satisfied")
        .read_at("d5984d29afdb", UNDATED),
    test("RM-fixed", LOCKING, Never, &[rm_p0, rm_fixed_p1],
        rm_exists, "filter (1:r0=0 /\\ 1:r1=1) exists (1:r2=1)",
        "seeing the critical section's store means entering the lock after it (no roach-motel reordering)")
        .read_at("9c3a985f88fa", UNDATED),
    test("RCU+sync+free", RCU, Never, &[rcu_free_p0, rcu_free_p1],
        rcu_free_exists, "0:r0=x /\\ 0:r1=0",
        "a reader that saw the old pointer never sees the writes after the grace period (rcu_dereference is an acquire load here, stronger than the address dependency)")
        .init([1, PTR_X, 1], true)
        .read_at("3bec5b6aae83", UNDATED),
    test("RCU+sync+read", RCU, Never, &[rcu_read_p0, rcu_read_p1],
        rcu_read_exists, "1:r0=1 /\\ 1:r1=0",
        "after a grace period the updater sees every store of the read-side sections it waited for")
        .read_at("a68415c27ff3", UNDATED),
    test("probe-MP+flag-load-store", PROBE, Sometimes, &[probe_reader_p0, probe_flag_load_store_p1],
        probe_mp_exists, PROBE_MP,
        "unordered message passing where the writer reads its flag before storing it (tokio-rs/loom#166: loom 0.7.3 never ran the reader after the flag store)"),
    test("probe-MP+flag-load-cmpxchg", PROBE, Sometimes, &[probe_reader_p0, probe_flag_load_cmpxchg_p1],
        probe_mp_exists, PROBE_MP,
        "the same with a relaxed cmpxchg loop as the flag update (an RMW after the writer's own load)"),
    test("probe-MP+cmpxchg", PROBE, Sometimes, &[probe_reader_p0, probe_cmpxchg_p1],
        probe_mp_exists, PROBE_MP,
        "a fully ordered cmpxchg orders nothing for a reader without barriers; its stand-in loads before the RMW, the same shape"),
    test("probe-first-op-load", PROBE, Sometimes, &[probe_load_p0, probe_load_store_p1],
        |o| o.r(0, "r0") == 1 && o.r(1, "r2") == 1 && o.r(1, "r3") == 2, "0:r0=1 /\\ 1:r2=1 /\\ 1:r3=2",
        "a thread that loads a location before storing to it can still be run before another thread's load of it (tokio-rs/loom#392)")
        .sequentially_consistent(),
    test("MNT+legitimize+mntput", SHAPES, Never, &[mnt_legitimize_p0, sb_mb_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "__legitimize_mnt and mntput_no_expire each see the other (the smp_mb pair of 119e1ef80ecf): the walker sees the umount's seqcount or the final put sees the walker's count")
        .read_at("c3d6d6dde3a3", MOUNT_7_3),
    test("MNT+legitimize+mntput-2018", SHAPES, Sometimes, &[mnt_legitimize_2018_p0, sb_p1],
        sb_exists, "0:r0=0 /\\ 1:r0=0",
        "before 119e1ef80ecf: the walker keeps its reference on a mount whose final put did not count it")
        .read_at("c3d6d6dde3a3", MOUNT_7_3_WITHOUT_MB),
];

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
            None if t.dir == PROBE => {
                "specs/src/litmus.rs: a vfsmc engine probe, not a kernel test"
            }
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
    tier: Tier::Pr,
    generated: false,
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
        run_test(test);
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

/// The litmus functions' names, which label their steps.
const PROCS: [&str; 4] = ["P0", "P1", "P2", "P3"];

fn run_test(test: &'static LitmusTest) {
    let mem = Arc::new(Mem::new(test));
    let regs: Arc<Mutex<Vec<Regs>>> = Arc::new(Mutex::new(vec![vec![]; test.threads.len()]));
    let handles: Vec<_> = test
        .threads
        .iter()
        .enumerate()
        .map(|(i, thread)| {
            let (mem, regs, thread) = (mem.clone(), regs.clone(), *thread);
            let name = format!("P{i}");
            exec::spawn(&name.clone(), move || {
                let t = Task::new(&name, Context::Task);
                let _f = t.enter(PROCS[i]);
                let r = thread(&mem, &t);
                regs.lock().unwrap_or_else(|p| p.into_inner())[i] = r;
            })
        })
        .collect();
    for h in handles {
        h.join();
    }
    let outcome = Outcome {
        regs: regs.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        x: mem.x.value_at_quiescence(),
        y: mem.y.value_at_quiescence(),
        z: mem.z.value_at_quiescence(),
    };
    if (test.exists)(&outcome) {
        exec::check_final("main", "exists", || {
            Err(format!(
                "exists ({}) is satisfied: {}",
                test.clause,
                render(test, &outcome)
            ))
        });
    }
}

fn render(test: &LitmusTest, o: &Outcome) -> String {
    let mut parts = Vec::new();
    for (i, regs) in o.regs.iter().enumerate() {
        for (name, v) in regs {
            parts.push(format!("{i}:{name}={v}"));
        }
    }
    let y = if test.y_is_pointer {
        show_ptr(o.y)
    } else {
        o.y.to_string()
    };
    parts.push(format!("x={} y={y} z={}", o.x, o.z));
    parts.join(" ")
}
