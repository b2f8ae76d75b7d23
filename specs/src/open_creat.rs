//! The `open_creat` model: the O_CREAT opportunistic lookup in
//! open_last_lookups (fs/namei.c lookup_fast_for_open, lookup_open,
//! do_open, do_file_open; brief §1), on the path-walk model and the VFS
//! substrate. Openers (one or two) open a name while an actor changes the
//! namespace (unlink, rename of the parent or of the target, rmdir of the
//! parent, a directory delegation granted again, a kill with the RCU
//! grace-period kthread freeing during the race).
//!
//! Invariants read the ghost open log (what each open returned, the audit
//! records it emitted), the ghost namespace's versions and the reference
//! ledger; the model raises the ones that belong at a step (a create
//! without the exclusive lock or over an existing name, an audit record on
//! an unreferenced dentry, a write access dropped twice, a refcount write in
//! RCU mode, an error pointer dereferenced).

pub mod reference;

use std::sync::Arc;

use vfsmc_model::exec;
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::open::{
    do_file_open, open_flags, Base, Change, OpenCall, OpenFlavor, OpenLog, O_CREAT, O_EXCL, O_RDWR,
};
use vfsmc_model::namei::{Bug, Filename, Flavor};
use vfsmc_model::trace::Context;
use vfsmc_model::vfs::namespace::outcomes;
use vfsmc_model::vfs::{Node, Vfs};

use crate::unlazy::{act, refs_balanced, render_vfs, show_outcome, Op};
use crate::{
    deep, returned_by, scenario, Broken, Check, Expected, Invariant, Judge, Scenario, ScenarioRow,
    Spec, Tier, Variant, Watch,
};

/// One open(2) by an opener thread (the file is closed again after a
/// successful open).
#[derive(Clone, Copy, Debug)]
pub struct Opener {
    pub path: &'static str,
    pub flags: u32,
    /// The task has an audit context (auditd running with a rule).
    pub audit: bool,
}

/// A scenario made concrete.
#[derive(Clone, Debug)]
pub struct Plan {
    pub tree: &'static [Node],
    pub openers: &'static [Opener],
    pub actor: &'static [Op],
    /// How many times each opener opens and closes its name (1 in every
    /// hand-written scenario; the native opencreate1 loop runs more).
    pub rounds: u32,
}

/// The opener threads' names, in spawn order.
const OPENERS: [&str; 2] = ["opener", "opener2"];

const CREAT: u32 = O_RDWR | O_CREAT;
const EXCL: u32 = O_RDWR | O_CREAT | O_EXCL;

const fn creat(path: &'static str) -> Opener {
    Opener {
        path,
        flags: CREAT,
        audit: false,
    }
}

const fn excl(path: &'static str) -> Opener {
    Opener {
        path,
        flags: EXCL,
        audit: false,
    }
}

const fn plain(path: &'static str) -> Opener {
    Opener {
        path,
        flags: O_RDWR,
        audit: false,
    }
}

const TMP: &[Node] = &[Node::Dir("/tmp")];
const TMP_X: &[Node] = &[Node::Dir("/tmp"), Node::File("/tmp/x")];

/// The hand-written scenarios; each is (tree, openers, actor).
macro_rules! plan_fn {
    ($name:ident, $tree:expr, $openers:expr, $actor:expr) => {
        fn $name(_: &[u8]) -> Plan {
            const TREE: &[Node] = $tree;
            const OPENERS: &[Opener] = $openers;
            const ACTOR: &[Op] = $actor;
            Plan {
                tree: TREE,
                openers: OPENERS,
                actor: ACTOR,
                rounds: 1,
            }
        }
    };
}

plan_fn!(
    opencreate1,
    &[
        Node::Dir("/tmp"),
        Node::File("/tmp/a"),
        Node::File("/tmp/b")
    ],
    &[creat("/tmp/a"), creat("/tmp/b")],
    &[]
);
plan_fn!(
    unlink_vs_open,
    TMP_X,
    &[creat("/tmp/x")],
    &[Op::Unlink("/tmp/x")]
);
plan_fn!(
    rename_parent_vs_open,
    &[
        Node::Dir("/tmp"),
        Node::Dir("/tmp/d"),
        Node::File("/tmp/d/x")
    ],
    &[creat("/tmp/d/x")],
    &[Op::Rename("/tmp/d", "/tmp/b2")]
);
plan_fn!(
    rename_target_vs_open,
    TMP_X,
    &[creat("/tmp/x")],
    &[Op::Rename("/tmp/x", "/tmp/c")]
);
plan_fn!(
    create_vs_create,
    TMP,
    &[creat("/tmp/x"), creat("/tmp/x")],
    &[]
);
plan_fn!(excl_vs_excl, TMP, &[excl("/tmp/x"), excl("/tmp/x")], &[]);
plan_fn!(
    excl_vs_unlink,
    TMP_X,
    &[excl("/tmp/x")],
    &[Op::Unlink("/tmp/x")]
);
plan_fn!(
    rmdir_vs_open,
    &[Node::Dir("/tmp"), Node::Dir("/tmp/d")],
    &[creat("/tmp/d/x")],
    &[Op::Rmdir("/tmp/d")]
);
plan_fn!(
    delegation_retry,
    &[Node::Dir("/tmp"), Node::Delegated("/tmp")],
    &[creat("/tmp/x")],
    &[Op::Delegate("/tmp")]
);
plan_fn!(
    kill_vs_open,
    TMP_X,
    &[creat("/tmp/x")],
    &[Op::Kill("/tmp/x")]
);
plan_fn!(
    trailing_slash,
    TMP_X,
    &[creat("/tmp/x/")],
    &[Op::Unlink("/tmp/x")]
);
plan_fn!(
    lookup_vs_lookup,
    &[Node::Dir("/tmp"), Node::Uncached("/tmp/x")],
    &[plain("/tmp/x"), plain("/tmp/x")],
    &[]
);
plan_fn!(
    audited_open,
    TMP_X,
    &[Opener {
        path: "/tmp/x",
        flags: CREAT,
        audit: true,
    }],
    &[Op::Unlink("/tmp/x")]
);
plan_fn!(
    negative_vs_create,
    &[Node::Dir("/tmp"), Node::Negative("/tmp/x")],
    &[creat("/tmp/x")],
    &[Op::Create("/tmp/x")]
);

/// opencreate1 as will-it-scale runs it, for the native bench on the stress
/// engine (`vfsmc bench open_creat --native opencreate1-loop --input TTRR`):
/// byte 0 is the number of openers (1 or 2), byte 1 the opens per opener
/// (each an O_RDWR|O_CREAT open of its own existing name, then a close).
fn opencreate1_loop(bytes: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::File("/tmp/a"),
        Node::File("/tmp/b"),
    ];
    const BOTH: &[Opener] = &[creat("/tmp/a"), creat("/tmp/b")];
    let threads = usize::from(bytes.first().copied().unwrap_or(1).clamp(1, 2));
    Plan {
        tree: TREE,
        openers: &BOTH[..threads],
        actor: &[],
        rounds: u32::from(bytes.get(1).copied().unwrap_or(1).max(1)),
    }
}

const SCENARIOS: &[ScenarioRow<Plan>] = &[
    scenario(
        "opencreate1",
        "will-it-scale opencreate1 in miniature: two openers, each O_RDWR|O_CREAT on its own \
         existing, cached name in one directory (/tmp/a, /tmp/b), no namespace change",
        &["fast_path_positive_hit"],
        Some(2),
        opencreate1,
    ),
    scenario(
        "unlink-vs-open",
        "O_CREAT of the cached /tmp/x while the actor unlinks it (d_delete makes it negative in \
         place): the opener opens the old file or restarts and creates a new one",
        &["fast_path_positive_hit", "created_after_restart"],
        Some(2),
        unlink_vs_open,
    ),
    scenario(
        "rename-parent-vs-open",
        "O_CREAT of /tmp/d/x while the actor renames /tmp/d to /tmp/b2: the lazy lookup of x \
         fails its parent d_seq check with -ECHILD",
        &["lookup_fast_echild", "fast_path_positive_hit"],
        Some(2),
        rename_parent_vs_open,
    ),
    scenario(
        "rename-target-vs-open",
        "O_CREAT of /tmp/x while the actor renames it to /tmp/c: the opener opens the file it \
         found or creates a new x",
        &["fast_path_positive_hit", "created"],
        Some(1),
        rename_target_vs_open,
    ),
    scenario(
        "create-vs-create",
        "two openers O_CREAT the missing /tmp/x: one creates it, the other opens it",
        &["created", "fast_path_positive_hit"],
        Some(0),
        create_vs_create,
    ),
    scenario(
        "excl-vs-excl",
        "two openers O_CREAT|O_EXCL the missing /tmp/x: one creates it, the other gets -EEXIST",
        &["created"],
        Some(1),
        excl_vs_excl,
    ),
    scenario(
        "excl-vs-unlink",
        "O_CREAT|O_EXCL of the cached /tmp/x while the actor unlinks it: -EEXIST, or the \
         create after the unlink",
        &["created"],
        Some(2),
        excl_vs_unlink,
    ),
    scenario(
        "rmdir-vs-open",
        "O_CREAT of /tmp/d/x while the actor rmdirs the empty /tmp/d: the create wins \
         (rmdir -ENOTEMPTY) or the open fails with -ENOENT (IS_DEADDIR under the lock, or d gone)",
        &["created", "is_deaddir", "rmdir_not_empty"],
        Some(2),
        rmdir_vs_open,
    ),
    scenario(
        "delegation-retry",
        "a client holds a delegation on /tmp; O_CREAT of the missing /tmp/x must break it \
         (break_deleg_wait, retry) while the actor grants the client a new one",
        &["delegation_retry", "created"],
        Some(2),
        delegation_retry,
    )
    .judged_on_optimal(),
    scenario(
        "kill-vs-open",
        "O_CREAT of the cached /tmp/x while the actor invalidates it and drops the last \
         reference (dentry_kill; freed by the grace-period kthread during the race)",
        &["fast_path_positive_hit", "legitimized"],
        Some(1),
        kill_vs_open,
    ),
    scenario(
        "trailing-slash",
        "O_CREAT of /tmp/x/ (x a regular file) while the actor unlinks x: -EISDIR before any \
         lookup",
        &[],
        Some(2),
        trailing_slash,
    )
    .judged_on_optimal(),
    scenario(
        "lookup-vs-lookup",
        "two plain opens of /tmp/x, on disk but not in the dcache: under the shared i_rwsem one \
         asks ->lookup through an in-lookup dentry, the other waits for it in d_alloc_parallel",
        &["d_alloc_parallel_in_lookup", "d_wait_lookup"],
        Some(1),
        lookup_vs_lookup,
    ),
    scenario(
        "audited-open",
        "unlink-vs-open with an audit context: every audit record must name a dentry the walk \
         holds",
        &["fast_path_positive_hit"],
        Some(2),
        audited_open,
    ),
    scenario(
        "negative-vs-create",
        "O_CREAT of /tmp/x, a cached negative dentry, while the actor creates x (d_instantiate \
         in place)",
        &["created"],
        Some(2),
        negative_vs_create,
    ),
    Scenario {
        name: "opencreate1-loop",
        about: "will-it-scale opencreate1 for the native bench: input byte 0 = openers (1-2), \
                byte 1 = O_CREAT opens (and closes) of its own existing name per opener; one \
                execution is openers x opens",
        goals: &["fast_path_positive_hit"],
        loom_bound: Some(0),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: true,
        split: false,
        plan: opencreate1_loop,
    },
    deep(
        "create-vs-create-deep",
        "create-vs-create at preemption bound 1 (deep tier)",
        &["created", "fast_path_positive_hit"],
        1,
        create_vs_create,
    ),
    deep(
        "rename-target-vs-open-deep",
        "rename-target-vs-open at preemption bound 2 (deep tier)",
        &["fast_path_positive_hit", "created"],
        2,
        rename_target_vs_open,
    ),
    deep(
        "excl-vs-excl-deep",
        "excl-vs-excl at preemption bound 2 (deep tier)",
        &["created"],
        2,
        excl_vs_excl,
    ),
    deep(
        "lookup-vs-lookup-deep",
        "lookup-vs-lookup at preemption bound 2 (deep tier)",
        &["d_alloc_parallel_in_lookup", "d_wait_lookup"],
        2,
        lookup_vs_lookup,
    ),
];

const fn base(base: Base) -> OpenFlavor {
    OpenFlavor {
        base,
        change: None,
        walk: Flavor {
            vfs: None,
            bug: None,
        },
    }
}

const fn cur(change: Change) -> OpenFlavor {
    OpenFlavor {
        base: Base::Current,
        change: Some(change),
        walk: Flavor {
            vfs: None,
            bug: None,
        },
    }
}

const fn walk_bug(bug: Bug) -> OpenFlavor {
    OpenFlavor {
        base: Base::Current,
        change: None,
        walk: Flavor {
            vfs: None,
            bug: Some(bug),
        },
    }
}

const VARIANTS: &[Variant<OpenFlavor>] = &[
    Variant {
        name: "v6.11",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:open_last_lookups before e747e15156b7 (the create branch as read in \
                 copy id 27233755621, pre-v6.12, and brief §1.2)",
        about: "O_CREAT always leaves RCU mode, audits the parent and takes the parent's \
                exclusive i_rwsem, even when the file exists",
        code: base(Base::V6_11),
    },
    Variant {
        name: "current",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:open_last_lookups,lookup_fast_for_open,lookup_open,do_open \
                 (vfs-7.3-rc1.misc 1c3e8cef79ea)",
        about: "lookup_fast_for_open: a positive dentry goes to finish_lookup in whichever mode \
                the walk is in; negative or absent → the lock; lookup_open retries after \
                breaking a directory delegation",
        code: base(Base::Current),
    },
    Variant {
        name: "o-excl-fast-path",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:lookup_fast_for_open (constructed negative control)",
        about: "O_CREAT|O_EXCL also tries the fast path: -EEXIST at the lookup instant is \
                linearizable, so the exclusion is a performance choice",
        code: cur(Change::OExclFastPath),
    },
    Variant {
        name: "v3-audit-unlazy-next",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:open_last_lookups in Layton's v3 (7 Aug 2024), before Brauner's \
                 \"fs: move audit parent inode\"",
        about: "with an audit context a positive fast-path hit leaves RCU with \
                try_to_unlazy_next (the child kept) and audits the parent: correct, and dearer",
        code: cur(Change::V3AuditUnlazyNext),
    },
    Variant {
        name: "v2-no-is-err-check",
        expected: Expected::Violates("err_ptr_deref"),
        witness: "rename-parent-vs-open",
        kernel: "fs/namei.c:lookup_fast_for_open in Layton's v2 (6 Aug 2024, self-NAKed; LKP \
                 oe-lkp 202408071453)",
        about: "[real] lookup_fast's result is not tested with IS_ERR: a rename of the parent \
                makes it ERR_PTR(-ECHILD) and the negative-dentry test reads its d_inode",
        code: cur(Change::V2NoIsErrCheck),
    },
    Variant {
        name: "step-into-null-before-seq-check",
        expected: Expected::Violates("no_spurious_enoent"),
        witness: "unlink-vs-open",
        kernel: "fs/namei.c:step_into (constructed from Al Viro's review of v2, 14 Aug 2024, \
                 20240814021817.GO13701@ZenIV)",
        about: "step_into tests for a NULL inode before read_seqcount_retry: a concurrent unlink \
                makes an O_CREAT open fail with -ENOENT instead of restarting and creating",
        code: walk_bug(Bug::StepIntoNullBeforeSeqCheck),
    },
    Variant {
        name: "delegation-retry-keeps-state",
        expected: Expected::Violates("mnt_write_balanced"),
        witness: "delegation-retry",
        kernel: "fs/namei.c:lookup_open's retry loop (constructed on the June 2026 shape)",
        about: "the retry after break_deleg_wait re-enters below mnt_want_write and keeps the \
                failed attempt's got_write: the write access is dropped twice",
        code: cur(Change::DelegationRetryKeepsState),
    },
    Variant {
        name: "v3-trailing-slash-after-fast-path",
        expected: Expected::Violates("trailing_slash_eisdir"),
        witness: "trailing-slash",
        kernel: "fs/namei.c:open_last_lookups in Layton's v3, before 4770d96a6d89 (\"fs: pull up \
                 trailing slashes check for O_CREAT\") [derived]",
        about: "the O_CREAT trailing-slash test sits after the fast path: O_CREAT of x/ on a \
                regular file is found positive and fails with -ENOTDIR instead of -EISDIR",
        code: cur(Change::TrailingSlashAfterFastPath),
    },
    Variant {
        name: "audit-parent-in-rcu",
        expected: Expected::Violates("audit_legitimized"),
        witness: "audited-open",
        kernel: "fs/namei.c:lookup_fast_for_open (constructed: v6.11's parent audit kept on the \
                 lazy fast path)",
        about: "the parent's audit record is emitted before the walk leaves RCU mode, on a \
                dentry it holds no reference on",
        code: cur(Change::AuditParentInRcu),
    },
    Variant {
        name: "create-under-shared-lock",
        expected: Expected::Violates("single_creation"),
        witness: "create-vs-create",
        kernel: "fs/namei.c:lookup_open (constructed)",
        about: "O_CREAT takes the parent's i_rwsem shared: two creators of one name both call \
                ->create",
        code: cur(Change::CreateUnderSharedLock),
    },
    Variant {
        name: "o-excl-fast-path-opens",
        expected: Expected::Violates("o_excl"),
        witness: "excl-vs-excl",
        kernel: "fs/namei.c:lookup_fast_for_open + do_open (constructed)",
        about: "O_EXCL goes through the fast path and do_open forgets -EEXIST for a file it did \
                not create: O_EXCL succeeds on an existing file",
        code: cur(Change::OExclFastPathOpens),
    },
    Variant {
        name: "no-ref-walk-retry",
        expected: Expected::Violates("open_linearizable"),
        witness: "unlink-vs-open",
        kernel: "fs/namei.c:do_file_open (constructed)",
        about: "-ECHILD from the lazy attempt is returned instead of retrying in ref-walk: an \
                artefact of the lazy walk reaches the caller",
        code: cur(Change::NoRefWalkRetry),
    },
    Variant {
        name: "negative-discard-leaks",
        expected: Expected::Violates("refs_exact"),
        witness: "unlink-vs-open",
        kernel: "fs/namei.c:lookup_fast_for_open (constructed)",
        about: "a negative dentry found in ref-walk is discarded without dput: its reference \
                leaks",
        code: cur(Change::NegativeDiscardLeaks),
    },
    Variant {
        name: "negative-discard-dputs-in-rcu",
        expected: Expected::Violates("rcu_mode"),
        witness: "negative-vs-create",
        kernel: "fs/namei.c:lookup_fast_for_open (constructed)",
        about: "a negative dentry is dput even in RCU mode, where no reference was taken",
        code: cur(Change::NegativeDiscardDputsInRcu),
    },
];

/// What the invariants read.
pub struct World {
    pub vfs: Vfs,
    pub opens: OpenLog,
}

type Inv = Invariant<Check<World>>;

const INVARIANTS: &[Inv] = &[
    Invariant {
        name: "single_creation",
        about: "I1: ->create is called only with the parent's i_rwsem held exclusive and only \
                for a name absent at that instant, so between two unlinks at most one open \
                creates it (raised at ->create; the fast path never reaches it)",
        check: Check::Raised,
    },
    Invariant {
        name: "o_excl",
        about: "I2: O_CREAT|O_EXCL succeeds only by creating; -EEXIST only for a name that \
                existed (of any type: O_EXCL does not follow a final symlink) at some instant \
                of the call",
        check: Check::EndAt(o_excl),
    },
    Invariant {
        name: "no_spurious_enoent",
        about: "I3: O_CREAT without O_EXCL fails with -ENOENT only when the parent directory was \
                gone at some instant (removed, IS_DEADDIR); a concurrent unlink of the target \
                never makes it fail",
        check: Check::EndAt(no_spurious_enoent),
    },
    Invariant {
        name: "open_linearizable",
        about: "I4: an open of an existing file returns an inode its path resolved to at some \
                instant before it returned (the ghost namespace), and no open returns an \
                artefact of the lazy walk (-ECHILD, -EAGAIN, -ESTALE)",
        check: Check::EndAt(open_linearizable),
    },
    Invariant {
        name: "refs_exact",
        about: "I5: no reference is put that its holder does not hold (raised at the put); at \
                the end, with every file closed, no task holds one and every count equals the \
                references held",
        check: Check::EndAt(refs_exact),
    },
    Invariant {
        name: "rcu_mode",
        about: "I5: while LOOKUP_RCU is set the walk writes no refcount outside legitimization \
                (raised)",
        check: Check::Raised,
    },
    Invariant {
        name: "trailing_slash_eisdir",
        about: "I7: O_CREAT of a name with a trailing slash fails with -EISDIR (unless the walk \
                failed before the last component, as resolving the parent could)",
        check: Check::EndAt(trailing_slash_eisdir),
    },
    Invariant {
        name: "audit_legitimized",
        about: "I8: every audit record names a dentry the walk holds a reference on, in \
                ref-walk (raised at audit_inode)",
        check: Check::Raised,
    },
    Invariant {
        name: "mnt_write_balanced",
        about: "liveness of the delegation retry: every write access taken is dropped once \
                (raised at an extra mnt_drop_write; none held at the end)",
        check: Check::EndAt(mnt_write_balanced),
    },
];

/// The `open_creat` model.
pub struct OpenCreat;

impl Spec for OpenCreat {
    type Code = OpenFlavor;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "open_creat";
    const CODE: &'static [&'static str] = &["model/src/namei/open.rs"];
    const ABOUT: &'static str = "fs/namei.c open_last_lookups with the O_CREAT opportunistic \
                                 lookup (lookup_fast_for_open, lookup_open, do_open; v7.3 \
                                 merge window) and its v6.11 shape";
    const LIMITS: &'static [&'static str] = &[
        "at most two openers and one actor (plus the RCU grace-period kthread): loom allows four",
        "no ->atomic_open filesystems and no d_revalidate: NFS's revalidate/atomic_open dance \
         (Al Viro's open question of Aug 2024) is not expressed",
        "permissions always grant (may_o_create, may_open, sticky directories), mounts are \
         never read-only (mnt_want_write succeeds, so create_error is never set), and O_TRUNC, \
         O_TMPFILE and O_PATH are not modelled",
        "a delegation break waits for nothing: break_deleg_wait returns the delegation at once \
         (the client's return, or the lease-break timeout)",
        "audit is a ghost record of (dentry, parent?) per open; what auditd logs is not modelled",
        "lookup_slow (a walker's miss on a middle component) still bypasses d_alloc_parallel; \
         only lookup_open uses the in-lookup protocol",
        "no filesystem returns -EOPENSTALE, so do_file_open's LOOKUP_REVAL attempt is never \
         taken; its bound of three attempts is structural (no loop), not checked",
        "inodes are never freed; fs->root and fs->pwd never change",
    ];

    fn variants() -> &'static [Variant<OpenFlavor>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<Plan>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Inv] {
        INVARIANTS
    }

    /// A change that only acts on O_EXCL opens, or only with an audit
    /// context, runs the current code everywhere else: it is checked where
    /// its code can differ.
    fn applies(code: OpenFlavor, scenario: &'static str) -> bool {
        match code.change {
            Some(Change::OExclFastPath) => {
                ["excl-vs-excl", "excl-vs-unlink", "excl-vs-excl-deep"].contains(&scenario)
            }
            Some(Change::V3AuditUnlazyNext) => scenario == "audited-open",
            // Plain opens run the same code in both bases.
            None if code.base == Base::V6_11 => !scenario.starts_with("lookup-vs-lookup"),
            _ => true,
        }
    }

    /// v6.11 has no O_CREAT fast path (it never hits a dentry there, never
    /// sees its -ECHILD, never restarts to create after an unlink) and no
    /// delegation retry.
    fn goal_applies(code: OpenFlavor, goal: &'static str) -> bool {
        const CURRENT_ONLY: &[&str] = &[
            "fast_path_positive_hit",
            "lookup_fast_echild",
            "created_after_restart",
            "delegation_retry",
        ];
        code.base == Base::Current || !CURRENT_ONLY.contains(&goal)
    }

    fn execute(flavor: OpenFlavor, plan: &Plan, watch: &Watch<Self>) {
        let world = Arc::new(World {
            vfs: Vfs::build(flavor.walk.vfs, plan.tree),
            opens: OpenLog::default(),
        });
        watch.start(&world);
        let openers: Vec<_> = plan
            .openers
            .iter()
            .zip(OPENERS)
            .map(|(&o, name)| {
                let w = world.clone();
                let rounds = plan.rounds;
                exec::spawn(name, move || {
                    let t = Task::new(name, Context::Task);
                    for _ in 0..rounds {
                        open_and_close(&w, &t, flavor, o);
                    }
                })
            })
            .collect();
        let actor = (!plan.actor.is_empty()).then(|| {
            let (w, ops) = (world.clone(), plan.actor);
            exec::spawn("actor", move || {
                let t = Task::new("actor", Context::Task);
                for op in ops {
                    act(&w.vfs, &t, *op);
                }
            })
        });
        for h in openers {
            h.join();
        }
        if let Some(h) = actor {
            h.join();
        }
        let main = Task::new("main", Context::Task);
        world.vfs.rcu.quiesce(&main);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        let mut text = render_vfs(&w.vfs, &["opener", "opener2", "actor"]);
        for c in w.opens.calls().iter() {
            text.push_str(&format!(
                "\n{} open({}, {}) = {} after {} attempt(s)",
                c.thread,
                path_text(c),
                flags_text(c.flags),
                c.result
                    .map_or("(running)".to_string(), |r| result_text(&r)),
                c.attempts
            ));
        }
        text
    }
}

/// One opener: open(2), then close(2) of what it opened.
fn open_and_close(w: &World, t: &Task, flavor: OpenFlavor, o: Opener) {
    let name = Filename::new(o.path);
    if let Ok(mut f) = do_file_open(
        &w.vfs,
        t,
        flavor,
        &w.opens,
        &name,
        open_flags(o.flags),
        o.audit,
    ) {
        f.fput();
    }
}

fn path_text(c: &OpenCall) -> String {
    let parts: Vec<&str> = c
        .name
        .comps
        .iter()
        .map(|&n| vfsmc_model::vfs::name_of(n))
        .collect();
    let slash = if c.name.trailing_slash { "/" } else { "" };
    format!("/{}{slash}", parts.join("/"))
}

fn flags_text(f: u32) -> String {
    let mut parts = vec!["O_RDWR"];
    if f & O_CREAT != 0 {
        parts.push("O_CREAT");
    }
    if f & O_EXCL != 0 {
        parts.push("O_EXCL");
    }
    parts.join("|")
}

fn result_text(r: &Result<vfsmc_model::namei::open::Opened, Errno>) -> String {
    match r {
        Ok(o) if o.created => format!("created inode#{}", o.inode),
        Ok(o) => format!("opened inode#{}", o.inode),
        Err(e) => e.to_string(),
    }
}

/// The finished opens with their results.
fn finished(w: &World) -> Vec<(OpenCall, Result<vfsmc_model::namei::open::Opened, Errno>)> {
    w.opens
        .calls()
        .iter()
        .filter_map(|c| c.result.map(|r| (c.clone(), r)))
        .collect()
}

/// What resolving `path` could give at the instants up to the call's end.
fn resolutions(w: &World, c: &OpenCall, path: &[u64]) -> Vec<Result<u64, Errno>> {
    let history = w.vfs.ns_history();
    outcomes(&history[..=c.last], c.start, path)
}

fn o_excl(w: &World) -> Result<(), Broken> {
    for (c, r) in finished(w) {
        if c.flags & O_EXCL == 0 {
            continue;
        }
        match r {
            Ok(o) if !o.created => {
                let what = format!(
                    "succeeded on the existing inode#{} without creating it",
                    o.inode
                );
                return Err(returned_by(
                    c.thread,
                    format!("{}'s O_EXCL open of {} {what}", c.thread, path_text(&c)),
                ));
            }
            Err(Errno::EEXIST) if !name_existed(w, &c) => {
                let what = "returned -EEXIST, but the name never existed while it ran";
                return Err(returned_by(
                    c.thread,
                    format!("{}'s O_EXCL open of {} {what}", c.thread, path_text(&c)),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The errors resolving the call's parent directory could give at the
/// instants up to its end: the errors of `parent/..`, which resolves only
/// through a directory.
fn parent_errors(w: &World, c: &OpenCall) -> Vec<Errno> {
    let Some((_, parent)) = c.name.comps.split_last() else {
        return Vec::new();
    };
    let mut path = parent.to_vec();
    path.push(vfsmc_model::vfs::namespace::DOTDOT);
    resolutions(w, c, &path)
        .into_iter()
        .filter_map(Result::err)
        .collect()
}

/// Whether the last component existed as a name (of any type: O_EXCL does
/// not follow a final symlink) in a directory the parent path resolved to,
/// at some instant up to the call's end.
fn name_existed(w: &World, c: &OpenCall) -> bool {
    let Some((&last, parent)) = c.name.comps.split_last() else {
        return true;
    };
    if last == vfsmc_model::vfs::namespace::DOTDOT {
        return resolutions(w, c, &c.name.comps).iter().any(Result::is_ok);
    }
    let dirs: Vec<u64> = resolutions(w, c, parent)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let history = w.vfs.ns_history();
    history[..=c.last]
        .iter()
        .any(|ns| dirs.iter().any(|&d| ns.lookup(d, last).is_some()))
}

fn no_spurious_enoent(w: &World) -> Result<(), Broken> {
    for (c, r) in finished(w) {
        if c.flags & O_CREAT == 0 || c.flags & O_EXCL != 0 || r != Err(Errno::ENOENT) {
            continue;
        }
        if !parent_errors(w, &c).contains(&Errno::ENOENT) {
            return Err(returned_by(
                c.thread,
                format!(
                    "{}'s O_CREAT open of {} failed with -ENOENT although its directory existed \
                     throughout",
                    c.thread,
                    path_text(&c)
                ),
            ));
        }
    }
    Ok(())
}

fn open_linearizable(w: &World) -> Result<(), Broken> {
    for (c, r) in finished(w) {
        match r {
            Err(e @ (Errno::ECHILD | Errno::EAGAIN | Errno::ESTALE)) => {
                return Err(returned_by(
                    c.thread,
                    format!(
                        "{}'s open of {} returned {e}, an artefact of the lazy walk",
                        c.thread,
                        path_text(&c)
                    ),
                ))
            }
            Ok(o) if !o.created => {
                let allowed = resolutions(w, &c, &c.name.comps);
                if !allowed.contains(&Ok(o.inode)) {
                    let allowed: Vec<String> = allowed.iter().map(show_outcome).collect();
                    return Err(returned_by(
                        c.thread,
                        format!(
                            "{} opened inode#{} for {}, but resolving it while the open ran \
                             could only give {}",
                            c.thread,
                            o.inode,
                            path_text(&c),
                            allowed.join(" or ")
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn refs_exact(w: &World) -> Result<(), Broken> {
    refs_balanced(&w.vfs, &["opener", "opener2", "actor"])
}

fn trailing_slash_eisdir(w: &World) -> Result<(), Broken> {
    for (c, r) in finished(w) {
        if c.flags & O_CREAT == 0 || !c.name.trailing_slash || r == Err(Errno::EISDIR) {
            continue;
        }
        // The walk fails before the last component when the parent does not
        // resolve to a directory: that error stands.
        let parent_failed = matches!(r, Err(e) if parent_errors(w, &c).contains(&e));
        if !parent_failed {
            return Err(returned_by(
                c.thread,
                format!(
                    "{}'s O_CREAT open of {} returned {} instead of -EISDIR",
                    c.thread,
                    path_text(&c),
                    result_text(&r)
                ),
            ));
        }
    }
    Ok(())
}

fn mnt_write_balanced(w: &World) -> Result<(), Broken> {
    let mut broken = None;
    w.vfs.mounts.each(|_, _, m| {
        let n = m.mnt_writers.value_at_quiescence();
        if n != 0 && broken.is_none() {
            broken = Some(Broken::at(
                format!("{} ends with {n} write access(es) held", m.label),
                exec::last_write(m.mnt_writers.name()),
            ));
        }
    });
    broken.map_or(Ok(()), Err)
}
