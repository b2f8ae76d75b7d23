//! Bitmaps with the kernel's non-atomic bit operations and search
//! (include/linux/bitops.h `__set_bit`/`__clear_bit`/`test_bit`, not re-read;
//! include/linux/find.h `find_next_zero_bit`/`find_next_bit` as read at
//! torvalds/linux 375c4d158394, a v6.x-era copy; merge not identified).
//!
//! The word width is a parameter (`BITS_PER_LONG`): models use small words
//! (e.g. 4 bits) so "a full word" and "the next word" are reachable in a
//! handful of operations. `__set_bit`/`__clear_bit` are non-atomic
//! read-modify-writes, so a bitmap is plain data kept in a
//! [`Locked`](super::spinlock::Locked) cell; searches charge the words they
//! read to the caller's cost counters.

use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::trace::{intern, Name, Part, Show, Val};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitmap {
    name: Name,
    word_bits: u32,
    nbits: u32,
    words: Vec<u64>,
}

impl Bitmap {
    /// An all-zero bitmap of `nbits` bits in words of `word_bits` bits.
    pub fn new(name: impl AsRef<str>, word_bits: u32, nbits: u32) -> Bitmap {
        assert!(
            (1..=64).contains(&word_bits),
            "word width must be 1..=64 bits"
        );
        Bitmap {
            name: intern(name.as_ref()),
            word_bits,
            nbits,
            words: vec![0; nbits.div_ceil(word_bits) as usize],
        }
    }

    pub fn name(&self) -> Name {
        self.name
    }
    pub fn nbits(&self) -> u32 {
        self.nbits
    }
    pub fn word_bits(&self) -> u32 {
        self.word_bits
    }
    pub fn nwords(&self) -> u32 {
        self.words.len() as u32
    }

    fn full_mask(&self, word: u32) -> u64 {
        let bits_in_word = (self.nbits - word * self.word_bits).min(self.word_bits);
        if bits_in_word == 64 {
            u64::MAX
        } else {
            (1u64 << bits_in_word) - 1
        }
    }

    /// Word `i` as stored (observers and copies).
    pub fn word(&self, i: u32) -> u64 {
        self.words[i as usize]
    }

    /// Whether every bit of word `i` is set.
    pub fn word_is_full(&self, i: u32) -> bool {
        self.words[i as usize] == self.full_mask(i)
    }

    /// Bit value without charging a word read (observers).
    pub fn bit(&self, bit: u32) -> bool {
        bit < self.nbits
            && self.words[(bit / self.word_bits) as usize] >> (bit % self.word_bits) & 1 == 1
    }

    /// test_bit: one marked word load.
    pub fn test_bit(&self, t: &Task, bit: u32) -> bool {
        t.cost(Counter::BitmapWordsRead, 1);
        self.bit(bit)
    }

    /// __set_bit: non-atomic; returns the effect for the trace.
    pub fn set_bit(&mut self, bit: u32) -> Part {
        let (w, b) = (bit / self.word_bits, bit % self.word_bits);
        self.words[w as usize] |= 1 << b;
        Part::SetBit {
            map: self.name,
            word: w as u8,
            bit: b as u8,
        }
    }

    /// __clear_bit: non-atomic; returns the effect for the trace.
    pub fn clear_bit(&mut self, bit: u32) -> Part {
        let (w, b) = (bit / self.word_bits, bit % self.word_bits);
        self.words[w as usize] &= !(1 << b);
        Part::ClearBit {
            map: self.name,
            word: w as u8,
            bit: b as u8,
        }
    }

    /// `set = map[i]; map[i] = 0`: the word as it was, and the trace part.
    pub fn take_word(&mut self, i: u32) -> (u64, Part) {
        let old = std::mem::take(&mut self.words[i as usize]);
        let show = Show::Bits {
            nbits: self.word_bits as u8,
            word_bits: self.word_bits as u8,
        };
        let part = Part::Store {
            var: self.name,
            old: Val::with(old, show),
            new: Val::with(0, show),
        };
        (old, part)
    }

    /// The whole bitmap as a trace value (`1110 0000`).
    ///
    /// # Panics
    /// When the bitmap is wider than one 64-bit value.
    pub fn val(&self) -> Val {
        assert!(self.nbits <= 64, "a trace value holds at most 64 bits");
        let raw = (0..self.nbits)
            .filter(|&b| self.bit(b))
            .fold(0u64, |acc, b| acc | 1 << b);
        Val::with(
            raw,
            Show::Bits {
                nbits: self.nbits as u8,
                word_bits: self.word_bits as u8,
            },
        )
    }

    fn find_next(&self, t: &Task, size: u32, off: u32, want_set: bool) -> u32 {
        let size = size.min(self.nbits);
        if off >= size {
            return size;
        }
        let mut bit = off;
        let mut last_word = None;
        while bit < size {
            let w = bit / self.word_bits;
            if last_word != Some(w) {
                t.cost(Counter::BitmapWordsRead, 1);
                last_word = Some(w);
            }
            if self.bit(bit) == want_set {
                return bit;
            }
            bit += 1;
        }
        size
    }

    /// find_next_zero_bit(addr, size, offset): the first clear bit at index
    /// ≥ `off` and < `size`, or `size` when there is none (also when
    /// `off >= size`).
    pub fn find_next_zero_bit(&self, t: &Task, size: u32, off: u32) -> u32 {
        self.find_next(t, size, off, false)
    }

    /// find_next_bit(addr, size, offset): the first set bit at index ≥ `off`,
    /// or `size`.
    pub fn find_next_bit(&self, t: &Task, size: u32, off: u32) -> u32 {
        self.find_next(t, size, off, true)
    }

    /// Copies the first `nbits` bits of `src` (copy_fd_bitmaps); the rest of
    /// `self` is cleared.
    pub fn copy_from(&mut self, src: &Bitmap, nbits: u32) {
        for bit in 0..self.nbits {
            let on = bit < nbits && src.bit(bit);
            let (w, b) = (bit / self.word_bits, bit % self.word_bits);
            if on {
                self.words[w as usize] |= 1 << b;
            } else {
                self.words[w as usize] &= !(1 << b);
            }
        }
    }

    /// The set bits, lowest first (observers and reference models).
    pub fn ones(&self) -> Vec<u32> {
        (0..self.nbits).filter(|&b| self.bit(b)).collect()
    }
}

impl std::fmt::Display for Bitmap {
    /// Words lowest first, each printed bit 0 first, e.g. `1110 0000`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for w in 0..self.nwords() {
            if w > 0 {
                f.write_str(" ")?;
            }
            let bits = (self.nbits - w * self.word_bits).min(self.word_bits);
            for b in 0..bits {
                f.write_str(if self.bit(w * self.word_bits + b) {
                    "1"
                } else {
                    "0"
                })?;
            }
        }
        Ok(())
    }
}
