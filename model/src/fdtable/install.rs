//! Filling and emptying slots: fd_install, file_close_fd_locked, close_fd,
//! __range_close / close_range, do_dup2 / ksys_dup3 / dup2, f_dupfd, dup_fd
//! at fork, put_files_struct (fs/file.c, read at v7.1-rc1 ef3da345, where
//! f_dupfd lives too; fcntl(F_DUPFD) in fs/fcntl.c calls it).

use crate::exec;
use crate::kernel::atomic::smp_rmb;
use crate::kernel::rcu::ObjRef;
use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{Effect, Parts, Val};

use super::alloc::{__put_unused_fd, __set_open_fd, alloc_fd};
use super::expand::{self, fdtable_size};
use super::fget::{__fget_files_rcu, begin_lookup, fget_done, fget_raw, fput, fput_close};
use super::file_ref::file_ref_inc;
use super::{Bug, ChildTable, Claim, Errno, FdTable, Fs, BITS_PER_LONG, NR_OPEN_DEFAULT};

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
    gh.installed.insert(fd, id);
}

/// fs/file.c:fd_install: publish `file` in the reserved slot `fd` without
/// file_lock, inside rcu_read_lock_sched; if a resize is in progress take
/// file_lock instead (fd_install_slowpath) so the write cannot land in a
/// table being copied.
pub fn fd_install(fs: &Fs, t: &Task, fd: u32, file: ObjRef) {
    let _f = t.enter("fd_install");
    fs.rcu.rcu_read_lock_sched(t);
    if fs.files.resize_in_progress.read_once(t) != 0 {
        fs.rcu.rcu_read_unlock_sched(t);
        t.tracepoint("install_locked");
        let _s = t.enter("fd_install_slowpath");
        let g = fs.files.file_lock.spin_lock(t);
        let fdt = fs.tables.get(t, fs.files_fdtable_locked());
        publish(fs, t, &fdt, fd, file);
        g.unlock();
        return;
    }
    // Pairs with smp_wmb() in expand_fdtable: resize_in_progress seen clear
    // means the table read below is the newest one.
    smp_rmb(t);
    let fdt_ref = fs.files.fdt.rcu_dereference(t);
    let fdt = fs.tables.get(t, fdt_ref);
    publish(fs, t, &fdt, fd, file);
    fs.rcu.rcu_read_unlock_sched(t);
}

/// fd_install's `rcu_assign_pointer(fdt->fd[fd], file)` and its ghost note
/// as one step: the store is lockless, so under real threads (stress) a
/// dup2 that sees the file and replaces it must also find it noted.
fn publish(fs: &Fs, t: &Task, fdt: &FdTable, fd: u32, file: ObjRef) {
    let _step = exec::atomic_section();
    fs.slot(t, fdt, fd).rcu_assign_pointer(t, file);
    note_installed(fs, t, fd, file, false);
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
    // Ghost first: from this store on the fd is not installed.
    fs.ghost().installed.remove(&fd);
    fdt.fd[fd as usize].rcu_assign_pointer(t, 0);
    __put_unused_fd(fs, t, g, &fdt, fd);
    Some(file)
}

/// fs/open.c:filp_close → fput_close (close(2): fput_close_sync, the same
/// put here): drop the reference the slot `fd` owned.
fn filp_close(fs: &Fs, t: &Task, fd: u32, file: ObjRef) {
    let _f = t.enter("filp_close");
    let id = fs.file_id(file);
    fput_close(fs, t, file);
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

/// The highest open fd of `fdt` below `below`, if any (find_last_bit).
fn find_last_bit(g: &SpinGuard<'_>, fdt: &FdTable, below: u32) -> Option<u32> {
    fdt.bits.get(g, |b| {
        (0..below.min(fdt.max_fds))
            .rev()
            .find(|&i| b.open_fds.bit(i))
    })
}

/// fs/file.c:__range_close (close_range without flags): close every open
/// fd in [fd, max_fd] of the current table, dropping file_lock around each
/// filp_close and re-reading the table after taking it again. The
/// RangeCloseKeepsStaleTable mutant keeps the table read first.
fn __range_close(fs: &Fs, t: &Task, fd: u32, max_fd: u32) -> u32 {
    let _f = t.enter("__range_close");
    let mut g = fs.files.file_lock.spin_lock(t);
    let mut fdt_ref = fs.files_fdtable_locked();
    let mut fdt = fs.tables.get(t, fdt_ref);
    let max_fd = max_fd.min(fdt.max_fds - 1);
    let mut closed = 0;
    let mut next = fdt
        .bits
        .get(&g, |b| b.open_fds.find_next_bit(t, max_fd + 1, fd));
    while next <= max_fd {
        if let Some(file) = file_close_fd_locked(fs, t, &g, next) {
            g.unlock();
            filp_close(fs, t, next, file);
            closed += 1;
            g = fs.files.file_lock.spin_lock(t);
            if !fs.flavor.has(Bug::RangeCloseKeepsStaleTable) {
                fdt_ref = fs.files_fdtable_locked();
            }
            fdt = fs.tables.get(t, fdt_ref);
        }
        next = fdt
            .bits
            .get(&g, |b| b.open_fds.find_next_bit(t, max_fd + 1, next + 1));
    }
    g.unlock();
    closed
}

/// fs/file.c:do_close_on_exec (read at the v7.1-rc1 `vfs-7.1-rc1.misc`
/// merge ef3da345). Exec has unshared the table first, so beside it run only
/// lockless readers that reach it through the task (fget_task). Word by
/// word under file_lock: re-read the table, take the word's close_on_exec
/// bits and clear it, then for each set bit whose slot holds a file clear
/// the slot, give the fd back and drop file_lock around filp_close. The
/// CloseOnExecPutsBeforeUnpublish mutant closes the file before it clears
/// the slot.
pub fn do_close_on_exec(fs: &Fs, t: &Task) {
    let _f = t.enter("do_close_on_exec");
    let mut g = fs.files.file_lock.spin_lock(t);
    for word in 0.. {
        let first = word * BITS_PER_LONG;
        let fdt = fs.tables.get(t, fs.files_fdtable_locked());
        if first >= fdt.max_fds {
            break;
        }
        let set = take_close_on_exec_word(&g, &fdt, word);
        for fd in (first..first + BITS_PER_LONG).filter(|fd| set >> (fd - first) & 1 == 1) {
            let file = fdt.fd[fd as usize].rcu_dereference(t);
            if file == 0 {
                continue;
            }
            if fs.flavor.has(Bug::CloseOnExecPutsBeforeUnpublish) {
                g.unlock();
                filp_close(fs, t, fd, file);
                g = fs.files.file_lock.spin_lock(t);
            }
            fs.ghost().installed.remove(&fd);
            fdt.fd[fd as usize].rcu_assign_pointer(t, 0);
            __put_unused_fd(fs, t, &g, &fdt, fd);
            if !fs.flavor.has(Bug::CloseOnExecPutsBeforeUnpublish) {
                g.unlock();
                filp_close(fs, t, fd, file);
                g = fs.files.file_lock.spin_lock(t);
            }
        }
    }
    g.unlock();
}

/// `set = fdt->close_on_exec[word]; fdt->close_on_exec[word] = 0` as one
/// step (file_lock held): the word's bits, one per fd of the word.
fn take_close_on_exec_word(g: &SpinGuard<'_>, fdt: &FdTable, word: u32) -> u64 {
    let mut set = 0;
    fdt.bits.apply(g, |b| {
        let (old, part) = b.close_on_exec.take_word(word);
        set = old;
        Effect::Update {
            scope: None,
            parts: Parts::one(part),
        }
    });
    set
}

/// fs/file.c:close_range (flags 0): -EINVAL when fd > max_fd, else close
/// the range; returns 0.
pub fn close_range(fs: &Fs, t: &Task, fd: u32, max_fd: u32) -> Result<u32, Errno> {
    let _f = t.enter("close_range");
    if fd > max_fd {
        return Err(Errno::Einval);
    }
    __range_close(fs, t, fd, max_fd);
    Ok(0)
}

/// fs/file.c:close_range with CLOSE_RANGE_UNSHARE: while the table is
/// shared (`files->count > 1`), dup_fd copies it with [fd, max_fd] as the
/// punch hole, __range_close closes that range in the private copy (here:
/// the copy's references in the range are dropped), and the task leaves the
/// shared table (put_files_struct). The thread runs nothing on the shared
/// table afterwards.
pub fn close_range_unshare(fs: &Fs, t: &Task, fd: u32, max_fd: u32) -> Result<u32, Errno> {
    let _f = t.enter("close_range");
    if fd > max_fd {
        return Err(Errno::Einval);
    }
    if fs.files.count.atomic_read(t) == 1 {
        __range_close(fs, t, fd, max_fd);
        return Ok(0);
    }
    let mut child = dup_fd(fs, t, Some((fd, max_fd)))?;
    {
        let _c = t.enter("__range_close");
        for i in fd..=max_fd.min(child.slots.len() as u32 - 1) {
            let file = std::mem::replace(&mut child.slots[i as usize], 0);
            child.open[i as usize] = false;
            if file != 0 {
                fput_close(fs, t, file);
            }
        }
    }
    fs.ghost().children.push(child);
    put_files_struct(fs, t);
    Ok(0)
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
    let slot = fs.slot(t, fdt, fd);
    let tofree = slot.rcu_dereference(t);
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
    file_ref_inc(fs, t, file);
    if tofree != 0 {
        fs.ghost().installed.remove(&fd);
    }
    slot.rcu_assign_pointer(t, file);
    __set_open_fd(fs, t, &g, fdt, fd, false, || {
        note_installed(fs, t, fd, file, tofree != 0)
    });
    g.unlock();
    if tofree != 0 {
        filp_close(fs, t, fd, tofree);
    }
    Ok(fd)
}

/// fs/file.c:ksys_dup3 (dup3, and dup2 when the fds differ): -EINVAL when
/// they are equal, -EBADF when newfd ≥ RLIMIT_NOFILE; under file_lock
/// expand the table for newfd, then look oldfd up: a missing oldfd is
/// -EBADF whatever the expansion said, and an expansion's -EMFILE is
/// reported as -EBADF too.
pub fn ksys_dup3(fs: &Fs, t: &Task, oldfd: u32, newfd: u32) -> Result<u32, Errno> {
    let _f = t.enter("ksys_dup3");
    if oldfd == newfd {
        return Err(Errno::Einval);
    }
    if newfd >= fs.rlimit_nofile.read_once(t) as u32 {
        return Err(Errno::Ebadf);
    }
    let g = fs.files.file_lock.spin_lock(t);
    let (g, err) = expand::expand_files(fs, t, g, newfd);
    let fdt = fs.tables.get(t, fs.files_fdtable_locked());
    let file = if oldfd < fdt.max_fds {
        fdt.fd[oldfd as usize].rcu_dereference(t)
    } else {
        0
    };
    let err = match (file, err) {
        (0, _) | (_, Err(Errno::Emfile)) => Err(Errno::Ebadf),
        (_, Err(e)) => Err(e),
        (_, Ok(())) => Ok(()),
    };
    if let Err(e) = err {
        g.unlock();
        return Err(e);
    }
    do_dup2(fs, t, g, &fdt, file, newfd)
}

/// fs/file.c:dup2: for oldfd == newfd, newfd if oldfd is open (looked up
/// with __fget_files_rcu, mask 0), else -EBADF; otherwise ksys_dup3.
pub fn dup2(fs: &Fs, t: &Task, oldfd: u32, newfd: u32) -> Result<u32, Errno> {
    if oldfd != newfd {
        return ksys_dup3(fs, t, oldfd, newfd);
    }
    let _f = t.enter("dup2");
    let call = begin_lookup(fs, t, oldfd);
    fs.rcu.rcu_read_lock(t);
    let f = __fget_files_rcu(fs, t, oldfd, 0, call);
    fs.rcu.rcu_read_unlock(t);
    if let Some(f) = f {
        fput(fs, t, f.obj);
    }
    fget_done(fs, t);
    f.map(|_| oldfd).ok_or(Errno::Ebadf)
}

/// fcntl(fd, F_DUPFD, from): fdget_raw (a reference here: the table is
/// shared), fs/file.c:f_dupfd, fdput.
pub fn fcntl_dupfd(fs: &Fs, t: &Task, fd: u32, from: u32) -> Result<u32, Errno> {
    let _f = t.enter("do_fcntl");
    let file = fget_raw(fs, t, fd);
    let Some(file) = file else {
        fget_done(fs, t);
        return Err(Errno::Ebadf);
    };
    let r = f_dupfd(fs, t, from, file.obj);
    fput(fs, t, file.obj);
    fget_done(fs, t);
    r
}

/// fs/file.c:f_dupfd: -EINVAL when `from` ≥ RLIMIT_NOFILE, else
/// alloc_fd(from, RLIMIT_NOFILE) and install the file with a new reference.
pub fn f_dupfd(fs: &Fs, t: &Task, from: u32, file: ObjRef) -> Result<u32, Errno> {
    let _f = t.enter("f_dupfd");
    let nofile = fs.rlimit_nofile.read_once(t) as u32;
    if from >= nofile {
        return Err(Errno::Einval);
    }
    let newfd = alloc_fd(fs, t, from, nofile, false)?;
    file_ref_inc(fs, t, file);
    fd_install(fs, t, newfd, file);
    Ok(newfd)
}

/// fs/file.c:sane_fdtable_size: the open fds rounded up to a word (at least
/// NR_OPEN_DEFAULT), ignoring the tail of `punch_hole` when the last open
/// fd falls in it.
fn sane_fdtable_size(
    fs: &Fs,
    g: &SpinGuard<'_>,
    fdt: &FdTable,
    punch_hole: Option<(u32, u32)>,
) -> u32 {
    let Some(mut last) = find_last_bit(g, fdt, fdt.max_fds) else {
        return NR_OPEN_DEFAULT;
    };
    if let Some((from, to)) = punch_hole {
        if to >= last && from <= last {
            if fs.flavor.has(Bug::SaneFdtableSizeTrustsHole) {
                return NR_OPEN_DEFAULT;
            }
            match find_last_bit(g, fdt, from) {
                Some(l) => last = l,
                None => return NR_OPEN_DEFAULT,
            }
        }
    }
    (last + 1).div_ceil(BITS_PER_LONG) * BITS_PER_LONG
}

/// fs/file.c:dup_fd (fork without CLONE_FILES, or close_range's unshare
/// with `punch_hole`): size the child's table from the parent's under the
/// parent's file_lock; while it does not fit, drop the lock, allocate a
/// bigger one (alloc_fdtable: may fail with -EMFILE), retake the lock and
/// re-read the parent's table. Then copy the bitmaps and pointers of the
/// first `open_files` fds, taking a reference per file; an fd that is open
/// but NULL (a sibling's open in flight) is cleared in the child. The
/// child's table is private, so the ghost log keeps a snapshot of it.
pub fn dup_fd(fs: &Fs, t: &Task, punch_hole: Option<(u32, u32)>) -> Result<ChildTable, Errno> {
    let _f = t.enter("dup_fd");
    let mut new_max = NR_OPEN_DEFAULT;
    let mut g = fs.files.file_lock.spin_lock(t);
    let mut old_ref = fs.files_fdtable_locked();
    let mut old = fs.tables.get(t, old_ref);
    let mut open_files = sane_fdtable_size(fs, &g, &old, punch_hole);
    while open_files > new_max {
        g.unlock();
        t.tracepoint("dup_fd_resize");
        new_max = {
            let _a = t.enter("alloc_fdtable");
            fdtable_size(fs, t, open_files)?
        };
        t.note("child table: {} slots", &[Val::dec(new_max.into())]);
        g = fs.files.file_lock.spin_lock(t);
        if !fs.flavor.has(Bug::DupFdKeepsStaleTable) {
            old_ref = fs.files_fdtable_locked();
        }
        old = fs.tables.get(t, old_ref);
        open_files = sane_fdtable_size(fs, &g, &old, punch_hole);
    }
    let mut bits = old.bits.get(&g, |b| b.clone());
    let in_hole = |i: u32| punch_hole.is_some_and(|(from, to)| from <= i && i <= to);
    let lost: Vec<u32> = (open_files..old.max_fds)
        .filter(|&i| bits.open_fds.bit(i) && !in_hole(i))
        .collect();
    let mut slots = Vec::new();
    for i in 0..open_files {
        let f = old.fd[i as usize].rcu_dereference(t);
        if f != 0 {
            file_ref_inc(fs, t, f);
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
        open: (0..open_files).map(|i| bits.open_fds.bit(i)).collect(),
        slots,
        lost,
    };
    t.note("child table: open_fds = {}", &[bits.open_fds.val()]);
    Ok(child)
}

/// fs/file.c:put_files_struct (a sharer exits): drop one `files->count`;
/// the last one closes every installed file (close_files: no lock, nobody
/// else can reach the table).
pub fn put_files_struct(fs: &Fs, t: &Task) {
    let _f = t.enter("put_files_struct");
    if !fs.files.count.atomic_dec_and_test(t) {
        return;
    }
    let _c = t.enter("close_files");
    let fdt = fs.tables.get(t, fs.files.fdt.rcu_dereference(t));
    for fd in 0..fdt.max_fds {
        let file = fdt.fd[fd as usize].rcu_dereference(t);
        if file != 0 {
            fs.ghost().installed.remove(&fd);
            filp_close(fs, t, fd, file);
        }
    }
}
