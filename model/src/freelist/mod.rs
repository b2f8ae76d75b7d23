//! mm/slub.c: the per-CPU ABA-safe freelist of SLUB's `kmem_cache_cpu`
//! (v6.12; the structure lived from v2.6.39 to the sheaves conversion), and
//! Mateusz Guzik's 8-byte proposal (linux-fsdevel, 15 Aug 2024).
//!
//! - [`slub`]: the kernel's design — `{freelist, tid}` updated by one
//!   CPU-local double-width cmpxchg on the fast paths, the slow path under
//!   `local_lock_irqsave`, remote frees into `slab->freelist`, and the
//!   `kmalloc_nolock` NMI entry (v6.18).
//! - [`guzik`]: the proposal — a single-word freelist, a "pending alloc"
//!   marker, a fallback list for frees that interrupt a pending alloc, and an
//!   alloc slow path that drains it with IRQs off.
//!
//! Objects are numbered `1..=n`; `0` is NULL. A free object stores the next
//! free object in its free pointer, an [`Atomic`] because the alloc fast path
//! reads it speculatively (`get_freepointer_safe`).
//!
//! Ghost state for the specs: who holds each object — `Owned` by a caller
//! after an allocation returned it, `InHand` while an allocator has taken it
//! off a list (or is about to push it) but has not finished. Specs read it,
//! with the lists, through [`Slub::observe`], never through the atomics.

pub mod guzik;
pub mod slub;

use std::sync::Mutex as GhostMutex;

use crate::kernel::atomic::Atomic;
use crate::kernel::cmpxchg_double::DoubleWord;
use crate::kernel::percpu::OnCpu;
use crate::kernel::task::Task;
use crate::trace::Context;
use crate::trace::{intern, Effect, Name, Show, Val};

/// NULL object pointer.
pub const NULL: u64 = 0;

/// The versions of the code under check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// mm/slub.c as released: tid + CPU-local double-width cmpxchg, CPU-unique
    /// tids, slow path under the local lock, NMI allocations refused while the
    /// local lock is held.
    Classic,
    /// The fast-path cmpxchg compares the freelist pointer only (no tid).
    PointerOnly,
    /// `TID_STEP` = 1 and `init_tid` = 0 on a preemptible kernel: tids of two
    /// CPUs can be equal, so a migrated task's cmpxchg can hit another CPU.
    SharedTid,
    /// `load_freelist` updates `c->freelist` but forgets `next_tid`.
    LoadFreelistNoTid,
    /// `flush_slab` empties `c->freelist` without `next_tid`.
    FlushNoTid,
    /// `kmalloc_nolock` from NMI without the `local_lock_is_locked` check.
    NolockNoLockCheck,
    /// The proposal, as charitably as the mail allows: the marker is saved
    /// and restored (nesting-safe), preemption is off around the fast path,
    /// the fallback list is drained with IRQs off.
    Guzik8Byte,
    /// The proposal with a set/clear flag: an interrupt's own allocation
    /// clears the interrupted task's marker.
    GuzikFlag,
    /// The proposal with preemption left on: the marker stays on the CPU the
    /// task left.
    GuzikPreemptible,
    /// The proposal draining the fallback list with IRQs on.
    GuzikDrainIrqsOn,
    /// The proposal never draining the fallback list.
    GuzikNoDrain,
    /// The proposal (as `Guzik8Byte`) on a kernel with `kmalloc_nolock`: an
    /// NMI allocates through the proposal's path, which has no lock to test.
    GuzikNmi,
}

impl Variant {
    /// Whether the variant is the proposal's single-word design.
    pub fn is_guzik(self) -> bool {
        matches!(
            self,
            Variant::Guzik8Byte
                | Variant::GuzikFlag
                | Variant::GuzikPreemptible
                | Variant::GuzikDrainIrqsOn
                | Variant::GuzikNoDrain
                | Variant::GuzikNmi
        )
    }

    /// Whether `c->freelist` is paired with `c->tid` in one double word.
    fn versioned(self) -> bool {
        !self.is_guzik() && self != Variant::PointerOnly
    }

    /// mm/slub.c:TID_STEP (v6.12): `roundup_pow_of_two(CONFIG_NR_CPUS)` with
    /// CONFIG_PREEMPTION (two CPUs here), 1 without.
    pub fn tid_step(self) -> u64 {
        if self == Variant::SharedTid {
            1
        } else {
            2
        }
    }

    /// mm/slub.c:init_tid (v6.12): the CPU number (0 for every CPU when the
    /// step is 1).
    pub fn init_tid(self, cpu: usize) -> u64 {
        if self == Variant::SharedTid {
            0
        } else {
            cpu as u64
        }
    }
}

/// The initial state of one execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Slab of each object, indexed by object (index 0, NULL, unused).
    pub slab_of: Vec<usize>,
    /// `c->slab` of each CPU.
    pub cpu_slab: Vec<usize>,
    /// Initial `c->freelist` of each CPU, head first.
    pub cpu_freelist: Vec<Vec<u64>>,
    /// Initial `slab->freelist` of each slab, head first.
    pub slab_freelist: Vec<Vec<u64>>,
    /// Initial fallback list of each CPU (the proposal only).
    pub irq_freelist: Vec<Vec<u64>>,
    /// Objects allocated before the execution starts, with their owner.
    pub owned: Vec<(u64, String)>,
}

impl Setup {
    /// Number of objects.
    pub fn objects(&self) -> usize {
        self.slab_of.len() - 1
    }
}

/// Who holds an object that is not on a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Returned by an allocation and not yet freed.
    Owned,
    /// Being taken off or put on a list by an allocator call.
    InHand,
}

/// Objects a model cache may have (observations are fixed-size).
pub const MAX_OBJECTS: usize = 16;

/// Which list a [`Chain`] walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// `c->freelist` of a CPU.
    Cpu(u8),
    /// The proposal's fallback list of a CPU.
    Irq(u8),
    /// `slab->freelist` of a slab.
    Slab(u8),
}

impl std::fmt::Display for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            List::Cpu(i) => write!(f, "c{i}->freelist"),
            List::Irq(i) => write!(f, "c{i}->irq_freelist"),
            List::Slab(i) => write!(f, "slab{i}->freelist"),
        }
    }
}

/// One freelist as observed: its objects from the head, and whether the walk
/// ran into a cycle. Fixed-size, so observing allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    pub list: List,
    objects: [u8; MAX_OBJECTS],
    len: u8,
    /// Bit `o` set for each object `o` on the list.
    mask: u32,
    pub cycle: bool,
}

impl Chain {
    /// The objects from the head.
    pub fn objects(&self) -> impl Iterator<Item = u64> + '_ {
        self.objects[..usize::from(self.len)]
            .iter()
            .map(|&o| u64::from(o))
    }

    pub fn contains(&self, obj: u64) -> bool {
        self.mask >> obj & 1 == 1
    }

    /// The head object, NULL for an empty list.
    pub fn head(&self) -> u64 {
        self.objects().next().unwrap_or(NULL)
    }

    /// `obj1→obj2`, `NULL`, with `(cycle)` when the walk looped.
    pub fn render(&self) -> String {
        let mut s: Vec<String> = self.objects().map(obj_name).collect();
        if self.cycle {
            s.push("(cycle)".to_string());
        }
        if s.is_empty() {
            "NULL".to_string()
        } else {
            s.join("→")
        }
    }
}

/// Lists an observation holds: two per CPU and one per slab.
const MAX_LISTS: usize = 8;

/// Every list of the cache at one instant (fixed-size, no allocation).
#[derive(Clone, Copy, Debug)]
pub struct Lists {
    chains: [Option<Chain>; MAX_LISTS],
    n: usize,
}

impl Lists {
    pub fn iter(&self) -> impl Iterator<Item = &Chain> {
        self.chains[..self.n].iter().flatten()
    }

    /// The first list holding `obj`.
    pub fn holding(&self, obj: u64) -> Option<&Chain> {
        self.iter().find(|ch| ch.contains(obj))
    }
}

/// A CPU's `kmem_cache_cpu` as observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuView {
    pub slab: usize,
    pub freelist: Chain,
    /// `c->tid`, for variants that have one.
    pub tid: Option<u64>,
    /// Whether the CPU is inside the local-lock (IRQs off) section.
    pub locked: bool,
    /// The proposal's fallback list.
    pub irq_freelist: Option<Chain>,
}

/// Bits of the packed pair that hold the object (the model has < 256).
const PAIR_LO_BITS: u32 = 8;

fn show_cpu_pair(w: u64) -> String {
    format!("{{{}, tid {}}}", obj_name(w & 0xff), w >> PAIR_LO_BITS)
}

fn show_slab_pair(w: u64) -> String {
    format!("{{{}, inuse {}}}", obj_name(w & 0xff), w >> PAIR_LO_BITS)
}

/// An object pointer as a trace value.
fn obj_val(obj: u64) -> Val {
    Val::with(obj, Show::With(obj_name))
}

/// An object pointer as the trace shows it.
pub fn obj_name(v: u64) -> String {
    if v == NULL {
        "NULL".to_string()
    } else {
        format!("obj{v}")
    }
}

/// The word(s) holding a CPU's freelist head.
enum Head {
    /// `{c->freelist, c->tid}`, one double word.
    Versioned(DoubleWord),
    /// A single-word `c->freelist` (pointer-only, the proposal).
    Word(Atomic),
}

/// mm/slub.c:struct kmem_cache_cpu (v6.12), plus the proposal's fields.
pub struct KmemCacheCpu {
    head: Head,
    /// `c->slab`: fixed per CPU here (no deactivation is modelled).
    slab: usize,
    /// `c->lock` (`local_trylock_t`, v6.18): 1 while the slow path holds it.
    lock: Atomic,
    /// The proposal's pending-alloc marker.
    pending: Atomic,
    /// The proposal's fallback list head.
    irq_freelist: Atomic,
}

/// A frozen slab's `{freelist, counters}` (counters = objects in use).
pub struct SlabState {
    pair: DoubleWord,
    objects: u64,
}

struct Ghost {
    holders: Vec<Vec<(Name, Holder)>>,
    /// Operations completed per CPU (for the "interrupted" tracepoints).
    ops: Vec<u64>,
}

/// The cache: per-CPU state, slabs, objects' free pointers, ghost state.
pub struct Slub {
    pub variant: Variant,
    cpus: Vec<KmemCacheCpu>,
    slabs: Vec<SlabState>,
    /// Free pointer of each object (index 0 unused).
    fp: Vec<Atomic>,
    slab_of: Vec<usize>,
    ghost: GhostMutex<Ghost>,
}

fn link(fp: &mut [u64], list: &[u64]) -> u64 {
    for w in list.windows(2) {
        fp[w[0] as usize] = w[1];
    }
    if let Some(&last) = list.last() {
        fp[last as usize] = NULL;
    }
    list.first().copied().unwrap_or(NULL)
}

impl Slub {
    /// kmem_cache_create + the state `setup` describes (built directly, not
    /// traced).
    pub fn new(variant: Variant, setup: &Setup) -> Slub {
        let n = setup.objects();
        let mut fp = vec![NULL; n + 1];
        let cpu_heads: Vec<u64> = setup
            .cpu_freelist
            .iter()
            .map(|l| link(&mut fp, l))
            .collect();
        let slab_heads: Vec<u64> = setup
            .slab_freelist
            .iter()
            .map(|l| link(&mut fp, l))
            .collect();
        let irq_heads: Vec<u64> = setup
            .irq_freelist
            .iter()
            .map(|l| link(&mut fp, l))
            .collect();
        let cpus = cpu_heads
            .iter()
            .enumerate()
            .map(|(cpu, &head)| {
                let head = if variant.versioned() {
                    Head::Versioned(DoubleWord::with_format(
                        &format!("c{cpu}->freelist_tid"),
                        PAIR_LO_BITS,
                        head,
                        variant.init_tid(cpu),
                        Show::With(show_cpu_pair),
                    ))
                } else {
                    Head::Word(Atomic::with_format(
                        format!("c{cpu}->freelist"),
                        head,
                        Show::With(obj_name),
                    ))
                };
                KmemCacheCpu {
                    head,
                    slab: setup.cpu_slab[cpu],
                    lock: Atomic::new(format!("c{cpu}->lock"), 0),
                    pending: Atomic::new(format!("c{cpu}->pending"), 0),
                    irq_freelist: Atomic::with_format(
                        format!("c{cpu}->irq_freelist"),
                        irq_heads.get(cpu).copied().unwrap_or(NULL),
                        Show::With(obj_name),
                    ),
                }
            })
            .collect();
        let slabs = slab_heads
            .iter()
            .enumerate()
            .map(|(s, &head)| {
                let objects = setup.slab_of.iter().skip(1).filter(|&&o| o == s).count() as u64;
                let free = setup.slab_freelist[s].len() as u64;
                SlabState {
                    pair: DoubleWord::with_format(
                        &format!("slab{s}->freelist_counters"),
                        PAIR_LO_BITS,
                        head,
                        objects - free,
                        Show::With(show_slab_pair),
                    ),
                    objects,
                }
            })
            .collect();
        let mut holders = vec![Vec::new(); n + 1];
        for (o, who) in &setup.owned {
            holders[*o as usize].push((intern(who), Holder::Owned));
        }
        Slub {
            variant,
            cpus,
            slabs,
            fp: (0..=n)
                .map(|o| Atomic::with_format(format!("obj{o}->next"), fp[o], Show::With(obj_name)))
                .collect(),
            slab_of: setup.slab_of.clone(),
            ghost: GhostMutex::new(Ghost {
                holders,
                ops: vec![0; setup.cpu_slab.len()],
            }),
        }
    }

    fn ghost<R>(&self, f: impl FnOnce(&mut Ghost) -> R) -> R {
        f(&mut self.ghost.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn hold(&self, t: &Task, obj: u64, h: Holder) {
        self.ghost(|g| g.holders[obj as usize].push((t.name(), h)));
    }

    fn unhold(&self, t: &Task, obj: u64, h: Holder) {
        self.ghost(|g| {
            let hs = &mut g.holders[obj as usize];
            if let Some(i) = hs.iter().position(|(w, x)| *w == t.name() && *x == h) {
                hs.remove(i);
            }
        });
    }

    /// The allocator hands `obj` to its caller.
    fn handed_out(&self, t: &Task, obj: u64) {
        self.unhold(t, obj, Holder::InHand);
        self.hold(t, obj, Holder::Owned);
        self.op_done(t);
        t.step(Effect::Return(obj_val(obj)));
    }

    fn op_done(&self, t: &Task) {
        let cpu = t.cpu().expect("allocator calls run on a CPU");
        self.ghost(|g| g.ops[cpu] += 1);
    }

    fn ops_on(&self, cpu: usize) -> u64 {
        self.ghost(|g| g.ops[cpu])
    }

    /// kmem_cache_alloc: the allocation entry of each variant; `None` is
    /// NULL (the model has no page allocator to grow the cache).
    pub fn kmem_cache_alloc(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("kmem_cache_alloc");
        let got = if self.variant.is_guzik() {
            self.guzik_slab_alloc(c)
        } else {
            self.slab_alloc_node(c)
        };
        if got.is_none() {
            self.op_done(c);
            c.step(Effect::Return(obj_val(NULL)));
        }
        got
    }

    /// kmem_cache_free: the free entry of each variant.
    pub fn kmem_cache_free(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("kmem_cache_free");
        self.unhold(c, obj, Holder::Owned);
        self.hold(c, obj, Holder::InHand);
        if self.variant.is_guzik() {
            self.guzik_slab_free(c, obj);
        } else {
            self.do_slab_free(c, obj);
        }
        self.unhold(c, obj, Holder::InHand);
        self.op_done(c);
    }

    /// mm/slub.c:kmalloc_nolock (v6.18): the allocation an NMI (or a BPF
    /// program under a kprobe) may make.
    pub fn kmalloc_nolock(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("kmalloc_nolock");
        let got = self.nolock_alloc(c);
        if got.is_none() {
            self.op_done(c);
            c.step(Effect::Return(obj_val(NULL)));
        }
        got
    }

    /// The objects linked from `head` (ghost reads, stops at a cycle): a
    /// list an allocator detached in one step, held until it is installed.
    fn chain_from(&self, head: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut o = head;
        while o != NULL && !out.contains(&o) && out.len() < self.fp.len() {
            out.push(o);
            o = self.fp[o as usize].peek();
        }
        out
    }

    fn walk(&self, list: List, head: u64) -> Chain {
        let mut ch = Chain {
            list,
            objects: [0; MAX_OBJECTS],
            len: 0,
            mask: 0,
            cycle: false,
        };
        let mut o = head;
        while o != NULL {
            if ch.contains(o) || usize::from(ch.len) == MAX_OBJECTS {
                ch.cycle = true;
                break;
            }
            ch.objects[usize::from(ch.len)] = o as u8;
            ch.len += 1;
            ch.mask |= 1 << o;
            o = self.fp[o as usize].peek();
        }
        ch
    }

    /// Objects in the cache (numbered 1..=n).
    pub fn objects(&self) -> usize {
        self.fp.len() - 1
    }

    /// CPUs with a `kmem_cache_cpu`.
    pub fn ncpus(&self) -> usize {
        self.cpus.len()
    }

    /// The slab `obj` belongs to.
    pub fn slab_of(&self, obj: u64) -> usize {
        self.slab_of[obj as usize]
    }

    /// `c->slab` of CPU `i`.
    pub fn cpu_slab(&self, i: usize) -> usize {
        self.cpus[i].slab
    }

    /// CPU `i`'s freelist head, tid (for variants that have one) and
    /// whether it is inside its local-lock section, without walking the list.
    pub fn cpu_head(&self, i: usize) -> (u64, Option<u64>, bool) {
        let kc = &self.cpus[i];
        let (head, tid) = kc.peek();
        (head, tid, kc.lock.peek() != 0)
    }

    /// CPU `i`'s `kmem_cache_cpu` as observers see it (ghost peeks only).
    pub fn cpu_view(&self, i: usize) -> CpuView {
        let kc = &self.cpus[i];
        let (head, tid) = kc.peek();
        CpuView {
            slab: kc.slab,
            freelist: self.walk(List::Cpu(i as u8), head),
            tid,
            locked: kc.lock.peek() != 0,
            irq_freelist: self
                .variant
                .is_guzik()
                .then(|| self.walk(List::Irq(i as u8), kc.irq_freelist.peek())),
        }
    }

    /// Every list walked once, per-CPU ones first, then the slabs'.
    pub fn lists(&self) -> Lists {
        let mut all = Lists {
            chains: [None; MAX_LISTS],
            n: 0,
        };
        for ch in self.chains() {
            assert!(all.n < MAX_LISTS, "more lists than an observation holds");
            all.chains[all.n] = Some(ch);
            all.n += 1;
        }
        all
    }

    /// Every list, per-CPU ones first, then the slabs'.
    pub fn chains(&self) -> impl Iterator<Item = Chain> + '_ {
        let per_cpu = (0..self.cpus.len()).flat_map(move |i| {
            let v = self.cpu_view(i);
            std::iter::once(v.freelist).chain(v.irq_freelist)
        });
        let slabs = self
            .slabs
            .iter()
            .enumerate()
            .map(|(i, sl)| self.walk(List::Slab(i as u8), sl.pair.peek().0));
        per_cpu.chain(slabs)
    }

    /// Calls `f` with each object's holders (index 0 unused).
    pub fn with_holders<R>(&self, f: impl FnOnce(&[Vec<(Name, Holder)>]) -> R) -> R {
        self.ghost(|g| f(&g.holders))
    }

    /// One line per CPU and slab, then who holds what: a violation's state.
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        for i in 0..self.cpus.len() {
            let c = self.cpu_view(i);
            let tid = c.tid.map(|t| format!(" tid={t}")).unwrap_or_default();
            let irq = c
                .irq_freelist
                .map(|ch| format!(" irq_freelist={}", ch.render()))
                .unwrap_or_default();
            lines.push(format!(
                "cpu{i}: slab{} freelist={}{tid}{irq}",
                c.slab,
                c.freelist.render()
            ));
        }
        for ch in self.chains().filter(|c| matches!(c.list, List::Slab(_))) {
            lines.push(format!("{}={}", ch.list, ch.render()));
        }
        let held: Vec<String> = self.with_holders(|holders| {
            holders
                .iter()
                .enumerate()
                .flat_map(|(o, hs)| {
                    hs.iter().map(move |(who, h)| match h {
                        Holder::Owned => format!("obj{o}:{who}"),
                        Holder::InHand => format!("obj{o}:{who}(in hand)"),
                    })
                })
                .collect()
        });
        lines.push(format!(
            "held: {}",
            if held.is_empty() {
                "-".to_string()
            } else {
                held.join(" ")
            }
        ));
        lines.join("\n")
    }

    /// mm/slub.c:set_freepointer (v6.12): link `obj` to `next`.
    fn set_freepointer(&self, t: &Task, obj: u64, next: u64) {
        self.fp[obj as usize].write_once(t, next);
    }

    /// mm/slub.c:get_freepointer_safe (v6.12): the speculative, non-faulting
    /// read of a possibly already allocated object's free pointer.
    fn get_freepointer_safe(&self, t: &Task, obj: u64) -> u64 {
        self.fp[obj as usize].read_once(t)
    }

    fn in_irq(t: &Task) -> bool {
        t.context() != Context::Task
    }
}

impl KmemCacheCpu {
    fn peek(&self) -> (u64, Option<u64>) {
        match &self.head {
            Head::Versioned(dw) => {
                let (f, t) = dw.peek();
                (f, Some(t))
            }
            Head::Word(w) => (w.peek(), None),
        }
    }

    /// READ_ONCE(c->tid); 0 for single-word layouts, which have no tid.
    fn read_tid(&self, t: &Task) -> u64 {
        match &self.head {
            Head::Versioned(dw) => dw.read_hi(t),
            Head::Word(_) => 0,
        }
    }

    /// READ_ONCE(c->freelist).
    fn read_freelist(&self, t: &Task) -> u64 {
        match &self.head {
            Head::Versioned(dw) => dw.read_lo(t),
            Head::Word(w) => w.read_once(t),
        }
    }

    /// `c->freelist = v` by the slow path (IRQs off).
    fn write_freelist(&self, t: &Task, v: u64) {
        match &self.head {
            Head::Versioned(dw) => dw.write_lo(t, v),
            Head::Word(w) => w.write_once(t, v),
        }
    }

    /// `c->tid = v` by the slow path (IRQs off); nothing without a tid.
    fn write_tid(&self, t: &Task, v: u64) {
        if let Head::Versioned(dw) = &self.head {
            dw.write_hi(t, v);
        }
    }

    /// The CPU-local fast-path update of the head: the double-width
    /// `this_cpu_try_cmpxchg128` on `{freelist, tid}`, or a single-width
    /// `this_cpu_cmpxchg` on the freelist word. True on success.
    fn update_freelist_fast(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        match &self.head {
            Head::Versioned(dw) => dw.this_cpu_cmpxchg_double(t, old, new),
            Head::Word(w) => w.cmpxchg_relaxed(t, old.0, new.0) == old.0,
        }
    }
}
