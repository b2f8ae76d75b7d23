use crate::model::{Split, SplitStats};
use crate::rt::class::{Event, Key, Target, Trace};
use crate::rt::{execution, object, thread, MAX_ATOMIC_HISTORY, MAX_THREADS};

use std::collections::HashSet;

#[cfg(feature = "checkpoint")]
use serde::{Deserialize, Serialize};

/// An execution path
#[derive(Debug)]
#[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
pub(crate) struct Path {
    preemption_bound: Option<u8>,

    /// Current execution's position in the branches vec.
    ///
    /// When the execution starts, this is zero, but `branches` might not be
    /// empty.
    ///
    /// In order to perform an exhaustive search, the execution is seeded with a
    /// set of branches.
    pos: usize,

    /// List of all branches in the execution.
    ///
    /// A branch is of type `Schedule`, `Load`, or `Spurious`
    branches: object::Store<Entry>,

    /// If true, exploring is enabled at start
    exploring: bool,

    /// If true, the user decided to skip the current execution branch. We do
    /// not do any further exploration here.
    skipping: bool,

    /// How to reset the `exploring` state
    exploring_on_start: bool,

    /// The part of a split search this path explores (vfsmc patch,
    /// `model::Split`); `None` explores the whole tree, as loom does. A
    /// checkpoint does not record it: a split search cannot be resumed.
    #[cfg_attr(feature = "checkpoint", serde(skip))]
    prefix: Option<Prefix>,
}

/// The schedule prefix of a split search (vfsmc patch, `model::Split`).
///
/// The prefix of an execution is its first `split.depth` choice points:
/// branch points where the search has two alternatives or more. A prefix
/// branch point gets, when it is created, every alternative DPOR could ever
/// add to it (see `branch_thread`), so DPOR never changes the prefix tree,
/// and the subtrees below its leaves are numbered in the same order whichever
/// of them are explored.
#[derive(Debug)]
struct Prefix {
    split: Split,

    /// Positions in `branches` of the current execution's prefix choice
    /// points, in order.
    choices: Vec<usize>,

    /// Number of the subtree the current execution belongs to, in the order
    /// the depth-first search reaches them.
    subtree: usize,

    /// Whether the current execution has used up the preemption bound: no
    /// schedule after that has an alternative, so the prefix ends at its
    /// last choice point (see `Prefix::is_open`).
    spent: bool,

    /// The search's preemption bound, and the preemptions the current
    /// execution has spent so far: how deep its prefix goes
    /// (`Split::extend`).
    bound: Option<u8>,
    preempted: u8,

    /// With `Split::skip_equivalent`, what finds the subtrees whose prefixes
    /// are equivalent to an earlier one's.
    equivalent: Option<Equivalent>,
}

/// Skipping subtrees whose prefixes are equivalent (vfsmc patch,
/// `Split::skip_equivalent`, `rt::class`).
///
/// Whether a subtree is new is known only once its first execution has run
/// its prefix, so that execution is a *scout*, a probe in every part. When
/// its prefix is new, the subtree gets the next number; the part that owns
/// the number runs the scout's execution again as its own and then searches
/// the rest of the subtree. When the prefix is equivalent to one seen before,
/// every part skips the subtree.
#[derive(Debug, Default)]
struct Equivalent {
    /// Keys of the prefixes of the subtrees numbered so far.
    seen: HashSet<Key>,

    /// The current execution's prefix, while it is recorded.
    trace: Trace,

    /// Whether the current execution records its prefix: a scout whose
    /// prefix has not ended yet.
    recording: bool,

    /// The key of the current execution's prefix, once it has ended.
    key: Option<Key>,

    /// Whether the current execution is its subtree's scout.
    scout: bool,

    /// Whether the next execution runs the scout's again, as an owner.
    rerun: bool,

    /// Objects and threads of the current execution already recorded as
    /// created.
    objects: usize,
    threads: usize,
}

#[derive(Debug)]
#[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
pub(crate) struct Schedule {
    /// Number of times the thread leading to this branch point has been
    /// pre-empted.
    preemptions: u8,

    /// The thread that was active first
    initial_active: Option<u8>,

    /// State of each thread
    threads: [Thread; MAX_THREADS],

    /// The previous schedule branch
    prev: Option<object::Ref<Schedule>>,

    exploring: bool,
}

#[derive(Debug)]
#[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
pub(crate) struct Load {
    /// All possible values
    values: [u8; MAX_ATOMIC_HISTORY],

    /// Current value
    pos: u8,

    /// Number of values in list
    len: u8,

    exploring: bool,
}

#[derive(Debug)]
#[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
pub(crate) struct Spurious {
    spur: bool,
    exploring: bool,
}

objects! {
    #[derive(Debug)]
    #[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
    Entry,
    Schedule(Schedule),
    Load(Load),
    Spurious(Spurious),
}

#[derive(Debug, Eq, PartialEq, Clone, Copy)]
#[cfg_attr(feature = "checkpoint", derive(Serialize, Deserialize))]
pub(crate) enum Thread {
    /// The thread is currently disabled
    Disabled,

    /// The thread should not be explored
    Skip,

    /// The thread is in a yield state.
    Yield,

    /// The thread is waiting to be explored
    Pending,

    /// The thread is currently being explored
    Active,

    /// The thread has been explored
    Visited,
}

macro_rules! assert_path_len {
    ($branches:expr) => {{
        assert!(
            // if we are panicking, we may be performing a branch due to a
            // `Drop` impl (e.g., for `Arc`, or for a user type that does an
            // atomic operation in its `Drop` impl). if that's the case,
            // asserting this again will double panic. therefore, short-circuit
            // the assertion if the thread is panicking.
            $branches.len() < $branches.capacity() || std::thread::panicking(),
            "Model exceeded maximum number of branches. This is often caused \
             by an algorithm requiring the processor to make progress, e.g. \
             spin locks.",
        );
    }};
}

impl Path {
    /// Create a new, blank, configured to branch at most `max_branches` times
    /// and at most `preemption_bound` thread preemptions.
    ///
    /// With `split`, only that part of the search is explored.
    pub(crate) fn new(
        max_branches: usize,
        preemption_bound: Option<u8>,
        exploring: bool,
        split: Option<Split>,
    ) -> Path {
        Path {
            preemption_bound,
            pos: 0,
            branches: object::Store::with_capacity(max_branches),
            exploring,
            skipping: false,
            exploring_on_start: exploring,
            prefix: split.map(|split| Prefix::new(split, preemption_bound)),
        }
    }

    pub(crate) fn explore_state(&mut self) {
        if !self.skipping {
            assert!(!self.exploring, "not in critical state");
            self.exploring = true;
        }
    }

    pub(crate) fn critical(&mut self) {
        if !self.skipping {
            assert!(self.exploring, "not in exploring state");
            self.exploring = false;
        }
    }

    pub(crate) fn skip_branch(&mut self) {
        self.exploring = false;
        self.skipping = true;
    }

    pub(crate) fn set_max_branches(&mut self, max_branches: usize) {
        self.branches
            .reserve_exact(max_branches - self.branches.len());
    }

    /// Returns `true` if the execution has reached a point where the known path
    /// has been traversed and has reached a new branching point.
    pub(super) fn is_traversed(&self) -> bool {
        self.pos == self.branches.len()
    }

    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// Whether the current execution belongs to another part's subtree of a
    /// split search. Known from the start of the execution: `step` picks the
    /// subtree.
    pub(crate) fn is_probe(&self) -> bool {
        self.prefix.as_ref().is_some_and(Prefix::is_probe)
    }

    /// Whether the branch point about to be created is in the prefix of a
    /// split search.
    fn in_prefix(&self) -> bool {
        self.prefix.as_ref().is_some_and(Prefix::is_open)
    }

    /// Whether the current execution records its prefix's events (a scout of
    /// a search that skips equivalent prefixes).
    pub(crate) fn is_recording(&self) -> bool {
        self.equivalent().is_some_and(|eq| eq.recording)
    }

    /// Records an event of the current execution's prefix, if it records it.
    pub(crate) fn record(&mut self, thread: usize, target: Target, event: Event) {
        if let Some(eq) = self.equivalent_mut().filter(|eq| eq.recording) {
            eq.trace.push(thread, target, event);
        }
    }

    /// Records that `thread`, the thread that ran since the last branch
    /// point, created the objects and threads beyond those recorded.
    pub(crate) fn record_creations(&mut self, thread: usize, objects: usize, threads: usize) {
        if let Some(eq) = self.equivalent_mut().filter(|eq| eq.recording) {
            if objects > eq.objects {
                eq.objects = objects;
                eq.trace
                    .push(thread, Target::Local, Event::Created(objects));
            }
            if threads > eq.threads {
                eq.threads = threads;
                eq.trace
                    .push(thread, Target::Spawn, Event::Spawned(threads));
            }
        }
    }

    /// Whether the current execution records its prefix and the prefix has
    /// just ended: its last choice point is behind (or the bound is spent).
    pub(crate) fn prefix_ended(&self) -> bool {
        self.is_recording()
            && self
                .prefix
                .as_ref()
                .is_some_and(|prefix| !prefix.is_open() && self.pos >= prefix.end())
    }

    /// Names the ended prefix by its events and `state`, and stops recording.
    pub(crate) fn end_prefix(&mut self, state: &[u64]) {
        if let Some(eq) = self.equivalent_mut() {
            eq.key = Some(eq.trace.key(state));
            eq.recording = false;
        }
    }

    /// Whether the search explores at the next branch point, and whether it
    /// skips the rest of the execution, as one number.
    pub(crate) fn is_exploring(&self) -> u8 {
        u8::from(self.exploring) | u8::from(self.skipping) << 1
    }

    /// Preemptions spent by the current execution so far.
    pub(crate) fn preemptions(&self) -> u8 {
        self.last_schedule()
            .map_or(0, |schedule| schedule.get(&self.branches).preemptions())
    }

    fn equivalent(&self) -> Option<&Equivalent> {
        self.prefix.as_ref().and_then(|p| p.equivalent.as_ref())
    }

    fn equivalent_mut(&mut self) -> Option<&mut Equivalent> {
        self.prefix.as_mut().and_then(|p| p.equivalent.as_mut())
    }

    /// Counts the execution that just ran into `stats`, and decides, after a
    /// scout, whether its subtree is new and whose it is.
    pub(crate) fn count(&mut self, stats: &mut SplitStats) {
        match &mut self.prefix {
            None => stats.count(0, true),
            Some(prefix) => prefix.count(stats),
        }
    }

    /// Records the branch point about to be created as a prefix choice point.
    fn push_choice(&mut self) {
        let pos = self.pos;
        self.prefix
            .as_mut()
            .expect("[loom internal bug] not a split search")
            .choices
            .push(pos);
    }

    /// Push a new atomic-load branch
    pub(super) fn push_load(&mut self, seed: &[u8]) {
        assert_path_len!(self.branches);

        let load_ref = self.branches.insert(Load {
            values: [0; MAX_ATOMIC_HISTORY],
            pos: 0,
            len: 0,
            exploring: self.exploring,
        });

        let load = load_ref.get_mut(&mut self.branches);

        for (i, &store) in seed.iter().enumerate() {
            assert!(
                store < MAX_ATOMIC_HISTORY as u8,
                "[loom internal bug] store = {}; max = {}",
                store,
                MAX_ATOMIC_HISTORY
            );
            assert!(
                i < MAX_ATOMIC_HISTORY,
                "[loom internal bug] i = {}; max = {}",
                i,
                MAX_ATOMIC_HISTORY
            );

            load.values[i] = store;
            load.len += 1;
        }

        // Every value is explored already: a load has no DPOR to widen.
        if load.exploring && load.len > 1 && self.in_prefix() {
            self.push_choice();
        }
    }

    /// Returns the atomic write to read; `thread` reads it (recorded when
    /// the prefix is, see `Equivalent`).
    pub(super) fn branch_load(&mut self, thread: usize) -> usize {
        assert!(!self.is_traversed(), "[loom internal bug]");

        let load = object::Ref::from_usize(self.pos)
            .downcast::<Load>(&self.branches)
            .expect("Reached unexpected exploration state. Is the model fully deterministic?")
            .get(&self.branches);

        self.pos += 1;

        let slot = load.values[load.pos as usize];
        self.record(thread, Target::Local, Event::Read(slot));
        slot as usize
    }

    /// Branch on spurious notifications
    pub(super) fn branch_spurious(&mut self) -> bool {
        if self.is_traversed() {
            assert_path_len!(self.branches);

            self.branches.insert(Spurious {
                spur: false,
                exploring: self.exploring,
            });

            if self.exploring && self.in_prefix() {
                self.push_choice();
            }
        }

        let spurious = object::Ref::from_usize(self.pos)
            .downcast::<Spurious>(&self.branches)
            .expect("Reached unexpected exploration state. Is the model fully deterministic?")
            .get(&self.branches)
            .spur;

        self.pos += 1;
        spurious
    }

    /// Records the outcome of the spurious wake-up branch `thread` just took.
    pub(super) fn record_spurious(&mut self, thread: usize, spurious: bool) {
        self.record(thread, Target::Local, Event::Spurious(spurious));
    }

    /// Returns the thread identifier to schedule
    ///
    /// `operates` tells whether the thread `seed` makes active performs an
    /// operation at this branch.
    pub(super) fn branch_thread(
        &mut self,
        execution_id: execution::Id,
        operates: bool,
        seed: impl ExactSizeIterator<Item = Thread>,
    ) -> Option<thread::Id> {
        if self.is_traversed() {
            assert_path_len!(self.branches);

            // Find the last thread scheduling branch in the path
            let prev = self.last_schedule();

            // Entering a new exploration space.
            //
            // Initialize a  new branch. The initial field values don't matter
            // as they will be updated below.
            let schedule_ref = self.branches.insert(Schedule {
                preemptions: 0,
                initial_active: None,
                threads: [Thread::Disabled; MAX_THREADS],
                prev,
                exploring: self.exploring,
            });

            // Get a reference to the branch in the object store.
            let schedule = schedule_ref.get_mut(&mut self.branches);

            assert!(seed.len() <= MAX_THREADS, "[loom internal bug]");

            // Currently active thread
            let mut active = None;

            for (i, v) in seed.enumerate() {
                // Initialize thread states
                schedule.threads[i] = v;

                if v.is_active() {
                    assert!(
                        active.is_none(),
                        "[loom internal bug] only one thread should start as active"
                    );
                    active = Some(i as u8);
                }
            }

            // Ensure at least one thread is active, otherwise toggle a yielded
            // thread.
            if active.is_none() {
                for (i, th) in schedule.threads.iter_mut().enumerate() {
                    if *th == Thread::Yield {
                        *th = Thread::Active;
                        active = Some(i as u8);
                        break;
                    }
                }
            }

            let mut initial_active = active;

            if let Some(prev) = prev {
                if initial_active != prev.get(&self.branches).active_thread_index() {
                    initial_active = None;
                }
            }

            let preemptions = prev
                .map(|prev| prev.get(&self.branches).preemptions())
                .unwrap_or(0);

            debug_assert!(
                self.preemption_bound.is_none() || Some(preemptions) <= self.preemption_bound,
                "[loom internal bug] max = {:?}; curr = {}",
                self.preemption_bound,
                preemptions,
            );

            let schedule = schedule_ref.get_mut(&mut self.branches);
            schedule.initial_active = initial_active;
            schedule.preemptions = preemptions;

            // DPOR backtracks to the branch of a racing operation, so when
            // the first thread scheduled here performs none, DPOR adds an
            // alternative here only through the preemption bound's extra
            // backtracking or a race in a critical section (see `backtrack`).
            // Without a bound such a branch is no choice point: enumerating
            // it would repeat the whole search below it for every thread.
            if self.in_prefix() && (operates || self.preemption_bound.is_some()) {
                // Whatever DPOR would add here later, and more.
                let schedule = schedule_ref.get_mut(&mut self.branches);
                schedule.explore_all(self.preemption_bound);

                if schedule.has_pending() {
                    self.push_choice();
                }
            }
        }

        let schedule = object::Ref::from_usize(self.pos)
            .downcast::<Schedule>(&self.branches)
            .expect("Reached unexpected exploration state. Is the model fully deterministic?")
            .get(&self.branches);

        self.pos += 1;

        let spent = schedule.spends_bound(self.preemption_bound);
        let active = schedule
            .threads
            .iter()
            .enumerate()
            .find(|&(_, th)| th.is_active())
            .map(|(i, _)| thread::Id::new(execution_id, i));

        if let Some(prefix) = &mut self.prefix {
            prefix.preempted = schedule.preemptions();
            prefix.spent |= spent;
        }

        active
    }

    pub(super) fn backtrack(&mut self, mut point: usize, thread_id: thread::Id) {
        let schedule = loop {
            if let Some(schedule_ref) =
                object::Ref::from_usize(point).downcast::<Schedule>(&self.branches)
            {
                let schedule = schedule_ref.get_mut(&mut self.branches);

                if schedule.exploring {
                    let threads = schedule.threads;
                    schedule.backtrack(thread_id, self.preemption_bound);

                    // The parts of a split search agree on its prefix tree
                    // only if DPOR never changes it.
                    assert!(
                        schedule.threads == threads
                            || !self.prefix.as_ref().is_some_and(|p| p.contains(point)),
                        "a split search without a preemption bound does not support \
                         races in critical sections that backtrack into its prefix"
                    );
                    break schedule;
                }
            }

            if point == 0 {
                return;
            }

            point -= 1;
        };

        let mut curr = if let Some(curr) = schedule.prev {
            curr
        } else {
            return;
        };

        if self.preemption_bound.is_some() {
            loop {
                // Preemption bounded DPOR requires conservatively adding
                // another backtrack point to cover cases missed by the bounds.
                if let Some(prev) = curr.get(&self.branches).prev {
                    let active_a = curr.get(&self.branches).active_thread_index();
                    let active_b = prev.get(&self.branches).active_thread_index();

                    if active_a != active_b && curr.get_mut(&mut self.branches).exploring {
                        curr.get_mut(&mut self.branches)
                            .backtrack(thread_id, self.preemption_bound);
                        return;
                    }

                    curr = prev;
                } else {
                    if curr.get(&mut self.branches).exploring {
                        // This is the very first schedule
                        curr.get_mut(&mut self.branches)
                            .backtrack(thread_id, self.preemption_bound);
                    }
                    return;
                }
            }
        }
    }

    /// Reset the path to prepare for the next exploration of the model.
    ///
    /// This function will also trim the object store, dropping any objects that
    /// are created in pruned sections of the path.
    pub(super) fn step(&mut self) -> bool {
        // Reset the position to zero, the path will start traversing from the
        // beginning
        self.pos = 0;

        // Reset exploring / critical / skip
        self.exploring = self.exploring_on_start;
        self.skipping = false;

        // A scout whose subtree is new and this part's runs again as owned.
        if let Some(prefix) = &mut self.prefix {
            if prefix.take_rerun() {
                return true;
            }
        }

        // A probe explores nothing of its subtree below the prefix.
        let unexplored = self
            .prefix
            .as_ref()
            .filter(|prefix| prefix.is_probe())
            .map_or(usize::MAX, Prefix::end);

        // Set the final branch to try the next option. If all options have been
        // traversed, pop the final branch and try again w/ the one under it.
        //
        // This is depth-first tree traversal.
        //
        for pos in (0..self.branches.len()).rev() {
            let last = object::Ref::from_usize(pos);

            // Remove all objects that were created **after** this branch
            self.branches.truncate(last);

            if pos >= unexplored {
                continue;
            }

            if let Some(schedule_ref) = last.downcast::<Schedule>(&self.branches) {
                let schedule = schedule_ref.get_mut(&mut self.branches);

                if !schedule.exploring {
                    continue;
                }

                // Transition the active thread to visited.
                if let Some(thread) = schedule.threads.iter_mut().find(|th| th.is_active()) {
                    *thread = Thread::Visited;
                }

                // Find a pending thread and transition it to active
                let rem = schedule
                    .threads
                    .iter_mut()
                    .find(|th| th.is_pending())
                    .map(|th| {
                        *th = Thread::Active;
                    })
                    .is_some();

                if rem {
                    return self.stepped(pos);
                }
            } else if let Some(load_ref) = last.downcast::<Load>(&self.branches) {
                let load = load_ref.get_mut(&mut self.branches);

                if !load.exploring {
                    continue;
                }

                load.pos += 1;

                if load.pos < load.len {
                    return self.stepped(pos);
                }
            } else if let Some(spurious_ref) = last.downcast::<Spurious>(&self.branches) {
                let spurious = spurious_ref.get_mut(&mut self.branches);

                if !spurious.exploring {
                    continue;
                }

                if !spurious.spur {
                    spurious.spur = true;
                    return self.stepped(pos);
                }
            } else {
                unreachable!();
            }
        }

        false
    }

    /// The branch at `pos` moved to its next option: tells a split search,
    /// and returns `true` for `step` to return.
    fn stepped(&mut self, pos: usize) -> bool {
        if let Some(prefix) = &mut self.prefix {
            prefix.stepped(pos);
        }

        true
    }

    fn last_schedule(&self) -> Option<object::Ref<Schedule>> {
        self.branches.iter_ref::<Schedule>().rev().next()
    }
}

impl Prefix {
    fn new(split: Split, bound: Option<u8>) -> Prefix {
        Prefix {
            split,
            choices: Vec::with_capacity(split.depth),
            subtree: 0,
            spent: false,
            bound,
            preempted: 0,
            equivalent: split.skip_equivalent.then(|| Equivalent {
                scout: true,
                recording: true,
                ..Equivalent::default()
            }),
        }
    }

    /// Counts the execution that just ran. Without `skip_equivalent`, the
    /// subtree numbers follow the search, and the first execution with a
    /// number is its subtree's first. With it, a scout numbers its subtree
    /// if its prefix is new (a prefix that never ended, in an execution with
    /// fewer choice points than the depth, is new).
    fn count(&mut self, stats: &mut SplitStats) {
        let Some(eq) = &mut self.equivalent else {
            let owned = !self.is_probe();
            return stats.count(self.subtree, owned);
        };
        if !eq.scout {
            stats.executions += 1;
            return;
        }
        stats.probes += 1;
        if eq.key.is_some_and(|key| !eq.seen.insert(key)) {
            stats.duplicates += 1;
            return;
        }
        self.subtree = stats.subtrees;
        stats.subtrees += 1;
        if self.split.owns(self.subtree) {
            stats.owned += 1;
            eq.rerun = true;
        }
    }

    /// Whether the next execution is the last one's again (a scout's, now
    /// owned); readies it if so.
    fn take_rerun(&mut self) -> bool {
        let Some(eq) = &mut self.equivalent else {
            return false;
        };
        if !std::mem::take(&mut eq.rerun) {
            return false;
        }
        eq.scout = false;
        self.spent = false;
        self.preempted = 0;
        true
    }

    /// Whether the execution has not passed its prefix's `depth()` choice
    /// points yet, nor used up a (non-zero) preemption bound, so the next
    /// branch point created is in its prefix. Once the bound is spent no
    /// schedule below has an alternative, and only loads would divide the
    /// search further: into subtrees of a few executions each, which cost
    /// every other part a probe apiece (on `fdtable/current
    /// [expand-vs-fget-deep]` at bound 3 and depth 40, 176,760 of 184,803
    /// subtrees, holding 2 % of the executions).
    fn is_open(&self) -> bool {
        self.choices.len() < self.depth() && !self.spent
    }

    /// Choice points of the current execution's prefix, given the
    /// preemptions it has left (`Split::extend`). Preemptions only add up
    /// along a path, so a prefix that has ended stays ended.
    fn depth(&self) -> usize {
        let left = self
            .bound
            .map_or(0, |bound| bound.saturating_sub(self.preempted));
        let beyond_one = usize::from(left.saturating_sub(1));
        self.split.depth + self.split.extend * beyond_one
    }

    /// Position of the first branch below the prefix; an execution that ends
    /// before its prefix does is all prefix.
    fn end(&self) -> usize {
        if self.is_open() {
            usize::MAX
        } else {
            self.choices.last().map_or(0, |pos| pos + 1)
        }
    }

    fn is_probe(&self) -> bool {
        match &self.equivalent {
            Some(eq) => eq.scout,
            None => !self.split.owns(self.subtree),
        }
    }

    /// Whether the branch at `pos` is in the prefix.
    fn contains(&self, pos: usize) -> bool {
        pos < self.end()
    }

    /// The search moved branch `pos` to its next option. Branches of the
    /// prefix only have options left when they are choice points, and moving
    /// one starts the next subtree.
    fn stepped(&mut self, pos: usize) {
        let new_subtree = self.contains(pos);
        if new_subtree {
            let kept = self.choices.partition_point(|&choice| choice <= pos);
            self.choices.truncate(kept);
            // Skipping equivalent prefixes, a scout numbers its subtree.
            if self.equivalent.is_none() {
                self.subtree += 1;
            }
        }

        // The next execution replays the path from the start and finds out
        // again whether, and where, it spends the bound.
        self.spent = false;
        self.preempted = 0;

        if let Some(eq) = &mut self.equivalent {
            eq.scout = new_subtree;
            eq.recording = new_subtree;
            eq.key = None;
            eq.trace.clear();
            eq.objects = 0;
            eq.threads = 0;
        }
    }
}

impl Schedule {
    /// Returns the index of the currently active thread
    fn active_thread_index(&self) -> Option<u8> {
        self.threads
            .iter()
            .enumerate()
            .find(|(_, th)| th.is_active())
            .map(|(index, _)| index as u8)
    }

    /// Compute the number of preemptions for the current state of the branch
    fn preemptions(&self) -> u8 {
        if self.initial_active.is_some() && self.initial_active != self.active_thread_index() {
            return self.preemptions + 1;
        }

        self.preemptions
    }

    /// Whether the path reaching this branch has used up a non-zero
    /// preemption bound: `may_preempt` refuses here, and at every schedule
    /// below, since preemptions only add up along a path. A bound of 0 is
    /// spent from the start; its search is divided by loads alone, so it
    /// does not close a split's prefix.
    fn spends_bound(&self, preemption_bound: Option<u8>) -> bool {
        preemption_bound.is_some_and(|bound| bound > 0) && !self.may_preempt(preemption_bound)
    }

    /// Whether the preemption bound lets DPOR schedule another thread here.
    fn may_preempt(&self, preemption_bound: Option<u8>) -> bool {
        if let Some(bound) = preemption_bound {
            assert!(
                self.preemptions <= bound,
                "[loom internal bug] actual = {}, bound = {}",
                self.preemptions,
                bound
            );

            return self.preemptions < bound;
        }

        true
    }

    fn backtrack(&mut self, thread_id: thread::Id, preemption_bound: Option<u8>) {
        assert!(self.exploring);

        if !self.may_preempt(preemption_bound) {
            return;
        }

        let thread_id = thread_id.as_usize();

        if thread_id >= self.threads.len() {
            return;
        }

        if self.threads[thread_id].is_enabled() {
            self.threads[thread_id].explore();
        } else {
            self.explore_threads();
        }
    }

    /// Schedules every thread `backtrack` could ever schedule here (vfsmc
    /// split): afterwards, `backtrack` at this branch changes nothing.
    fn explore_all(&mut self, preemption_bound: Option<u8>) {
        if self.exploring && self.may_preempt(preemption_bound) {
            self.explore_threads();
        }
    }

    fn explore_threads(&mut self) {
        for th in &mut self.threads {
            th.explore();
        }
    }

    fn has_pending(&self) -> bool {
        self.threads.iter().any(Thread::is_pending)
    }
}

impl Thread {
    fn explore(&mut self) {
        if *self == Thread::Skip {
            *self = Thread::Pending;
        }
    }

    fn is_pending(&self) -> bool {
        *self == Thread::Pending
    }

    fn is_active(&self) -> bool {
        *self == Thread::Active
    }

    fn is_enabled(&self) -> bool {
        !self.is_disabled()
    }

    fn is_disabled(&self) -> bool {
        *self == Thread::Disabled
    }
}
