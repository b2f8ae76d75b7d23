//! Growing the table: expand_files, expand_fdtable, alloc_fdtable,
//! copy_fdtable, free_fdtable_rcu (fs/file.c, v6.12).

use crate::kernel::atomic::smp_wmb;
use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{Effect, Part, Parts, Show, Val};

use super::{Bug, Errno, FdTable, Fs, BITS_PER_LONG, SYSCTL_NR_OPEN};

/// fs/file.c:alloc_fdtable: a table for at least `nr` fds, rounded up to a
/// power of two (at least two words here; the kernel's minimum is a page
/// worth of pointers). Its slots are NULL until copy_fdtable fills them.
fn alloc_fdtable(fs: &Fs, t: &Task, nr: u32) -> u64 {
    let _f = t.enter("alloc_fdtable");
    let max_fds = nr
        .next_power_of_two()
        .clamp(2 * BITS_PER_LONG, SYSCTL_NR_OPEN);
    let next = fs.tables.count() + 1;
    let label = format!("fdtable#{next}");
    fs.tables.alloc(
        t,
        || FdTable::new(&fs.files.file_lock, &label, max_fds, &[], false),
        |_| {},
    )
}

/// fs/file.c:copy_fdtable: copy the slot pointers and the bitmaps of `old`
/// into `new` (file_lock held). The slot loads are marked: fd_install
/// writes slots without the lock.
fn copy_fdtable(t: &Task, g: &SpinGuard<'_>, new: &FdTable, old: &FdTable) {
    let _f = t.enter("copy_fdtable");
    for i in 0..old.max_fds as usize {
        let f = old.fd[i].rcu_dereference(t);
        if f != 0 {
            new.fd[i].write_once(t, f);
        }
    }
    let src = old.bits.get(g, |b| b.clone());
    let _c = t.enter("copy_fd_bitmaps");
    new.bits.apply(g, |b| {
        b.open_fds.copy_from(&src.open_fds, old.max_fds);
        b.close_on_exec.copy_from(&src.close_on_exec, old.max_fds);
        b.full_fds_bits
            .copy_from(&src.full_fds_bits, old.max_fds / BITS_PER_LONG);
        let assign = |m: &crate::kernel::bitmap::Bitmap| Part::Assign {
            var: m.name(),
            val: m.val(),
        };
        Effect::Update {
            scope: None,
            parts: Parts::one(assign(&b.open_fds)).and(assign(&b.full_fds_bits)),
        }
    });
}

/// fs/file.c:expand_fdtable: drop file_lock, allocate a bigger table, wait
/// for a grace period if the table is shared (so no lockless fd_install is
/// still writing into the old table), relock, copy, publish the new table
/// with rcu_assign_pointer and free the old one after a grace period.
fn expand_fdtable<'a>(
    fs: &'a Fs,
    t: &'a Task,
    g: SpinGuard<'a>,
    nr: u32,
) -> (SpinGuard<'a>, Result<(), Errno>) {
    let _f = t.enter("expand_fdtable");
    g.unlock();
    let new_ref = alloc_fdtable(fs, t, nr + 1);
    if fs.files.count.atomic_read(t) > 1 && !fs.flavor.has(Bug::ExpandSkipsSynchronizeRcu) {
        fs.rcu.synchronize_rcu(t);
    }
    let g = fs.files.file_lock.spin_lock(t);
    let cur_ref = fs.files_fdtable_locked();
    let cur = fs.tables.get(t, cur_ref);
    let new = fs.tables.get(t, new_ref);
    copy_fdtable(t, &g, &new, &cur);
    fs.files.fdt.rcu_assign_pointer(t, new_ref);
    t.tracepoint("expanded");
    if !cur.embedded {
        if fs.flavor.has(Bug::FreeFdtableWithoutGracePeriod) {
            fs.tables.free(t, cur_ref, "expand_fdtable");
        } else {
            let tables = fs.tables.clone();
            fs.rcu.call_rcu(
                t,
                Some("free_fdtable_rcu"),
                Val::with(cur_ref, Show::With(super::table_label)),
                move |t| {
                    let _f = t.enter("free_fdtable_rcu");
                    tables.free(t, cur_ref, "free_fdtable_rcu");
                },
            );
        }
    }
    // Pairs with smp_rmb() in fd_install: a reader that sees
    // resize_in_progress clear also sees the new table.
    smp_wmb(t);
    (g, Ok(()))
}

/// fs/file.c:expand_files: make sure fd `nr` fits in the table. Only one
/// resize at a time: others wait on resize_wait with the lock dropped.
pub fn expand_files<'a>(
    fs: &'a Fs,
    t: &'a Task,
    mut g: SpinGuard<'a>,
    nr: u32,
) -> (SpinGuard<'a>, Result<(), Errno>) {
    let _f = t.enter("expand_files");
    loop {
        let fdt = fs.tables.get(t, fs.files_fdtable_locked());
        if nr < fdt.max_fds {
            return (g, Ok(()));
        }
        if nr >= SYSCTL_NR_OPEN {
            t.note("fd {} ≥ sysctl_nr_open: -EMFILE", &[Val::dec(nr.into())]);
            return (g, Err(Errno::Emfile));
        }
        // Only file_lock holders write resize_in_progress: the latest value
        // is the one a locked reader sees.
        if fs.files.resize_in_progress.peek() != 0 {
            t.tracepoint("resize_wait");
            g.unlock();
            // wait_event(resize_wait, !resize_in_progress), then relock and
            // repeat. The resizer clears the flag under file_lock before its
            // wake_up_all, so the condition is re-checked under file_lock
            // (the same edge, without modelling the wait queue).
            t.might_sleep("wait_event", Some("resize_wait"));
            crate::sync::yield_now();
            g = fs.files.file_lock.spin_lock(t);
            continue;
        }
        fs.files.resize_in_progress.write_once(t, 1);
        let (g2, r) = expand_fdtable(fs, t, g, nr);
        fs.files.resize_in_progress.write_once(t, 0);
        return (g2, r);
    }
}
