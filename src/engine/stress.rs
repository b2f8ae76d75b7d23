//! stress: real std threads under the OS scheduler. Neither exhaustive nor
//! replayable; it reports what it saw.

use std::panic::{catch_unwind, AssertUnwindSafe};

use vfsmc_model::sync::{with_backend, Backend};
use vfsmc_specs::Need;

use super::{
    instrument, lock, never_probe, Body, Budget, Collector, CorpusKey, Engine, EngineFailure,
    Exploration, Failure, Knob, Replay,
};

pub struct Stress;

/// Real threads detect nothing: a deadlock hangs and a livelock spins, so
/// every panic that is not a violation is the model's.
fn classify(_msg: &str) -> EngineFailure {
    EngineFailure::ModelPanic
}

impl Engine for Stress {
    fn name(&self) -> &'static str {
        "stress"
    }

    fn exhaustive(&self) -> bool {
        false
    }

    fn memory_model(&self) -> &'static str {
        "the host CPU's, as the OS happens to schedule it: not replayable"
    }

    /// Real threads show a weak-memory outcome only by chance (on x86 never
    /// one that reorders two loads or two stores), so for a verdict they are
    /// as blind as a sequentially consistent engine. What LKMM orders, the
    /// hardware orders too.
    fn blind_to(&self, need: Need) -> bool {
        super::shuttle::sequentially_consistent_blind_to(need)
    }

    fn knobs(&self) -> &'static [Knob] {
        &[Knob::Iterations]
    }

    fn replay(&self) -> Replay {
        Replay::Never
    }

    fn corpus_keys(&self) -> &'static [CorpusKey] {
        &[]
    }

    fn explore(&self, budget: &Budget, body: Body) -> Exploration {
        let col = Collector::new(budget);
        let f = instrument(body, col.clone(), never_probe);
        let mut failure = None;
        crate::progress::runs(self.name(), budget.iterations);
        for _ in 0..budget.iterations {
            let result = catch_unwind(AssertUnwindSafe(|| with_backend(Backend::Std, &f)));
            if let Err(payload) = result {
                failure = Some(Failure::from_panic(&col, payload, classify));
                break;
            }
        }
        let out = lock(&col).exploration();
        Exploration { failure, ..out }
    }
}
