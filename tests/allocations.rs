//! Recording a step and checking the invariants allocates nothing: the same
//! execution (the canonical sequential one, identical schedule) makes
//! exactly as many heap allocations with recording and invariants on as
//! with both off. Model state, the engine's own bookkeeping and per-execution
//! set-up allocate the same in both; only the per-step path differs, so any
//! allocation it made would show as a difference.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use vfsmc::engine::{sequential_with, Budget};
use vfsmc_specs::Run;

/// Counts the allocations made on this OS thread while armed (loom and
/// shuttle run every model thread as a coroutine on it).
struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.try_with(Cell::get).unwrap_or(false) {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations made by one sequential execution of `model/variant
/// [scenario]`, and the steps it recorded.
fn allocations(model: &str, variant: &str, scenario: &str, recording: bool) -> (u64, usize) {
    let m = vfsmc_specs::model(model).unwrap();
    let inner = m
        .body(&Run {
            variant: variant.to_string(),
            scenario: scenario.to_string(),
            input: Vec::new(),
        })
        .unwrap();
    let body = Arc::new(move || {
        ARMED.with(|a| a.set(true));
        inner();
        ARMED.with(|a| a.set(false));
    });
    COUNT.with(|c| c.set(0));
    let budget = Budget {
        recording,
        ..Budget::default()
    };
    let seq = sequential_with(&budget, body);
    assert!(seq.record.violation.is_none(), "{model}/{variant} failed");
    (COUNT.with(Cell::get), seq.record.steps.len())
}

fn per_step_path_allocates_nothing(model: &str, variant: &str, scenario: &str) {
    // A first execution interns the model's names (once per process).
    allocations(model, variant, scenario, true);
    let (on, steps) = allocations(model, variant, scenario, true);
    let (off, none) = allocations(model, variant, scenario, false);
    assert!(steps > 0 && none == 0, "recording on records, off does not");
    assert_eq!(
        on,
        off,
        "{model}/{variant} [{scenario}]: {steps} recorded steps cost {} allocations",
        on as i64 - off as i64
    );
}

#[test]
fn fdtable_expand_vs_fget() {
    per_step_path_allocates_nothing("fdtable", "current", "expand-vs-fget");
}

#[test]
fn fdtable_churn() {
    per_step_path_allocates_nothing("fdtable", "current", "churn");
}

#[test]
fn freelist_irq() {
    per_step_path_allocates_nothing("freelist", "classic", "irq");
}

#[test]
fn freelist_migrate() {
    per_step_path_allocates_nothing("freelist", "guzik-8byte", "migrate");
}
