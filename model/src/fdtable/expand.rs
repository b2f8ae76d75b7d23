//! Growing the table: expand_files, expand_fdtable, alloc_fdtable,
//! copy_fdtable, free_fdtable_rcu (fs/file.c; read at v7.1-rc1 ef3da345,
//! where alloc_fdtable takes the number of slots wanted and returns an
//! ERR_PTR since 1d3b4bec3ce5, v6.13).

use crate::kernel::atomic::smp_wmb;
use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{Effect, Part, Parts, Show, Val};

use super::{Base, Bug, Errno, FdTable, Fs, BITS_PER_LONG};

/// The size alloc_fdtable gives a table for `slots_wanted` fds: the next
/// power of two, at least two words (the kernel's smallest is 1 KiB of
/// pointers), cut down to a multiple of BITS_PER_LONG at or below
/// `sysctl_nr_open` when it is larger; -EMFILE when that is too small.
pub(super) fn fdtable_size(fs: &Fs, t: &Task, slots_wanted: u32) -> Result<u32, Errno> {
    let mut nr = slots_wanted.next_power_of_two().max(2 * BITS_PER_LONG);
    let nr_open = fs.sysctl_nr_open.read_once(t) as u32;
    if nr > nr_open {
        nr = nr_open / BITS_PER_LONG * BITS_PER_LONG;
        if nr < slots_wanted && !fs.flavor.has(Bug::AllocFdtableTrustsSize) {
            t.tracepoint("alloc_fdtable_emfile");
            t.note(
                "sysctl_nr_open {} leaves {} slots < {} wanted: -EMFILE",
                &[
                    Val::dec(nr_open.into()),
                    Val::dec(nr.into()),
                    Val::dec(slots_wanted.into()),
                ],
            );
            return Err(Errno::Emfile);
        }
    }
    Ok(nr)
}

/// fs/file.c:alloc_fdtable: a table for at least `slots_wanted` fds (see
/// [`fdtable_size`]); its slots are NULL until copy_fdtable fills them.
fn alloc_fdtable(fs: &Fs, t: &Task, slots_wanted: u32) -> Result<u64, Errno> {
    let _f = t.enter("alloc_fdtable");
    let max_fds = fdtable_size(fs, t, slots_wanted)?;
    let next = fs.tables.count() + 1;
    let label = format!("fdtable#{next}");
    Ok(fs.tables.alloc(
        t,
        || FdTable::new(&fs.files.file_lock, &label, max_fds, &[], false),
        |_| {},
    ))
}

/// fs/file.c:copy_fdtable: copy the slot pointers and the bitmaps of `old`
/// into `new` (file_lock held). The slot loads are marked: fd_install
/// writes slots without the lock.
fn copy_fdtable(fs: &Fs, t: &Task, g: &SpinGuard<'_>, new: &FdTable, old: &FdTable) {
    let _f = t.enter("copy_fdtable");
    for i in 0..old.max_fds {
        let f = old.fd[i as usize].rcu_dereference(t);
        if f != 0 {
            fs.slot(t, new, i).write_once(t, f);
        }
    }
    let src = old.bits.get(g, |b| b.clone());
    let _c = t.enter("copy_fd_bitmaps");
    new.bits.apply(g, |b| {
        let n = old.max_fds.min(new.max_fds);
        b.open_fds.copy_from(&src.open_fds, n);
        b.close_on_exec.copy_from(&src.close_on_exec, n);
        b.full_fds_bits
            .copy_from(&src.full_fds_bits, n / BITS_PER_LONG);
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
/// still writing into the old table), relock; on an allocation error return
/// it (lock held), else copy, publish the new table with rcu_assign_pointer
/// and free the old one after a grace period.
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
    let new_ref = match new_ref {
        Ok(r) => r,
        Err(e) => return (g, Err(e)),
    };
    let cur_ref = fs.files_fdtable_locked();
    let cur = fs.tables.get(t, cur_ref);
    let new = fs.tables.get(t, new_ref);
    if fs.flavor.has(Bug::ExpandPublishesBeforeCopy) {
        fs.files.fdt.rcu_assign_pointer(t, new_ref);
        copy_fdtable(fs, t, &g, &new, &cur);
    } else {
        copy_fdtable(fs, t, &g, &new, &cur);
        fs.files.fdt.rcu_assign_pointer(t, new_ref);
    }
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

/// fs/file.c:expand_files: make sure fd `nr` fits in the table, or -EMFILE
/// when `nr >= sysctl_nr_open`. Only one resize at a time: others wait on
/// resize_wait with the lock dropped. The v7.1-rc1 copy tests
/// resize_in_progress before sysctl_nr_open; v6.10 (and v6.13, as the
/// context of "expand_files(): simplify calling conventions", 7 Oct 2024,
/// shows) the other way round, which the v6.10 base keeps. The commit that
/// swapped them was not identified.
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
        if fs.flavor.base == Base::V6_10 && nr_open_exceeded(fs, t, nr) {
            return (g, Err(Errno::Emfile));
        }
        // Only file_lock holders write resize_in_progress: the latest value
        // is the one a locked reader sees.
        if fs.files.resize_in_progress.peek() != 0 {
            t.tracepoint("resize_wait");
            g.unlock();
            // wait_event(resize_wait, !resize_in_progress), then relock and
            // repeat: the waiter sleeps until the resizer's wake_up_all
            // (it blocks on the engine mutex the resizer holds while
            // resize_in_progress is set, so no engine spins on it), and the
            // condition is re-checked under file_lock.
            t.might_sleep("wait_event", Some("resize_wait"));
            drop(fs.resize_wait.lock());
            g = fs.files.file_lock.spin_lock(t);
            continue;
        }
        if fs.flavor.base == Base::Current && nr_open_exceeded(fs, t, nr) {
            return (g, Err(Errno::Emfile));
        }
        let wake = fs.resize_wait.lock();
        fs.files.resize_in_progress.write_once(t, 1);
        let (g2, r) = expand_fdtable(fs, t, g, nr);
        fs.files.resize_in_progress.write_once(t, 0);
        // wake_up_all(&files->resize_wait)
        drop(wake);
        return (g2, r);
    }
}

/// expand_files' "Can we expand?" test: `nr >= sysctl_nr_open`.
fn nr_open_exceeded(fs: &Fs, t: &Task, nr: u32) -> bool {
    let nr_open = fs.sysctl_nr_open.read_once(t) as u32;
    if nr >= nr_open {
        t.note(
            "fd {} ≥ sysctl_nr_open {}: -EMFILE",
            &[Val::dec(nr.into()), Val::dec(nr_open.into())],
        );
        return true;
    }
    false
}
