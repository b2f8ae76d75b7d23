//! The kernel's litmus tests (tools/memory-model/litmus-tests and
//! Documentation/litmus-tests, v6.12), each written against vfsmc's kernel
//! primitives and judged by the engines.
//!
//! A test is a variant of the `litmus` model. Its `exists` clause is the
//! invariant `exists`: a test whose documented result is `Never` must hold
//! (loom: exhaustively), and one whose result is `Sometimes` must be
//! *observed* — the engine has to find an execution satisfying the clause,
//! which it reports as a violation of `exists` with the trace that reaches it.
//!
//! Shared locations are `x`, `y`, `z` (all initially 0); a thread's registers
//! are returned as `r0, r1, …` and judged after every thread joined.

use std::sync::{Arc, LazyLock, Mutex};

use vfsmc_model::exec::{self, Context, Task};
use vfsmc_model::kernel::atomic::Atomic;
use vfsmc_model::kernel::rcu::Rcu;
use vfsmc_model::kernel::spinlock::SpinLock;

use crate::{Expected, Invariant, Model, Run, Scenario, Variant};

/// The shared memory of one litmus execution.
pub struct Mem {
    pub x: Atomic,
    pub y: Atomic,
    pub z: Atomic,
    /// `mylock` of the lock-based tests.
    pub lock: SpinLock,
    pub rcu: Rcu,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            x: Atomic::new("x", 0),
            y: Atomic::new("y", 0),
            z: Atomic::new("z", 0),
            lock: SpinLock::new("mylock"),
            rcu: Rcu::new(),
        }
    }
}

/// One thread of a litmus test: its registers, in order.
pub type Thread = fn(&Mem, &Task) -> Vec<u64>;

/// The final state an `exists` clause judges: `regs[thread][i]` is `Pthread:ri`.
pub struct Outcome {
    pub regs: Vec<Vec<u64>>,
    pub x: u64,
    pub y: u64,
    pub z: u64,
}

/// A litmus test as the kernel documents it.
pub struct LitmusTest {
    pub name: &'static str,
    /// The documented `Result:`; `Sometimes` maps to `violates:exists`.
    pub sometimes: bool,
    pub threads: &'static [Thread],
    /// The `exists` clause, and how the trace should print it.
    pub exists: fn(&Outcome) -> bool,
    pub clause: &'static str,
}

fn mp_poonceonces_p0(m: &Mem, t: &Task) -> Vec<u64> {
    m.x.write_once(t, 1);
    m.y.write_once(t, 1);
    vec![]
}
fn mp_poonceonces_p1(m: &Mem, t: &Task) -> Vec<u64> {
    let r0 = m.y.read_once(t);
    let r1 = m.x.read_once(t);
    vec![r0, r1]
}
fn mp_release_p0(m: &Mem, t: &Task) -> Vec<u64> {
    m.x.write_once(t, 1);
    m.y.store_release(t, 1);
    vec![]
}
fn mp_acquire_p1(m: &Mem, t: &Task) -> Vec<u64> {
    let r0 = m.y.load_acquire(t);
    let r1 = m.x.read_once(t);
    vec![r0, r1]
}
fn mp_exists(o: &Outcome) -> bool {
    o.regs[1] == [1, 0]
}

/// Every litmus test, in `vfsmc list` order.
pub static TESTS: &[LitmusTest] = &[
    LitmusTest {
        name: "MP+poonceonces",
        sometimes: true,
        threads: &[mp_poonceonces_p0, mp_poonceonces_p1],
        exists: mp_exists,
        clause: "1:r0=1 /\\ 1:r1=0",
    },
    LitmusTest {
        name: "MP+pooncerelease+poacquireonce",
        sometimes: false,
        threads: &[mp_release_p0, mp_acquire_p1],
        exists: mp_exists,
        clause: "1:r0=1 /\\ 1:r1=0",
    },
];

fn variant_of(t: &LitmusTest) -> Variant {
    Variant {
        name: t.name,
        expected: if t.sometimes {
            Expected::Violates("exists")
        } else {
            Expected::Holds
        },
        witness: "litmus",
        kernel: "tools/memory-model/litmus-tests (v6.12)",
        about: "a classic LKMM litmus test against vfsmc's primitives",
    }
}

static VARIANTS: LazyLock<Vec<Variant>> = LazyLock::new(|| TESTS.iter().map(variant_of).collect());

/// The litmus model: one variant per test.
pub struct Litmus;

impl Model for Litmus {
    fn name(&self) -> &'static str {
        "litmus"
    }
    fn about(&self) -> &'static str {
        "the kernel's memory-model litmus tests, judged against the primitives"
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    fn scenarios(&self) -> &'static [Scenario] {
        &[Scenario {
            name: "litmus",
            about: "the test's own threads, from the all-zero state",
            goals: &[],
            loom_bound: None,
            generated: false,
        }]
    }
    fn invariants(&self) -> &'static [Invariant] {
        &[Invariant {
            name: "exists",
            about: "the test's exists clause is never satisfied",
        }]
    }

    fn execute(&self, run: &Run) {
        let test = TESTS
            .iter()
            .find(|t| t.name == run.variant)
            .expect("the checker only runs registered variants");
        run_test(test);
    }
}

fn run_test(test: &'static LitmusTest) {
    let mem = Arc::new(Mem::new());
    let regs: Arc<Mutex<Vec<Vec<u64>>>> = Arc::new(Mutex::new(vec![vec![]; test.threads.len()]));
    let handles: Vec<_> = test
        .threads
        .iter()
        .enumerate()
        .map(|(i, thread)| {
            let (mem, regs, thread) = (mem.clone(), regs.clone(), *thread);
            let name = format!("P{i}");
            exec::spawn(&name.clone(), move || {
                let t = Task::new(&name, Context::Task);
                let r = thread(&mem, &t);
                regs.lock().unwrap_or_else(|p| p.into_inner())[i] = r;
            })
        })
        .collect();
    for h in handles {
        h.join();
    }
    let outcome = Outcome {
        regs: regs.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        x: mem.x.peek(),
        y: mem.y.peek(),
        z: mem.z.peek(),
    };
    if (test.exists)(&outcome) {
        exec::check_final(
            "main",
            "exists",
            Err(format!(
                "exists ({}) is satisfied: {}",
                test.clause,
                render(&outcome)
            )),
        );
    }
}

fn render(o: &Outcome) -> String {
    let mut parts = Vec::new();
    for (i, regs) in o.regs.iter().enumerate() {
        for (j, r) in regs.iter().enumerate() {
            parts.push(format!("{i}:r{j}={r}"));
        }
    }
    parts.push(format!("x={} y={} z={}", o.x, o.y, o.z));
    parts.join(" ")
}
