//! Kernel primitives on the engine facade. Each records typed trace steps
//! (a store to `d_seq`, `spin_lock(file_lock)`) and cost counters, and keeps
//! ghost state that specs observe without engine operations. [`task`] holds
//! the per-task state they share (held locks, RCU depth, IRQs, preemption).

pub mod atomic;
pub mod bitmap;
pub mod cmpxchg_double;
pub mod errptr;
pub mod lockref;
pub mod percpu;
pub mod rcu;
pub mod seqcount;
pub mod sleeping;
pub mod spinlock;
pub mod task;
