//! The kernel's per-CPU freelist: mm/slub.c as of the v6.18 merge
//! (f6db358deaea): the lockless fast paths, the slow path under the local
//! lock, deactivation onto and adoption from the node's partial list, the
//! flush work item, `kmalloc_nolock`/`kfree_nolock`, and PREEMPT_RT.
//!
//! No function here places an interrupt point: every engine operation of a
//! task on a CPU is one (`kernel::percpu`). Where IRQs come back on after a
//! spinlock, `OnCpu::window` marks the instant, which is no engine operation.

use super::{Holder, Slub, Variant, FROZEN, NULL};
use crate::kernel::percpu::OnCpu;
use crate::kernel::spinlock::SpinGuard;
use crate::kernel::task::Task;
use crate::trace::{intern, Context, Effect, Part, Parts, Show, Val};

/// `-EBUSY` from `__slab_alloc`: a `kmalloc_nolock` found the local lock
/// held (its caller then tries another kmalloc bucket; with one cache the
/// model returns NULL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ebusy;

/// Where `add_partial` puts a slab (mm/slub.c DEACTIVATE_TO_HEAD/TAIL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// The node's partial list as a trace value: slab numbers + 1, four bits
/// each, head first.
fn encode_partial(p: &[usize]) -> u64 {
    p.iter()
        .enumerate()
        .map(|(i, &s)| (s as u64 + 1) << (4 * i))
        .sum()
}

fn show_partial(mut v: u64) -> String {
    let mut slabs = Vec::new();
    while v != 0 {
        slabs.push(format!("slab{}", (v & 0xf) - 1));
        v >>= 4;
    }
    format!("[{}]", slabs.join(", "))
}

impl Slub {
    /// mm/slub.c:next_tid (v6.18): the next version of a CPU's pair.
    fn next_tid(&self, tid: u64) -> u64 {
        tid + self.variant.tid_step()
    }

    /// mm/slub.c:__slab_alloc_node (v6.18), the lockless alloc fast path: note
    /// this CPU's tid, then (after the compiler barrier) its freelist head and
    /// `c->slab`; read the head's free pointer speculatively; swing `{head,
    /// tid}` to `{next, next_tid}` with one CPU-local cmpxchg on whatever CPU
    /// the task is on by then. A failed cmpxchg (the pair moved, or the task
    /// migrated) retries; an empty freelist, no slab, or PREEMPT_RT takes the
    /// slow path. `allow_spin` is false for `kmalloc_nolock`.
    pub(super) fn slab_alloc_node(
        &self,
        c: &OnCpu,
        allow_spin: bool,
    ) -> Result<Option<u64>, Ebusy> {
        let _f = c.enter("__slab_alloc_node");
        loop {
            let cpu = c.this_cpu();
            let kc = &self.cpus[cpu];
            let tid = kc.read_tid(c);
            let object = kc.read_freelist(c);
            let slab = kc.read_slab(c);
            let seen = self.ops_on(cpu);
            if !self.variant.lockless_fast_path() || object == NULL || slab.is_none() {
                return self.__slab_alloc(c, allow_spin);
            }
            if self.pop_freelist_fast(c, cpu, (object, seen), (tid, self.next_tid(tid))) {
                self.handed_out(c, object);
                return Ok(Some(object));
            }
        }
    }

    /// The speculative half of a lockless alloc (mm/slub.c:__slab_alloc_node,
    /// v6.18; the proposal's G2–G3 do the same with no tid): `object` was read
    /// as `cpu`'s freelist head after `seen` operations there. Read its free
    /// pointer speculatively (get_freepointer_safe: garbage if the object was
    /// allocated and written meanwhile), then swing the head to it with one
    /// CPU-local cmpxchg on whatever CPU the task is on by then, the tid going
    /// `tids.0`→`tids.1`. Only a successful cmpxchg makes `next` a real
    /// object. False: the pair moved or the task migrated; the object is let
    /// go and the caller retries.
    pub(super) fn pop_freelist_fast(
        &self,
        c: &OnCpu,
        cpu: usize,
        (object, seen): (u64, u64),
        tids: (u64, u64),
    ) -> bool {
        self.hold(c, object, Holder::InHand);
        let next = self.get_freepointer_safe(c, object);
        if self.variant.is(Variant::PrefetchLoadsNextEarly) && next != NULL {
            // The kernel only prefetches next's free pointer, and only once
            // the cmpxchg succeeded.
            self.get_freepointer(c, next);
        }
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

    /// mm/slub.c:do_slab_free (v6.18), the free fast path: note the tid, then
    /// (after the compiler barrier) `c->slab`; an object of another slab goes
    /// to `__slab_free` (or, from `kfree_nolock`, to the deferred list).
    /// From `kfree_nolock` (`allow_spin` false) in NMI, or on PREEMPT_RT, a
    /// held local lock also defers the free. Otherwise link the object to the
    /// current head and swing `{head, tid}` to `{object, next_tid}`,
    /// retrying on failure — on PREEMPT_RT, the same two stores under the
    /// local lock instead.
    pub(super) fn do_slab_free(&self, c: &OnCpu, obj: u64, allow_spin: bool) {
        let _f = c.enter("do_slab_free");
        let mine = Some(self.slab_of[obj as usize]);
        loop {
            let cpu = c.this_cpu();
            let kc = &self.cpus[cpu];
            let (tid, slab) = if self.variant.is(Variant::FreeReadsSlabBeforeTid) {
                let slab = kc.read_slab(c);
                (kc.read_tid(c), slab)
            } else {
                let tid = kc.read_tid(c);
                (tid, kc.read_slab(c))
            };
            if slab != mine {
                if allow_spin {
                    self.__slab_free(c, obj);
                } else {
                    self.defer_free(c, obj);
                }
                return;
            }
            let nmi_or_rt = c.context() == Context::Nmi || !self.variant.lockless_fast_path();
            if !allow_spin
                && nmi_or_rt
                && !self.variant.is(Variant::KfreeNolockNoDefer)
                && self.local_lock_is_locked(c, cpu)
            {
                self.defer_free(c, obj);
                return;
            }
            if self.variant.lockless_fast_path() {
                if self.push_freelist_fast(c, cpu, obj, (tid, self.next_tid(tid))) {
                    return;
                }
            } else if self.free_locked(c, obj) {
                return;
            }
        }
    }

    /// The PREEMPT_RT half of mm/slub.c:do_slab_free (v6.18): under the local
    /// lock, check `c->slab` again, then link the object and store
    /// `c->freelist` and `c->tid`. False: the slab changed; the caller
    /// starts over.
    fn free_locked(&self, c: &OnCpu, obj: u64) -> bool {
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        self.local_lock_cpu_slab(c, cpu);
        if kc.read_slab(c) != Some(self.slab_of[obj as usize]) {
            self.local_unlock_cpu_slab(c, cpu);
            return false;
        }
        let tid = kc.read_tid(c);
        let head = kc.read_freelist(c);
        self.set_freepointer(c, obj, head);
        kc.write_freelist(c, obj);
        kc.write_tid(c, self.next_tid(tid));
        self.local_unlock_cpu_slab(c, cpu);
        true
    }

    /// The link-and-swing half of a lockless free (mm/slub.c:do_slab_free,
    /// v6.18; the proposal's free does the same with no tid): read `cpu`'s
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

    /// mm/slub.c:__slab_free (v6.18, built without CONFIG_SLUB_CPU_PARTIAL),
    /// the free into a slab that is not this CPU's: push the object onto the
    /// slab's freelist with the cross-CPU double-width cmpxchg of
    /// `{freelist, counters}`. A slab no CPU has frozen that was full (or
    /// becomes empty) is handled under `n->list_lock`, taken before the
    /// cmpxchg: a full one goes onto the node's partial list.
    pub(super) fn __slab_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("__slab_free");
        c.tracepoint("remote-free");
        let s = self.slab_of[obj as usize];
        let slab = &self.slabs[s];
        let mut n: Option<SpinGuard<'_>> = None;
        let prior = loop {
            if let Some(g) = n.take() {
                self.list_unlock(c, g);
            }
            let prior = slab.pair.read_lo(c);
            let counters = slab.pair.read_hi(c);
            self.set_freepointer(c, obj, prior);
            let new = counters - 1;
            let was_frozen = counters & FROZEN != 0;
            if (new & !FROZEN == 0 || prior == NULL) && !was_frozen {
                n = Some(self.node.list_lock.spin_lock_irqsave(c));
            }
            if slab.pair.try_cmpxchg128(c, (prior, counters), (obj, new)) {
                break prior;
            }
        };
        let Some(g) = n else {
            return;
        };
        // A full slab that gets a free object goes onto the partial list.
        // Otherwise nothing: a slab with objects left that is not on the
        // partial list is being deactivated, and an emptied slab stays (the
        // node never reaches min_partial, so slab_empty is never taken).
        if prior == NULL {
            self.add_partial(&g, s, End::Tail);
        }
        self.list_unlock(c, g);
    }

    /// spin_unlock_irqrestore(&n->list_lock): IRQs come back on, and what
    /// was pending runs at once.
    fn list_unlock(&self, c: &OnCpu, g: SpinGuard<'_>) {
        drop(g);
        c.window();
    }

    /// mm/slub.c:add_partial (v6.18): `n->list_lock` held.
    fn add_partial(&self, g: &SpinGuard<'_>, s: usize, end: End) {
        self.node.partial.apply(g, |p| {
            let old = encode_partial(p);
            match end {
                End::Head => p.insert(0, s),
                End::Tail => p.push(s),
            }
            partial_update(old, encode_partial(p))
        });
    }

    /// mm/slub.c:get_partial_node (v6.18): take the first slab off the
    /// node's partial list, under `n->list_lock` (only tried, for
    /// `kmalloc_nolock`).
    fn get_partial(&self, c: &OnCpu, allow_spin: bool) -> Option<usize> {
        let _f = c.enter("get_partial_node");
        let g = if allow_spin {
            self.node.list_lock.spin_lock_irqsave(c)
        } else {
            self.node.list_lock.spin_trylock(c)?
        };
        let mut taken = None;
        self.node.partial.apply(&g, |p| {
            let old = encode_partial(p);
            if !p.is_empty() {
                taken = Some(p.remove(0));
            }
            partial_update(old, encode_partial(p))
        });
        self.list_unlock(c, g);
        taken
    }

    /// mm/slub.c:get_freelist (v6.18), the local lock held: take the CPU's
    /// frozen slab's whole freelist (remote frees) with the cross-CPU
    /// double-width cmpxchg; an empty one unfreezes the slab.
    fn get_freelist(&self, c: &OnCpu, s: usize) -> u64 {
        let _f = c.enter("get_freelist");
        self.take_slab_freelist(c, s, false)
    }

    /// mm/slub.c:freeze_slab (v6.18): take a partial slab's whole freelist
    /// and freeze the slab for this CPU.
    fn freeze_slab(&self, c: &OnCpu, s: usize) -> u64 {
        let _f = c.enter("freeze_slab");
        self.take_slab_freelist(c, s, true)
    }

    /// What get_freelist and freeze_slab share: swing `{freelist, counters}`
    /// to `{NULL, all in use}`, frozen if asked or if objects came with it.
    fn take_slab_freelist(&self, c: &OnCpu, s: usize, freeze: bool) -> u64 {
        let slab = &self.slabs[s];
        loop {
            let head = slab.pair.read_lo(c);
            let counters = slab.pair.read_hi(c);
            let taken = self.chain_from(head);
            for &o in &taken {
                self.hold(c, o, Holder::InHand);
            }
            let frozen = if freeze || head != NULL { FROZEN } else { 0 };
            if slab
                .pair
                .try_cmpxchg128(c, (head, counters), (NULL, slab.objects | frozen))
            {
                return head;
            }
            for &o in &taken {
                self.unhold(c, o, Holder::InHand);
            }
        }
    }

    /// mm/slub.c:__slab_alloc (v6.18): pin the task (preemption off; on
    /// PREEMPT_RT migration off) and take the slow path, unless a
    /// `kmalloc_nolock` finds this CPU's local lock held (`-EBUSY`).
    pub(super) fn __slab_alloc(&self, c: &OnCpu, allow_spin: bool) -> Result<Option<u64>, Ebusy> {
        let _f = c.enter("__slab_alloc");
        self.slub_get_cpu_ptr(c);
        let got = if !allow_spin && self.local_lock_is_locked(c, c.this_cpu()) {
            Err(Ebusy)
        } else {
            Ok(self.___slab_alloc(c, allow_spin))
        };
        self.slub_put_cpu_ptr(c);
        got
    }

    /// mm/slub.c:slub_get_cpu_ptr (v6.18): preempt_disable, or
    /// migrate_disable on PREEMPT_RT.
    fn slub_get_cpu_ptr(&self, c: &OnCpu) {
        if self.variant.preempt_rt() {
            c.migrate_disable();
        } else {
            c.preempt_disable();
        }
    }

    /// mm/slub.c:slub_put_cpu_ptr (v6.18).
    fn slub_put_cpu_ptr(&self, c: &OnCpu) {
        if self.variant.preempt_rt() {
            c.migrate_enable();
        } else {
            c.preempt_enable();
        }
    }

    /// mm/slub.c:___slab_alloc (v6.18), the slow path, with the task pinned:
    /// read `c->slab` (label reread_slab); with the local lock held check it
    /// did not change meanwhile, use `c->freelist` if an interrupt refilled
    /// it, else take the slab's freelist (get_freelist); an empty one drops
    /// the slab (`c->slab` = NULL and a new tid). With no slab, adopt the
    /// first slab of the node's partial list (new_slab, get_partial,
    /// freeze_slab) and install it (retry_load_slab), first deactivating
    /// whatever slab an interrupt installed meanwhile. The model has no page
    /// allocator: no partial slab returns NULL.
    fn ___slab_alloc(&self, c: &OnCpu, allow_spin: bool) -> Option<u64> {
        let _f = c.enter("___slab_alloc");
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        loop {
            if let Some(s) = kc.read_slab(c) {
                self.local_lock_cpu_slab(c, cpu);
                if !self.variant.is(Variant::RtSlowpathSkipsSlabRecheck)
                    && kc.read_slab(c) != Some(s)
                {
                    c.tracepoint("reread-slab");
                    self.local_unlock_cpu_slab(c, cpu);
                    continue;
                }
                let freelist = kc.read_freelist(c);
                if freelist != NULL {
                    self.hold(c, freelist, Holder::InHand);
                    return Some(self.load_freelist(c, cpu, freelist));
                }
                let freelist = self.get_freelist(c, s);
                if freelist != NULL {
                    return Some(self.load_freelist(c, cpu, freelist));
                }
                kc.write_slab(c, None);
                if !self.variant.is(Variant::GetFreelistNullKeepsTid) {
                    kc.write_tid(c, self.next_tid(kc.read_tid(c)));
                }
                self.local_unlock_cpu_slab(c, cpu);
                c.tracepoint("slab-exhausted");
            }
            let s = self.get_partial(c, allow_spin)?;
            c.tracepoint("adopt-partial");
            let freelist = self.freeze_slab(c, s);
            return Some(self.retry_load_slab(c, s, freelist, allow_spin));
        }
    }

    /// mm/slub.c:___slab_alloc label retry_load_slab (v6.18): under the local
    /// lock, install frozen slab `s` as `c->slab` and load its freelist; if
    /// an interrupt installed a slab meanwhile (it ran between this task's
    /// get_partial and here, found `c->slab` NULL and adopted a partial slab
    /// of its own), take that one away first (`c->slab` and `c->freelist`
    /// NULL, new tid), deactivate it — deferred, from `kmalloc_nolock` —
    /// and try again.
    fn retry_load_slab(&self, c: &OnCpu, s: usize, freelist: u64, allow_spin: bool) -> u64 {
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        loop {
            self.local_lock_cpu_slab(c, cpu);
            if self.variant.is(Variant::RetryLoadSlabSkipsFlush) {
                kc.write_slab(c, Some(s));
                return self.load_freelist(c, cpu, freelist);
            }
            let Some(old) = kc.read_slab(c) else {
                kc.write_slab(c, Some(s));
                return self.load_freelist(c, cpu, freelist);
            };
            let flush = self.detach_cpu_freelist(c, cpu, true);
            self.local_unlock_cpu_slab(c, cpu);
            c.tracepoint("retry-load-slab-flush");
            if allow_spin {
                self.deactivate_slab(c, old, &flush);
            } else {
                self.defer_deactivate_slab(c, old, flush);
            }
        }
    }

    /// With the local lock held: `c->slab` and `c->freelist` become NULL,
    /// the tid moves on (unless `bump` is false: the flush-no-tid mutant);
    /// the detached objects are held until deactivated.
    fn detach_cpu_freelist(&self, c: &OnCpu, cpu: usize, bump: bool) -> Vec<u64> {
        let kc = &self.cpus[cpu];
        let freelist = kc.read_freelist(c);
        let taken = self.chain_from(freelist);
        for &o in &taken {
            self.hold(c, o, Holder::InHand);
        }
        kc.write_slab(c, None);
        kc.write_freelist(c, NULL);
        if bump {
            kc.write_tid(c, self.next_tid(kc.read_tid(c)));
        }
        taken
    }

    /// mm/slub.c:___slab_alloc label load_freelist (v6.18), the local lock
    /// held: `freelist` (held in hand) is the object to return; store its
    /// successor as `c->freelist`, bump the tid, unlock.
    fn load_freelist(&self, c: &OnCpu, cpu: usize, freelist: u64) -> u64 {
        let kc = &self.cpus[cpu];
        c.tracepoint("load-freelist");
        let next = self.get_freepointer(c, freelist);
        kc.write_freelist(c, next);
        for o in self.chain_from(next) {
            self.unhold(c, o, Holder::InHand);
        }
        if !self.variant.is(Variant::LoadFreelistNoTid) {
            kc.write_tid(c, self.next_tid(kc.read_tid(c)));
        }
        self.local_unlock_cpu_slab(c, cpu);
        self.handed_out(c, freelist);
        freelist
    }

    /// mm/slub.c:flush_cpu_slab (v6.18), the work item `flush_all` queues on
    /// each CPU (flushwq): flush_this_cpu_slab takes the CPU's slab away
    /// (flush_slab) if it has one.
    pub fn flush_cpu_slab(&self, c: &OnCpu) {
        let _f = c.enter("flush_cpu_slab");
        if self.cpus[c.this_cpu()].read_slab(c).is_some() {
            self.flush_slab(c);
        }
    }

    /// mm/slub.c:flush_slab (v6.18): under the local lock, detach `c->slab`
    /// and `c->freelist` (and the proposal's fallback list) and bump the
    /// tid; then deactivate_slab hands the objects back to the slab.
    fn flush_slab(&self, c: &OnCpu) {
        let _f = c.enter("flush_slab");
        let cpu = c.this_cpu();
        let kc = &self.cpus[cpu];
        self.local_lock_cpu_slab(c, cpu);
        let slab = kc.read_slab(c);
        let mut taken = self.detach_cpu_freelist(c, cpu, !self.variant.is(Variant::FlushNoTid));
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
        self.local_unlock_cpu_slab(c, cpu);
        if let Some(s) = slab {
            self.deactivate_slab(c, s, &taken);
        }
    }

    /// mm/slub.c:deactivate_slab (v6.18): splice the detached objects onto
    /// the slab's freelist and unfreeze it with the cross-CPU double-width
    /// cmpxchg; a slab left with free objects goes onto the node's partial
    /// list (to its tail if remote frees were waiting). The model's node
    /// never reaches min_partial, so no slab is discarded.
    fn deactivate_slab(&self, c: &OnCpu, s: usize, objects: &[u64]) {
        let _f = c.enter("deactivate_slab");
        for w in objects.windows(2) {
            if self.fp[w[0] as usize].peek() != w[1] {
                self.set_freepointer(c, w[0], w[1]);
            }
        }
        let slab = &self.slabs[s];
        let end = if slab.pair.read_lo(c) != NULL {
            End::Tail
        } else {
            End::Head
        };
        let new_head = loop {
            let head = slab.pair.read_lo(c);
            let counters = slab.pair.read_hi(c);
            let mut new = counters & !FROZEN;
            let new_head = match (objects.first(), objects.last()) {
                (Some(&first), Some(&last)) => {
                    new -= objects.len() as u64;
                    self.set_freepointer(c, last, head);
                    first
                }
                _ => head,
            };
            if slab
                .pair
                .try_cmpxchg128(c, (head, counters), (new_head, new))
            {
                break new_head;
            }
        };
        for &o in objects {
            self.unhold(c, o, Holder::InHand);
        }
        if new_head != NULL {
            let g = self.node.list_lock.spin_lock_irqsave(c);
            self.add_partial(&g, s, end);
            self.list_unlock(c, g);
        }
    }

    /// mm/slub.c:defer_deactivate_slab (v6.18): `kmalloc_nolock` cannot take
    /// `n->list_lock`, so the deactivation waits for the CPU's irq_work. In
    /// the model it runs at quiescence ([`Slub::defer_free_barrier`]); the
    /// objects stay held by the deferred list meanwhile.
    fn defer_deactivate_slab(&self, c: &OnCpu, s: usize, objects: Vec<u64>) {
        let _f = c.enter("defer_deactivate_slab");
        c.tracepoint("defer-deactivate-slab");
        let deferred = intern("defer_deactivate_slab");
        self.ghost(|g| {
            for &o in &objects {
                let hs = &mut g.holders[o as usize];
                if let Some(i) = hs
                    .iter()
                    .position(|&(w, h)| w == c.name() && h == Holder::InHand)
                {
                    hs[i].0 = deferred;
                }
            }
            g.deferred_slabs.push((s, objects));
        });
    }

    /// mm/slub.c:defer_free (v6.18): with preemption off, push the object
    /// onto this CPU's `defer_free_objects` llist (linked through its free
    /// pointer) for the irq_work to free. The model runs that work at
    /// quiescence ([`Slub::defer_free_barrier`]).
    fn defer_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("defer_free");
        c.tracepoint("defer-free");
        c.preempt_disable();
        let list = &self.cpus[c.this_cpu()].defer;
        loop {
            let head = list.read_once(c);
            self.set_freepointer(c, obj, head);
            if list.cmpxchg(c, head, obj) == head {
                break;
            }
        }
        c.preempt_enable();
    }

    /// mm/slub.c:defer_free_barrier → free_deferred_objects (v6.18), at
    /// quiescence: free every deferred object of `c`'s CPU through
    /// `__slab_free`, and deactivate the deferred slabs.
    pub fn defer_free_barrier(&self, c: &OnCpu) {
        let _f = c.enter("free_deferred_objects");
        let list = &self.cpus[c.this_cpu()].defer;
        // At quiescence nobody else pushes: the objects the llist_del_all
        // below detaches are those on the list now.
        let objects = self.chain_from(list.peek());
        for &o in &objects {
            self.hold(c, o, Holder::InHand);
        }
        list.xchg(c, NULL);
        for o in objects {
            self.__slab_free(c, o);
            self.unhold(c, o, Holder::InHand);
        }
        let deferred = self.ghost(|g| std::mem::take(&mut g.deferred_slabs));
        let by = intern("defer_deactivate_slab");
        for (s, objects) in deferred {
            self.ghost(|g| {
                for &o in &objects {
                    for h in g.holders[o as usize].iter_mut() {
                        if h.0 == by {
                            h.0 = c.name();
                        }
                    }
                }
            });
            self.deactivate_slab(c, s, &objects);
        }
    }

    /// include/linux/local_lock.h via mm/slub.c:local_lock_cpu_slab (v6.18):
    /// on !PREEMPT_RT, IRQs off then mark the `local_trylock_t` acquired; on
    /// PREEMPT_RT, migration off and the per-CPU sleeping lock, which leaves
    /// preemption and IRQs on: a task that finds it held sleeps, off its
    /// CPU, until the holder releases it.
    fn local_lock_cpu_slab(&self, c: &OnCpu, cpu: usize) {
        let kc = &self.cpus[cpu];
        if !self.variant.preempt_rt() {
            c.local_irq_save();
            kc.lock.write_once(c, 1);
            return;
        }
        c.migrate_disable();
        while kc.lock.cmpxchg(c, 0, 1) != 0 {
            c.tracepoint("rt-local-lock-contended");
            c.sleep(|| {
                let (wait, queue) = &kc.rt_wait;
                let mut g = wait.lock();
                while kc.lock.load_unrecorded(crate::sync::Ordering::Acquire) != 0 {
                    g = queue.wait(g);
                }
            });
        }
    }

    /// mm/slub.c:local_unlock_cpu_slab (v6.18): on PREEMPT_RT, release the
    /// lock and wake its sleepers.
    fn local_unlock_cpu_slab(&self, c: &OnCpu, cpu: usize) {
        let kc = &self.cpus[cpu];
        if !self.variant.preempt_rt() {
            kc.lock.write_once(c, 0);
            c.local_irq_restore();
            return;
        }
        kc.lock.store_release(c, 0);
        let (wait, queue) = &kc.rt_wait;
        let g = wait.lock();
        queue.notify_all();
        drop(g);
        c.migrate_enable();
    }

    /// mm/slub.c:kmalloc_nolock (v6.18): refused on PREEMPT_RT from hardirq
    /// or NMI; from NMI, refused (`-EBUSY`, then the next kmalloc bucket,
    /// another cache: NULL here) when the interrupted code holds this CPU's
    /// local lock, being inside `___slab_alloc`; otherwise
    /// `__slab_alloc_node` without spinning, slow path included. Under the
    /// proposal the NMI takes the proposal's path: the mail has no lock an
    /// NMI could test.
    pub(super) fn nolock_alloc(&self, c: &OnCpu) -> Option<u64> {
        if self.variant.is_guzik() {
            return self.guzik_slab_alloc(c);
        }
        let nmi = c.context() == Context::Nmi;
        if self.variant.preempt_rt() && Self::in_irq(c) {
            return None;
        }
        let cpu = c.this_cpu();
        if self.cpus[cpu].lock.peek() != 0 {
            c.tracepoint("nmi-inside-slowpath");
        }
        if nmi && !self.variant.is(Variant::NolockNoLockCheck) && self.local_lock_is_locked(c, cpu)
        {
            return None;
        }
        self.slab_alloc_node(c, false).ok().flatten()
    }

    /// include/linux/local_lock.h:local_lock_is_locked (v6.18).
    fn local_lock_is_locked(&self, t: &Task, cpu: usize) -> bool {
        self.cpus[cpu].lock.read_once(t) != 0
    }
}

/// A step that replaces the node's partial list.
fn partial_update(old: u64, new: u64) -> Effect {
    Effect::Update {
        scope: None,
        parts: Parts::one(Part::Store {
            var: "n->partial",
            old: Val::with(old, Show::With(show_partial)),
            new: Val::with(new, Show::With(show_partial)),
        }),
    }
}
