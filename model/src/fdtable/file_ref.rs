//! The reference count of a `struct file`, per base: v6.10's `f_count`
//! (`atomic_long_t`, 0 = dead, taken with `atomic_long_inc_not_zero`) and
//! v6.13's `file_ref_t` (include/linux/file_ref.h and fs/file.c
//! `__file_ref_put`, read at the v7.1-rc1 `vfs-7.1-rc1.misc` merge
//! ef3da345 and file_ref.h 5370b43e; introduced by 08ef26ea9ab3 "fs: add
//! file_ref" and 90ee6ed776c0 "fs: port files to file_ref", v6.13).
//!
//! `file_ref_t` stores the count minus one, so one reference is
//! [`FILE_REF_ONEREF`] (0) and the last put lands on [`FILE_REF_NOREF`] (-1).
//! Everything from [`FILE_REF_RELEASED`] up is the dead zone: a get that
//! lands there fails and leaves the counter as it is, because the object
//! may already have been recycled for another file (SLAB_TYPESAFE_BY_RCU).
//! The last put turns NOREF into [`FILE_REF_DEAD`] with a cmpxchg, which
//! fails when a racing get revived the count: then that get's owner does
//! the final put.
//!
//! C11 stand-ins: `atomic_long_add_negative` and `atomic_long_dec_return`
//! are the fully ordered `atomic_add_return` / `atomic_sub_return`; the
//! kernel's `cmpxchg_release` is a fully ordered `cmpxchg` here (stronger:
//! may miss a bug that needs the weaker order, never a false alarm).

use crate::exec;
use crate::kernel::rcu::ObjRef;
use crate::kernel::task::Task;

use super::{Base, Bug, Fs};

pub const FILE_REF_ONEREF: u64 = 0;
pub const FILE_REF_MAXREF: u64 = 0x7FFF_FFFF_FFFF_FFFF;
pub const FILE_REF_SATURATED: u64 = 0xA000_0000_0000_0000;
pub const FILE_REF_RELEASED: u64 = 0xC000_0000_0000_0000;
pub const FILE_REF_DEAD: u64 = 0xE000_0000_0000_0000;
pub const FILE_REF_NOREF: u64 = 0xFFFF_FFFF_FFFF_FFFF;

/// How traces show a `file_ref_t` word: by the header's names.
pub(crate) fn file_ref_label(v: u64) -> String {
    match v {
        FILE_REF_NOREF => "NOREF".to_string(),
        FILE_REF_DEAD => "DEAD".to_string(),
        v if v >= FILE_REF_DEAD => format!("DEAD+{}", v - FILE_REF_DEAD),
        v if v >= FILE_REF_RELEASED => format!("DEAD-{}", FILE_REF_DEAD - v),
        FILE_REF_ONEREF => "ONEREF".to_string(),
        v if v <= FILE_REF_MAXREF => format!("ONEREF+{v}"),
        v => format!("{v:#x}"),
    }
}

/// The raw word that stands for `n` references in `base`'s counter.
pub(crate) fn raw_for(base: Base, n: u64) -> u64 {
    match base {
        Base::V6_10 => n,
        Base::Current => n.wrapping_sub(1),
    }
}

/// include/linux/file_ref.h:file_ref_read (v6.13+): the number of references
/// a raw word stands for, 0 in the dead zone; v6.10: `f_count` itself.
pub fn file_ref_read(base: Base, raw: u64) -> u64 {
    match base {
        Base::V6_10 => raw,
        Base::Current if raw >= FILE_REF_RELEASED => 0,
        Base::Current => raw + 1,
    }
}

/// include/linux/file_ref.h:file_ref_init (v6.13+; v6.10: atomic_long_set
/// of f_count): set the count of a (re)initialised file to one reference.
/// The kernel's plain atomic_long_set is a relaxed cmpxchg loop here: loom
/// lets a plain store land inside a chain of RMWs on the same word
/// (tokio-rs/loom#254), which would let a stale reader's increment of the
/// old, dead count survive the store (a false livelock of fget). As an RMW
/// the store is ordered after every increment it overwrites, as on a CPU.
/// The store assumes nobody holds a reference on the memory: a reader whose
/// get succeeded before it loses that reference (`file_ref_balanced`).
pub fn file_ref_init(fs: &Fs, t: &Task, file: ObjRef, f: &super::File) {
    let one = raw_for(fs.flavor.base, 1);
    let mut seen = f.f_ref.atomic_read(t);
    // The store and the ledger's look are one step, also for real threads.
    let _step = exec::atomic_section();
    loop {
        let now = f.f_ref.cmpxchg_relaxed(t, seen, one);
        if now == seen {
            break;
        }
        seen = now;
        crate::sync::yield_now();
    }
    let holder = fs
        .ghost()
        .reader_refs
        .iter()
        .find(|&&(_, f)| f == file)
        .map(|&(who, _)| who);
    if let Some(holder) = holder {
        t.violation(
            "file_ref_balanced",
            format!(
                "file_ref_init on {} overwrote the count while {holder} holds a reference on it",
                fs.filp.label(file)
            ),
        );
    }
}

/// Ghost, in the step of a put's decrement (the caller's atomic section): a
/// reader that held a reference on `file` holds it no more.
fn reader_put(fs: &Fs, t: &Task, file: ObjRef) {
    let mut gh = fs.ghost();
    if let Some(i) = gh.reader_refs.iter().position(|&r| r == (t.name(), file)) {
        gh.reader_refs.remove(i);
    }
}

/// include/linux/file_ref.h:file_ref_get (v6.13+): a fully ordered add that
/// fails only when the result is negative, never touching the counter
/// again; v6.10: `atomic_long_inc_not_zero(&f_count)`. The
/// FileRefGetRewritesDead mutant puts a failed get's counter back to DEAD.
pub fn file_ref_get(fs: &Fs, t: &Task, file: ObjRef) -> bool {
    let _f = t.enter("file_ref_get");
    let f = fs.filp.get(t, file);
    match fs.flavor.base {
        Base::V6_10 => f.f_ref.atomic_inc_not_zero(t),
        Base::Current => {
            let v = f.f_ref.atomic_add_return(t, 1);
            let ok = (v as i64) >= 0;
            if !ok && fs.flavor.has(Bug::FileRefGetRewritesDead) {
                f.f_ref.atomic_set(t, FILE_REF_DEAD);
            }
            ok
        }
    }
}

/// include/linux/file_ref.h:file_ref_inc (get_file): one more reference for
/// a caller that already holds one (relaxed).
pub fn file_ref_inc(fs: &Fs, t: &Task, file: ObjRef) {
    fs.filp.get(t, file).f_ref.atomic_add(t, 1);
}

/// include/linux/file_ref.h:file_ref_put_close (current; v6.10 and v6.13:
/// plain file_ref_put semantics): the put of close(2) and filp_close, which
/// expects to drop the last reference: a cmpxchg loop that turns ONEREF
/// straight into DEAD (no NOREF window for a get to revive) and any other
/// count into one less. A count already below zero is a bad put. The
/// FileRefPutCloseWithoutCmpxchg mutant reads the count and, at ONEREF,
/// stores DEAD with a plain atomic_long_set.
pub fn file_ref_put_close(fs: &Fs, t: &Task, file: ObjRef) -> bool {
    let _f = t.enter("file_ref_put_close");
    let f = fs.filp.get(t, file);
    let mut old = f.f_ref.atomic_read(t);
    loop {
        if (old as i64) < 0 {
            return __file_ref_put_badval(fs, t, file, old);
        }
        let new = if old == FILE_REF_ONEREF {
            FILE_REF_DEAD
        } else {
            old - 1
        };
        if fs.flavor.has(Bug::FileRefPutCloseWithoutCmpxchg) && new == FILE_REF_DEAD {
            f.f_ref.atomic_set(t, FILE_REF_DEAD);
            return true;
        }
        let seen = f.f_ref.cmpxchg(t, old, new);
        if seen == old {
            return new == FILE_REF_DEAD;
        }
        old = seen;
        crate::sync::yield_now();
    }
}

/// fs/file.c:__file_ref_put_badval: a put that found the count in the dead
/// zone is imbalanced — the kernel's WARN_ONCE, raised here as
/// `file_ref_balanced` (the kernel then sets DEAD back and goes on); one in
/// the saturation zone restores the saturation value. Never the last put.
fn __file_ref_put_badval(fs: &Fs, t: &Task, file: ObjRef, cnt: u64) -> bool {
    let _f = t.enter("__file_ref_put_badval");
    if cnt >= FILE_REF_RELEASED {
        t.violation(
            "file_ref_balanced",
            format!(
                "WARN_ONCE in __file_ref_put_badval: imbalanced put on {} (count {})",
                fs.filp.label(file),
                file_ref_label(cnt)
            ),
        );
    } else if cnt > FILE_REF_MAXREF {
        fs.filp.get(t, file).f_ref.atomic_set(t, FILE_REF_SATURATED);
    }
    false
}

/// include/linux/file_ref.h:file_ref_put + fs/file.c:__file_ref_put (v6.13+):
/// with preemption off, a fully ordered decrement; a non-negative result is
/// not the last reference. At NOREF a cmpxchg to DEAD decides: it fails if
/// a racing get revived the count (then the caller must not free). Anything
/// else below zero is a put in the saturation or dead zone
/// (`__file_ref_put_badval`). v6.10: `atomic_long_dec_and_test(&f_count)`.
pub fn file_ref_put(fs: &Fs, t: &Task, file: ObjRef) -> bool {
    let _f = t.enter("file_ref_put");
    let f = fs.filp.get(t, file);
    if fs.flavor.base == Base::V6_10 {
        let _step = exec::atomic_section();
        let last = f.f_ref.atomic_dec_and_test(t);
        reader_put(fs, t, file);
        return last;
    }
    t.set_preempt_count(t.preempt_count() + 1);
    let cnt = {
        let _step = exec::atomic_section();
        let cnt = f.f_ref.atomic_sub_return(t, 1);
        reader_put(fs, t, file);
        cnt
    };
    let last = if (cnt as i64) >= 0 {
        false
    } else if cnt == FILE_REF_NOREF {
        if fs.flavor.has(Bug::FileRefPutIgnoresRevival) {
            f.f_ref.atomic_set(t, FILE_REF_DEAD);
            true
        } else {
            let _s = t.enter("__file_ref_put");
            let ok = f.f_ref.cmpxchg(t, FILE_REF_NOREF, FILE_REF_DEAD) == FILE_REF_NOREF;
            if !ok {
                t.tracepoint("file_ref_put_revived");
            }
            ok
        }
    } else {
        __file_ref_put_badval(fs, t, file, cnt)
    };
    t.set_preempt_count(t.preempt_count().saturating_sub(1));
    last
}
