//! A preemption bound for the graph search (`--max-preemptions` on
//! `optimal`), after Marmanis, Kokologiannakis and Vafeiadis, "Reconciling
//! Preemption Bounding with DPOR" (TACAS 2023), written here in our own
//! words.
//!
//! A graph's preemptions are the fewest context switches away from a thread
//! that could still run, over every schedule that runs its events in an
//! order that respects program order, reads-from and coherence (each read
//! after the write it reads, each write after the one before it in
//! coherence, each thread start after its spawn, each join after the joined
//! thread's end). That is how loom runs a graph: its stores take their
//! place in coherence when they run. From-read is left out: loom lets a
//! read take an older write without a preemption, and so does this bound.
//! Leaving it out can only lower the count, so the graphs within a bound
//! include every graph a loom schedule with that many preemptions makes.
//!
//! Cutting a graph that exceeds the bound is not enough: a later write may
//! revisit one of its reads and make a graph within the bound. As the
//! paper does, the search cuts a graph only when a thread ends or joins,
//! and only beyond the bound plus a slack that grows with the threads
//! ([`slack`]). The slack is chosen by measurement, not proven: on random
//! programs, `tests/optimal.rs` requires the bounded search to reach every
//! outcome of every graph within the bound that the unbounded search
//! reaches. Complete graphs beyond the bound that the slack lets through
//! are explored and judged like any other (each is a real execution).

use std::collections::HashMap;

use super::graph::{Graph, Label, Pos, ReadKind, Tid};

/// Whether `g` has more than `bound` preemptions plus the slack: the graph
/// the search is building may then stop.
pub fn exceeds(g: &Graph, bound: usize) -> bool {
    let start = vec![0; g.threads.len()];
    !Schedules::new(g).fits(start, None, bound + slack(g))
}

/// The fewest preemptions of any schedule of `g`.
pub fn preemptions(g: &Graph) -> usize {
    let mut s = Schedules::new(g);
    (0..)
        .find(|&n| s.fits(vec![0; g.threads.len()], None, n))
        .expect("some number of preemptions schedules a graph")
}

/// How far beyond the bound a graph under construction may go: one less
/// than the threads that did anything. The paper's slack (the smaller of
/// one less than the threads with a read a revisit may still change and
/// two less than the busy threads) is too small for this bound, which
/// counts coherence: on T0: x = 1; z += 1. T1: z += 1; x = 1. T2: z += 1,
/// the search at bound 0 with it never reached the graph where T1, T2, T0
/// increment in that order, which needs no preemption (T1, T2, T0 run one
/// after another). One less than the threads with such a read also missed
/// graphs on four threads. This slack missed none on 20,000 random
/// programs of two to four threads (`tests/optimal.rs` runs 2,000).
fn slack(g: &Graph) -> usize {
    let busy = (0..g.threads.len()).filter(|&t| g.len(t) > 1).count();
    busy.saturating_sub(1)
}

/// The search for a schedule within a number of preemptions: a state is
/// the prefix run so far (events per thread) and the thread that ran last.
struct Schedules<'a> {
    g: &'a Graph,
    /// Per thread and event, the write before it in coherence when the
    /// event is a write that is not coherence-first.
    co_pred: Vec<Vec<Option<Pos>>>,
    /// Per state, the most preemptions it is known not to finish within.
    too_few: HashMap<(Vec<u32>, Option<Tid>), usize>,
}

impl<'a> Schedules<'a> {
    fn new(g: &'a Graph) -> Schedules<'a> {
        let mut co_pred: Vec<Vec<Option<Pos>>> =
            g.threads.iter().map(|evs| vec![None; evs.len()]).collect();
        for ws in &g.co {
            for w in ws.windows(2) {
                co_pred[w[1].tid()][w[1].idx()] = Some(w[0]);
            }
        }
        Schedules {
            g,
            co_pred,
            too_few: HashMap::new(),
        }
    }

    /// Whether some schedule finishes the graph from `ran`, with `last`
    /// on the CPU, within `budget` preemptions. Each step switches to a
    /// thread with an event it may run and runs that thread as far as it
    /// goes: running on never costs a later preemption, since nothing here
    /// orders an event before another thread's. Free steps (staying, or
    /// leaving a thread that cannot run) are tried first, so a graph well
    /// within the bound is shown so by the first schedule tried.
    fn fits(&mut self, ran: Vec<u32>, last: Option<Tid>, budget: usize) -> bool {
        if (0..ran.len()).all(|t| ran[t] as usize == self.g.len(t)) {
            return true;
        }
        let key = (ran, last);
        if self.too_few.get(&key).is_some_and(|&n| n >= budget) {
            return false;
        }
        let (ran, last) = (&key.0, key.1);
        let leaving = last.is_some_and(|l| self.could_run(ran, l));
        let runnable: Vec<Tid> = (0..ran.len()).filter(|&t| self.runnable(ran, t)).collect();
        // A graph whose porf and coherence have no schedule is not one the
        // search builds; should one appear, it is not cut.
        if runnable.is_empty() {
            return true;
        }
        let cost = |t: Tid| usize::from(leaving && last != Some(t));
        let (free, paid): (Vec<Tid>, Vec<Tid>) = runnable.into_iter().partition(|&t| cost(t) == 0);
        for t in free.into_iter().chain(paid) {
            let Some(left) = budget.checked_sub(cost(t)) else {
                continue;
            };
            let mut next = ran.clone();
            self.run_on(&mut next, t);
            if self.fits(next, Some(t), left) {
                return true;
            }
        }
        self.too_few.insert(key, budget);
        false
    }
}

impl Schedules<'_> {
    /// Runs thread `t` from `ran` while its next event may run, stopping after
    /// a yield (a thread that yields hands the CPU over without a preemption).
    fn run_on(&self, ran: &mut [u32], t: Tid) {
        while self.runnable(ran, t) {
            ran[t] += 1;
            if matches!(self.g.label(Pos::new(t, ran[t] as usize - 1)), Label::Yield) {
                return;
            }
        }
    }

    /// Whether thread `t`'s next event may run after the prefix `ran`: every
    /// event in its porf-prefix has run, and for a write, the write before it
    /// in coherence.
    fn runnable(&self, ran: &[u32], t: Tid) -> bool {
        let g = self.g;
        let i = ran[t] as usize;
        if i >= g.len(t) {
            return false;
        }
        let p = Pos::new(t, i);
        let has_run = |q: &Pos| q.i < ran.get(q.tid()).copied().unwrap_or(0);
        g.event(p)
            .porf
            .counts()
            .iter()
            .enumerate()
            .all(|(u, &n)| n <= ran.get(u).copied().unwrap_or(0) + u32::from(u == t))
            && self.co_pred[t][i].as_ref().is_none_or(has_run)
    }

    /// Whether leaving thread `t` after the prefix `ran` is a preemption: it
    /// has a next event in this graph, has not ended, blocked or yielded, and
    /// is not waiting for a lock, a notification or a thread to end.
    fn could_run(&self, ran: &[u32], t: Tid) -> bool {
        let g = self.g;
        let i = ran[t] as usize;
        if i >= g.len(t) {
            return false;
        }
        if i > 0
            && matches!(
                g.label(Pos::new(t, i - 1)),
                Label::Finish | Label::Block(_) | Label::Yield
            )
        {
            return false;
        }
        match *g.label(Pos::new(t, i)) {
            Label::Block(_) => false,
            Label::Join { .. }
            | Label::Read {
                kind: ReadKind::Lock | ReadKind::Await { .. },
                ..
            } => self.runnable(ran, t),
            _ => true,
        }
    }
}
