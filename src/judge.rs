//! `vfsmc bench --judge`: re-measures which engine should judge each
//! scenario's holding variants, so a row's `Judge` (chosen once, by a
//! measurement on one day) does not go stale unnoticed when a model or an
//! engine changes. Times are wall clock on this machine and are printed,
//! never asserted.

use vfsmc_specs::{Expected, Judge, Model, Scenario, Variant};

use crate::check::{self, Check, Report, Verdict};
use crate::engine::EngineKind;

/// Both searches under this many seconds: either engine will do, and the
/// registry's optimal row (unbounded, so a stronger proof) is kept.
const BOTH_CHEAP_SECS: f64 = 0.01;

/// What one engine did over a scenario's holding variants.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    pub executions: usize,
    pub seconds: f64,
    /// Every search finished and held.
    pub complete: bool,
}

impl Cost {
    fn add(&mut self, r: &Report) {
        self.executions += r.executions;
        self.seconds += r.seconds;
        self.complete &= r.exhaustive && r.verdict == Verdict::Holds;
    }
}

/// A scenario's holding variants measured on loom (at the scenario's
/// PR-tier bound) and on optimal (unbounded, capped).
#[derive(Clone, Debug)]
pub struct Row {
    pub model: &'static str,
    pub scenario: &'static str,
    pub variants: usize,
    pub registry: Judge,
    pub loom: Cost,
    pub optimal: Cost,
}

impl Row {
    /// The engine the measurement picks: optimal where it proved every
    /// holding variant with no bound, in less time than loom's bounded
    /// search (or both were cheap); loom otherwise.
    pub fn measured(&self) -> Judge {
        let pays = self.optimal.seconds < self.loom.seconds
            || self.optimal.seconds.max(self.loom.seconds) < BOTH_CHEAP_SECS;
        if self.optimal.complete && pays {
            Judge::Optimal
        } else {
            Judge::Loom
        }
    }

    /// The registry's choice differs from this measurement.
    pub fn stale(&self) -> bool {
        self.measured() != self.registry
    }
}

/// The engine a [`Judge`] names.
pub fn engine_name(j: Judge) -> &'static str {
    match j {
        Judge::Loom => "loom",
        Judge::Optimal => "optimal",
    }
}

/// The PR-tier scenarios of `model` with at least one holding variant the
/// optimal engine can judge, each with those variants, in registry order.
pub fn candidates(model: &'static dyn Model) -> Vec<(&'static Scenario, Vec<&'static Variant>)> {
    let optimal = EngineKind::Optimal.engine();
    let mut out: Vec<(&'static Scenario, Vec<&'static Variant>)> = Vec::new();
    for c in check::registry_checks(model, EngineKind::Loom) {
        let judgeable = c.variant.expected == Expected::Holds
            && optimal.cannot_judge(model.needs(c.variant.name)).is_none();
        if !judgeable {
            continue;
        }
        match out.iter_mut().find(|(s, _)| s.name == c.scenario.name) {
            Some((_, variants)) => variants.push(c.variant),
            None => out.push((c.scenario, vec![c.variant])),
        }
    }
    out
}

/// Measures one scenario: each variant on loom as the registry runs it (at
/// the scenario's bound), then on optimal, unbounded, with at most `cap`
/// executions per variant.
pub fn measure(
    model: &'static dyn Model,
    scenario: &'static Scenario,
    variants: &[&'static Variant],
    cap: usize,
) -> Row {
    let complete = Cost {
        complete: true,
        ..Cost::default()
    };
    let mut row = Row {
        model: model.name(),
        scenario: scenario.name,
        variants: variants.len(),
        registry: scenario.judge,
        loom: complete,
        optimal: complete,
    };
    for &v in variants {
        row.loom
            .add(&run(Check::new(model, v, scenario, EngineKind::Loom)));
        let mut optimal = Check::new(model, v, scenario, EngineKind::Optimal);
        optimal.budget.optimal_cap = Some(cap);
        row.optimal.add(&run(optimal));
    }
    row
}

/// A search's report; a crash is its own report (`Verdict::Crashed`), so it
/// counts as incomplete rather than stopping the measurement.
fn run(c: Check) -> Report {
    c.run_guarded()
        .expect("a search without a schedule cannot fail to start")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(registry: Judge, loom: f64, optimal: f64, complete: bool) -> Row {
        let cost = |seconds, complete| Cost {
            executions: 1,
            seconds,
            complete,
        };
        Row {
            model: "m",
            scenario: "s",
            variants: 1,
            registry,
            loom: cost(loom, true),
            optimal: cost(optimal, complete),
        }
    }

    #[test]
    fn optimal_is_picked_only_where_it_proves_everything_and_is_faster_or_both_are_cheap() {
        assert_eq!(row(Judge::Loom, 2.0, 1.0, true).measured(), Judge::Optimal);
        assert_eq!(row(Judge::Loom, 1.0, 2.0, true).measured(), Judge::Loom);
        assert_eq!(row(Judge::Loom, 2.0, 1.0, false).measured(), Judge::Loom);
        assert_eq!(
            row(Judge::Loom, 0.001, 0.005, true).measured(),
            Judge::Optimal
        );
        assert_eq!(
            row(Judge::Loom, 0.001, 0.005, false).measured(),
            Judge::Loom
        );
    }

    #[test]
    fn a_row_is_stale_where_the_registry_and_the_measurement_differ() {
        assert!(row(Judge::Optimal, 1.0, 2.0, true).stale());
        assert!(row(Judge::Loom, 2.0, 1.0, true).stale());
        assert!(!row(Judge::Optimal, 2.0, 1.0, true).stale());
        assert!(!row(Judge::Loom, 2.0, 1.0, false).stale());
    }
}
