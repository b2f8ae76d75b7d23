//! What the memory model allows: which writes a new read may read, where a
//! new write may go in coherence, which reads a write may revisit, and the
//! axioms the choices cannot guarantee by themselves (RC11's SC order, or
//! sequential consistency's acyclicity), checked on every graph that was
//! not built from maximal choices alone.
//!
//! Coherence (`hb;eco` irreflexive), atomicity and no-thin-air (porf
//! acyclic) hold by construction: events are added in porf order, candidate
//! sets only offer coherent choices, and an RMW's write is placed right
//! after the write it read. What is left to check is RC11's `psc` (only
//! when the graph has two SC events or more), or, under SC, that
//! `po ∪ rf ∪ co ∪ fr` (with spawn and join) has no cycle.
//!
//! `Model::Sc` runs every access and fence as SeqCst, so happens-before is
//! porf and the candidate sets are those of sequential consistency.

use super::graph::{Graph, Label, Loc, Pos, View};

/// The memory model a search follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// RC11 (Lahav et al., PLDI 2017) without load buffering: the C11
    /// model the facade's stand-ins target.
    Rc11,
    /// Sequential consistency.
    Sc,
}

/// The latest write `x` of `loc` (in coherence) that `view` has seen:
/// itself in the view, or read by a read in the view.
fn latest_seen(g: &Graph, loc: Loc, view: &View) -> usize {
    let co = g.co_of(loc);
    let mut seen = 0;
    for (k, &w) in co.iter().enumerate() {
        if view.has(w) {
            seen = k + 1;
        }
    }
    for (r, rf) in g.reads_of(loc) {
        if view.has(r) {
            seen = seen.max(g.co_index(rf, loc));
        }
    }
    seen
}

/// The view a new event of thread `t` sees before what it reads: the hb of
/// its program-order predecessor.
pub fn view_before(g: &Graph, p: Pos, model: Model) -> View {
    match p.i.checked_sub(1) {
        Some(i) => {
            let e = g.event(Pos { t: p.t, i });
            match model {
                Model::Rc11 => e.hb.clone(),
                Model::Sc => e.porf.clone(),
            }
        }
        None => View::default(),
    }
}

/// The writes of `loc` a read that sees `view` may read, in coherence
/// order: the latest it has seen and every one after it.
pub fn coherent_stores(g: &Graph, loc: Loc, view: &View) -> Vec<Pos> {
    let from = latest_seen(g, loc, view);
    let mut out = Vec::new();
    if from == 0 {
        out.push(Pos::INIT);
    }
    out.extend(g.co_of(loc)[from.saturating_sub(1)..].iter().copied());
    out
}

/// The co-predecessors a new write of `loc` that sees `view` may be placed
/// after, the co-latest last: right after the latest write it has seen,
/// or right before any later write that is not an RMW's (an RMW's write
/// stays right after the write it read).
pub fn coherent_placings(g: &Graph, loc: Loc, view: &View, w: Pos) -> Vec<Pos> {
    let from = latest_seen(g, loc, view);
    let co: Vec<Pos> = g.co_of(loc).iter().copied().filter(|&x| x != w).collect();
    let pred = |k: usize| if k == 0 { Pos::INIT } else { co[k - 1] };
    let mut out = Vec::new();
    for (k, &w) in co.iter().enumerate().skip(from) {
        if !g.label(w).is_rmw_write() {
            out.push(pred(k));
        }
    }
    out.push(pred(co.len()));
    out
}

/// Whether the read at `r` may read `w`, a write co-before others: no
/// co-successor of `w`, nor a read of one, is in what `r` saw before.
pub fn coherent_revisit(g: &Graph, r: Pos, w: Pos, loc: Loc, model: Model) -> bool {
    let seen = view_before(g, r, model);
    let after = g.co_after(w, loc);
    after.iter().all(|&s| !seen.has(s))
        && g.reads_of(loc)
            .iter()
            .all(|&(x, rf)| !seen.has(x) || !after.contains(&rf))
}

/// Whether `g` satisfies the axioms its construction does not guarantee.
pub fn consistent(g: &Graph, model: Model) -> bool {
    match model {
        Model::Rc11 => psc_acyclic(g),
        Model::Sc => sc_acyclic(g),
    }
}

/// An access's place in the extended coherence of its location: a write
/// `(k, 0)` at co index `k`, a read `(k, 1)` after the write it reads.
/// `a` precedes `b` in `eco` exactly when `key(a) < key(b)`.
fn eco_key(g: &Graph, p: Pos) -> Option<(Loc, (usize, u8))> {
    match *g.label(p) {
        Label::Write { loc, .. } => Some((loc, (g.co_index(p, loc), 0))),
        Label::Read { loc, rf, .. } => Some((loc, (g.co_index(rf, loc), 1))),
        _ => None,
    }
}

fn hb_has(g: &Graph, a: Pos, b: Pos) -> bool {
    a != b && g.event(b).hb.has(a)
}

/// RC11's `psc` is acyclic. With SC fences only (the models' `smp_mb`),
/// `psc` is `[F];(hb ∪ hb;eco;hb);[F]`; with SC accesses the general
/// definition is computed over every pair of SC events.
fn psc_acyclic(g: &Graph) -> bool {
    let sc: Vec<Pos> = g.positions().filter(|&p| g.label(p).is_sc()).collect();
    if sc.len() < 2 {
        return true;
    }
    let accesses = eco_keys(g);
    let reach: Vec<Option<FenceReach>> = sc
        .iter()
        .map(|&p| is_fence(g, p).then(|| FenceReach::of(g, p, &accesses)))
        .collect();
    let fence_edge = |i: usize, j: usize| match (&reach[i], &reach[j]) {
        (Some(a), Some(b)) => i != j && (hb_has(g, sc[i], sc[j]) || a.eco_before(b)),
        _ => false,
    };
    if reach.iter().all(Option::is_some) {
        return acyclic(sc.len(), fence_edge);
    }
    acyclic(sc.len(), |i, j| {
        fence_edge(i, j) || psc_edge(g, sc[i], sc[j])
    })
}

fn is_fence(g: &Graph, p: Pos) -> bool {
    matches!(g.label(p), Label::Fence { .. })
}

/// Every access of `g` with its location and [`eco_key`], computed once per
/// check: a key costs a walk of its location's coherence order.
fn eco_keys(g: &Graph) -> Vec<(Pos, Loc, (usize, u8))> {
    g.positions()
        .filter_map(|e| eco_key(g, e).map(|(loc, key)| (e, loc, key)))
        .collect()
}

/// What an SC fence reaches in extended coherence: per location (indexed
/// by [`Loc`]), the eco-earliest access hb-after it and the eco-latest
/// access hb-before it. Computed once per fence, so the pairs cost a walk
/// of the locations each.
struct FenceReach {
    after: Vec<Option<(usize, u8)>>,
    before: Vec<Option<(usize, u8)>>,
}

impl FenceReach {
    fn of(g: &Graph, f: Pos, accesses: &[(Pos, Loc, (usize, u8))]) -> FenceReach {
        let mut after = vec![None; g.co.len()];
        let mut before = vec![None; g.co.len()];
        for &(e, loc, key) in accesses {
            if e != f && g.event(e).hb.has(f) {
                let k: &mut Option<(usize, u8)> = &mut after[loc];
                *k = Some(k.map_or(key, |k| k.min(key)));
            }
            if hb_has(g, e, f) {
                let k: &mut Option<(usize, u8)> = &mut before[loc];
                *k = Some(k.map_or(key, |k| k.max(key)));
            }
        }
        FenceReach { after, before }
    }

    /// `hb;eco;hb` from this fence to `other`: something after this one
    /// is eco-before something before `other`.
    fn eco_before(&self, other: &FenceReach) -> bool {
        self.after
            .iter()
            .zip(&other.before)
            .any(|(a, b)| matches!((a, b), (Some(a), Some(b)) if a < b))
    }
}

/// RC11's `psc = psc_base ∪ psc_F` between SC events `a` and `b`:
/// `([SC] ∪ [F];hb?);scb;([SC] ∪ hb?;[F])` with
/// `scb = po ∪ po|≠loc;hb;po|≠loc ∪ hb|loc ∪ co ∪ fr`; the fence-to-fence
/// part `[F];(hb ∪ hb;eco;hb);[F]` is the caller's.
fn psc_edge(g: &Graph, a: Pos, b: Pos) -> bool {
    if a == b {
        return false;
    }
    let is_fence = |p: Pos| is_fence(g, p);
    let froms: Vec<Pos> = if is_fence(a) {
        g.positions()
            .filter(|&e| e == a || g.event(e).hb.has(a))
            .collect()
    } else {
        vec![a]
    };
    let tos: Vec<Pos> = if is_fence(b) {
        g.positions()
            .filter(|&e| e == b || hb_has(g, e, b))
            .collect()
    } else {
        vec![b]
    };
    froms
        .iter()
        .any(|&x| tos.iter().any(|&y| x != y && scb(g, x, y)))
}

fn po(a: Pos, b: Pos) -> bool {
    a.t == b.t && a.i < b.i
}

fn same_loc(g: &Graph, a: Pos, b: Pos) -> bool {
    matches!((g.label(a).loc(), g.label(b).loc()), (Some(x), Some(y)) if x == y)
}

/// RC11's `scb` between `x` and `y`.
fn scb(g: &Graph, x: Pos, y: Pos) -> bool {
    if po(x, y) || (same_loc(g, x, y) && hb_has(g, x, y)) {
        return true;
    }
    if let (Some((lx, kx)), Some((ly, ky))) = (eco_key(g, x), eco_key(g, y)) {
        // co and fr: a write or a read before a write later in coherence.
        if lx == ly && ky.1 == 0 && kx < ky {
            return true;
        }
    }
    // po|≠loc ; hb ; po|≠loc
    let next = g
        .threads
        .get(x.tid())
        .map_or(0, Vec::len)
        .saturating_sub(x.idx() + 1);
    (1..=next).any(|d| {
        let c = Pos {
            t: x.t,
            i: x.i + d as u32,
        };
        !same_loc(g, x, c)
            && (0..y.i).any(|i| {
                let e = Pos { t: y.t, i };
                !same_loc(g, e, y) && (c == e || hb_has(g, c, e))
            })
    })
}

/// Sequential consistency: `po ∪ rf ∪ co ∪ fr ∪ spawn ∪ join` is acyclic.
fn sc_acyclic(g: &Graph) -> bool {
    let all: Vec<Pos> = g.positions().collect();
    let index = |p: Pos| all.iter().position(|&x| x == p);
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); all.len()];
    let mut edge = |a: Pos, b: Pos| {
        if let (Some(i), Some(j)) = (index(a), index(b)) {
            succ[i].push(j);
        }
    };
    for &p in &all {
        if p.i > 0 {
            edge(Pos { t: p.t, i: p.i - 1 }, p);
        }
        match *g.label(p) {
            Label::Start { creator: Some(c) } => edge(c, p),
            Label::Join { child } => {
                if let Some(end) = g.last(child) {
                    edge(end, p);
                }
            }
            Label::Read { loc, rf, .. } => {
                if !rf.is_init() {
                    edge(rf, p);
                }
                if let Some(&next) = g.co_after(rf, loc).first() {
                    edge(p, next);
                }
            }
            Label::Write { loc, .. } => {
                if let Some(&next) = g.co_after(p, loc).first() {
                    edge(p, next);
                }
            }
            _ => {}
        }
    }
    acyclic(all.len(), |i, j| succ[i].contains(&j))
}

/// Whether the relation `edge` over `0..n` has no cycle (depth-first
/// search with colours).
fn acyclic(n: usize, edge: impl Fn(usize, usize) -> bool) -> bool {
    let succ: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| edge(i, j)).collect())
        .collect();
    let mut colour = vec![0u8; n];
    for root in 0..n {
        if colour[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        colour[root] = 1;
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&w) = succ[v].get(*k) {
                *k += 1;
                match colour[w] {
                    0 => {
                        colour[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => return false,
                    _ => {}
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    true
}
