//! The `fdtable` model's registry, scenarios, invariants and sequential
//! reference (fs/file.c; bases v6.10 and v6.13+; brief §4).
//!
//! Invariants read the process by reference ([`World`]): the current table's
//! bitmaps and slots, next_fd, RLIMIT_NOFILE, live files with their
//! refcounts, and the ghost log (allocation decisions with the bitmap they
//! were taken on, who holds which fd, what is installed where, fget
//! progress, fork children). State guarded by file_lock is judged when the
//! lock is free (at its release), never in the middle of a critical section.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arbitrary::Unstructured;
use vfsmc_model::exec;
use vfsmc_model::fdtable::{
    __fget_light, alloc_empty_file, close_fd, close_range, close_range_unshare, do_close_on_exec,
    do_prlimit, dup2, dup_fd, fcntl_dupfd, fd_install, fget, fget_done, fget_task, fput,
    get_unused_fd_flags, ksys_dup3, put_files_struct, put_unused_fd, sysctl_nr_open_write, Base,
    Bug, Claim, Errno, Fd as FdRef, FgetState, FileId, Flavor, Fs, Init, FMODE_PATH,
    NR_OPEN_DEFAULT, SYSCTL_NR_OPEN,
};
use vfsmc_model::kernel::task::Task;
use vfsmc_model::trace::{Context, Name};

use crate::{
    Broken, Check, Expected, Invariant, Judge, Need, Scenario, ScenarioRow, Spec, Tier, Variant,
    Watch,
};

/// An fd argument: a number, or the last fd this thread obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fd {
    N(u32),
    Last,
}

/// One system call of a thread program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// open(2): get_unused_fd_flags, alloc_empty_file, fd_install.
    Open,
    /// open(2) with O_PATH: the file's f_mode has FMODE_PATH.
    OpenPath,
    /// open(2) with O_CLOEXEC: the fd's close_on_exec bit is set.
    OpenCloexec,
    /// An open that fails after reserving its fd: alloc_fd, put_unused_fd.
    OpenFails,
    /// An open an LSM refuses in init_file (security_file_alloc: -ENOMEM):
    /// alloc_fd, alloc_empty_file recycling a file's memory and handing it
    /// back with kmem_cache_free, put_unused_fd.
    OpenDenied,
    Close(Fd),
    /// close_range(first, last, 0).
    CloseRange(u32, u32),
    /// close_range(first, last, CLOSE_RANGE_UNSHARE): the thread then has a
    /// table of its own and runs nothing after.
    CloseRangeUnshare(u32, u32),
    /// dup2(old, new).
    Dup2(u32, u32),
    /// dup3(old, new, 0).
    Dup3(u32, u32),
    /// fcntl(fd, F_DUPFD, min).
    DupFd {
        fd: u32,
        min: u32,
    },
    /// fget(fd) then fput.
    Fget(u32),
    /// Another process's fget_task(fd) on this table (pidfd_getfd(2)), then
    /// fput.
    FgetTask(u32),
    /// execve(2) by a thread whose table nobody shares (exec unshares
    /// first): do_close_on_exec.
    Exec,
    /// Another process opens a file and closes it again: its struct file
    /// comes from the same filp cache, and is installed in no table here.
    OpenElsewhere,
    /// fdget(fd) then fdput (__fget_light).
    Fdget(u32),
    /// fork(): dup_fd.
    Fork,
    /// The thread exits: put_files_struct (it runs nothing after).
    Exit,
    /// setrlimit(RLIMIT_NOFILE, n).
    SetRlimit(u32),
    /// A write of fs.nr_open.
    SetNrOpen(u32),
}

/// What an operation returned: an fd (or 0), or an errno.
pub type OpResult = Result<u32, Errno>;

fn open(fs: &Fs, t: &Task, mode: u64, cloexec: bool, refusal: Option<Errno>) -> OpResult {
    let fd = get_unused_fd_flags(fs, t, cloexec)?;
    match alloc_empty_file(fs, t, mode, refusal) {
        Ok(file) => {
            fd_install(fs, t, fd, file);
            Ok(fd)
        }
        Err(e) => {
            put_unused_fd(fs, t, fd);
            Err(e)
        }
    }
}

/// The rest of an fget-style call whose lookup returned `file`: fput it.
fn fget_then_fput(fs: &Fs, t: &Task, fd: u32, file: Option<FileId>) -> OpResult {
    let r = match file {
        Some(file) => {
            fput(fs, t, file.obj);
            Ok(fd)
        }
        None => Err(Errno::Ebadf),
    };
    fget_done(fs, t);
    r
}

/// Runs one thread program against `fs`, returning each call's result.
pub fn run_program(fs: &Fs, t: &Task, ops: &[Op]) -> Vec<OpResult> {
    let mut last: Option<u32> = None;
    let mut results = Vec::new();
    for op in ops {
        let r = match *op {
            Op::Open | Op::OpenPath | Op::OpenCloexec => {
                let mode = if *op == Op::OpenPath { FMODE_PATH } else { 0 };
                let r = open(fs, t, mode, *op == Op::OpenCloexec, None);
                last = r.ok().or(last);
                r
            }
            Op::OpenDenied => open(fs, t, 0, false, Some(Errno::Enomem)),
            Op::OpenElsewhere => alloc_empty_file(fs, t, 0, None).map(|file| {
                fput(fs, t, file);
                0
            }),
            Op::OpenFails => {
                let r = get_unused_fd_flags(fs, t, false);
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
            Op::CloseRange(a, b) => close_range(fs, t, a, b),
            Op::CloseRangeUnshare(a, b) => close_range_unshare(fs, t, a, b),
            Op::Dup2(old, new) => dup2(fs, t, old, new),
            Op::Dup3(old, new) => ksys_dup3(fs, t, old, new),
            Op::DupFd { fd, min } => {
                let r = fcntl_dupfd(fs, t, fd, min);
                last = r.ok().or(last);
                r
            }
            Op::Fget(fd) => fget_then_fput(fs, t, fd, fget(fs, t, fd)),
            Op::FgetTask(fd) => fget_then_fput(fs, t, fd, fget_task(fs, t, fd)),
            Op::Exec => {
                do_close_on_exec(fs, t);
                Ok(0)
            }
            Op::Fdget(fd) => {
                let r = match __fget_light(fs, t, fd) {
                    Some(FdRef::Cloned(file)) => {
                        fput(fs, t, file.obj);
                        Ok(fd)
                    }
                    Some(FdRef::Borrowed(_)) => Ok(fd),
                    None => Err(Errno::Ebadf),
                };
                fget_done(fs, t);
                r
            }
            Op::Fork => dup_fd(fs, t, None).map(|child| {
                fs.ghost().children.push(child);
                0
            }),
            Op::Exit => {
                put_files_struct(fs, t);
                Ok(0)
            }
            Op::SetRlimit(n) => {
                do_prlimit(fs, t, n);
                Ok(0)
            }
            Op::SetNrOpen(n) => {
                sysctl_nr_open_write(fs, t, n);
                Ok(0)
            }
        };
        results.push(r);
    }
    results
}

/// The sequential reference, written from the documented behaviour (man
/// pages open(2), close(2), close_range(2), dup(2), fcntl(2), getrlimit(2)),
/// not from the model: POSIX's lowest-free-fd set, with each call's errors
/// as the pages state them. Programs for it hold no `Exit` and no
/// `SetNrOpen` (their effect on one thread is not documented), and a
/// `SetRlimit` never goes above the default `fs.nr_open`.
#[derive(Clone, Debug)]
pub struct Reference {
    /// Open fds and what each refers to.
    pub open: BTreeMap<u32, OpenFd>,
    pub rlimit: u32,
    next_file: u32,
}

/// An open fd as the man pages describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFd {
    /// The open file description (an opaque number).
    pub file: u32,
    /// Opened with O_PATH.
    pub path: bool,
    /// FD_CLOEXEC (open(2) O_CLOEXEC; dup2, dup3 without O_CLOEXEC and
    /// F_DUPFD leave it off on the new fd).
    pub cloexec: bool,
}

impl OpenFd {
    fn new(file: u32, path: bool, cloexec: bool) -> OpenFd {
        OpenFd {
            file,
            path,
            cloexec,
        }
    }
}

impl Reference {
    pub fn new(init: &Init) -> Reference {
        Reference {
            open: init
                .fds
                .iter()
                .map(|&(fd, f)| (fd, OpenFd::new(f as u32, false, false)))
                .collect(),
            rlimit: init.rlimit,
            next_file: init.nfiles as u32,
        }
    }

    /// open(2): "the lowest-numbered file descriptor not currently open";
    /// EMFILE when that is not below RLIMIT_NOFILE (getrlimit(2): "a value
    /// one greater than the maximum file descriptor number that can be
    /// opened").
    fn lowest_from(&self, start: u32) -> OpResult {
        let fd = (start..)
            .find(|fd| !self.open.contains_key(fd))
            .unwrap_or(start);
        if fd >= self.rlimit {
            Err(Errno::Emfile)
        } else {
            Ok(fd)
        }
    }

    fn file_at(&self, fd: u32) -> Result<OpenFd, Errno> {
        self.open.get(&fd).copied().ok_or(Errno::Ebadf)
    }

    /// A new fd for the same open file description, without FD_CLOEXEC.
    fn duplicate(&mut self, fd: u32, of: OpenFd) {
        self.open.insert(
            fd,
            OpenFd {
                cloexec: false,
                ..of
            },
        );
    }

    /// dup2(2)/dup3(2): EBADF when oldfd is not open or newfd is out of the
    /// allowed range (≥ RLIMIT_NOFILE); newfd == oldfd: dup2 "does nothing,
    /// and returns newfd" (oldfd valid), dup3 fails with EINVAL.
    fn dup(&mut self, old: u32, new: u32, dup3: bool) -> OpResult {
        if old == new {
            return if dup3 {
                Err(Errno::Einval)
            } else {
                self.file_at(old).map(|_| new)
            };
        }
        if new >= self.rlimit {
            return Err(Errno::Ebadf);
        }
        let f = self.file_at(old)?;
        self.duplicate(new, f);
        Ok(new)
    }

    /// Applies a thread program; results as [`run_program`] returns them.
    pub fn run(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let mut last: Option<u32> = None;
        ops.iter().map(|op| self.step(*op, &mut last)).collect()
    }

    fn step(&mut self, op: Op, last: &mut Option<u32>) -> OpResult {
        match op {
            Op::Open | Op::OpenPath | Op::OpenCloexec => {
                let r = self.lowest_from(0);
                if let Ok(fd) = r {
                    let file =
                        OpenFd::new(self.next_file, op == Op::OpenPath, op == Op::OpenCloexec);
                    self.open.insert(fd, file);
                    self.next_file += 1;
                    *last = Some(fd);
                }
                r
            }
            Op::OpenFails => self.lowest_from(0),
            // open(2): ENOMEM, "insufficient kernel memory was available";
            // no fd is left open.
            Op::OpenDenied => self.lowest_from(0).and(Err(Errno::Enomem)),
            Op::Close(a) => {
                let fd = match a {
                    Fd::N(n) => n,
                    Fd::Last => last.unwrap_or(u32::MAX),
                };
                self.open.remove(&fd).map(|_| fd).ok_or(Errno::Ebadf)
            }
            // close_range(2): EINVAL when first > last; otherwise every open
            // fd in [first, last] is closed.
            Op::CloseRange(a, b) if a > b => Err(Errno::Einval),
            Op::CloseRange(a, b) => {
                self.open.retain(|&fd, _| fd < a || fd > b);
                Ok(0)
            }
            Op::Dup2(old, new) => self.dup(old, new, false),
            Op::Dup3(old, new) => self.dup(old, new, true),
            // fcntl(2) F_DUPFD: EBADF when fd is not open; EINVAL when arg
            // is beyond the maximum allowable value (RLIMIT_NOFILE); EMFILE
            // when no fd ≥ arg is free below the limit. O_PATH fds may be
            // duplicated (open(2)).
            Op::DupFd { fd, min } => {
                let f = self.file_at(fd)?;
                if min >= self.rlimit {
                    return Err(Errno::Einval);
                }
                let r = self.lowest_from(min);
                if let Ok(n) = r {
                    self.duplicate(n, f);
                    *last = Some(n);
                }
                r
            }
            // An O_PATH fd is refused by operations other than the few
            // open(2) lists, with EBADF.
            Op::Fget(fd) | Op::Fdget(fd) => match self.file_at(fd)? {
                OpenFd { path: true, .. } => Err(Errno::Ebadf),
                _ => Ok(fd),
            },
            // pidfd_getfd(2): EBADF when fd is not open in the target.
            Op::FgetTask(fd) => self.file_at(fd).map(|_| fd),
            // execve(2): "file descriptors marked close-on-exec are closed".
            Op::Exec => {
                self.open.retain(|_, f| !f.cloexec);
                Ok(0)
            }
            // Another process's open touches no fd here.
            Op::OpenElsewhere => Ok(0),
            Op::Fork => Ok(0),
            Op::Exit | Op::SetNrOpen(_) | Op::CloseRangeUnshare(..) => {
                unreachable!("the reference runs no Exit, SetNrOpen or CloseRangeUnshare")
            }
            Op::SetRlimit(n) => {
                self.rlimit = n;
                Ok(0)
            }
        }
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

/// An allocated table of two words with fds 0-2 and 4 open (fd 3 free).
fn hole_at_three() -> Init {
    Init {
        max_fds: 2 * NR_OPEN_DEFAULT,
        fds: vec![(0, 0), (1, 1), (2, 2), (4, 3)],
        nfiles: 4,
        rlimit: SYSCTL_NR_OPEN,
        embedded: false,
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
/// runs, how many of the threads (the last ones) are other processes that
/// reach the table only through the task (fget_task) or use the filp cache
/// (the rest share the table: `files->count` starts at their number), and
/// whether the RCU grace-period kthread runs beside the threads (else
/// pending callbacks run at the end, after every thread joined).
#[derive(Clone, Debug)]
pub struct Plan {
    pub init: Init,
    pub threads: Vec<Vec<Op>>,
    pub others: usize,
}

fn plan(init: Init, threads: &[&[Op]]) -> Plan {
    Plan {
        init,
        threads: threads.iter().map(|p| p.to_vec()).collect(),
        others: 0,
    }
}

fn churn(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[
            &[Op::Open, Op::Close(Fd::Last)],
            &[Op::Close(Fd::N(0)), Op::Open, Op::Open],
        ],
    )
}

fn rlimit_lowered(_: &[u8]) -> Plan {
    plan(two_open(), &[&[Op::Open], &[Op::SetRlimit(2)]])
}

fn dupfd_above_hole(_: &[u8]) -> Plan {
    plan(
        hole_at_three(),
        &[&[Op::DupFd { fd: 0, min: 4 }], &[Op::Open]],
    )
}

fn expand_vs_fget(_: &[u8]) -> Plan {
    plan(
        full_allocated_table(),
        &[&[Op::Open], &[Op::Close(Fd::N(1))], &[Op::Fget(1)]],
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
    )
}

fn expand_vs_fget_open(_: &[u8]) -> Plan {
    plan(full_allocated_table(), &[&[Op::Open], &[Op::Fget(1)]])
}

fn dup2_vs_open(_: &[u8]) -> Plan {
    plan(three_open(), &[&[Op::Open], &[Op::Dup2(0, 3)]])
}

fn fork_vs_open(_: &[u8]) -> Plan {
    plan(three_open(), &[&[Op::Open], &[Op::Fork]])
}

fn fork_vs_expand(_: &[u8]) -> Plan {
    plan(hole_at_three(), &[&[Op::Fork], &[Op::Dup2(0, 9)]])
}

fn close_vs_fget(_: &[u8]) -> Plan {
    plan(one_file_twice(), &[&[Op::Fget(0)], &[Op::Close(Fd::N(0))]])
}

fn close_vs_fget_last(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[&[Op::Fget(1)], &[Op::Fget(1)], &[Op::Close(Fd::N(1))]],
    )
}

fn fget_vs_recycle(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[&[Op::Fget(1)], &[Op::Dup2(0, 1), Op::OpenPath]],
    )
}

fn fget_vs_denied_open(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[
            &[Op::Fget(1)],
            &[Op::Close(Fd::N(1)), Op::OpenDenied, Op::Open],
        ],
    )
}

/// fds 0-2 open; T0 opens fd 3 with O_CLOEXEC and execs; T1 (another
/// process) takes fd 3 with pidfd_getfd; T2 (a third process) opens and
/// closes a file, recycling file memory.
fn exec_vs_fget_task(_: &[u8]) -> Plan {
    Plan {
        others: 2,
        ..plan(
            three_open(),
            &[
                &[Op::OpenCloexec, Op::Exec],
                &[Op::FgetTask(3)],
                &[Op::OpenElsewhere],
            ],
        )
    }
}

fn dupfd_vs_close(_: &[u8]) -> Plan {
    plan(
        three_open(),
        &[&[Op::DupFd { fd: 2, min: 2 }], &[Op::Close(Fd::N(0))]],
    )
}

fn fdget_vs_exit(_: &[u8]) -> Plan {
    plan(
        two_open(),
        &[&[Op::Fdget(1)], &[Op::Close(Fd::N(1)), Op::Exit]],
    )
}

fn nr_open_vs_dup2(_: &[u8]) -> Plan {
    plan(three_open(), &[&[Op::Dup2(0, 5)], &[Op::SetNrOpen(4)]])
}

fn close_range_vs_dup2(_: &[u8]) -> Plan {
    plan(
        full_allocated_table(),
        &[&[Op::Dup2(0, 5)], &[Op::CloseRange(1, 1)]],
    )
}

/// An allocated table of two words with fds 0-2, 4 and 6 open.
fn open_above_a_hole() -> Init {
    Init {
        fds: vec![(0, 0), (1, 1), (2, 2), (4, 3), (6, 4)],
        nfiles: 5,
        ..hole_at_three()
    }
}

fn unshare_vs_expand(_: &[u8]) -> Plan {
    plan(
        open_above_a_hole(),
        &[&[Op::CloseRangeUnshare(5, 7)], &[Op::Dup2(0, 9)]],
    )
}

fn close_range_vs_open(_: &[u8]) -> Plan {
    plan(
        full_allocated_table(),
        &[&[Op::Open], &[Op::CloseRange(2, 7)]],
    )
}

fn generated(input: &[u8]) -> Plan {
    Plan {
        init: generated_init(),
        threads: decode(input),
        others: 0,
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
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: churn,
    },
    Scenario {
        name: "rlimit-lowered",
        about: "fds 0-1 open; one thread opens while another lowers RLIMIT_NOFILE to 2",
        goals: &["emfile"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: rlimit_lowered,
    },
    Scenario {
        name: "dupfd-above-hole",
        about: "a two-word table with fds 0-2 and 4 open; T0 fcntl(0, F_DUPFD, 4) while \
                T1 opens (fd 3)",
        goals: &["start_above_next_fd"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: dupfd_above_hole,
    },
    Scenario {
        name: "expand-vs-fget",
        about: "a full allocated table: T0's open expands it, T1 closes fd 1, T2 fgets fd 1 \
                locklessly; the old table is freed by the RCU grace-period kthread",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: expand_vs_fget,
    },
    Scenario {
        name: "expand-vs-fget-recycled",
        about: "a full allocated table: T0's open expands it; T1 closes fd 1, dup2s fd 0 \
                onto it and opens (recycling the closed file's memory at another fd); \
                T2 fgets fd 1 locklessly; the grace-period kthread frees the old table",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: expand_vs_fget_recycled,
    },
    Scenario {
        name: "expand-vs-fget-open",
        about: "a full allocated table: T0's open expands it while T1 fgets fd 1, which \
                nobody closes (an EBADF would be wrong); the grace-period kthread frees \
                the old table",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: expand_vs_fget_open,
    },
    Scenario {
        name: "expand-vs-fget-open-deep",
        about: "expand-vs-fget-open at preemption bound 4 (deep tier)",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: expand_vs_fget_open,
    },
    Scenario {
        name: "expand-vs-fget-recycled-deep",
        about: "expand-vs-fget-recycled at preemption bound 3 (deep tier)",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: true,
        plan: expand_vs_fget_recycled,
    },
    Scenario {
        name: "expand-vs-fget-deep",
        about: "expand-vs-fget, the old table freed by the grace-period kthread during \
                the race, at preemption bound 3 (deep tier)",
        goals: &["expanded", "fget_saw_old_table"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: true,
        plan: expand_vs_fget,
    },
    Scenario {
        name: "dup2-vs-open",
        about: "fds 0-2 open; T0 opens (reserves fd 3), T1 dup2(0, 3)",
        goals: &["dup2_ebusy"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: dup2_vs_open,
    },
    Scenario {
        name: "fork-vs-open",
        about: "fds 0-2 open; T0 opens (reserves fd 3) while T1 forks (dup_fd)",
        goals: &["fork_cleared_reserved"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: fork_vs_open,
    },
    Scenario {
        name: "fork-vs-expand",
        about: "a two-word table with fd 4 open: T0 forks (dup_fd's child table must \
                grow, with file_lock dropped) while T1 dup2(0, 9) expands the parent's; \
                the RCU grace-period kthread frees the old table",
        goals: &["dup_fd_resize", "expanded"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: fork_vs_expand,
    },
    Scenario {
        name: "close-range-vs-open",
        about: "a full allocated table: T0 opens (expanding it and installing locklessly, or \
                taking an fd T1 freed) while T1 close_range(2, 7) drops file_lock around \
                each close; the grace-period kthread frees the old table",
        goals: &["expanded"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: close_range_vs_open,
    },
    Scenario {
        name: "close-range-vs-open-deep",
        about: "close-range-vs-open at preemption bound 4 (deep tier)",
        goals: &["expanded"],
        loom_bound: Some(4),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: close_range_vs_open,
    },
    Scenario {
        name: "unshare-vs-expand",
        about: "a two-word table with fds 0-2, 4 and 6 open: T0 close_range(5, 7, \
                CLOSE_RANGE_UNSHARE) copies it with that punch hole while T1 dup2(0, 9) \
                expands it; the grace-period kthread frees the old tables",
        goals: &["dup_fd_resize", "expanded"],
        loom_bound: Some(4),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: unshare_vs_expand,
    },
    Scenario {
        name: "unshare-vs-expand-deep",
        about: "unshare-vs-expand at preemption bound 5 (deep tier)",
        goals: &["dup_fd_resize", "expanded"],
        loom_bound: Some(5),
        judge: Judge::Loom,
        tier: Tier::Deep,
        generated: false,
        split: false,
        plan: unshare_vs_expand,
    },
    Scenario {
        name: "close-vs-fget",
        about: "fds 0 and 1 share one file; T0 fget(0) while T1 close(0)",
        goals: &["fget_retry"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: close_vs_fget,
    },
    Scenario {
        name: "close-vs-fget-last",
        about: "fds 0-2 open; T0 and T1 fget(1) while T2 closes fd 1: the close's put can \
                leave a reader the last reference, whose fput drops the count to NOREF \
                while the other reader's get revives it (file_ref only)",
        goals: &["file_ref_put_revived"],
        loom_bound: Some(3),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: close_vs_fget_last,
    },
    Scenario {
        name: "fget-vs-recycle",
        about: "fds 0-2 open; T0 fget(1) while T1 dup2(0, 1) (the last reference of fd 1's \
                file) and opens with O_PATH, recycling that file's memory",
        goals: &["fget_dead_file"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: fget_vs_recycle,
    },
    Scenario {
        name: "fget-vs-denied-open",
        about: "fds 0-2 open; T0 fget(1) while T1 closes fd 1, then opens twice, the first \
                open refused by an LSM in init_file: both opens recycle fd 1's file memory, \
                the refused one hands it back with kmem_cache_free",
        goals: &["fget_dead_file", "security_file_alloc_refused"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: fget_vs_denied_open,
    },
    Scenario {
        name: "exec-vs-fget-task",
        about: "fds 0-2 open; T0 opens fd 3 with O_CLOEXEC and execs (do_close_on_exec on its \
                unshared table) while another process takes fd 3 with pidfd_getfd \
                (fget_task) and a third opens and closes a file, recycling file memory",
        goals: &["fget_dead_file"],
        loom_bound: Some(2),
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: exec_vs_fget_task,
    },
    Scenario {
        name: "dupfd-vs-close",
        about: "fds 0-2 open; T0 fcntl(2, F_DUPFD, 2) while T1 close(0)",
        goals: &["start_above_next_fd"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: dupfd_vs_close,
    },
    Scenario {
        name: "fdget-vs-exit",
        about: "fds 0-1 open, two tasks share the table; T0 fdget(1) while T1 closes fd 1 \
                and exits (put_files_struct): a count of 1 lets fdget borrow",
        goals: &["fget_light_borrow"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: fdget_vs_exit,
    },
    Scenario {
        name: "nr-open-vs-dup2",
        about: "fds 0-2 open; T0 dup2(0, 5) must grow the table while T1 lowers \
                fs.nr_open to 4",
        goals: &["alloc_fdtable_emfile", "expanded"],
        loom_bound: None,
        judge: Judge::Optimal,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: nr_open_vs_dup2,
    },
    Scenario {
        name: "close-range-vs-dup2",
        about: "a full allocated table: T0 dup2(0, 5) expands it while T1 close_range(1, 1) \
                drops file_lock around its close; the RCU grace-period kthread frees \
                the old table",
        goals: &["expanded"],
        loom_bound: Some(3),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: false,
        split: false,
        plan: close_range_vs_dup2,
    },
    Scenario {
        name: "generated",
        about: "2-3 threads of 1-3 calls decoded from the input bytes, from fds 0-2 open \
                (0 and 1 share a file)",
        goals: &[],
        loom_bound: Some(2),
        judge: Judge::Loom,
        tier: Tier::Pr,
        generated: true,
        split: false,
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

const fn v6_10(bug: Bug) -> Flavor {
    Flavor {
        base: Base::V6_10,
        bug: Some(bug),
    }
}

const VARIANTS: &[Variant<Flavor>] = &[
    Variant {
        name: "v6.10",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file.c (v6.10: before Yu Ma's series; f_count by atomic_long_inc_not_zero, \
                 files SLAB_TYPESAFE_BY_RCU since v6.7; the series and file_ref replaced this \
                 in v6.13)",
        about: "two-level search, unconditional full_fds_bits clear, slot sanity check, f_count",
        code: Flavor {
            base: Base::V6_10,
            bug: None,
        },
    },
    Variant {
        name: "current",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file.c + include/linux/file_ref.h (v6.13+: Yu Ma's series via work.fdtable \
                 and file_ref; read at v7.1-rc1 ef3da345)",
        about: "fast path on the word containing the candidate, conditional clear, file_ref_t",
        code: Flavor {
            base: Base::Current,
            bug: None,
        },
    },
    Variant {
        name: "set-open-fd-marks-full-first",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file.c:__set_open_fd (v6.13+, two stores reordered inside file_lock)",
        about: "the full_fds_bits bit is set before the open bit: a state only the lock \
                holder sees, so it must hold on churn (file_lock state is judged at release)",
        code: cur(Bug::SetOpenFdMarksFullFirst),
    },
    Variant {
        name: "rlimit-skipped-by-fast-path",
        expected: Expected::Violates("emfile"),
        witness: "rlimit-lowered",
        kernel: "fs/file.c:alloc_fd (Yu Ma v1 patch 1/3, 14 Jun 2024, on v6.8-rc6; \
                 found by Mateusz Guzik)",
        about: "defect 1 of the unguarded v1 fast path: it jumps to success before the \
                fd >= RLIMIT_NOFILE check",
        code: v6_10(Bug::RlimitSkippedByFastPath),
    },
    Variant {
        name: "v1-fast-path-returns-bits-per-long",
        expected: Expected::Violates("unique_fd"),
        witness: "dupfd-above-hole",
        kernel: "fs/file.c:alloc_fd (Yu Ma v1 patch 1/3, 14 Jun 2024, on v6.8-rc6)",
        about: "defect 2 of the same code: with no zero bit at or after an F_DUPFD start in \
                word 0, find_next_zero_bit's BITS_PER_LONG is returned unchecked (an open fd)",
        code: v6_10(Bug::RlimitSkippedByFastPath),
    },
    Variant {
        name: "fast-path-ignores-start-bit",
        expected: Expected::Violates("lowest_free"),
        witness: "dupfd-vs-close",
        kernel: "fs/file.c:find_next_fd (review of v2/v3, Jan Kara, July 2024)",
        about:
            "the fast path searches the candidate's word from bit 0: F_DUPFD gets an fd below min",
        code: cur(Bug::FastPathIgnoresStartBit),
    },
    Variant {
        name: "fast-path-drops-word-base",
        expected: Expected::Violates("unique_fd"),
        witness: "churn",
        kernel: "fs/file.c:find_next_fd (review of v2/v3, Jan Kara, July 2024)",
        about: "the fast path returns the bit index within the word: an fd already in use",
        code: cur(Bug::FastPathDropsWordBase),
    },
    Variant {
        name: "conditional-clear-tests-wrong-bit",
        expected: Expected::Violates("full_fds_bits"),
        witness: "churn",
        kernel: "fs/file.c:__clear_open_fd (mutant of patch 2/3, v6.13)",
        about: "the conditional clear tests full_fds_bits bit fd, not fd / BITS_PER_LONG",
        code: cur(Bug::ConditionalClearTestsWrongBit),
    },
    Variant {
        name: "put-unused-fd-keeps-next-fd",
        expected: Expected::Violates("next_fd"),
        witness: "churn",
        kernel: "fs/file.c:__put_unused_fd (mutant, v6.13+)",
        about: "closing an fd below next_fd does not lower next_fd",
        code: cur(Bug::PutUnusedFdKeepsNextFd),
    },
    Variant {
        name: "fget-skips-slot-recheck",
        expected: Expected::Violates("fget_linearizable"),
        witness: "close-vs-fget",
        kernel: "fs/file.c:__fget_files (before 054aa8d439b9, Dec 2021, CVE-2021-4083), \
                 on the v6.13+ base",
        about: "fget keeps a reference taken after the fd was closed",
        code: cur(Bug::FgetSkipsSlotRecheck),
    },
    Variant {
        name: "fget-skips-fdt-recheck",
        expected: Expected::Violates("fget_linearizable"),
        witness: "expand-vs-fget-recycled",
        kernel: "fs/file.c:__fget_files_rcu (mutant of 0ede61d8589c, v6.7), on the v6.13+ base",
        about: "with typesafe files, the old table's stale slot matches a recycled file",
        code: cur(Bug::FgetSkipsFdtRecheck),
    },
    Variant {
        name: "fget-retry-leaks-ref",
        expected: Expected::Violates("refs_balanced"),
        witness: "close-vs-fget",
        kernel: "fs/file.c:__fget_files_rcu (mutant of e386dfc56f83, Dec 2021), on the v6.13+ base",
        about: "a failed re-check retries without fput",
        code: cur(Bug::FgetRetryLeaksRef),
    },
    Variant {
        name: "fget-unlocks-before-recheck",
        expected: Expected::Violates("use_after_free"),
        witness: "expand-vs-fget-open",
        kernel: "fs/file.c:__fget_files_rcu (mutant), on the v6.13+ base",
        about: "with the file pinned, fget re-checks the slot outside its RCU section: the \
                old table can be freed by the grace-period kthread during the race",
        code: cur(Bug::FgetUnlocksBeforeRecheck),
    },
    Variant {
        name: "file-ref-get-rewrites-dead",
        expected: Expected::Violates("refs_balanced"),
        witness: "fget-vs-recycle",
        kernel: "include/linux/file_ref.h:file_ref_get (brief §4.5.11: review of the early \
                 file_ref, Oct 2024; the v6.13 comment says why it never rewrites)",
        about: "a get that fails in the dead zone stores DEAD back: on recycled memory it \
                kills the new file",
        code: cur(Bug::FileRefGetRewritesDead),
    },
    Variant {
        name: "file-ref-put-ignores-revival",
        expected: Expected::Violates("double_free"),
        witness: "close-vs-fget-last",
        kernel: "fs/file.c:__file_ref_put (mutant of 08ef26ea9ab3, v6.13)",
        about: "the put that reaches NOREF frees without the cmpxchg, under a get that revived \
                the count: the reviver's own final put frees the file again",
        code: cur(Bug::FileRefPutIgnoresRevival),
    },
    Variant {
        name: "file-ref-put-close-without-cmpxchg",
        expected: Expected::Violates("file_ref_balanced"),
        witness: "close-vs-fget-last",
        kernel: "include/linux/file_ref.h:file_ref_put_close (mutant; the v7.0 close paths \
                 use it)",
        about: "the close's last put reads ONEREF and stores DEAD: a get in between is lost, \
                and that reader's fput finds the count dead",
        code: cur(Bug::FileRefPutCloseWithoutCmpxchg),
    },
    Variant {
        name: "fget-checks-mode-before-ref",
        expected: Expected::Violates("file_fields_after_ref"),
        witness: "fget-vs-recycle",
        kernel: "fs/file.c:__fget_files_rcu (mutant of the 0ede61d8589c rule, v6.13+)",
        about: "f_mode & mask is tested before the reference is taken",
        code: cur(Bug::FgetChecksModeBeforeRef),
    },
    Variant {
        name: "init-file-count-first",
        expected: Expected::Violates("file_ref_balanced"),
        witness: "fget-vs-denied-open",
        kernel: "fs/file_table.c:init_file (mutant of 0ede61d8589c's rule, v6.7: \
                 \"initialize f_ref last\"; read at v7.1-rc1 ef3da345)",
        about: "the count is set before security_file_alloc: a stale fget's get succeeds on \
                memory an LSM-refused open hands back with kmem_cache_free, and the next open's \
                init_file overwrites that reader's reference",
        code: cur(Bug::InitFileCountFirst),
    },
    Variant {
        name: "fsnotify-mode-after-ref-init",
        expected: Expected::Holds,
        witness: "",
        kernel: "fs/file_table.c:init_file (711f9b8fbe4f, v6.14-rc fixes, Feb 2025; moved \
                 back before file_ref_init by 1219e0feaefc, v7.0: Jan Kara, \"functionally it \
                 doesn't really matter\")",
        about: "file_set_fsnotify_mode writes f_mode after file_ref_init: a stale get can land \
                on the half-built file, but it fails fget's slot re-check and never reads \
                f_mode (a read of a half-built f_mode is judged by file_fields_after_ref)",
        code: cur(Bug::FsnotifyModeAfterRefInit),
    },
    Variant {
        name: "free-fdtable-without-grace-period",
        expected: Expected::Violates("use_after_free"),
        witness: "expand-vs-fget",
        kernel: "fs/file.c:expand_fdtable (mutant, v6.13+)",
        about: "the old table is freed at once, under a lockless reader",
        code: cur(Bug::FreeFdtableWithoutGracePeriod),
    },
    Variant {
        name: "expand-skips-synchronize-rcu",
        expected: Expected::Violates("no_lost_install"),
        witness: "churn",
        kernel: "fs/file.c:expand_fdtable (mutant of 8a81252b774b, 2015), on the v6.13+ base",
        about: "a lockless fd_install writes into a table that was already copied",
        code: cur(Bug::ExpandSkipsSynchronizeRcu),
    },
    Variant {
        name: "expand-publishes-before-copy",
        expected: Expected::Violates("fget_null_justified"),
        witness: "expand-vs-fget-open",
        kernel: "fs/file.c:expand_fdtable (mutant, v6.13+)",
        about: "rcu_assign_pointer before copy_fdtable: a lockless fget sees a NULL slot of \
                the half-built table and says EBADF for an open fd",
        code: cur(Bug::ExpandPublishesBeforeCopy),
    },
    Variant {
        name: "alloc-fdtable-trusts-size",
        expected: Expected::Violates("slot_in_bounds"),
        witness: "nr-open-vs-dup2",
        kernel: "fs/file.c:alloc_fdtable (brief §4.5.15, mutant of the sysctl_nr_open \
                 re-check, v6.13+)",
        about: "a table cut down to a lowered fs.nr_open is returned though smaller than \
                wanted: dup2 writes past its end",
        code: cur(Bug::AllocFdtableTrustsSize),
    },
    Variant {
        name: "range-close-keeps-stale-table",
        expected: Expected::Violates("use_after_free"),
        witness: "close-range-vs-dup2",
        kernel: "fs/file.c:__range_close (mutant, v6.13+)",
        about: "after filp_close with file_lock dropped, the bitmap of a table an expansion \
                has replaced and RCU freed is searched",
        code: cur(Bug::RangeCloseKeepsStaleTable),
    },
    Variant {
        name: "close-on-exec-puts-before-unpublish",
        expected: Expected::Violates("fget_linearizable"),
        witness: "exec-vs-fget-task",
        kernel: "fs/file.c:do_close_on_exec (mutant of its slot-then-close order, read at \
                 v7.1-rc1 ef3da345)",
        about: "filp_close runs before the slot is cleared: the closed file's memory is \
                recycled by another process while the slot still points at it, and \
                pidfd_getfd returns that process's file as fd 3",
        code: cur(Bug::CloseOnExecPutsBeforeUnpublish),
    },
    Variant {
        name: "dup-fd-keeps-stale-table",
        expected: Expected::Violates("use_after_free"),
        witness: "fork-vs-expand",
        kernel: "fs/file.c:dup_fd (mutant of its resize loop, v6.13+)",
        about: "after growing the child's table with file_lock dropped, fork copies from the \
                parent's old (freed) table",
        code: cur(Bug::DupFdKeepsStaleTable),
    },
    Variant {
        name: "sane-fdtable-size-trusts-hole",
        expected: Expected::Violates("fork_keeps_open_fds"),
        witness: "unshare-vs-expand",
        kernel: "fs/file.c:sane_fdtable_size (mutant of its punch-hole search, v6.13+)",
        about: "with the last open fd in the punch hole, the copy is sized for no fd: open fds \
                below the hole are lost in the unshared table",
        code: cur(Bug::SaneFdtableSizeTrustsHole),
    },
    Variant {
        name: "fget-light-relaxed-count",
        expected: Expected::Violates("fget_linearizable"),
        witness: "fdget-vs-exit",
        kernel: "fs/file.c:__fget_light (mutant of its atomic_read_acquire, v6.13+)",
        about: "a plain read of files->count == 1 does not order the slot load after a \
                sharer's close and exit: fdget borrows a closed file",
        code: cur(Bug::FgetLightRelaxedCount),
    },
    Variant {
        name: "dup2-ignores-reserved",
        expected: Expected::Violates("unique_fd"),
        witness: "dup2-vs-open",
        kernel: "fs/file.c:do_dup2 (the -EBUSY rule, v6.13+)",
        about: "dup2 installs over an fd an open has reserved",
        code: cur(Bug::Dup2IgnoresReserved),
    },
    Variant {
        name: "dup-fd-keeps-reserved",
        expected: Expected::Violates("fork_no_reserved"),
        witness: "fork-vs-open",
        kernel: "fs/file.c:dup_fd (the rule in its comment, v6.13+)",
        about: "the child inherits an open bit with a NULL slot: an fd reserved forever",
        code: cur(Bug::DupFdKeepsReserved),
    },
];

// --- invariants ------------------------------------------------------------

/// What the invariants read: the process, and what the fget invariants
/// remember from step to step.
pub struct World {
    pub fs: Fs,
    seen: Mutex<Vec<(Name, Seen)>>,
    nulls: Mutex<Vec<(Name, NullSeen)>>,
    /// Per fd table (by object): a bit per fd that was not installed at
    /// some instant while that table was current.
    uninstalled: Mutex<[u32; 16]>,
}

/// Per fget thread: the (fd, file) being held, and whether that file was
/// seen installed at fd since the reference was taken.
type Seen = ((u32, FileId), bool);

/// Per looking thread: the lookup's call number, and whether its fd was
/// seen uninstalled since the call began.
type NullSeen = (u32, bool);

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
        about:
            "F5: the fd returned is below RLIMIT_NOFILE; -EMFILE only when no fd below it is free",
        check: Check::Step(emfile),
    },
    Invariant {
        name: "full_fds_bits",
        about:
            "F4: with file_lock free, full_fds_bits bit i is set iff word i of open_fds is all ones",
        check: Check::Step(full_fds_bits),
    },
    Invariant {
        name: "next_fd",
        about: "F3: with file_lock free, every fd below next_fd is open",
        check: Check::Step(next_fd),
    },
    Invariant {
        name: "fork_no_reserved",
        about: "F8: a fork child's table has no open fd with a NULL slot",
        check: Check::Step(fork_no_reserved),
    },
    Invariant {
        name: "fork_keeps_open_fds",
        about: "F8: a table dup_fd copies (fork, close_range's unshare) holds every fd open in \
                the parent when copied, outside the punch hole",
        check: Check::Step(fork_keeps_open_fds),
    },
    Invariant {
        name: "fget_linearizable",
        about: "F9: fget returns a file installed at the fd at some instant after its reference \
                was taken; fdget's borrowed file stays installed while borrowed",
        check: Check::Step(fget_linearizable),
    },
    Invariant {
        name: "fget_null_justified",
        about:
            "F9: fget says EBADF only if the fd was not installed at some instant during the call",
        check: Check::Step(fget_null_justified),
    },
    Invariant {
        name: "file_fields_after_ref",
        about: "F9/F10 (raised by the model): no field of a file is read before the reader holds \
                a reference (or borrows it from an unshared table)",
        check: Check::Raised,
    },
    Invariant {
        name: "file_ref_balanced",
        about: "F10 (raised by the model): no put finds the count in the dead zone \
                (__file_ref_put_badval's WARN_ONCE), and init_file's file_ref_init never \
                overwrites a count a reader holds a reference in",
        check: Check::Raised,
    },
    Invariant {
        name: "slot_in_bounds",
        about: "raised by the model: no fd[] slot past max_fds is touched",
        check: Check::Raised,
    },
    Invariant {
        name: "no_lost_install",
        about: "F6: at the end every installed file is in its slot of the current table",
        check: Check::End(no_lost_install),
    },
    Invariant {
        name: "refs_balanced",
        about: "F10: at the end each live file's refcount equals the slots holding it, and no \
                slot holds a freed file",
        check: Check::EndAt(refs_balanced),
    },
];

/// The fd table model.
pub struct Fdtable;

impl Spec for Fdtable {
    type Code = Flavor;
    type Plan = Plan;
    type State = World;

    const NAME: &'static str = "fdtable";
    const CODE: &'static [&'static str] = &["model/src/fdtable/", "model/src/files.rs"];
    const ABOUT: &'static str =
        "fs/file.c fd allocation (bitmap fast path), RCU table resize, lockless fget";
    const LIMITS: &'static [&'static str] = &[
        "C11 atomics do not tear: the tearing plain loads of fd[] under file_lock that \
         f381640e1bd4 replaced cannot be produced",
        "sizes are shrunk: BITS_PER_LONG is 4, the embedded table 4 slots, the smallest \
         allocated table two words, fs.nr_open 16",
        "struct file is f_ref and f_mode: fput frees at once (no task_work or delayed_fput) \
         and __fput's work (f_op->release, dput, mntput) is not modelled",
        "no allocation fails except an LSM refusing a file in init_file and alloc_fdtable \
         against a lowered fs.nr_open: kmem_cache_alloc and kvmalloc always succeed",
        "exec's unshare_files is not modelled: do_close_on_exec runs on a table nobody \
         shares, raced only by other processes through fget_task and the filp cache",
        "close_range's CLOSE_RANGE_CLOEXEC is not modelled; a fork child's table is a \
         snapshot that nothing runs on",
        "the Spectre masking (array_index_nospec) and fd_install's VFS_BUG_ON/WARN_ON \
         slot checks are left out",
        "at most three threads plus the RCU grace-period kthread per scenario",
    ];

    fn variants() -> &'static [Variant<Flavor>] {
        VARIANTS
    }
    fn scenarios() -> &'static [Row] {
        SCENARIOS
    }
    fn invariants() -> &'static [Inv] {
        INVARIANTS
    }

    /// close-vs-fget-last races a get against the NOREF → DEAD step, which
    /// only file_ref has; the reordering inside __set_open_fd is checked
    /// where opens fill words and the table grows (churn).
    fn applies(code: Flavor, scenario: &'static str) -> bool {
        if code.has(Bug::SetOpenFdMarksFullFirst) {
            return scenario == "churn";
        }
        scenario != "close-vs-fget-last" || code.base == Base::Current
    }

    /// `file_ref_put_revived` is a step of file_ref's put, which v6.10's
    /// atomic_long_t count does not have: `check --variant v6.10` on
    /// close-vs-fget-last is not failed for missing it.
    fn goal_applies(code: Flavor, goal: &'static str) -> bool {
        goal != "file_ref_put_revived" || code.base == Base::Current
    }

    fn needs(v: &Variant<Flavor>) -> &'static [Need] {
        if v.code.has(Bug::FgetLightRelaxedCount) {
            &[Need::WeakMemory(
                "a plain read of files->count orders nothing: the stale slot is a weak-memory \
                 outcome",
            )]
        } else if v.code.has(Bug::FileRefPutCloseWithoutCmpxchg) {
            &[Need::DeepSchedule(
                "loom finds it at bound 1 through weak memory; sequentially consistent, it \
                 needs three preemptions in a 46-step execution (PCT's per-run guarantee at \
                 depth 4 is 1/(4*46^3) = 2.6e-6; seed 1 finds it after 12,023 runs)",
            )]
        } else {
            &[]
        }
    }

    fn execute(flavor: Flavor, plan: &Plan, watch: &Watch<Self>) {
        let sharers = (plan.threads.len() - plan.others) as u32;
        let world = Arc::new(World {
            fs: Fs::new(flavor, &plan.init, sharers),
            seen: Mutex::new(Vec::with_capacity(plan.threads.len())),
            nulls: Mutex::new(Vec::with_capacity(plan.threads.len())),
            uninstalled: Mutex::new([0; 16]),
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
        for h in handles {
            h.join();
        }
        let main = Task::new("main", Context::Task);
        world.fs.rcu.quiesce(&main);
        watch.finish("main", &world);
    }

    fn render(w: &World) -> String {
        render_table(&w.fs)
    }
}

/// Runs one thread program on a fresh process sequentially, on the calling
/// model thread (inside an engine): the system under the proptest. The
/// thread is the table's only user.
pub fn run_single(variant: &str, init: &Init, ops: &[Op]) -> Vec<OpResult> {
    let flavor = VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let fs = Fs::new(flavor, init, 1);
    let t = Task::new("T0", Context::Task);
    let results = run_program(&fs, &t, ops);
    let main = Task::new("main", Context::Task);
    fs.rcu.quiesce(&main);
    results
}

fn unique_fd(w: &World) -> Result<(), String> {
    unique_fd_of(&w.fs)
}

/// The `unique_fd` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn unique_fd_of(fs: &Fs) -> Result<(), String> {
    for (fd, claims) in &fs.ghost().claims {
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
    lowest_free_of(&w.fs)
}

/// The `lowest_free` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn lowest_free_of(fs: &Fs) -> Result<(), String> {
    for a in &fs.ghost().allocs {
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
    emfile_of(&w.fs)
}

/// The `emfile` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn emfile_of(fs: &Fs) -> Result<(), String> {
    for a in &fs.ghost().allocs {
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
    full_fds_bits_of(&w.fs)
}

/// The `full_fds_bits` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn full_fds_bits_of(fs: &Fs) -> Result<(), String> {
    if fs.files.file_lock.is_locked() {
        return Ok(());
    }
    fs.current_table().bits.peek(|b| {
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
    next_fd_of(&w.fs)
}

/// The `next_fd` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn next_fd_of(fs: &Fs) -> Result<(), String> {
    if fs.files.file_lock.is_locked() {
        return Ok(());
    }
    let table = fs.current_table();
    let free = table
        .bits
        .peek(|b| (0..).find(|&fd| !b.open_fds.bit(fd)).unwrap_or(0));
    let next_fd = fs.next_fd();
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

fn fork_keeps_open_fds(w: &World) -> Result<(), String> {
    for (i, c) in w.fs.ghost().children.iter().enumerate() {
        if let Some(fd) = c.lost.first() {
            return Err(format!(
                "child table {i} has {} slots: fd {fd}, open in the parent outside the punch \
                 hole, is lost",
                c.slots.len()
            ));
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
            FgetState::Borrowing { fd, file } => {
                if ghost.installed.get(&fd) != Some(&file) {
                    return Err(format!(
                        "{thread}: fdget({fd}) borrowed {file}, which is not installed at fd {fd}"
                    ));
                }
                continue;
            }
            FgetState::Looking { .. } | FgetState::Null { .. } | FgetState::Masked { .. } => {
                continue
            }
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

/// An fget that returns NULL (EBADF) must be explained by an instant at
/// which its fd was not installed: one during the call, or (a weak-memory
/// reader may see an older slot value) one at which the table it read was
/// the current table. A NULL read from a table that was current only while
/// the fd was installed (a half-built table) is not explained.
fn fget_null_justified(w: &World) -> Result<(), String> {
    let ghost = w.fs.ghost();
    let cur = w.fs.files.fdt.peek() as usize;
    let mut uninstalled = w.uninstalled.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        cur < uninstalled.len(),
        "more fd tables than the check tracks"
    );
    for fd in 0..SYSCTL_NR_OPEN {
        if !ghost.installed.contains_key(&fd) {
            uninstalled[cur] |= 1 << fd;
        }
    }
    let mut nulls = w.nulls.lock().unwrap_or_else(|p| p.into_inner());
    nulls.retain(|(t, _)| ghost.fgets.contains_key(t));
    for (&thread, st) in &ghost.fgets {
        let (fd, call, null) = match *st {
            FgetState::Looking { fd, call } => (fd, Some(call), None),
            FgetState::Null { fd, call, table } => (fd, Some(call), Some(table)),
            FgetState::Holding { fd, .. } => (fd, None, None),
            _ => continue,
        };
        let i = match nulls.iter().position(|(t, _)| *t == thread) {
            Some(i) => i,
            None => {
                nulls.push((thread, (call.unwrap_or(0), false)));
                nulls.len() - 1
            }
        };
        let entry = &mut nulls[i].1;
        if let Some(call) = call {
            if entry.0 != call {
                *entry = (call, false);
            }
        }
        if !ghost.installed.contains_key(&fd) {
            entry.1 = true;
        }
        let Some(table) = null else { continue };
        if !entry.1 && uninstalled[table as usize] & 1 << fd == 0 {
            return Err(format!(
                "{thread}: fget({fd}) returned NULL (EBADF) from fdtable#{table}, but fd {fd} was \
                 installed at every instant of the call and whenever that table was current"
            ));
        }
    }
    Ok(())
}

fn no_lost_install(w: &World) -> Result<(), String> {
    no_lost_install_of(&w.fs)
}

/// The `no_lost_install` invariant on any execution's fd table (a composed model
/// keeps it on).
pub fn no_lost_install_of(fs: &Fs) -> Result<(), String> {
    let table = fs.current_table();
    for (fd, claims) in &fs.ghost().claims {
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

fn refs_balanced(w: &World) -> Result<(), Broken> {
    let table = w.fs.current_table();
    let ghost = w.fs.ghost();
    for (fd, slot) in table.fd.iter().enumerate() {
        let obj = slot.peek();
        if obj != 0 && !w.fs.file_is_live(obj) {
            return Err(format!(
                "fd {fd} holds file#{obj}, which was freed (its slot's reference was dropped)"
            )
            .into());
        }
    }
    let mut broken = None;
    w.fs.live_files(|file, refs, counter| {
        let in_table = table.fd.iter().filter(|s| s.peek() == file.obj).count();
        let in_children: usize = ghost
            .children
            .iter()
            .map(|c| c.slots.iter().filter(|&&s| s == file.obj).count())
            .sum();
        let owners = (in_table + in_children) as u64;
        if refs != owners && broken.is_none() {
            let count = |raw| w.fs.file_refs_in(raw) as i64;
            broken = Some(Broken::at(
                format!("{file} has refcount {refs} but {owners} slot(s) hold it"),
                exec::unmatched_change(counter, None, refs > owners, count),
            ));
        }
    });
    broken.map_or(Ok(()), Err)
}

/// The fd table in a few lines (slots, open bits, next_fd), for a report.
pub fn render_table(fs: &Fs) -> String {
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
        "fdtable#{} max_fds {} next_fd {} RLIMIT_NOFILE {} files->count {}\nopen_fds {open_fds} full_fds_bits {full}\nslots [{}]\nclaims {}",
        fs.files.fdt.peek(),
        table.max_fds,
        fs.next_fd(),
        fs.rlimit(),
        fs.files.count.peek(),
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
    match byte() % 12 {
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
        7 => Op::SetRlimit(2 + u32::from(byte() % 15)),
        8 => Op::OpenPath,
        9 => Op::CloseRange(fd(byte()), fd(byte())),
        10 => Op::Dup3(fd(byte()), fd(byte())),
        _ => Op::Fdget(fd(byte())),
    }
}

/// The bytes [`decode`] reads as `op`, if it has any.
fn op_bytes(op: Op) -> Option<Vec<u8>> {
    Some(match op {
        Op::Open => vec![0],
        Op::OpenFails => vec![1],
        Op::Close(Fd::Last) => vec![2, 0],
        Op::Close(Fd::N(n)) => vec![2, 1, n as u8],
        Op::Dup2(a, b) => vec![3, a as u8, b as u8],
        Op::DupFd { fd, min } => vec![4, fd as u8, min as u8],
        Op::Fget(n) => vec![5, n as u8],
        Op::Fork => vec![6],
        Op::SetRlimit(n) => vec![7, (n - 2) as u8],
        Op::OpenPath => vec![8],
        Op::CloseRange(a, b) => vec![9, a as u8, b as u8],
        Op::Dup3(a, b) => vec![10, a as u8, b as u8],
        Op::Fdget(n) => vec![11, n as u8],
        Op::Exit
        | Op::SetNrOpen(_)
        | Op::CloseRangeUnshare(..)
        | Op::OpenDenied
        | Op::OpenCloexec
        | Op::FgetTask(_)
        | Op::Exec
        | Op::OpenElsewhere => return None,
    })
}

/// Encodes 2-3 thread programs as scenario bytes for [`decode`] (programs
/// longer than 3 calls are cut; fds and mins must be below 6, limits 2-16;
/// the calls [`op_bytes`] has no bytes for are left out).
pub fn encode(threads: &[Vec<Op>]) -> Vec<u8> {
    let mut out = vec![(threads.len() as u8).saturating_sub(2)];
    for ops in threads {
        let ops: Vec<Vec<u8>> = ops.iter().filter_map(|&op| op_bytes(op)).take(3).collect();
        out.push((ops.len() as u8).saturating_sub(1));
        out.extend(ops.concat());
    }
    out
}
