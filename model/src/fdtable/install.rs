//! Filling and emptying slots: fd_install, file_close_fd_locked, close_fd,
//! do_dup2/ksys_dup3, f_dupfd, and dup_fd at fork (fs/file.c,
//! fs/fcntl.c:f_dupfd, v6.12).

use crate::kernel::atomic::smp_rmb;
use crate::kernel::rcu::ObjRef;
use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{Effect, Val};

use super::alloc::{__put_unused_fd, alloc_fd, set_open_bits};
use super::fget::{fget, fget_done, fput};
use super::{expand, Bug, ChildTable, Claim, Errno, FdTable, Fs};

/// Ghost: `file` is now installed at `fd` by `by` (replacing a reservation
/// of the same thread, or `replace` every claim when a dup2 overwrites).
fn note_installed(fs: &Fs, t: &Task, fd: u32, file: ObjRef, replace: bool) {
    let id = fs.file_id(file);
    let mut gh = fs.ghost();
    let claims = gh.claims.entry(fd).or_default();
    let installed = Claim::Installed {
        by: t.name(),
        file: id,
    };
    let mine = claims
        .iter()
        .position(|c| *c == Claim::Reserved { by: t.name() });
    match (replace, mine) {
        (true, _) => *claims = vec![installed],
        (false, Some(i)) => claims[i] = installed,
        (false, None) => claims.push(installed),
    }
    gh.occupants.entry(fd).or_default().push(id);
}

/// fs/file.c:fd_install: publish `file` in the reserved slot `fd` without
/// file_lock, inside rcu_read_lock_sched; if a resize is in progress take
/// file_lock instead so the write cannot land in a table being copied.
pub fn fd_install(fs: &Fs, t: &Task, fd: u32, file: ObjRef) {
    let _f = t.enter("fd_install");
    fs.rcu.rcu_read_lock_sched(t);
    if fs.files.resize_in_progress.read_once(t) != 0 {
        fs.rcu.rcu_read_unlock_sched(t);
        t.tracepoint("install_locked");
        let g = fs.files.file_lock.spin_lock(t);
        let fdt = fs.tables.get(t, fs.files_fdtable_locked());
        fdt.fd[fd as usize].rcu_assign_pointer(t, file);
        note_installed(fs, t, fd, file, false);
        g.unlock();
        return;
    }
    // Pairs with smp_wmb() in expand_fdtable: resize_in_progress seen clear
    // means the table read below is the newest one.
    smp_rmb(t);
    let fdt_ref = fs.files.fdt.rcu_dereference(t);
    let fdt = fs.tables.get(t, fdt_ref);
    fdt.fd[fd as usize].rcu_assign_pointer(t, file);
    note_installed(fs, t, fd, file, false);
    fs.rcu.rcu_read_unlock_sched(t);
}

/// fs/file.c:file_close_fd_locked: take the file out of slot `fd` and give
/// the fd back (file_lock held). Returns the file, or None for a free or
/// merely reserved fd.
fn file_close_fd_locked(fs: &Fs, t: &Task, g: &SpinGuard<'_>, fd: u32) -> Option<ObjRef> {
    let _f = t.enter("file_close_fd_locked");
    let fdt = fs.tables.get(t, fs.files_fdtable_locked());
    if fd >= fdt.max_fds {
        return None;
    }
    // Marked load: fd_install writes slots without file_lock (f381640e1bd4).
    let file = fdt.fd[fd as usize].rcu_dereference(t);
    if file == 0 {
        return None;
    }
    fdt.fd[fd as usize].rcu_assign_pointer(t, 0);
    __put_unused_fd(fs, t, g, &fdt, fd);
    Some(file)
}

/// fs/open.c:filp_close → fput: drop the reference the slot `fd` owned.
fn filp_close(fs: &Fs, t: &Task, fd: u32, file: ObjRef) {
    let _f = t.enter("filp_close");
    let id = fs.file_id(file);
    fput(fs, t, file);
    // One installation ends (the same file may be installed at `fd` again
    // by a dup2 that ran before this fput).
    if let Some(o) = fs.ghost().occupants.get_mut(&fd) {
        if let Some(i) = o.iter().position(|f| *f == id) {
            o.remove(i);
        }
    }
}

/// fs/file.c:close_fd.
pub fn close_fd(fs: &Fs, t: &Task, fd: u32) -> Result<(), Errno> {
    let _f = t.enter("close_fd");
    let g = fs.files.file_lock.spin_lock(t);
    let file = file_close_fd_locked(fs, t, &g, fd);
    g.unlock();
    let file = file.ok_or(Errno::Ebadf)?;
    filp_close(fs, t, fd, file);
    Ok(())
}

/// fs/file.c:do_dup2 (file_lock held, dropped here): install `file` at
/// `fd`, closing the previous occupant; a reserved slot (open bit set,
/// NULL pointer: an open in flight) gives -EBUSY.
fn do_dup2(
    fs: &Fs,
    t: &Task,
    g: SpinGuard<'_>,
    fdt: &FdTable,
    file: ObjRef,
    fd: u32,
) -> Result<u32, Errno> {
    let _f = t.enter("do_dup2");
    let tofree = fdt.fd[fd as usize].rcu_dereference(t);
    let reserved = tofree == 0 && fdt.bits.get(&g, |b| b.open_fds.test_bit(t, fd));
    if reserved && !fs.flavor.has(Bug::Dup2IgnoresReserved) {
        t.tracepoint("dup2_ebusy");
        t.note(
            "fd {} reserved by an open in flight: -EBUSY",
            &[Val::dec(fd.into())],
        );
        g.unlock();
        return Err(Errno::Ebusy);
    }
    fs.filp.get(t, file).f_ref.atomic_add(t, 1);
    fdt.fd[fd as usize].rcu_assign_pointer(t, file);
    let _s = t.enter("__set_open_fd");
    fdt.bits.apply(&g, |b| {
        note_installed(fs, t, fd, file, tofree != 0);
        Effect::Update {
            scope: None,
            parts: set_open_bits(b, fd, false),
        }
    });
    drop(_s);
    g.unlock();
    if tofree != 0 {
        filp_close(fs, t, fd, tofree);
    }
    Ok(fd)
}

/// fs/file.c:ksys_dup3 (dup2 when the fds differ).
pub fn ksys_dup3(fs: &Fs, t: &Task, oldfd: u32, newfd: u32) -> Result<u32, Errno> {
    let _f = t.enter("ksys_dup3");
    if oldfd == newfd {
        return Err(Errno::Einval);
    }
    if newfd >= fs.rlimit_nofile.read_once(t) as u32 {
        return Err(Errno::Ebadf);
    }
    let mut g = fs.files.file_lock.spin_lock(t);
    let (g2, r) = expand::expand_files(fs, t, g, newfd);
    g = g2;
    if let Err(e) = r {
        g.unlock();
        return Err(e);
    }
    let fdt = fs.tables.get(t, fs.files_fdtable_locked());
    let file = if oldfd < fdt.max_fds {
        fdt.fd[oldfd as usize].rcu_dereference(t)
    } else {
        0
    };
    if file == 0 {
        g.unlock();
        return Err(Errno::Ebadf);
    }
    do_dup2(fs, t, g, &fdt, file, newfd)
}

/// fs/fcntl.c:f_dupfd (fcntl F_DUPFD): a new fd ≥ `min` for the file at
/// `fd`. The reference fget took is handed to the new slot (the kernel
/// takes one more with get_file and drops fdget's: same count).
pub fn f_dupfd(fs: &Fs, t: &Task, fd: u32, min: u32) -> Result<u32, Errno> {
    let _f = t.enter("f_dupfd");
    let file = fget(fs, t, fd).ok_or(Errno::Ebadf)?;
    match alloc_fd(fs, t, min, false) {
        Ok(newfd) => {
            fget_done(fs, t);
            fd_install(fs, t, newfd, file.obj);
            Ok(newfd)
        }
        Err(e) => {
            fput(fs, t, file.obj);
            fget_done(fs, t);
            Err(e)
        }
    }
}

/// fs/file.c:dup_fd (fork without CLONE_FILES): copy the table under the
/// parent's file_lock, taking a reference per file; an fd that is open but
/// NULL (a sibling's open in flight) is cleared in the child. The child's
/// table is private, so the ghost log keeps a snapshot of it.
pub fn dup_fd(fs: &Fs, t: &Task) -> ChildTable {
    let _f = t.enter("dup_fd");
    let g = fs.files.file_lock.spin_lock(t);
    let old = fs.tables.get(t, fs.files_fdtable_locked());
    let mut bits = old.bits.get(&g, |b| b.clone());
    let mut slots = Vec::new();
    for i in 0..old.max_fds {
        let f = old.fd[i as usize].rcu_dereference(t);
        if f != 0 {
            fs.filp.get(t, f).f_ref.atomic_add(t, 1);
        } else if bits.open_fds.bit(i) {
            if fs.flavor.has(Bug::DupFdKeepsReserved) {
                t.tracepoint("fork_copied_reserved");
            } else {
                t.tracepoint("fork_cleared_reserved");
                let parts = super::alloc::clear_open_bits(fs, t, &mut bits, i);
                t.step(Effect::Update {
                    scope: Some("child"),
                    parts,
                });
            }
        }
        slots.push(f);
    }
    g.unlock();
    let child = ChildTable {
        open: (0..old.max_fds).map(|i| bits.open_fds.bit(i)).collect(),
        slots,
    };
    fs.ghost().children.push(child.clone());
    t.note("child table: open_fds = {}", &[bits.open_fds.val()]);
    child
}
