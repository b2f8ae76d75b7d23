//! The vendored loom's own tests of vfsmc's patches to it
//! (vendor/loom/VFSMC-PATCHES.md): the DPOR fix (section 1), the split of
//! one search into parts (section 2) and happens-before queries (section 3).
//! They are loom tests, written against loom's API only, and live beside
//! the patches they test; `cargo test` in `vendor/loom` cannot run them from
//! inside this workspace, so this file compiles them into the workspace's
//! test suite, and CI runs them with every other test. A test whose record
//! is engine output (an insta snapshot) lives here rather than there, since
//! loom's own test suite has no snapshot tooling.

#[path = "../vendor/loom/tests/vfsmc_causality.rs"]
mod vfsmc_causality;
#[path = "../vendor/loom/tests/vfsmc_dpor.rs"]
mod vfsmc_dpor;
#[path = "../vendor/loom/tests/vfsmc_split.rs"]
mod vfsmc_split;

/// A spent preemption bound ends a split's prefix (VFSMC-PATCHES.md section
/// 2): subtrees and executions of the one-part split at depth 8 of each of
/// `vfsmc_split`'s programs under bounds 1 and 2. Once an execution has used
/// up the bound no schedule below has an alternative, so loads below it no
/// longer divide the search: the snapshot has fewer subtrees than the split
/// without the rule and the same executions (the counts without it are in
/// VFSMC-PATCHES.md, section 2, "Evidence").
#[test]
fn a_spent_bound_ends_the_prefix() {
    let split = vfsmc_split::parts(8, 1).next().expect("one part");
    let table: String = vfsmc_split::ALL
        .into_iter()
        .flat_map(|program| [1, 2].map(|bound| (program, bound)))
        .map(|(program, bound)| {
            let stats = vfsmc_split::explore(program, Some(bound), Some(split)).stats;
            format!(
                "{:<16} bound {bound}: {:>3} subtrees, {:>3} executions\n",
                program.name, stats.subtrees, stats.executions
            )
        })
        .collect();
    insta::assert_snapshot!(table);
}
