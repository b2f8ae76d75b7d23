//! fd allocation: alloc_fd, find_next_fd, __set_open_fd, __clear_open_fd,
//! __put_unused_fd, put_unused_fd (fs/file.c, v6.10 and v6.12).

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

/// The trace's view of a change of `files->next_fd`.
fn next_fd_part(old: u32, new: u32) -> Part {
    Part::Store {
        var: "next_fd",
        old: Val::dec(old.into()),
        new: Val::dec(new.into()),
    }
}

/// fs/file.c:__clear_open_fd (v6.10: always clears the word's full bit;
/// v6.12, patch 2/3: clears it only if test_bit finds it set).
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

/// fs/file.c:__put_unused_fd (v6.12): clear the open bit and lower next_fd
/// to the freed fd. Caller holds file_lock. One step.
pub(super) fn __put_unused_fd(fs: &Fs, t: &Task, g: &SpinGuard<'_>, fdt: &FdTable, fd: u32) {
    let _f = t.enter("__put_unused_fd");
    let lowered = if fs.flavor.has(Bug::PutUnusedFdKeepsNextFd) {
        None
    } else {
        fs.files.next_fd.update(g, |n| {
            let old = *n;
            (fd < old).then(|| {
                *n = fd;
                old
            })
        })
    };
    fdt.bits.apply(g, |b| {
        let mut parts = clear_open_bits(fs, t, b, fd);
        fs.ghost().claims.remove(&fd);
        if let Some(old) = lowered {
            parts = parts.and(next_fd_part(old, fd));
        }
        Effect::Update { scope: None, parts }
    });
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
/// search open_fds. v6.12 (patch 3/3): first search the word that contains
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

/// fs/file.c:alloc_fd: allocate the lowest free fd ≥ `start` below `end`
/// (RLIMIT_NOFILE), growing the table when needed. The decision and the
/// setting of the bit are one critical section of file_lock.
pub fn alloc_fd(fs: &Fs, t: &Task, start: u32, cloexec: bool) -> Result<u32, Errno> {
    let _f = t.enter("alloc_fd");
    let end = fs.rlimit_nofile.read_once(t) as u32;
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
        // The v1 fast path: word 0 not full → its first zero bit at or after
        // the candidate is taken at once, before any limit check.
        let v1_hit = fs.flavor.has(Bug::RlimitSkippedByFastPath)
            && fdt.bits.get(&g, |b| {
                t.cost(crate::exec::Counter::BitmapWordsRead, 1);
                !b.open_fds.word_is_full(0) && (fd..BITS_PER_LONG).any(|i| !b.open_fds.bit(i))
            });
        if v1_hit {
            fd = (fd..BITS_PER_LONG)
                .find(|&i| open_before >> i & 1 == 0)
                .unwrap_or(fd);
            t.note("v1 fast path: word 0 not full → {}", &[Val::dec(fd.into())]);
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
        if fs.flavor.base == Base::V6_10 && !fs.flavor.has(Bug::RlimitSkippedByFastPath) {
            // The sanity check removed by patch 1/3: a stale pointer in a
            // free slot is reported and cleared. It never fires here.
            let _f = t.enter("alloc_fd sanity check");
            fdt.fd[fd as usize].rcu_access_pointer(t);
        }
        let advance = start <= next_fd;
        if advance {
            fs.files.next_fd.update(&g, |n| *n = fd + 1);
        }
        let _s = t.enter("__set_open_fd");
        fdt.bits.apply(&g, |b| {
            let mut parts = set_open_bits(b, fd, cloexec);
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
            if advance {
                parts = parts.and(next_fd_part(next_fd, fd + 1));
            }
            Effect::Update { scope: None, parts }
        });
        drop(_s);
        g.unlock();
        return Ok(fd);
    }
}
