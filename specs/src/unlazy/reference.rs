//! The `unlazy` model's sequential reference (issue 8): a directory tree as
//! plain data, written from path_resolution(7) and the pages of rename(2),
//! unlink(2), rmdir(2), mkdir(2) and creat(2), not from the model's ghost
//! namespace (model/src/vfs/namespace.rs). One thread at a time, it says
//! what each lookup returns; [`run_single`] runs the same operations on the
//! model, so a test can compare them step by step.
//!
//! Covered: directories, regular files, relative symlinks (followed in the
//! middle and at the end of a path, resolved from the directory holding
//! the link, ELOOP after 40), mounts (a mount hides the mountpoint's
//! contents behind a new empty directory; ".." from a mount root is ".."
//! of the mountpoint), ".." at "/" staying at "/", lookups relative to the
//! cwd, ENOENT and ENOTDIR; open(2) with O_RDWR, O_CREAT and O_EXCL
//! ([`Reference::open`]: a file created when its name is missing, also
//! through a dangling symlink, EEXIST for O_EXCL, EISDIR for a directory
//! and for O_CREAT of a name ending in "/", ENOTDIR for a file named with
//! a trailing "/").
//!
//! Not covered (such an operation is refused, and never reaches the model,
//! whose adversaries assume a valid call): a rename that replaces its
//! target (the reference is RENAME_NOREPLACE), creat(2) of an existing file
//! (it is O_EXCL), removing the cwd (a deleted cwd), paths of a namespace
//! change that pass a symlink or "..", umount, absolute symlink bodies,
//! hard links, permissions.

use std::collections::BTreeMap;

use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::open::{O_CREAT, O_EXCL, O_RDWR, O_WRONLY};
use vfsmc_model::namei::{filename_lookup, path_put, ref_walk_lookup, Filename, Flavor};
use vfsmc_model::trace::Context;
use vfsmc_model::vfs::{Node, Vfs};

use super::{Op, Walker, World};

/// What a lookup returns: the inode it found (numbered as [`Reference`]
/// numbers them), or the errno.
pub type Outcome = Result<u64, Errno>;

/// One step of a sequential run.
#[derive(Clone, Copy, Debug)]
pub enum SeqOp {
    /// A namespace change by the actor: `Rename`, `Unlink`, `Mkdir`,
    /// `Create`, or `Kill` (the dentry evicted from the cache, which the
    /// namespace does not see; the actor then looks the path up again in
    /// ref-walk, the lookup that re-reads the "disk", and that lookup's
    /// result is reported). `Umount` is not supported.
    Change(Op),
    /// A lookup by the walker (lazy first, or ref-walk only), its result
    /// reported and its references put back.
    Walk(Walker),
}

/// Why the reference refuses an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The call fails with this errno (its man page's name).
    Fails(&'static str),
    /// A valid call this reference does not model.
    Outside(&'static str),
}

/// "40 links followed, then ELOOP": path_resolution(7) states the limit;
/// the 41st link fails.
const MAXSYMLINKS: u32 = 40;

#[derive(Clone, Debug)]
enum Body {
    Dir(BTreeMap<&'static str, u64>),
    File,
    /// A relative body, as components.
    Symlink(Vec<&'static str>),
}

#[derive(Clone, Debug)]
struct Object {
    body: Body,
    /// The filesystem it lives on (0: the root filesystem, k: the k-th
    /// mount).
    fs: usize,
}

/// The tree.
///
/// Identities: an inode is numbered by its creation order (1 for "/",
/// then each directory, file, symlink and mounted root as the scenario's
/// nodes and the changes create them). The model allocates its inodes from
/// a slab in the same order and never frees one (the unlazy LIMITS), so its
/// inode index is comparable without the reference reading the model. The
/// alternatives are worse: labels are not unique (every re-created `c` is
/// `c'`), and a bijection learned while comparing would accept a model that
/// consistently swaps two inodes.
#[derive(Clone, Debug)]
pub struct Reference {
    objects: Vec<Object>,
    /// (mountpoint directory, root directory of the filesystem on it).
    mounts: Vec<(u64, u64)>,
    cwd: u64,
    filesystems: usize,
}

const ROOT: u64 = 1;

/// The `/proc` directory of the modelled process (its identity is 1).
const SUBMITTER_DIR: &str = "1";

fn split(path: &'static str) -> Vec<&'static str> {
    path.split('/').filter(|c| !c.is_empty()).collect()
}

impl Reference {
    /// The tree `nodes` describe (parents first), with the cwd a
    /// [`Node::Cwd`] names (else "/").
    pub fn new(nodes: &[Node]) -> Reference {
        let mut r = Reference {
            objects: vec![Object {
                body: Body::Dir(BTreeMap::new()),
                fs: 0,
            }],
            mounts: Vec::new(),
            cwd: ROOT,
            filesystems: 1,
        };
        for node in nodes {
            let done = match *node {
                Node::Dir(p) | Node::UncachedDir(p) => r.create(p, Body::Dir(BTreeMap::new())),
                Node::File(p) | Node::Uncached(p) => r.create(p, Body::File),
                // Neither a delegation nor a revalidating filesystem (valid
                // in ref mode) changes an answer of a lookup.
                Node::Delegated(_) | Node::Revalidate(_) => Ok(()),
                Node::Symlink(p, body) => r.create(p, Body::Symlink(split(body))),
                // /proc/thread-self as the process's own tasks resolve it.
                Node::SelfLink(p) => r.create(p, Body::Symlink(vec![SUBMITTER_DIR])),
                Node::Mount(p) => r.mount(p),
                // A cached negative dentry changes no answer.
                Node::Negative(_) => Ok(()),
                Node::Cwd(p) => r
                    .walk(ROOT, &split(p), true)
                    .map(|d| r.cwd = d)
                    .map_err(|_| Refusal::Fails("ENOENT")),
            };
            done.unwrap_or_else(|e| panic!("set-up node {node:?} refused: {e:?}"));
        }
        r
    }

    fn obj(&self, id: u64) -> &Object {
        &self.objects[id as usize - 1]
    }

    /// Whether object `id` is a directory.
    pub fn is_dir(&self, id: u64) -> bool {
        self.entries(id).is_some()
    }

    fn entries(&self, id: u64) -> Option<&BTreeMap<&'static str, u64>> {
        match &self.obj(id).body {
            Body::Dir(e) => Some(e),
            _ => None,
        }
    }

    fn entries_mut(&mut self, id: u64) -> &mut BTreeMap<&'static str, u64> {
        match &mut self.objects[id as usize - 1].body {
            Body::Dir(e) => e,
            _ => unreachable!("checked to be a directory"),
        }
    }

    fn new_object(&mut self, body: Body, fs: usize) -> u64 {
        self.objects.push(Object { body, fs });
        self.objects.len() as u64
    }

    /// What a directory shows: the root of the filesystem mounted on it
    /// (the last mount on top), else itself.
    fn mounted(&self, mut dir: u64) -> u64 {
        while let Some(&(_, root)) = self.mounts.iter().rev().find(|(mp, _)| *mp == dir) {
            dir = root;
        }
        dir
    }

    /// ".." of a directory (path_resolution(7)): "/" for "/"; for the root
    /// of a mounted filesystem, ".." of the mountpoint; else the directory
    /// holding it (a directory has one name).
    fn dotdot(&self, dir: u64) -> u64 {
        if dir == ROOT {
            return ROOT;
        }
        if let Some(&(mp, _)) = self.mounts.iter().find(|(_, root)| *root == dir) {
            return self.dotdot(mp);
        }
        (1..=self.objects.len() as u64)
            .find(|&d| {
                self.entries(d)
                    .is_some_and(|e| e.values().any(|&i| i == dir))
            })
            .expect("a reachable directory has a parent")
    }

    /// Resolves `comps` from the directory `start` (path_resolution(7)):
    /// each component but a ".." is looked up in the current directory,
    /// which must be one (ENOTDIR) and hold it (ENOENT); a mountpoint shows
    /// its mount; a symlink is followed, its body resolved from the
    /// directory holding it, except a final one when `follow` is false.
    fn walk(&self, start: u64, comps: &[&'static str], follow: bool) -> Outcome {
        let mut links = 0;
        self.walk_counting(start, comps, follow, &mut links)
    }

    fn walk_counting(
        &self,
        start: u64,
        comps: &[&'static str],
        follow: bool,
        links: &mut u32,
    ) -> Outcome {
        let mut cur = start;
        for (i, &c) in comps.iter().enumerate() {
            let entries = self.entries(cur).ok_or(Errno::ENOTDIR)?;
            if c == ".." {
                cur = self.dotdot(cur);
                continue;
            }
            let found = self.mounted(*entries.get(c).ok_or(Errno::ENOENT)?);
            let last = i + 1 == comps.len();
            match &self.obj(found).body {
                Body::Symlink(body) if !last || follow => {
                    *links += 1;
                    if *links > MAXSYMLINKS {
                        return Err(Errno::ELOOP);
                    }
                    cur = self.walk_counting(cur, body, true, links)?;
                }
                _ => cur = found,
            }
        }
        Ok(cur)
    }

    /// What a lookup of `path` (absolute, or from the cwd) returns,
    /// following a final symlink (stat(2), open(2) without O_NOFOLLOW).
    pub fn lookup(&self, path: &'static str) -> Outcome {
        let start = if path.starts_with('/') {
            ROOT
        } else {
            self.cwd
        };
        self.walk(start, &split(path), true)
    }

    /// The directory and name a namespace change of `path` works on: its
    /// parent, walked from "/" across mounts but through no symlink and no
    /// ".." (as the model's adversaries find it), must exist (ENOENT) and
    /// be a directory (ENOTDIR).
    fn parent_and_name(&self, path: &'static str) -> Result<(u64, &'static str), Refusal> {
        let comps = split(path);
        let (&name, dirs) = comps.split_last().ok_or(Refusal::Fails("EBUSY"))?;
        let mut cur = ROOT;
        for &c in dirs {
            if c == ".." {
                return Err(Refusal::Outside("a change through \"..\""));
            }
            let entries = self.entries(cur).ok_or(Refusal::Fails("ENOTDIR"))?;
            let found = self.mounted(*entries.get(c).ok_or(Refusal::Fails("ENOENT"))?);
            if let Body::Symlink(_) = self.obj(found).body {
                return Err(Refusal::Outside("a change through a symlink"));
            }
            cur = found;
        }
        self.entries(cur).ok_or(Refusal::Fails("ENOTDIR"))?;
        Ok((cur, name))
    }

    fn child(&self, dir: u64, name: &str) -> Option<u64> {
        self.entries(dir).and_then(|e| e.get(name).copied())
    }

    fn is_mountpoint(&self, id: u64) -> bool {
        self.mounts.iter().any(|&(mp, _)| mp == id)
    }

    /// mkdir(2)/creat(2) with O_EXCL: EEXIST if the name is taken.
    fn create(&mut self, path: &'static str, body: Body) -> Result<(), Refusal> {
        let (dir, name) = self.parent_and_name(path)?;
        if self.child(dir, name).is_some() {
            return Err(Refusal::Fails("EEXIST"));
        }
        let id = self.new_object(body, self.obj(dir).fs);
        self.entries_mut(dir).insert(name, id);
        Ok(())
    }

    /// A new, empty filesystem mounted on the directory `path`.
    fn mount(&mut self, path: &'static str) -> Result<(), Refusal> {
        let (dir, name) = self.parent_and_name(path)?;
        let mp = self.child(dir, name).ok_or(Refusal::Fails("ENOENT"))?;
        let mp = self.mounted(mp);
        self.entries(mp).ok_or(Refusal::Fails("ENOTDIR"))?;
        let root = self.new_object(Body::Dir(BTreeMap::new()), self.filesystems);
        self.filesystems += 1;
        self.mounts.push((mp, root));
        Ok(())
    }

    /// rename(2) of `from` to `to`: ENOENT without a source; EBUSY for a
    /// mountpoint; EXDEV across filesystems; EINVAL when moving a directory
    /// under itself; EEXIST for a taken target (RENAME_NOREPLACE).
    fn rename(&mut self, from: &'static str, to: &'static str) -> Result<(), Refusal> {
        let (fd, fname) = self.parent_and_name(from)?;
        let src = self.child(fd, fname).ok_or(Refusal::Fails("ENOENT"))?;
        let (td, tname) = self.parent_and_name(to)?;
        if self.is_mountpoint(src) {
            return Err(Refusal::Fails("EBUSY"));
        }
        if self.obj(fd).fs != self.obj(td).fs {
            return Err(Refusal::Fails("EXDEV"));
        }
        let mut up = td;
        while up != ROOT {
            if up == src {
                return Err(Refusal::Fails("EINVAL"));
            }
            up = self.dotdot(up);
        }
        if self.child(td, tname).is_some() {
            return Err(Refusal::Fails("EEXIST"));
        }
        self.entries_mut(fd).remove(fname);
        self.entries_mut(td).insert(tname, src);
        Ok(())
    }

    /// unlink(2) / rmdir(2): ENOENT without an entry; EBUSY for a
    /// mountpoint; ENOTEMPTY for a directory with entries.
    fn unlink(&mut self, path: &'static str) -> Result<(), Refusal> {
        let (dir, name) = self.parent_and_name(path)?;
        let victim = self.child(dir, name).ok_or(Refusal::Fails("ENOENT"))?;
        if self.is_mountpoint(victim) {
            return Err(Refusal::Fails("EBUSY"));
        }
        if self.entries(victim).is_some_and(|e| !e.is_empty()) {
            return Err(Refusal::Fails("ENOTEMPTY"));
        }
        if victim == self.cwd {
            return Err(Refusal::Outside("removing the cwd"));
        }
        self.entries_mut(dir).remove(name);
        Ok(())
    }

    /// An eviction from the dcache: nothing changes in the tree. Only a
    /// file or symlink (a directory evicted while it has cached children
    /// would need the directory-alias rule of d_splice_alias, which the
    /// model's `->lookup` does not have).
    fn kill(&self, path: &'static str) -> Result<(), Refusal> {
        let (dir, name) = self.parent_and_name(path)?;
        let victim = self.child(dir, name).ok_or(Refusal::Fails("ENOENT"))?;
        match self.obj(victim).body {
            Body::Dir(_) => Err(Refusal::Outside("evicting a directory")),
            _ => Ok(()),
        }
    }

    /// Applies a namespace change if it is valid, else leaves the tree as
    /// it was and says why not.
    pub fn change(&mut self, op: Op) -> Result<(), Refusal> {
        match op {
            Op::Rename(from, to) => self.rename(from, to),
            Op::Unlink(p) => self.unlink(p),
            Op::Mkdir(p) => self.create(p, Body::Dir(BTreeMap::new())),
            Op::Create(p) => self.create(p, Body::File),
            Op::Kill(p) => self.kill(p),
            Op::Umount(_) => Err(Refusal::Outside("umount")),
            Op::RcuBarrier => Ok(()),
            Op::Rmdir(p) => {
                let (dir, name) = self.parent_and_name(p)?;
                let victim = self.child(dir, name).ok_or(Refusal::Fails("ENOENT"))?;
                match self.obj(victim).body {
                    Body::Dir(_) => self.unlink(p),
                    _ => Err(Refusal::Fails("ENOTDIR")),
                }
            }
            Op::Delegate(_) => Ok(()),
        }
    }

    /// open(2) of `path` with `flags` (O_RDWR, O_CREAT, O_EXCL; no
    /// O_NOFOLLOW, O_DIRECTORY or O_TRUNC): the inode opened and whether
    /// this call created it, or the errno. A created file is a new regular
    /// file, numbered as [`Reference::new`] and the changes number theirs.
    ///
    /// The rules, as open(2) and path_resolution(7) state them:
    /// - every component before the last is resolved as any lookup
    ///   resolves it (symlinks followed; ENOENT, ENOTDIR, ELOOP);
    /// - the last component is a name to create when O_CREAT is given, and
    ///   open(2) only creates regular files, so O_CREAT of a name followed
    ///   by "/" fails with EISDIR;
    /// - a missing name is created with O_CREAT (the second member of the
    ///   result is then true) and is ENOENT without it;
    /// - an existing name with O_CREAT and O_EXCL is EEXIST, whatever it
    ///   is: with O_EXCL a final symlink is not followed, even a dangling
    ///   one;
    /// - otherwise a final symlink is followed, its body resolved from the
    ///   directory holding the link, and the same rules apply to the last
    ///   component of the body: O_CREAT through a dangling link creates the
    ///   file it names (ELOOP past the link limit);
    /// - a directory cannot be opened for writing (O_WRONLY or O_RDWR) nor
    ///   with O_CREAT: EISDIR;
    /// - a trailing "/" requires a directory (path_resolution(7),
    ///   "Trailing slashes"): a file so named is ENOTDIR.
    ///
    /// ".." (or "/") as the last component names an existing directory.
    pub fn open(&mut self, path: &'static str, flags: u32) -> Result<(u64, bool), Errno> {
        let start = if path.starts_with('/') {
            ROOT
        } else {
            self.cwd
        };
        let comps = split(path);
        let trailing = path.len() > 1 && path.ends_with('/');
        let Some((&last, dirs)) = comps.split_last() else {
            return self.open_found(self.mounted(start), flags, false);
        };
        let mut links = 0;
        let dir = self.walk_counting(start, dirs, true, &mut links)?;
        self.entries(dir).ok_or(Errno::ENOTDIR)?;
        if last != ".." && trailing && flags & O_CREAT != 0 {
            return Err(Errno::EISDIR);
        }
        self.open_last(dir, last, flags, trailing, &mut links)
    }

    /// The last component `name` of an open, in the directory `dir` (the
    /// name's own, or a followed symlink's): see [`Reference::open`].
    fn open_last(
        &mut self,
        dir: u64,
        name: &'static str,
        flags: u32,
        trailing: bool,
        links: &mut u32,
    ) -> Result<(u64, bool), Errno> {
        if name == ".." {
            let up = self.dotdot(dir);
            return self.open_found(up, flags, trailing);
        }
        let Some(found) = self.child(dir, name).map(|id| self.mounted(id)) else {
            if flags & O_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
            let id = self.new_object(Body::File, self.obj(dir).fs);
            self.entries_mut(dir).insert(name, id);
            return Ok((id, true));
        };
        if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
            return Err(Errno::EEXIST);
        }
        let Body::Symlink(body) = &self.obj(found).body else {
            return self.open_found(found, flags, trailing);
        };
        *links += 1;
        if *links > MAXSYMLINKS {
            return Err(Errno::ELOOP);
        }
        let body = body.clone();
        let Some((&blast, bdirs)) = body.split_last() else {
            return self.open_found(dir, flags, trailing);
        };
        let bdir = self.walk_counting(dir, bdirs, true, links)?;
        self.entries(bdir).ok_or(Errno::ENOTDIR)?;
        self.open_last(bdir, blast, flags, trailing, links)
    }

    /// Opening the existing, non-symlink `id`: EEXIST with O_CREAT|O_EXCL,
    /// EISDIR for a directory opened for writing or with O_CREAT, ENOTDIR
    /// for a file named with a trailing "/".
    fn open_found(&self, id: u64, flags: u32, trailing: bool) -> Result<(u64, bool), Errno> {
        if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
            return Err(Errno::EEXIST);
        }
        match self.obj(id).body {
            Body::Dir(_) if flags & (O_CREAT | O_WRONLY | O_RDWR) != 0 => Err(Errno::EISDIR),
            Body::Dir(_) => Ok((id, false)),
            _ if trailing => Err(Errno::ENOTDIR),
            _ => Ok((id, false)),
        }
    }

    /// Runs `ops`: the ones it accepted (every lookup, the valid changes)
    /// and the outcome of each lookup among them (a `Kill` reports its
    /// re-lookup), as [`run_single`] reports them.
    pub fn run(&mut self, ops: &[SeqOp]) -> (Vec<SeqOp>, Vec<Outcome>) {
        let (mut accepted, mut outcomes) = (Vec::new(), Vec::new());
        for &op in ops {
            match op {
                SeqOp::Change(change) => {
                    if self.change(change).is_err() {
                        continue;
                    }
                    if let Op::Kill(p) = change {
                        outcomes.push(self.lookup(p));
                    }
                }
                SeqOp::Walk(Walker::Lookup(p) | Walker::RefWalk(p)) => {
                    outcomes.push(self.lookup(p));
                }
            }
            accepted.push(op);
        }
        (accepted, outcomes)
    }
}

/// One lookup on the model by `t`: the inode of the dentry it returned (its
/// references then put back), or the errno.
fn lookup(vfs: &Vfs, t: &Task, flavor: Flavor, walker: Walker) -> Outcome {
    let r = match walker {
        Walker::Lookup(p) => filename_lookup(vfs, t, flavor, &Filename::new(p)),
        Walker::RefWalk(p) => ref_walk_lookup(vfs, t, flavor, &Filename::new(p)),
    };
    r.map(|p| {
        let inode = vfs.dentry(p.dentry).d_inode.peek();
        path_put(vfs, t, p);
        inode
    })
}

/// Runs `ops` (all valid: see [`Reference::run`]) on the model of
/// `variant` built from `tree`, one at a time in the calling execution:
/// each lookup's outcome, in order. Afterwards pending RCU callbacks run
/// and every end-of-execution invariant of the model is checked; a broken
/// one is raised, so it is the execution's violation.
pub fn run_single(variant: &str, tree: &'static [Node], ops: &[SeqOp]) -> Vec<Outcome> {
    let flavor = super::VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let world = World {
        vfs: Vfs::build(flavor.vfs, tree),
    };
    let vfs = &world.vfs;
    let walker = Task::new("walker", Context::Task);
    let actor = Task::new("actor", Context::Task);
    let mut outcomes = Vec::new();
    for &op in ops {
        match op {
            SeqOp::Change(change) => {
                super::act(vfs, &actor, change);
                if let Op::Kill(p) = change {
                    outcomes.push(lookup(vfs, &actor, flavor, Walker::RefWalk(p)));
                }
            }
            SeqOp::Walk(w) => outcomes.push(lookup(vfs, &walker, flavor, w)),
        }
    }
    let main = Task::new("main", Context::Task);
    vfs.rcu.quiesce(&main);
    crate::raise_end_violations("main", super::INVARIANTS, &world);
    outcomes
}
