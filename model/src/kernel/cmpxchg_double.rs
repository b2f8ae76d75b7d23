//! Double-width compare-and-exchange on a `freelist_aba_t` pair, as
//! mm/slub.c (v6.18) uses it: `try_cmpxchg_freelist` on a slab's
//! `{freelist, counters}` (`__update_freelist_fast`) and
//! `this_cpu_try_cmpxchg_freelist` on a CPU's `{freelist, tid}`
//! (`__update_cpu_freelist_fast`); on x86-64, cmpxchg16b with and without
//! the LOCK prefix (brief §7.11; the arch headers were not re-read).
//!
//! Two adjacent words are compared with expected values and, if both match,
//! replaced indivisibly. loom has no `AtomicU128` (tokio-rs/loom#387), so the
//! pair is packed into one 64-bit engine word: the low `lo_bits` hold the
//! first word (a freelist index), the rest the second (a tid). Models keep
//! values small, so the packing is exact.
//!
//! Two forms, each named as the 64-bit kernel names the primitive the slub.c
//! macro expands to (mm/slab.h v6.18: `try_cmpxchg_freelist` is
//! `try_cmpxchg128`, `this_cpu_try_cmpxchg_freelist` is
//! `this_cpu_try_cmpxchg128`): the LOCK-prefixed
//! [`DoubleWord::try_cmpxchg128`] is atomic
//! across CPUs and fully ordered (a value-returning atomic); the `this_cpu`
//! form [`DoubleWord::this_cpu_try_cmpxchg128`] is atomic only against the
//! local CPU (interrupts cannot split it) and implies no barrier: it is a
//! load and a store with no interrupt point between them, so a write by
//! another CPU in between is lost. Only code running on the owning CPU may
//! use it on a per-CPU pair; that discipline is the model's, as in the
//! kernel, and breaking it shows as a lost update.
//!
//! The two words are separate in the kernel (`c->freelist`, `c->tid`): a
//! plain store of one ([`DoubleWord::write_lo`]) keeps the other half as the
//! latest store left it, so it never undoes another writer's update of the
//! other word.

use super::atomic::Atomic;
use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::trace::{intern, Name, Show, Val};

/// A pair of words updated together.
pub struct DoubleWord {
    word: Atomic,
    lo_bits: u32,
    /// The two words' own names and forms, for steps that touch one of them
    /// (`c0->freelist`, `c0->tid`); without them such steps show the pair.
    halves: Option<[(Name, Show); 2]>,
}

fn pack(lo_bits: u32, lo: u64, hi: u64) -> u64 {
    assert!(
        lo < 1 << lo_bits && hi < 1 << (64 - lo_bits),
        "pair value too wide"
    );
    hi << lo_bits | lo
}

impl DoubleWord {
    /// A pair named as the kernel's union names it (e.g. `c->freelist_tid`)
    /// with the first word in the low `lo_bits` bits of the packed engine
    /// word; the trace shows values as `{lo, hi}`.
    pub fn new(name: &str, lo_bits: u32, lo: u64, hi: u64) -> DoubleWord {
        assert!((1..64).contains(&lo_bits), "the low word needs 1..=63 bits");
        DoubleWord::with_format(
            name,
            lo_bits,
            lo,
            hi,
            Show::Pair {
                lo_bits: lo_bits as u8,
            },
        )
    }

    /// Like [`DoubleWord::new`], but the trace renders the packed word with
    /// `show` (e.g. `{obj1, tid 2}`) instead of as one number.
    pub fn with_format(name: &str, lo_bits: u32, lo: u64, hi: u64, show: Show) -> DoubleWord {
        assert!((1..64).contains(&lo_bits), "the low word needs 1..=63 bits");
        DoubleWord {
            word: Atomic::with_format(name, pack(lo_bits, lo, hi), show),
            lo_bits,
            halves: None,
        }
    }

    /// This pair with a name and a form for each word: a step that reads or
    /// writes one word shows that word alone (`READ_ONCE(c0->tid) = 2`).
    pub fn with_halves(self, lo: (&str, Show), hi: (&str, Show)) -> DoubleWord {
        DoubleWord {
            halves: Some([(intern(lo.0), lo.1), (intern(hi.0), hi.1)]),
            ..self
        }
    }

    /// How a step shows word `i` (0: first, 1: second), if it has its own
    /// name.
    fn half(&self, i: usize) -> Option<(Name, impl Fn(u64) -> Val + '_)> {
        self.halves.map(|h| {
            let (name, show) = h[i];
            let f = move |w: u64| {
                let (lo, hi) = self.unpack(w);
                Val::with(if i == 0 { lo } else { hi }, show)
            };
            (name, f)
        })
    }

    fn read_half(&self, t: &Task, i: usize) -> u64 {
        let w = match self.half(i) {
            Some((name, show)) => self.word.read_once_part(t, name, &show),
            None => self.word.read_once(t),
        };
        let (lo, hi) = self.unpack(w);
        if i == 0 {
            lo
        } else {
            hi
        }
    }

    fn write_half(&self, t: &Task, i: usize, v: u64) {
        let f = |w: u64| {
            let (lo, hi) = self.unpack(w);
            if i == 0 {
                self.pack(v, hi)
            } else {
                self.pack(lo, v)
            }
        };
        match self.half(i) {
            Some((name, show)) => self.word.write_once_update(t, f, "", Some((name, &show))),
            None => self.word.write_once_update(t, f, "", None),
        }
    }

    fn pack(&self, lo: u64, hi: u64) -> u64 {
        pack(self.lo_bits, lo, hi)
    }

    fn unpack(&self, w: u64) -> (u64, u64) {
        (w & ((1 << self.lo_bits) - 1), w >> self.lo_bits)
    }

    /// Both words (ghost, for observers).
    pub fn peek(&self) -> (u64, u64) {
        self.unpack(self.word.peek())
    }

    /// Both words once every writer has been joined (an engine load; see
    /// `Atomic::value_at_quiescence`).
    pub fn value_at_quiescence(&self) -> (u64, u64) {
        self.unpack(self.word.value_at_quiescence())
    }

    /// READ_ONCE of the first word.
    pub fn read_lo(&self, t: &Task) -> u64 {
        self.read_half(t, 0)
    }

    /// READ_ONCE of the second word.
    pub fn read_hi(&self, t: &Task) -> u64 {
        self.read_half(t, 1)
    }

    /// A plain store of the first word by its only writer (e.g. the slow
    /// path with IRQs off): the second word is untouched.
    pub fn write_lo(&self, t: &Task, lo: u64) {
        self.write_half(t, 0, lo);
    }

    /// A plain store of the second word by its only writer.
    pub fn write_hi(&self, t: &Task, hi: u64) {
        self.write_half(t, 1, hi);
    }

    /// try_cmpxchg128 (cmpxchg_double before v6.6) with LOCK: cross-CPU,
    /// fully ordered.
    pub fn try_cmpxchg128(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        let (o, n) = (self.pack(old.0, old.1), self.pack(new.0, new.1));
        self.word
            .cas(t, true, o, n, "try_cmpxchg128", Counter::CmpxchgDouble)
            == o
    }

    /// this_cpu_try_cmpxchg128 (no LOCK prefix): atomic against the local
    /// CPU only (no interrupt of this CPU can split it), no ordering. Another
    /// CPU writing the pair between its load and its store loses its update:
    /// only the owning CPU may use it on a per-CPU pair, as in the kernel.
    pub fn this_cpu_try_cmpxchg128(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        let (o, n) = (self.pack(old.0, old.1), self.pack(new.0, new.1));
        self.word
            .cas_this_cpu(t, o, n, "this_cpu_try_cmpxchg128", Counter::CmpxchgDouble)
            == o
    }
}
