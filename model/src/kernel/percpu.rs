//! CPUs, interrupts, preemption and migration (include/linux/irqflags.h,
//! include/linux/preempt.h, include/linux/percpu-defs.h, v6.12).
//!
//! Each CPU is a token (an engine mutex). A task holds its CPU's token except
//! at an interrupt window, [`OnCpu::window`], where a pending interrupt handler
//! of that CPU may take the token and run *to completion* before the task
//! continues — exactly the hardware guarantee, and only where the task has
//! IRQs enabled. The same window is a preemption point: if preemption is
//! enabled and a migration was requested, the task resumes on another CPU and
//! every later `this_cpu` access targets that CPU. Same-CPU handlers see the
//! task's stores in program order (the token hand-off is a release/acquire),
//! while cross-CPU accesses keep the engine's full relaxed semantics.
//!
//! NMIs use a second token per CPU that a task releases at *every* window,
//! IRQs disabled or not. A handler thread holds both tokens, so interrupts do
//! not nest (depth 1).

use std::cell::RefCell;
use std::ops::Deref;

use crate::exec::Counter;
use crate::kernel::task::Task;
use crate::sync::{self, Ordering};
use crate::trace::Context;
use crate::trace::{CpuEvent, Effect};

const NO_MIGRATION: u64 = u64::MAX;

/// The machine: `n` CPUs, their interrupt tokens, a pending migration.
pub struct Cpus {
    irq: Vec<sync::Mutex>,
    nmi: Vec<sync::Mutex>,
    migrate_to: sync::AtomicU64,
}

impl Cpus {
    pub fn new(n: usize) -> Cpus {
        Cpus {
            irq: (0..n).map(|_| sync::Mutex::new()).collect(),
            nmi: (0..n).map(|_| sync::Mutex::new()).collect(),
            migrate_to: sync::AtomicU64::new(NO_MIGRATION),
        }
    }

    pub fn len(&self) -> usize {
        self.irq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.irq.is_empty()
    }

    /// Runs task `t` on `cpu`: it holds the CPU until a window.
    pub fn run_task<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        t.set_cpu(cpu);
        let on = OnCpu {
            task: t,
            cpus: self,
            tokens: RefCell::new(None),
        };
        on.take_tokens();
        on
    }

    /// Runs an interrupt handler on `cpu`: it holds the CPU (both tokens) for
    /// its whole body, with IRQs disabled as hardirq context runs on x86.
    pub fn run_irq<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        assert_eq!(t.context(), Context::Irq, "run_irq needs an Irq task");
        let on = self.run_task(t, cpu);
        t.set_irqs_off(1);
        t.step(Effect::Cpu(CpuEvent::IrqEnter { cpu: cpu as u8 }));
        on
    }

    /// Runs an NMI handler on `cpu`: it only needs the NMI token, so it can
    /// land where the interrupted code has IRQs disabled.
    pub fn run_nmi<'a>(&'a self, t: &'a Task, cpu: usize) -> OnCpu<'a> {
        assert_eq!(t.context(), Context::Nmi, "run_nmi needs an Nmi task");
        t.set_cpu(cpu);
        let on = OnCpu {
            task: t,
            cpus: self,
            tokens: RefCell::new(None),
        };
        let g = self.nmi[cpu].lock();
        *on.tokens.borrow_mut() = Some((None, g));
        t.set_irqs_off(1);
        t.step(Effect::Cpu(CpuEvent::NmiEnter { cpu: cpu as u8 }));
        on
    }

    /// The scheduler decides to move the task that next passes a preemption
    /// point to `cpu` (one request at a time).
    pub fn request_migration(&self, t: &Task, cpu: usize) {
        self.migrate_to.store(cpu as u64, Ordering::Release);
        t.step(Effect::Cpu(CpuEvent::MigrationRequest { cpu: cpu as u8 }));
    }
}

type Tokens<'a> = (Option<sync::MutexGuard<'a>>, sync::MutexGuard<'a>);

/// A task, IRQ or NMI running on a CPU. Derefs to its [`Task`].
pub struct OnCpu<'a> {
    task: &'a Task,
    cpus: &'a Cpus,
    tokens: RefCell<Option<Tokens<'a>>>,
}

impl<'a> Deref for OnCpu<'a> {
    type Target = Task;
    fn deref(&self) -> &Task {
        self.task
    }
}

impl<'a> OnCpu<'a> {
    fn take_tokens(&self) {
        let cpu = self.this_cpu();
        let irq = self.cpus.irq[cpu].lock();
        let nmi = self.cpus.nmi[cpu].lock();
        *self.tokens.borrow_mut() = Some((Some(irq), nmi));
    }

    pub fn task(&self) -> &'a Task {
        self.task
    }

    /// smp_processor_id / raw_smp_processor_id.
    pub fn this_cpu(&self) -> usize {
        self.task.cpu().expect("a task on a CPU has one")
    }

    /// An interrupt window and preemption point between two steps. Handlers
    /// of this CPU may run here; with preemption enabled a requested
    /// migration happens here.
    pub fn window(&self) {
        if self.task.context() != Context::Task {
            return;
        }
        let cpu = self.this_cpu();
        let irqs_on = !self.task.irqs_disabled();
        let Some((irq, nmi)) = self.tokens.borrow_mut().take() else {
            return;
        };
        drop(nmi);
        if irqs_on {
            drop(irq);
            if self.task.preempt_count() == 0 {
                self.maybe_migrate(cpu);
            }
            self.take_tokens();
        } else {
            let nmi = self.cpus.nmi[cpu].lock();
            *self.tokens.borrow_mut() = Some((irq, nmi));
        }
    }

    fn maybe_migrate(&self, cpu: usize) {
        let to = self.cpus.migrate_to.load(Ordering::Acquire);
        if to != NO_MIGRATION && to as usize != cpu {
            self.cpus.migrate_to.store(NO_MIGRATION, Ordering::Relaxed);
            self.task.set_cpu(to as usize);
            self.task.step(Effect::Cpu(CpuEvent::Migrated {
                from: cpu as u8,
                to: to as u8,
            }));
        }
    }

    /// local_irq_save: disable local interrupts (nestable).
    pub fn local_irq_save(&self) {
        self.task.set_irqs_off(self.task.irqs_off_depth() + 1);
        self.task.cost(Counter::IrqToggle, 1);
        self.task.step(Effect::Cpu(CpuEvent::LocalIrqSave));
    }

    /// local_irq_restore: re-enable when the outermost save is restored.
    pub fn local_irq_restore(&self) {
        self.task
            .set_irqs_off(self.task.irqs_off_depth().saturating_sub(1));
        self.task.step(Effect::Cpu(CpuEvent::LocalIrqRestore));
        self.window();
    }

    /// preempt_disable: the task stays on this CPU (IRQs may still come).
    pub fn preempt_disable(&self) {
        self.task.set_preempt_count(self.task.preempt_count() + 1);
    }

    /// preempt_enable: preemption point once the count drops to zero.
    pub fn preempt_enable(&self) {
        self.task
            .set_preempt_count(self.task.preempt_count().saturating_sub(1));
        self.window();
    }

    /// Leaves the CPU (task exit, irq_exit).
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
        }
        self.tokens.borrow_mut().take();
    }
}
