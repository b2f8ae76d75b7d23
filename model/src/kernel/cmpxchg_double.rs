//! Double-width compare-and-exchange (cmpxchg16b / `try_cmpxchg128`,
//! `this_cpu_try_cmpxchg128`; arch/x86/include/asm/cmpxchg_64.h,
//! mm/slab.h `freelist_aba_t`, v6.12).
//!
//! Two adjacent words are compared with expected values and, if both match,
//! replaced indivisibly. loom has no `AtomicU128` (tokio-rs/loom#387), so the
//! pair is packed into one 64-bit engine word: the low `lo_bits` hold the
//! first word (a freelist index), the rest the second (a tid). Models keep
//! values small, so the packing is exact.
//!
//! Two forms: the LOCK-prefixed [`DoubleWord::cmpxchg_double`] is atomic
//! across CPUs and fully ordered (a value-returning atomic); the `this_cpu`
//! form [`DoubleWord::this_cpu_cmpxchg_double`] is atomic only against the
//! local CPU (interrupts cannot split it) and implies no barrier. Only code
//! running on the owning CPU may use it on a per-CPU pair; that discipline is
//! the model's, as in the kernel.

use super::atomic::Atomic;
use crate::exec::{Counter, Task};

/// A pair of words updated together.
pub struct DoubleWord {
    word: Atomic,
    lo_bits: u32,
    lo_name: String,
    hi_name: String,
}

impl DoubleWord {
    /// A pair named `lo_name`/`hi_name` (e.g. `c->freelist`/`c->tid`) with the
    /// first word in the low `lo_bits` bits of the packed engine word.
    pub fn new(lo_name: &str, hi_name: &str, lo_bits: u32, lo: u64, hi: u64) -> DoubleWord {
        assert!((1..64).contains(&lo_bits), "the low word needs 1..=63 bits");
        let dw = DoubleWord {
            word: Atomic::new(format!("{{{lo_name},{hi_name}}}"), 0),
            lo_bits,
            lo_name: lo_name.to_string(),
            hi_name: hi_name.to_string(),
        };
        let packed = dw.pack(lo, hi);
        DoubleWord {
            word: Atomic::new(dw.word.name().to_string(), packed),
            ..dw
        }
    }

    fn pack(&self, lo: u64, hi: u64) -> u64 {
        assert!(
            lo < 1 << self.lo_bits && hi < 1 << (64 - self.lo_bits),
            "pair value too wide"
        );
        hi << self.lo_bits | lo
    }

    fn unpack(&self, w: u64) -> (u64, u64) {
        (w & ((1 << self.lo_bits) - 1), w >> self.lo_bits)
    }

    /// Both words (ghost, for observers).
    pub fn peek(&self) -> (u64, u64) {
        self.unpack(self.word.peek())
    }

    /// READ_ONCE of the first word.
    pub fn read_lo(&self, t: &Task) -> u64 {
        self.unpack(self.word.read_once(t)).0
    }

    /// READ_ONCE of the second word.
    pub fn read_hi(&self, t: &Task) -> u64 {
        self.unpack(self.word.read_once(t)).1
    }

    /// A plain store of the first word by its only writer (e.g. the slow
    /// path with IRQs off): the second word is untouched.
    pub fn write_lo(&self, t: &Task, lo: u64) {
        let (_, hi) = self.peek();
        self.word.write_once(t, self.pack(lo, hi));
    }

    /// A plain store of the second word by its only writer.
    pub fn write_hi(&self, t: &Task, hi: u64) {
        let (lo, _) = self.peek();
        self.word.write_once(t, self.pack(lo, hi));
    }

    fn describe(&self, old: (u64, u64), new: (u64, u64)) -> String {
        format!(
            "{}: {}→{}, {}: {}→{}",
            self.lo_name, old.0, new.0, self.hi_name, old.1, new.1
        )
    }

    /// cmpxchg_double / try_cmpxchg128 with LOCK: cross-CPU, fully ordered.
    pub fn cmpxchg_double(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        t.cost(Counter::CmpxchgDouble, 1);
        t.step(format!("cmpxchg_double({})", self.describe(old, new)));
        let (o, n) = (self.pack(old.0, old.1), self.pack(new.0, new.1));
        self.word.cmpxchg(t, o, n) == o
    }

    /// this_cpu_try_cmpxchg128 (no LOCK prefix): atomic against the local
    /// CPU only, no ordering.
    pub fn this_cpu_cmpxchg_double(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        t.cost(Counter::CmpxchgDouble, 1);
        t.step(format!(
            "this_cpu_cmpxchg_double({})",
            self.describe(old, new)
        ));
        let (o, n) = (self.pack(old.0, old.1), self.pack(new.0, new.1));
        self.word.cmpxchg_relaxed(t, o, n) == o
    }
}
