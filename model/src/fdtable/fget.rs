//! struct file references and the lockless lookup: alloc_empty_file, fput,
//! __fget_files_rcu / fget (fs/file.c, fs/file_table.c, v6.12: `f_count`
//! taken with atomic_long_inc_not_zero; files are SLAB_TYPESAFE_BY_RCU
//! since v6.7).

use crate::kernel::rcu::ObjRef;
use crate::kernel::task::Task;

use super::{Bug, FgetState, File, FileId, Fs};

/// fs/file_table.c:alloc_empty_file: a new struct file with one reference.
/// A recycled object gets its refcount set last (init_file), so a lockless
/// reader's inc_not_zero fails until the file is fully set up.
pub fn alloc_empty_file(fs: &Fs, t: &Task) -> ObjRef {
    let _f = t.enter("alloc_empty_file");
    let _slab = fs.filp_cachep.lock();
    let next = fs.filp.count() + 1;
    fs.filp.alloc(
        t,
        || File {
            f_ref: crate::kernel::atomic::Atomic::new(format!("file#{next}.f_count"), 1),
        },
        |f| f.f_ref.atomic_set(t, 1),
    )
}

/// fs/file_table.c:fput: drop a reference; the last one frees the file
/// (at once here; the kernel defers __fput to task_work).
pub fn fput(fs: &Fs, t: &Task, file: ObjRef) {
    let _f = t.enter("fput");
    if fs.filp.get(t, file).f_ref.atomic_dec_and_test(t) {
        let _slab = fs.filp_cachep.lock();
        fs.filp.free(t, file, "__fput");
    }
}

/// Ghost: this thread no longer holds fget's reference as such (dropped or
/// handed over).
pub fn fget_done(fs: &Fs, t: &Task) {
    fs.ghost().fgets.remove(t.name());
}

fn slot_load(fs: &Fs, t: &Task, fdt_ref: ObjRef, fd: u32) -> Option<ObjRef> {
    let fdt = fs.tables.get(t, fdt_ref);
    if fd >= fdt.max_fds {
        return None;
    }
    Some(fdt.fd[fd as usize].rcu_dereference(t))
}

/// fs/file.c:__fget_files_rcu (rcu_read_lock held): load the table, load the
/// slot, take a reference with inc_not_zero, then re-check that the slot
/// still holds the same pointer and `files->fdt` is still the same table;
/// otherwise drop the reference and retry.
fn __fget_files_rcu(fs: &Fs, t: &Task, fd: u32) -> Option<FileId> {
    let _f = t.enter("__fget_files_rcu");
    loop {
        let fdt_ref = fs.files.fdt.rcu_dereference(t);
        let file = slot_load(fs, t, fdt_ref, fd).unwrap_or(0);
        if file == 0 {
            return None;
        }
        if !fs.filp.get(t, file).f_ref.atomic_inc_not_zero(t) {
            t.tracepoint("fget_dead_file");
            crate::sync::yield_now();
            continue;
        }
        let id = fs.file_id(file);
        fs.ghost()
            .fgets
            .insert(t.name(), FgetState::Holding { fd, file: id });
        if !fs.flavor.has(Bug::FgetSkipsSlotRecheck) {
            let same_slot = slot_load(fs, t, fdt_ref, fd) == Some(file);
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
                fget_done(fs, t);
                crate::sync::yield_now();
                continue;
            }
        }
        fs.ghost()
            .fgets
            .insert(t.name(), FgetState::Returned { fd, file: id });
        return Some(id);
    }
}

/// fs/file.c:fget: the file at `fd` with a reference the caller drops with
/// fput, or None.
pub fn fget(fs: &Fs, t: &Task, fd: u32) -> Option<FileId> {
    let _f = t.enter("fget");
    fs.rcu.rcu_read_lock(t);
    let file = __fget_files_rcu(fs, t, fd);
    fs.rcu.rcu_read_unlock(t);
    file
}
