//! The execution graph: each thread's events in program order, what every
//! read reads from (rf), the coherence order of every location's writes
//! (co), and the order the events were added in (their stamps), which is
//! what the optimality of the search is stated in.
//!
//! Every event keeps the prefixes it depends on as vector clocks (a
//! [`View`] counts, per thread, how many of that thread's first events are
//! in it): `porf` (program order, reads-from, spawn and join edges, and the
//! allocation of each location an access touches), `hb` (RC11's
//! happens-before), and for writes `relv`, what an acquire that reads the
//! write synchronises with. A prefix of every thread is all a view or a
//! restriction of the graph can be, because events are only ever removed
//! from the end of their thread.

use std::sync::atomic::Ordering;

use smallvec::SmallVec;
use vfsmc_model::sync::RmwOp;

/// A thread's slot in the search's registry of threads.
pub type Tid = usize;
/// A location's index in the search's registry of locations.
pub type Loc = usize;

/// An event's place: thread and index in its program order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub t: u32,
    pub i: u32,
}

impl Pos {
    pub fn new(t: Tid, i: usize) -> Pos {
        Pos {
            t: t as u32,
            i: i as u32,
        }
    }

    /// The initial write of every location: co-before all its writes and
    /// porf-before every event.
    pub const INIT: Pos = Pos { t: u32::MAX, i: 0 };

    pub fn is_init(self) -> bool {
        self == Pos::INIT
    }

    pub fn tid(self) -> Tid {
        self.t as Tid
    }

    pub fn idx(self) -> usize {
        self.i as usize
    }
}

/// How a read's value is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadKind {
    Plain,
    /// The read of a fetch-and-op: always followed by its write, which has
    /// ordering `wo`.
    Fai {
        op: RmwOp,
        wo: Ordering,
    },
    /// The read of a compare-and-exchange: followed by its write (ordering
    /// `wo`) when it read `expected`; the read has ordering `succ` then,
    /// `fail` otherwise.
    Cas {
        expected: u64,
        new: u64,
        succ: Ordering,
        fail: Ordering,
        wo: Ordering,
    },
    /// A mutex acquisition: a compare-and-exchange of 0 to 1 that must
    /// succeed (a thread never takes a lock it sees held).
    Lock,
    /// A condition variable's wait: the thread blocks while it reads
    /// `unless`, the count it saw before releasing its mutex.
    Await {
        unless: u64,
    },
}

impl ReadKind {
    /// The value the read's write part stores when the read returned
    /// `v`, or `None` when it has no write part.
    pub fn write_for(self, v: u64) -> Option<(u64, Ordering)> {
        match self {
            ReadKind::Fai { op, wo } => Some((op.apply(v), wo)),
            ReadKind::Cas {
                expected, new, wo, ..
            } if v == expected => Some((new, wo)),
            ReadKind::Lock if v == 0 => Some((1, Ordering::Relaxed)),
            _ => None,
        }
    }

    /// The read's own ordering when it returned `v` (`ord` unless a
    /// compare-and-exchange says otherwise).
    pub fn read_ord(self, v: u64, ord: Ordering) -> Ordering {
        match self {
            ReadKind::Cas {
                expected,
                succ,
                fail,
                ..
            } => {
                if v == expected {
                    succ
                } else {
                    fail
                }
            }
            _ => ord,
        }
    }
}

/// Why a thread stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Block {
    /// A round of a wait that wrote nothing since the thread's last yield:
    /// the rounds after it would read the same values (spin-assume).
    Spin,
    /// The mutex at this location is held: a removable label, taken away
    /// by the next write to the location.
    LockWait(Loc),
    /// The lock read that reads a held mutex (once nothing else could run).
    LockHeld,
    /// A wait read the count of notifications it started from.
    CondWait,
    /// The thread joins one that has not finished: a removable label.
    Join(Tid),
}

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    /// A thread's first event; `creator` is the spawn (none for main).
    Start {
        creator: Option<Pos>,
    },
    Finish,
    Create {
        child: Tid,
    },
    Join {
        child: Tid,
    },
    /// A location comes into being with its initial value. The value is
    /// the graph's: the same allocation of a thread may start with another
    /// value in another graph (it may depend on what the thread read).
    Alloc {
        loc: Loc,
        init: u64,
    },
    Read {
        loc: Loc,
        ord: Ordering,
        kind: ReadKind,
        rf: Pos,
    },
    /// A write; `rmw` when it is the write part of the read before it.
    Write {
        loc: Loc,
        ord: Ordering,
        val: u64,
        rmw: bool,
    },
    Fence {
        ord: Ordering,
    },
    /// A failed round of a retry loop that did not block.
    Yield,
    Block(Block),
}

impl Label {
    /// The location an access touches.
    pub fn loc(&self) -> Option<Loc> {
        match *self {
            Label::Read { loc, .. } | Label::Write { loc, .. } => Some(loc),
            _ => None,
        }
    }

    pub fn is_rmw_write(&self) -> bool {
        matches!(self, Label::Write { rmw: true, .. })
    }

    /// Whether the event is sequentially consistent (an RC11 SC access or
    /// SC fence).
    pub fn is_sc(&self) -> bool {
        match *self {
            Label::Read { ord, .. } | Label::Write { ord, .. } | Label::Fence { ord } => {
                ord == Ordering::SeqCst
            }
            _ => false,
        }
    }
}

/// Per thread, how many of its first events a prefix holds. Inline up to
/// eight threads: every event carries four views, and a backward revisit
/// clones the graph, so a view on the heap made that clone a `malloc` per
/// view (a third of the time of a long search).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct View(SmallVec<[u32; 8]>);

impl View {
    /// Per thread, how many of its first events the prefix holds.
    pub fn counts(&self) -> &[u32] {
        &self.0
    }

    pub fn get(&self, t: Tid) -> u32 {
        self.0.get(t).copied().unwrap_or(0)
    }

    /// Whether the event at `p` is in the prefix (the initial write is in
    /// every prefix).
    pub fn has(&self, p: Pos) -> bool {
        p.is_init() || p.i < self.get(p.tid())
    }

    /// Adds the event at `p` and, since prefixes are per-thread prefixes,
    /// every event before it in its thread.
    pub fn include(&mut self, p: Pos) {
        if p.is_init() {
            return;
        }
        let t = p.tid();
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] = self.0[t].max(p.i + 1);
    }

    pub fn join(&mut self, other: &View) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }
}

/// One event with what the search keeps of it.
#[derive(Clone, Debug)]
pub struct Event {
    pub label: Label,
    /// Its index in the order events were added.
    pub stamp: u32,
    /// Whether a backward revisit may still change what it reads, or
    /// delete it (false for the prefix of a write that revisited a read).
    pub revisitable: bool,
    /// Whether it was added the way the canonical exploration adds it: a
    /// read of the co-latest write, a write placed co-last.
    pub added_max: bool,
    pub porf: View,
    pub hb: View,
    /// Writes: the views an acquire reading it gets.
    pub relv: View,
    /// Every view a read so far in the thread could pass on to an acquire
    /// fence (the `relv` of what each read read).
    pub acq: View,
}

/// One execution graph.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Events per thread slot; an empty slot has no thread in this graph.
    pub threads: Vec<Vec<Event>>,
    /// Per location, its writes in coherence order (the initial write,
    /// first of all, is implicit).
    pub co: Vec<Vec<Pos>>,
    /// Per location, its allocation event.
    pub alloc: Vec<Option<Pos>>,
    /// The events in the order they were added: `order[stamp]`.
    pub order: Vec<Pos>,
    /// Per location, the positions its reads were added at. An entry may
    /// outlive its read (a thread truncated by a revisit): the queries
    /// check that a read of the location is still there.
    reads: Vec<Vec<Pos>>,
}

impl Graph {
    pub fn event(&self, p: Pos) -> &Event {
        &self.threads[p.tid()][p.idx()]
    }

    pub fn event_mut(&mut self, p: Pos) -> &mut Event {
        &mut self.threads[p.tid()][p.idx()]
    }

    pub fn label(&self, p: Pos) -> &Label {
        &self.event(p).label
    }

    pub fn len(&self, t: Tid) -> usize {
        self.threads.get(t).map_or(0, Vec::len)
    }

    pub fn last(&self, t: Tid) -> Option<Pos> {
        self.len(t).checked_sub(1).map(|i| Pos::new(t, i))
    }

    pub fn stamp(&self, p: Pos) -> i64 {
        if p.is_init() {
            -1
        } else {
            i64::from(self.event(p).stamp)
        }
    }

    /// Every event, in no particular order.
    pub fn positions(&self) -> impl Iterator<Item = Pos> + '_ {
        self.threads
            .iter()
            .enumerate()
            .flat_map(|(t, evs)| (0..evs.len()).map(move |i| Pos::new(t, i)))
    }

    /// The value the write at `w` stored (for the initial write of `loc`,
    /// the value its allocation gave it).
    pub fn value(&self, w: Pos, loc: Loc) -> u64 {
        if w.is_init() {
            let a = self.alloc[loc].expect("an accessed location's allocation is in the graph");
            let Label::Alloc { init, .. } = *self.label(a) else {
                unreachable!("a location's allocation is an Alloc")
            };
            return init;
        }
        match *self.label(w) {
            Label::Write { val, .. } => val,
            ref other => unreachable!("rf to a non-write {other:?}"),
        }
    }

    pub fn rf(&self, r: Pos) -> Pos {
        match *self.label(r) {
            Label::Read { rf, .. } => rf,
            ref other => unreachable!("rf of a non-read {other:?}"),
        }
    }

    pub fn co_of(&self, loc: Loc) -> &[Pos] {
        self.co.get(loc).map_or(&[], Vec::as_slice)
    }

    /// The co-latest write of `loc` (the initial write when it has none).
    pub fn co_max(&self, loc: Loc) -> Pos {
        self.co_of(loc).last().copied().unwrap_or(Pos::INIT)
    }

    /// A write's place in coherence: 0 for the initial write.
    pub fn co_index(&self, w: Pos, loc: Loc) -> usize {
        if w.is_init() {
            return 0;
        }
        1 + self
            .co_of(loc)
            .iter()
            .position(|&x| x == w)
            .expect("a write is in its location's coherence order")
    }

    /// The writes co-after `w`, nearest first.
    pub fn co_after(&self, w: Pos, loc: Loc) -> &[Pos] {
        &self.co_of(loc)[self.co_index(w, loc)..]
    }

    /// The reads of `loc`, each with the write it reads from, in position
    /// order (thread, then program order).
    pub fn reads_of(&self, loc: Loc) -> Vec<(Pos, Pos)> {
        let mut out: Vec<(Pos, Pos)> = self
            .reads
            .get(loc)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|&p| match self.threads.get(p.tid())?.get(p.idx())?.label {
                Label::Read { loc: l, rf, .. } if l == loc => Some((p, rf)),
                _ => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The reads of `loc` that read from `w`, in position order.
    pub fn readers(&self, w: Pos, loc: Loc) -> Vec<Pos> {
        self.reads_of(loc)
            .into_iter()
            .filter_map(|(p, rf)| (rf == w).then_some(p))
            .collect()
    }

    /// Adds `label` as the next event of thread `t` with its views; the
    /// read's rf and the write's co place are the caller's.
    pub fn push(&mut self, t: Tid, label: Label, locs_init: usize) -> Pos {
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, Vec::new);
        }
        if self.co.len() < locs_init {
            self.co.resize_with(locs_init, Vec::new);
            self.reads.resize_with(locs_init, Vec::new);
            self.alloc.resize(locs_init, None);
        }
        let p = Pos::new(t, self.threads[t].len());
        let stamp = self.order.len() as u32;
        self.order.push(p);
        self.threads[t].push(Event {
            label,
            stamp,
            revisitable: true,
            added_max: true,
            porf: View::default(),
            hb: View::default(),
            relv: View::default(),
            acq: View::default(),
        });
        match label {
            Label::Alloc { loc, .. } => self.alloc[loc] = Some(p),
            Label::Read { loc, .. } => self.reads[loc].push(p),
            _ => {}
        }
        self.compute_views(p);
        p
    }

    /// (Re)computes the views of the event at `p` from its predecessors:
    /// after it was added, or after its rf changed (then it is the last
    /// event of its thread, so no other view depends on it).
    pub fn compute_views(&mut self, p: Pos) {
        let pred = p.i.checked_sub(1).map(|i| Pos { t: p.t, i });
        let (mut porf, mut hb, mut acq) = match pred {
            Some(q) => {
                let e = self.event(q);
                (e.porf.clone(), e.hb.clone(), e.acq.clone())
            }
            None => Default::default(),
        };
        porf.include(p);
        hb.include(p);
        let label = *self.label(p);
        match label {
            Label::Start { creator: Some(c) } => {
                porf.join(&self.event(c).porf.clone());
                hb.join(&self.event(c).hb.clone());
            }
            Label::Join { child } => {
                let end = self.last(child).expect("a joined thread has events");
                porf.join(&self.event(end).porf.clone());
                hb.join(&self.event(end).hb.clone());
            }
            Label::Fence { ord } if is_acquire(ord) => hb.join(&acq),
            _ => {}
        }
        if let Some(loc) = label.loc() {
            if let Some(a) = self.alloc.get(loc).copied().flatten() {
                porf.join(&self.event(a).porf.clone());
            }
        }
        if let Label::Read { ord, rf, .. } = label {
            if !rf.is_init() {
                let w = self.event(rf);
                porf.join(&w.porf.clone());
                let relv = w.relv.clone();
                if is_acquire(ord) {
                    hb.join(&relv);
                }
                acq.join(&relv);
            }
        }
        let relv = match label {
            Label::Write { ord, rmw, .. } => self.release_view(p, ord, rmw, &hb),
            _ => View::default(),
        };
        let e = self.event_mut(p);
        e.porf = porf;
        e.hb = hb;
        e.acq = acq;
        e.relv = relv;
    }

    /// What an acquire that reads the write at `p` synchronises with: its
    /// own hb if it releases, that of the latest release fence before it,
    /// and, for an RMW, what the write it read passes on (release
    /// sequences through RMWs, as RC11 has them in C++20).
    fn release_view(&self, p: Pos, ord: Ordering, rmw: bool, hb: &View) -> View {
        let mut v = View::default();
        if is_release(ord) {
            v.join(hb);
        }
        let fence = self.threads[p.tid()][..p.idx()]
            .iter()
            .rev()
            .find(|e| matches!(e.label, Label::Fence { ord } if is_release(ord)));
        if let Some(f) = fence {
            v.join(&f.hb);
        }
        if rmw {
            let read = Pos { t: p.t, i: p.i - 1 };
            let src = self.rf(read);
            if !src.is_init() {
                v.join(&self.event(src).relv);
            }
        }
        v
    }

    /// Keeps, of every thread, its first `keep[t]` events (a prefix of
    /// each), and renumbers the stamps of what is left densely in their
    /// old order. Coherence and the allocation table follow.
    pub fn restrict(&mut self, keep: &[usize]) {
        for (t, evs) in self.threads.iter_mut().enumerate() {
            evs.truncate(keep.get(t).copied().unwrap_or(0));
        }
        let kept = |p: &Pos| p.idx() < keep.get(p.tid()).copied().unwrap_or(0);
        self.order.retain(kept);
        for (s, p) in self.order.clone().into_iter().enumerate() {
            self.event_mut(p).stamp = s as u32;
        }
        for ws in self.co.iter_mut().chain(&mut self.reads) {
            ws.retain(kept);
        }
        for a in &mut self.alloc {
            if a.is_some_and(|p| !kept(&p)) {
                *a = None;
            }
        }
    }

    /// Keeps the events added up to and including `stamp`.
    pub fn cut_to(&mut self, stamp: u32) {
        let keep: Vec<usize> = self
            .threads
            .iter()
            .map(|evs| evs.iter().take_while(|e| e.stamp <= stamp).count())
            .collect();
        self.restrict(&keep);
    }

    /// Removes the last event of thread `t` (a label that no longer holds:
    /// a lock that was released, a thread that finished).
    pub fn pop(&mut self, t: Tid) {
        let p = self.last(t).expect("a label to remove");
        let mut keep: Vec<usize> = self.threads.iter().map(Vec::len).collect();
        keep[t] = p.idx();
        self.restrict(&keep);
    }
}

pub fn is_acquire(o: Ordering) -> bool {
    matches!(o, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst)
}

pub fn is_release(o: Ordering) -> bool {
    matches!(o, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst)
}
