//! Patch coverage: where a variant's code differs from its base, and
//! whether an execution ran it.
//!
//! A variant changes behaviour only where the model asks for it: a flavour's
//! `has(Bug::X)` (fdtable, namei, the VFS substrate, the open path,
//! io_uring), the freelist's `variant.is(Variant::X)` and `is_any`. Each of
//! those calls is a **site**: it records, by its `#[track_caller]`
//! location, that it ran and whether it chose the variant's branch. Inside
//! a changed region a variant marks its distinct **exits** with
//! `flavor.exit(Bug::X, "label")`, so that "the change ran" can be told
//! from "the change ran where it differs" (a reordering that only matters
//! when the first call fails: the failing exit is what a scenario must
//! reach).
//!
//! [`SITES`] lists every site and exit in the model's source, written by
//! `model/build.rs` from the same calls; the checker compares it with what
//! the executions recorded, to name the changed code no scenario reached.
//! A base (a kernel release, `Base::V6_10`) is a whole version, not a
//! site: its differences are measured by the traces, not here.

pub use vfsmc_runtime::patch::Hit;
pub(crate) use vfsmc_runtime::patch::{exit, site};

/// One site or exit in the model's source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// Relative to the model crate (`src/namei/unlazy.rs`).
    pub file: &'static str,
    pub line: u32,
    /// The `Enum::Name` values the call selects.
    pub keys: &'static [&'static str],
    /// For an exit, its label.
    pub exit: Option<&'static str>,
}

impl Site {
    /// `model/src/namei/unlazy.rs:123`, as a reviewer opens it.
    pub fn at(&self) -> String {
        format!("model/{}:{}", self.file, self.line)
    }

    /// Whether the call selects the value named `name` (the `Name` of
    /// `Enum::Name`).
    pub fn selects(&self, name: &str) -> bool {
        self.keys
            .iter()
            .any(|k| k.rsplit("::").next() == Some(name))
    }

    /// Whether a recorded location is this site's.
    pub fn is_at(&self, file: &str, line: u32) -> bool {
        line == self.line && file.ends_with(self.file)
    }
}

include!(concat!(env!("OUT_DIR"), "/sites.rs"));

/// The sites and exits that select any of `names`, in source order.
pub fn sites_of(names: &[&str]) -> Vec<&'static Site> {
    SITES
        .iter()
        .filter(|s| names.iter().any(|n| s.selects(n)))
        .collect()
}

/// The names (`Enum::Name` without the enum) any site selects: what a
/// variant's code value can name.
pub fn names() -> Vec<&'static str> {
    let mut all: Vec<&str> = SITES
        .iter()
        .flat_map(|s| s.keys.iter().filter_map(|k| k.rsplit("::").next()))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}
