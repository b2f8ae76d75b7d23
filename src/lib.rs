//! vfsmc: the checker. Engines, checks, trace rendering, corpus and replay.
//! Models live in `vfsmc-model`, what must hold in `vfsmc-specs`.

pub mod check;
pub mod engine;
pub mod quiet;
pub mod render;
