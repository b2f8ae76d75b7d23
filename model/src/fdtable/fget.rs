//! struct file references and the lockless lookups: alloc_empty_file and
//! init_file, fput, __fget_files_rcu / fget / fget_raw / fget_task,
//! __fget_light
//! (fs/file.c and fs/file_table.c; current read at the v7.1-rc1
//! `vfs-7.1-rc1.misc` merge ef3da345, v6.13+ logic; the v6.10 base takes
//! `f_count` with atomic_long_inc_not_zero). Files are SLAB_TYPESAFE_BY_RCU
//! since v6.7 (0ede61d8589c): a field of a file may be read only once the
//! reader holds a reference, and init_file sets the count last.

use crate::exec;
use crate::kernel::atomic::Atomic;
use crate::kernel::rcu::ObjRef;
use crate::kernel::task::Task;
use crate::trace::Show;

use super::file_ref::{self, file_ref_get, file_ref_put};
use super::{Bug, Errno, FgetState, File, FileId, Fs, FMODE_NONOTIFY_PERM, FMODE_PATH};

/// How traces show `f_mode`.
fn mode_label(v: u64) -> String {
    let names: Vec<&str> = [
        (FMODE_PATH, "FMODE_PATH"),
        (FMODE_NONOTIFY_PERM, "FMODE_NONOTIFY_PERM"),
    ]
    .into_iter()
    .filter(|&(bit, _)| v & bit != 0)
    .map(|(_, name)| name)
    .collect();
    if names.is_empty() {
        "0".to_string()
    } else {
        names.join("|")
    }
}

/// The `f_mode` init_file leaves for an open with `mode`: current kernels
/// add FMODE_NONOTIFY_PERM (file_set_fsnotify_mode).
fn complete_mode(fs: &Fs, mode: u64) -> u64 {
    match fs.flavor.base {
        super::Base::V6_10 => mode,
        super::Base::Current => mode | FMODE_NONOTIFY_PERM,
    }
}

/// A new `struct file` as SLUB hands out fresh memory: private to its
/// allocator until fd_install publishes it, so initialised without steps.
pub(super) fn fresh_file(fs: &Fs, obj: u64, refs: u64, mode: u64) -> File {
    let (name, show) = match fs.flavor.base {
        super::Base::V6_10 => (format!("file#{obj}.f_count"), Show::Dec),
        super::Base::Current => (
            format!("file#{obj}.f_ref"),
            Show::With(file_ref::file_ref_label),
        ),
    };
    let mode = complete_mode(fs, mode);
    File {
        f_ref: Atomic::with_format(name, file_ref::raw_for(fs.flavor.base, refs), show),
        f_mode: Atomic::with_format(format!("file#{obj}.f_mode"), mode, Show::With(mode_label)),
    }
}

/// security_file_alloc as fs/file_table.c:init_file (read at ef3da345)
/// calls it: a refusal (`refusal`: an LSM's blob allocation or
/// file_alloc_security hook failing) makes init_file return the error.
/// security/security.c itself was not read; only its verdict is modelled.
fn security_file_alloc(t: &Task, refusal: Option<Errno>) -> Result<(), Errno> {
    let _f = t.enter("security_file_alloc");
    match refusal {
        Some(e) => {
            t.tracepoint("security_file_alloc_refused");
            t.note("an LSM refuses the file: -ENOMEM", &[]);
            Err(e)
        }
        None => Ok(()),
    }
}

/// fs/file_table.c:init_file (read at the v7.1-rc1 `vfs-7.1-rc1.misc` merge
/// ef3da345) for recycled memory, which a stale lockless reader may still
/// look at: security_file_alloc first (a refusal makes the caller free the
/// memory), then the fields, the count last (file_ref_init: "we're
/// SLAB_TYPESAFE_BY_RCU so initialize f_ref last"), so no reader's get
/// succeeds on a file that is half built or never opened. The
/// InitFileCountFirst mutant sets the count before security_file_alloc;
/// FsnotifyModeAfterRefInit (711f9b8fbe4f) writes `f_mode`'s fsnotify bits
/// after the count.
fn init_file(
    fs: &Fs,
    t: &Task,
    obj: ObjRef,
    mode: u64,
    refusal: Option<Errno>,
) -> Result<(), Errno> {
    let _f = t.enter("init_file");
    let f = fs.filp.get(t, obj);
    let count_first = fs.flavor.has(Bug::InitFileCountFirst);
    let fsnotify_late = fs.flavor.has(Bug::FsnotifyModeAfterRefInit);
    fs.ghost().half_built.push(obj);
    if count_first {
        file_ref::file_ref_init(fs, t, obj, &f);
    }
    let allowed = security_file_alloc(t, refusal);
    if allowed.is_ok() {
        // f_mode = OPEN_FMODE(flags), with file_set_fsnotify_mode's bits
        // unless they come after the count.
        let early = if fsnotify_late {
            mode
        } else {
            complete_mode(fs, mode)
        };
        f.f_mode.write_once(t, early);
        if !count_first {
            file_ref::file_ref_init(fs, t, obj, &f);
        }
        if fsnotify_late {
            f.f_mode.write_once(t, complete_mode(fs, mode));
        }
    }
    fs.ghost().half_built.retain(|&o| o != obj);
    allowed
}

/// fs/file_table.c:alloc_empty_file: a new struct file with one reference
/// and mode `mode` (FMODE_PATH for an O_PATH open), or the error of an LSM
/// that refuses it (`refusal`), the memory then handed back to the cache at
/// once with kmem_cache_free.
pub fn alloc_empty_file(
    fs: &Fs,
    t: &Task,
    mode: u64,
    refusal: Option<Errno>,
) -> Result<ObjRef, Errno> {
    let _f = t.enter("alloc_empty_file");
    let _slab = fs.filp_cachep.lock();
    let next = fs.filp.count() as u64 + 1;
    let obj = fs.filp.alloc(t, || fresh_file(fs, next, 1, mode), |_| {});
    let done = if fs.file_id(obj).gen > 1 {
        init_file(fs, t, obj, mode, refusal)
    } else {
        security_file_alloc(t, refusal)
    };
    if done.is_err() {
        fs.filp.free(t, obj, "kmem_cache_free");
    }
    done.map(|()| obj)
}

/// fs/file_table.c:fput: drop a reference; the last one frees the file (at
/// once here; the kernel defers __fput to task_work).
pub fn fput(fs: &Fs, t: &Task, file: ObjRef) {
    let _f = t.enter("fput");
    if file_ref_put(fs, t, file) {
        let _slab = fs.filp_cachep.lock();
        fs.filp.free(t, file, "__fput");
    }
}

/// fs/file_table.c:fput_close (filp_close) and fput_close_sync (close(2)):
/// current drops the reference with file_ref_put_close (read in the v7.0
/// fs/open.c and file_ref.h 5370b43e; not yet in v6.13); v6.10 with fput's
/// decrement.
pub fn fput_close(fs: &Fs, t: &Task, file: ObjRef) {
    if fs.flavor.base == super::Base::V6_10 {
        return fput(fs, t, file);
    }
    let _f = t.enter("fput_close");
    if file_ref::file_ref_put_close(fs, t, file) {
        let _slab = fs.filp_cachep.lock();
        fs.filp.free(t, file, "__fput");
    }
}

/// Ghost: this thread no longer holds fget's reference as such (dropped or
/// handed over).
pub fn fget_done(fs: &Fs, t: &Task) {
    fs.ghost().fgets.remove(t.name());
}

/// Ghost: a lookup of `fd` begins; returns its number.
pub(super) fn begin_lookup(fs: &Fs, t: &Task, fd: u32) -> u32 {
    let mut gh = fs.ghost();
    gh.lookups += 1;
    let call = gh.lookups;
    gh.fgets.insert(t.name(), FgetState::Looking { fd, call });
    call
}

/// Reads `file->f_mode`. Ghost check (brief F9/F10): the reader holds a
/// reference on this incarnation, or borrows it from a table nobody else
/// shares (`__fget_light`).
fn read_f_mode(fs: &Fs, t: &Task, file: ObjRef) -> u64 {
    let _step = exec::atomic_section();
    let id = fs.file_id(file);
    let allowed = match fs.ghost().fgets.get(t.name()) {
        Some(FgetState::Holding { file: f, .. } | FgetState::Returned { file: f, .. }) => *f == id,
        Some(FgetState::Borrowing { .. }) => fs.files.count.peek() == 1,
        _ => false,
    };
    let half_built = fs.ghost().half_built.contains(&file);
    let mode = fs.filp.get(t, file).f_mode.read_once(t);
    if half_built {
        t.violation(
            "file_fields_after_ref",
            format!(
                "{} read {id}'s f_mode while init_file is still building it",
                t.name()
            ),
        );
    }
    if !allowed {
        t.violation(
            "file_fields_after_ref",
            format!(
                "{} read {id}'s f_mode without holding a reference on it",
                t.name()
            ),
        );
    }
    mode
}

fn slot_load(fs: &Fs, t: &Task, fdt_ref: ObjRef, fd: u32) -> Option<ObjRef> {
    let fdt = fs.tables.get(t, fdt_ref);
    if fd >= fdt.max_fds {
        return None;
    }
    Some(fdt.fd[fd as usize].rcu_dereference(t))
}

/// Takes a reference with file_ref_get; ghost: records it in the same step
/// (an atomic section, so real threads see no half-made step either).
fn get_ref(fs: &Fs, t: &Task, fd: u32, file: ObjRef) -> Option<FileId> {
    let _step = exec::atomic_section();
    if !file_ref_get(fs, t, file) {
        return None;
    }
    let id = fs.file_id(file);
    let mut gh = fs.ghost();
    gh.reader_refs.push((t.name(), file));
    gh.fgets
        .insert(t.name(), FgetState::Holding { fd, file: id });
    Some(id)
}

/// fs/file.c:__fget_files_rcu (rcu_read_lock held): load the table, load the
/// slot, take a reference with file_ref_get, then re-check that the slot
/// still holds the same pointer and `files->fdt` is still the same table
/// (else fput, which may be the final put, and retry); only then test
/// `f_mode & mask` (a match: fput, NULL).
pub(super) fn __fget_files_rcu(fs: &Fs, t: &Task, fd: u32, mask: u64, call: u32) -> Option<FileId> {
    let _f = t.enter("__fget_files_rcu");
    loop {
        let fdt_ref = fs.files.fdt.rcu_dereference(t);
        let file = slot_load(fs, t, fdt_ref, fd).unwrap_or(0);
        if file == 0 {
            let null = FgetState::Null {
                fd,
                call,
                table: fdt_ref,
            };
            fs.ghost().fgets.insert(t.name(), null);
            return None;
        }
        let early_mode = fs
            .flavor
            .has(Bug::FgetChecksModeBeforeRef)
            .then(|| read_f_mode(fs, t, file));
        let Some(id) = get_ref(fs, t, fd, file) else {
            t.tracepoint("fget_dead_file");
            crate::sync::yield_now();
            continue;
        };
        if !fs.flavor.has(Bug::FgetSkipsSlotRecheck) {
            let unlocked = fs.flavor.has(Bug::FgetUnlocksBeforeRecheck);
            if unlocked {
                fs.rcu.rcu_read_unlock(t);
            }
            let same_slot = slot_load(fs, t, fdt_ref, fd) == Some(file);
            if unlocked {
                fs.rcu.rcu_read_lock(t);
            }
            let same_table = same_slot
                && (fs.flavor.has(Bug::FgetSkipsFdtRecheck)
                    || fs.files.fdt.rcu_dereference(t) == fdt_ref);
            if same_slot && !same_table {
                t.tracepoint("fget_saw_old_table");
            }
            if !same_table {
                t.tracepoint("fget_retry");
                if !fs.flavor.has(Bug::FgetRetryLeaksRef) {
                    fput(fs, t, file);
                }
                fs.ghost()
                    .fgets
                    .insert(t.name(), FgetState::Looking { fd, call });
                crate::sync::yield_now();
                continue;
            }
        }
        let mode = early_mode.unwrap_or_else(|| read_f_mode(fs, t, file));
        if mode & mask != 0 {
            t.tracepoint("fget_masked");
            fput(fs, t, file);
            fs.ghost().fgets.insert(t.name(), FgetState::Masked { fd });
            return None;
        }
        fs.ghost()
            .fgets
            .insert(t.name(), FgetState::Returned { fd, file: id });
        return Some(id);
    }
}

/// fs/file.c:__fget_files: __fget_files_rcu inside rcu_read_lock.
fn __fget_files(fs: &Fs, t: &Task, fd: u32, mask: u64) -> Option<FileId> {
    let call = begin_lookup(fs, t, fd);
    fs.rcu.rcu_read_lock(t);
    let file = __fget_files_rcu(fs, t, fd, mask, call);
    fs.rcu.rcu_read_unlock(t);
    file
}

/// fs/file.c:fget: the file at `fd` with a reference the caller drops with
/// fput, or None (also for an O_PATH file: the mask is FMODE_PATH).
pub fn fget(fs: &Fs, t: &Task, fd: u32) -> Option<FileId> {
    let _f = t.enter("fget");
    __fget_files(fs, t, fd, FMODE_PATH)
}

/// fs/file.c:fget_raw: as fget, O_PATH files included (mask 0).
pub fn fget_raw(fs: &Fs, t: &Task, fd: u32) -> Option<FileId> {
    let _f = t.enter("fget_raw");
    __fget_files(fs, t, fd, 0)
}

/// fs/file.c:fget_task: the file at `fd` in another task's table
/// (pidfd_getfd(2), /proc/<pid>/fd): __fget_files with mask 0, under
/// task_lock (not modelled: `task->files` does not change here).
pub fn fget_task(fs: &Fs, t: &Task, fd: u32) -> Option<FileId> {
    let _f = t.enter("fget_task");
    __fget_files(fs, t, fd, 0)
}

/// What fdget hands back: a borrowed file (no reference: the table is not
/// shared) or one with a reference (fdput drops it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fd {
    Borrowed(FileId),
    Cloned(FileId),
}

/// fs/file.c:__fget_light (fdget): when `files->count` reads 1
/// (atomic_read_acquire, pairing with put_files_struct's
/// atomic_dec_and_test) nobody else can close the fd, so the file is
/// borrowed without a reference; otherwise it is a full fget. The
/// FgetLightRelaxedCount mutant reads the count with a plain atomic_read.
pub fn __fget_light(fs: &Fs, t: &Task, fd: u32) -> Option<Fd> {
    let _f = t.enter("__fget_light");
    let count = if fs.flavor.has(Bug::FgetLightRelaxedCount) {
        fs.files.count.atomic_read(t)
    } else {
        fs.files.count.atomic_read_acquire(t)
    };
    if count != 1 {
        return __fget_files(fs, t, fd, FMODE_PATH).map(Fd::Cloned);
    }
    t.tracepoint("fget_light_borrow");
    let call = begin_lookup(fs, t, fd);
    // files_lookup_fd_raw: the current table, no RCU (nobody can resize it).
    let fdt_ref = fs.files.fdt.rcu_dereference(t);
    let file = slot_load(fs, t, fdt_ref, fd).unwrap_or(0);
    if file == 0 {
        let null = FgetState::Null {
            fd,
            call,
            table: fdt_ref,
        };
        fs.ghost().fgets.insert(t.name(), null);
        return None;
    }
    let id = fs.file_id(file);
    fs.ghost()
        .fgets
        .insert(t.name(), FgetState::Borrowing { fd, file: id });
    if read_f_mode(fs, t, file) & FMODE_PATH != 0 {
        fs.ghost().fgets.insert(t.name(), FgetState::Masked { fd });
        return None;
    }
    Some(Fd::Borrowed(id))
}
