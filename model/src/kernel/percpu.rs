//! CPUs, interrupts, preemption and migration (include/linux/irqflags.h as
//! read at torvalds/linux bd8fbdee6562, a v2.6-era copy;
//! include/linux/percpu-defs.h as read at torvalds/linux 17737d3b5997, a
//! v3.x-era copy; include/linux/preempt.h not re-read; merges not
//! identified).
//!
//! The adversary is not opt-in. A task placed on a CPU ([`Cpus::run_task`])
//! sits on it (a [`Seat`] in its [`Task`]), and every primitive consults the
//! seat right before each engine operation: with IRQs enabled that instant
//! is an interrupt point, and with preemption enabled too it is a preemption
//! point, where another task of the same CPU may run or the task may migrate.
//! Model code places none of these points; [`OnCpu::window`] remains for the
//! instants that are no engine operation (IRQs or preemption re-enabled).
//!
//! Each CPU has three tokens (engine mutexes), taken in this order:
//! - `sched`: the CPU runs this task. A task gives it up at a preemption
//!   point, so a second task of the CPU (or a work item's kworker) runs;
//! - `irq`: hardirq. A task gives it up at every interrupt point, so an
//!   interrupt handler of the CPU runs *to completion* before the task goes
//!   on — the hardware guarantee;
//! - `nmi`: a task gives it up at every engine operation, IRQs disabled or
//!   not, and so does an interrupt handler: an NMI lands anywhere, inside an
//!   IRQ too.
//!
//! A handler holds `irq` and `nmi` for its whole body (IRQs off, as hardirq
//! context runs on x86); an NMI holds `nmi`. Handing a token over is a
//! release/acquire, so same-CPU code sees the interrupted code's stores in
//! program order, while cross-CPU accesses keep the engine's relaxed
//! semantics.
//!
//! A holder gives its tokens up at every such point, whether or not another
//! actor waits: a handler that has not started yet is what the engine must
//! be able to run there, and its first attempt to take the token is the
//! engine operation loom's DPOR orders against the holder's. (Giving a token
//! up only when a ghost count says someone waits would hide the handler's
//! arrival from DPOR and cost a preemption per arrival.) A token nobody else
//! ever takes adds steps to an execution but no execution to a search.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::Arc;

use crate::exec::Counter;
use crate::kernel::task::{Seat, Task};
use crate::sync::{self, Ordering};
use crate::trace::Context;
use crate::trace::{CpuEvent, Effect};

const NO_MIGRATION: u64 = u64::MAX;

/// The tokens of a CPU, in the order they are taken.
const SCHED: usize = 0;
const IRQ: usize = 1;
const NMI: usize = 2;
const TOKENS: usize = 3;

/// One CPU: its tokens.
struct Cpu {
    tokens: [sync::Mutex; TOKENS],
}

/// The machine, shared by every seat on it.
struct Machine {
    cpus: Vec<Cpu>,
    migrate_to: sync::AtomicU64,
}

/// The machine: `n` CPUs, their tokens, a pending migration.
pub struct Cpus(Arc<Machine>);

impl Cpus {
    pub fn new(n: usize) -> Cpus {
        let cpu = || Cpu {
            tokens: [sync::Mutex::new(), sync::Mutex::new(), sync::Mutex::new()],
        };
        Cpus(Arc::new(Machine {
            cpus: (0..n).map(|_| cpu()).collect(),
            migrate_to: sync::AtomicU64::new(NO_MIGRATION),
        }))
    }

    pub fn len(&self) -> usize {
        self.0.cpus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.cpus.is_empty()
    }

    fn seat<'a>(&'a self, t: &'a Task, cpu: usize, kind: Kind) -> OnCpu<'a> {
        t.set_cpu(cpu);
        let seat = CpuSeat {
            held: RefCell::new([None, None, None]),
            kind,
            machine: self.0.clone(),
        };
        seat.take(cpu, kind.tokens());
        t.sit(Box::new(seat));
        OnCpu { task: t }
    }

    /// Runs task `t` on `cpu`, preemptible, IRQs on: every engine operation
    /// it performs is an interrupt and preemption point.
    pub fn run_task<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        self.seat(t, cpu, Kind::Task { pinned: false })
    }

    /// Runs a work item of a per-CPU workqueue on `cpu` (process context, as
    /// `queue_work_on` runs it): preemptible and interruptible like a task,
    /// but its kworker never migrates (the work runs with migration
    /// disabled).
    pub fn run_work<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        assert_eq!(
            t.context(),
            Context::Kthread,
            "run_work needs a Kthread task"
        );
        self.seat(t, cpu, Kind::Task { pinned: true })
    }

    /// Runs an interrupt handler on `cpu`: it holds the CPU (irq and nmi
    /// tokens) for its whole body, with IRQs disabled as hardirq context runs
    /// on x86; an NMI may still land between its engine operations.
    pub fn run_irq<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        assert_eq!(t.context(), Context::Irq, "run_irq needs an Irq task");
        let on = self.seat(t, cpu, Kind::Irq);
        t.set_irqs_off(1);
        t.step(Effect::Cpu(CpuEvent::IrqEnter { cpu: cpu as u8 }));
        on
    }

    /// Runs an NMI handler on `cpu`: it only needs the NMI token, so it can
    /// land where the interrupted code has IRQs disabled, in an IRQ handler
    /// too.
    pub fn run_nmi<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        assert_eq!(t.context(), Context::Nmi, "run_nmi needs an Nmi task");
        let on = self.seat(t, cpu, Kind::Nmi);
        t.set_irqs_off(1);
        t.step(Effect::Cpu(CpuEvent::NmiEnter { cpu: cpu as u8 }));
        on
    }

    /// The scheduler decides to move the task that next passes a preemption
    /// point to `cpu` (one request at a time).
    pub fn request_migration(&self, t: &Task, cpu: usize) {
        self.0.migrate_to.store(cpu as u64, Ordering::Release);
        t.step(Effect::Cpu(CpuEvent::MigrationRequest { cpu: cpu as u8 }));
    }
}

/// Who sits on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A task or a kworker; `pinned` when it never migrates.
    Task {
        pinned: bool,
    },
    Irq,
    Nmi,
}

impl Kind {
    /// The tokens it holds while it runs.
    fn tokens(self) -> &'static [usize] {
        match self {
            Kind::Task { .. } => &[SCHED, IRQ, NMI],
            Kind::Irq => &[IRQ, NMI],
            Kind::Nmi => &[NMI],
        }
    }
}

/// A token held. The guard borrows a mutex of the machine, which the seat's
/// `Arc` keeps alive and in place for as long as the guard exists.
type Token = sync::MutexGuard<'static>;

/// What an actor running on a CPU holds there.
struct CpuSeat {
    /// Declared before `machine`, so the guards are released first.
    held: RefCell<[Option<Token>; TOKENS]>,
    kind: Kind,
    machine: Arc<Machine>,
}

impl CpuSeat {
    /// Takes `tokens` of `cpu`, in token order.
    fn take(&self, cpu: usize, tokens: &[usize]) {
        for &k in tokens {
            let guard = self.machine.cpus[cpu].tokens[k].lock();
            // SAFETY: the guard borrows a mutex inside `self.machine`, an
            // `Arc` this seat owns and drops only after `held` (field order),
            // and the machine's CPUs never move or change after
            // construction. The guard never leaves the seat, so the 'static
            // lifetime is never observed beyond the mutex's.
            let guard = unsafe { std::mem::transmute::<sync::MutexGuard<'_>, Token>(guard) };
            self.held.borrow_mut()[k] = Some(guard);
        }
    }

    /// Releases `tokens`.
    fn release(&self, tokens: &[usize]) {
        let mut held = self.held.borrow_mut();
        for &k in tokens.iter().rev() {
            held[k] = None;
        }
    }

    /// Gives up, then takes back, `tokens`: an instant where another actor
    /// of `cpu` may run.
    fn cycle(&self, cpu: usize, tokens: &[usize]) {
        self.release(tokens);
        self.take(cpu, tokens);
    }

    /// At a preemption point: when the scheduler asked for it, the task
    /// leaves its CPU and resumes on the requested one. True if it moved.
    fn maybe_migrate(&self, t: &Task, cpu: usize) -> bool {
        if self.machine.cpus.len() < 2
            || self.kind != (Kind::Task { pinned: false })
            || t.migrate_disabled()
        {
            return false;
        }
        let to = self.machine.migrate_to.load(Ordering::Acquire);
        if to == NO_MIGRATION || to as usize == cpu {
            return false;
        }
        let to = to as usize;
        self.machine
            .migrate_to
            .store(NO_MIGRATION, Ordering::Relaxed);
        self.release(&[SCHED, IRQ, NMI]);
        t.set_cpu(to);
        self.take(to, &[SCHED, IRQ, NMI]);
        t.step(Effect::Cpu(CpuEvent::Migrated {
            from: cpu as u8,
            to: to as u8,
        }));
        true
    }
}

impl Seat for CpuSeat {
    fn engine_op(&self, t: &Task) {
        let cpu = t.cpu().expect("a seated task has a CPU");
        match self.kind {
            Kind::Nmi => {}
            Kind::Irq => self.cycle(cpu, &[NMI]),
            Kind::Task { .. } if t.irqs_disabled() => self.cycle(cpu, &[NMI]),
            Kind::Task { .. } if t.preempt_count() > 0 => self.cycle(cpu, &[IRQ, NMI]),
            Kind::Task { .. } => {
                if !self.maybe_migrate(t, cpu) {
                    self.cycle(cpu, &[SCHED, IRQ, NMI]);
                }
            }
        }
    }

    fn sleep(&self, t: &Task, wait: &mut dyn FnMut()) {
        assert!(
            matches!(self.kind, Kind::Task { .. }) && t.preempt_count() == 0 && !t.irqs_disabled(),
            "only a preemptible task may sleep"
        );
        self.sleep_inner(t, wait);
    }
}

impl CpuSeat {
    fn sleep_inner(&self, t: &Task, wait: &mut dyn FnMut()) {
        let cpu = t.cpu().expect("a seated task has a CPU");
        let tokens = self.kind.tokens();
        self.release(tokens);
        wait();
        self.take(cpu, tokens);
    }
}

impl Drop for CpuSeat {
    fn drop(&mut self) {
        self.release(self.kind.tokens());
    }
}

/// A task, kworker, IRQ or NMI running on a CPU. Derefs to its [`Task`].
pub struct OnCpu<'a> {
    task: &'a Task,
}

impl<'a> Deref for OnCpu<'a> {
    type Target = Task;
    fn deref(&self) -> &Task {
        self.task
    }
}

impl<'a> OnCpu<'a> {
    pub fn task(&self) -> &'a Task {
        self.task
    }

    /// smp_processor_id / raw_smp_processor_id.
    pub fn this_cpu(&self) -> usize {
        self.task.cpu().expect("a task on a CPU has one")
    }

    /// An interrupt and preemption point that is no engine operation: IRQs
    /// or preemption were just re-enabled, and what was pending runs here.
    pub fn window(&self) {
        self.task.engine_op();
    }

    /// local_irq_save: disable local interrupts (nestable). The instant
    /// before is still an interrupt point.
    pub fn local_irq_save(&self) {
        self.window();
        self.task.set_irqs_off(self.task.irqs_off_depth() + 1);
        self.task.cost(Counter::IrqToggle, 1);
        self.task.step(Effect::Cpu(CpuEvent::LocalIrqSave));
    }

    /// local_irq_restore: re-enable when the outermost save is restored; a
    /// pending interrupt arrives at once.
    pub fn local_irq_restore(&self) {
        self.task
            .set_irqs_off(self.task.irqs_off_depth().saturating_sub(1));
        self.task.step(Effect::Cpu(CpuEvent::LocalIrqRestore));
        self.window();
    }

    /// preempt_disable: the task stays on this CPU (IRQs may still come).
    /// The instant before is still a preemption point.
    pub fn preempt_disable(&self) {
        self.window();
        self.task.set_preempt_count(self.task.preempt_count() + 1);
    }

    /// preempt_enable: a preemption point once the count drops to zero.
    pub fn preempt_enable(&self) {
        self.task
            .set_preempt_count(self.task.preempt_count().saturating_sub(1));
        self.window();
    }

    /// migrate_disable: the task stays on this CPU but stays preemptible
    /// (another task of the CPU may run at its preemption points).
    pub fn migrate_disable(&self) {
        self.window();
        self.task
            .set_migrate_disabled(self.task.migrate_disabled_depth() + 1);
    }

    /// migrate_enable: a preemption point where the task may move again.
    pub fn migrate_enable(&self) {
        self.task
            .set_migrate_disabled(self.task.migrate_disabled_depth().saturating_sub(1));
        self.window();
    }

    /// Leaves the CPU (task exit, irq_exit, nmi_exit).
    pub fn leave(self) {}
}

impl Drop for OnCpu<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            match self.task.context() {
                Context::Irq => self.task.step(Effect::Cpu(CpuEvent::IrqExit)),
                Context::Nmi => self.task.step(Effect::Cpu(CpuEvent::NmiExit)),
                Context::Task | Context::Kthread => {}
            }
            if matches!(self.task.context(), Context::Irq | Context::Nmi) {
                self.task.set_irqs_off(0);
            }
        }
        self.task.unseat();
    }
}
