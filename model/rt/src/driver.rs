//! The engine side of an execution: what the checker's engines use to run a
//! model and read what it did. Models and specs never import this module
//! (a test in `tests/layering.rs` checks it), so a model cannot start,
//! reset or fail an execution behind the engine's back.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use crate::exec::{self, Exec};
pub use crate::exec::{OpCost, Violation, ViolationRaised};
pub use crate::sync::{with_backend, Backend};
use crate::trace::{Name, Step};

/// Everything one execution left behind, materialised (copied out of the
/// search's buffers) when an execution fails or is asked for.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Threads by trace column, in spawn order.
    pub threads: Vec<Name>,
    pub steps: Vec<Step>,
    pub violation: Option<Violation>,
    /// Tracepoints hit (reachability goals are judged against these).
    pub reached: BTreeSet<&'static str>,
    /// Cost per operation (outermost kernel function of a thread).
    pub costs: BTreeMap<&'static str, OpCost>,
}

/// One search's execution state, reused by every execution of the search.
#[derive(Clone)]
pub struct Session(Exec);

/// Keeps an execution current on this OS thread; dropping it ends that.
pub struct Running {
    _current: exec::CurrentGuard,
}

impl Session {
    /// A session that records steps and checks invariants (`recording`), or
    /// one that does neither (to measure what they cost).
    pub fn new(recording: bool) -> Session {
        Session(Exec::new(recording))
    }

    /// Starts the next execution on this OS thread.
    pub fn begin(&self) -> Running {
        self.0.reset();
        Running {
            _current: self.0.enter(),
        }
    }

    /// What the current (or last) execution recorded.
    pub fn record(&self) -> Record {
        self.0.with_state(|s| Record {
            threads: s.threads.clone(),
            steps: s.steps.clone(),
            violation: s.violation.clone(),
            reached: s.reached.iter().copied().collect(),
            costs: s.costs.iter().copied().collect(),
        })
    }

    /// A hash of what the current (or last) execution did: its threads and
    /// every step, as recorded. Two executions with the same trace have
    /// the same fingerprint; it is for comparing the sets of executions two
    /// searches explored, not for storing.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        self.0.with_state(|s| {
            s.threads.hash(&mut h);
            s.steps.hash(&mut h);
        });
        h.finish()
    }

    /// The violation recorded in this execution, if any.
    pub fn violation(&self) -> Option<Violation> {
        self.0.with_state(|s| s.violation.clone())
    }

    /// Adds the tracepoints this execution hit to `into`.
    pub fn reached_into(&self, into: &mut BTreeSet<&'static str>) {
        self.0
            .with_state(|s| into.extend(s.reached.iter().copied()));
    }

    /// Adds the variant sites and exits this execution ran to `into`; true
    /// when one of them chose the variant's branch.
    pub fn hits_into(&self, into: &mut BTreeSet<crate::patch::Hit>) -> bool {
        self.0.with_state(|s| {
            into.extend(s.hits.iter().copied());
            s.hits.iter().any(|h| h.taken)
        })
    }

    /// Records that the engine failed the execution for a reason of its own
    /// (deadlock, step limit, a panic in model code) unless a violation was
    /// already recorded.
    pub fn record_engine_failure(&self, invariant: &str, message: String) {
        self.0.with_state(|s| {
            if s.violation.is_none() && !s.frozen {
                s.violation = Some(Violation {
                    invariant: invariant.to_string(),
                    message,
                    thread: String::new(),
                    step: s.steps.len(),
                    cause: None,
                    state: String::new(),
                });
                s.frozen = true;
            }
        });
    }
}

/// FNV-1a: the same hash of the same trace in every run and on every
/// machine (the std hasher's keys are not promised to stay).
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Whether an execution is being explored on this OS thread (the checker's
/// panic hook stays silent then: violations are reported with their trace).
pub fn active() -> bool {
    exec::active()
}
