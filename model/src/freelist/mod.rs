//! mm/slub.c: the per-CPU ABA-safe freelist of SLUB's `kmem_cache_cpu`, as
//! the v6.18 merge has it (f6db358deaea, 'slab-for-6.18-rc1': the last
//! kernel with the per-CPU `{freelist, tid}` fast path; the structure lived
//! from v2.6.39 until sheaves replaced it), and Mateusz Guzik's 8-byte
//! proposal (linux-fsdevel, 15 Aug 2024).
//!
//! - [`slub`]: the kernel's design — `{freelist, tid}` updated by one
//!   CPU-local double-width cmpxchg on the fast paths, `c->slab` read after
//!   the tid, the slow path under the local lock with its `reread_slab`
//!   re-check, slabs deactivated onto the node's partial list and adopted
//!   again by any CPU, remote frees into `slab->freelist`, the flush as a
//!   work item, `kmalloc_nolock`/`kfree_nolock` for NMI context, and the
//!   PREEMPT_RT variant where both fast paths take the local lock.
//! - [`guzik`]: the proposal — a single-word freelist, a "pending alloc"
//!   marker, a fallback list for frees that interrupt a pending alloc, and an
//!   alloc slow path that drains it with IRQs off.
//!
//! Objects are numbered `1..=n`; `0` is NULL. A free object stores the next
//! free object in its free pointer, an [`Atomic`] because the alloc fast path
//! reads it speculatively (`get_freepointer_safe`); an allocated object's
//! owner writes its own data over that word ([`GARBAGE`]), so a speculative
//! read can return garbage. Slabs are numbered from 0; `c->slab` holds the
//! slab number + 1, `0` being NULL.
//!
//! What the model leaves out (also in the spec's limits): the page allocator
//! (`new_slab` fails: a slow path that finds no partial slab returns NULL),
//! CPU partial slabs (CONFIG_SLUB_CPU_PARTIAL=n), NUMA and pfmemalloc
//! mismatches, discarding empty slabs (a node never reaches `min_partial`
//! partial slabs here), debug caches, sheaves.
//!
//! Ghost state for the specs: who holds each object — `Owned` by a caller
//! after an allocation returned it, `InHand` while an allocator has taken it
//! off a list (or is about to push it) but has not finished. Specs read it,
//! with the lists, through [`Slub`]'s observers, never through the atomics.

pub mod guzik;
pub mod slub;

use std::sync::Mutex as GhostMutex;

use crate::kernel::atomic::Atomic;
use crate::kernel::cmpxchg_double::DoubleWord;
use crate::kernel::percpu::OnCpu;
use crate::kernel::spinlock::{Locked, SpinLock};
use crate::kernel::task::Task;
use crate::sync;
use crate::trace::Context;
use crate::trace::{intern, Effect, Name, Show, Val};

/// NULL object pointer.
pub const NULL: u64 = 0;

/// What an allocated object's owner leaves in the word that held its free
/// pointer: no object. Reading it speculatively is legal; using it as one
/// is not.
pub const GARBAGE: u64 = 0xee;

/// The versions of the code under check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// mm/slub.c v6.18, !PREEMPT_RT: tid + CPU-local double-width cmpxchg,
    /// CPU-unique tids, slow path under the local lock, NMI allocations
    /// refused while the local lock is held, NMI frees deferred.
    Classic,
    /// mm/slub.c v6.18 with CONFIG_PREEMPT_RT: `USE_LOCKLESS_FAST_PATH()` is
    /// false, both fast paths take the local lock (a per-CPU sleeping lock
    /// that leaves preemption and IRQs on).
    PreemptRt,
    /// The fast-path cmpxchg compares the freelist pointer only (no tid).
    PointerOnly,
    /// `TID_STEP` = 1 (the !CONFIG_PREEMPTION value) on a preemptible
    /// kernel, `init_tid(cpu)` = cpu as always: tids of two CPUs meet.
    SharedTid,
    /// `load_freelist` updates `c->freelist` but forgets `next_tid`.
    LoadFreelistNoTid,
    /// `flush_slab` empties the CPU's slab without `next_tid`.
    FlushNoTid,
    /// `___slab_alloc`'s get_freelist-NULL path drops `c->slab` without
    /// `next_tid`.
    GetFreelistNullKeepsTid,
    /// `do_slab_free` reads `c->slab` before `c->tid` (against the order
    /// the `barrier()` comment requires).
    FreeReadsSlabBeforeTid,
    /// PREEMPT_RT, whose slow path can be preempted between its read of
    /// `c->slab` and the local lock, without the check of `c->slab` once it
    /// holds the lock (no `reread_slab`).
    RtSlowpathSkipsSlabRecheck,
    /// The alloc fast path loads the next object's free pointer (a
    /// prefetch turned into a load) before its cmpxchg validated `next`.
    PrefetchLoadsNextEarly,
    /// `kmalloc_nolock` from NMI without the `local_lock_is_locked` check.
    NolockNoLockCheck,
    /// `kfree_nolock` from NMI frees through the fast path even while the
    /// local lock is held, instead of deferring.
    KfreeNolockNoDefer,
    /// PREEMPT_RT with the lockless fast paths of !RT kept.
    RtLocklessFastPath,
    /// `___slab_alloc`'s retry_load_slab installs the slab it adopted
    /// without checking `c->slab`: a slab an interrupt installed in the
    /// window after the task took its own, and the objects on that slab's
    /// `c->freelist`, are written over.
    RetryLoadSlabSkipsFlush,
    /// `flush_all` runs `__flush_cpu_slab` (meant for a dead CPU) on each
    /// live CPU from the caller's CPU instead of queueing work on it.
    RemoteFlushLiveCpu,
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
    /// Whether this is `v`: a variant site ([`crate::patch`]).
    #[track_caller]
    pub fn is(self, v: Variant) -> bool {
        crate::patch::site(self == v)
    }

    /// Whether this is one of `vs`: one variant site for all of them.
    #[track_caller]
    pub fn is_any(self, vs: &[Variant]) -> bool {
        crate::patch::site(vs.contains(&self))
    }

    /// Whether the variant is the proposal's single-word design.
    pub fn is_guzik(self) -> bool {
        self.is_any(&[
            Variant::Guzik8Byte,
            Variant::GuzikFlag,
            Variant::GuzikPreemptible,
            Variant::GuzikDrainIrqsOn,
            Variant::GuzikNoDrain,
            Variant::GuzikNmi,
        ])
    }

    /// Whether `c->freelist` is paired with `c->tid` in one double word.
    fn versioned(self) -> bool {
        !self.is_guzik() && !self.is(Variant::PointerOnly)
    }

    /// Whether the kernel is built with CONFIG_PREEMPT_RT.
    pub fn preempt_rt(self) -> bool {
        self.is_any(&[
            Variant::PreemptRt,
            Variant::RtLocklessFastPath,
            Variant::RtSlowpathSkipsSlabRecheck,
        ])
    }

    /// mm/slub.c:USE_LOCKLESS_FAST_PATH (v6.18): false on PREEMPT_RT.
    fn lockless_fast_path(self) -> bool {
        !self.preempt_rt() || self.is(Variant::RtLocklessFastPath)
    }

    /// mm/slub.c:TID_STEP (v6.18): `roundup_pow_of_two(CONFIG_NR_CPUS)` with
    /// CONFIG_PREEMPTION (two CPUs here), 1 without.
    pub fn tid_step(self) -> u64 {
        if self.is(Variant::SharedTid) {
            1
        } else {
            2
        }
    }

    /// mm/slub.c:init_tid (v6.18): the CPU number, whatever the step.
    pub fn init_tid(self, cpu: usize) -> u64 {
        cpu as u64
    }
}

/// The initial state of one execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Slab of each object, indexed by object (index 0, NULL, unused).
    pub slab_of: Vec<usize>,
    /// `c->slab` of each CPU (a slab frozen for it), or none.
    pub cpu_slab: Vec<Option<usize>>,
    /// Initial `c->freelist` of each CPU, head first.
    pub cpu_freelist: Vec<Vec<u64>>,
    /// Initial `slab->freelist` of each slab, head first.
    pub slab_freelist: Vec<Vec<u64>>,
    /// The node's partial list, head first (slabs not frozen for a CPU).
    pub node_partial: Vec<usize>,
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

    /// Number of slabs.
    pub fn slabs(&self) -> usize {
        self.slab_freelist.len()
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
    /// A CPU's list of frees deferred by `kfree_nolock` (`defer_free`).
    Deferred(u8),
    /// `slab->freelist` of a slab.
    Slab(u8),
}

impl std::fmt::Display for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            List::Cpu(i) => write!(f, "c{i}->freelist"),
            List::Irq(i) => write!(f, "c{i}->irq_freelist"),
            List::Deferred(i) => write!(f, "defer_free_objects[{i}]"),
            List::Slab(i) => write!(f, "slab{i}->freelist"),
        }
    }
}

/// One freelist as observed: its objects from the head, whether the walk ran
/// into a cycle, and whether a link points at no object. Fixed-size, so
/// observing allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    pub list: List,
    objects: [u8; MAX_OBJECTS],
    len: u8,
    /// Bit `o` set for each object `o` on the list.
    mask: u32,
    pub cycle: bool,
    /// A link that is no object (an allocated object's data), if any.
    pub wild: Option<u64>,
}

impl Chain {
    /// The objects from the head.
    pub fn objects(&self) -> impl Iterator<Item = u64> + '_ {
        self.objects[..usize::from(self.len)]
            .iter()
            .map(|&o| u64::from(o))
    }

    pub fn contains(&self, obj: u64) -> bool {
        obj < 32 && self.mask >> obj & 1 == 1
    }

    /// The head object, NULL for an empty list.
    pub fn head(&self) -> u64 {
        self.objects().next().unwrap_or(NULL)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.wild.is_none()
    }

    /// `obj1→obj2`, `NULL`, with `(cycle)` or `→garbage` where the walk
    /// stopped.
    pub fn render(&self) -> String {
        let mut s: Vec<String> = self.objects().map(obj_name).collect();
        if self.cycle {
            s.push("(cycle)".to_string());
        }
        if let Some(w) = self.wild {
            s.push(obj_name(w));
        }
        if s.is_empty() {
            "NULL".to_string()
        } else {
            s.join("→")
        }
    }
}

/// Lists an observation holds: three per CPU and one per slab.
const MAX_LISTS: usize = 12;

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
    /// `c->slab`, none for NULL.
    pub slab: Option<usize>,
    pub freelist: Chain,
    /// `c->tid`, for variants that have one.
    pub tid: Option<u64>,
    /// Whether the CPU's local lock is held (its fields may be half
    /// updated).
    pub locked: bool,
    /// The proposal's fallback list.
    pub irq_freelist: Option<Chain>,
}

/// A slab's `{freelist, counters}` as observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabView {
    pub inuse: u64,
    pub frozen: bool,
    /// Whether it is on the node's partial list.
    pub on_partial: bool,
}

/// Bits of the packed pair that hold the object (the model has < 256).
const PAIR_LO_BITS: u32 = 8;

/// The `frozen` bit of a slab's counters word (above `inuse`).
const FROZEN: u64 = 1 << 7;

fn show_cpu_pair(w: u64) -> String {
    format!("{{{}, tid {}}}", obj_name(w & 0xff), w >> PAIR_LO_BITS)
}

fn show_counters(counters: u64) -> String {
    let frozen = if counters & FROZEN != 0 {
        ", frozen"
    } else {
        ""
    };
    format!("inuse {}{frozen}", counters & !FROZEN)
}

fn show_slab_pair(w: u64) -> String {
    format!(
        "{{{}, {}}}",
        obj_name(w & 0xff),
        show_counters(w >> PAIR_LO_BITS)
    )
}

fn show_slab(v: u64) -> String {
    if v == 0 {
        "NULL".to_string()
    } else {
        format!("slab{}", v - 1)
    }
}

/// An object pointer as a trace value.
fn obj_val(obj: u64) -> Val {
    Val::with(obj, Show::With(obj_name))
}

/// An object pointer as the trace shows it.
pub fn obj_name(v: u64) -> String {
    match v {
        NULL => "NULL".to_string(),
        GARBAGE => "garbage".to_string(),
        o => format!("obj{o}"),
    }
}

/// The word(s) holding a CPU's freelist head.
enum Head {
    /// `{c->freelist, c->tid}`, one double word.
    Versioned(DoubleWord),
    /// A single-word `c->freelist` (pointer-only, the proposal).
    Word(Atomic),
}

/// mm/slub.c:struct kmem_cache_cpu (v6.18), plus the proposal's fields and
/// the CPU's `defer_free_objects`.
pub struct KmemCacheCpu {
    head: Head,
    /// `c->slab`: the slab number + 1, 0 for NULL.
    slab: Atomic,
    /// `c->lock` (`local_trylock_t`): 1 while held. On PREEMPT_RT it is the
    /// word of the per-CPU sleeping lock itself, whose waiters sleep on
    /// `rt_wait`.
    lock: Atomic,
    rt_wait: (sync::Mutex, sync::Condvar),
    /// The proposal's pending-alloc marker.
    pending: Atomic,
    /// The proposal's fallback list head.
    irq_freelist: Atomic,
    /// `defer_free_objects.objects` of this CPU: an llist linked through
    /// the objects' free pointers.
    defer: Atomic,
}

/// A slab's `{freelist, counters}` (counters = objects in use, frozen).
pub struct SlabState {
    pair: DoubleWord,
    objects: u64,
}

/// mm/slub.c:struct kmem_cache_node (v6.18), reduced to its partial list.
struct Node {
    list_lock: SpinLock,
    partial: Locked<Vec<usize>>,
}

struct Ghost {
    holders: Vec<Vec<(Name, Holder)>>,
    /// Operations completed per CPU (for the "interrupted" tracepoints).
    ops: Vec<u64>,
    /// Slabs whose deactivation `defer_deactivate_slab` postponed, with
    /// the objects of their CPU freelist (held in hand meanwhile).
    deferred_slabs: Vec<(usize, Vec<u64>)>,
}

/// The cache: per-CPU state, slabs, the node, objects' free pointers, ghost
/// state.
pub struct Slub {
    pub variant: Variant,
    cpus: Vec<KmemCacheCpu>,
    slabs: Vec<SlabState>,
    node: Node,
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

fn slab_word(slab: Option<usize>) -> u64 {
    slab.map_or(0, |s| s as u64 + 1)
}

impl Slub {
    /// kmem_cache_create + the state `setup` describes (built directly, not
    /// traced).
    pub fn new(variant: Variant, setup: &Setup) -> Slub {
        let n = setup.objects();
        let mut fp = vec![NULL; n + 1];
        for (o, _) in &setup.owned {
            fp[*o as usize] = GARBAGE;
        }
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
            .map(|(cpu, &head)| KmemCacheCpu::new(variant, cpu, head, setup, &irq_heads))
            .collect();
        let slabs = slab_heads
            .iter()
            .enumerate()
            .map(|(s, &head)| {
                let objects = setup.slab_of.iter().skip(1).filter(|&&o| o == s).count() as u64;
                // Objects on a CPU's lists count as in use: a frozen slab
                // gave its CPU its whole freelist at once.
                let inuse = objects - setup.slab_freelist[s].len() as u64;
                let frozen = if setup.cpu_slab.contains(&Some(s)) {
                    FROZEN
                } else {
                    0
                };
                let counters = inuse | frozen;
                SlabState {
                    pair: DoubleWord::with_format(
                        &format!("slab{s}->freelist_counters"),
                        PAIR_LO_BITS,
                        head,
                        counters,
                        Show::With(show_slab_pair),
                    )
                    .with_halves(
                        (&format!("slab{s}->freelist"), Show::With(obj_name)),
                        (&format!("slab{s}->counters"), Show::With(show_counters)),
                    ),
                    objects,
                }
            })
            .collect();
        let list_lock = SpinLock::new("n->list_lock");
        let partial = Locked::new(&list_lock, setup.node_partial.clone());
        let mut holders = vec![Vec::new(); n + 1];
        for (o, who) in &setup.owned {
            holders[*o as usize].push((intern(who), Holder::Owned));
        }
        Slub {
            variant,
            cpus,
            slabs,
            node: Node { list_lock, partial },
            fp: (0..=n)
                .map(|o| Atomic::with_format(format!("obj{o}->next"), fp[o], Show::With(obj_name)))
                .collect(),
            slab_of: setup.slab_of.clone(),
            ghost: GhostMutex::new(Ghost {
                holders,
                ops: vec![0; setup.cpu_slab.len()],
                deferred_slabs: Vec::new(),
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
            self.slab_alloc_node(c, true).ok().flatten()
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
            self.do_slab_free(c, obj, true);
        }
        self.unhold(c, obj, Holder::InHand);
        self.op_done(c);
    }

    /// mm/slub.c:kmalloc_nolock (v6.18): the allocation an NMI (or a BPF
    /// program) may make. NULL when it would have to wait.
    pub fn kmalloc_nolock(&self, c: &OnCpu) -> Option<u64> {
        let _f = c.enter("kmalloc_nolock");
        let got = self.nolock_alloc(c);
        if got.is_none() {
            self.op_done(c);
            c.step(Effect::Return(obj_val(NULL)));
        }
        got
    }

    /// mm/slub.c:kfree_nolock (v6.18): the free an NMI may make.
    pub fn kfree_nolock(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("kfree_nolock");
        self.unhold(c, obj, Holder::Owned);
        self.hold(c, obj, Holder::InHand);
        if self.variant.is_guzik() {
            self.guzik_slab_free(c, obj);
        } else {
            self.do_slab_free(c, obj, false);
        }
        self.unhold(c, obj, Holder::InHand);
        self.op_done(c);
    }

    /// What the caller of an allocation does first with its object: writes
    /// its own data over the word that held the free pointer.
    pub fn init_object(&self, c: &OnCpu, obj: u64) {
        let _f = c.enter("init_object");
        self.fp[obj as usize].store_plain(c, GARBAGE);
    }

    /// The objects linked from `head` (ghost reads, stops at a cycle or a
    /// wild link): a list an allocator detached in one step, held until it
    /// is installed.
    fn chain_from(&self, head: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut o = head;
        while self.is_object(o) && !out.contains(&o) {
            out.push(o);
            o = self.fp[o as usize].peek();
        }
        out
    }

    fn is_object(&self, o: u64) -> bool {
        o != NULL && (o as usize) < self.fp.len()
    }

    fn walk(&self, list: List, head: u64) -> Chain {
        let mut ch = Chain {
            list,
            objects: [0; MAX_OBJECTS],
            len: 0,
            mask: 0,
            cycle: false,
            wild: None,
        };
        let mut o = head;
        while o != NULL {
            if !self.is_object(o) {
                ch.wild = Some(o);
                break;
            }
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

    /// Number of slabs.
    pub fn nslabs(&self) -> usize {
        self.slabs.len()
    }

    /// CPU `i`'s freelist head, `c->slab`, tid (for variants that have
    /// one) and whether it is inside its local-lock section, without walking
    /// the list.
    pub fn cpu_head(&self, i: usize) -> (u64, Option<usize>, Option<u64>, bool) {
        let kc = &self.cpus[i];
        let (head, tid) = kc.peek();
        (head, kc.peek_slab(), tid, kc.lock.peek() != 0)
    }

    /// CPU `i`'s `kmem_cache_cpu` as observers see it (ghost peeks only).
    pub fn cpu_view(&self, i: usize) -> CpuView {
        let kc = &self.cpus[i];
        let (head, tid) = kc.peek();
        CpuView {
            slab: kc.peek_slab(),
            freelist: self.walk(List::Cpu(i as u8), head),
            tid,
            locked: kc.lock.peek() != 0,
            irq_freelist: self
                .variant
                .is_guzik()
                .then(|| self.walk(List::Irq(i as u8), kc.irq_freelist.peek())),
        }
    }

    /// Slab `s` as observers see it.
    pub fn slab_view(&self, s: usize) -> SlabView {
        let counters = self.slabs[s].pair.peek().1;
        SlabView {
            inuse: counters & !FROZEN,
            frozen: counters & FROZEN != 0,
            on_partial: self.node.partial.peek(|p| p.contains(&s)),
        }
    }

    /// The node's partial list (ghost).
    pub fn node_partial(&self) -> Vec<usize> {
        self.node.partial.peek(Vec::clone)
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
            let defer = self.walk(List::Deferred(i as u8), self.cpus[i].defer.peek());
            std::iter::once(v.freelist)
                .chain(v.irq_freelist)
                .chain((!defer.is_empty()).then_some(defer))
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

    /// One line per CPU and slab, the node's partial list, then who holds
    /// what: a violation's state.
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        for i in 0..self.cpus.len() {
            let c = self.cpu_view(i);
            let tid = c.tid.map(|t| format!(" tid={t}")).unwrap_or_default();
            let irq = c
                .irq_freelist
                .map(|ch| format!(" irq_freelist={}", ch.render()))
                .unwrap_or_default();
            let locked = if c.locked { " (locked)" } else { "" };
            lines.push(format!(
                "cpu{i}: slab={} freelist={}{tid}{irq}{locked}",
                show_slab(slab_word(c.slab)),
                c.freelist.render()
            ));
        }
        for ch in self
            .chains()
            .filter(|c| matches!(c.list, List::Deferred(_)))
        {
            lines.push(format!("{}={}", ch.list, ch.render()));
        }
        for (s, ch) in self
            .chains()
            .filter(|c| matches!(c.list, List::Slab(_)))
            .enumerate()
        {
            let v = self.slab_view(s);
            let frozen = if v.frozen { " frozen" } else { "" };
            lines.push(format!(
                "{}={} inuse={}{frozen}",
                ch.list,
                ch.render(),
                v.inuse
            ));
        }
        let partial: Vec<String> = self
            .node_partial()
            .iter()
            .map(|s| format!("slab{s}"))
            .collect();
        lines.push(format!("node partial: [{}]", partial.join(", ")));
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

    /// mm/slub.c:set_freepointer (v6.18): link `obj` to `next`.
    fn set_freepointer(&self, t: &Task, obj: u64, next: u64) {
        self.fp[obj as usize].store_plain(t, next);
    }

    /// mm/slub.c:get_freepointer_safe (v6.18): the speculative, non-faulting
    /// read of a possibly already allocated object's free pointer (garbage,
    /// if its owner has written it).
    fn get_freepointer_safe(&self, t: &Task, obj: u64) -> u64 {
        self.fp[obj as usize].read_once(t)
    }

    /// mm/slub.c:get_freepointer (v6.18): the free pointer of a free object.
    /// An object that is none (garbage) cannot be dereferenced.
    fn get_freepointer(&self, t: &Task, obj: u64) -> u64 {
        if !self.is_object(obj) {
            t.violation(
                "no_wild_pointer",
                format!("{} dereferenced as an object's free pointer", obj_name(obj)),
            );
        }
        self.fp[obj as usize].load_plain(t)
    }

    fn in_irq(t: &Task) -> bool {
        t.context() != Context::Task && t.context() != Context::Kthread
    }
}

impl KmemCacheCpu {
    fn new(variant: Variant, cpu: usize, head: u64, setup: &Setup, irq_heads: &[u64]) -> Self {
        let head = if variant.versioned() {
            Head::Versioned(
                DoubleWord::with_format(
                    &format!("c{cpu}->freelist_tid"),
                    PAIR_LO_BITS,
                    head,
                    variant.init_tid(cpu),
                    Show::With(show_cpu_pair),
                )
                .with_halves(
                    (&format!("c{cpu}->freelist"), Show::With(obj_name)),
                    (&format!("c{cpu}->tid"), Show::Dec),
                ),
            )
        } else {
            Head::Word(Atomic::with_format(
                format!("c{cpu}->freelist"),
                head,
                Show::With(obj_name),
            ))
        };
        KmemCacheCpu {
            head,
            slab: Atomic::with_format(
                format!("c{cpu}->slab"),
                slab_word(setup.cpu_slab[cpu]),
                Show::With(show_slab),
            ),
            lock: Atomic::new(format!("c{cpu}->lock"), 0),
            rt_wait: (sync::Mutex::new(), sync::Condvar::new()),
            pending: Atomic::new(format!("c{cpu}->pending"), 0),
            irq_freelist: Atomic::with_format(
                format!("c{cpu}->irq_freelist"),
                irq_heads.get(cpu).copied().unwrap_or(NULL),
                Show::With(obj_name),
            ),
            defer: Atomic::with_format(
                format!("defer_free_objects[{cpu}]"),
                NULL,
                Show::With(obj_name),
            ),
        }
    }

    fn peek(&self) -> (u64, Option<u64>) {
        match &self.head {
            Head::Versioned(dw) => {
                let (f, t) = dw.peek();
                (f, Some(t))
            }
            Head::Word(w) => (w.peek(), None),
        }
    }

    fn peek_slab(&self) -> Option<usize> {
        match self.slab.peek() {
            0 => None,
            s => Some(s as usize - 1),
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

    /// READ_ONCE(c->slab).
    fn read_slab(&self, t: &Task) -> Option<usize> {
        match self.slab.read_once(t) {
            0 => None,
            s => Some(s as usize - 1),
        }
    }

    /// `c->slab = slab` by the holder of the local lock.
    fn write_slab(&self, t: &Task, slab: Option<usize>) {
        self.slab.store_plain(t, slab_word(slab));
    }

    /// `c->freelist = v` by the holder of the local lock.
    fn write_freelist(&self, t: &Task, v: u64) {
        match &self.head {
            Head::Versioned(dw) => dw.write_lo(t, v),
            Head::Word(w) => w.store_plain(t, v),
        }
    }

    /// `c->tid = v` by the holder of the local lock; nothing without a tid.
    fn write_tid(&self, t: &Task, v: u64) {
        if let Head::Versioned(dw) = &self.head {
            dw.write_hi(t, v);
        }
    }

    /// The CPU-local fast-path update of the head:
    /// mm/slub.c:__update_cpu_freelist_fast (v6.18), the double-width
    /// `this_cpu_try_cmpxchg_freelist` on `{freelist, tid}`, or a
    /// single-width `this_cpu_cmpxchg` on the freelist word. True on success.
    fn update_freelist_fast(&self, t: &Task, old: (u64, u64), new: (u64, u64)) -> bool {
        match &self.head {
            Head::Versioned(dw) => dw.this_cpu_try_cmpxchg128(t, old, new),
            Head::Word(w) => w.this_cpu_cmpxchg(t, old.0, new.0) == old.0,
        }
    }
}
