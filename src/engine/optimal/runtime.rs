//! The model threads as coroutines, and the facade's operations as events.
//!
//! Every execution runs the model from the start. The events the current
//! graph already has are replayed first, in an order that respects po, rf,
//! spawn and join (each read is handed the value of the write the graph
//! says it reads); then the search goes on adding events, always of the
//! first thread (by its place in the spawn tree) that can run. A thread
//! runs from one facade operation to the next without a switch, as under
//! loom, so the ghost state and trace steps a model records around an
//! operation stay with it.
//!
//! Threads are named by their place in the spawn tree (main, its first
//! spawn, that thread's first spawn, …) and locations by their creating
//! thread and how many it created before: the same in every execution,
//! whatever the interleaving.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use generator::{Generator, Gn};
use vfsmc_model::sync::{GraphRuntime, RmwOp};

use super::consistency::Model;
use super::graph::{Block, Graph, Label, Loc, Pos, ReadKind, Tid};
use super::trust::Search;

/// One operation a model thread asks for.
enum Op {
    Alloc(u64),
    Load(Loc, Ordering),
    Store(Loc, u64, Ordering),
    Rmw(Loc, RmwOp, Ordering),
    Cas {
        loc: Loc,
        expected: u64,
        new: u64,
        succ: Ordering,
        fail: Ordering,
    },
    Fence(Ordering),
    Lock(Loc),
    Unlock(Loc),
    Await(Loc, u64),
    Spawn(Box<dyn FnOnce() + Send>),
    Join(Tid),
    Yield {
        bounded: bool,
    },
    /// The thread's code returned.
    Finish,
}

/// How one execution ended.
pub enum Outcome {
    /// Every thread finished.
    Complete,
    /// Some thread waits for something the graph's choices ruled out; a
    /// revisit of one of its reads is the execution where it goes on.
    Blocked,
    /// Two RMWs read the same write: the graph counts for nothing.
    Moot,
    /// A model thread panicked (a violation, or a bug of the model).
    Panicked(Box<dyn Any + Send>),
    /// The engine found the model stuck for good (`deadlock` or
    /// `livelock`, with why) or not deterministic.
    Stuck(String),
}

/// Per execution, what each thread slot is doing.
#[derive(Default)]
struct Threads {
    pending: Vec<Option<Op>>,
    /// The result of the thread's last operation, handed back on resume.
    result: Vec<u64>,
    /// The next graph index of each thread.
    cursor: Vec<usize>,
    parked: Vec<bool>,
    allocs: Vec<u32>,
    spawns: Vec<u32>,
}

impl Threads {
    fn ensure(&mut self, t: Tid) {
        if self.pending.len() <= t {
            let n = t + 1;
            self.pending.resize_with(n, || None);
            self.result.resize(n, 0);
            self.cursor.resize(n, 0);
            self.parked.resize(n, false);
            self.allocs.resize(n, 0);
            self.spawns.resize(n, 0);
        }
    }
}

/// What the runtime keeps: the search, the names of threads and
/// locations, and the execution that is running.
pub struct State {
    pub search: Search,
    /// Thread slots by spawn path (main is `[]`).
    keys: Vec<Vec<u32>>,
    slots: BTreeMap<Vec<u32>, Tid>,
    /// How many locations the search has named.
    pub locs: usize,
    loc_names: BTreeMap<(Tid, u32), Loc>,
    cur: Tid,
    threads: Threads,
    /// Events this execution added, against the cap.
    added: usize,
    pub max_events: usize,
    stuck: Option<String>,
    /// The graph's events are being replayed (not yet extended).
    replaying: bool,
}

/// The runtime one search owns, bound to the facade while it runs.
pub struct Runtime {
    pub st: RefCell<State>,
}

thread_local! {
    /// The panic of a model thread, caught in its coroutine.
    static PANIC: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
}

type Coroutine = Generator<'static, (), ()>;

impl Runtime {
    pub fn new(model: Model, max_events: usize) -> Runtime {
        let mut slots = BTreeMap::new();
        slots.insert(Vec::new(), 0);
        Runtime {
            st: RefCell::new(State {
                search: Search::new(model),
                keys: vec![Vec::new()],
                slots,
                locs: 0,
                loc_names: BTreeMap::new(),
                cur: 0,
                threads: Threads::default(),
                added: 0,
                max_events,
                stuck: None,
                replaying: false,
            }),
        }
    }

    /// Asks for `op` on behalf of the running model thread and returns its
    /// result once the scheduler hands it back.
    fn call(&self, op: Op) -> u64 {
        {
            let mut st = self.st.borrow_mut();
            let t = st.cur;
            st.threads.pending[t] = Some(op);
        }
        // The scoped API needs a handle the model's call stack does not
        // carry; loom switches its threads the same way.
        #[allow(deprecated)]
        generator::yield_with(());
        let st = self.st.borrow();
        st.threads.result[st.cur]
    }

    /// Runs one execution of `body` (the main thread): replays the current
    /// graph, then extends it until no thread can run.
    pub fn run(&self, body: &(dyn Fn() + Send + Sync)) -> Outcome {
        PANIC.with(|p| p.borrow_mut().take());
        let mut cos: Vec<Option<Coroutine>> = Vec::new();
        let main: Box<dyn FnOnce() + Send> = {
            let body: &'static (dyn Fn() + Send + Sync) =
                // SAFETY: every coroutine is finished or dropped before
                // `run` returns, so none outlives `body`.
                unsafe { std::mem::transmute(body) };
            Box::new(body)
        };
        let outcome = self.execute(main, &mut cos);
        // Abandoned threads unwind (their drop guards see a panic and make
        // no more operations).
        drop(cos);
        outcome
    }

    fn execute(&self, main: Box<dyn FnOnce() + Send>, cos: &mut Vec<Option<Coroutine>>) -> Outcome {
        self.begin_execution();
        start(cos, 0, main);
        if let Some(o) = self.replay(cos) {
            return o;
        }
        loop {
            if let Some(o) = self.interrupted() {
                return o;
            }
            let Some(t) = self.next_thread() else {
                if self.lock_fallback() {
                    continue;
                }
                return self.end();
            };
            if let Some(o) = self.explore_op(t, cos) {
                return o;
            }
        }
    }

    fn begin_execution(&self) {
        let mut st = self.st.borrow_mut();
        st.threads = Threads::default();
        let slots = st.keys.len();
        st.threads.ensure(slots.saturating_sub(1));
        st.added = 0;
        st.stuck = None;
        st.cur = 0;
        let g = st.search.graph();
        if g.len(0) == 0 {
            let n = st.locs;
            st.search.add(0, Label::Start { creator: None }, n);
        }
        st.threads.cursor[0] = 1;
    }

    /// What ended the execution early: a panic, a moot graph, a stuck
    /// model.
    fn interrupted(&self) -> Option<Outcome> {
        if let Some(p) = PANIC.with(|p| p.borrow_mut().take()) {
            return Some(Outcome::Panicked(p));
        }
        let st = self.st.borrow();
        if let Some(why) = &st.stuck {
            return Some(Outcome::Stuck(why.clone()));
        }
        if st.search.moot {
            return Some(Outcome::Moot);
        }
        None
    }

    /// Runs thread `t` to its next operation.
    fn resume(&self, cos: &mut [Option<Coroutine>], t: Tid) {
        self.st.borrow_mut().cur = t;
        let co = cos[t].as_mut().expect("a started thread");
        co.resume();
        if co.is_done() {
            let mut st = self.st.borrow_mut();
            if st.threads.pending[t].is_none() {
                st.threads.pending[t] = Some(Op::Finish);
            }
        }
    }

    /// Makes sure thread `t` has its next operation pending.
    fn reveal(&self, cos: &mut [Option<Coroutine>], t: Tid) {
        if self.st.borrow().threads.pending[t].is_none() {
            self.resume(cos, t);
        }
    }

    // --- replay --------------------------------------------------------------

    /// Replays the graph's events; the outcome if the execution ended.
    fn replay(&self, cos: &mut Vec<Option<Coroutine>>) -> Option<Outcome> {
        let order = replay_order(self.st.borrow().search.graph());
        self.st.borrow_mut().replaying = true;
        let outcome = self.replay_in(order, cos);
        self.st.borrow_mut().replaying = false;
        outcome
    }

    fn replay_in(&self, order: Vec<Pos>, cos: &mut Vec<Option<Coroutine>>) -> Option<Outcome> {
        for p in order {
            self.reveal(cos, p.tid());
            if let Some(o) = self.interrupted() {
                return Some(o);
            }
            if let Err(why) = self.replay_op(p, cos) {
                return Some(Outcome::Stuck(format!(
                    "model_panic: not deterministic: {why}"
                )));
            }
        }
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let g = st.search.graph();
        for t in 0..g.threads.len() {
            st.threads.ensure(t);
            if st.threads.cursor[t] < g.len(t) {
                st.threads.parked[t] = true;
            }
        }
        None
    }

    /// Takes `op`, an operation that is never a point where another thread
    /// runs (nor is it under loom: creating an atomic, a mutex or a
    /// condvar, a fence), where the thread is: model code may create an
    /// object's words while it holds ghost state (a slab's), and the
    /// operation before a fence, the fence and the ghost update after them
    /// stay one step in every replay.
    fn inline(&self, op: Op) -> u64 {
        let (t, replaying) = {
            let st = self.st.borrow();
            let t = st.cur;
            (
                t,
                st.replaying && st.threads.cursor[t] < st.search.graph().len(t),
            )
        };
        if replaying {
            return self.inline_replay(t, &op);
        }
        let mut st = self.st.borrow_mut();
        let Step::Value(v) = st.add_op(t, op) else {
            unreachable!("an allocation or a fence never waits")
        };
        st.threads.cursor[t] = st.search.graph().len(t);
        v
    }

    /// [`Runtime::inline`] in a replay: the graph's next event of `t`.
    fn inline_replay(&self, t: Tid, op: &Op) -> u64 {
        let (label, at) = {
            let st = self.st.borrow();
            let at = st.threads.cursor[t];
            (*st.search.graph().label(Pos::new(t, at)), at)
        };
        let result = match (op, label) {
            (Op::Alloc(init), Label::Alloc { loc, init: was }) => {
                self.name_loc(t, loc, *init == was).map(|()| loc as u64)
            }
            (Op::Fence(_), Label::Fence { .. }) => Ok(0),
            _ => Err(format!(
                "the graph has {label:?} where thread {t} asks for {}",
                op_name(op)
            )),
        };
        let mut st = self.st.borrow_mut();
        st.threads.cursor[t] = at + 1;
        result.unwrap_or_else(|why| {
            st.stuck
                .get_or_insert(format!("model_panic: not deterministic: {why}"));
            0
        })
    }

    /// Replays the event at `p` from its thread's pending operation.
    fn replay_op(&self, p: Pos, cos: &mut Vec<Option<Coroutine>>) -> Result<(), String> {
        let t = p.tid();
        let op = {
            let mut st = self.st.borrow_mut();
            if st.threads.cursor[t] != p.idx() {
                return Err(format!(
                    "thread {t} at {} replays event {}",
                    st.threads.cursor[t], p.i
                ));
            }
            st.threads.pending[t].take().expect("a revealed thread")
        };
        let label = *self.st.borrow().search.graph().label(p);
        let (result, taken, parks) = {
            let st = self.st.borrow();
            let g = st.search.graph();
            let next = |d: usize| {
                let q = Pos::new(t, p.idx() + d);
                (q.idx() < g.len(t)).then(|| *g.label(q))
            };
            match (&op, label) {
                (Op::Spawn(_), Label::Create { child }) => (child as u64, 1, false),
                _ => replay_match(&op, label, next, g)?,
            }
        };
        let mut st = self.st.borrow_mut();
        st.threads.cursor[t] += taken;
        st.threads.result[t] = result;
        if let Op::Spawn(f) = op {
            let child = result as Tid;
            st.threads.ensure(child);
            st.threads.cursor[child] = 1;
            st.threads.spawns[t] += 1;
            drop(st);
            start(cos, child, f);
            self.resume(cos, t);
            return Ok(());
        }
        if matches!(label, Label::Finish) || parks {
            if parks {
                st.threads.parked[t] = true;
            }
            return Ok(());
        }
        drop(st);
        self.resume(cos, t);
        Ok(())
    }

    /// Checks that the `n`-th allocation of thread `t` is location `loc`
    /// and, by `same_init`, starts with the value the graph gave it.
    fn name_loc(&self, t: Tid, loc: Loc, same_init: bool) -> Result<(), String> {
        let mut st = self.st.borrow_mut();
        let n = st.threads.allocs[t];
        st.threads.allocs[t] += 1;
        match st.loc_names.get(&(t, n)) {
            Some(&l) if l == loc && same_init => Ok(()),
            _ => Err(format!("thread {t}'s allocation {n} is not location {loc}")),
        }
    }

    // --- exploration ----------------------------------------------------------

    /// The first thread in spawn-tree order that can run.
    fn next_thread(&self) -> Option<Tid> {
        let st = self.st.borrow();
        let g = st.search.graph();
        st.slots.values().copied().find(|&t| {
            g.len(t) > 0
                && !st.threads.parked.get(t).copied().unwrap_or(false)
                && !matches!(g.last(t).map(|p| *g.label(p)), Some(Label::Finish))
        })
    }

    /// Performs thread `t`'s pending operation as new events.
    fn explore_op(&self, t: Tid, cos: &mut Vec<Option<Coroutine>>) -> Option<Outcome> {
        self.reveal(cos, t);
        if let Some(o) = self.interrupted() {
            return Some(o);
        }
        let op = self.st.borrow_mut().threads.pending[t].take()?;
        let done = matches!(op, Op::Finish);
        let step = match op {
            Op::Spawn(f) => {
                let child = self.spawn_child(t);
                start(cos, child, f);
                Step::Value(child as u64)
            }
            op => self.st.borrow_mut().add_op(t, op),
        };
        if self.st.borrow().added > self.st.borrow().max_events {
            let why = format!(
                "livelock: one execution made more than {} events",
                self.st.borrow().max_events
            );
            return Some(Outcome::Stuck(why));
        }
        match step {
            Step::Value(v) => {
                self.st.borrow_mut().threads.result[t] = v;
                if !done {
                    self.resume(cos, t);
                }
            }
            Step::Park(op) => {
                let mut st = self.st.borrow_mut();
                st.threads.pending[t] = op;
                st.threads.parked[t] = true;
            }
        }
        None
    }

    /// Adds the Create event of thread `t`'s next spawn and the child's
    /// Start; the child's slot.
    fn spawn_child(&self, t: Tid) -> Tid {
        let mut st = self.st.borrow_mut();
        let n = st.threads.spawns[t];
        st.threads.spawns[t] += 1;
        let mut key = st.keys[t].clone();
        key.push(n);
        let child = match st.slots.get(&key) {
            Some(&c) => c,
            None => {
                let c = st.keys.len();
                st.keys.push(key.clone());
                st.slots.insert(key, c);
                c
            }
        };
        st.threads.ensure(child);
        let locs = st.locs;
        let create = st.search.add(t, Label::Create { child }, locs);
        st.search.add(
            child,
            Label::Start {
                creator: Some(create),
            },
            locs,
        );
        st.threads.cursor[child] = 1;
        st.added += 2;
        child
    }

    /// When every thread is parked and one waits for a mutex: that thread's
    /// lock read reads the mutex held (with an item for every free value it
    /// may read instead), and the thread stops there.
    fn lock_fallback(&self) -> bool {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let g = st.search.graph();
        let waiting = st.slots.values().copied().find(|&t| {
            matches!(
                g.last(t).map(|p| *g.label(p)),
                Some(Label::Block(Block::LockWait(_)))
            )
        });
        let Some(t) = waiting else {
            return false;
        };
        let Some(Label::Block(Block::LockWait(loc))) = g.last(t).map(|p| *g.label(p)) else {
            return false;
        };
        st.search.remove_label(t);
        let r = st
            .search
            .add_read(t, loc, Ordering::Acquire, ReadKind::Lock, st.locs);
        debug_assert_ne!(r.value, 0, "the fallback reads a held mutex");
        let n = st.locs;
        st.search.add(t, Label::Block(Block::LockHeld), n);
        st.threads.parked[t] = true;
        true
    }

    /// How the execution ended once no thread can run.
    fn end(&self) -> Outcome {
        let st = self.st.borrow();
        let g = st.search.graph();
        let blocked: Vec<Tid> = st
            .slots
            .values()
            .copied()
            .filter(|&t| {
                g.len(t) > 0 && !matches!(g.last(t).map(|p| *g.label(p)), Some(Label::Finish))
            })
            .collect();
        if blocked.is_empty() {
            return Outcome::Complete;
        }
        match stuck_for_good(g, &blocked) {
            Some(why) => Outcome::Stuck(why),
            None => Outcome::Blocked,
        }
    }
}

/// What an operation became.
enum Step {
    /// The value handed back; the thread goes on.
    Value(u64),
    /// The thread stops here, keeping `op` pending for when its label is
    /// taken away.
    Park(Option<Op>),
}

impl State {
    fn locs_len(&self) -> usize {
        self.locs
    }

    /// Adds the events of operation `op` of thread `t`.
    fn add_op(&mut self, t: Tid, op: Op) -> Step {
        let before = self.search.graph().order.len();
        let step = self.add_op_events(t, op);
        self.added += self.search.graph().order.len().saturating_sub(before);
        step
    }

    fn add_op_events(&mut self, t: Tid, op: Op) -> Step {
        let n = self.locs_len();
        match op {
            Op::Alloc(init) => {
                let k = self.threads.allocs[t];
                self.threads.allocs[t] += 1;
                let loc = *self.loc_names.entry((t, k)).or_insert(self.locs);
                if loc == self.locs {
                    self.locs += 1;
                }
                self.search.add(t, Label::Alloc { loc, init }, self.locs);
                Step::Value(loc as u64)
            }
            Op::Load(loc, o) => {
                let r = self.search.add_read(t, loc, o, ReadKind::Plain, self.locs);
                Step::Value(r.value)
            }
            Op::Store(loc, v, o) => {
                self.search.add_write(t, loc, o, v, n);
                self.wake_lock_waiters(loc, v);
                Step::Value(0)
            }
            Op::Rmw(loc, op, o) => {
                let kind = ReadKind::Fai {
                    op,
                    wo: release_part(o),
                };
                let r = self
                    .search
                    .add_read(t, loc, acquire_part(o), kind, self.locs);
                let new = op.apply(r.value);
                self.search.add_rmw_write(t, release_part(o), new, n);
                self.wake_lock_waiters(loc, new);
                Step::Value(r.value)
            }
            Op::Cas {
                loc,
                expected,
                new,
                succ,
                fail,
            } => {
                let kind = ReadKind::Cas {
                    expected,
                    new,
                    succ: acquire_part(succ),
                    fail,
                    wo: release_part(succ),
                };
                let r = self.search.add_read(t, loc, fail, kind, self.locs);
                if r.value == expected {
                    self.search.add_rmw_write(t, release_part(succ), new, n);
                    self.wake_lock_waiters(loc, new);
                }
                Step::Value(r.value)
            }
            Op::Fence(o) => {
                let ord = self.search.ord(o);
                self.search.add(t, Label::Fence { ord }, n);
                Step::Value(0)
            }
            Op::Lock(loc) => self.lock(t, loc),
            Op::Unlock(loc) => {
                self.search.add_write(t, loc, Ordering::Release, 0, n);
                self.wake_lock_waiters(loc, 0);
                Step::Value(0)
            }
            Op::Await(loc, unless) => {
                let kind = ReadKind::Await { unless };
                let r = self
                    .search
                    .add_read(t, loc, Ordering::Acquire, kind, self.locs);
                if r.value == unless {
                    self.search.add(t, Label::Block(Block::CondWait), n);
                    return Step::Park(None);
                }
                Step::Value(r.value)
            }
            Op::Join(child) => {
                let g = self.search.graph();
                if matches!(g.last(child).map(|p| *g.label(p)), Some(Label::Finish)) {
                    self.search.add(t, Label::Join { child }, n);
                    return Step::Value(0);
                }
                self.search.add(t, Label::Block(Block::Join(child)), n);
                Step::Park(Some(Op::Join(child)))
            }
            Op::Yield { bounded } => {
                if !bounded && spins_without_news(self.search.graph(), t) {
                    self.search.add(t, Label::Block(Block::Spin), n);
                    return Step::Park(None);
                }
                self.search.add(t, Label::Yield, n);
                Step::Value(0)
            }
            Op::Finish => {
                self.search.add(t, Label::Finish, n);
                self.wake_joiners(t);
                Step::Value(0)
            }
            Op::Spawn(_) => unreachable!("spawns are the runtime's"),
        }
    }

    /// A mutex acquisition: a wait label while the co-latest write holds
    /// it, else the lock's read and write.
    fn lock(&mut self, t: Tid, loc: Loc) -> Step {
        let n = self.locs_len();
        let g = self.search.graph();
        if g.value(g.co_max(loc), loc) != 0 {
            self.search.add(t, Label::Block(Block::LockWait(loc)), n);
            return Step::Park(Some(Op::Lock(loc)));
        }
        let r = self
            .search
            .add_read(t, loc, Ordering::Acquire, ReadKind::Lock, self.locs);
        debug_assert_eq!(r.value, 0, "a lock reads the co-latest, free value");
        self.search.add_rmw_write(t, Ordering::Relaxed, 1, n);
        Step::Value(0)
    }

    /// A write of `v` to `loc`: a free mutex there lets its waiters try
    /// again.
    fn wake_lock_waiters(&mut self, loc: Loc, v: u64) {
        if v != 0 {
            return;
        }
        let waiting: Vec<Tid> = self
            .slots
            .values()
            .copied()
            .filter(|&t| self.last_label(t) == Some(Label::Block(Block::LockWait(loc))))
            .collect();
        for t in waiting {
            self.search.remove_label(t);
            self.threads.parked[t] = false;
        }
    }

    /// Thread `t` finished: whoever joins it goes on.
    fn wake_joiners(&mut self, t: Tid) {
        let waiting: Vec<Tid> = self
            .slots
            .values()
            .copied()
            .filter(|&j| self.last_label(j) == Some(Label::Block(Block::Join(t))))
            .collect();
        for j in waiting {
            self.search.remove_label(j);
            self.threads.parked[j] = false;
        }
    }

    fn last_label(&self, t: Tid) -> Option<Label> {
        let g = self.search.graph();
        g.last(t).map(|p| *g.label(p))
    }
}

/// Starts thread `t`'s coroutine (it runs at its first resume).
fn start(cos: &mut Vec<Option<Coroutine>>, t: Tid, f: Box<dyn FnOnce() + Send>) {
    if cos.len() <= t {
        cos.resize_with(t + 1, || None);
    }
    #[allow(deprecated)]
    let co = Gn::<()>::new(move || {
        if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
            // The generator's own cancellation unwinds through here: let it.
            if p.downcast_ref::<generator::Error>().is_some() {
                std::panic::resume_unwind(p);
            }
            PANIC.with(|slot| *slot.borrow_mut() = Some(p));
        }
    });
    cos[t] = Some(co);
}

/// The acquire half of an RMW's ordering (what its read gets).
fn acquire_part(o: Ordering) -> Ordering {
    match o {
        Ordering::AcqRel => Ordering::Acquire,
        Ordering::Release => Ordering::Relaxed,
        other => other,
    }
}

/// The release half of an RMW's ordering (what its write gets).
fn release_part(o: Ordering) -> Ordering {
    match o {
        Ordering::AcqRel => Ordering::Release,
        Ordering::Acquire => Ordering::Relaxed,
        other => other,
    }
}

/// Whether thread `t`'s round since its last yield wrote nothing (no
/// write, no spawn) and learned nothing: each of its reads read the write
/// the thread's latest earlier read of that location read. Such a round
/// ends a spin that would go the same way again, so the thread waits for a
/// write a revisit may bring instead. A round that read something new (a
/// cmpxchg loop that saw another count) goes on, and so does a round that
/// read nothing (it acts on what the round before learned: a failed
/// `atomic_inc_not_zero` leaving its loop for the caller's retry). The
/// first round never counts: where its loop started is unknown.
fn spins_without_news(g: &Graph, t: Tid) -> bool {
    let evs = &g.threads[t];
    let Some(y) = evs.iter().rposition(|e| matches!(e.label, Label::Yield)) else {
        return false;
    };
    let read_before = |loc: Loc| {
        evs[..y].iter().rev().find_map(|e| match e.label {
            Label::Read { loc: l, rf, .. } if l == loc => Some(rf),
            _ => None,
        })
    };
    let round = &evs[y + 1..];
    round.iter().any(|e| matches!(e.label, Label::Read { .. }))
        && round.iter().all(|e| match e.label {
            Label::Write { .. } | Label::Create { .. } => false,
            Label::Read { loc, rf, .. } => read_before(loc) == Some(rf),
            _ => true,
        })
}

/// The events to replay: in the order they were added, except that an
/// event waits for what it depends on (its po predecessor, the write it
/// reads, the write before it in coherence, the allocation of what it
/// touches, the end of a thread it joins), so the porf-prefix of a write
/// that revisited a read comes right before that read, and the writes of
/// each location replay in coherence order, as the ghost state the model
/// keeps beside them (outside the engine) saw them. Only coherence can
/// close a cycle (porf is acyclic), in an execution no interleaving shows
/// (2+2W): there the order follows porf alone. Spawns' Start events,
/// allocations and fences (their threads take them in passing) and block
/// labels are left out (the spawn and the end of the replay take them).
fn replay_order(g: &Graph) -> Vec<Pos> {
    order_by(g, true).unwrap_or_else(|| order_by(g, false).expect("porf is acyclic"))
}

/// Where the depth-first walk of [`order_by`] is with an event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    New,
    /// Its dependencies are being visited.
    Open,
    Done,
}

/// [`replay_order`], with coherence among the dependencies or not; `None`
/// on a cycle.
fn order_by(g: &Graph, coherence: bool) -> Option<Vec<Pos>> {
    let mut mark: Vec<Vec<Mark>> = g.threads.iter().map(|e| vec![Mark::New; e.len()]).collect();
    let mut out = Vec::new();
    let (mut stack, mut ds) = (Vec::new(), Vec::new());
    for &p in &g.order {
        stack.push((p, false));
        while let Some((q, expanded)) = stack.pop() {
            let m = &mut mark[q.tid()][q.idx()];
            if expanded {
                *m = Mark::Done;
                if replayed(g.label(q)) {
                    out.push(q);
                }
                continue;
            }
            match *m {
                Mark::Done => continue,
                Mark::Open => return None,
                Mark::New => *m = Mark::Open,
            }
            stack.push((q, true));
            deps(g, q, coherence, &mut ds);
            for &d in &ds {
                if !d.is_init() && mark[d.tid()][d.idx()] != Mark::Done {
                    stack.push((d, false));
                }
            }
        }
    }
    Some(out)
}

/// Whether a replay takes the event as an operation of its own.
fn replayed(label: &Label) -> bool {
    !matches!(
        label,
        Label::Start { .. } | Label::Block(_) | Label::Fence { .. } | Label::Alloc { .. }
    ) && !label.is_rmw_write()
}

/// What the event at `p` waits for in a replay, into `out` (cleared
/// first; one buffer serves a whole ordering).
fn deps(g: &Graph, p: Pos, coherence: bool, out: &mut Vec<Pos>) {
    out.clear();
    if p.i > 0 {
        out.push(Pos { t: p.t, i: p.i - 1 });
    }
    let label = *g.label(p);
    match label {
        Label::Start { creator: Some(c) } => out.push(c),
        Label::Join { child } => out.extend(g.last(child)),
        Label::Read { rf, .. } => out.push(rf),
        Label::Write {
            loc, rmw: false, ..
        } if coherence => {
            let k = g.co_index(p, loc);
            if k > 1 {
                out.push(g.co_of(loc)[k - 2]);
            }
        }
        _ => {}
    }
    if let Some(loc) = label.loc() {
        out.extend(g.alloc.get(loc).copied().flatten());
    }
    if label.is_rmw_write() {
        // Replayed with its read, as one operation: what it depends on
        // must come before the read.
        out.push(Pos { t: p.t, i: p.i - 1 });
    }
}

/// Whether `op`, a thread's pending operation, is the graph's event
/// `label` (with `next(d)` the thread's event `d` later): the result to
/// hand back, how many events it takes, and whether the thread stops
/// after it.
fn replay_match(
    op: &Op,
    label: Label,
    next: impl Fn(usize) -> Option<Label>,
    g: &Graph,
) -> Result<(u64, usize, bool), String> {
    let read_value = |loc: Loc, rf: Pos| g.value(rf, loc);
    let with_write =
        |loc: Loc| matches!(next(1), Some(Label::Write { loc: l, rmw: true, .. }) if l == loc);
    match (op, label) {
        (
            Op::Load(l, _),
            Label::Read {
                loc,
                rf,
                kind: ReadKind::Plain,
                ..
            },
        ) if *l == loc => Ok((read_value(loc, rf), 1, false)),
        (
            Op::Store(l, v, _),
            Label::Write {
                loc,
                val,
                rmw: false,
                ..
            },
        ) if *l == loc && *v == val => Ok((0, 1, false)),
        (
            Op::Rmw(l, _, _),
            Label::Read {
                loc,
                rf,
                kind: ReadKind::Fai { .. },
                ..
            },
        ) if *l == loc && with_write(loc) => Ok((read_value(loc, rf), 2, false)),
        (
            Op::Cas {
                loc: l, expected, ..
            },
            Label::Read {
                loc,
                rf,
                kind: ReadKind::Cas { .. },
                ..
            },
        ) if *l == loc => {
            let v = read_value(loc, rf);
            Ok((v, if v == *expected { 2 } else { 1 }, false))
        }
        (
            Op::Lock(l),
            Label::Read {
                loc,
                rf,
                kind: ReadKind::Lock,
                ..
            },
        ) if *l == loc => {
            let held = read_value(loc, rf) != 0;
            Ok((0, if held { 1 } else { 2 }, held))
        }
        (
            Op::Unlock(l),
            Label::Write {
                loc,
                val: 0,
                rmw: false,
                ..
            },
        ) if *l == loc => Ok((0, 1, false)),
        (
            Op::Await(l, unless),
            Label::Read {
                loc,
                rf,
                kind: ReadKind::Await { .. },
                ..
            },
        ) if *l == loc => {
            let v = read_value(loc, rf);
            Ok((v, 1, v == *unless))
        }
        (Op::Join(c), Label::Join { child }) if *c == child => Ok((0, 1, false)),
        (Op::Yield { .. }, Label::Yield) => Ok((0, 1, false)),
        (Op::Finish, Label::Finish) => Ok((0, 1, false)),
        (_, label) => Err(format!(
            "the graph has {label:?} where the thread asks for {}",
            op_name(op)
        )),
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Alloc(_) => "an allocation",
        Op::Load(..) => "a load",
        Op::Fence(_) => "a fence",
        Op::Store(..) => "a store",
        Op::Rmw(..) => "an RMW",
        Op::Cas { .. } => "a compare-and-exchange",
        Op::Lock(_) => "a lock",
        Op::Unlock(_) => "an unlock",
        Op::Await(..) => "a wait",
        Op::Spawn(_) => "a spawn",
        Op::Join(_) => "a join",
        Op::Yield { .. } => "a yield",
        Op::Finish => "its end",
    }
}

/// Whether the threads in `blocked` wait for good: each read the wait
/// depends on reads the co-latest write, so no revisit is left that lets
/// it go on. `None` when the execution is only blocked (a revisit covers
/// the execution where it goes on).
fn stuck_for_good(g: &Graph, blocked: &[Tid]) -> Option<String> {
    let mut why = Vec::new();
    for &t in blocked {
        let last = g.last(t)?;
        let kind = match *g.label(last) {
            Label::Block(b) => b,
            _ => return None,
        };
        let reads_latest = |p: Pos| match *g.label(p) {
            Label::Read { loc, rf, .. } => g.co_max(loc) == rf,
            _ => true,
        };
        let live = match kind {
            Block::Spin => {
                let round = round_start(g, t);
                (round..last.idx()).all(|i| reads_latest(Pos::new(t, i)))
            }
            Block::LockHeld | Block::CondWait => reads_latest(Pos {
                t: last.t,
                i: last.i - 1,
            }),
            Block::Join(c) => blocked.contains(&c),
            Block::LockWait(_) => false,
        };
        if !live {
            return None;
        }
        why.push(match kind {
            Block::Spin => format!("thread {t} spins on values no thread will change"),
            Block::LockHeld => format!("thread {t} waits for a mutex held for good"),
            Block::CondWait => format!("thread {t} waits for a notification that never comes"),
            Block::Join(c) => format!("thread {t} joins thread {c}, which never ends"),
            Block::LockWait(_) => unreachable!("the fallback took every wait label"),
        });
    }
    // Threads that spin (and those that join them) make a livelock; a
    // thread that sleeps on a mutex or a wait queue makes a deadlock.
    let sleeps = blocked.iter().any(|&t| {
        matches!(
            g.last(t).map(|p| *g.label(p)),
            Some(Label::Block(
                Block::LockHeld | Block::CondWait | Block::LockWait(_)
            ))
        )
    });
    let kind = if sleeps { "deadlock" } else { "livelock" };
    Some(format!("{kind}: {}", why.join("; ")))
}

/// Where thread `t`'s last round started: after its last yield, or at its
/// start.
fn round_start(g: &Graph, t: Tid) -> usize {
    let evs = &g.threads[t];
    evs.iter()
        .rposition(|e| matches!(e.label, Label::Yield))
        .map_or(0, |i| i + 1)
}

impl GraphRuntime for Runtime {
    fn atomic_new(&self, v: u64) -> u32 {
        self.inline(Op::Alloc(v)) as u32
    }

    fn load(&self, loc: u32, o: Ordering) -> u64 {
        self.call(Op::Load(loc as Loc, o))
    }

    fn store(&self, loc: u32, v: u64, o: Ordering) {
        self.call(Op::Store(loc as Loc, v, o));
    }

    fn rmw(&self, loc: u32, op: RmwOp, o: Ordering) -> u64 {
        self.call(Op::Rmw(loc as Loc, op, o))
    }

    fn compare_exchange(
        &self,
        loc: u32,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        let v = self.call(Op::Cas {
            loc: loc as Loc,
            expected: current,
            new,
            succ: success,
            fail: failure,
        });
        if v == current {
            Ok(v)
        } else {
            Err(v)
        }
    }

    fn fence(&self, o: Ordering) {
        self.inline(Op::Fence(o));
    }

    fn mutex_new(&self) -> u32 {
        self.inline(Op::Alloc(0)) as u32
    }

    fn lock(&self, mutex: u32) {
        self.call(Op::Lock(mutex as Loc));
    }

    fn try_lock(&self, mutex: u32) -> bool {
        self.compare_exchange(mutex, 0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn unlock(&self, mutex: u32) {
        self.call(Op::Unlock(mutex as Loc));
    }

    fn condvar_new(&self) -> u32 {
        self.inline(Op::Alloc(0)) as u32
    }

    /// The count of notifications before the mutex is released; the
    /// thread blocks while a read of it still gives that count.
    fn wait(&self, condvar: u32, mutex: u32) {
        let seen = self.load(condvar, Ordering::Acquire);
        self.unlock(mutex);
        self.call(Op::Await(condvar as Loc, seen));
        self.lock(mutex);
    }

    fn notify_all(&self, condvar: u32) {
        self.rmw(condvar, RmwOp::Add(1), Ordering::Release);
    }

    fn spawn(&self, f: Box<dyn FnOnce() + Send>) -> u32 {
        self.call(Op::Spawn(f)) as u32
    }

    fn join(&self, thread: u32) {
        self.call(Op::Join(thread as Tid));
    }

    fn yield_now(&self) {
        self.call(Op::Yield { bounded: false });
    }

    fn yield_bounded(&self) {
        self.call(Op::Yield { bounded: true });
    }
}
