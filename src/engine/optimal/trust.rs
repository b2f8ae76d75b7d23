//! TruSt (Kokologiannakis, Marmanis, Gladstein, Vafeiadis: "Truly
//! Stateless, Optimal Dynamic Partial Order Reduction", POPL 2022): each
//! execution graph is reached by exactly one sequence of steps, so each is
//! explored once, and the search keeps only the graphs on its path.
//!
//! Events are added one at a time in a fixed order (the runtime's `next`:
//! the first thread, by its place in the spawn tree, that can run). Adding
//! a read takes the co-latest write and leaves an item for every other
//! write it may read; adding a write places it co-last, leaves an item for
//! every other coherent place, and an item for every earlier read it may be
//! read by instead (a backward revisit). A revisit deletes what was added
//! after the read and is not in the write's porf-prefix, and is taken only
//! when every deleted event was added "maximally" (the way the canonical
//! exploration would add it again): otherwise the same graph is reached
//! another way. RMWs are added as a read and its write in one step, the
//! write right after the one it read; two RMWs that read the same write
//! make the graph moot, but the revisits they enable (the other order of
//! the two) are kept. The conditions are GenMC's (MPI-SWS/genmc,
//! GenMCDriver.cpp `isMaximalExtension`, `calcRevisits`,
//! `getRfsApproximation`; read as its 2025 source), written here in our
//! own words; /work/research notes are not part of the repository.
//!
//! The search is a stack of frames: a backward revisit starts a frame with
//! the restricted graph; forward items change their frame's graph in place
//! after cutting it back to their event. Items name events by position,
//! since restrictions renumber the stamps.

use std::sync::atomic::Ordering;

use super::bound;
use super::consistency::{self, Model};
use super::graph::{Block, Event, Graph, Label, Loc, Pos, ReadKind, Tid};

/// An alternative the search still has to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// The read at `r` reads `w` instead.
    Read { r: Pos, w: Pos },
    /// The write at `w` goes right after `pred` in coherence instead.
    Write { w: Pos, pred: Pos },
    /// The earlier read at `r` reads the write at `w`, and what was added
    /// after `r` outside `w`'s porf-prefix goes.
    Revisit { r: Pos, w: Pos },
}

/// An item with the choice depth of the graph that left it (how many
/// items were taken on the path from the first graph to it).
#[derive(Clone, Copy, Debug)]
struct Pending {
    item: Item,
    depth: usize,
}

struct Frame {
    g: Graph,
    items: Vec<Pending>,
}

/// Part `index` of `count` of a split search: the subtrees rooted at choice
/// depth `depth` are numbered in the order the search takes them (the same
/// in every part, which all explore what lies above that depth) and the
/// part takes those numbered `index` modulo `count`.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    pub index: usize,
    pub count: usize,
    pub depth: usize,
    /// Subtrees numbered so far.
    pub subtrees: usize,
}

/// The search's path: the current graph is the top frame's.
pub struct Search {
    pub model: Model,
    frames: Vec<Frame>,
    /// Set when the graph being built violates atomicity: the execution
    /// stops and counts for nothing.
    pub moot: bool,
    /// The choice depth of the current graph.
    depth: usize,
    pub split: Option<Split>,
    /// The preemption bound (`bound.rs`), if the search has one.
    pub bound: Option<usize>,
}

/// What a read of the runtime returned.
pub struct ReadResult {
    pub value: u64,
}

impl Search {
    pub fn new(model: Model) -> Search {
        Search {
            model,
            frames: vec![Frame {
                g: Graph::default(),
                items: Vec::new(),
            }],
            moot: false,
            depth: 0,
            split: None,
            bound: None,
        }
    }

    /// Whether the current execution is this part's own: every execution
    /// of an unsplit search; above the split depth (which every part
    /// explores), the first part's.
    pub fn owns_current(&self) -> bool {
        match self.split {
            Some(s) if self.depth < s.depth => s.index == 0,
            _ => true,
        }
    }

    /// Whether a split search leaves the next subtree at depth `depth` to
    /// another part (numbering it either way).
    fn others_subtree(&mut self, depth: usize) -> bool {
        match &mut self.split {
            Some(s) if depth == s.depth => {
                let n = s.subtrees;
                s.subtrees += 1;
                n % s.count != s.index
            }
            _ => false,
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.top().g
    }

    fn top(&self) -> &Frame {
        self.frames.last().expect("the search has a frame")
    }

    fn top_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("the search has a frame")
    }

    fn g(&mut self) -> &mut Graph {
        &mut self.top_mut().g
    }

    fn push_item(&mut self, item: Item) {
        let depth = self.depth;
        self.top_mut().items.push(Pending { item, depth });
    }

    /// The ordering an access runs with under the search's model.
    pub fn ord(&self, o: Ordering) -> Ordering {
        match self.model {
            Model::Rc11 => o,
            Model::Sc => Ordering::SeqCst,
        }
    }

    /// Removes the wait label that ends thread `t` (its mutex was released,
    /// or the thread it joins ended).
    pub fn remove_label(&mut self, t: Tid) {
        self.g().pop(t);
    }

    /// Adds an event that reads and writes nothing. A thread's end or join
    /// is where a bounded search checks its bound (`bound.rs`): the graph
    /// is moot when it has too many preemptions to be worth going on with.
    pub fn add(&mut self, t: Tid, label: Label, locs: usize) -> Pos {
        let p = self.g().push(t, label, locs);
        if let (Some(b), Label::Finish | Label::Join { .. }) = (self.bound, label) {
            if bound::exceeds(self.graph(), b) {
                self.moot = true;
            }
        }
        p
    }

    /// Adds a read of `loc` by `t` reading the co-latest write it may read,
    /// and an item for each other write it may read.
    pub fn add_read(
        &mut self,
        t: Tid,
        loc: Loc,
        ord: Ordering,
        kind: ReadKind,
        locs: usize,
    ) -> ReadResult {
        let model = self.model;
        let g = self.g();
        let p = Pos::new(t, g.len(t));
        let view = consistency::view_before(g, p, model);
        let mut cands = consistency::coherent_stores(g, loc, &view);
        let max = *cands.last().expect("a read has a write to read");
        cands.pop();
        let g = &self.top().g;
        cands.retain(|&w| offered(g, w, loc, kind, &view));
        let value = g.value(max, loc);
        let ord = self.ord(kind.read_ord(value, ord));
        let label = Label::Read {
            loc,
            ord,
            kind,
            rf: max,
        };
        let pos = self.g().push(t, label, locs);
        for w in cands {
            self.push_item(Item::Read { r: pos, w });
        }
        ReadResult { value }
    }

    /// Adds the write part of the RMW whose read is the last event of `t`,
    /// right after the write it read; finds its revisits; marks the graph
    /// moot if another RMW read the same write.
    pub fn add_rmw_write(&mut self, t: Tid, ord: Ordering, val: u64, locs: usize) -> Pos {
        let ord = self.ord(ord);
        let read = self.graph().last(t).expect("an RMW's read");
        let Label::Read { loc, rf, .. } = *self.graph().label(read) else {
            unreachable!("an RMW's write follows its read")
        };
        let label = Label::Write {
            loc,
            ord,
            val,
            rmw: true,
        };
        let w = self.g().push(t, label, locs);
        self.place_after(w, loc, rf);
        self.calc_revisits(w);
        if self.violates_atomicity(w) {
            self.moot = true;
        }
        w
    }

    /// Adds a plain write placed co-last, with an item for each other
    /// coherent place and each read it may revisit.
    pub fn add_write(&mut self, t: Tid, loc: Loc, ord: Ordering, val: u64, locs: usize) -> Pos {
        let ord = self.ord(ord);
        let label = Label::Write {
            loc,
            ord,
            val,
            rmw: false,
        };
        let w = self.g().push(t, label, locs);
        let view = consistency::view_before(self.graph(), w, self.model);
        let mut places = consistency::coherent_placings(self.graph(), loc, &view, w);
        let last = places.pop().expect("a write has a place");
        self.place_after(w, loc, last);
        for pred in places {
            self.push_item(Item::Write { w, pred });
        }
        self.calc_revisits(w);
        w
    }

    /// Moves (or puts) the write `w` of `loc` right after `pred` in
    /// coherence, and recomputes nothing else: a write's views do not
    /// depend on its place.
    fn place_after(&mut self, w: Pos, loc: Loc, pred: Pos) {
        let co = &mut self.g().co[loc];
        co.retain(|&x| x != w);
        let at = if pred.is_init() {
            0
        } else {
            1 + co.iter().position(|&x| x == pred).expect("pred is a write")
        };
        co.insert(at, w);
    }

    /// The RMW reads other than `w`'s own that read the write `w`'s read
    /// part read, by the stamps of their write parts (GenMC's pending RMWs).
    fn rival_rmws(&self, w: Pos) -> Vec<Pos> {
        let g = self.graph();
        if !g.label(w).is_rmw_write() {
            return Vec::new();
        }
        let Some(loc) = g.label(w).loc() else {
            return Vec::new();
        };
        let own = Pos { t: w.t, i: w.i - 1 };
        let src = g.rf(own);
        g.readers(src, loc)
            .into_iter()
            .filter(|&r| r != own)
            .map(|r| Pos { t: r.t, i: r.i + 1 })
            .filter(|&x| x.idx() < g.len(x.tid()) && g.label(x).is_rmw_write())
            .collect()
    }

    fn violates_atomicity(&self, w: Pos) -> bool {
        !self.rival_rmws(w).is_empty()
    }

    /// Leaves an item for every read the newest write `w` may revisit,
    /// newest read first, while the revisit is a maximal extension (it
    /// stays one for no older read once it fails for a newer one).
    fn calc_revisits(&mut self, w: Pos) {
        let g = self.graph();
        let loc = g.label(w).loc().expect("a write has a location");
        let prefix = g.event(w).porf.clone();
        let conflict = self
            .rival_rmws(w)
            .into_iter()
            .map(|x| g.event(x).stamp)
            .min();
        let mut loads: Vec<Pos> = g
            .positions()
            .filter(|&r| {
                let e = g.event(r);
                matches!(e.label, Label::Read { loc: l, .. } if l == loc)
                    && !prefix.has(r)
                    && e.revisitable
                    && e.added_max
                    && conflict.is_none_or(|c| e.stamp <= c)
            })
            .filter(|&r| consistency::coherent_revisit(g, r, w, loc, self.model))
            .collect();
        loads.sort_by_key(|&r| std::cmp::Reverse(g.event(r).stamp));
        let mut items = Vec::new();
        for r in loads {
            if !self.is_maximal_extension(r, w) {
                break;
            }
            items.push(Item::Revisit { r, w });
        }
        for item in items {
            self.push_item(item);
        }
    }

    /// Whether revisiting `r` with `w` keeps only what the canonical
    /// exploration would add back by itself: `w`'s co-successor stays, and
    /// every deleted event (and `r`) is revisitable, was added maximally,
    /// and is not co-before something that stays.
    fn is_maximal_extension(&self, r: Pos, w: Pos) -> bool {
        let g = self.graph();
        let keep = |e: Pos| keeps(g, r, w, e);
        let lw = *g.label(w);
        let loc = lw.loc().expect("a write has a location");
        if !lw.is_rmw_write() {
            if let Some(&s) = g.co_after(w, loc).first() {
                if !keep(s) {
                    return false;
                }
            }
        }
        g.positions().all(|e| {
            if e != r && keep(e) {
                return true;
            }
            let ev = g.event(e);
            let access = ev.label.loc().is_some();
            ev.revisitable && (!access || ev.added_max) && !co_before_kept(g, e, w, &keep)
        })
    }

    /// Takes the next item of the path: the graph it makes becomes the
    /// current one when it is consistent. `false` when nothing is left.
    pub fn next_graph(&mut self, locs: usize) -> bool {
        self.moot = false;
        loop {
            let Some(frame) = self.frames.last_mut() else {
                return false;
            };
            let Some(next) = frame.items.pop() else {
                self.frames.pop();
                continue;
            };
            if self.others_subtree(next.depth + 1) {
                continue;
            }
            self.depth = next.depth + 1;
            if self.apply(next.item, locs) {
                return true;
            }
        }
    }

    /// Applies `item` to the top frame (or a new one); whether the graph it
    /// makes is consistent and not moot.
    fn apply(&mut self, item: Item, locs: usize) -> bool {
        self.moot = false;
        match item {
            Item::Read { r, w } => {
                let stamp = self.graph().event(r).stamp;
                self.g().cut_to(stamp);
                self.set_rf(r, w, false, locs);
            }
            Item::Write { w, pred } => {
                let stamp = self.graph().event(w).stamp;
                let g = self.g();
                g.cut_to(stamp);
                let loc = g.label(w).loc().expect("a write has a location");
                g.event_mut(w).added_max = false;
                self.place_after(w, loc, pred);
                self.calc_revisits(w);
            }
            Item::Revisit { r, w } => self.backward_revisit(r, w, locs),
        }
        !self.moot && consistency::consistent(self.graph(), self.model)
    }

    /// Starts a frame with the graph where `r` reads `w` and only what is
    /// older than `r` or in `w`'s porf-prefix stays.
    fn backward_revisit(&mut self, r: Pos, w: Pos, locs: usize) {
        let stamp = self.graph().event(w).stamp;
        let mut g = self.graph().clone();
        g.cut_to(stamp);
        let prefix = g.event(w).porf.clone();
        let rs = g.event(r).stamp;
        let keep: Vec<usize> = g
            .threads
            .iter()
            .enumerate()
            .map(|(t, evs)| {
                let old = evs.iter().take_while(|e| e.stamp <= rs).count();
                old.max(prefix.get(t) as usize)
            })
            .collect();
        g.restrict(&keep);
        for p in g.positions().collect::<Vec<_>>() {
            if prefix.has(p) {
                g.event_mut(p).revisitable = false;
            }
        }
        self.frames.push(Frame {
            g,
            items: Vec::new(),
        });
        let loc = self.graph().label(w).loc().expect("a write has a location");
        let max = self.graph().co_max(loc) == w;
        self.set_rf(r, w, max, locs);
    }

    /// Makes the read at `r` (the last event of its thread) read `w`, and
    /// completes or drops its write part (an RMW) or turns a lock read that
    /// now sees the lock held into a wait label.
    fn set_rf(&mut self, r: Pos, w: Pos, added_max: bool, locs: usize) {
        let g = self.g();
        g.threads[r.tid()].truncate(r.idx() + 1);
        let Label::Read { loc, ord, kind, .. } = *g.label(r) else {
            unreachable!("a revisited event is a read")
        };
        let value = g.value(w, loc);
        if kind == ReadKind::Lock && value != 0 {
            // The lock read of a held mutex waits for the next write of it.
            let mut keep: Vec<usize> = g.threads.iter().map(Vec::len).collect();
            keep[r.tid()] = r.idx();
            g.restrict(&keep);
            g.push(r.tid(), Label::Block(Block::LockWait(loc)), locs);
            return;
        }
        let ord = self.ord(kind.read_ord(value, ord));
        let g = self.g();
        let e: &mut Event = g.event_mut(r);
        e.label = Label::Read {
            loc,
            ord,
            kind,
            rf: w,
        };
        e.added_max = added_max;
        g.compute_views(r);
        if let Some((new, wo)) = kind.write_for(value) {
            self.add_rmw_write(r.tid(), wo, new, locs);
        }
    }
}

/// Whether a backward revisit of `r` by `w` keeps the event `e`: it is
/// not newer than `r`, or it is in `w`'s porf-prefix.
fn keeps(g: &Graph, r: Pos, w: Pos, e: Pos) -> bool {
    g.stamp(e) <= g.stamp(r) || g.event(w).porf.has(e)
}

/// Whether the access `e` (a read: the write it reads) is co-before a write
/// other than `w` that stays.
fn co_before_kept(g: &Graph, e: Pos, w: Pos, keep: &impl Fn(Pos) -> bool) -> bool {
    let (src, loc) = match *g.label(e) {
        Label::Read { loc, rf, .. } => (rf, loc),
        Label::Write { loc, .. } => (e, loc),
        _ => return false,
    };
    g.co_after(src, loc).iter().any(|&s| s != w && keep(s))
}

/// Whether a read of `kind` that sees `view` is offered `w` as an
/// alternative to the co-latest write: not for a lock, a value that holds
/// it; not for an RMW that would succeed, a write another RMW already read
/// for good (one no revisit may change, or in what this read saw).
fn offered(g: &Graph, w: Pos, loc: Loc, kind: ReadKind, view: &super::graph::View) -> bool {
    let value = g.value(w, loc);
    if kind == ReadKind::Lock && value != 0 {
        return false;
    }
    if kind.write_for(value).is_none() {
        return true;
    }
    !g.readers(w, loc).into_iter().any(|x| {
        let rmw =
            x.idx() + 1 < g.len(x.tid()) && g.label(Pos { t: x.t, i: x.i + 1 }).is_rmw_write();
        rmw && (!g.event(x).revisitable || view.has(x))
    })
}
