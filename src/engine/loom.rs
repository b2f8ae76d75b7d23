//! loom: exhaustive DPOR under the C11 memory model. It runs preemption
//! bounds 0, 1, 2, … before the requested bound (or unbounded), so the first
//! counterexample reported is one with the fewest preemptions.
//!
//! This is loom 0.7.3 with vfsmc's DPOR fix (`vendor/loom/VFSMC-PATCHES.md`):
//! released loom missed interleavings when a thread loads a location before
//! storing to it (tokio-rs/loom#166, #392). The litmus `probe-…` tests check
//! the fix.

use std::panic::{catch_unwind, AssertUnwindSafe};

use vfsmc_model::sync::{with_backend, Backend};
use vfsmc_specs::Need;

use super::{
    instrument, lock, Body, Budget, Collector, CorpusKey, Engine, EngineFailure, Exploration,
    Failure, Found, Knob, Replay,
};

pub struct Loom;

impl Engine for Loom {
    fn name(&self) -> &'static str {
        "loom"
    }

    fn exhaustive(&self) -> bool {
        true
    }

    fn memory_model(&self) -> &'static str {
        "C11: weak memory, but no load buffering, and coherence follows execution order \
         (loom 0.7.3 with vfsmc's DPOR fix, vendor/loom/VFSMC-PATCHES.md)"
    }

    /// loom explores C11 as executed: a load reads only stores that already
    /// ran, coherence follows execution order, a lock's state is sequentially
    /// consistent, and nothing orders more than C11 does. tokio-rs/loom#254:
    /// a plain store can land inside an RMW.
    fn blind_to(&self, need: Need) -> bool {
        match need {
            Need::WeakMemory(_) | Need::DeepSchedule(_) | Need::HappensBefore(_) => false,
            Need::LoadBuffering(_)
            | Need::WeakLockState(_)
            | Need::LkmmOrdering(_)
            | Need::AtomicRmw(_) => true,
        }
    }

    fn knobs(&self) -> &'static [Knob] {
        &[
            Knob::MaxPreemptions,
            Knob::LoomCap,
            Knob::LoomMaxBranches,
            Knob::LoomCheckpointInterval,
            Knob::SplitDepth,
            Knob::SplitExtend,
        ]
    }

    fn replay(&self) -> Replay {
        Replay::Bound
    }

    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[CorpusKey::MaxPreemptions]
    }

    fn coverage(&self, found: &Found) -> String {
        match found.max_preemptions {
            Some(n) => format!(", preemption bound {n}"),
            None => ", unbounded".to_string(),
        }
    }

    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let mut last = Exploration::default();
        for bound in bounds(budget) {
            crate::progress::phase(crate::progress::Phase::LoomBound(bound));
            last = explore_bound(budget, bound, body.clone());
            if last.failure.is_some() {
                break;
            }
        }
        last
    }
}

/// loom 0.7.3's own failures, by their panic text: `rt/execution.rs` reports
/// "deadlock; threads = …", `rt/path.rs` "Model exceeded maximum number of
/// branches…" (the budget's `loom_max_branches`, which a spin loop reaches).
/// Any other panic is the model's.
fn classify(msg: &str) -> EngineFailure {
    if msg.contains("deadlock; threads =") {
        EngineFailure::Deadlock
    } else if msg.contains("exceeded maximum number of branches") {
        EngineFailure::Livelock
    } else {
        EngineFailure::ModelPanic
    }
}

/// The preemption bounds tried in turn, fewest first.
fn bounds(budget: &Budget) -> Vec<Option<usize>> {
    match budget.max_preemptions {
        Some(n) => (0..=n).map(Some).collect(),
        None => vec![Some(0), Some(1), Some(2), None],
    }
}

/// loom's Builder for one bound. `Builder::new` reads `LOOM_*` variables;
/// every field that changes what is explored is set from the budget instead,
/// so only loom's logging switches (`LOOM_LOG`, `LOOM_LOCATION`) stay its own.
fn builder(budget: &Budget, bound: Option<usize>) -> ::loom::model::Builder {
    let mut builder = ::loom::model::Builder::new();
    builder.preemption_bound = bound;
    // loom 0.7.3 counts from 1 and stops when the count reaches the cap, so
    // a cap of N runs N − 1 executions (and a cap of 1 none at all).
    builder.max_permutations = budget.loom_cap.map(|cap| cap.saturating_add(1));
    builder.checkpoint_interval = budget.loom_checkpoint_interval;
    builder.checkpoint_file = None;
    builder.max_branches = budget.loom_max_branches;
    // A wall-clock limit would make the verdict depend on the machine.
    builder.max_duration = None;
    builder.split = budget.part.map(|p| ::loom::model::Split {
        depth: budget.split_depth,
        extend: budget.split_extend,
        index: p.index,
        count: p.count,
    });
    builder
}

/// One loom run under `bound`.
fn explore_bound(budget: &Budget, bound: Option<usize>, body: Body) -> Exploration {
    crate::quiet::on_own_thread(|| explore_bound_here(budget, bound, body))
}

/// [`explore_bound`] on the calling thread.
fn explore_bound_here(budget: &Budget, bound: Option<usize>, body: Body) -> Exploration {
    let col = Collector::new(budget);
    let f = instrument(body, col.clone(), ::loom::model::is_probe);
    let builder = builder(budget, bound);
    let result = catch_unwind(AssertUnwindSafe(|| {
        with_backend(Backend::Loom, || builder.check_split(f))
    }));
    let (subtrees, failure) = match result {
        Ok(stats) => (stats.subtrees, None),
        Err(payload) => (
            0,
            Some(Failure {
                preemptions: bound,
                ..Failure::from_panic(&col, payload, classify)
            }),
        ),
    };
    let c = lock(&col);
    let capped = budget
        .loom_cap
        .is_some_and(|cap| c.executions + c.probes >= cap);
    Exploration {
        subtrees,
        exhaustive: !capped && failure.is_none(),
        preemption_bound: bound,
        failure,
        ..c.exploration()
    }
}
