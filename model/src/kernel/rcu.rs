//! RCU and slab object lifetimes (include/linux/rcupdate.h, kernel/rcu/tree.c,
//! mm/slab_common.c, v6.12).
//!
//! Readers announce themselves in a per-reader word; `synchronize_rcu` waits
//! for every reader that was inside a read-side section when it started (the
//! userspace-RCU "memory barrier" flavour: SC fences around the announcement,
//! which gives the LKMM RCU guarantee under C11). `rcu_read_lock_sched` is
//! treated the same way: since v4.20 `synchronize_rcu` waits for it too.
//!
//! Objects live in a [`Slab`]: `kfree` (or a `call_rcu` callback after a
//! grace period) marks an object freed, and **any later access is a
//! use-after-free violation** naming the object, who freed it and who touched
//! it. A `SLAB_TYPESAFE_BY_RCU` cache instead recycles freed memory at once
//! for a new object of the same type: that is a distinct, legal event, and the
//! reader must re-validate identity after taking a reference.

use std::sync::atomic::AtomicU64 as GhostU64;
use std::sync::{Arc, Mutex as GhostMutex};

use crate::exec;
use crate::kernel::task::Task;
use crate::sync::{self, Ordering};
use crate::trace::{intern, Effect, Name, Val};

/// Reader slots per RCU domain: loom allows 4 spawned threads plus main.
const MAX_READERS: usize = 8;

type Callback = Box<dyn FnOnce(&Task) + Send>;

/// One RCU domain with its reader announcements and pending callbacks.
pub struct Rcu {
    /// Per reader: odd while inside a read-side section, bumped by 2 per section.
    readers: Vec<sync::AtomicU64>,
    /// The thread (trace column) of each reader slot in use.
    names: GhostMutex<Vec<u8>>,
    /// Pending callbacks, each with its `queued` ticket.
    callbacks: GhostMutex<Vec<(u64, Callback)>>,
    /// Callbacks queued so far: call_rcu publishes with a release RMW and the
    /// GP kthread takes only the callbacks whose ticket its acquire load saw,
    /// so everything the caller did before call_rcu happens before the grace
    /// period that frees (the kernel's callback-list hand-off).
    queued: sync::AtomicU64,
    stop: sync::AtomicU64,
    /// Ghost: completed grace periods.
    gp_seq: GhostU64,
}

fn ghost<T>(m: &GhostMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for Rcu {
    fn default() -> Self {
        Self::new()
    }
}

impl Rcu {
    pub fn new() -> Rcu {
        Rcu {
            readers: (0..MAX_READERS).map(|_| sync::AtomicU64::new(0)).collect(),
            names: GhostMutex::new(Vec::new()),
            callbacks: GhostMutex::new(Vec::new()),
            queued: sync::AtomicU64::new(0),
            stop: sync::AtomicU64::new(0),
            gp_seq: GhostU64::new(0),
        }
    }

    fn slot(&self, t: &Task) -> usize {
        let mut names = ghost(&self.names);
        match names.iter().position(|&n| n == t.id()) {
            Some(i) => i,
            None => {
                assert!(
                    names.len() < MAX_READERS,
                    "too many RCU readers in one scenario"
                );
                names.push(t.id());
                names.len() - 1
            }
        }
    }

    /// rcu_read_lock: enter a read-side critical section (nestable).
    pub fn rcu_read_lock(&self, t: &Task) {
        let depth = t.rcu_depth();
        t.set_rcu_depth(depth + 1);
        if depth == 0 {
            let _s = exec::atomic_section();
            let r = &self.readers[self.slot(t)];
            let v = r.load(Ordering::Relaxed);
            r.store(v + 1, Ordering::Relaxed);
            sync::fence(Ordering::SeqCst);
        }
        t.step(Effect::RcuRead { lock: true });
    }

    /// rcu_read_unlock: leave the read-side critical section.
    pub fn rcu_read_unlock(&self, t: &Task) {
        let depth = t.rcu_depth();
        if depth == 0 {
            t.violation("rcu_balance", "rcu_read_unlock without rcu_read_lock");
        }
        t.set_rcu_depth(depth - 1);
        if depth == 1 {
            let _s = exec::atomic_section();
            sync::fence(Ordering::SeqCst);
            let r = &self.readers[self.slot(t)];
            let v = r.load(Ordering::Relaxed);
            r.store(v + 1, Ordering::Release);
        }
        t.step(Effect::RcuRead { lock: false });
    }

    /// rcu_read_lock_sched (= preempt_disable; waited for by synchronize_rcu).
    pub fn rcu_read_lock_sched(&self, t: &Task) {
        t.set_preempt_count(t.preempt_count() + 1);
        self.rcu_read_lock(t);
    }

    /// rcu_read_unlock_sched.
    pub fn rcu_read_unlock_sched(&self, t: &Task) {
        self.rcu_read_unlock(t);
        t.set_preempt_count(t.preempt_count().saturating_sub(1));
    }

    /// synchronize_rcu: wait until every reader that was inside a read-side
    /// section when this call started has left it. May sleep.
    pub fn synchronize_rcu(&self, t: &Task) {
        t.might_sleep("synchronize_rcu", None);
        sync::fence(Ordering::SeqCst);
        let nreaders = ghost(&self.names).len();
        let mut waited = 0u32;
        for i in 0..nreaders {
            let r = &self.readers[i];
            let v = r.load(Ordering::Acquire);
            if v & 1 == 1 {
                waited |= 1 << ghost(&self.names)[i];
                while r.load(Ordering::Acquire) == v {
                    sync::yield_now();
                }
            }
        }
        sync::fence(Ordering::SeqCst);
        let gp = self.gp_seq.fetch_add(1, Ordering::SeqCst) + 1;
        t.step(Effect::GracePeriod { gp, waited });
    }

    /// call_rcu: run `callback` after a grace period (on the GP kthread, see
    /// [`Rcu::gp_kthread`], or at the end of the execution). The trace shows
    /// `call_rcu(func(obj))`, or `call_rcu(obj)` when `func` is `None`.
    pub fn call_rcu(
        &self,
        t: &Task,
        func: Option<&'static str>,
        obj: Val,
        callback: impl FnOnce(&Task) + Send + 'static,
    ) {
        let _s = exec::atomic_section();
        // The grace period that precedes the callback orders everything the
        // caller did before call_rcu (full barriers on every CPU in the
        // kernel); the fence plus the release ticket the GP kthread acquires
        // give the callback that edge.
        sync::fence(Ordering::SeqCst);
        let ticket = self.queued.fetch_add(1, Ordering::Release) + 1;
        ghost(&self.callbacks).push((ticket, Box::new(callback)));
        t.step(Effect::CallRcu { func, obj });
    }

    fn run_callbacks(&self, t: &Task, batch: Vec<(u64, Callback)>) {
        for (_, cb) in batch {
            cb(t);
        }
    }

    /// The callbacks whose call_rcu this thread has synchronised with.
    fn take_batch(&self) -> Vec<(u64, Callback)> {
        let upto = self.queued.load(Ordering::Acquire);
        let mut pending = ghost(&self.callbacks);
        let (batch, later) = std::mem::take(&mut *pending)
            .into_iter()
            .partition(|(n, _)| *n <= upto);
        *pending = later;
        batch
    }

    /// The grace-period kthread: whenever callbacks are pending, wait a grace
    /// period and run the callbacks queued before it started. Returns once
    /// [`Rcu::stop_gp_kthread`] was called and nothing is pending.
    pub fn gp_kthread(&self, t: &Task) {
        let _f = t.enter("rcu_gp_kthread");
        loop {
            let batch = self.take_batch();
            if !batch.is_empty() {
                self.synchronize_rcu(t);
                self.run_callbacks(t, batch);
                continue;
            }
            if self.stop.load(Ordering::Acquire) == 1 {
                return;
            }
            sync::yield_now();
        }
    }

    /// Tells the GP kthread to finish once nothing is pending.
    pub fn stop_gp_kthread(&self) {
        self.stop.store(1, Ordering::Release);
    }

    /// rcu_barrier at quiescence: run whatever is still pending.
    pub fn rcu_barrier(&self, t: &Task) {
        let batch = self.take_batch();
        if !batch.is_empty() {
            self.synchronize_rcu(t);
            self.run_callbacks(t, batch);
        }
    }
}

/// A reference to a slab object: index + 1 (0 is NULL), as stored in atomics.
pub type ObjRef = u64;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Life {
    Live {
        gen: u32,
    },
    Freed {
        gen: u32,
        by: Name,
        func: &'static str,
    },
}

struct SlabState<T> {
    objects: Vec<(Arc<T>, Life)>,
    /// Freed objects of a typesafe cache, most recent last (SLUB is LIFO).
    recyclable: Vec<usize>,
}

/// A kmem_cache of objects of one type.
pub struct Slab<T> {
    name: Name,
    typesafe_by_rcu: bool,
    state: GhostMutex<SlabState<T>>,
}

/// The life of a slab object as observers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjState {
    Live { gen: u32 },
    Freed { gen: u32 },
}

impl<T> Slab<T> {
    /// A cache whose freed objects are never reused (kfree returns memory).
    pub fn new(name: impl AsRef<str>) -> Slab<T> {
        Slab {
            name: intern(name.as_ref()),
            typesafe_by_rcu: false,
            state: GhostMutex::new(SlabState {
                objects: Vec::new(),
                recyclable: Vec::new(),
            }),
        }
    }

    /// A SLAB_TYPESAFE_BY_RCU cache: freed memory is reused at once for a new
    /// object of the same type.
    pub fn typesafe_by_rcu(name: impl AsRef<str>) -> Slab<T> {
        Slab {
            typesafe_by_rcu: true,
            ..Slab::new(name)
        }
    }

    /// "file#2": how traces name an object.
    pub fn label(&self, obj: ObjRef) -> String {
        if obj == 0 {
            "NULL".to_string()
        } else {
            format!("{}#{obj}", self.name)
        }
    }

    /// Allocates an object: a recycled one in a typesafe cache (reinitialised
    /// in place by `reinit`, as the constructor would), else a fresh one.
    pub fn alloc(&self, t: &Task, fresh: impl FnOnce() -> T, reinit: impl FnOnce(&T)) -> ObjRef {
        let mut st = ghost(&self.state);
        if let Some(i) = st.recyclable.pop() {
            let gen = match st.objects[i].1 {
                Life::Freed { gen, .. } => gen + 1,
                Life::Live { gen } => gen,
            };
            st.objects[i].1 = Life::Live { gen };
            let obj = st.objects[i].0.clone();
            drop(st);
            reinit(&obj);
            let r = i as u64 + 1;
            t.step(Effect::Alloc {
                cache: self.name,
                obj: r,
                recycled_gen: Some(gen),
            });
            return r;
        }
        st.objects.push((Arc::new(fresh()), Life::Live { gen: 1 }));
        let r = st.objects.len() as u64;
        drop(st);
        t.step(Effect::Alloc {
            cache: self.name,
            obj: r,
            recycled_gen: None,
        });
        r
    }

    /// Scenario set-up: an object that already exists when the execution
    /// starts (allocated before any thread runs, so no step is recorded).
    pub fn prealloc(&self, obj: T) -> ObjRef {
        let mut st = ghost(&self.state);
        st.objects.push((Arc::new(obj), Life::Live { gen: 1 }));
        st.objects.len() as u64
    }

    /// Accesses an object: a use-after-free violation if it was freed (and,
    /// for a typesafe cache, its memory can no longer be reached legally —
    /// never, in these models: the slab page outlives every reader).
    pub fn get(&self, t: &Task, obj: ObjRef) -> Arc<T> {
        if obj == 0 {
            t.violation(
                "null_deref",
                format!("NULL {} pointer dereferenced", self.name),
            );
        }
        let st = ghost(&self.state);
        let (o, life) = &st.objects[(obj - 1) as usize];
        if let Life::Freed { by, func, .. } = *life {
            if !self.typesafe_by_rcu {
                drop(st);
                t.violation(
                    "use_after_free",
                    format!("{} freed by {by} in {func}, then accessed", self.label(obj)),
                );
            }
        }
        o.clone()
    }

    /// The object's state (ghost, for observers).
    pub fn state(&self, obj: ObjRef) -> ObjState {
        match ghost(&self.state).objects[(obj - 1) as usize].1 {
            Life::Live { gen } => ObjState::Live { gen },
            Life::Freed { gen, .. } => ObjState::Freed { gen },
        }
    }

    /// The object's memory without any check (observers only).
    pub fn peek(&self, obj: ObjRef) -> Arc<T> {
        ghost(&self.state).objects[(obj - 1) as usize].0.clone()
    }

    /// Objects allocated so far (observers).
    pub fn count(&self) -> usize {
        ghost(&self.state).objects.len()
    }

    /// Calls `f` on every object allocated so far, with its state
    /// (observers; `f` must not touch this cache).
    pub fn each(&self, mut f: impl FnMut(ObjRef, ObjState, &T)) {
        let st = ghost(&self.state);
        for (i, (obj, life)) in st.objects.iter().enumerate() {
            let state = match *life {
                Life::Live { gen } => ObjState::Live { gen },
                Life::Freed { gen, .. } => ObjState::Freed { gen },
            };
            f(i as u64 + 1, state, obj);
        }
    }

    /// kfree / kmem_cache_free, called from `func` (the trace's witness of
    /// who freed the object, should anyone touch it later).
    pub fn free(&self, t: &Task, obj: ObjRef, func: &'static str) {
        let mut st = ghost(&self.state);
        let i = (obj - 1) as usize;
        let gen = match st.objects[i].1 {
            Life::Live { gen } => gen,
            Life::Freed { .. } => {
                drop(st);
                t.violation("double_free", format!("{} freed twice", self.label(obj)));
            }
        };
        st.objects[i].1 = Life::Freed {
            gen,
            by: t.name(),
            func,
        };
        if self.typesafe_by_rcu {
            st.recyclable.push(i);
        }
        drop(st);
        t.step(Effect::Free {
            cache: self.name,
            obj,
        });
    }
}
