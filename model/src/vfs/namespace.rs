//! The ghost namespace: what every name resolves to, kept by the
//! adversaries' operations at their linearization points (the instant RCU
//! walkers can no longer validate an older snapshot: the start of the write
//! section). Each change is a new version; a lookup records the versions
//! current while it ran.
//!
//! A walk's result is judged by [`outcomes`]: what a component-by-component
//! walk could return if each component were resolved atomically at some
//! version, versions never going back. That is what ref-walk guarantees
//! (each step under references, `d_lookup` retried on `rename_lock`, ".."
//! the parent at the time it is taken — a rename of an ancestor after the
//! walk passed it is not a contradiction); an RCU walk gives more (one
//! instant for its whole view), which the model checks where it hands over
//! (`snapshot_valid`).

use crate::kernel::errptr::Errno;

use super::InodeRef;

/// A path component of a walk: a name (index into `vfs::NAMES`) or "..".
pub const DOTDOT: u64 = u64::MAX;

/// In a magic link's body: the resolving task's identity (procfs's
/// `/proc/thread-self` get_link computes its body from `current`).
pub const SELF_IDENT: u64 = u64::MAX - 1;

/// Symlinks followed before -ELOOP in the reference (MAXSYMLINKS is 40; the
/// model's paths are short).
const MAX_LINKS: u32 = 8;

/// The namespace as a sequential program sees it.
#[derive(Clone, Debug, Default)]
pub struct Namespace {
    pub root: InodeRef,
    /// (directory inode, name) → inode.
    pub entries: Vec<(InodeRef, u64, InodeRef)>,
    /// Mountpoint directory inode → root inode of the mount on it.
    pub mounts: Vec<(InodeRef, InodeRef)>,
    /// Symlink inode → its body.
    pub links: Vec<(InodeRef, Vec<u64>)>,
    /// Directory inodes.
    pub dirs: Vec<InodeRef>,
}

impl Namespace {
    pub fn add(&mut self, dir: InodeRef, name: u64, inode: InodeRef) {
        self.entries.push((dir, name, inode));
    }

    pub fn remove(&mut self, dir: InodeRef, name: u64) {
        self.entries.retain(|&(d, n, _)| (d, n) != (dir, name));
    }

    pub fn lookup(&self, dir: InodeRef, name: u64) -> Option<InodeRef> {
        self.entries
            .iter()
            .find(|&&(d, n, _)| (d, n) == (dir, name))
            .map(|e| e.2)
    }

    /// The inode a mountpoint shows (following mounts stacked on it).
    fn mounted(&self, mut inode: InodeRef) -> InodeRef {
        while let Some(&(_, root)) = self.mounts.iter().find(|(mp, _)| *mp == inode) {
            inode = root;
        }
        inode
    }

    /// The directory `dir`'s parent, across a mount root to the mountpoint's.
    fn parent(&self, dir: InodeRef) -> InodeRef {
        if dir == self.root {
            return dir;
        }
        let dir = match self.mounts.iter().find(|(_, root)| *root == dir) {
            Some(&(mp, _)) => mp,
            None => dir,
        };
        self.entries
            .iter()
            .find(|e| e.2 == dir)
            .map_or(self.root, |e| e.0)
    }

    fn is_dir(&self, inode: InodeRef) -> bool {
        self.dirs.contains(&inode)
    }
}

/// Every result a component-by-component walk of `path` from `start` may
/// return when each component is resolved in one of `history`'s versions,
/// in order, never going back to an older one.
pub fn outcomes(
    history: &[Namespace],
    start: InodeRef,
    path: &[u64],
) -> Vec<Result<InodeRef, Errno>> {
    let mut errs = Vec::new();
    let states = steps(history, vec![(start, 0)], path, 0, &mut errs);
    let mut out: Vec<Result<InodeRef, Errno>> = states.into_iter().map(|(i, _)| Ok(i)).collect();
    out.extend(errs.into_iter().map(Err));
    out.sort();
    out.dedup();
    out
}

/// Walks `path` from each (inode, version) state; errors any step can meet
/// go to `errs`.
fn steps(
    h: &[Namespace],
    mut states: Vec<(InodeRef, usize)>,
    path: &[u64],
    links: u32,
    errs: &mut Vec<Errno>,
) -> Vec<(InodeRef, usize)> {
    for &c in path {
        let mut next = Vec::new();
        for &(cur, v) in &states {
            for (w, ns) in h.iter().enumerate().skip(v) {
                if !ns.is_dir(cur) {
                    errs.push(Errno::ENOTDIR);
                    continue;
                }
                if c == DOTDOT {
                    next.push((ns.parent(cur), w));
                    continue;
                }
                let Some(found) = ns.lookup(cur, c) else {
                    errs.push(Errno::ENOENT);
                    continue;
                };
                let found = ns.mounted(found);
                match ns.links.iter().find(|(l, _)| *l == found) {
                    Some(_) if links >= MAX_LINKS => errs.push(Errno::ELOOP),
                    Some((_, body)) => next.extend(steps(h, vec![(cur, w)], body, links + 1, errs)),
                    None => next.push((found, w)),
                }
            }
        }
        next.sort_unstable();
        next.dedup();
        states = next;
    }
    states
}
