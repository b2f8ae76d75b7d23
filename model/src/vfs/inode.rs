//! `struct inode` as the path walk needs it: its type, `i_rwsem`, and a
//! symlink's body (include/linux/fs.h, fs/namei.c `inode->i_link`, v7.3).
//! Inodes live for the whole execution (a model limit: no `iput` frees one).

use crate::kernel::sleeping::RwSemaphore;

/// The file type, as `d_flags_for_inode` turns it into dentry type bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    Reg,
    Symlink,
}

/// An inode.
pub struct Inode {
    pub label: &'static str,
    pub kind: Kind,
    /// `inode->i_rwsem`: exclusive for create/unlink/rename in this
    /// directory, shared for `lookup_slow`.
    pub i_rwsem: RwSemaphore,
    /// A symlink's body, as component names (`inode->i_link`, inline in the
    /// inode so an RCU walk can follow it without blocking).
    pub i_link: Vec<u64>,
}

impl Inode {
    pub fn new(label: &'static str, kind: Kind, i_link: Vec<u64>) -> Inode {
        Inode {
            label,
            kind,
            i_rwsem: RwSemaphore::new(format!("{label}.i_rwsem")),
            i_link,
        }
    }
}
