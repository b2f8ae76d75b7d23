use crate::model::{Split, SplitStats};
use crate::rt::{execution, object, thread, MAX_ATOMIC_HISTORY, MAX_THREADS};

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
/// branch points where the search has, or DPOR may add, two alternatives or
/// more. Every part runs the first execution of every subtree (its own or,
/// as a probe, another part's), so the races those executions find mark the
/// same alternatives at the prefix branches in every part, and the subtrees
/// are numbered alike. A race found by any other execution, which only the
/// subtree's owner runs, marks its prefix branch `Thread::Private`: the
/// owner explores that alternative itself, after the shared ones, as a
/// region of its own that is not numbered (see `VFSMC-PATCHES.md`,
/// section 2).
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

    /// Whether the current execution is its subtree's first, which every
    /// part runs: the races it finds in the prefix mark alternatives every
    /// part explores.
    first: bool,

    /// The prefix branch whose private alternative the search is exploring:
    /// everything below it is this part's alone, and the prefix ends there.
    private: Option<usize>,
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

    /// A race found by this part alone marked the thread, at a branch of a
    /// split search's prefix (vfsmc patch, see `Prefix`): the part explores
    /// it itself once the alternatives every part shares are done.
    Private,
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

    /// Counts the execution that just ran into `stats`.
    pub(crate) fn count(&self, stats: &mut SplitStats) {
        match &self.prefix {
            None => stats.count(0, true, false),
            Some(prefix) => {
                let private = prefix.private.is_some();
                stats.count(prefix.subtree, !prefix.is_probe(), private)
            }
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

    /// Returns the atomic write to read
    pub(super) fn branch_load(&mut self) -> usize {
        assert!(!self.is_traversed(), "[loom internal bug]");

        let load = object::Ref::from_usize(self.pos)
            .downcast::<Load>(&self.branches)
            .expect("Reached unexpected exploration state. Is the model fully deterministic?")
            .get(&self.branches);

        self.pos += 1;

        load.values[load.pos as usize] as usize
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

            // A prefix choice point is a branch where DPOR may add an
            // alternative. DPOR backtracks to the branch of a racing
            // operation, so when the first thread scheduled here performs
            // none, it adds one here only through the preemption bound's
            // extra backtracking or a race in a critical section (see
            // `backtrack`): without a bound such a branch would only use up
            // the prefix's depth.
            if self.in_prefix()
                && (operates || self.preemption_bound.is_some())
                && schedule_ref
                    .get(&self.branches)
                    .may_branch(self.preemption_bound)
            {
                self.push_choice();
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
                let private = self.marks_privately(point);
                let schedule = schedule_ref.get_mut(&mut self.branches);

                if schedule.exploring {
                    schedule.backtrack(thread_id, self.preemption_bound, private);
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
                let private = self.marks_privately(curr.index());
                if let Some(prev) = curr.get(&self.branches).prev {
                    let active_a = curr.get(&self.branches).active_thread_index();
                    let active_b = prev.get(&self.branches).active_thread_index();

                    if active_a != active_b && curr.get_mut(&mut self.branches).exploring {
                        curr.get_mut(&mut self.branches).backtrack(
                            thread_id,
                            self.preemption_bound,
                            private,
                        );
                        return;
                    }

                    curr = prev;
                } else {
                    if curr.get(&mut self.branches).exploring {
                        // This is the very first schedule
                        curr.get_mut(&mut self.branches).backtrack(
                            thread_id,
                            self.preemption_bound,
                            private,
                        );
                    }
                    return;
                }
            }
        }
    }

    /// Whether a race found now marks the branch at `point` for this part
    /// alone: a prefix branch, marked by an execution other than its
    /// subtree's first, which the other parts do not run (see `Prefix`).
    fn marks_privately(&self, point: usize) -> bool {
        self.prefix
            .as_ref()
            .is_some_and(|p| !p.first && p.contains(point))
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
                    return self.stepped(pos, false);
                }

                // Then the alternatives only this part's races marked.
                if let Some(thread) = schedule.threads.iter_mut().find(|th| th.is_private()) {
                    *thread = Thread::Active;
                    return self.stepped(pos, true);
                }
            } else if let Some(load_ref) = last.downcast::<Load>(&self.branches) {
                let load = load_ref.get_mut(&mut self.branches);

                if !load.exploring {
                    continue;
                }

                load.pos += 1;

                if load.pos < load.len {
                    return self.stepped(pos, false);
                }
            } else if let Some(spurious_ref) = last.downcast::<Spurious>(&self.branches) {
                let spurious = spurious_ref.get_mut(&mut self.branches);

                if !spurious.exploring {
                    continue;
                }

                if !spurious.spur {
                    spurious.spur = true;
                    return self.stepped(pos, false);
                }
            } else {
                unreachable!();
            }
        }

        false
    }

    /// The branch at `pos` moved to its next option: tells a split search,
    /// and returns `true` for `step` to return.
    fn stepped(&mut self, pos: usize, private: bool) -> bool {
        if let Some(prefix) = &mut self.prefix {
            prefix.stepped(pos, private);
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
            first: true,
            private: None,
        }
    }

    /// Whether the execution has not passed its prefix's `depth()` choice
    /// points yet, nor used up a (non-zero) preemption bound, so the next
    /// branch point created is in its prefix. Once the bound is spent no
    /// schedule below has an alternative, and only loads would divide the
    /// search further: into subtrees of a few executions each, which cost
    /// every other part a probe apiece. In a private region nothing is
    /// prefix.
    fn is_open(&self) -> bool {
        self.private.is_none() && self.choices.len() < self.depth() && !self.spent
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
        if let Some(pos) = self.private {
            pos + 1
        } else if self.is_open() {
            usize::MAX
        } else {
            self.choices.last().map_or(0, |pos| pos + 1)
        }
    }

    /// Whether the current execution is the first of another part's
    /// subtree, run only for the races it finds in the prefix.
    fn is_probe(&self) -> bool {
        self.private.is_none() && !self.split.owns(self.subtree)
    }

    /// Whether the branch at `pos` is in the prefix.
    fn contains(&self, pos: usize) -> bool {
        pos < self.end()
    }

    /// The search moved branch `pos` to its next option, `private` if that
    /// is an alternative only this part marked. Branches of the prefix only
    /// have options when they are choice points, and moving one to a shared
    /// alternative starts the next subtree; moving one to a private
    /// alternative starts a region of this part's own, below which nothing
    /// is prefix.
    fn stepped(&mut self, pos: usize, private: bool) {
        let in_prefix = self.contains(pos);
        if in_prefix {
            let kept = self.choices.partition_point(|&choice| choice <= pos);
            self.choices.truncate(kept);
        }
        // A private alternative is not a subtree: nobody else knows of it.
        let new_subtree = in_prefix && !private;
        if private {
            self.private = Some(pos);
        } else if new_subtree {
            self.private = None;
            self.subtree += 1;
        }
        self.first = new_subtree;

        // The next execution replays the path from the start and finds out
        // again whether, and where, it spends the bound.
        self.spent = false;
        self.preempted = 0;
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

    fn backtrack(&mut self, thread_id: thread::Id, preemption_bound: Option<u8>, private: bool) {
        assert!(self.exploring);

        if !self.may_preempt(preemption_bound) {
            return;
        }

        let thread_id = thread_id.as_usize();

        if thread_id >= self.threads.len() {
            return;
        }

        let mark = if private {
            Thread::explore_private
        } else {
            Thread::explore
        };
        if self.threads[thread_id].is_enabled() {
            mark(&mut self.threads[thread_id]);
        } else {
            self.threads.iter_mut().for_each(mark);
        }
    }

    /// Whether DPOR could add an alternative here: the branch explores, the
    /// bound allows a switch, and a thread is enabled but not scheduled.
    fn may_branch(&self, preemption_bound: Option<u8>) -> bool {
        self.exploring
            && self.may_preempt(preemption_bound)
            && self.threads.contains(&Thread::Skip)
    }
}

impl Thread {
    fn explore(&mut self) {
        if matches!(*self, Thread::Skip | Thread::Private) {
            *self = Thread::Pending;
        }
    }

    fn explore_private(&mut self) {
        if *self == Thread::Skip {
            *self = Thread::Private;
        }
    }

    fn is_private(&self) -> bool {
        *self == Thread::Private
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
