//! The kernel's per-CPU freelist: mm/slub.c (v6.12) fast and slow paths,
//! with `kmalloc_nolock` (v6.18) for allocations from NMI context.
//!
//! The task calls `c.window()` between steps wherever the kernel runs with
//! IRQs enabled: a same-CPU interrupt handler may run there, and the task may
//! be preempted and resume on another CPU. Inside the local-lock section
//! IRQs are off, so only an NMI can land between its steps.

use super::{Holder, Slub, Variant, NULL};
use crate::kernel::percpu::OnCpu;
use crate::kernel::task::Task;

impl Slub {
    /// mm/slub.c:next_tid (v6.12): the next version of a CPU's pair.
    fn next_tid(&self, tid: u64) -> u64 {
        tid + self.variant.tid_step()
    }

    /// mm/slub.c:__slab_alloc_node (v6.12), the lockless alloc fast path:
    /// note this CPU's tid, then its freelist head; read the head's free
    /// pointer speculatively; swing `{head, tid}` to `{next, next_tid}` with
    /// one CPU-local cmpxchg on whatever CPU the task is on by then. A
    /// failed cmpxchg (the pair moved, or the task migrated) retries; an empty
    /// freelist takes the slow path.
    pub(super) fn slab_alloc_node(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("slab_alloc_node");
        loop {
            let cpu = c.this_cpu();
            let kc = &self.cpus[cpu];
            let tid = kc.read_tid(c);
            let object = kc.read_freelist(c);
            let seen = self.ops_on(cpu);
            if object == NULL {
                return self.__slab_alloc(c);
            }
            if self.pop_freelist_fast(c, cpu, (object, seen), (tid, self.next_tid(tid))) {
                self.handed_out(c, object);
                return Some(object);
            }
        }
    }

    /// The speculative half of a lockless alloc (mm/slub.c:__slab_alloc_node,
    /// v6.12; the proposal's G2–G3 do the same with no tid): `object` was read
    /// as `cpu`'s freelist head after `seen` operations there. Read its free
    /// pointer speculatively (get_freepointer_safe), then swing the head to
    /// that pointer with one CPU-local cmpxchg on whatever CPU the task is on
    /// by then, the tid going `tids.0`→`tids.1`. False: the pair moved or the
    /// task migrated; the object is let go and the caller retries.
    pub(super) fn pop_freelist_fast(
        &self,
        c: &OnCpu,
        cpu: usize,
        (object, seen): (u64, u64),
        tids: (u64, u64),
    ) -> bool {
        self.hold(c, object, Holder::InHand);
        let next = self.get_freepointer_safe(c, object);
        if self.ops_on(c.this_cpu()) != seen || c.this_cpu() != cpu {
            c.tracepoint("interrupted-alloc-fastpath");
        }
        if self.cpus[c.this_cpu()].update_freelist_fast(c, (object, tids.0), (next, tids.1)) {
            return true;
        }
        self.unhold(c, object, Holder::InHand);
        c.tracepoint("cmpxchg-retry");
        false
    }

    /// mm/slub.c:do_slab_free (v6.12), the lockless free fast path: note the
    /// tid; an object of another slab goes to `__slab_free`; otherwise link
    /// the object to the current head and swing `{head, tid}` to
    /// `{object, next_tid}`, retrying on failure.
    pub(super) fn do_slab_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("do_slab_free");
        loop {
            let cpu = c.this_cpu();
            let kc = &self.cpus[cpu];
            let tid = kc.read_tid(c);
            if self.slab_of[obj as usize] != kc.slab {
                self.__slab_free(c, obj);
                return;
            }
            if self.push_freelist_fast(c, cpu, obj, (tid, self.next_tid(tid))) {
                return;
            }
        }
    }

    /// The link-and-swing half of a lockless free (mm/slub.c:do_slab_free,
    /// v6.12; the proposal's free does the same with no tid): read `cpu`'s
    /// freelist head, store it in `obj`'s free pointer, then swing the head
    /// to `obj` with one CPU-local cmpxchg on whatever CPU the task is on by
    /// then, the tid going `tids.0`→`tids.1`. False: the pair moved or the
    /// task migrated, and the caller retries.
    pub(super) fn push_freelist_fast(
        &self,
        c: &OnCpu,
        cpu: usize,
        obj: u64,
        tids: (u64, u64),
    ) -> bool {
        let head = self.cpus[cpu].read_freelist(c);
        self.set_freepointer(c, obj, head);
        if c.this_cpu() != cpu {
            c.tracepoint("migrated-in-free-fastpath");
        }
        if self.cpus[c.this_cpu()].update_freelist_fast(c, (head, tids.0), (obj, tids.1)) {
            return true;
        }
        c.tracepoint("cmpxchg-retry");
        false
    }

    /// mm/slub.c:__slab_free (v6.12), the remote free: push the object onto
    /// its slab's freelist with the cross-CPU (LOCK-prefixed) double-width
    /// cmpxchg of `{slab->freelist, counters}`.
    pub(super) fn __slab_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("__slab_free");
        c.tracepoint("remote-free");
        let slab = &self.slabs[self.slab_of[obj as usize]];
        loop {
            let head = slab.pair.read_lo(c);
            let inuse = slab.pair.read_hi(c);
            self.set_freepointer(c, obj, head);
            if slab.pair.cmpxchg_double(c, (head, inuse), (obj, inuse - 1)) {
                return;
            }
        }
    }

    /// mm/slub.c:get_freelist (v6.12): take the frozen slab's whole freelist
    /// (remote frees included) with the cross-CPU double-width cmpxchg.
    fn get_freelist(&self, c: &OnCpu, slab: usize) -> u64 {
        let _f = c.enter("get_freelist");
        let s = &self.slabs[slab];
        loop {
            let head = s.pair.read_lo(c);
            let inuse = s.pair.read_hi(c);
            let taken = self.chain_from(head);
            for &o in &taken {
                self.hold(c, o, Holder::InHand);
            }
            if s.pair.cmpxchg_double(c, (head, inuse), (NULL, s.objects)) {
                return head;
            }
            for &o in &taken {
                self.unhold(c, o, Holder::InHand);
            }
        }
    }

    /// mm/slub.c:__slab_alloc / ___slab_alloc (v6.12), the slow path: with
    /// the CPU's local lock held (IRQs off), use `c->freelist` if an
    /// interrupt refilled it, else take the slab's freelist; then
    /// `load_freelist`: store the next object as `c->freelist` and bump the
    /// tid with two plain stores. The model has no page allocator: no free
    /// object anywhere returns NULL.
    pub(super) fn __slab_alloc(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("___slab_alloc");
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        self.local_lock_irqsave(c, cpu);
        let mut freelist = kc.read_freelist(c);
        if freelist == NULL {
            freelist = self.get_freelist(c, kc.slab);
        } else {
            self.hold(c, freelist, Holder::InHand);
        }
        if freelist == NULL {
            self.local_unlock_irqrestore(c, cpu);
            return None;
        }
        c.tracepoint("load-freelist");
        let next = self.get_freepointer_safe(c, freelist);
        kc.write_freelist(c, next);
        for o in self.chain_from(next) {
            self.unhold(c, o, Holder::InHand);
        }
        if self.variant != Variant::LoadFreelistNoTid {
            let tid = kc.read_tid(c);
            kc.write_tid(c, self.next_tid(tid));
        }
        self.local_unlock_irqrestore(c, cpu);
        self.handed_out(c, freelist);
        Some(freelist)
    }

    /// mm/slub.c:flush_slab / __flush_cpu_slab (v6.12), run on the owning CPU
    /// (an IPI or a work item): with the local lock held, detach
    /// `c->freelist` (and the proposal's fallback list), bump the tid, then
    /// `deactivate_slab` hands the objects back to the slab's freelist. The
    /// model keeps `c->slab`: the next slow path takes the objects back.
    pub fn flush_cpu_slab(&self, c: &OnCpu) {
        let _f = c.enter("flush_cpu_slab");
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        self.local_lock_irqsave(c, cpu);
        let freelist = kc.read_freelist(c);
        let mut taken = self.chain_from(freelist);
        for &o in &taken {
            self.hold(c, o, Holder::InHand);
        }
        kc.write_freelist(c, NULL);
        if self.variant != Variant::FlushNoTid {
            let tid = kc.read_tid(c);
            kc.write_tid(c, self.next_tid(tid));
        }
        if self.variant.is_guzik() {
            let irq = kc.irq_freelist.read_once(c);
            let more = self.chain_from(irq);
            for &o in &more {
                self.hold(c, o, Holder::InHand);
            }
            kc.irq_freelist.write_once(c, NULL);
            taken.extend(more);
        }
        self.op_done(c);
        self.local_unlock_irqrestore(c, cpu);
        self.deactivate_slab(c, kc.slab, &taken);
    }

    /// mm/slub.c:deactivate_slab (v6.12), reduced to what the model needs:
    /// link the detached objects and splice them onto the slab's freelist
    /// with the cross-CPU double-width cmpxchg.
    fn deactivate_slab(&self, c: &OnCpu, slab: usize, objects: &[u64]) {
        let _f = c.enter("deactivate_slab");
        let (Some(&first), Some(&last)) = (objects.first(), objects.last()) else {
            return;
        };
        for w in objects.windows(2) {
            if self.fp[w[0] as usize].peek() != w[1] {
                self.set_freepointer(c, w[0], w[1]);
            }
        }
        let s = &self.slabs[slab];
        loop {
            let head = s.pair.read_lo(c);
            let inuse = s.pair.read_hi(c);
            self.set_freepointer(c, last, head);
            let n = objects.len() as u64;
            if s.pair.cmpxchg_double(c, (head, inuse), (first, inuse - n)) {
                break;
            }
        }
        for &o in objects {
            self.unhold(c, o, Holder::InHand);
        }
    }

    /// include/linux/local_lock.h:local_lock_irqsave (v6.18, `local_trylock_t`
    /// on !PREEMPT_RT): IRQs off, then mark the lock acquired.
    fn local_lock_irqsave(&self, c: &OnCpu, cpu: usize) {
        c.local_irq_save();
        self.cpus[cpu].lock.write_once(c, 1);
    }

    /// include/linux/local_lock.h:local_unlock_irqrestore (v6.18).
    fn local_unlock_irqrestore(&self, c: &OnCpu, cpu: usize) {
        self.cpus[cpu].lock.write_once(c, 0);
        c.local_irq_restore();
    }

    /// mm/slub.c:kmalloc_nolock (v6.18) from NMI: when the interrupted code
    /// holds this CPU's local lock (it is inside `___slab_alloc`), the
    /// lockless fast path is not safe and is skipped (the released code then
    /// retries the next kmalloc size, another cache; with one cache the model
    /// returns NULL); otherwise the lockless fast path. An NMI never takes
    /// the slow path here. Under the proposal the NMI takes the proposal's
    /// allocation path: the mail has no lock an NMI could test.
    pub(super) fn nolock_alloc(&self, c: &OnCpu) -> Option<u64> {
        if self.variant.is_guzik() {
            return self.guzik_slab_alloc(c);
        }
        let cpu = c.this_cpu();
        if self.cpus[cpu].lock.peek() != 0 {
            c.tracepoint("nmi-inside-slowpath");
        }
        if self.variant != Variant::NolockNoLockCheck && self.local_lock_is_locked(c, cpu) {
            return None;
        }
        let kc = &self.cpus[cpu];
        let tid = kc.read_tid(c);
        let object = kc.read_freelist(c);
        if object == NULL {
            return None;
        }
        self.hold(c, object, Holder::InHand);
        let next = self.get_freepointer_safe(c, object);
        if kc.update_freelist_fast(c, (object, tid), (next, self.next_tid(tid))) {
            self.handed_out(c, object);
            return Some(object);
        }
        self.unhold(c, object, Holder::InHand);
        None
    }

    /// include/linux/local_lock.h:local_lock_is_locked (v6.18).
    fn local_lock_is_locked(&self, t: &Task, cpu: usize) -> bool {
        self.cpus[cpu].lock.read_once(t) != 0
    }
}
