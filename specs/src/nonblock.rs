//! The `nonblock` model: io_uring's openat issued inline with LOOKUP_CACHED
//! and punted to an io-wq worker when the walk would block (fs/namei.c
//! try_to_unlazy*, complete_walk, path_init's guard; fs/open.c
//! build_open_flags' RESOLVE_CACHED rules; io_uring/openclose.c; brief §3).
//! It composes three models through their interfaces: the open path
//! (`namei::open::do_file_open`, on the walk and the VFS substrate), the fd
//! table (`fdtable`, reached through `files::FileTable`) and the io_uring
//! request path (`io_uring`). One submitter task submits the requests; io-wq
//! workers are created on demand; an actor changes the namespace and
//! another thread of the process may use the fd table meanwhile.
//!
//! Invariants read the ghost request log (CQEs, filename puts, which
//! `do_file_open` calls each request made), the open log, the ghost
//! namespace, the reference ledger and the fd table's ghost; the models
//! raise the ones that belong at a step (a sleep in a non-blocking walk, a
//! put of a reference not held, a link body never released, a filename put
//! twice).

pub mod reference;

use std::sync::Arc;

use vfsmc_model::exec;
use vfsmc_model::fdtable::{self, Fs, Init};
use vfsmc_model::files::FileTable;
use vfsmc_model::io_uring::{
    io_worker_task, worker_name, Change, Flavor, Ring, RingState, Sqe, REQ_F_FORCE_ASYNC, WORKERS,
};
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::open::{
    Base, Change as OpenChange, OpenCall, OpenFlavor, OpenHow, OpenLog, __O_TMPFILE, O_CREAT,
    O_DIRECTORY, O_RDWR, O_TRUNC, RESOLVE_CACHED,
};
use vfsmc_model::namei::{Bug, Filename, Flavor as WalkFlavor, LOOKUP_CACHED};
use vfsmc_model::trace::Context;
use vfsmc_model::vfs::namespace::outcomes;
use vfsmc_model::vfs::{Node, Vfs};

use crate::fdtable::{
    full_fds_bits_of, lowest_free_of, no_lost_install_of, run_program, unique_fd_of, Op as FdOp,
};
use crate::unlazy::{act, refs_balanced, render_vfs, show_outcome, Op};
use crate::{
    deep, returned_by, scenario, Broken, Check, Expected, Invariant, Judge, Scenario, ScenarioRow,
    Spec, Tier, Variant, Watch,
};

/// One IORING_OP_OPENAT2 the submitter submits.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub path: &'static str,
    pub flags: u32,
    /// The application set RESOLVE_CACHED in `open_how.resolve`.
    pub resolve_cached: bool,
}

impl Request {
    pub fn sqe(self) -> Sqe {
        Sqe {
            name: Filename::new(self.path),
            how: OpenHow {
                flags: self.flags,
                resolve: if self.resolve_cached {
                    RESOLVE_CACHED
                } else {
                    0
                },
            },
        }
    }
}

/// A scenario made concrete.
#[derive(Clone, Debug)]
pub struct Plan {
    pub tree: &'static [Node],
    pub requests: Vec<Request>,
    /// The namespace adversary's changes.
    pub actor: Vec<Op>,
    /// Another thread of the process, on the same fd table.
    pub fd_actor: Vec<FdOp>,
}

/// Names the ledger and the report list.
const HOLDERS: [&str; 7] = [
    "submitter",
    "actor",
    "fd_actor",
    "main",
    WORKERS[0],
    WORKERS[1],
    WORKERS[2],
];

const fn open(path: &'static str) -> Request {
    Request {
        path,
        flags: 0,
        resolve_cached: false,
    }
}

const fn cached(path: &'static str, flags: u32) -> Request {
    Request {
        path,
        flags,
        resolve_cached: true,
    }
}

fn plan(tree: &'static [Node], requests: &[Request], actor: &[Op], fd_actor: &[FdOp]) -> Plan {
    Plan {
        tree,
        requests: requests.to_vec(),
        actor: actor.to_vec(),
        fd_actor: fd_actor.to_vec(),
    }
}

const HOT: &[Node] = &[
    Node::Dir("/tmp"),
    Node::File("/tmp/a"),
    Node::File("/tmp/b"),
];
const COLD: &[Node] = &[Node::Dir("/tmp"), Node::Uncached("/tmp/x")];

fn hot_open(_: &[u8]) -> Plan {
    plan(
        HOT,
        &[open("/tmp/a"), open("/tmp/b")],
        &[Op::Unlink("/tmp/a")],
        &[],
    )
}

fn cold_miss(_: &[u8]) -> Plan {
    plan(COLD, &[open("/tmp/x")], &[], &[FdOp::Dup2(0, 3)])
}

fn rename_vs_cached_open(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::Dir("/tmp/d"),
        Node::File("/tmp/d/x"),
    ];
    plan(
        TREE,
        &[open("/tmp/d/x")],
        &[Op::Rename("/tmp/d", "/tmp/b2")],
        &[],
    )
}

fn trailing_link_miss(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::Uncached("/tmp/x"),
        Node::Symlink("/l", "tmp/x"),
    ];
    plan(TREE, &[open("/l")], &[], &[])
}

/// /proc with the process's own directory not in the dcache (its pid
/// entry needs ->lookup) and a kernel thread's directory that is.
const PROC: &[Node] = &[
    Node::Dir("/proc"),
    Node::SelfLink("/proc/thread-self"),
    Node::UncachedDir("/proc/1"),
    Node::File("/proc/1/comm"),
    Node::Dir("/proc/2"),
    Node::File("/proc/2/comm"),
];

fn thread_self_miss(_: &[u8]) -> Plan {
    plan(PROC, &[open("/proc/thread-self/comm")], &[], &[])
}

fn resolve_cached(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::File("/tmp/a"),
        Node::Uncached("/tmp/x"),
    ];
    plan(
        TREE,
        &[
            cached("/tmp", O_DIRECTORY),
            cached("/tmp/x", 0),
            cached("/tmp/a", O_RDWR | O_CREAT),
        ],
        &[Op::Unlink("/tmp/a")],
        &[],
    )
}

fn creat_vs_hot(_: &[u8]) -> Plan {
    plan(
        HOT,
        &[
            Request {
                path: "/tmp/c",
                flags: O_RDWR | O_CREAT,
                resolve_cached: false,
            },
            open("/tmp/a"),
        ],
        &[Op::Rename("/tmp/a", "/tmp/c")],
        &[],
    )
}

/// The seed's measurement in miniature (Jens Axboe, 15 Dec 2020: every file
/// under /usr, about a third of them cached): six opens of two hot and four
/// cold names, one submitter, io-wq workers on demand, the actor unlinking
/// one hot name. Input byte 0 set to 1 asks for RESOLVE_CACHED on every
/// request (the application's own -EAGAIN instead of a punt).
fn seed(bytes: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::File("/tmp/a"),
        Node::File("/tmp/b"),
        Node::Uncached("/tmp/c"),
        Node::Uncached("/tmp/x"),
        Node::Uncached("/tmp/m"),
        Node::Uncached("/tmp/d"),
    ];
    let app_cached = bytes.first() == Some(&1);
    let requests: Vec<Request> = ["/tmp/a", "/tmp/c", "/tmp/x", "/tmp/b", "/tmp/m", "/tmp/d"]
        .iter()
        .map(|&path| Request {
            path,
            flags: 0,
            resolve_cached: app_cached,
        })
        .collect();
    plan(TREE, &requests, &[Op::Unlink("/tmp/b")], &[])
}

const SCENARIOS: &[ScenarioRow<Plan>] = &[
    scenario(
        "hot-open",
        "two io_uring openats of cached files (/tmp/a, /tmp/b) issued inline while the actor \
         unlinks /tmp/a: each completes inline, with the file or -ENOENT",
        &["inline_completion", "legitimized"],
        Some(2),
        hot_open,
    ),
    scenario(
        "cold-miss",
        "an openat of /tmp/x, on disk but not in the dcache, while another thread dup2s onto \
         fd 3 (the one the open reserves): the inline walk bails out (-ECHILD, then path_init's -EAGAIN), the fd goes back, \
         the request is punted and an io-wq worker opens it with ->lookup",
        &["cached_bailout", "cached_without_rcu", "punt", "fs_lookup"],
        Some(3),
        cold_miss,
    ).judged_on_optimal(),
    scenario(
        "rename-vs-cached-open",
        "an openat of the cached /tmp/d/x while the actor renames /tmp/d: the inline lazy walk \
         fails a d_seq check in RCU mode, the second attempt stops at path_init's guard",
        &["inline_completion", "cached_without_rcu", "punt"],
        Some(2),
        rename_vs_cached_open,
    ).judged_on_optimal(),
    scenario(
        "trailing-link-miss",
        "an openat of /l, a cached symlink to tmp/x with x not in the dcache: the inline walk \
         misses with the link on its stack (depth 1) and bails out",
        &["cached_bailout_with_links", "punt", "fs_lookup"],
        Some(2),
        trailing_link_miss,
    ).judged_on_optimal(),
    scenario(
        "thread-self-miss",
        "an openat of /proc/thread-self/comm with the process's /proc/1 not in the dcache: the \
         inline walk misses under the magic link (its body allocated), the worker resolves the \
         link again",
        &["cached_bailout_with_links", "link_body_released", "punt"],
        Some(2),
        thread_self_miss,
    ).judged_on_optimal(),
    scenario(
        "resolve-cached",
        "openat2 with RESOLVE_CACHED of the directory /tmp (O_DIRECTORY), of the uncached \
         /tmp/x, and with O_CREAT of /tmp/a while the actor unlinks it: the application's own \
         -EAGAIN, never a punt",
        &[
            "inline_completion",
            "cached_bailout",
            "build_open_flags_refused",
        ],
        Some(3),
        resolve_cached,
    ).judged_on_optimal(),
    scenario(
        "creat-vs-hot",
        "an O_CREAT openat of /tmp/c (forced async at prep) and an openat of the cached /tmp/a \
         while the actor renames a over c: the worker creates or opens c",
        &["force_async", "inline_completion"],
        Some(1),
        creat_vs_hot,
    ),
    Scenario {
        name: "seed",
        about: "the seed's measurement in miniature: 6 openats of 2 hot and 4 cold names in \
                /tmp, one submitter, io-wq workers on demand, the actor unlinking /tmp/b; \
                input byte 0 = 1 sets RESOLVE_CACHED on every request (for vfsmc diff and \
                bench: up to four workers, beyond loom's thread limit)",
        goals: &["inline_completion", "punt"],
        loom_bound: Some(0),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: true,
        split: false,
        plan: seed,
    },
    deep(
        "cold-miss-deep",
        "cold-miss at preemption bound 6 (deep tier)",
        &["cached_bailout", "cached_without_rcu", "punt", "fs_lookup"],
        6,
        cold_miss,
    ),
    deep(
        "hot-open-deep",
        "hot-open at preemption bound 3 (deep tier)",
        &["inline_completion", "legitimized"],
        3,
        hot_open,
    ),
    deep(
        "rename-vs-cached-open-deep",
        "rename-vs-cached-open at preemption bound 3 (deep tier)",
        &["inline_completion", "cached_without_rcu", "punt"],
        3,
        rename_vs_cached_open,
    ),
    deep(
        "creat-vs-hot-deep",
        "creat-vs-hot at preemption bound 2 (deep tier)",
        &["force_async", "inline_completion"],
        2,
        creat_vs_hot,
    ),
];

/// The current code of every part but the ones a row changes.
const fn code(walk: Option<Bug>, open: Option<OpenChange>, ring: Option<Change>) -> Code {
    Code {
        ring: Flavor {
            open: OpenFlavor {
                base: Base::Current,
                change: open,
                walk: WalkFlavor {
                    vfs: None,
                    bug: walk,
                },
            },
            change: ring,
        },
        table: None,
    }
}

const fn walk_bug(bug: Bug) -> Code {
    code(Some(bug), None, None)
}

const fn open_change(change: OpenChange) -> Code {
    code(None, Some(change), None)
}

const fn ring_change(change: Option<Change>) -> Code {
    code(None, None, change)
}

const fn table_bug(bug: fdtable::Bug) -> Code {
    Code {
        table: Some(bug),
        ..code(None, None, None)
    }
}

const VARIANTS: &[Variant<Code>] = &[
    Variant {
        name: "current",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:try_to_unlazy,try_to_unlazy_next,complete_walk,path_init \
                 (vfs-7.3-rc1.misc 1c3e8cef79ea); fs/open.c:build_open_flags (pull-filename \
                 26c9342bb761); io_uring/openclose.c:io_openat2 (591beb0e3a03)",
        about: "LOOKUP_CACHED fails every unlazy at once (links dropped, depth 0, path NULL), \
                complete_walk clears it, path_init refuses it without RCU; io_openat2 puts the \
                fd back and punts an inline -EAGAIN",
        code: ring_change(None),
    },
    Variant {
        name: "retry-no-rcu",
        expected: Expected::Holds,
        witness: "",
        kernel: "io_uring/openclose.c:io_openat2 with LOOKUP_NO_RCU on the re-issue (Matthew \
                 Wilcox's question, Jens Axboe's measurement, LOOKUP_NONBLOCK thread, Dec 2020)",
        about: "the worker's re-issue skips the RCU attempt: the same results, another cost",
        code: ring_change(Some(Change::RetryNoRcu)),
    },
    Variant {
        name: "cached-as-merged",
        expected: Expected::Violates("refs_exact"),
        witness: "trailing-link-miss",
        kernel: "fs/namei.c:try_to_unlazy,try_to_unlazy_next in 6c6ec2b0a3e0 before \
                 eacd9aa8cede (v5.12-rc1; the fix read in its stable backport)",
        about: "[real] the LOOKUP_CACHED exit leaves depth > 0 with stack entries that hold no \
                references, and terminate_walk, now in ref mode, puts them",
        code: walk_bug(Bug::CachedBailoutKeepsDepth),
    },
    Variant {
        name: "depth-predict-skips-cached-test",
        expected: Expected::Violates("might_sleep"),
        witness: "cold-miss",
        kernel: "fs/namei.c:try_to_unlazy in 7c179096e77e before 46af9ae1305f (v6.19-rc1 to \
                 rc5; Chris Mason's report of 12 Dec 2025)",
        about: "[real] with depth 0 the LOOKUP_CACHED test inside legitimize_links is skipped: \
                the miss legitimizes, and the locked lookup sleeps on i_rwsem",
        code: walk_bug(Bug::DepthPredictSkipsCachedTest),
    },
    Variant {
        name: "cached-test-before-depth-leaks-links",
        expected: Expected::Violates("refs_exact"),
        witness: "trailing-link-miss",
        kernel: "fs/namei.c:try_to_unlazy with the fix proposed in Chris Mason's report (12 Dec \
                 2025), as Mateusz Guzik reviewed it: \"fails to clean up links if nd->depth\"",
        about: "[real review finding] the LOOKUP_CACHED test moved before the depth test, \
                bailing out without drop_links: 2021's bug again when a link is stacked",
        code: walk_bug(Bug::CachedTestBeforeDepth),
    },
    Variant {
        name: "cached-bailout-skips-drop-links",
        expected: Expected::Violates("link_bodies_released"),
        witness: "thread-self-miss",
        kernel: "fs/namei.c:legitimize_links in eacd9aa8cede as first written (\"[caught by \
                 Jens: ... since we are zeroing ->depth here, we need to do drop_links() \
                 first]\")",
        about: "[real review finding] the LOOKUP_CACHED exit zeroes depth without drop_links: \
                a procfs link body's release never runs",
        code: walk_bug(Bug::CachedBailoutSkipsDropLinks),
    },
    Variant {
        name: "stale-path-after-failed-init",
        expected: Expected::Violates("refs_exact"),
        witness: "rename-vs-cached-open",
        kernel: "fs/namei.c:path_init,terminate_walk before \"Make sure nd->path.mnt and \
                 nd->path.dentry are always valid pointers\" (Viro, v5.12; mechanism from its \
                 message, the hunk not read)",
        about: "[real] a cached attempt that ends in RCU mode leaves nd->path set; the second \
                attempt fails at path_init's guard and terminate_walk puts the stale path",
        code: walk_bug(Bug::StalePathAfterFailedInit),
    },
    Variant {
        name: "resolve-cached-tmpfile-bits",
        expected: Expected::Violates("flag_hygiene"),
        witness: "resolve-cached",
        kernel: "fs/open.c:build_open_flags and io_uring/openclose.c:io_openat_force_async \
                 before a0fc452a5d7f (Aleksa Sarai, v6.5-rc5)",
        about: "[real] the guards test O_TMPFILE, which includes O_DIRECTORY: every \
                RESOLVE_CACHED directory open returns -EAGAIN, forever",
        code: open_change(OpenChange::ResolveCachedTmpfileBits),
    },
    Variant {
        name: "punt-resolves-thread-self-as-worker",
        expected: Expected::Violates("submitter_identity"),
        witness: "thread-self-miss",
        kernel: "io-wq workers as kernel threads before create_io_thread (v5.12), the defect \
                 0d4370cfe36b refused /proc/thread-self for and 2587890b5e28 reverted that for",
        about: "[real] the punted resolution of /proc/thread-self names the worker, not the \
                submitter",
        code: ring_change(Some(Change::PuntResolvesThreadSelfAsWorker)),
    },
    Variant {
        name: "error-keeps-reserved-fd",
        expected: Expected::Violates("fd_reservation_balanced"),
        witness: "cold-miss",
        kernel: "io_uring/openclose.c:io_openat2 (constructed)",
        about: "an inline failure returns without put_unused_fd: the punted request gets \
                another fd and the first stays reserved",
        code: ring_change(Some(Change::ErrorKeepsReservedFd)),
    },
    Variant {
        name: "punt-puts-filename",
        expected: Expected::Violates("filename_once"),
        witness: "cold-miss",
        kernel: "io_uring/openclose.c:io_openat2 (constructed)",
        about: "the punt puts the filename and also hands it back to the request: the worker \
                walks a freed name",
        code: ring_change(Some(Change::PuntPutsFilename)),
    },
    Variant {
        name: "punt-also-completes",
        expected: Expected::Violates("one_completion"),
        witness: "cold-miss",
        kernel: "io_uring/openclose.c:io_openat2 (constructed)",
        about: "a punted request also posts the inline -EAGAIN: two CQEs for one SQE",
        code: ring_change(Some(Change::PuntAlsoCompletes)),
    },
    Variant {
        name: "cached-miss-is-enoent",
        expected: Expected::Violates("no_false_negative"),
        witness: "cold-miss",
        kernel: "fs/namei.c:lookup_fast (constructed)",
        about: "under LOOKUP_CACHED a dcache miss is reported as -ENOENT: a file that exists \
                is missing",
        code: walk_bug(Bug::CachedMissIsEnoent),
    },
    Variant {
        name: "retry-eagain-as-stale",
        expected: Expected::Violates("inline_attempts"),
        witness: "cold-miss",
        kernel: "fs/namei.c:do_file_open (constructed)",
        about: "-EAGAIN is retried like -ESTALE: a third path_openat in the inline issue",
        code: open_change(OpenChange::RetryEagainAsStale),
    },
    Variant {
        name: "rcu-lookup-takes-ref",
        expected: Expected::Violates("rcu_mode"),
        witness: "hot-open",
        kernel: "fs/namei.c:lookup_fast (the unlazy model's mutant, under the inline issue)",
        about: "lookup_fast in RCU mode takes a reference on the child it found",
        code: walk_bug(Bug::RcuLookupTakesRef),
    },
    Variant {
        name: "create-under-shared-lock",
        expected: Expected::Violates("single_creation"),
        witness: "creat-vs-hot",
        kernel: "fs/namei.c:lookup_open (the open_creat model's mutant, in the worker)",
        about: "the punted O_CREAT creates under the parent's i_rwsem held shared",
        code: open_change(OpenChange::CreateUnderSharedLock),
    },
    Variant {
        name: "dup2-ignores-reserved",
        expected: Expected::Violates("unique_fd"),
        witness: "cold-miss",
        kernel: "fs/file.c:do_dup2 without the -EBUSY rule (the fd table model's mutant, \
                 against io_openat2's reservation)",
        about: "another thread's dup2 installs over the fd the inline issue has reserved",
        code: table_bug(fdtable::Bug::Dup2IgnoresReserved),
    },
    Variant {
        name: "put-unused-fd-keeps-next-fd",
        expected: Expected::Violates("lowest_free"),
        witness: "cold-miss",
        kernel: "fs/file.c:__put_unused_fd (the fd table model's mutant, on the punt path)",
        about: "the fd the inline issue gives back does not lower next_fd: the worker's \
                reservation skips it",
        code: table_bug(fdtable::Bug::PutUnusedFdKeepsNextFd),
    },
    Variant {
        name: "conditional-clear-tests-wrong-bit",
        expected: Expected::Violates("full_fds_bits"),
        witness: "cold-miss",
        kernel: "fs/file.c:__clear_open_fd (the fd table model's mutant of patch 2/3, on the \
                 punt path)",
        about: "giving back the fd that filled word 0 tests full_fds_bits bit fd, not fd / \
                BITS_PER_LONG, and leaves the word marked full",
        code: table_bug(fdtable::Bug::ConditionalClearTestsWrongBit),
    },
];

/// A variant of the composition: the io_uring side with the open path and
/// walk under it, and the fd table model's own defect, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub ring: Flavor,
    pub table: Option<fdtable::Bug>,
}

/// What the invariants read: the three models' state in one execution.
pub struct World {
    pub vfs: Vfs,
    pub fds: Fs,
    pub opens: OpenLog,
    pub ring: RingState,
}

/// The process's fd table at the start: stdin, stdout and stderr open in a
/// table of two words (one an earlier expansion allocated), so the first
/// reservation fills word 0 and no scenario needs to grow the table.
fn fd_init() -> Init {
    Init {
        max_fds: 2 * fdtable::BITS_PER_LONG,
        fds: vec![(0, 0), (1, 1), (2, 2)],
        nfiles: 3,
        rlimit: fdtable::SYSCTL_NR_OPEN,
        embedded: false,
    }
}

impl World {
    fn new(code: Code, tree: &'static [Node]) -> World {
        let table = fdtable::Flavor {
            base: fdtable::Base::Current,
            bug: code.table,
        };
        let vfs = Vfs::build(code.ring.open.walk.vfs, tree);
        // The submitter and its io-wq workers share the table
        // (create_io_thread passes CLONE_FILES), in the VFS's RCU domain.
        let fds = Fs::new_in(table, &fd_init(), 2, vfs.rcu.clone());
        World {
            vfs,
            fds,
            opens: OpenLog::default(),
            ring: RingState::new(),
        }
    }

    fn ring(&self, flavor: Flavor) -> Ring<'_> {
        Ring::new(flavor, &self.vfs, &self.fds, &self.opens, &self.ring)
    }
}

type Inv = Invariant<Check<World>>;

const INVARIANTS: &[Inv] = &[
    Invariant {
        name: "refs_exact",
        about: "N2: no reference is put that its holder does not hold (raised at the put: the \
                bailout's links and nd->path are NULL or referenced); at the end, with every fd \
                closed, no task holds one and every count equals the references held",
        check: Check::EndAt(refs_exact),
    },
    Invariant {
        name: "link_bodies_released",
        about: "N2: every symlink body's delayed release runs once before the walk ends \
                (raised at terminate_walk)",
        check: Check::Raised,
    },
    Invariant {
        name: "rcu_mode",
        about: "N2: while LOOKUP_RCU is set the walk writes no refcount outside legitimization \
                (raised)",
        check: Check::Raised,
    },
    Invariant {
        name: "fd_reservation_balanced",
        about: "N3: every fd io_openat2 reserves is installed or given back before the request \
                leaves the issue function: at the end no fd is reserved",
        check: Check::EndAt(fd_reservation_balanced),
    },
    Invariant {
        name: "unique_fd",
        about: "N3 (the fd table model's F1/F7, kept on): no fd is handed out twice",
        check: Check::Step(unique_fd),
    },
    Invariant {
        name: "lowest_free",
        about: "N3 (the fd table model's F2): alloc_fd returns the lowest free fd",
        check: Check::Step(lowest_free),
    },
    Invariant {
        name: "full_fds_bits",
        about: "N3 (the fd table model's F4): full_fds_bits mirrors open_fds' full words",
        check: Check::Step(full_fds_bits),
    },
    Invariant {
        name: "no_lost_install",
        about: "N3 (the fd table model's F6): once every request has completed, every \
                installed file is in its slot (checked by main before the process closes its \
                fds)",
        check: Check::Raised,
    },
    Invariant {
        name: "no_false_negative",
        about: "N4: an inline (LOOKUP_CACHED) open returns -EAGAIN for a miss or a race, and \
                otherwise only what a blocking open by the submitter could return at some \
                instant of the call",
        check: Check::End(no_false_negative),
    },
    Invariant {
        name: "flag_hygiene",
        about: "N5: RESOLVE_CACHED is refused without a walk, and a request forced async, only \
                for O_TRUNC, O_CREAT or __O_TMPFILE (O_DIRECTORY alone is not O_TMPFILE)",
        check: Check::End(flag_hygiene),
    },
    Invariant {
        name: "submitter_identity",
        about: "N6: a punted open resolves with the submitter's view: it returns what a \
                blocking open by the submitter could return at some instant of the call",
        check: Check::End(submitter_identity),
    },
    Invariant {
        name: "one_completion",
        about: "N7: every request posts exactly one CQE",
        check: Check::End(one_completion),
    },
    Invariant {
        name: "filename_once",
        about: "N7: every struct filename is put exactly once, never used after (raised at a \
                second put or a use; checked at the end)",
        check: Check::End(filename_once),
    },
    Invariant {
        name: "inline_attempts",
        about: "liveness: an inline issue makes at most two path_openat calls (RCU, then the \
                guard's -EAGAIN)",
        check: Check::End(inline_attempts),
    },
    Invariant {
        name: "single_creation",
        about: "the open path's I1, for the worker's O_CREAT: ->create only under the \
                parent's exclusive i_rwsem, for an absent name (raised)",
        check: Check::Raised,
    },
    Invariant {
        name: "snapshot_valid",
        about: "the walk's own check where try_to_unlazy hands over (raised)",
        check: Check::Raised,
    },
    Invariant {
        name: "no_dead_ref",
        about: "no reference is taken on a dead dentry (raised)",
        check: Check::Raised,
    },
];

/// The `nonblock` model.
pub struct Nonblock;

impl Spec for Nonblock {
    type Code = Code;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "nonblock";
    const CODE: &'static [&'static str] = &["model/src/io_uring/"];
    const ABOUT: &'static str = "LOOKUP_CACHED and io_uring's openat punt: fs/namei.c \
                                 try_to_unlazy*/complete_walk/path_init, fs/open.c \
                                 build_open_flags, io_uring/openclose.c io_openat2 (v7.3 \
                                 merge window), composed with the fd table model";
    /// The fd table model breaks no_lost_install (expand-skips-synchronize-
    /// rcu), the unlazy model snapshot_valid and no_dead_ref; this model
    /// keeps them on.
    const WITNESSED_ELSEWHERE: &'static [&'static str] =
        &["no_lost_install", "snapshot_valid", "no_dead_ref"];
    const LIMITS: &'static [&'static str] = &[
        "a holds is exhaustive only within each scenario's loom bound: 1 to 3 preemptions in \
         the PR tier (creat-vs-hot at 1), 2 to 6 in the deep tier; PCT samples 10,000 \
         schedules per check beyond them",
        "one submitter; io-wq workers are created when the list is empty and exit when they \
         find it empty (no idle timeout, no bounded/unbounded accounts); at most two workers \
         in a loom scenario (loom's five threads)",
        "no d_revalidate, no ->get_link that blocks, no atime, no LSM: the sleeping primitives \
         a cached walk could reach are i_rwsem, ->lookup and d_alloc_parallel's wait",
        "what LOOKUP_CACHED does not cover is not checked for sleeping: alloc_fd's \
         expand_files, alloc_empty_file, the filesystem's ->open (O_NONBLOCK is a hint there)",
        "the struct filename's refcount is always 1 (no audit context), so \
         putname_to_delayed never copies and never fails",
        "identity is one number per task (the pid procfs names); today's io-wq worker carries \
         the submitter's, as the revert 2587890b5e28 says; that /proc/thread-self names the \
         worker's own tid inside the submitter's process is not modelled",
        "the tasks sit on no CPU: no interrupt or migration lands inside the walk, only \
         loom's preemptions at every engine operation (the unlazy and open_creat models run \
         that adversary against the same walk); a callback queued during the race runs on the \
         one RCU domain's grace-period kthread (the VFS's and the fd table's), started by the \
         first call_rcu",
        "the file's f_flags are not modelled: clearing the inline O_NONBLOCK is a trace note",
        "no fixed files, linked requests, cancellation, IOSQE_ASYNC or credentials \
         (REQ_F_CREDS); the CQ ring is a ghost list",
        "the struct file is allocated after do_file_open succeeds (the kernel allocates it \
         at the start of path_openat; nothing in these scenarios observes the difference)",
    ];

    fn variants() -> &'static [Variant<Code>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<Plan>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Inv] {
        INVARIANTS
    }

    /// Skipping RCU on the re-issue changes only punted requests: it is
    /// checked where something is punted.
    fn applies(code: Code, scenario: &'static str) -> bool {
        match code.ring.change {
            Some(Change::RetryNoRcu) => !matches!(scenario, "hot-open" | "resolve-cached"),
            _ => true,
        }
    }

    fn execute(code: Code, plan: &Plan, watch: &Watch<Self>) {
        let flavor = code.ring;
        let world = Arc::new(World::new(code, plan.tree));
        watch.start(&world);
        let submitter = {
            let (w, requests) = (world.clone(), plan.requests.clone());
            exec::spawn("submitter", move || {
                let t = Task::new("submitter", Context::Task);
                let spawn = |n: usize| spawn_worker(&w, flavor, n);
                let ring = w.ring(flavor);
                for r in requests {
                    ring.io_submit_sqe(&t, r.sqe(), &spawn);
                }
            })
        };
        let actor = (!plan.actor.is_empty()).then(|| {
            let (w, ops) = (world.clone(), plan.actor.clone());
            exec::spawn("actor", move || {
                let t = Task::new("actor", Context::Task);
                for op in ops {
                    act(&w.vfs, &t, op);
                }
            })
        });
        let fd_actor = (!plan.fd_actor.is_empty()).then(|| {
            let (w, ops) = (world.clone(), plan.fd_actor.clone());
            exec::spawn("fd_actor", move || {
                let t = Task::new("fd_actor", Context::Task);
                run_program(&w.fds, &t, &ops);
            })
        });
        submitter.join();
        for h in world.ring.take_workers() {
            h.join();
        }
        for h in [actor, fd_actor].into_iter().flatten() {
            h.join();
        }
        exec::check_final("main", "no_lost_install", || no_lost_install_of(&world.fds));
        let main = Task::new("main", Context::Task);
        exit_files(&world, &main);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        let mut text = render_vfs(&w.vfs, &HOLDERS);
        text.push('\n');
        text.push_str(&crate::fdtable::render_table(&w.fds));
        let log = w.ring.log();
        for (i, r) in log.reqs.iter().enumerate() {
            let cqes: Vec<String> = r.cqes.iter().map(cqe_text).collect();
            text.push_str(&format!(
                "\nsqe {i}: openat2({}, {}{}){}{} cqe [{}]",
                path_text(&r.sqe.name),
                flags_text(r.sqe.how.flags),
                if r.sqe.how.resolve != 0 {
                    ", RESOLVE_CACHED"
                } else {
                    ""
                },
                if r.flags & REQ_F_FORCE_ASYNC != 0 {
                    " forced async"
                } else {
                    ""
                },
                if r.punted { " punted" } else { "" },
                cqes.join(", ")
            ));
        }
        text
    }
}

/// io_wq_enqueue's create_io_worker: a new io-wq thread running the
/// worker loop on the same ring.
fn spawn_worker(w: &Arc<World>, flavor: Flavor, n: usize) {
    let name = worker_name(n);
    let w2 = w.clone();
    let h = exec::spawn(name, move || {
        let t = io_worker_task(flavor, name);
        w2.ring(flavor).io_wq_worker(&t);
    });
    w.ring.add_worker(h);
}

/// The process exits (exit_files): every fd a request installed is closed
/// and its file's path references put; then the RCU domain (the VFS's and the
/// table's) quiesces.
fn exit_files(w: &World, main: &Task) {
    let installed: Vec<_> = {
        let log = w.ring.log();
        log.reqs
            .iter()
            .filter_map(|r| {
                let fd = r.cqes.iter().find_map(|c| c.ok())?;
                Some((fd, r.file_path?))
            })
            .collect()
    };
    for (fd, path) in installed {
        // An fd the other thread replaced (dup2) is closed by its new owner
        // here too; the file's own path references go with its last put.
        let _ = w.fds.close_fd(main, fd);
        vfsmc_model::namei::path_put(&w.vfs, main, path);
    }
    w.vfs.rcu.quiesce(main);
}

fn path_text(name: &Filename) -> String {
    let parts: Vec<&str> = name
        .comps
        .iter()
        .map(|&n| vfsmc_model::vfs::name_of(n))
        .collect();
    format!("/{}", parts.join("/"))
}

fn flags_text(f: u32) -> String {
    let mut parts = vec![if f & O_RDWR != 0 {
        "O_RDWR"
    } else {
        "O_RDONLY"
    }];
    for (bit, name) in [
        (O_CREAT, "O_CREAT"),
        (O_TRUNC, "O_TRUNC"),
        (O_DIRECTORY, "O_DIRECTORY"),
        (__O_TMPFILE, "__O_TMPFILE"),
    ] {
        if f & bit != 0 {
            parts.push(name);
        }
    }
    parts.join("|")
}

fn cqe_text(r: &Result<u32, Errno>) -> String {
    match r {
        Ok(fd) => format!("fd {fd}"),
        Err(e) => e.to_string(),
    }
}

fn refs_exact(w: &World) -> Result<(), Broken> {
    refs_balanced(&w.vfs, &HOLDERS)
}

fn fd_reservation_balanced(w: &World) -> Result<(), Broken> {
    for (fd, claims) in &w.fds.ghost().claims {
        if let Some(fdtable::Claim::Reserved { by }) = claims
            .iter()
            .find(|c| matches!(c, fdtable::Claim::Reserved { .. }))
        {
            return Err(returned_by(
                by,
                format!("fd {fd} reserved by {by} is neither installed nor given back"),
            ));
        }
    }
    Ok(())
}

fn unique_fd(w: &World) -> Result<(), String> {
    unique_fd_of(&w.fds)
}

fn lowest_free(w: &World) -> Result<(), String> {
    lowest_free_of(&w.fds)
}

fn full_fds_bits(w: &World) -> Result<(), String> {
    full_fds_bits_of(&w.fds)
}

/// Whether `r` is something a blocking open of the call's name by the
/// submitter could return at some instant up to the call's end (the ghost
/// namespace resolves magic links as the submitter's tasks do).
fn blocking_could_return(w: &World, c: &OpenCall, r: Result<u64, Errno>) -> Result<(), String> {
    let history = w.vfs.ns_history();
    let allowed = outcomes(&history[..=c.last], c.start, &c.name.comps);
    // do_open's file-type checks after resolving: -ENOTDIR for
    // O_DIRECTORY on a non-directory, -EISDIR for writing or creating a
    // directory.
    let resolved_to = |dir: bool| {
        allowed.iter().any(|a| match a {
            Ok(i) => history.iter().any(|ns| ns.dirs.contains(i)) == dir,
            Err(_) => false,
        })
    };
    let ok = allowed.contains(&r)
        || match r {
            Err(Errno::ENOTDIR) => c.flags & O_DIRECTORY != 0 && resolved_to(false),
            Err(Errno::EISDIR) => c.flags & (O_RDWR | O_CREAT) != 0 && resolved_to(true),
            _ => false,
        };
    if ok {
        return Ok(());
    }
    let allowed: Vec<String> = allowed.iter().map(show_outcome).collect();
    Err(format!(
        "{}'s open of {} returned {}, but a blocking open by the submitter could only give {}",
        c.thread,
        path_text(&c.name),
        show_outcome(&r),
        allowed.join(" or ")
    ))
}

/// The calls requests made, with whether each was the inline issue.
fn request_calls(w: &World) -> Vec<(OpenCall, bool)> {
    let calls = w.opens.calls();
    let log = w.ring.log();
    log.reqs
        .iter()
        .flat_map(|r| r.calls.iter())
        .map(|&(i, inline)| (calls[i].clone(), inline))
        .collect()
}

fn call_result(c: &OpenCall) -> Option<Result<u64, Errno>> {
    c.result.map(|r| r.map(|o| o.inode))
}

fn no_false_negative(w: &World) -> Result<(), String> {
    for (c, _) in request_calls(w) {
        if c.lookup_flags & LOOKUP_CACHED == 0 {
            continue;
        }
        match call_result(&c) {
            None | Some(Err(Errno::EAGAIN)) => {}
            Some(r) => blocking_could_return(w, &c, r)?,
        }
    }
    Ok(())
}

fn submitter_identity(w: &World) -> Result<(), String> {
    for (c, inline) in request_calls(w) {
        if inline {
            continue;
        }
        if let Some(r) = call_result(&c) {
            blocking_could_return(w, &c, r)?;
        }
    }
    Ok(())
}

fn flag_hygiene(w: &World) -> Result<(), String> {
    const BLOCKING: u32 = O_TRUNC | O_CREAT | __O_TMPFILE;
    for (i, r) in w.ring.log().reqs.iter().enumerate() {
        let blocking = r.sqe.how.flags & BLOCKING != 0;
        if r.refused_by_flags && !blocking {
            return Err(format!(
                "sqe {i} ({}) was refused with -EAGAIN before any walk, without O_TRUNC, \
                 O_CREAT or __O_TMPFILE",
                flags_text(r.sqe.how.flags)
            ));
        }
        if r.flags & REQ_F_FORCE_ASYNC != 0 && !blocking {
            return Err(format!(
                "sqe {i} ({}) was forced async without O_TRUNC, O_CREAT or __O_TMPFILE",
                flags_text(r.sqe.how.flags)
            ));
        }
    }
    Ok(())
}

fn one_completion(w: &World) -> Result<(), String> {
    for (i, r) in w.ring.log().reqs.iter().enumerate() {
        if r.cqes.len() != 1 {
            let cqes: Vec<String> = r.cqes.iter().map(cqe_text).collect();
            return Err(format!(
                "sqe {i} posted {} CQEs: [{}]",
                r.cqes.len(),
                cqes.join(", ")
            ));
        }
    }
    Ok(())
}

fn filename_once(w: &World) -> Result<(), String> {
    for (i, n) in w.ring.log().names.iter().enumerate() {
        if n.puts != 1 {
            return Err(format!("filename#{i} was put {} time(s)", n.puts));
        }
    }
    Ok(())
}

fn inline_attempts(w: &World) -> Result<(), String> {
    for (c, inline) in request_calls(w) {
        if inline && c.attempts > 2 {
            return Err(format!(
                "the inline issue of {} made {} path_openat calls",
                path_text(&c.name),
                c.attempts
            ));
        }
    }
    Ok(())
}
