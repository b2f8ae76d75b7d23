//! What an execution records of the variant sites it runs (the model
//! crate's `patch` module lists the sites): each call of a site or exit, by
//! its `#[track_caller]` location, once per execution.

use std::panic::Location;

use crate::exec;

/// One site or exit as an execution recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hit {
    pub file: &'static str,
    pub line: u32,
    /// The variant's branch was chosen (always, for an exit).
    pub taken: bool,
}

/// A site ran here: `taken` when it chose the variant's branch. Returns
/// `taken`, so a selector is `site(self.bug == Some(bug))`.
#[track_caller]
pub fn site(taken: bool) -> bool {
    record(Location::caller(), taken);
    taken
}

/// An exit of a changed region ran here.
#[track_caller]
pub fn exit() {
    record(Location::caller(), true);
}

fn record(at: &'static Location<'static>, taken: bool) {
    if !exec::active() {
        return;
    }
    exec::hit(Hit {
        file: at.file(),
        line: at.line(),
        taken,
    });
}
