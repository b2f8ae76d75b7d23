//! The `freelist` model's registry, scenarios and invariants (being written).

use crate::{Invariant, Model, Run, Scenario, Variant};

pub struct Freelist;

impl Model for Freelist {
    fn name(&self) -> &'static str {
        "freelist"
    }
    fn about(&self) -> &'static str {
        "(being written)"
    }
    fn variants(&self) -> &'static [Variant] {
        &[]
    }
    fn scenarios(&self) -> &'static [Scenario] {
        &[]
    }
    fn invariants(&self) -> &'static [Invariant] {
        &[]
    }
    fn execute(&self, _run: &Run) {}
}
