//! The `primitives` model's registry, scenarios and invariants (being written).

use crate::{Invariant, Model, Run, Scenario, Variant};

pub struct Primitives;

impl Model for Primitives {
    fn name(&self) -> &'static str {
        "primitives"
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
