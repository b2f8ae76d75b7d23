//! io_uring/openclose.c's openat (read in full at
//! io_uring-bpf-restrictions.4-20260206, 591beb0e3a03): io_openat_force_async,
//! __io_openat_prep / io_openat2_prep, io_openat2, io_open_cleanup; and the
//! `struct filename` lifetime it relies on (fs/namei.c delayed_getname,
//! complete_getname, putname_to_delayed, dismiss_delayed_filename, putname,
//! as a fs/namei.c copy of unidentified version has them: read_file id
//! 59862456327, newer than pull-filename since `refcnt` is a plain int).
//!
//! The filename is owned by the request's delayed slot from prep to issue;
//! `CLASS(filename_complete_delayed)` moves it into the issue function,
//! which puts it on return unless a punt hands it back to the slot
//! (`putname_to_delayed`); a request freed with REQ_F_NEED_CLEANUP still
//! set puts what the slot holds. Exactly one put per name (N7).
//!
//! Modelled with the name's refcount always 1 (no audit context holds it),
//! so `putname_to_delayed` always moves it back and never copies or fails.

use crate::kernel::errptr::Errno;
use crate::kernel::task::Task;
use crate::namei::open::{
    build_open_flags, do_file_open, Change as OpenChange, __O_TMPFILE, LOOKUP_NO_RCU, O_CREAT,
    O_NONBLOCK, O_TMPFILE, O_TRUNC, RESOLVE_CACHED,
};
use crate::namei::LOOKUP_CACHED;
use crate::trace::Val;

use super::{Change, Ring, IO_URING_F_NONBLOCK, REQ_F_FAIL, REQ_F_FORCE_ASYNC, REQ_F_NEED_CLEANUP};

/// The open-flag bits that always need to block (build_open_flags refuses
/// them under RESOLVE_CACHED, io_openat_force_async never tries them
/// inline). The variant before a0fc452a5d7f tested O_TMPFILE, which
/// includes O_DIRECTORY.
fn blocking_flags(ring: &Ring<'_>) -> u32 {
    let tmpfile = if ring.flavor.open.has(OpenChange::ResolveCachedTmpfileBits) {
        O_TMPFILE
    } else {
        __O_TMPFILE
    };
    O_TRUNC | O_CREAT | tmpfile
}

/// io_uring/openclose.c:io_openat_force_async: O_TRUNC, O_CREAT and
/// O_TMPFILE opens would always -EAGAIN inline; "we test for __O_TMPFILE
/// because O_TMPFILE includes O_DIRECTORY".
fn io_openat_force_async(ring: &Ring<'_>, flags: u32) -> bool {
    flags & blocking_flags(ring) != 0
}

/// io_uring/openclose.c:io_openat2_prep → __io_openat_prep: copy the
/// pathname into a delayed filename (REQ_F_NEED_CLEANUP from here on),
/// snapshot RLIMIT_NOFILE, and force async what cannot succeed inline.
/// Its failures (a bad `open_how` size, `buf_index` or fixed-file flag,
/// getname's -EFAULT/-ENAMETOOLONG, O_CLOEXEC with a fixed slot) are not
/// modelled: every SQE here is well formed.
pub(super) fn io_openat2_prep(ring: &Ring<'_>, t: &Task, req: usize) {
    let _f = t.enter("io_openat2_prep");
    delayed_getname(ring, t, req);
    let nofile = ring.files.rlimit_nofile(t);
    let mut log = ring.log();
    let r = &mut log.reqs[req];
    r.flags |= REQ_F_NEED_CLEANUP;
    r.nofile = nofile;
    if io_openat_force_async(ring, r.sqe.how.flags) {
        r.flags |= REQ_F_FORCE_ASYNC;
    }
}

/// io_uring/openclose.c:io_openat2: build the open flags; issued inline,
/// add LOOKUP_CACHED and O_NONBLOCK; reserve an fd; `do_file_open`. On
/// error give the fd back, and punt an inline -EAGAIN (returned as
/// `Err(EAGAIN)`, the filename handed back to the request) unless the
/// application asked for RESOLVE_CACHED; on success install the file.
/// Everything else completes: `Ok(res)`, the CQE's result.
pub(super) fn io_openat2(
    ring: &Ring<'_>,
    t: &Task,
    req: usize,
    issue_flags: u32,
) -> Result<Result<u32, Errno>, Errno> {
    let _f = t.enter("io_openat2");
    let mut name = Some(complete_getname(ring, t, req));
    let Some(res) = io_openat2_body(ring, t, req, issue_flags, &mut name) else {
        return Err(Errno::EAGAIN);
    };
    {
        let mut log = ring.log();
        let r = &mut log.reqs[req];
        r.flags &= !REQ_F_NEED_CLEANUP;
        if res.is_err() {
            r.flags |= REQ_F_FAIL;
        }
    }
    if let Some(n) = name {
        putname(ring, t, n);
    }
    Ok(res)
}

/// io_openat2 up to its `err:` label: the CQE's result, or `None` for a
/// punt (the name then moved back to the request).
fn io_openat2_body(
    ring: &Ring<'_>,
    t: &Task,
    req: usize,
    issue_flags: u32,
    name: &mut Option<usize>,
) -> Option<Result<u32, Errno>> {
    match open_and_install(ring, t, req, issue_flags) {
        Err(Failed::Again) => {
            punt_filename(ring, t, req, name);
            None
        }
        Err(Failed::With(e)) => Some(Err(e)),
        Ok(fd) => Some(Ok(fd)),
    }
}

/// How `open_and_install` failed: an inline -EAGAIN to punt, or the
/// request's result.
enum Failed {
    Again,
    With(Errno),
}

impl From<Errno> for Failed {
    fn from(e: Errno) -> Failed {
        Failed::With(e)
    }
}

/// build_open_flags, the fd reservation, do_file_open and the install.
fn open_and_install(
    ring: &Ring<'_>,
    t: &Task,
    req: usize,
    issue_flags: u32,
) -> Result<u32, Failed> {
    let (sqe, nofile) = {
        let log = ring.log();
        (log.reqs[req].sqe.clone(), log.reqs[req].nofile)
    };
    let tmpfile_bits = ring.flavor.open.has(OpenChange::ResolveCachedTmpfileBits);
    let mut op = build_open_flags(&sqe.how, tmpfile_bits).inspect_err(|_| {
        t.tracepoint("build_open_flags_refused");
        ring.log().reqs[req].refused_by_flags = true;
    })?;
    let nonblock_set = op.open_flag & O_NONBLOCK != 0;
    let resolve_nonblock = sqe.how.resolve & RESOLVE_CACHED != 0;
    let inline = issue_flags & IO_URING_F_NONBLOCK != 0;
    if inline {
        op.lookup_flags |= LOOKUP_CACHED;
        op.open_flag |= O_NONBLOCK;
    } else if ring.flavor.has(Change::RetryNoRcu) {
        op.lookup_flags |= LOOKUP_NO_RCU;
    }
    let fd = ring.files.get_unused_fd(t, sqe.how.flags, nofile)?;
    let opened = do_file_open(
        ring.vfs,
        t,
        ring.flavor.open,
        ring.opens,
        &sqe.name,
        op,
        false,
    );
    record_call(ring, t, req, inline);
    let mut open = match opened {
        Ok(o) => o,
        Err(e) => {
            if !ring.flavor.has(Change::ErrorKeepsReservedFd) {
                ring.files.put_unused_fd(t, fd);
            }
            if e == Errno::EAGAIN && !resolve_nonblock && inline {
                return Err(Failed::Again);
            }
            return Err(e.into());
        }
    };
    if inline && !nonblock_set {
        // file->f_flags &= ~O_NONBLOCK: the file the application gets has
        // the flags it asked for.
        t.note("f_flags &= ~O_NONBLOCK", &[]);
    }
    let file = match ring.files.alloc_file(t) {
        Ok(f) => f,
        Err(e) => {
            open.fput();
            ring.files.put_unused_fd(t, fd);
            return Err(e.into());
        }
    };
    ring.files.fd_install(t, fd, file);
    let path = std::mem::take(&mut open.file.f_path);
    hand_to_table(ring, t, path);
    ring.log().reqs[req].file_path = Some(path);
    Ok(fd)
}

/// Ghost: the file's path references now belong to the process's table
/// (the ledger names [`super::FILES_HOLDER`], who puts them when the fd is
/// closed at exit).
fn hand_to_table(ring: &Ring<'_>, t: &Task, path: crate::vfs::Path) {
    use crate::vfs::Obj;
    for obj in [Obj::Dentry(path.dentry), Obj::Mount(path.mnt)] {
        if let Err(e) = ring.vfs.refs.hand_over(t.name(), super::FILES_HOLDER, obj) {
            t.violation("refs_exact", e);
        }
    }
}

/// The punt's hand-back: `putname_to_delayed(&open->filename,
/// no_free_ptr(name))` (the constructed variants get it wrong, and the
/// inline -EAGAIN is posted as well).
fn punt_filename(ring: &Ring<'_>, t: &Task, req: usize, name: &mut Option<usize>) {
    let n = name
        .take()
        .expect("the issue owns its filename until the punt");
    if ring.flavor.has(Change::PuntPutsFilename) {
        putname(ring, t, n);
    }
    putname_to_delayed(ring, t, req, n);
    if ring.flavor.has(Change::PuntAlsoCompletes) {
        ring.io_req_complete_post(t, req, Err(Errno::EAGAIN));
    }
}

/// Ghost: the `do_file_open` call this task just made belongs to `req`.
fn record_call(ring: &Ring<'_>, t: &Task, req: usize, inline: bool) {
    let call = ring
        .opens
        .calls()
        .iter()
        .rposition(|c| c.thread == t.name())
        .expect("do_file_open logs every call");
    ring.log().reqs[req].calls.push((call, inline));
}

/// io_uring/openclose.c:io_open_cleanup: the request is freed with the
/// filename still in its slot (`dismiss_delayed_filename`).
pub(super) fn io_open_cleanup(ring: &Ring<'_>, t: &Task, req: usize) {
    let _f = t.enter("io_open_cleanup");
    let n = ring.log().reqs[req].delayed.take();
    if let Some(n) = n {
        putname(ring, t, n);
    }
}

/// fs/namei.c:delayed_getname: a new `struct filename` (refcount 1) in
/// the request's delayed slot.
fn delayed_getname(ring: &Ring<'_>, t: &Task, req: usize) {
    let mut log = ring.log();
    log.names.push(super::NameRef { refcnt: 1, puts: 0 });
    let n = log.names.len() - 1;
    log.reqs[req].delayed = Some(n);
    drop(log);
    t.note("getname → filename#{}", &[Val::dec(n as u64)]);
}

/// fs/namei.c:complete_getname: move the name out of the delayed slot (the
/// issue function owns it now). A name whose last reference is gone is a
/// use after free.
fn complete_getname(ring: &Ring<'_>, t: &Task, req: usize) -> usize {
    let mut log = ring.log();
    let n = log.reqs[req]
        .delayed
        .take()
        .expect("a request is issued with its filename in the slot");
    if log.names[n].refcnt == 0 {
        drop(log);
        t.violation(
            "filename_once",
            format!("request {req} is issued with filename#{n}, which was already put"),
        );
    }
    n
}

/// fs/namei.c:putname_to_delayed with a refcount of 1: the name goes back
/// to the slot as is.
fn putname_to_delayed(ring: &Ring<'_>, t: &Task, req: usize, n: usize) {
    ring.log().reqs[req].delayed = Some(n);
    t.note("putname_to_delayed(filename#{})", &[Val::dec(n as u64)]);
}

/// fs/namei.c:putname: drop a reference; the last frees the name. A put of
/// a freed name (refcount 0: the kernel's WARN_ON_ONCE) breaks N7.
fn putname(ring: &Ring<'_>, t: &Task, n: usize) {
    let mut log = ring.log();
    let name = &mut log.names[n];
    if name.refcnt == 0 {
        drop(log);
        t.violation(
            "filename_once",
            format!("putname(filename#{n}) of a name already freed"),
        );
    }
    name.refcnt -= 1;
    name.puts += 1;
    drop(log);
    t.note("putname(filename#{})", &[Val::dec(n as u64)]);
}
