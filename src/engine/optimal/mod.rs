//! `optimal`: exhaustive search with optimal DPOR over execution graphs
//! (TruSt, POPL 2022), under RC11 (`optimal`) or sequential consistency
//! (`optimal-sc`). It explores one execution per class of equivalent
//! executions (same reads-from and coherence), where loom explores many
//! interleavings of each: the floor GenMC measures for the same programs.
//!
//! No existing engine could serve instead: GenMC runs C through LLVM (its
//! Rust front end is experimental, MPI-SWS/genmc#71) and Miri's GenMC mode
//! needs a Miri built with it; neither installs from the registries here
//! nor runs closures written against the facade. This engine is vfsmc's
//! own: [`runtime`] runs the model threads as coroutines and turns each
//! facade operation into events, [`trust`] is the search, [`graph`] the
//! execution graph, [`consistency`] the memory model. `ENGINE.md` beside
//! this file says what it models and how it was judged.

mod bound;
mod consistency;
mod graph;
mod runtime;
mod trust;

use vfsmc_model::sync::with_graph_runtime;
use vfsmc_specs::Need;

pub use consistency::Model;

use super::{
    lock, Body, Budget, Collector, CorpusKey, Engine, EngineFailure, Exploration, Failure, Found,
    Knob, Replay,
};
use runtime::{Outcome, Runtime};

/// The execution-graph engine under one memory model.
pub struct Optimal(pub Model);

impl Engine for Optimal {
    fn name(&self) -> &'static str {
        match self.0 {
            Model::Rc11 => "optimal",
            Model::Sc => "optimal-sc",
        }
    }

    fn exhaustive(&self) -> bool {
        true
    }

    fn memory_model(&self) -> &'static str {
        match self.0 {
            Model::Rc11 => {
                "RC11 without load buffering: weak memory, coherence, SC fences and accesses \
                 as RC11 orders them (vfsmc's optimal DPOR, src/engine/optimal)"
            }
            Model::Sc => "sequential consistency (vfsmc's optimal DPOR, src/engine/optimal)",
        }
    }

    /// Like loom, no load buffering (porf stays acyclic) and a lock's state
    /// read in order; unlike loom, RMWs stay atomic.
    fn blind_to(&self, need: Need) -> bool {
        match need {
            Need::DeepSchedule(_) | Need::AtomicRmw(_) => false,
            Need::WeakMemory(_) => self.0 == Model::Sc,
            // Its runtime offers no happens-before query (`sync::epoch`).
            Need::LoadBuffering(_)
            | Need::WeakLockState(_)
            | Need::LkmmOrdering(_)
            | Need::HappensBefore(_) => true,
        }
    }

    fn knobs(&self) -> &'static [Knob] {
        &[
            Knob::MaxPreemptions,
            Knob::OptimalCap,
            Knob::OptimalMaxEvents,
            Knob::OptimalSplitDepth,
        ]
    }

    fn replay(&self) -> Replay {
        Replay::Bound
    }

    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[]
    }

    /// The bound where it had one; an unbounded search says nothing (its
    /// reports are the registry's).
    fn coverage(&self, found: &Found) -> String {
        found
            .max_preemptions
            .map_or(String::new(), |n| format!(", preemption bound {n}"))
    }

    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let model = self.0;
        let budget = budget.clone();
        crate::quiet::on_own_thread(move || explore_here(model, &budget, body))
    }
}

/// The failures the engine names itself, by the text it gave them.
fn classify(msg: &str) -> EngineFailure {
    if msg.starts_with("deadlock") {
        EngineFailure::Deadlock
    } else if msg.starts_with("livelock") {
        EngineFailure::Livelock
    } else {
        EngineFailure::ModelPanic
    }
}

/// The whole search on the calling thread.
fn explore_here(model: Model, budget: &Budget, body: Body) -> Exploration {
    let col = Collector::new(budget);
    let session = lock(&col).session.clone();
    let rt = Runtime::new(model, budget.optimal_max_events);
    rt.st.borrow_mut().search.split = budget.part.map(|p| trust::Split {
        index: p.index,
        count: p.count,
        depth: budget.optimal_split_depth,
        subtrees: 0,
    });
    rt.st.borrow_mut().search.bound = budget.max_preemptions;
    let main = {
        let session = session.clone();
        move || {
            let _running = session.begin();
            crate::progress::execution();
            body();
        }
    };
    let mut blocked = 0;
    let mut counts = budget.preemption_counts.then(Vec::new);
    let mut failure = None;
    let mut capped = false;
    with_graph_runtime(&rt, || loop {
        if budget
            .optimal_cap
            .is_some_and(|cap| lock(&col).executions >= cap)
        {
            capped = true;
            break;
        }
        let outcome = rt.run(&main);
        match outcome {
            Outcome::Complete | Outcome::Blocked => {
                let own = rt.st.borrow().search.owns_current();
                let mut c = lock(&col);
                if own {
                    c.executions += 1;
                    blocked += usize::from(matches!(outcome, Outcome::Blocked));
                    if let Some(n) = counts.as_mut() {
                        n.push(bound::preemptions(rt.st.borrow().search.graph()));
                    }
                } else {
                    c.probes += 1;
                }
                c.collect(&session, !own);
            }
            Outcome::Moot => {}
            Outcome::Panicked(payload) => {
                lock(&col).executions += 1;
                failure = Some(Failure::from_panic(&col, payload, classify));
                break;
            }
            Outcome::Stuck(why) => {
                lock(&col).executions += 1;
                failure = Some(Failure::from_panic(&col, Box::new(why), classify));
                break;
            }
        }
        let mut st = rt.st.borrow_mut();
        let st = &mut *st;
        if !st.search.next_graph(st.locs) {
            break;
        }
    });
    let subtrees = rt.st.borrow().search.split.map_or(0, |s| s.subtrees);
    let c = lock(&col);
    Exploration {
        exhaustive: !capped && failure.is_none(),
        preemption_bound: budget.max_preemptions,
        failure,
        blocked,
        preemption_counts: counts,
        subtrees,
        ..c.exploration()
    }
}
