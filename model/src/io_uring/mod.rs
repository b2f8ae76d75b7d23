//! io_uring's request path for IORING_OP_OPENAT/OPENAT2 (io_uring/io_uring.c
//! io_queue_sqe, io_issue_sqe, io_queue_iowq, io_wq_submit_work,
//! io_req_complete_post, io_free_req; io_uring/io-wq.c io_wq_enqueue and
//! its worker; io_uring/openclose.c in [`openclose`]). Only openclose.c was
//! read (io_uring-bpf-restrictions.4-20260206, 591beb0e3a03); the core's
//! issue/punt/complete shape is taken from brief §3.2 and from what
//! `io_openat2` returns to it (IOU_COMPLETE, or -EAGAIN to be punted).
//!
//! One ring, one submitter task, and io-wq workers created on demand
//! (`create_io_thread`: a thread of the submitting process, sharing its
//! files, fs and identity). A request is prepared, issued inline with
//! IO_URING_F_NONBLOCK unless REQ_F_FORCE_ASYNC, and an inline -EAGAIN is
//! punted to a worker, which issues it again without the flag (it may
//! block). Every request posts one CQE and is then freed (`io_clean_op`
//! runs `io_open_cleanup` while REQ_F_NEED_CLEANUP is set).
//!
//! The fd table is reached only through [`FileTable`]; the path walk only
//! through `namei::open::do_file_open`.
//!
//! Abstracted away: the SQ/CQ rings' memory (a CQE is a ghost record),
//! fixed files (`file_slot`), linked requests, poll-armed retry (openat
//! has no poll), cancellation, `IOSQE_ASYNC`, task_work, credentials
//! (`REQ_F_CREDS`), io-wq's bounded/unbounded accounting and worker exit
//! timeouts (a worker exits when it finds the queue empty).

pub mod openclose;

use std::collections::VecDeque;
use std::sync::{Mutex as GhostMutex, MutexGuard};

use crate::files::FileTable;
use crate::kernel::errptr::Errno;
use crate::kernel::spinlock::SpinLock;
use crate::kernel::task::Task;
use crate::namei::open::{OpenFlavor, OpenHow, OpenLog};
use crate::namei::Filename;
use crate::sync::JoinHandle;
use crate::trace::{Context, Name, Val};
use crate::vfs::{Path, Vfs};

/// `issue_flags`: issued inline from the submitter, must not block.
pub const IO_URING_F_NONBLOCK: u32 = 1 << 31;
/// `req->flags` bits the open path uses.
pub const REQ_F_FORCE_ASYNC: u32 = 1 << 4;
pub const REQ_F_NEED_CLEANUP: u32 = 1 << 8;
pub const REQ_F_FAIL: u32 = 1 << 9;

/// Who holds an installed file's path references in the ledger: the task
/// that closes every fd at exit (`exit_files`), the scenario's `main`.
pub const FILES_HOLDER: Name = "main";

/// The identity an io-wq worker had while it was a kernel thread of its
/// own (before `create_io_thread`, v5.12).
pub const KTHREAD_WORKER_IDENT: u32 = 2;

/// A change on the current io_uring side: a real bug, a constructed mutant,
/// or a design alternative (the registry row says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Before create_io_thread (v5.12, and what 0d4370cfe36b papered over
    /// for /proc/thread-self): the io-wq worker is a kernel thread with an
    /// identity of its own, so a punted resolution of a `self` link names
    /// the worker, not the submitter.
    PuntResolvesThreadSelfAsWorker,
    /// Matthew Wilcox's question in the seed thread, as Jens Axboe measured
    /// it: the worker's re-issue skips the RCU attempt (LOOKUP_NO_RCU).
    RetryNoRcu,
    /// Constructed: an inline failure returns without `put_unused_fd`.
    ErrorKeepsReservedFd,
    /// Constructed: the punt path drops the filename (`putname`) and also
    /// hands it back to the delayed slot, so the worker uses and puts a
    /// freed name.
    PuntPutsFilename,
    /// Constructed: a punted request also posts the inline -EAGAIN as a
    /// completion (`io_req_set_res` before the -EAGAIN return).
    PuntAlsoCompletes,
}

/// A variant of the io_uring openat path: the open path's variant (its
/// walk and build_open_flags) and one io_uring change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavor {
    pub open: OpenFlavor,
    pub change: Option<Change>,
}

impl Flavor {
    /// Whether the variant has change `c`: a variant site
    /// ([`crate::patch`]).
    #[track_caller]
    pub fn has(self, c: Change) -> bool {
        crate::patch::site(self.change == Some(c))
    }
}

/// An IORING_OP_OPENAT2 submission: the pathname and `struct open_how`.
#[derive(Clone, Debug)]
pub struct Sqe {
    pub name: Filename,
    pub how: OpenHow,
}

/// One `struct filename` (ghost): its references and how many times it was
/// put.
#[derive(Clone, Debug, Default)]
pub struct NameRef {
    pub refcnt: u32,
    pub puts: u32,
}

/// One request (`struct io_kiocb` with its `struct io_open`), as the ghost
/// log keeps it.
#[derive(Clone, Debug)]
pub struct Req {
    pub sqe: Sqe,
    /// `req->flags`.
    pub flags: u32,
    /// `open->filename`: the delayed slot holds the name (an index into
    /// [`Ring::names`]) between prep and issue, and again after a punt.
    pub delayed: Option<usize>,
    /// `open->nofile`, RLIMIT_NOFILE at prep.
    pub nofile: u32,
    /// The CQEs posted for it (their `res`).
    pub cqes: Vec<Result<u32, Errno>>,
    /// Whether the inline issue returned -EAGAIN and it went to io-wq.
    pub punted: bool,
    /// build_open_flags refused it with -EAGAIN before any walk.
    pub refused_by_flags: bool,
    /// The `do_file_open` calls it made (indexes into the open log), with
    /// whether each was the inline issue.
    pub calls: Vec<(usize, bool)>,
    /// The opened file's path references (the file's, put when the
    /// application closes the fd).
    pub file_path: Option<Path>,
}

/// What the ghost log holds.
#[derive(Default)]
pub struct Log {
    pub reqs: Vec<Req>,
    pub names: Vec<NameRef>,
}

/// io-wq's work list and whether a worker is running (a ghost list behind
/// `wq_lock`, which every enqueue and dequeue takes).
#[derive(Default)]
struct WqState {
    queue: VecDeque<usize>,
    running: bool,
    workers: Vec<JoinHandle<()>>,
    spawned: u32,
}

/// One ring and the process state its requests use.
pub struct Ring<'a> {
    pub flavor: Flavor,
    pub vfs: &'a Vfs,
    pub files: &'a dyn FileTable,
    pub opens: &'a OpenLog,
    state: &'a RingState,
}

/// Everything a ring lives on, owned by the execution's state so that
/// worker threads can reach it.
pub struct RingState {
    log: GhostMutex<Log>,
    wq: GhostMutex<WqState>,
    wq_lock: SpinLock,
}

impl RingState {
    pub fn new() -> RingState {
        RingState {
            log: GhostMutex::new(Log::default()),
            wq: GhostMutex::new(WqState::default()),
            wq_lock: SpinLock::new("wq->lock"),
        }
    }

    /// The ghost log (specs read it).
    pub fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wq(&self) -> MutexGuard<'_, WqState> {
        self.wq.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a worker's join handle for the teardown.
    pub fn add_worker(&self, h: JoinHandle<()>) {
        self.wq().workers.push(h);
    }

    /// The io-wq workers spawned so far, to join (the main thread's
    /// teardown, once the submitter is done).
    pub fn take_workers(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut self.wq().workers)
    }

    /// How many io-wq workers were created.
    pub fn workers_spawned(&self) -> u32 {
        self.wq().spawned
    }
}

impl Default for RingState {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Ring<'a> {
    pub fn new(
        flavor: Flavor,
        vfs: &'a Vfs,
        files: &'a dyn FileTable,
        opens: &'a OpenLog,
        state: &'a RingState,
    ) -> Ring<'a> {
        Ring {
            flavor,
            vfs,
            files,
            opens,
            state,
        }
    }

    pub(crate) fn log(&self) -> MutexGuard<'_, Log> {
        self.state.log()
    }

    /// io_uring/io_uring.c:io_submit_sqe for one SQE: `io_init_req` with
    /// the op's prep, then `io_queue_sqe`. Returns the request's index.
    /// (Prep's own failures, which complete the request at once, are not
    /// modelled: see `openclose::io_openat2_prep`.)
    pub fn io_submit_sqe(&self, t: &Task, sqe: Sqe, spawn_worker: &dyn Fn(usize)) -> usize {
        let _f = t.enter("io_submit_sqe");
        let req = {
            let mut log = self.log();
            log.reqs.push(Req {
                sqe,
                flags: 0,
                delayed: None,
                nofile: 0,
                cqes: Vec::new(),
                punted: false,
                refused_by_flags: false,
                calls: Vec::new(),
                file_path: None,
            });
            log.reqs.len() - 1
        };
        t.note("sqe {}: IORING_OP_OPENAT2", &[Val::dec(req as u64)]);
        openclose::io_openat2_prep(self, t, req);
        self.io_queue_sqe(t, req, spawn_worker);
        req
    }

    /// io_uring/io_uring.c:io_queue_sqe: a FORCE_ASYNC request goes straight
    /// to io-wq; otherwise it is issued inline with IO_URING_F_NONBLOCK and
    /// an -EAGAIN is punted (`io_queue_async`: openat cannot be poll-armed).
    fn io_queue_sqe(&self, t: &Task, req: usize, spawn_worker: &dyn Fn(usize)) {
        let _f = t.enter("io_queue_sqe");
        if self.log().reqs[req].flags & REQ_F_FORCE_ASYNC != 0 {
            t.tracepoint("force_async");
            return self.io_queue_iowq(t, req, spawn_worker);
        }
        match self.io_issue_sqe(t, req, IO_URING_F_NONBLOCK) {
            Issue::Complete => {
                t.tracepoint("inline_completion");
                self.io_free_req(t, req);
            }
            Issue::Again => {
                t.tracepoint("punt");
                self.log().reqs[req].punted = true;
                self.io_queue_iowq(t, req, spawn_worker);
            }
        }
    }

    /// io_uring/io_uring.c:io_issue_sqe for openat: `io_openat2`, then
    /// posting the completion it set (IOU_COMPLETE) or handing an -EAGAIN
    /// back to the caller.
    fn io_issue_sqe(&self, t: &Task, req: usize, issue_flags: u32) -> Issue {
        let _f = t.enter("io_issue_sqe");
        match openclose::io_openat2(self, t, req, issue_flags) {
            Ok(res) => {
                self.io_req_complete_post(t, req, res);
                Issue::Complete
            }
            Err(Errno::EAGAIN) => Issue::Again,
            Err(e) => unreachable!("io_openat2 returns IOU_COMPLETE or -EAGAIN, not {e}"),
        }
    }

    /// io_uring/io-wq.c:io_wq_enqueue (via io_queue_iowq): queue the work
    /// under the wq lock; with no worker running, create one
    /// (`create_io_worker`, outside the lock).
    fn io_queue_iowq(&self, t: &Task, req: usize, spawn_worker: &dyn Fn(usize)) {
        let _f = t.enter("io_queue_iowq");
        let g = self.state.wq_lock.spin_lock(t);
        let create = {
            let mut wq = self.state.wq();
            wq.queue.push_back(req);
            !std::mem::replace(&mut wq.running, true)
        };
        g.unlock();
        if create {
            let n = {
                let mut wq = self.state.wq();
                wq.spawned += 1;
                wq.spawned
            };
            t.note("create_io_worker #{}", &[Val::dec(u64::from(n))]);
            spawn_worker(n as usize);
        }
    }

    /// io_uring/io-wq.c:io_wq_worker's loop (reduced): take work from the
    /// list and run it (`io_wq_submit_work`); with the list empty, exit.
    pub fn io_wq_worker(&self, t: &Task) {
        while let Some(req) = self.io_get_next_work(t) {
            self.io_wq_submit_work(t, req);
        }
    }

    /// io_uring/io-wq.c:io_get_next_work (reduced): the next queued request
    /// under the wq lock; none left, the worker stops running.
    fn io_get_next_work(&self, t: &Task) -> Option<usize> {
        let _f = t.enter("io_get_next_work");
        let g = self.state.wq_lock.spin_lock(t);
        let next = {
            let mut wq = self.state.wq();
            let next = wq.queue.pop_front();
            if next.is_none() {
                wq.running = false;
            }
            next
        };
        g.unlock();
        next
    }

    /// io_uring/io_uring.c:io_wq_submit_work: issue the request again,
    /// blocking allowed (no IO_URING_F_NONBLOCK), then free it.
    fn io_wq_submit_work(&self, t: &Task, req: usize) {
        let _f = t.enter("io_wq_submit_work");
        match self.io_issue_sqe(t, req, 0) {
            Issue::Complete => self.io_free_req(t, req),
            Issue::Again => unreachable!("a blocking openat issue never returns -EAGAIN"),
        }
    }

    /// io_uring/io_uring.c:io_req_complete_post: post the CQE (a ghost
    /// record here: the CQ ring's memory is not modelled).
    fn io_req_complete_post(&self, t: &Task, req: usize, res: Result<u32, Errno>) {
        let _f = t.enter("io_req_complete_post");
        self.log().reqs[req].cqes.push(res);
        let v = match res {
            Ok(fd) => Val::dec(u64::from(fd)),
            Err(e) => crate::kernel::errptr::ErrPtr::<u64>::Err(e).val(),
        };
        t.note("cqe {}: res {}", &[Val::dec(req as u64), v]);
    }

    /// io_uring/io_uring.c:io_free_req → io_clean_op: a request still
    /// marked REQ_F_NEED_CLEANUP runs its op's cleanup (`io_open_cleanup`).
    fn io_free_req(&self, t: &Task, req: usize) {
        let _f = t.enter("io_free_req");
        if self.log().reqs[req].flags & REQ_F_NEED_CLEANUP != 0 {
            openclose::io_open_cleanup(self, t, req);
        }
    }
}

/// What `io_issue_sqe` tells its caller.
enum Issue {
    Complete,
    Again,
}

/// An io-wq worker's task: a thread of the submitting process
/// (`create_io_thread`), or a kernel thread of its own where the variant
/// predates that.
pub fn io_worker_task(flavor: Flavor, name: &str) -> Task {
    let t = Task::new(name, Context::Kthread);
    if flavor.has(Change::PuntResolvesThreadSelfAsWorker) {
        t.set_ident(KTHREAD_WORKER_IDENT);
    }
    t
}

/// The names of the io-wq worker threads, in creation order (loom allows
/// five threads per execution, so scenarios stay at two workers).
pub const WORKERS: [&str; 4] = ["iou-wrk", "iou-wrk2", "iou-wrk3", "iou-wrk4"];

/// The worker thread's name for creation number `n` (1-based).
pub fn worker_name(n: usize) -> Name {
    WORKERS[(n - 1).min(WORKERS.len() - 1)]
}
