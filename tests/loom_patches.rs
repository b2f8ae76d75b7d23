//! The vendored loom's own tests of vfsmc's patches to it
//! (vendor/loom/VFSMC-PATCHES.md): the DPOR fix (section 1), the split of
//! one search into parts (section 2) and happens-before queries (section 3).
//! They are loom tests, written against loom's API only, and live beside
//! the patches they test; `cargo test` in `vendor/loom` cannot run them from
//! inside this workspace, so this file compiles them into the workspace's
//! test suite, and CI runs them with every other test.

#[path = "../vendor/loom/tests/vfsmc_causality.rs"]
mod vfsmc_causality;
#[path = "../vendor/loom/tests/vfsmc_dpor.rs"]
mod vfsmc_dpor;
#[path = "../vendor/loom/tests/vfsmc_split.rs"]
mod vfsmc_split;
