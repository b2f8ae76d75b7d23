//! vfsmc: the checker — engines, checks, trace rendering, corpus and replay,
//! and the command line. Models live in `vfsmc-model`, what must hold in
//! `vfsmc-specs`; nothing here knows a model.

pub mod cache;
pub mod check;
pub mod cli;
pub mod corpus;
pub mod coverage;
pub mod diagram;
pub mod engine;
pub mod judge;
pub mod litmus;
pub mod pool;
pub mod progress;
pub mod quiet;
pub mod render;
pub mod review;
pub mod shard;
