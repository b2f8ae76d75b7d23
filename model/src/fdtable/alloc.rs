//! fd allocation: alloc_fd, find_next_fd, __set_open_fd, __clear_open_fd,
//! __put_unused_fd, put_unused_fd (fs/file.c; current read at v7.1-rc1
//! ef3da345, v6.10 from Yu Ma's v5 patch 1/3 diff against it).

use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{Effect, Part, Parts, Val};

use super::{expand, AllocEvent, Base, Bug, Claim, Errno, FdBits, FdTable, Fs, BITS_PER_LONG};

/// __set_open_fd's bit work: set the open bit and close-on-exec as asked,
/// and mark the word full in full_fds_bits when it just filled up.
pub(super) fn set_open_bits(b: &mut FdBits, fd: u32, cloexec: bool) -> Parts {
    let mut effect = Parts::one(b.open_fds.set_bit(fd));
    if cloexec {
        b.close_on_exec.set_bit(fd);
    } else {
        b.close_on_exec.clear_bit(fd);
    }
    let word = fd / BITS_PER_LONG;
    if b.open_fds.word_is_full(word) {
        effect = effect.and(b.full_fds_bits.set_bit(word));
    }
    effect
}

/// fs/file.c:__set_open_fd (file_lock held) as one step; the
/// SetOpenFdMarksFullFirst reordering takes two, the full bit first.
/// `ghost` runs inside the step that sets the open bit.
pub(super) fn __set_open_fd(
    fs: &Fs,
    t: &Task,
    g: &SpinGuard<'_>,
    fdt: &FdTable,
    fd: u32,
    cloexec: bool,
    ghost: impl FnOnce(),
) {
    let _s = t.enter("__set_open_fd");
    let word = fd / BITS_PER_LONG;
    let fills = fdt.bits.get(g, |b| {
        (0..BITS_PER_LONG)
            .all(|i| i + word * BITS_PER_LONG == fd || b.open_fds.bit(i + word * BITS_PER_LONG))
    });
    if fs.flavor.has(Bug::SetOpenFdMarksFullFirst) && fills {
        fdt.bits.apply(g, |b| Effect::Update {
            scope: None,
            parts: Parts::one(b.full_fds_bits.set_bit(word)),
        });
    }
    fdt.bits.apply(g, |b| {
        ghost();
        Effect::Update {
            scope: None,
            parts: set_open_bits(b, fd, cloexec),
        }
    });
}

/// The trace's view of a change of `files->next_fd`.
fn next_fd_part(old: u32, new: u32) -> Parts {
    Parts::one(Part::Store {
        var: "next_fd",
        old: Val::dec(old.into()),
        new: Val::dec(new.into()),
    })
}

/// `files->next_fd = new` under file_lock, as its own step.
fn set_next_fd(fs: &Fs, t: &Task, g: &SpinGuard<'_>, new: u32) {
    let old = fs.files.next_fd.update(g, |n| std::mem::replace(n, new));
    t.step(Effect::Update {
        scope: None,
        parts: next_fd_part(old, new),
    });
}

/// fs/file.c:__clear_open_fd (v6.10: always clears the word's full bit;
/// current, patch 2/3: clears it only if test_bit finds it set).
pub(super) fn clear_open_bits(fs: &Fs, t: &Task, b: &mut FdBits, fd: u32) -> Parts {
    let mut effect = Parts::one(b.open_fds.clear_bit(fd));
    let word = fd / BITS_PER_LONG;
    match fs.flavor.base {
        Base::V6_10 => effect = effect.and(b.full_fds_bits.clear_bit(word)),
        Base::Current => {
            let tested = if fs.flavor.has(Bug::ConditionalClearTestsWrongBit) {
                fd
            } else {
                word
            };
            if b.full_fds_bits.test_bit(t, tested) {
                effect = effect.and(b.full_fds_bits.clear_bit(word));
            }
        }
    }
    effect
}

/// fs/file.c:__put_unused_fd: __clear_open_fd, then lower next_fd to the
/// freed fd (two stores, each a step; file_lock held throughout).
pub(super) fn __put_unused_fd(fs: &Fs, t: &Task, g: &SpinGuard<'_>, fdt: &FdTable, fd: u32) {
    let _f = t.enter("__put_unused_fd");
    fdt.bits.apply(g, |b| {
        let parts = clear_open_bits(fs, t, b, fd);
        fs.ghost().claims.remove(&fd);
        Effect::Update { scope: None, parts }
    });
    let next_fd = fs.files.next_fd.get(g, |n| *n);
    if fd < next_fd && !fs.flavor.has(Bug::PutUnusedFdKeepsNextFd) {
        set_next_fd(fs, t, g, fd);
    }
}

/// fs/file.c:put_unused_fd: give back a reserved fd that was never installed.
pub fn put_unused_fd(fs: &Fs, t: &Task, fd: u32) {
    let _f = t.enter("put_unused_fd");
    let g = fs.files.file_lock.spin_lock(t);
    let fdt = fs.tables.get(t, fs.files_fdtable_locked());
    __put_unused_fd(fs, t, &g, &fdt, fd);
    g.unlock();
}

/// fs/file.c:find_next_fd: the lowest clear bit of open_fds at or after
/// `start`, or max_fds. v6.10: skip full words through full_fds_bits, then
/// search open_fds. Current (patch 3/3): first search the word that contains
/// `start`, from start's bit, and only on failure do the two-level search.
fn find_next_fd(fs: &Fs, t: &Task, g: &SpinGuard<'_>, fdt: &FdTable, start: u32) -> u32 {
    let _f = t.enter("find_next_fd");
    let maxfd = fdt.max_fds;
    let maxbit = maxfd / BITS_PER_LONG;
    let word = start / BITS_PER_LONG;
    let fd = fdt.bits.get(g, |b| {
        if fs.flavor.base == Base::Current {
            let base = word * BITS_PER_LONG;
            let from = if fs.flavor.has(Bug::FastPathIgnoresStartBit) {
                0
            } else {
                start % BITS_PER_LONG
            };
            let bit = b
                .open_fds
                .find_next_zero_bit(t, base + BITS_PER_LONG, base + from);
            if bit < base + BITS_PER_LONG {
                t.tracepoint("fast_path_hit");
                return if fs.flavor.has(Bug::FastPathDropsWordBase) {
                    bit - base
                } else {
                    bit
                };
            }
            t.tracepoint("fast_path_miss");
        }
        t.tracepoint("full_search");
        let bitbit = b.full_fds_bits.find_next_zero_bit(t, maxbit, word) * BITS_PER_LONG;
        if bitbit >= maxfd {
            return maxfd;
        }
        b.open_fds.find_next_zero_bit(t, maxfd, start.max(bitbit))
    });
    t.note(
        "search from {} → {}",
        &[Val::dec(start.into()), Val::dec(fd.into())],
    );
    fd
}

/// The v1 fast path (patch 1 of 14 Jun 2024): with word 0 of open_fds not
/// full, `find_next_zero_bit(open_fds, BITS_PER_LONG, fd)` is taken as the
/// answer, whatever it is: BITS_PER_LONG when no zero bit lies in
/// [fd, BITS_PER_LONG).
fn v1_fast_path(t: &Task, g: &SpinGuard<'_>, fdt: &FdTable, fd: u32) -> Option<u32> {
    let found = fdt.bits.get(g, |b| {
        t.cost(crate::exec::Counter::BitmapWordsRead, 1);
        (!b.open_fds.word_is_full(0)).then(|| b.open_fds.find_next_zero_bit(t, BITS_PER_LONG, fd))
    })?;
    t.tracepoint("v1_fast_path");
    t.note(
        "v1 fast path: word 0 not full → {}",
        &[Val::dec(found.into())],
    );
    Some(found)
}

/// fs/file.c:get_unused_fd_flags: alloc_fd(0, RLIMIT_NOFILE).
pub fn get_unused_fd_flags(fs: &Fs, t: &Task, cloexec: bool) -> Result<u32, Errno> {
    let _f = t.enter("get_unused_fd_flags");
    let end = fs.rlimit_nofile.read_once(t) as u32;
    alloc_fd(fs, t, 0, end, cloexec)
}

/// fs/file.c:alloc_fd: allocate the lowest free fd ≥ `start` below `end`
/// (the caller's RLIMIT_NOFILE), growing the table when needed. The
/// decision and the setting of the bit are one critical section of
/// file_lock; inside it next_fd is stored before __set_open_fd, as in the
/// kernel.
pub fn alloc_fd(fs: &Fs, t: &Task, start: u32, end: u32, cloexec: bool) -> Result<u32, Errno> {
    let _f = t.enter("alloc_fd");
    let mut g = fs.files.file_lock.spin_lock(t);
    loop {
        let fdt_ref = fs.files_fdtable_locked();
        let fdt = fs.tables.get(t, fdt_ref);
        let next_fd = fs.files.next_fd.get(&g, |n| *n);
        if start > next_fd {
            t.tracepoint("start_above_next_fd");
        }
        let mut fd = start.max(next_fd);
        let open_before = fdt.bits.get(&g, |b| b.open_fds.val().raw);
        let v1 = if fs.flavor.has(Bug::RlimitSkippedByFastPath) && fd < fdt.max_fds {
            v1_fast_path(t, &g, &fdt, fd)
        } else {
            None
        };
        if let Some(v1_fd) = v1 {
            fd = v1_fd;
        } else {
            if fd < fdt.max_fds {
                fd = find_next_fd(fs, t, &g, &fdt, fd);
            }
            if fd >= end {
                t.tracepoint("emfile");
                fs.ghost().allocs.push(AllocEvent {
                    thread: t.name(),
                    start,
                    end,
                    open_before,
                    result: Err(Errno::Emfile),
                });
                t.note(
                    "fd {} ≥ RLIMIT_NOFILE {}: -EMFILE",
                    &[Val::dec(fd.into()), Val::dec(end.into())],
                );
                g.unlock();
                return Err(Errno::Emfile);
            }
            if fd >= fdt.max_fds {
                let (g2, r) = expand::expand_files(fs, t, g, fd);
                g = g2;
                if let Err(e) = r {
                    g.unlock();
                    return Err(e);
                }
                continue;
            }
        }
        if start <= next_fd {
            set_next_fd(fs, t, &g, fd + 1);
        }
        __set_open_fd(fs, t, &g, &fdt, fd, cloexec, || {
            let mut gh = fs.ghost();
            gh.allocs.push(AllocEvent {
                thread: t.name(),
                start,
                end,
                open_before,
                result: Ok(fd),
            });
            gh.claims
                .entry(fd)
                .or_default()
                .push(Claim::Reserved { by: t.name() });
        });
        if fs.flavor.base == Base::V6_10 {
            sanity_check(fs, t, &fdt, fd);
        }
        g.unlock();
        return Ok(fd);
    }
}

/// The v6.10 "sanity check" at the end of alloc_fd's critical section (after
/// __set_open_fd; removed by patch 1/3): a non-NULL pointer in the slot just
/// allocated is reported and overwritten with NULL. It never fires while
/// every fd is installed exactly once.
fn sanity_check(fs: &Fs, t: &Task, fdt: &FdTable, fd: u32) {
    let _f = t.enter("alloc_fd sanity check");
    let slot = fs.slot(t, fdt, fd);
    if slot.rcu_access_pointer(t) != 0 {
        t.note("alloc_fd: slot {} not NULL!", &[Val::dec(fd.into())]);
        fs.ghost().installed.remove(&fd);
        slot.rcu_assign_pointer(t, 0);
    }
}
