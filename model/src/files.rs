//! The interface between the open path's callers and a process's file
//! table: what io_uring's openat ([`crate::io_uring`]) and any other caller
//! of `do_file_open` (the composed open(2) model) need from the fd table
//! model ([`crate::fdtable`]), so that one execution holds both models'
//! state and each keeps its own invariants. The callers never see the fd
//! table's types; the fd table never sees the open path's.

use crate::fdtable::{self, Fs};
use crate::kernel::errptr::Errno;
use crate::kernel::rcu::ObjRef;
use crate::kernel::task::Task;
use crate::namei::open::O_CLOEXEC;

/// A process's file table as `do_sys_openat2` and `io_openat2` use it
/// (fs/file.c, v7.1-rc1 copy ef3da345).
pub trait FileTable: Sync {
    /// fs/file.c:__get_unused_fd_flags(flags, nofile): reserve the lowest
    /// free fd below `nofile` (O_CLOEXEC in `flags` sets close_on_exec).
    fn get_unused_fd(&self, t: &Task, flags: u32, nofile: u32) -> Result<u32, Errno>;
    /// fs/file.c:put_unused_fd: give back a reserved fd never installed.
    fn put_unused_fd(&self, t: &Task, fd: u32);
    /// fs/file_table.c:alloc_empty_file: the `struct file` an open fills.
    fn alloc_file(&self, t: &Task) -> Result<ObjRef, Errno>;
    /// fs/file.c:fd_install: publish `file` in the reserved slot `fd`.
    fn fd_install(&self, t: &Task, fd: u32, file: ObjRef);
    /// close(2) of `fd` (the file's last reference goes).
    fn close_fd(&self, t: &Task, fd: u32) -> Result<(), Errno>;
    /// `rlimit(RLIMIT_NOFILE)` as the task reads it.
    fn rlimit_nofile(&self, t: &Task) -> u32;
}

fn errno(e: fdtable::Errno) -> Errno {
    match e {
        fdtable::Errno::Ebadf => Errno::EBADF,
        fdtable::Errno::Emfile => Errno::EMFILE,
        fdtable::Errno::Ebusy => Errno::EBUSY,
        fdtable::Errno::Einval => Errno::EINVAL,
        fdtable::Errno::Enomem => Errno::ENOMEM,
    }
}

impl FileTable for Fs {
    fn get_unused_fd(&self, t: &Task, flags: u32, nofile: u32) -> Result<u32, Errno> {
        let _f = t.enter("__get_unused_fd_flags");
        fdtable::alloc_fd(self, t, 0, nofile, flags & O_CLOEXEC != 0).map_err(errno)
    }

    fn put_unused_fd(&self, t: &Task, fd: u32) {
        fdtable::put_unused_fd(self, t, fd);
    }

    fn alloc_file(&self, t: &Task) -> Result<ObjRef, Errno> {
        fdtable::alloc_empty_file(self, t, 0, None).map_err(errno)
    }

    fn fd_install(&self, t: &Task, fd: u32, file: ObjRef) {
        fdtable::fd_install(self, t, fd, file);
    }

    fn close_fd(&self, t: &Task, fd: u32) -> Result<(), Errno> {
        fdtable::close_fd(self, t, fd).map_err(errno)
    }

    fn rlimit_nofile(&self, t: &Task) -> u32 {
        self.rlimit_nofile.read_once(t) as u32
    }
}
