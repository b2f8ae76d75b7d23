//! Kernel primitives on the engine facade. Each records labelled trace steps
//! (`d_seq 4→5`, `spin_lock(file_lock)`) and cost counters, and keeps ghost
//! state that specs observe without engine operations.

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
