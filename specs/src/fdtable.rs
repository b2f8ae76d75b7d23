//! The `fdtable` model's registry, scenarios, invariants and sequential
//! reference (fs/file.c, v6.10 and v6.12+; brief §4).
//!
//! Invariants read the process by reference ([`World`]): the current table's
//! bitmaps and slots, next_fd, RLIMIT_NOFILE, live files with their
//! refcounts, and the ghost log (allocation decisions with the bitmap they
//! were taken on, who holds which fd, each fd's occupants, fget progress,
//! fork children).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arbitrary::Unstructured;
use vfsmc_model::exec;
use vfsmc_model::fdtable::{
    alloc_empty_file, alloc_fd, close_fd, do_prlimit, dup_fd, f_dupfd, fd_install, fget, fget_done,
    fput, ksys_dup3, put_unused_fd, Base, Bug, Claim, Errno, FgetState, FileId, Flavor, Fs, Init,
    NR_OPEN_DEFAULT, SYSCTL_NR_OPEN,
};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::{Context, Name};

use crate::{Check, Expected, Invariant, Scenario, ScenarioRow, Spec, Tier, Variant, Watch};

/// An fd argument: a number, or the last fd this thread obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fd {
    N(u32),
    Last,
}

/// One system call of a thread program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// open(2): alloc_fd(0), alloc_empty_file, fd_install.
    Open,
    /// An open that fails after reserving its fd: alloc_fd, put_unused_fd.
    OpenFails,
    Close(Fd),
    /// dup2(old, new).
    Dup2(u32, u32),
    /// fcntl(fd, F_DUPFD, min).
    DupFd {
        fd: u32,
        min: u32,
    },
    /// fget(fd) then fput.
    Fget(u32),
    /// fork(): dup_fd.
    Fork,
    /// setrlimit(RLIMIT_NOFILE, n).
    SetRlimit(u32),
}

/// What an operation returned: an fd (or 0), or an errno.
pub type OpResult = Result<u32, Errno>;

/// Runs one thread program against `fs`, returning each call's result.
pub fn run_program(fs: &Fs, t: &Task, ops: &[Op]) -> Vec<OpResult> {
    let mut last: Option<u32> = None;
    let mut results = Vec::new();
    for op in ops {
        let r = match *op {
            Op::Open => {
                let r = alloc_fd(fs, t, 0, false);
                if let Ok(fd) = r {
                    let file = alloc_empty_file(fs, t);
                    fd_install(fs, t, fd, file);
                    last = Some(fd);
                }
                r
            }
            Op::OpenFails => {
                let r = alloc_fd(fs, t, 0, false);
                if let Ok(fd) = r {
                    put_unused_fd(fs, t, fd);
                }
                r
            }
            Op::Close(a) => {
                let fd = match a {
                    Fd::N(n) => n,
                    Fd::Last => last.unwrap_or(u32::MAX),
                };
                close_fd(fs, t, fd).map(|()| fd)
            }
            Op::Dup2(old, new) => ksys_dup3(fs, t, old, new),
            Op::DupFd { fd, min } => {
                let r = f_dupfd(fs, t, fd, min);
                if let Ok(fd) = r {
                    last = Some(fd);
                }
                r
            }
            Op::Fget(fd) => match fget(fs, t, fd) {
                Some(file) => {
                    fput(fs, t, file.obj);
                    fget_done(fs, t);
                    Ok(fd)
                }
                None => Err(Errno::Ebadf),
            },
            Op::Fork => {
                dup_fd(fs, t);
                Ok(0)
            }
            Op::SetRlimit(n) => {
                do_prlimit(fs, t, n);
                Ok(0)
            }
        };
        results.push(r);
    }
    results
}

/// The sequential reference: POSIX's lowest-free-fd set, nothing else.
#[derive(Clone, Debug)]
pub struct Reference {
    /// Open fds and the file (an opaque number) each refers to.
    pub open: BTreeMap<u32, u32>,
    pub rlimit: u32,
    next_file: u32,
}

impl Reference {
    pub fn new(init: &Init) -> Reference {
        Reference {
            open: init.fds.iter().map(|&(fd, f)| (fd, f as u32)).collect(),
            rlimit: init.rlimit,
            next_file: init.nfiles as u32,
        }
    }

    fn lowest_free(&self, start: u32) -> u32 {
        (start..)
            .find(|fd| !self.open.contains_key(fd))
            .unwrap_or(start)
    }

    fn alloc(&self, start: u32) -> OpResult {
        let fd = self.lowest_free(start);
        if fd >= self.rlimit.min(SYSCTL_NR_OPEN) {
            Err(Errno::Emfile)
        } else {
            Ok(fd)
        }
    }

    /// Applies a thread program; results as [`run_program`] returns them.
    pub fn run(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let mut last: Option<u32> = None;
        ops.iter()
            .map(|op| match *op {
                Op::Open => {
                    let r = self.alloc(0);
                    if let Ok(fd) = r {
                        self.open.insert(fd, self.next_file);
                        self.next_file += 1;
                        last = Some(fd);
                    }
                    r
                }
                Op::OpenFails => self.alloc(0),
                Op::Close(a) => {
                    let fd = match a {
                        Fd::N(n) => n,
                        Fd::Last => last.unwrap_or(u32::MAX),
                    };
                    self.open.remove(&fd).map(|_| fd).ok_or(Errno::Ebadf)
                }
                Op::Dup2(old, new) => {
                    if old == new {
                        Err(Errno::Einval)
                    } else if new >= self.rlimit {
                        Err(Errno::Ebadf)
                    } else if new >= SYSCTL_NR_OPEN {
                        Err(Errno::Emfile)
                    } else if let Some(&f) = self.open.get(&old) {
                        self.open.insert(new, f);
                        Ok(new)
                    } else {
                        Err(Errno::Ebadf)
                    }
                }
                Op::DupFd { fd, min } => match self.open.get(&fd).copied() {
                    None => Err(Errno::Ebadf),
                    Some(f) => {
                        let r = self.alloc(min);
                        if let Ok(n) = r {
                            self.open.insert(n, f);
                            last = Some(n);
                        }
                        r
                    }
                },
                Op::Fget(fd) => self.open.get(&fd).map(|_| fd).ok_or(Errno::Ebadf),
                Op::Fork => Ok(0),
                Op::SetRlimit(n) => {
                    self.rlimit = n;
                    Ok(0)
                }
            })
            .collect()
    }
}

// --- initial states --------------------------------------------------------

fn three_open() -> Init {
    Init {
        max_fds: NR_OPEN_DEFAULT,
        fds: vec![(0, 0), (1, 1), (2, 2)],
        nfiles: 3,
        rlimit: SYSCTL_NR_OPEN,
        embedded: true,
    }
}

fn two_open() -> Init {
    Init {
        fds: vec![(0, 0), (1, 1)],
        nfiles: 2,
        ..three_open()
    }
}

fn full_allocated_table() -> Init {
    Init {
        max_fds: NR_OPEN_DEFAULT,
        fds: vec![(0, 0), (1, 1), (2, 2), (3, 3)],
        nfiles: 4,
        rlimit: SYSCTL_NR_OPEN,
        embedded: false,
    }
}

fn one_file_twice() -> Init {
    Init {
        fds: vec![(0, 0), (1, 0)],
        nfiles: 1,
        ..three_open()
    }
}

/// The initial state of the generated scenario: fds 0 and 1 share a file.
pub fn generated_init() -> Init {
    Init {
        fds: vec![(0, 0), (1, 0), (2, 1)],
        nfiles: 2,
        ..three_open()
    }
}

// --- scenarios -------------------------------------------------------------

/// A scenario made concrete: the state it starts from, what each thread
/// runs, and whether the RCU grace-period kthread runs beside the threads
/// (else pending callbacks run at the end, after every thread joined).
#[derive(Clone, Debug)]
pub struct Plan {
    pub init: Init,
    pub threads: Vec<Vec<Op>>,
    pub gp_kthread: bool,
}

fn plan(init: Init, threads: &[&[Op]], gp_kthread: bool) -> Plan {
    Plan {
        init,
        threads: threads.iter().map(|p| p.to_vec()).collect(),
        gp_kthread,
    }
}

fn churn(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[
            &[Op::Open, Op::Close(Fd::Last)],
            &[Op::Close(Fd::N(0)), Op::Open, Op::Open],
        ],
        false,
    )
}

fn rlimit_lowered(_: &[u8]) -> Plan {
    plan(two_open(), &[&[Op::Open], &[Op::SetRlimit(2)]], false)
}

fn expand_vs_fget(_: &[u8]) -> Plan {
    plan(
        full_allocated_table(),
        &[&[Op::Open], &[Op::Close(Fd::N(1))], &[Op::Fget(1)]],
        true,
    )
}

fn expand_vs_fget_recycled(_: &[u8]) -> Plan {
    plan(
        full_allocated_table(),
        &[
            &[Op::Open],
            &[Op::Close(Fd::N(1)), Op::Dup2(0, 1), Op::Open],
            &[Op::Fget(1)],
        ],
        false,
    )
}

fn dup2_vs_open(_: &[u8]) -> Plan {
    plan(three_open(), &[&[Op::Open], &[Op::Dup2(0, 3)]], false)
}

fn fork_vs_open(_: &[u8]) -> Plan {
    plan(three_open(), &[&[Op::Open], &[Op::Fork]], false)
}

fn close_vs_fget(_: &[u8]) -> Plan {
    plan(
        one_file_twice(),
        &[&[Op::Fget(0)], &[Op::Close(Fd::N(0))]],
        false,
    )
}

fn dupfd_vs_close(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[&[Op::DupFd { fd: 2, min: 2 }], &[Op::Close(Fd::N(0))]],
        false,
    )
}

fn generated(input: &[u8]) -> Plan {
    Plan {
        init: generated_init(),
        threads: decode(input),
        gp_kthread: false,
    }
}

type Row = ScenarioRow<Plan>;

const SCENARIOS: &[Row] = &[
    Scenario {
        name: "churn",
        about: "fds 0-2 open; T0 opens then closes, T1 closes fd 0 and opens twice \
                (blogbench shape): the word fills, the fast path fails over to the \
                full_fds_bits search and the table expands",
        goals: &["full_search", "expanded"],
        loom_bound: Some(2),
        tier: Tier::Pr,
        generated: false,
        plan: churn,
    },
    Scenario {
        name: "rlimit-lowered",
        about: "fds 0-1 open; one thread opens while another lowers RLIMIT_NOFILE to 2",
        goals: &["emfile"],
        loom_bound: None,
        tier: Tier::Pr,
        generated: false,
        plan: rlimit_lowered,
    },
    Scenario {
        name: "expand-vs-fget",
        about: "a full allocated table: T0's open expands it, T1 closes fd 1, T2 fgets fd 1 \
                locklessly; the old table is freed by the RCU grace-period kthread",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(2),
        tier: Tier::Pr,
        generated: false,
        plan: expand_vs_fget,
    },
    Scenario {
        name: "expand-vs-fget-recycled",
        about: "a full allocated table: T0's open expands it; T1 closes fd 1, dup2s fd 0 \
                onto it and opens (recycling the closed file's memory at another fd); \
                T2 fgets fd 1 locklessly (old tables are freed at the end)",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(2),
        tier: Tier::Pr,
        generated: false,
        plan: expand_vs_fget_recycled,
    },
    Scenario {
        name: "dup2-vs-open",
        about: "fds 0-2 open; T0 opens (reserves fd 3), T1 dup2(0, 3)",
        goals: &["dup2_ebusy"],
        loom_bound: None,
        tier: Tier::Pr,
        generated: false,
        plan: dup2_vs_open,
    },
    Scenario {
        name: "fork-vs-open",
        about: "fds 0-2 open; T0 opens (reserves fd 3) while T1 forks (dup_fd)",
        goals: &["fork_cleared_reserved"],
        loom_bound: None,
        tier: Tier::Pr,
        generated: false,
        plan: fork_vs_open,
    },
    Scenario {
        name: "close-vs-fget",
        about: "fds 0 and 1 share one file; T0 fget(0) while T1 close(0)",
        goals: &["fget_retry"],
        loom_bound: None,
        tier: Tier::Pr,
        generated: false,
        plan: close_vs_fget,
    },
    Scenario {
        name: "dupfd-vs-close",
        about: "fds 0-2 open; T0 fcntl(2, F_DUPFD, 2) while T1 close(0)",
        goals: &["start_above_next_fd"],
        loom_bound: None,
        tier: Tier::Pr,
        generated: false,
        plan: dupfd_vs_close,
    },
    Scenario {
        name: "generated",
        about: "2-3 threads of 1-3 calls decoded from the input bytes, from fds 0-2 open \
                (0 and 1 share a file)",
        goals: &[],
        loom_bound: Some(2),
        tier: Tier::Pr,
        generated: true,
        plan: generated,
    },
];

// --- variants --------------------------------------------------------------

const fn cur(bug: Bug) -> Flavor {
    Flavor {
        base: Base::Current,
        bug: Some(bug),
    }
}

const VARIANTS: &[Variant<Flavor>] = &[
    Variant {
        name: "v6.10",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file.c:alloc_fd,find_next_fd (v6.10)",
        about: "before the series: two-level search, unconditional full_fds_bits clear, slot sanity check",
        code: Flavor {
            base: Base::V6_10,
            bug: None,
        },
    },
    Variant {
        name: "current",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file.c:alloc_fd,find_next_fd,__clear_open_fd (v6.12)",
        about: "after the series: fast path on the word containing the candidate, conditional clear",
        code: Flavor {
            base: Base::Current,
            bug: None,
        },
    },
    Variant {
        name: "rlimit-skipped-by-fast-path",
        expected: Expected::Violates("emfile"),
        witness: "rlimit-lowered",
        kernel: "fs/file.c:alloc_fd (Yu Ma v1 patch 1, June 2024; found by Mateusz Guzik)",
        about: "v1 fast path jumps to success before the fd >= RLIMIT_NOFILE check",
        code: Flavor {
            base: Base::V6_10,
            bug: Some(Bug::RlimitSkippedByFastPath),
        },
    },
    Variant {
        name: "fast-path-ignores-start-bit",
        expected: Expected::Violates("lowest_free"),
        witness: "dupfd-vs-close",
        kernel: "fs/file.c:find_next_fd (review of v2/v3, Jan Kara)",
        about: "the fast path searches the candidate's word from bit 0: F_DUPFD gets an fd below min",
        code: cur(Bug::FastPathIgnoresStartBit),
    },
    Variant {
        name: "fast-path-drops-word-base",
        expected: Expected::Violates("unique_fd"),
        witness: "churn",
        kernel: "fs/file.c:find_next_fd (review of v2/v3, Jan Kara)",
        about: "the fast path returns the bit index within the word: an fd already in use",
        code: cur(Bug::FastPathDropsWordBase),
    },
    Variant {
        name: "conditional-clear-tests-wrong-bit",
        expected: Expected::Violates("full_fds_bits"),
        witness: "churn",
        kernel: "fs/file.c:__clear_open_fd (mutant of patch 2/3)",
        about: "the conditional clear tests full_fds_bits bit fd, not fd / BITS_PER_LONG",
        code: cur(Bug::ConditionalClearTestsWrongBit),
    },
    Variant {
        name: "put-unused-fd-keeps-next-fd",
        expected: Expected::Violates("next_fd"),
        witness: "churn",
        kernel: "fs/file.c:__put_unused_fd (mutant)",
        about: "closing an fd below next_fd does not lower next_fd",
        code: cur(Bug::PutUnusedFdKeepsNextFd),
    },
    Variant {
        name: "fget-skips-slot-recheck",
        expected: Expected::Violates("fget_linearizable"),
        witness: "close-vs-fget",
        kernel: "fs/file.c:__fget_files (before 054aa8d439b9, CVE-2021-4083)",
        about: "fget keeps a reference taken after the fd was closed",
        code: cur(Bug::FgetSkipsSlotRecheck),
    },
    Variant {
        name: "fget-skips-fdt-recheck",
        expected: Expected::Violates("fget_linearizable"),
        witness: "expand-vs-fget-recycled",
        kernel: "fs/file.c:__fget_files_rcu (mutant of 0ede61d8589c, v6.7)",
        about: "with typesafe files, the old table's stale slot matches a recycled file",
        code: cur(Bug::FgetSkipsFdtRecheck),
    },
    Variant {
        name: "fget-retry-leaks-ref",
        expected: Expected::Violates("refs_balanced"),
        witness: "close-vs-fget",
        kernel: "fs/file.c:__fget_files_rcu (mutant of e386dfc56f83)",
        about: "a failed re-check retries without fput",
        code: cur(Bug::FgetRetryLeaksRef),
    },
    Variant {
        name: "free-fdtable-without-grace-period",
        expected: Expected::Violates("use_after_free"),
        witness: "expand-vs-fget",
        kernel: "fs/file.c:expand_fdtable (mutant)",
        about: "the old table is freed at once, under a lockless reader",
        code: cur(Bug::FreeFdtableWithoutGracePeriod),
    },
    Variant {
        name: "expand-skips-synchronize-rcu",
        expected: Expected::Violates("no_lost_install"),
        witness: "churn",
        kernel: "fs/file.c:expand_fdtable (mutant of 8a81252b774b)",
        about: "a lockless fd_install writes into a table that was already copied",
        code: cur(Bug::ExpandSkipsSynchronizeRcu),
    },
    Variant {
        name: "dup2-ignores-reserved",
        expected: Expected::Violates("unique_fd"),
        witness: "dup2-vs-open",
        kernel: "fs/file.c:do_dup2 (the -EBUSY rule)",
        about: "dup2 installs over an fd an open has reserved",
        code: cur(Bug::Dup2IgnoresReserved),
    },
    Variant {
        name: "dup-fd-keeps-reserved",
        expected: Expected::Violates("fork_no_reserved"),
        witness: "fork-vs-open",
        kernel: "fs/file.c:dup_fd (the rule in its comment)",
        about: "the child inherits an open bit with a NULL slot: an fd reserved forever",
        code: cur(Bug::DupFdKeepsReserved),
    },
];

// --- invariants ------------------------------------------------------------

/// What the invariants read: the process, and what fget_linearizable
/// remembers from step to step.
pub struct World {
    pub fs: Fs,
    seen: Mutex<Vec<(Name, Seen)>>,
}

/// Per fget thread: the (fd, file) being held, and whether that file was
/// seen installed at fd since the reference was taken.
type Seen = ((u32, FileId), bool);

type Inv = Invariant<Check<World>>;

const INVARIANTS: &[Inv] = &[
    Invariant {
        name: "unique_fd",
        about: "F1/F7: no fd is handed out twice (reserved or installed by two callers)",
        check: Check::Step(unique_fd),
    },
    Invariant {
        name: "lowest_free",
        about: "F2: alloc_fd returns the lowest fd >= start that was free when it decided",
        check: Check::Step(lowest_free),
    },
    Invariant {
        name: "emfile",
        about: "F5: the fd returned is below RLIMIT_NOFILE; -EMFILE only when no fd below it is free",
        check: Check::Step(emfile),
    },
    Invariant {
        name: "full_fds_bits",
        about: "F4: full_fds_bits bit i is set iff word i of open_fds is all ones",
        check: Check::Step(full_fds_bits),
    },
    Invariant {
        name: "next_fd",
        about: "F3: every fd below next_fd is open (next_fd never exceeds the lowest free fd)",
        check: Check::Step(next_fd),
    },
    Invariant {
        name: "fork_no_reserved",
        about: "F8: a fork child's table has no open fd with a NULL slot",
        check: Check::Step(fork_no_reserved),
    },
    Invariant {
        name: "fget_linearizable",
        about: "F9: fget returns a file installed at the fd at some instant after its reference was taken",
        check: Check::Step(fget_linearizable),
    },
    Invariant {
        name: "no_lost_install",
        about: "F6: at the end every installed file is in its slot of the current table",
        check: Check::End(no_lost_install),
    },
    Invariant {
        name: "refs_balanced",
        about: "F10: at the end each live file's refcount equals the slots holding it",
        check: Check::End(refs_balanced),
    },
];

/// The fd table model.
pub struct Fdtable;

impl Spec for Fdtable {
    type Code = Flavor;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "fdtable";
    const ABOUT: &'static str =
        "fs/file.c fd allocation (bitmap fast path), RCU table resize, lockless fget";

    fn variants() -> &'static [Variant<Flavor>] {
        VARIANTS
    }
    fn scenarios() -> &'static [Row] {
        SCENARIOS
    }
    fn invariants() -> &'static [Inv] {
        INVARIANTS
    }

    fn execute(flavor: Flavor, plan: &Plan, watch: &Watch<Self>) {
        let world = Arc::new(World {
            fs: Fs::new(flavor, &plan.init),
            seen: Mutex::new(Vec::with_capacity(plan.threads.len())),
        });
        watch.start(&world);
        let handles: Vec<_> = plan
            .threads
            .iter()
            .enumerate()
            .map(|(i, ops)| {
                let (w, ops) = (world.clone(), ops.clone());
                let name = format!("T{i}");
                exec::spawn(&name.clone(), move || {
                    let t = Task::new(&name, Context::Task);
                    run_program(&w.fs, &t, &ops);
                })
            })
            .collect();
        let gp = plan.gp_kthread.then(|| {
            let w = world.clone();
            exec::spawn("rcu_gp", move || {
                let t = Task::new("rcu_gp", Context::Kthread);
                w.fs.rcu.gp_kthread(&t);
            })
        });
        for h in handles {
            h.join();
        }
        world.fs.rcu.stop_gp_kthread();
        if let Some(h) = gp {
            h.join();
        }
        let main = Task::new("main", Context::Task);
        world.fs.rcu.rcu_barrier(&main);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        render(&w.fs)
    }
}

/// Runs one thread program on a fresh process sequentially, on the calling
/// model thread (inside an engine): the system under the proptest.
pub fn run_single(variant: &str, init: &Init, ops: &[Op]) -> Vec<OpResult> {
    let flavor = VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let fs = Fs::new(flavor, init);
    let t = Task::new("T0", Context::Task);
    let results = run_program(&fs, &t, ops);
    let main = Task::new("main", Context::Task);
    fs.rcu.rcu_barrier(&main);
    results
}

fn unique_fd(w: &World) -> Result<(), String> {
    for (fd, claims) in &w.fs.ghost().claims {
        if claims.len() > 1 {
            let who: Vec<String> = claims
                .iter()
                .map(|c| match c {
                    Claim::Reserved { by } => format!("reserved by {by}"),
                    Claim::Installed { by, file } => format!("{file} installed by {by}"),
                })
                .collect();
            return Err(format!("fd {fd} handed out twice: {}", who.join(", ")));
        }
    }
    Ok(())
}

fn lowest_free(w: &World) -> Result<(), String> {
    for a in &w.fs.ghost().allocs {
        if let Ok(fd) = a.result {
            let want = a.lowest_free(a.start);
            if fd != want {
                return Err(format!(
                    "{}: alloc_fd(start {}) returned {fd}; the lowest free fd ≥ {} was {want}",
                    a.thread, a.start, a.start
                ));
            }
        }
    }
    Ok(())
}

fn emfile(w: &World) -> Result<(), String> {
    for a in &w.fs.ghost().allocs {
        match a.result {
            Ok(fd) if fd >= a.end => {
                return Err(format!(
                    "{}: alloc_fd returned {fd} although RLIMIT_NOFILE was {}",
                    a.thread, a.end
                ))
            }
            Err(Errno::Emfile) => {
                let free = a.lowest_free(a.start);
                if free < a.end.min(SYSCTL_NR_OPEN) {
                    return Err(format!(
                        "{}: -EMFILE although fd {free} < RLIMIT_NOFILE {} was free",
                        a.thread, a.end
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn full_fds_bits(w: &World) -> Result<(), String> {
    w.fs.current_table().bits.peek(|b| {
        for word in 0..b.full_fds_bits.nbits() {
            let full = b.open_fds.word_is_full(word);
            if b.full_fds_bits.bit(word) != full {
                return Err(format!(
                    "full_fds_bits[{word}] = {} but open_fds word {word} is {}full",
                    u8::from(b.full_fds_bits.bit(word)),
                    if full { "" } else { "not " }
                ));
            }
        }
        Ok(())
    })
}

fn next_fd(w: &World) -> Result<(), String> {
    let table = w.fs.current_table();
    let free = table
        .bits
        .peek(|b| (0..).find(|&fd| !b.open_fds.bit(fd)).unwrap_or(0));
    let next_fd = w.fs.next_fd();
    if next_fd > free {
        return Err(format!("next_fd is {next_fd} but fd {free} is free"));
    }
    Ok(())
}

fn fork_no_reserved(w: &World) -> Result<(), String> {
    for (i, c) in w.fs.ghost().children.iter().enumerate() {
        for (fd, (&open, &slot)) in c.open.iter().zip(&c.slots).enumerate() {
            if open && slot == 0 {
                return Err(format!(
                    "fork child {i}: fd {fd} is open with a NULL slot (reserved forever)"
                ));
            }
        }
    }
    Ok(())
}

fn fget_linearizable(w: &World) -> Result<(), String> {
    let ghost = w.fs.ghost();
    let mut seen = w.seen.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|(t, _)| ghost.fgets.contains_key(t));
    for (&thread, st) in &ghost.fgets {
        let (fd, file, returned) = match *st {
            FgetState::Holding { fd, file } => (fd, file, false),
            FgetState::Returned { fd, file } => (fd, file, true),
        };
        let i = match seen.iter().position(|(t, _)| *t == thread) {
            Some(i) => i,
            None => {
                seen.push((thread, ((fd, file), false)));
                seen.len() - 1
            }
        };
        let entry = &mut seen[i].1;
        if entry.0 != (fd, file) {
            *entry = ((fd, file), false);
        }
        if ghost
            .occupants
            .get(&fd)
            .is_some_and(|occ| occ.contains(&file))
        {
            entry.1 = true;
        }
        if returned && !entry.1 {
            return Err(format!(
                "{thread}: fget({fd}) returned {file}, which was not installed at fd {fd} at any \
                 instant after the reference was taken"
            ));
        }
    }
    Ok(())
}

fn no_lost_install(w: &World) -> Result<(), String> {
    let table = w.fs.current_table();
    for (fd, claims) in &w.fs.ghost().claims {
        for c in claims {
            if let Claim::Installed { file, by } = c {
                let slot = table.fd.get(*fd as usize).map_or(0, |a| a.peek());
                if slot != file.obj {
                    return Err(format!(
                        "{file} installed at fd {fd} by {by} is lost: the current table's slot holds {}",
                        if slot == 0 { "NULL".to_string() } else { format!("file#{slot}") }
                    ));
                }
            }
        }
    }
    Ok(())
}

fn refs_balanced(w: &World) -> Result<(), String> {
    let table = w.fs.current_table();
    let ghost = w.fs.ghost();
    let mut broken = None;
    w.fs.live_files(|file, refs| {
        let in_table = table.fd.iter().filter(|s| s.peek() == file.obj).count();
        let in_children: usize = ghost
            .children
            .iter()
            .map(|c| c.slots.iter().filter(|&&s| s == file.obj).count())
            .sum();
        let owners = (in_table + in_children) as u64;
        if refs != owners && broken.is_none() {
            broken = Some(format!(
                "{file} has refcount {refs} but {owners} slot(s) hold it"
            ));
        }
    });
    broken.map_or(Ok(()), Err)
}

fn render(fs: &Fs) -> String {
    let table = fs.current_table();
    let slots: Vec<String> = table
        .fd
        .iter()
        .map(|s| match s.peek() {
            0 => "-".to_string(),
            s => format!("#{s}"),
        })
        .collect();
    let claims: Vec<String> = fs
        .ghost()
        .claims
        .iter()
        .map(|(fd, c)| {
            let who: Vec<String> = c
                .iter()
                .map(|c| match c {
                    Claim::Reserved { by } => format!("R:{by}"),
                    Claim::Installed { by, file } => format!("{file}:{by}"),
                })
                .collect();
            format!("{fd}={}", who.join("+"))
        })
        .collect();
    let (open_fds, full) = table
        .bits
        .peek(|b| (b.open_fds.to_string(), b.full_fds_bits.to_string()));
    format!(
        "fdtable#{} max_fds {} next_fd {} RLIMIT_NOFILE {}\nopen_fds {open_fds} full_fds_bits {full}\nslots [{}]\nclaims {}",
        fs.files.fdt.peek(),
        table.max_fds,
        fs.next_fd(),
        fs.rlimit(),
        slots.join(" "),
        claims.join(" ")
    )
}

/// Decodes thread programs from scenario bytes: 2-3 threads of 1-3 calls,
/// one byte per choice (exhausted input reads as zeros).
pub fn decode(input: &[u8]) -> Vec<Vec<Op>> {
    let mut u = Unstructured::new(input);
    let mut byte = || u.arbitrary::<u8>().unwrap_or(0);
    let nthreads = 2 + byte() % 2;
    (0..nthreads)
        .map(|_| {
            let nops = 1 + byte() % 3;
            (0..nops).map(|_| decode_op(&mut byte)).collect()
        })
        .collect()
}

fn decode_op(byte: &mut impl FnMut() -> u8) -> Op {
    let fd = |b: u8| u32::from(b % 6);
    match byte() % 8 {
        0 => Op::Open,
        1 => Op::OpenFails,
        2 => match byte() % 2 {
            0 => Op::Close(Fd::Last),
            _ => Op::Close(Fd::N(fd(byte()))),
        },
        3 => Op::Dup2(fd(byte()), fd(byte())),
        4 => Op::DupFd {
            fd: fd(byte()),
            min: fd(byte()),
        },
        5 => Op::Fget(fd(byte())),
        6 => Op::Fork,
        _ => Op::SetRlimit(2 + u32::from(byte() % 15)),
    }
}

/// Encodes 2-3 thread programs as scenario bytes for [`decode`] (programs
/// longer than 3 calls are cut; fds and mins must be below 6, limits 2-16).
pub fn encode(threads: &[Vec<Op>]) -> Vec<u8> {
    let mut out = vec![(threads.len() as u8).saturating_sub(2)];
    for ops in threads {
        let ops = &ops[..ops.len().min(3)];
        out.push(ops.len() as u8 - 1);
        for op in ops {
            match *op {
                Op::Open => out.push(0),
                Op::OpenFails => out.push(1),
                Op::Close(Fd::Last) => out.extend([2, 0]),
                Op::Close(Fd::N(n)) => out.extend([2, 1, n as u8]),
                Op::Dup2(a, b) => out.extend([3, a as u8, b as u8]),
                Op::DupFd { fd, min } => out.extend([4, fd as u8, min as u8]),
                Op::Fget(n) => out.extend([5, n as u8]),
                Op::Fork => out.push(6),
                Op::SetRlimit(n) => out.extend([7, (n - 2) as u8]),
            }
        }
    }
    out
}
