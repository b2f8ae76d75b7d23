//! The `unlazy` model: lazy-to-legit transitions of the path walk
//! (fs/namei.c try_to_unlazy*, legitimize_*, with fs/dcache.c and
//! fs/namespace.c underneath; brief §2). A walker resolves a path while one
//! actor thread changes the namespace (rename, unlink, invalidate + final
//! dput, umount, mkdir/rmdir) and the RCU grace-period kthread frees what
//! the actor killed.
//!
//! Invariants read the VFS by reference: the ghost namespace and lookup log
//! (walk linearizability), the reference ledger against the objects' counts
//! (exact accounting), the umount log (synchronous umount), and the checks
//! the model raises where they happen (a reference on a dead dentry, a
//! refcount write in RCU mode, the kernel's own snapshot BUG_ON).

pub mod reference;

use std::sync::Arc;

use vfsmc_model::exec;
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::lockref::Lockref;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::{filename_lookup, path_put, ref_walk_lookup, Bug, Filename, Flavor};
use vfsmc_model::trace::{Context, Name};
use vfsmc_model::vfs::namespace::outcomes;
use vfsmc_model::vfs::{components, Kind, Lookup, Node, Obj, Vfs, VfsBug};

use crate::{
    returned_by, Broken, Check, Expected, Invariant, Judge, Need, Scenario, ScenarioRow, Spec,
    Tier, Variant, Watch,
};

/// What the walker does.
#[derive(Clone, Copy, Debug)]
pub enum Walker {
    /// filename_lookup: lazy first, restarting in ref-walk on -ECHILD.
    Lookup(&'static str),
    /// Only the ref-walk attempt (as do_file_open's second attempt).
    RefWalk(&'static str),
}

/// One namespace change by the actor.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// rmdir(2) of an empty directory (-ENOTEMPTY otherwise).
    Rmdir(&'static str),
    /// A client is granted a delegation on a directory.
    Delegate(&'static str),
    Rename(&'static str, &'static str),
    Unlink(&'static str),
    Mkdir(&'static str),
    Create(&'static str),
    /// d_invalidate, then the final dput kills it.
    Kill(&'static str),
    Umount(&'static str),
    /// rcu_barrier(): wait for the RCU callbacks queued so far and run them
    /// (what deactivate_locked_super does before freeing a superblock).
    RcuBarrier,
}

/// A scenario made concrete.
#[derive(Clone, Debug)]
pub struct Plan {
    pub tree: &'static [Node],
    pub walker: Walker,
    pub actor: &'static [Op],
}

const ABC: &[Node] = &[Node::Dir("/a"), Node::Dir("/a/b"), Node::File("/a/b/c")];

const fn plan(tree: &'static [Node], walker: Walker, actor: &'static [Op]) -> Plan {
    Plan {
        tree,
        walker,
        actor,
    }
}

fn rename_vs_walk(_: &[u8]) -> Plan {
    plan(ABC, Walker::Lookup("/a/b/c"), &[Op::Rename("/a/b", "/a/x")])
}

fn unlink_vs_walk(_: &[u8]) -> Plan {
    plan(ABC, Walker::Lookup("/a/b/c"), &[Op::Unlink("/a/b/c")])
}

fn kill_vs_walk(_: &[u8]) -> Plan {
    plan(ABC, Walker::Lookup("/a/b/c"), &[Op::Kill("/a/b/c")])
}

fn kill_vs_unlazy(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[Node::File("/c")];
    plan(
        TREE,
        Walker::Lookup("/c"),
        &[Op::Kill("/c"), Op::RcuBarrier],
    )
}

/// /a/c's filesystem revalidates it (NFS-like: -ECHILD in RCU mode), so
/// lookup_fast leaves RCU mode with try_to_unlazy_next, taking the child.
const REVALIDATED: &[Node] = &[
    Node::Dir("/a"),
    Node::File("/a/c"),
    Node::Revalidate("/a/c"),
];

fn revalidate_vs_kill(_: &[u8]) -> Plan {
    plan(REVALIDATED, Walker::Lookup("/a/c"), &[Op::Kill("/a/c")])
}

fn rename_to_other_dir(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[Node::Dir("/a"), Node::File("/a/x"), Node::Dir("/b")];
    plan(TREE, Walker::Lookup("/b/x"), &[Op::Rename("/a/x", "/b/x")])
}

fn umount_vs_walk(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[Node::Dir("/a"), Node::Mount("/a"), Node::Dir("/a/b")];
    plan(TREE, Walker::Lookup("/a/b"), &[Op::Umount("/a")])
}

fn symlink_vs_rename(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/a"),
        Node::Dir("/a/b"),
        Node::File("/a/b/c"),
        Node::Symlink("/a/l", "b"),
    ];
    plan(
        TREE,
        Walker::Lookup("/a/l/c"),
        &[Op::Rename("/a/b", "/a/x")],
    )
}

/// /a/l is a symlink to b, and b is on disk but not in the dcache: the
/// lookup of b misses in RCU mode with the link on the stack, so
/// `try_to_unlazy` must legitimize the link and the path.
const LINK_TO_UNCACHED: &[Node] = &[
    Node::Dir("/a"),
    Node::Uncached("/a/b"),
    Node::Symlink("/a/l", "b"),
];

fn unlazy_link_vs_rename(_: &[u8]) -> Plan {
    plan(
        LINK_TO_UNCACHED,
        Walker::Lookup("/a/l"),
        &[Op::Rename("/a/l", "/a/m")],
    )
}

fn unlazy_link_vs_rename_dir(_: &[u8]) -> Plan {
    plan(
        LINK_TO_UNCACHED,
        Walker::Lookup("/a/l"),
        &[Op::Rename("/a", "/x")],
    )
}

fn dotdot_aba(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::Dir("/tmp/a"),
        Node::Dir("/tmp/a/b"),
        Node::Cwd("/tmp/a/b"),
    ];
    plan(
        TREE,
        Walker::RefWalk(".."),
        &[
            Op::Rename("/tmp/a/b", "/tmp/b"),
            Op::Unlink("/tmp/a"),
            Op::Mkdir("/tmp/a"),
            Op::Rename("/tmp/b", "/tmp/a/b"),
        ],
    )
}

fn dotdot_rcu_vs_rename(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[
        Node::Dir("/tmp"),
        Node::Dir("/tmp/a"),
        Node::Dir("/tmp/a/b"),
        Node::Cwd("/tmp/a/b"),
    ];
    plan(
        TREE,
        Walker::Lookup(".."),
        &[Op::Rename("/tmp/a/b", "/tmp/b"), Op::Unlink("/tmp/a")],
    )
}

fn negative_to_positive(_: &[u8]) -> Plan {
    const TREE: &[Node] = &[Node::Dir("/a"), Node::Dir("/a/b"), Node::Negative("/a/b/c")];
    plan(TREE, Walker::RefWalk("/a/b/c"), &[Op::Create("/a/b/c")])
}

const SCENARIOS: &[ScenarioRow<Plan>] = &[
    Scenario {
        name: "rename-vs-walk",
        about: "/a/b/c cached; the walker looks up /a/b/c while the actor renames /a/b to /a/x",
        goals: &["legitimized", "ref_walk_restart"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: rename_vs_walk,
    },
    Scenario {
        name: "unlink-vs-walk",
        about: "/a/b/c cached; the walker looks up /a/b/c while the actor unlinks it (d_delete \
                makes it negative in place, or unhashes it if the walker holds it)",
        goals: &["legitimized", "ref_walk_restart"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: unlink_vs_walk,
    },
    Scenario {
        name: "kill-vs-walk",
        about: "/a/b/c cached; the actor invalidates c and drops the last reference (dentry_kill: \
                dead lockref, unhashed, freed by call_rcu on the grace-period kthread) while the \
                walker looks it up",
        goals: &["legitimized", "lockref_get_not_dead_failed"],
        loom_bound: Some(1),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: kill_vs_walk,
    },
    Scenario {
        name: "kill-vs-walk-deep",
        about: "kill-vs-walk at preemption bound 2 (deep tier)",
        goals: &["legitimized", "lockref_get_not_dead_failed"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: kill_vs_walk,
    },
    Scenario {
        name: "kill-vs-unlazy",
        about: "/c cached; the actor kills it as in kill-vs-walk, then waits for the free \
                (rcu_barrier) while the walker looks up /c: two threads and a one-component \
                walk; the actor's wait for the grace period is where the walker is let go \
                between leaving RCU and taking its reference",
        goals: &["legitimized", "lockref_get_not_dead_failed"],
        // Bound 2 since the grace-period kthread starts at the kill's
        // call_rcu (issue 17): unlazy-leaves-rcu-first needs one preemption,
        // but loom's preemption-bounded DPOR reaches that schedule only at
        // bound 2 (48,023 executions; current holds in 835,316).
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: kill_vs_unlazy,
    },
    Scenario {
        name: "revalidate-vs-kill",
        about: "/a/c cached, its filesystem revalidating it (-ECHILD in RCU mode); the walker \
                looks up /a/c (lookup_fast calls try_to_unlazy_next to take c with the path) \
                while the actor invalidates c and drops the last reference (dentry_kill)",
        goals: &[
            "d_revalidate_echild",
            "legitimized",
            "unlazy_next_child_dead",
            "unlazy_next_child_changed",
        ],
        loom_bound: Some(1),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: revalidate_vs_kill,
    },
    Scenario {
        name: "rename-to-other-dir",
        about: "/a/x cached, /b empty; the walker looks up /b/x while the actor renames /a/x \
                to /b/x, keeping its name (d_move to another parent): before the rename the \
                only x in the dcache is another directory's",
        goals: &["legitimized", "ref_walk_restart"],
        loom_bound: Some(1),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: rename_to_other_dir,
    },
    Scenario {
        name: "rename-to-other-dir-deep",
        about: "rename-to-other-dir at preemption bound 2 (deep tier: 150,216 loom executions, \
                26 s, against 2,472 at bound 1)",
        goals: &["legitimized", "ref_walk_restart"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: rename_to_other_dir,
    },
    Scenario {
        name: "umount-vs-walk",
        about: "a filesystem mounted on /a holding /a/b; the walker looks up /a/b (crossing the \
                mount lazily, legitimizing it at the end) while the actor umounts /a \
                synchronously (the grace-period kthread frees the mount during the race)",
        goals: &[
            "legitimized",
            "legitimize_mnt_raced_umount",
            "umount_sync_done",
            "umount_busy",
        ],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: umount_vs_walk,
    },
    Scenario {
        name: "symlink-vs-rename",
        about: "/a/l is a symlink to b; the walker looks up /a/l/c (following the link, which \
                must be legitimized with the path) while the actor renames /a/b to /a/x",
        goals: &["symlink_followed", "legitimized", "ref_walk_restart"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: symlink_vs_rename,
    },
    Scenario {
        name: "unlazy-link-vs-rename",
        about: "/a/l is a symlink to b, which only the filesystem holds; the walker looks up /a/l \
                (its lookup of b misses the dcache with the link on the stack, so try_to_unlazy \
                legitimizes link and path) while the actor renames the link to /a/m",
        goals: &["symlink_followed", "legitimized", "legitimize_links_failed"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: unlazy_link_vs_rename,
    },
    Scenario {
        name: "unlazy-link-vs-rename-dir",
        about: "as unlazy-link-vs-rename, but the actor renames the directory /a to /x: the \
                path's legitimization fails with the link on the stack",
        goals: &[
            "symlink_followed",
            "legitimized",
            "legitimize_path_failed_with_links",
        ],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: unlazy_link_vs_rename_dir,
    },
    Scenario {
        name: "dotdot-aba",
        about: "cwd /tmp/a/b; the walker's ref-walk resolves .. (dget_parent) while the \
                actor renames b to /tmp/b, rmdirs /tmp/a, mkdirs it again (the same dentry, a new \
                inode) and renames b back (e84009336711's ABA)",
        goals: &["dget_parent_retry"],
        loom_bound: Some(1),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: dotdot_aba,
    },
    Scenario {
        name: "dotdot-aba-deep",
        about: "dotdot-aba at preemption bound 2 (deep tier)",
        goals: &["dget_parent_retry"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: dotdot_aba,
    },
    Scenario {
        name: "dotdot-rcu-vs-rename",
        about: "cwd /tmp/a/b; the walker resolves .. lazily (follow_dotdot_rcu: d_parent, its \
                seq, then b's seq re-checked) while the actor renames b to /tmp/b, keeping its \
                name, and unlinks the emptied /tmp/a (d_delete makes it negative in place)",
        goals: &["dotdot_seq_changed", "legitimized", "ref_walk_restart"],
        loom_bound: Some(1),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: dotdot_rcu_vs_rename,
    },
    Scenario {
        name: "negative-to-positive",
        about: "/a/b/c is a cached negative dentry; the walker's ref-walk looks it up while the \
                actor creates c (d_instantiate: inode stored, then type bits released)",
        goals: &["negative_dentry"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: negative_to_positive,
    },
];

const fn bug(bug: Bug) -> Flavor {
    Flavor {
        vfs: None,
        bug: Some(bug),
    }
}

const fn vfs_bug(bug: VfsBug) -> Flavor {
    Flavor {
        vfs: Some(bug),
        bug: None,
    }
}

const VARIANTS: &[Variant<Flavor>] = &[
    Variant {
        name: "current",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/namei.c:try_to_unlazy*,legitimize_*,lookup_fast,step_into (vfs-7.3-rc1.misc \
                 1c3e8cef79ea); fs/dcache.c (vfs-7.3-rc5.fixes); fs/namespace.c \
                 (vfs-7.3-rc1.mount)",
        about: "the walk as in the v7.3 merge window: hand-over-hand d_seq validation, \
                legitimization in mount → lockref → seq order, __legitimize_mnt testing \
                MNT_SYNC_UMOUNT|MNT_DOOMED under mount_lock",
        code: Flavor {
            vfs: None,
            bug: None,
        },
    },
    Variant {
        name: "dget-parent-pointer-recheck",
        expected: Expected::Violates("walk_linearizable"),
        witness: "dotdot-aba",
        kernel: "fs/dcache.c:dget_parent before e84009336711 (v5.5, \"fix dget_parent() fastpath \
                 race\")",
        about: "[real] the fast path re-checks that d_parent is the same pointer instead of \
                d_seq: rename away, rmdir, mkdir, rename back passes it, and '..' resolves to a \
                parent seen negative",
        code: vfs_bug(VfsBug::DgetParentPointerRecheck),
    },
    Variant {
        name: "positivity-no-acquire",
        expected: Expected::Violates("walk_linearizable"),
        witness: "negative-to-positive",
        kernel: "fs/namei.c:traverse_mounts before \"fix missing barriers when checking \
                 positivity\" (Al Viro, v5.5)",
        about: "[real] ref-walk reads d_flags with a plain load: it can see the new positive \
                type with the stale NULL d_inode (message passing; weak memory only)",
        code: bug(Bug::PositivityNoAcquire),
    },
    Variant {
        name: "legitimize-mnt-unlocked-umount-test",
        expected: Expected::Violates("sync_umount"),
        witness: "umount-vs-walk",
        kernel: "fs/namespace.c:__legitimize_mnt before 250cf3693060 (2025, CVE-2025-38058)",
        about: "[real] MNT_SYNC_UMOUNT tested without mount_lock: the walker keeps a reference \
                umount did not count and steals its final mntput",
        code: vfs_bug(VfsBug::LegitimizeMntUnlockedUmountTest),
    },
    Variant {
        name: "umount-missing-mb",
        expected: Expected::Violates("sync_umount"),
        witness: "umount-vs-walk",
        kernel: "fs/namespace.c:do_umount before 65781e19dcfc (2025)",
        about: "[real] no smp_mb() between taking mount_lock and reading mnt_count: walker and \
                umount each miss the other's write (store buffering; weak memory only)",
        code: vfs_bug(VfsBug::UmountMissingMb),
    },
    Variant {
        name: "mntput-legitimize-race-2018",
        expected: Expected::Violates("sync_umount"),
        witness: "umount-vs-walk",
        kernel: "fs/namespace.c:__legitimize_mnt,mntput_no_expire before 119e1ef80ecf (2018)",
        about: "[real] no smp_mb() after the walker's increment or after the final put takes \
                mount_lock, and no locked MNT_DOOMED undo: each side misses the other",
        code: vfs_bug(VfsBug::MntputLegitimizeRace2018),
    },
    Variant {
        name: "retain-dentry-keeps-unhashed",
        expected: Expected::Violates("no_leaked_dentry"),
        witness: "kill-vs-walk",
        kernel: "fs/dcache.c:retain_dentry (vfs-7.3-rc5.fixes) without its d_unhashed test \
                 (constructed mutant)",
        about: "the final dput of an unhashed dentry keeps it at count 0 instead of killing it: \
                d_invalidate's victim stays allocated where no lookup can find it and nothing \
                will free it; every count still equals the references held",
        code: vfs_bug(VfsBug::RetainDentryKeepsUnhashed),
    },
    Variant {
        name: "d-lookup-rcu-skips-parent",
        expected: Expected::Violates("walk_linearizable"),
        witness: "rename-to-other-dir",
        kernel: "fs/dcache.c:__d_lookup_rcu (vfs-7.3-rc5.fixes) without its d_parent comparison \
                 (constructed mutant)",
        about: "the RCU lookup of x in /b matches /a/x: a lookup of /b/x that ends before the \
                rename returns x's inode, a path that did not exist yet",
        code: vfs_bug(VfsBug::DLookupRcuSkipsParent),
    },
    Variant {
        name: "legitimize-skips-seq-check",
        expected: Expected::Violates("snapshot_valid"),
        witness: "unlink-vs-walk",
        kernel: "fs/namei.c:__legitimize_path (constructed mutant)",
        about: "the dentry reference is taken but d_seq is not re-checked: a dentry made \
                negative after the walk validated it is legitimized as if unchanged",
        code: bug(Bug::LegitimizeSkipsSeqCheck),
    },
    Variant {
        name: "unlazy-leaves-rcu-first",
        expected: Expected::Violates("use_after_free"),
        witness: "kill-vs-unlazy",
        kernel: "fs/namei.c:try_to_unlazy (constructed mutant)",
        about: "the RCU read section is left before legitimizing: the grace period ends and the \
                killed dentry is freed under the walker's lockref get",
        code: bug(Bug::UnlazyLeavesRcuFirst),
    },
    Variant {
        name: "legitimize-gets-dead",
        expected: Expected::Violates("no_dead_ref"),
        witness: "kill-vs-walk",
        kernel: "fs/namei.c:__legitimize_path (constructed mutant)",
        about: "lockref_get instead of lockref_get_not_dead: a reference resurrects a dentry \
                dentry_kill has marked dead",
        code: bug(Bug::LegitimizeGetsDead),
    },
    Variant {
        name: "unlazy-keeps-ungrabbed-path",
        expected: Expected::Violates("refs_exact"),
        witness: "kill-vs-walk",
        kernel: "fs/namei.c:__legitimize_path (constructed mutant of the NULLing convention)",
        about: "a dentry whose reference was not taken is left in nd->path: terminate_walk puts \
                a reference the walk never held",
        code: bug(Bug::UnlazyKeepsUngrabbedPath),
    },
    Variant {
        name: "unlazy-path-before-links",
        expected: Expected::Violates("refs_exact"),
        witness: "unlazy-link-vs-rename-dir",
        kernel: "fs/namei.c:try_to_unlazy (a reviewer's patch, constructed: issue 16)",
        about: "legitimize_path before legitimize_links, each keeping its failure exit: a failed \
                path leaves the links ungrabbed at depth > 0, and terminate_walk puts references \
                the walk never took",
        code: bug(Bug::UnlazyPathBeforeLinks),
    },
    Variant {
        name: "unlazy-next-dead-child-forgets-parent",
        expected: Expected::Violates("refs_exact"),
        witness: "revalidate-vs-kill",
        kernel: "fs/namei.c:try_to_unlazy_next (vfs-7.3-rc1.misc 1c3e8cef79ea) leaving by out1 \
                 instead of out when the child is dead (constructed mutant)",
        about: "the parent's reference is taken, the child is found dead, and the exit NULLs \
                nd->path.dentry: terminate_walk never puts the parent",
        code: bug(Bug::UnlazyNextDeadChildForgetsParent),
    },
    Variant {
        name: "dotdot-rcu-skips-seq-check",
        expected: Expected::Violates("walk_linearizable"),
        witness: "dotdot-rcu-vs-rename",
        kernel: "fs/namei.c:follow_dotdot_rcu (vfs-7.3-rc1.misc 1c3e8cef79ea) without the \
                 read_seqcount_retry of the dentry it leaves (constructed mutant)",
        about: "'..' takes the d_parent it read before b was renamed away, samples that parent's \
                seq after it was unlinked, and steps onto a negative directory: -ENOENT for '..'",
        code: bug(Bug::DotdotRcuSkipsSeqCheck),
    },
    Variant {
        name: "rcu-lookup-takes-ref",
        expected: Expected::Violates("rcu_mode"),
        witness: "rename-vs-walk",
        kernel: "fs/namei.c:lookup_fast (constructed mutant)",
        about: "the RCU branch takes a reference on the child it found: a refcount write while \
                lazy, outside legitimization",
        code: bug(Bug::RcuLookupTakesRef),
    },
    Variant {
        name: "rcu-miss-skips-unlazy",
        expected: Expected::Violates("might_sleep"),
        witness: "rename-vs-walk",
        kernel: "fs/namei.c:lookup_fast (constructed mutant)",
        about: "a dcache miss in RCU mode falls back to lookup_slow without try_to_unlazy: the \
                parent's i_rwsem is taken inside the RCU read section",
        code: bug(Bug::RcuMissSkipsUnlazy),
    },
    Variant {
        name: "lazy-retry-on-echild",
        expected: Expected::Violates("restarts_bounded"),
        witness: "rename-vs-walk",
        kernel: "fs/namei.c:filename_lookup (constructed mutant)",
        about: "-ECHILD retries the lazy walk instead of going to ref-walk: the lookup restarts \
                twice when the second lazy attempt fails too (no progress bound under a writer \
                that keeps the counts moving)",
        code: bug(Bug::LazyRetryOnEchild),
    },
    Variant {
        name: "no-ref-walk-restart",
        expected: Expected::Violates("no_echild"),
        witness: "rename-vs-walk",
        kernel: "fs/namei.c:filename_lookup (constructed mutant)",
        about: "-ECHILD from the lazy attempt is returned instead of restarting in ref-walk: a \
                concurrency artefact becomes a user-visible error",
        code: bug(Bug::NoRefWalkRestart),
    },
];

/// What the invariants read.
pub struct World {
    pub vfs: Vfs,
}

type Inv = Invariant<Check<World>>;

const INVARIANTS: &[Inv] = &[
    Invariant {
        name: "no_echild",
        about: "L6: -ECHILD (and -EAGAIN without LOOKUP_CACHED) never reaches the caller",
        check: Check::EndAt(no_echild),
    },
    Invariant {
        name: "restarts_bounded",
        about: "liveness: a lookup restarts at most once in ref-walk after -ECHILD and at most \
                once with LOOKUP_REVAL after -ESTALE, whatever the writers do",
        check: Check::EndAt(restarts_bounded),
    },
    Invariant {
        name: "walk_linearizable",
        about: "L3: a lookup returns what resolving its path would, each component in the \
                namespace of some instant before it returned, instants in order (the ghost \
                namespace the adversaries keep; instants before its start count, as nothing \
                orders the walker after them)",
        check: Check::End(walk_linearizable),
    },
    Invariant {
        name: "snapshot_valid",
        about: "L3: a successful try_to_unlazy hands over a view that was current at one instant \
                (the kernel's BUG_ON(nd->inode != d_inode): raised at the legitimization)",
        check: Check::Raised,
    },
    Invariant {
        name: "no_dead_ref",
        about: "L2: no reference is taken on a dead dentry (raised where it is taken)",
        check: Check::Raised,
    },
    Invariant {
        name: "refs_exact",
        about: "L4: no reference is put that its holder does not hold (raised at the put); at the \
                end every dentry's and mount's count equals the references held on it and no task \
                holds any",
        check: Check::EndAt(refs_exact),
    },
    Invariant {
        name: "no_leaked_dentry",
        about: "L4 at the end: a dentry nobody references is hashed (kept for lookups to find) or \
                was killed; an unhashed dentry left live at count 0 can be neither found nor \
                freed (refs_exact's count = references held accepts it: 0 = 0)",
        check: Check::End(no_leaked_dentry),
    },
    Invariant {
        name: "rcu_mode",
        about: "L5: while LOOKUP_RCU is set the walk writes no refcount outside legitimization \
                (raised; sleeping in RCU mode is might_sleep)",
        check: Check::Raised,
    },
    Invariant {
        name: "sync_umount",
        about: "a synchronous umount that returned 0 did the final mntput itself: no walker kept \
                a reference it did not count",
        check: Check::EndAt(sync_umount),
    },
];

/// The `unlazy` model.
pub struct Unlazy;

impl Spec for Unlazy {
    type Code = Flavor;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "unlazy";
    const CODE: &'static [&'static str] = &[
        "model/src/namei/mod.rs",
        "model/src/namei/walk.rs",
        "model/src/namei/unlazy.rs",
        "model/src/vfs/",
    ];
    const ABOUT: &'static str =
        "fs/namei.c RCU-walk → ref-walk: try_to_unlazy*, legitimize_*, d_seq, mount_lock, lockref (v7.3 merge window)";
    const LIMITS: &'static [&'static str] = &[
        "one walker and one actor thread (plus the RCU grace-period kthread): loom allows four",
        "one dentry operation: a ->d_revalidate that answers -ECHILD in RCU mode and 'valid' \
         in ref mode (a network filesystem's, on the dentries a scenario marks); none \
         invalidates (returns 0) or fails, and there is no d_hash, d_compare or d_weak_revalidate; \
         no permission failures (may_lookup grants), so may_lookup's unlazy is not exercised",
        "no automounts, d_manage, atime updates or LSM hooks; symlink bodies are relative and \
         inline",
        "renames never replace an existing name; umount is synchronous (no MNT_DETACH), one \
         mount deep, with no propagation",
        "inodes are never freed; fs->root and fs->pwd never change (no chroot/chdir races)",
        "one dcache hash chain per name: no collisions between names",
        "rename_lock's r_seq is sampled but only scoped lookups consume it, and none runs",
    ];

    fn variants() -> &'static [Variant<Flavor>] {
        VARIANTS
    }
    fn scenarios() -> &'static [ScenarioRow<Plan>] {
        SCENARIOS
    }
    fn invariants() -> &'static [Inv] {
        INVARIANTS
    }

    fn execute(flavor: Flavor, plan: &Plan, watch: &Watch<Self>) {
        let world = Arc::new(World {
            vfs: Vfs::build(flavor.vfs, plan.tree),
        });
        watch.start(&world);
        let (w, walker) = (world.clone(), plan.walker);
        let t0 = exec::spawn("walker", move || {
            let t = Task::new("walker", Context::Task);
            walk(&w.vfs, &t, flavor, walker);
        });
        let (w, ops) = (world.clone(), plan.actor);
        let t1 = exec::spawn("actor", move || {
            let t = Task::new("actor", Context::Task);
            for op in ops {
                act(&w.vfs, &t, *op);
            }
        });
        t0.join();
        t1.join();
        let main = Task::new("main", Context::Task);
        world.vfs.rcu.quiesce(&main);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        render(&w.vfs)
    }

    fn needs(v: &Variant<Flavor>) -> &'static [Need] {
        const WEAK: &[Need] = &[Need::WeakMemory(
            "a missing barrier: shuttle's sequentially consistent atomics cannot show it",
        )];
        const DEEP: &[Need] = &[Need::DeepSchedule(
            "three preemptions (loom finds it at bound 3), each in a window a few steps wide \
             of a 220-step execution: PCT's per-run guarantee at depth 4 is 1/(3*220^3) = 3.1e-8",
        )];
        match (v.code.vfs, v.code.bug) {
            (
                Some(
                    VfsBug::UmountMissingMb
                    | VfsBug::DgetParentPointerRecheck
                    | VfsBug::MntputLegitimizeRace2018,
                ),
                _,
            )
            | (_, Some(Bug::PositivityNoAcquire)) => WEAK,
            (Some(VfsBug::LegitimizeMntUnlockedUmountTest), _) => DEEP,
            (_, Some(Bug::LazyRetryOnEchild)) => &[Need::WeakMemory(
                "with one rename, sequentially consistent, the retry's path_init waits for \
                 rename_lock and then sees the finished rename: only a stale d_seq read (weak \
                 memory) fails the second lazy attempt too",
            )],
            _ => &[],
        }
    }
}

/// The walker: one lookup, then the references it returned put back.
fn walk(vfs: &Vfs, t: &Task, flavor: Flavor, walker: Walker) {
    let (path, lazy_first) = match walker {
        Walker::Lookup(p) => (p, true),
        Walker::RefWalk(p) => (p, false),
    };
    let name = Filename::new(path);
    let r = if lazy_first {
        filename_lookup(vfs, t, flavor, &name)
    } else {
        ref_walk_lookup(vfs, t, flavor, &name)
    };
    if let Ok(p) = r {
        path_put(vfs, t, p);
    }
}

/// One namespace change by the actor.
pub fn act(vfs: &Vfs, t: &Task, op: Op) {
    match op {
        Op::Rename(from, to) => vfs.vfs_rename(t, &components(from), &components(to)),
        Op::Unlink(p) => vfs.vfs_unlink(t, &components(p)),
        Op::Mkdir(p) => vfs.vfs_create(t, &components(p), Kind::Dir),
        Op::Create(p) => vfs.vfs_create(t, &components(p), Kind::Reg),
        Op::Kill(p) => vfs.invalidate_and_put(t, &components(p)),
        Op::Umount(p) => {
            let _ = vfs.path_umount(t, &components(p));
        }
        Op::RcuBarrier => vfs.rcu.rcu_barrier(t),
        Op::Rmdir(p) => {
            let _ = vfs.vfs_rmdir(t, &components(p));
        }
        Op::Delegate(p) => vfs.grant_delegation(t, &components(p)),
    }
}

/// How a report names a walk's result.
pub fn show_outcome(r: &Result<u64, Errno>) -> String {
    match r {
        Ok(0) => "a NULL inode".to_string(),
        Ok(i) => format!("inode#{i}"),
        Err(e) => e.to_string(),
    }
}

fn walk_linearizable(w: &World) -> Result<(), String> {
    let history = w.vfs.ns_history();
    for l in w.vfs.lookups().iter() {
        let Some(r) = l.result else { continue };
        // Every version up to the lookup's end, not only those after its
        // start: nothing orders the walker after the adversary's earlier
        // changes (no happens-before edge), so on weak memory a walk that
        // starts later may still consistently see an older namespace.
        let window = &history[..=l.last];
        let allowed = outcomes(window, l.start, &l.path);
        if !allowed.contains(&r) {
            let allowed: Vec<String> = allowed.iter().map(show_outcome).collect();
            return Err(format!(
                "{} resolved {} to {}, but a walk during it could only give {}",
                l.thread,
                path_text(l),
                show_outcome(&r),
                allowed.join(" or ")
            ));
        }
    }
    Ok(())
}

fn path_text(l: &Lookup) -> String {
    let parts: Vec<&str> = l
        .path
        .iter()
        .map(|&c| {
            if c == vfsmc_model::vfs::namespace::DOTDOT {
                ".."
            } else {
                vfsmc_model::vfs::name_of(c)
            }
        })
        .collect();
    let root = if l.absolute { "/" } else { "" };
    format!("{root}{}", parts.join("/"))
}

fn refs_exact(w: &World) -> Result<(), Broken> {
    refs_balanced(&w.vfs, &["walker", "actor"])
}

/// The word whose writes change `obj`'s reference count.
fn count_word(vfs: &Vfs, obj: Obj) -> Option<Name> {
    let mut name = None;
    match obj {
        Obj::Dentry(d) => vfs.dentries.each(|r, _, de| {
            if r == d {
                name = Some(de.d_lockref.name());
            }
        }),
        Obj::Mount(m) => vfs.mounts.each(|r, _, mnt| {
            if r == m {
                name = Some(mnt.mnt_count.name());
            }
        }),
    }
    name
}

/// A dentry's reference count as a trace's value of its `d_lockref` shows
/// it, or a mount's `mnt_count`.
fn count_of(obj: Obj) -> fn(u64) -> i64 {
    match obj {
        Obj::Dentry(_) => |w| i64::from(Lockref::count_in(w)),
        Obj::Mount(_) => |w| w as i64,
    }
}

/// The step that left `obj`'s count, in `word`, wrong (see
/// `exec::unmatched_change`): too high (`excess`), the get never put (by
/// `holder` if given); too low, the put that underflowed.
fn count_cause(word: Name, obj: Obj, holder: Option<&str>, excess: bool) -> Option<usize> {
    exec::unmatched_change(word, holder, excess, count_of(obj))
}

/// L4 for any model on the VFS: no task in `holders` ends holding a
/// reference, and every live dentry's and mount's count equals the
/// references the ledger holds on it. A failure points at the step that
/// left the count wrong: the get never put, or the put that underflowed.
pub fn refs_balanced(vfs: &Vfs, holders: &[&str]) -> Result<(), Broken> {
    for &holder in holders {
        let held = vfs.refs.held_by(vfsmc_model::trace::intern(holder));
        if let Some(&(obj, _)) = held.first() {
            let cause = count_word(vfs, obj).and_then(|w| count_cause(w, obj, Some(holder), true));
            return Err(Broken::at(format!("{holder} ends holding {held:?}"), cause));
        }
    }
    let mut broken = None;
    vfs.dentries.each(|d, state, de| {
        let live = matches!(state, vfsmc_model::kernel::rcu::ObjState::Live { .. });
        let count = de.count();
        let held = vfs.refs.count(Obj::Dentry(d));
        let ok = !live || (count < 0 && held == 0) || count == held as i32;
        if !ok && broken.is_none() {
            broken = Some(Broken::at(
                format!(
                    "{} has count {count} but {held} reference(s) are held on it",
                    de.label
                ),
                count_cause(
                    de.d_lockref.name(),
                    Obj::Dentry(d),
                    None,
                    count > held as i32,
                ),
            ));
        }
    });
    if let Some(b) = broken {
        return Err(b);
    }
    vfs.mounts.each(|m, state, mnt| {
        let live = matches!(state, vfsmc_model::kernel::rcu::ObjState::Live { .. });
        let count = mnt.mnt_count.value_at_quiescence();
        let held = u64::from(vfs.refs.count(Obj::Mount(m)));
        if live && count != held && broken.is_none() {
            broken = Some(Broken::at(
                format!(
                    "{} has mnt_count {count} but {held} reference(s) are held on it",
                    mnt.label
                ),
                count_cause(mnt.mnt_count.name(), Obj::Mount(m), None, count > held),
            ));
        }
    });
    broken.map_or(Ok(()), Err)
}

fn no_leaked_dentry(w: &World) -> Result<(), String> {
    dentries_reclaimable(&w.vfs)
}

/// For any model on the VFS, at quiescence: every live dentry at count 0
/// is hashed. `retain_dentry` keeps only those; the final `dput` of an
/// unhashed one kills it (dead lockref, freed after a grace period).
pub fn dentries_reclaimable(vfs: &Vfs) -> Result<(), String> {
    let mut leaked = None;
    vfs.dentries.each(|d, state, de| {
        let live = matches!(state, vfsmc_model::kernel::rcu::ObjState::Live { .. });
        if live && de.count() == 0 && de.hashed.peek() == 0 && leaked.is_none() {
            leaked = Some(format!(
                "{}#{d} ({}) is unhashed at count 0 but was never killed: no lookup can find \
                 it and no final dput will free it",
                de.label,
                vfsmc_model::vfs::name_of(de.d_name.peek())
            ));
        }
    });
    leaked.map_or(Ok(()), Err)
}

fn restarts_bounded(w: &World) -> Result<(), Broken> {
    for l in w.vfs.lookups().iter() {
        if l.ref_walk_restarts > 1 || l.reval_restarts > 1 {
            return Err(returned_by(
                l.thread,
                format!(
                    "{}'s lookup of {} restarted {} time(s) after -ECHILD and {} after -ESTALE",
                    l.thread,
                    path_text(l),
                    l.ref_walk_restarts,
                    l.reval_restarts
                ),
            ));
        }
    }
    Ok(())
}

fn no_echild(w: &World) -> Result<(), Broken> {
    for l in w.vfs.lookups().iter() {
        if let Some(Err(e @ (Errno::ECHILD | Errno::EAGAIN))) = l.result {
            return Err(returned_by(
                l.thread,
                format!(
                    "{}'s lookup of {} returned {e}, an artefact of the lazy walk",
                    l.thread,
                    path_text(l)
                ),
            ));
        }
    }
    Ok(())
}

fn sync_umount(w: &World) -> Result<(), Broken> {
    for u in w.vfs.umounts().iter() {
        if u.result.is_err() {
            continue;
        }
        let mount = w.vfs.mount(u.mount);
        let by: Option<Name> = mount.final_put();
        if by != Some(u.thread) {
            let message = format!(
                "umount(2) by {} returned 0, but the final mntput of {} was done by {}",
                u.thread,
                mount.label,
                by.unwrap_or("nobody (still referenced)")
            );
            // The put that came after umount returned, where there was one.
            let cause = by.and_then(|b| exec::last_write_by(b, mount.mnt_count.name()));
            return Err(match cause {
                Some(_) => Broken::at(message, cause),
                None => returned_by(u.thread, message),
            });
        }
    }
    Ok(())
}

fn render(vfs: &Vfs) -> String {
    render_vfs(vfs, &["walker", "actor"])
}

/// The VFS in two lines for a violation's report: every dentry (name,
/// count, inode, hashed, freed) and the references `holders` hold.
pub fn render_vfs(vfs: &Vfs, holders: &[&str]) -> String {
    let mut lines = Vec::new();
    let mut dentries = Vec::new();
    vfs.dentries.each(|d, state, de| {
        let life = match state {
            vfsmc_model::kernel::rcu::ObjState::Live { .. } => "",
            vfsmc_model::kernel::rcu::ObjState::Freed { .. } => " freed",
        };
        dentries.push(format!(
            "{}#{d}({} count {} inode {}{}{life})",
            de.label,
            vfsmc_model::vfs::name_of(de.d_name.peek()),
            de.count(),
            de.d_inode.peek(),
            if de.hashed.peek() != 0 {
                ""
            } else {
                " unhashed"
            }
        ));
    });
    lines.push(format!("dentries: {}", dentries.join(" ")));
    let refs: Vec<String> = vfs
        .refs
        .entries()
        .iter()
        .filter(|(h, _, _)| holders.contains(h))
        .map(|(h, o, n)| format!("{h}:{o:?}x{n}"))
        .collect();
    lines.push(format!(
        "held: {}",
        if refs.is_empty() {
            "-".to_string()
        } else {
            refs.join(" ")
        }
    ));
    lines.join("\n")
}
