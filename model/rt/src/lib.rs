//! vfsmc-runtime: what every model runs on, apart from the kernel code.
//!
//! - [`sync`]: the engine facade, the only place that names loom, shuttle or
//!   std synchronisation types.
//! - [`trace`]: a trace step as data (thread, context, CPU, function, typed
//!   effect); the checker renders it.
//! - [`exec`]: the execution being explored, as models see it — steps,
//!   invariants, tracepoints, cost counters, violations.
//! - [`patch`]: the variant sites and exits an execution ran.
//! - [`driver`]: the same execution as engines see it; models never use it.
//!
//! The model crate re-exports each module under its own name
//! (`vfsmc_model::sync`, …). It is a crate of its own so that the model
//! coverage (`scripts/model-coverage`) instruments the kernel code only:
//! these functions run on every step of every execution, and two searches
//! on two cores incrementing the same coverage counters here made the
//! instrumented test run several times slower than the plain one.

pub mod driver;
pub mod exec;
pub mod patch;
pub mod sync;
pub mod trace;
