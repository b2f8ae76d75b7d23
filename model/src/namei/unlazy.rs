//! Lazy to legit: turning an RCU walk's unreferenced view into references
//! (fs/namei.c, vfs-7.3-rc1.misc copy: leave_rcu, drop_links,
//! __legitimize_path, legitimize_path, legitimize_links, legitimize_root,
//! try_to_unlazy, try_to_unlazy_next).
//!
//! The contract every exit keeps: on failure the walk holds exactly what
//! `terminate_walk` will drop (path fields that were not grabbed are NULL;
//! `depth` covers exactly the links legitimized; the root only if
//! ND_ROOT_GRABBED), and it is no longer in RCU mode.

use crate::exec::Counter;
use crate::trace::Val;
use crate::vfs::Path;

use super::walk::Walk;
use super::{Bug, LOOKUP_CACHED, LOOKUP_RCU, ND_ROOT_GRABBED, ND_ROOT_PRESET};

impl Walk<'_> {
    /// fs/namei.c:leave_rcu (7.3; present since before v6.12): clear
    /// LOOKUP_RCU, forget the seq samples, leave the RCU read section —
    /// from here on nothing this walk saw but did not legitimize stays
    /// allocated for it.
    pub(crate) fn leave_rcu(&mut self) {
        let _f = self.t.enter("leave_rcu");
        self.nd.flags &= !LOOKUP_RCU;
        self.nd.seq = 0;
        self.nd.next_seq = 0;
        self.vfs.rcu.rcu_read_unlock(self.t);
    }

    /// fs/namei.c:drop_links (7.3): run each stacked link body's delayed
    /// release (`do_delayed_call`, then `clear_delayed_call`). Inline bodies
    /// have none; procfs's `self` links do. `depth` is left for the caller
    /// (46af9ae1305f later moved `depth = 0` in here; every caller of the
    /// model zeroes it right after, which is the same).
    pub(crate) fn drop_links(&mut self) {
        for i in 0..self.nd.depth {
            self.release_body(i);
        }
    }

    /// `do_delayed_call(&nd->stack[i].done)` and its clear.
    pub(crate) fn release_body(&mut self, i: usize) {
        if std::mem::take(&mut self.nd.stack[i].armed) {
            self.t.tracepoint("link_body_released");
        }
    }

    /// fs/namei.c:__legitimize_path (7.3): the mount via `__legitimize_mnt`,
    /// then the dentry with `lockref_get_not_dead`, then `d_seq` must still
    /// be `seq`. The fields not grabbed are set to NULL; on a seq mismatch
    /// both references are held and the path is left for the caller to
    /// put ("path_put is needed afterwards regardless of success or
    /// failure").
    pub(crate) fn __legitimize_path(&mut self, path: &mut Path, seq: u64, mseq: u64) -> bool {
        let _f = self.t.enter("__legitimize_path");
        let res = self.vfs.__legitimize_mnt(self.t, path.mnt, mseq);
        if res > 0 {
            *path = Path::NULL;
            return false;
        }
        if res < 0 {
            path.dentry = 0;
            return false;
        }
        let de = self.vfs.dentries.get(self.t, path.dentry);
        if self.flavor.has(Bug::LegitimizeGetsDead) {
            de.d_lockref.lockref_get(self.t);
        } else if !de.d_lockref.lockref_get_not_dead(self.t) {
            self.t.tracepoint("lockref_get_not_dead_failed");
            if !self.flavor.has(Bug::UnlazyKeepsUngrabbedPath) {
                path.dentry = 0;
            }
            return false;
        }
        self.vfs.took_dentry(self.t, self.t.name(), path.dentry);
        if self.flavor.has(Bug::LegitimizeSkipsSeqCheck) {
            return true;
        }
        !de.d_seq.read_seqcount_retry(self.t, seq)
    }

    /// fs/namei.c:legitimize_path (7.3).
    pub(crate) fn legitimize_path(&mut self, path: &mut Path, seq: u64) -> bool {
        let mseq = self.nd.m_seq;
        self.__legitimize_path(path, seq, mseq)
    }

    /// fs/namei.c:legitimize_links (7.3): every link on the stack, in
    /// order; on the first failure at `i`, drop the bodies and set `depth`
    /// to `i + 1` so `terminate_walk` puts links 0..=i (link `i` maybe
    /// only partly grabbed).
    pub(crate) fn legitimize_links(&mut self) -> bool {
        let _f = self.t.enter("legitimize_links");
        for i in 0..self.nd.depth {
            let mut link = self.nd.stack[i].link;
            let seq = self.nd.stack[i].seq;
            let ok = self.legitimize_path(&mut link, seq);
            self.nd.stack[i].link = link;
            if !ok {
                self.drop_links();
                self.nd.depth = i + 1;
                return false;
            }
        }
        true
    }

    /// fs/namei.c:legitimize_root (7.3): nothing to grab for an absent or
    /// preset root; else mark ND_ROOT_GRABBED first (so a partial grab is
    /// put by `terminate_walk`) and legitimize it.
    pub(crate) fn legitimize_root(&mut self) -> bool {
        if self.nd.root.mnt == 0 || self.nd.state & ND_ROOT_PRESET != 0 {
            return true;
        }
        self.nd.state |= ND_ROOT_GRABBED;
        let mut root = self.nd.root;
        let seq = self.nd.root_seq;
        let ok = self.legitimize_path(&mut root, seq);
        self.nd.root = root;
        ok
    }

    /// fs/namei.c:try_to_unlazy (7.3): legitimize links, path and root,
    /// then leave RCU. LOOKUP_CACHED fails at once, before grabbing
    /// anything (the v7.3 place of that test, fixing Dec 2025's lost
    /// bail-out). False: -ECHILD for the caller, with only what
    /// `terminate_walk` drops still held.
    pub(crate) fn try_to_unlazy(&mut self) -> bool {
        let _f = self.t.enter("try_to_unlazy");
        self.nd.legitimizing = true;
        if self.flavor.has(Bug::UnlazyLeavesRcuFirst) {
            self.vfs.rcu.rcu_read_unlock(self.t);
            self.vfs.rcu.rcu_read_lock(self.t);
        }
        let ok = self.unlazy_all();
        self.nd.legitimizing = false;
        self.leave_rcu();
        if ok {
            self.check_snapshot();
        }
        if ok {
            self.legitimized();
        } else {
            self.t.tracepoint("try_to_unlazy_failed");
        }
        ok
    }

    /// The LOOKUP_CACHED exit at the top of `try_to_unlazy*` (46af9ae1305f
    /// in v6.19-rc5, read in Guzik's v2 mail of 17 Dec 2025; the same place
    /// in the vfs-7.3-rc1.misc copy): drop the link bodies, `depth` := 0
    /// (inside `drop_links` since that fix), NULL the path, fail. `true`
    /// when the unlazy must fail here (`next`: for `try_to_unlazy_next`).
    /// The variants put the test where their kernels had it.
    fn cached_bailout(&mut self, next: bool) -> bool {
        if self.nd.flags & LOOKUP_CACHED == 0 {
            return false;
        }
        let predicated = self.flavor.has(Bug::DepthPredictSkipsCachedTest)
            || (next && self.flavor.has(Bug::CachedTestBeforeDepth));
        if predicated && self.nd.depth == 0 {
            self.t.tracepoint("cached_test_skipped");
            self.t.note("LOOKUP_CACHED test skipped at depth 0", &[]);
            return false;
        }
        self.t.tracepoint("cached_bailout");
        let depth = self.nd.depth;
        if depth > 0 {
            self.t.tracepoint("cached_bailout_with_links");
        }
        let keeps_depth = self.flavor.has(Bug::CachedBailoutKeepsDepth)
            || (!next && self.flavor.has(Bug::CachedTestBeforeDepth));
        if !keeps_depth {
            if !self.flavor.has(Bug::CachedBailoutSkipsDropLinks) {
                self.drop_links();
            }
            self.nd.depth = 0;
        }
        self.nd.path = Path::NULL;
        self.t.note(
            "LOOKUP_CACHED: fail, depth {} → {}, path NULL",
            &[Val::dec(depth as u64), Val::dec(self.nd.depth as u64)],
        );
        true
    }

    fn unlazy_all(&mut self) -> bool {
        if self.cached_bailout(false) {
            return false;
        }
        if self.flavor.has(Bug::UnlazyPathBeforeLinks) {
            return self.unlazy_path_before_links();
        }
        if self.nd.depth > 0 && !self.legitimize_links() {
            self.t.tracepoint("legitimize_links_failed");
            self.nd.path = Path::NULL;
            return false;
        }
        let depth = self.nd.depth;
        if !self.legitimize_nd_path() {
            if depth > 0 {
                self.t.tracepoint("legitimize_path_failed_with_links");
            }
            return false;
        }
        self.legitimize_root()
    }

    /// `legitimize_path(nd, &nd->path, nd->seq)`.
    fn legitimize_nd_path(&mut self) -> bool {
        let mut path = self.nd.path;
        let seq = self.nd.seq;
        let ok = self.legitimize_path(&mut path, seq);
        self.nd.path = path;
        ok
    }

    /// [`Bug::UnlazyPathBeforeLinks`]: `try_to_unlazy`'s two calls swapped,
    /// each with its own failure exit (`goto out` for the path, `goto out1`
    /// for the links).
    fn unlazy_path_before_links(&mut self) -> bool {
        let depth = self.nd.depth;
        if !self.legitimize_nd_path() {
            if depth > 0 {
                self.flavor.exit(
                    Bug::UnlazyPathBeforeLinks,
                    "legitimize_path failed with links on the stack",
                );
            }
            return false;
        }
        if depth > 0 && !self.legitimize_links() {
            self.flavor.exit(
                Bug::UnlazyPathBeforeLinks,
                "legitimize_links failed after the path was grabbed",
            );
            self.nd.path = Path::NULL;
            return false;
        }
        self.legitimize_root()
    }

    /// fs/namei.c:try_to_unlazy_next (7.3): as `try_to_unlazy`, and also
    /// take a reference on `dentry`, the child whose seq is `next_seq`.
    /// The parent is referenced with `lockref_get_not_dead` but its seq is
    /// not re-checked: it was validated after the child's seq was sampled,
    /// so a still-valid child seq vouches for it. On a child mismatch the
    /// child reference is dropped after leaving RCU.
    pub(crate) fn try_to_unlazy_next(&mut self, dentry: crate::vfs::DentryRef) -> bool {
        let _f = self.t.enter("try_to_unlazy_next");
        self.nd.legitimizing = true;
        let outcome = self.unlazy_next(dentry);
        self.nd.legitimizing = false;
        self.leave_rcu();
        match outcome {
            Next::Ok => {
                self.legitimized();
                true
            }
            Next::Failed => {
                self.t.tracepoint("try_to_unlazy_failed");
                false
            }
            Next::DropChild => {
                self.t.tracepoint("try_to_unlazy_failed");
                self.dput(dentry);
                false
            }
        }
    }

    fn unlazy_next(&mut self, dentry: crate::vfs::DentryRef) -> Next {
        if self.cached_bailout(true) {
            return Next::Failed;
        }
        if self.nd.depth > 0 && !self.legitimize_links() {
            self.nd.path = Path::NULL;
            return Next::Failed;
        }
        let res = self
            .vfs
            .__legitimize_mnt(self.t, self.nd.path.mnt, self.nd.m_seq);
        if res > 0 {
            self.nd.path = Path::NULL;
            return Next::Failed;
        }
        if res < 0 {
            self.nd.path.dentry = 0;
            return Next::Failed;
        }
        if !self.get_not_dead(self.nd.path.dentry) {
            self.nd.path.dentry = 0;
            return Next::Failed;
        }
        if !self.get_not_dead(dentry) {
            self.t.tracepoint("unlazy_next_child_dead");
            if self.flavor.has(Bug::UnlazyNextDeadChildForgetsParent) {
                self.flavor.exit(
                    Bug::UnlazyNextDeadChildForgetsParent,
                    "the child was dead: the parent's reference forgotten",
                );
                self.nd.path.dentry = 0;
            }
            return Next::Failed;
        }
        let de = self.vfs.dentries.get(self.t, dentry);
        if de.d_seq.read_seqcount_retry(self.t, self.nd.next_seq) {
            self.t.tracepoint("unlazy_next_child_changed");
            return Next::DropChild;
        }
        if !self.legitimize_root() {
            return Next::DropChild;
        }
        Next::Ok
    }

    /// `lockref_get_not_dead` on `d`, recorded in the ledger on success.
    fn get_not_dead(&mut self, d: crate::vfs::DentryRef) -> bool {
        let de = self.vfs.dentries.get(self.t, d);
        if !de.d_lockref.lockref_get_not_dead(self.t) {
            self.t.tracepoint("lockref_get_not_dead_failed");
            return false;
        }
        self.vfs.took_dentry(self.t, self.t.name(), d);
        true
    }

    /// The BUG_ON at the end of fs/namei.c:try_to_unlazy (7.3): the inode
    /// the lazy walk cached is the legitimized dentry's (the seq checks
    /// guarantee it: the view was current at one instant).
    fn check_snapshot(&self) {
        let d = self.nd.path.dentry;
        let now = self.vfs.dentries.get(self.t, d).d_inode.read_once(self.t);
        if now != self.nd.inode {
            self.t.violation(
                "snapshot_valid",
                format!(
                    "try_to_unlazy legitimized {} holding inode#{now}, but the walk had cached inode#{}",
                    self.vfs.dentry_label(d),
                    self.nd.inode
                ),
            );
        }
    }

    /// Counts one successful legitimization (the cost a cached walk pays).
    fn legitimized(&self) {
        self.t.cost(Counter::Legitimize, 1);
        self.t.tracepoint("legitimized");
    }
}

/// How `try_to_unlazy_next` ended.
enum Next {
    Ok,
    Failed,
    /// The child's reference was taken but its seq moved: drop it after
    /// leaving RCU.
    DropChild,
}
