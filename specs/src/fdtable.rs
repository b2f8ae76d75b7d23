//! The `fdtable` model's registry, scenarios and invariants (being written).

use crate::{Invariant, Model, Run, Scenario, Variant};

pub struct Fdtable;

impl Model for Fdtable {
    fn name(&self) -> &'static str {
        "fdtable"
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
