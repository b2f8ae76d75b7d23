//! Equivalent prefixes of a split search (vfsmc patch, see `VFSMC-PATCHES.md`,
//! section 5).
//!
//! Two executions that differ only in the order of independent operations
//! (Mazurkiewicz-equivalent) leave loom in the same state. A split search
//! enumerates every alternative at its prefix choice points, so many of its
//! prefixes are reorderings of one another, and the subtrees below them
//! explore the same behaviours again. `Trace` records what a prefix did, and
//! `Trace::key` names its equivalence class: equal keys, same state.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// What an event touches. Events on one target are ordered against each
/// other (except loads of one atomic, which commute); events on different
/// targets commute, and `Local` events are ordered only within their thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Target {
    /// An object of the execution's store, by its index.
    Object(usize),
    /// `fence(SeqCst)`: fences are ordered by loom's sequential-consistency
    /// clock.
    SeqCst,
    /// Thread creation: thread ids are handed out in spawn order.
    Spawn,
    /// The park state of one thread: its parks and the unparks aimed at it.
    Thread(usize),
    /// Nothing shared.
    Local,
}

/// One event of a prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Event {
    /// An operation on an object: DPOR's action, as loom's `Debug` names it
    /// in a fixed table (`action`), and whether it is an atomic load.
    Operation { action: u8, load: bool },
    /// The store a load or read-modify-write read: its slot in the atomic's
    /// history (which store that is follows from the order of the object's
    /// events, so the slot names it).
    Read(u8),
    /// The outcome of a spurious wake-up branch.
    Spurious(bool),
    /// `yield_now`.
    Yield,
    /// `park` (on the parking thread's `Thread` target).
    Park,
    /// `unpark` (on the target thread's `Thread` target).
    Unpark,
    /// The thread created objects: the store holds `.0` objects after them.
    /// Recorded per thread, so two prefixes that interleave creations
    /// differently (and so number the objects differently) never share a key.
    Created(usize),
    /// The thread spawned threads: `.0` threads exist after them.
    Spawned(usize),
    /// `fence(SeqCst)`.
    SeqCstFence,
}

/// The events of the current execution's prefix, in the order they ran.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    events: Vec<(usize, Target, Event)>,
}

/// The equivalence class of a prefix and the state it ends in: a 128-bit
/// hash of a canonical form. Two keys are compared, never stored in full, so
/// a collision (probability about n² / 2¹²⁹ for n prefixes) is the only way
/// two different classes could share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key(u64, u64);

impl Trace {
    pub(crate) fn clear(&mut self) {
        self.events.clear();
    }

    pub(crate) fn push(&mut self, thread: usize, target: Target, event: Event) {
        self.events.push((thread, target, event));
    }

    /// The canonical form of the trace, hashed with `state` (what the prefix
    /// ends in beyond its events: the thread about to run, the preemptions
    /// spent, clocks). Per thread: its events in program order. Per shared
    /// target: its events in the order they ran, as (thread, position in the
    /// thread's sequence), with each run of consecutive atomic loads sorted,
    /// since loads of one atomic commute.
    pub(crate) fn key(&self, state: &[u64]) -> Key {
        let mut sequences: BTreeMap<usize, Vec<(Target, Event)>> = BTreeMap::new();
        let mut orders: BTreeMap<Target, Vec<Vec<(usize, usize)>>> = BTreeMap::new();
        for &(thread, target, event) in &self.events {
            let sequence = sequences.entry(thread).or_default();
            let at = (thread, sequence.len());
            sequence.push((target, event));
            if target == Target::Local {
                continue;
            }
            let runs = orders.entry(target).or_default();
            let commutes = matches!(event, Event::Operation { load: true, .. });
            match runs.last_mut() {
                Some(run) if commutes && run_commutes(&sequences, run) => run.push(at),
                _ => runs.push(vec![at]),
            }
        }
        for runs in orders.values_mut() {
            for run in runs.iter_mut() {
                run.sort_unstable();
            }
        }
        Key(
            hash(0, (&sequences, &orders, state)),
            hash(1, (&sequences, &orders, state)),
        )
    }
}

/// Whether `run` is a run of atomic loads.
fn run_commutes(sequences: &BTreeMap<usize, Vec<(Target, Event)>>, run: &[(usize, usize)]) -> bool {
    run.iter().all(|&(thread, at)| {
        matches!(
            sequences[&thread][at].1,
            Event::Operation { load: true, .. }
        )
    })
}

fn hash(salt: u64, value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    salt.hash(&mut hasher);
    value.hash(&mut hasher);
    hasher.finish()
}
