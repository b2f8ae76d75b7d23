//! Building a scenario's namespace before any thread runs: directories,
//! files, symlinks and mounts, with the references the kernel's own
//! structures hold on them (a child on its parent, a mount on its root and
//! mountpoint, the namespace on each mount, `fs_struct` on its root and
//! cwd) entered in the ledger, and the ghost namespace that mirrors it.
//!
//! The layout is computed in plain data first, then every object is created
//! with its final initial values (no engine operation, no trace step).

use crate::kernel::atomic::Atomic;
use crate::trace::{intern, Name, Show};

use super::dentry::{d_flags_for, DCACHE_MISS_TYPE, DCACHE_MOUNTED};
use super::namespace::SELF_IDENT;
use super::{
    name_id, Dentry, DentryRef, Inode, Kind, Mount, MountRef, Namespace, Obj, Path, Vfs, VfsBug,
    NAMES,
};

/// One entry of a scenario's initial namespace.
#[derive(Clone, Copy, Debug)]
pub enum Node {
    /// A directory at this absolute path.
    Dir(&'static str),
    /// A regular file.
    File(&'static str),
    /// A symlink whose body is the relative path given.
    Symlink(&'static str, &'static str),
    /// A new filesystem (an empty directory) mounted on this directory.
    Mount(&'static str),
    /// A negative dentry in the cache (a name looked up and not found).
    Negative(&'static str),
    /// The task's cwd (an existing directory; `/` if no node says).
    Cwd(&'static str),
    /// A regular file the filesystem holds but the dcache does not (a
    /// lookup must ask `->lookup`).
    Uncached(&'static str),
    /// A client holds a delegation on this existing directory.
    Delegated(&'static str),
    /// A directory the filesystem holds but the dcache does not; its
    /// children (nodes under it) are on disk only too.
    UncachedDir(&'static str),
    /// The existing dentry at this path has a `->d_revalidate` that cannot
    /// run in RCU mode (DCACHE_OP_REVALIDATE, as a network filesystem's
    /// dentries have): it asks for ref mode (-ECHILD under LOOKUP_RCU) and
    /// finds the dentry valid there. Dentries `->lookup` makes later have
    /// none.
    Revalidate(&'static str),
    /// A magic link like `/proc/thread-self`: its body is the name of the
    /// resolving task's identity, a sibling directory (`/proc/1`). The
    /// ghost namespace holds the body the modelled process's tasks see.
    SelfLink(&'static str),
}

/// Splits `/a/b` into name indexes (`..` becomes [`super::namespace::DOTDOT`]).
pub fn components(path: &str) -> Vec<u64> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(|c| {
            if c == ".." {
                super::namespace::DOTDOT
            } else {
                name_id(c)
            }
        })
        .collect()
}

struct DentrySpec {
    label: &'static str,
    name: u64,
    parent: DentryRef,
    inode: u64,
    flags: u64,
    count: i32,
    revalidate: bool,
}

struct MountSpec {
    label: &'static str,
    root: DentryRef,
    mountpoint: DentryRef,
    parent: MountRef,
    count: u64,
}

/// The layout being computed.
#[derive(Default)]
struct Layout {
    inodes: Vec<(&'static str, Kind, Vec<u64>)>,
    delegated: Vec<u64>,
    dentries: Vec<DentrySpec>,
    mounts: Vec<MountSpec>,
    refs: Vec<(Name, Obj)>,
    /// Directories on disk only, by path.
    uncached: Vec<(Vec<u64>, u64)>,
    ns: Namespace,
    cwd: Option<Path>,
}

impl Layout {
    fn inode(&mut self, label: &'static str, kind: Kind, body: Vec<u64>) -> u64 {
        self.inodes.push((label, kind, body));
        self.inodes.len() as u64
    }

    fn dentry(
        &mut self,
        label: &'static str,
        name: u64,
        parent: DentryRef,
        inode: u64,
    ) -> DentryRef {
        let me = self.dentries.len() as u64 + 1;
        let kind = self.inodes[inode as usize - 1].1;
        self.dentries.push(DentrySpec {
            label,
            name,
            parent: if parent == 0 { me } else { parent },
            inode,
            flags: d_flags_for(kind),
            count: 0,
            revalidate: false,
        });
        if parent != 0 {
            self.hold_dentry(intern("d_parent"), parent);
        }
        me
    }

    /// A hashed negative dentry under `parent`.
    fn negative(&mut self, label: &'static str, name: u64, parent: DentryRef) {
        self.dentries.push(DentrySpec {
            label,
            name,
            parent,
            inode: 0,
            flags: DCACHE_MISS_TYPE,
            count: 0,
            revalidate: false,
        });
        self.hold_dentry(intern("d_parent"), parent);
    }

    fn mount(
        &mut self,
        label: &'static str,
        root: DentryRef,
        mp: DentryRef,
        parent: MountRef,
    ) -> MountRef {
        self.mounts.push(MountSpec {
            label,
            root,
            mountpoint: mp,
            parent,
            count: 0,
        });
        let m = self.mounts.len() as u64;
        self.hold_mount(intern("namespace"), m);
        self.hold_dentry(intern("mount"), root);
        m
    }

    fn hold_dentry(&mut self, holder: Name, d: DentryRef) {
        self.dentries[d as usize - 1].count += 1;
        self.refs.push((holder, Obj::Dentry(d)));
    }

    fn hold_mount(&mut self, holder: Name, m: MountRef) {
        self.mounts[m as usize - 1].count += 1;
        self.refs.push((holder, Obj::Mount(m)));
    }

    fn child(&self, parent: DentryRef, name: u64) -> DentryRef {
        self.dentries
            .iter()
            .position(|d| d.parent == parent && d.name == name && d.parent != 0)
            .map(|i| i as u64 + 1)
            .filter(|&d| d != parent)
            .unwrap_or_else(|| panic!("set-up: no {} under dentry#{parent}", super::name_of(name)))
    }

    fn mounted_on(&self, p: Path) -> Option<MountRef> {
        self.mounts
            .iter()
            .position(|m| m.parent == p.mnt && m.mountpoint == p.dentry)
            .map(|i| i as u64 + 1)
    }

    /// The path `comps` leads to from `root`, across mounts.
    fn find(&self, root: Path, comps: &[u64]) -> Path {
        let mut p = root;
        for &c in comps {
            p.dentry = self.child(p.dentry, c);
            if let Some(m) = self.mounted_on(p) {
                p = Path {
                    mnt: m,
                    dentry: self.mounts[m as usize - 1].root,
                };
            }
        }
        p
    }

    fn add(&mut self, root: Path, node: Node) {
        match node {
            Node::Cwd(p) => {
                self.cwd = Some(self.find(root, &components(p)));
                return;
            }
            Node::Delegated(p) => {
                let d = self.find(root, &components(p)).dentry;
                let inode = self.dentries[d as usize - 1].inode;
                self.delegated.push(inode);
                return;
            }
            Node::Revalidate(p) => {
                let d = self.find(root, &components(p)).dentry;
                self.dentries[d as usize - 1].revalidate = true;
                return;
            }
            _ => {}
        }
        let (path, kind, body) = match node {
            Node::Cwd(_) | Node::Delegated(_) | Node::Revalidate(_) => {
                unreachable!("handled above")
            }
            Node::Dir(p) | Node::Mount(p) | Node::Negative(p) | Node::UncachedDir(p) => {
                (p, Kind::Dir, Vec::new())
            }
            Node::File(p) | Node::Uncached(p) => (p, Kind::Reg, Vec::new()),
            Node::Symlink(p, body) => (p, Kind::Symlink, components(body)),
            Node::SelfLink(p) => (p, Kind::Symlink, vec![SELF_IDENT]),
        };
        let comps = components(path);
        let (parents, name) = comps.split_at(comps.len() - 1);
        let label = intern(path.rsplit('/').next().unwrap_or(path));
        if let Some(dir_inode) = self.uncached_dir(parents) {
            return self.on_disk_only(comps.clone(), dir_inode, label, kind, body);
        }
        let dir = self.find(root, parents);
        let dir_inode = self.dentries[dir.dentry as usize - 1].inode;
        if let Node::Mount(_) = node {
            let mp = self.child(dir.dentry, name[0]);
            let label = intern(&format!("{path}@"));
            let root_inode = self.inode(label, Kind::Dir, Vec::new());
            let mroot = self.dentry(label, 0, 0, root_inode);
            self.mount(intern(&format!("mnt{path}")), mroot, mp, dir.mnt);
            self.dentries[mp as usize - 1].flags |= DCACHE_MOUNTED;
            self.hold_dentry(intern("mount"), mp);
            self.hold_mount(intern("mount"), dir.mnt);
            let mp_inode = self.dentries[mp as usize - 1].inode;
            self.ns.mounts.push((mp_inode, root_inode));
            self.ns.dirs.push(root_inode);
            return;
        }
        if let Node::Negative(_) = node {
            return self.negative(label, name[0], dir.dentry);
        }
        if let Node::UncachedDir(_) = node {
            return self.on_disk_only(comps.clone(), dir_inode, label, kind, body);
        }
        let inode = self.inode(label, kind, body.clone());
        if !matches!(node, Node::Uncached(_)) {
            self.dentry(label, name[0], dir.dentry, inode);
        }
        self.enter_ns(dir_inode, name[0], inode, kind, body);
    }

    /// The inode of the directory `comps` if the dcache does not hold it.
    fn uncached_dir(&self, comps: &[u64]) -> Option<u64> {
        self.uncached
            .iter()
            .find(|(c, _)| c.as_slice() == comps)
            .map(|&(_, i)| i)
    }

    /// An inode the filesystem holds under `dir_inode` with no dentry (a
    /// lookup must ask `->lookup`).
    fn on_disk_only(
        &mut self,
        comps: Vec<u64>,
        dir_inode: u64,
        label: &'static str,
        kind: Kind,
        body: Vec<u64>,
    ) {
        let name = comps[comps.len() - 1];
        let inode = self.inode(label, kind, body.clone());
        if kind == Kind::Dir {
            self.uncached.push((comps, inode));
        }
        self.enter_ns(dir_inode, name, inode, kind, body);
    }

    fn enter_ns(&mut self, dir_inode: u64, name: u64, inode: u64, kind: Kind, body: Vec<u64>) {
        self.ns.add(dir_inode, name, inode);
        match kind {
            Kind::Dir => self.ns.dirs.push(inode),
            Kind::Symlink => self.ns.links.push((inode, seen_by_submitter(body))),
            Kind::Reg => {}
        }
    }
}

/// A link body as the modelled process's tasks resolve it.
fn seen_by_submitter(body: Vec<u64>) -> Vec<u64> {
    body.into_iter()
        .map(|c| {
            if c == SELF_IDENT {
                super::ident_name(crate::kernel::task::SUBMITTER_IDENT)
            } else {
                c
            }
        })
        .collect()
}

pub(super) fn show_chain(mask: u64) -> String {
    let members: Vec<String> = (1..64)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| format!("dentry#{b}"))
        .collect();
    format!("{{{}}}", members.join(" "))
}

impl Vfs {
    /// A VFS holding `nodes` (parents before children) under a root mount
    /// at `/`, with the task's root at `/` and its cwd where a
    /// [`Node::Cwd`] says (else `/`).
    pub fn build(bug: Option<VfsBug>, nodes: &[Node]) -> Vfs {
        let mut l = Layout::default();
        let root_inode = l.inode("/", Kind::Dir, Vec::new());
        let root = l.dentry("/", 0, 0, root_inode);
        let m = l.mount("mnt_root", root, 0, 0);
        let top = Path {
            mnt: m,
            dentry: root,
        };
        l.ns.root = root_inode;
        l.ns.dirs.push(root_inode);
        for node in nodes {
            l.add(top, *node);
        }
        let pwd = l.cwd.unwrap_or(top);
        for p in [top, pwd] {
            l.hold_mount(intern("fs"), p.mnt);
            l.hold_dentry(intern("fs"), p.dentry);
        }
        let mut vfs = Vfs::new(bug);
        for (i, (label, kind, body)) in l.inodes.into_iter().enumerate() {
            let mut inode = Inode::new(label, kind, body);
            if l.delegated.contains(&(i as u64 + 1)) {
                inode.i_deleg = Atomic::new(format!("{label}.i_deleg"), 1);
            }
            vfs.inodes.prealloc(inode);
        }
        let mut chains = vec![0u64; NAMES.len()];
        for (i, d) in l.dentries.iter().enumerate() {
            let me = i as u64 + 1;
            let hashed = d.parent != me;
            if hashed {
                chains[d.name as usize] |= 1 << me;
            }
            let mut de = Dentry::with_state(
                me,
                d.label,
                d.name,
                d.parent,
                d.count,
                (d.inode, d.flags, hashed),
            );
            de.d_op_revalidate = d.revalidate;
            vfs.dentries.prealloc(de);
        }
        vfs.buckets = chains
            .iter()
            .zip(NAMES)
            .map(|(&c, n)| {
                Atomic::with_format(format!("dcache_hash[{n}]"), c, Show::With(show_chain))
            })
            .collect();
        for s in l.mounts {
            vfs.mounts
                .prealloc(Mount::new(s.label, s.count, s.root, s.mountpoint, s.parent));
        }
        for (holder, obj) in l.refs {
            vfs.refs.take(holder, obj);
        }
        vfs.fs.root = top;
        vfs.fs.pwd = pwd;
        vfs.ns_update(|ns| *ns = l.ns);
        vfs
    }
}
