//! `struct inode` as the path walk needs it: its type, `i_rwsem`, a
//! symlink's body (include/linux/fs.h, fs/namei.c `inode->i_link`, v7.3),
//! S_DEAD in `i_flags` (IS_DEADDIR after rmdir), `i_dir_seq` (fs/dcache.c
//! start_dir_add/end_dir_add, vfs-7.3-rc5.fixes copy) and a directory
//! delegation (fs/locks.c's lease on the directory, reduced to a flag).
//! Inodes live for the whole execution (a model limit: no `iput` frees one).

use crate::kernel::atomic::Atomic;
use crate::kernel::sleeping::RwSemaphore;
use crate::trace::Show;

/// S_DEAD: the directory was removed (`vfs_rmdir` sets it under the
/// directory's own `i_rwsem`; `IS_DEADDIR` tests it).
pub const S_DEAD: u64 = 1;

fn show_i_flags(f: u64) -> String {
    if f & S_DEAD != 0 { "S_DEAD" } else { "0" }.to_string()
}

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
    /// `i_flags` (only S_DEAD is modelled).
    pub i_flags: Atomic,
    /// `i_dir_seq`: odd while `__d_add` moves an in-lookup dentry of this
    /// directory into the hash; `d_alloc_parallel` retries when it moved.
    pub i_dir_seq: Atomic,
    /// Non-zero while a client holds a delegation on this directory
    /// (`try_break_deleg` must break it before a create).
    pub i_deleg: Atomic,
}

impl Inode {
    pub fn new(label: &'static str, kind: Kind, i_link: Vec<u64>) -> Inode {
        Inode {
            label,
            kind,
            i_rwsem: RwSemaphore::new(format!("{label}.i_rwsem")),
            i_link,
            i_flags: Atomic::with_format(format!("{label}.i_flags"), 0, Show::With(show_i_flags)),
            i_dir_seq: Atomic::new(format!("{label}.i_dir_seq"), 0),
            i_deleg: Atomic::new(format!("{label}.i_deleg"), 0),
        }
    }
}
