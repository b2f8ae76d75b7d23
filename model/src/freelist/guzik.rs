//! Mateusz Guzik's 8-byte proposal (linux-fsdevel, "Re: [PATCH v2] fs: try an
//! opportunistic lookup for O_CREAT opens too", 15 Aug 2024), modelled as
//! precisely as the mail allows; the details the mail leaves open are
//! choices, each named by a variant.
//!
//! The mail: the per-CPU freelist is one word, updated by an 8-byte
//! CPU-local cmpxchg; an allocation in progress is cheaply visible to
//! interrupts on the same CPU, and a free from an interrupt that sees it puts
//! the object on a different list, so the freelist cannot go A→B→A under the
//! allocation; an allocation that finds the freelist empty disables
//! interrupts and looks at that fallback list.
//!
//! Choices (open in the mail), as in [`Variant::Guzik8Byte`]: the marker is a
//! per-CPU word saved and restored by each allocation (so an interrupt's own
//! allocation cannot clear the interrupted one's marker); preemption is
//! disabled around both fast paths (the marker and the freelist are per CPU);
//! the drain pops one object with IRQs off; an object of another slab still
//! goes to its slab (`__slab_free`); an empty fallback list falls back to the
//! kernel's slow path. [`Variant::GuzikNmi`] is the same code on a kernel
//! where NMIs allocate (`kmalloc_nolock`, v6.18), a context the mail predates.

use super::{Holder, Slub, Variant, NULL};
use crate::kernel::percpu::OnCpu;

impl Slub {
    fn pinned(&self) -> bool {
        !self.variant.is(Variant::GuzikPreemptible)
    }

    /// The proposal's allocation (steps G0–G5 of the brief): set the pending
    /// marker, pop the freelist head with an 8-byte CPU-local cmpxchg
    /// (retrying on failure), drain the fallback list if the freelist is
    /// empty, restore the marker; with nothing anywhere, the slow path.
    pub(super) fn guzik_slab_alloc(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("guzik_slab_alloc");
        if self.pinned() {
            c.preempt_disable();
        }
        let prev = if self.variant.is(Variant::GuzikFlag) {
            0
        } else {
            self.cpus[c.this_cpu()].pending.read_once(c)
        };
        self.cpus[c.this_cpu()].pending.write_once(c, 1);
        let mut got = loop {
            let cpu = c.this_cpu();
            let object = self.cpus[cpu].read_freelist(c);
            let seen = self.ops_on(cpu);
            if object == NULL {
                break None;
            }
            if self.pop_freelist_fast(c, cpu, (object, seen), (0, 0)) {
                break Some(object);
            }
        };
        if got.is_none() {
            got = self.guzik_drain(c);
        }
        self.cpus[c.this_cpu()].pending.write_once(c, prev);
        if self.pinned() {
            c.preempt_enable();
        }
        match got {
            Some(o) => {
                self.handed_out(c, o);
                Some(o)
            }
            None => self.__slab_alloc(c, true).ok().flatten(),
        }
    }

    /// The proposal's G5: with IRQs off, pop one object from this CPU's
    /// fallback list.
    fn guzik_drain(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("guzik_drain_irq_freelist");
        if self.variant.is(Variant::GuzikNoDrain) {
            return None;
        }
        let irqs_off = !self.variant.is(Variant::GuzikDrainIrqsOn);
        if irqs_off {
            c.local_irq_save();
        }
        let head = self.cpus[c.this_cpu()].irq_freelist.read_once(c);
        let got = if head == NULL {
            None
        } else {
            c.tracepoint("drain-irq-freelist");
            self.hold(c, head, Holder::InHand);
            let next = self.get_freepointer_safe(c, head);
            self.cpus[c.this_cpu()].irq_freelist.write_once(c, next);
            Some(head)
        };
        if irqs_off {
            c.local_irq_restore();
        }
        got
    }

    /// The proposal's free: an object of another slab goes to its slab; a
    /// free from interrupt context that sees a pending allocation on this CPU
    /// is pushed onto the fallback list; anything else is pushed onto the
    /// freelist with the 8-byte CPU-local cmpxchg.
    pub(super) fn guzik_slab_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("guzik_slab_free");
        if self.pinned() {
            c.preempt_disable();
        }
        loop {
            let cpu = c.this_cpu();
            let kc = &self.cpus[cpu];
            if Some(self.slab_of[obj as usize]) != kc.read_slab(c) {
                self.__slab_free(c, obj);
                break;
            }
            if Self::in_irq(c) && kc.pending.read_once(c) != 0 {
                c.tracepoint("free-diverted");
                let head = kc.irq_freelist.read_once(c);
                self.set_freepointer(c, obj, head);
                kc.irq_freelist.write_once(c, obj);
                break;
            }
            if self.push_freelist_fast(c, cpu, obj, (0, 0)) {
                break;
            }
        }
        if self.pinned() {
            c.preempt_enable();
        }
    }
}
