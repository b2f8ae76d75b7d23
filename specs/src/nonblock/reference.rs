//! The `nonblock` model against a sequential reference: io_uring openat
//! requests (with and without RESOLVE_CACHED, O_DIRECTORY, O_CREAT) between
//! namespace changes, one at a time. For each request the reference gives
//! the set of results an application may see: what a blocking open(2)
//! returns now ([`Reference::open`], written from open(2) and
//! path_resolution(7)), and -EAGAIN as well when the application asked for
//! RESOLVE_CACHED (openat2(2): "the lookup fails with EAGAIN" when it
//! cannot be completed from the cache; only -EAGAIN with O_CREAT, O_TRUNC
//! or O_TMPFILE). [`run_single`] runs the same steps on the model, the
//! punted requests on an io-wq worker right away, each fd closed once its
//! CQE is read.

use vfsmc_model::io_uring::{io_worker_task, WORKERS};
use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::open::{__O_TMPFILE, O_CREAT, O_DIRECTORY, O_TRUNC};
use vfsmc_model::trace::Context;
use vfsmc_model::vfs::Node;

use super::{exit_files, no_lost_install_of, Request, World};
use crate::unlazy::reference::Reference;
use crate::unlazy::{act, Op};

/// What a request's CQE says: the inode opened (numbered as [`Reference`]
/// numbers them) or the errno.
pub type Outcome = Result<u64, Errno>;

/// One step of a sequential run.
#[derive(Clone, Copy, Debug)]
pub enum SeqOp {
    /// A namespace change by the actor (the ones [`Reference::change`]
    /// accepts).
    Change(Op),
    /// One io_uring openat by the submitter; its fd is closed after its
    /// CQE.
    Submit(Request),
}

/// The results an application may see for `r` on `reference` now (and the
/// reference updated as a blocking open would update it).
fn allowed(reference: &mut Reference, r: Request) -> Vec<Outcome> {
    let refused = r.flags & (O_TRUNC | O_CREAT | __O_TMPFILE) != 0;
    if r.resolve_cached && refused {
        return vec![Err(Errno::EAGAIN)];
    }
    let blocking = reference
        .open(r.path, r.flags & !O_DIRECTORY)
        .and_then(|(id, _)| {
            if r.flags & O_DIRECTORY != 0 && !reference.is_dir(id) {
                return Err(Errno::ENOTDIR);
            }
            Ok(id)
        });
    let mut set = vec![blocking];
    if r.resolve_cached {
        set.push(Err(Errno::EAGAIN));
    }
    set
}

/// Runs `ops` on `reference`: the ones it accepted (every request, the
/// valid changes) and, per request, the results it allows.
pub fn run(reference: &mut Reference, ops: &[SeqOp]) -> (Vec<SeqOp>, Vec<Vec<Outcome>>) {
    let (mut accepted, mut sets) = (Vec::new(), Vec::new());
    for &op in ops {
        match op {
            SeqOp::Change(change) => {
                if reference.change(change).is_err() {
                    continue;
                }
            }
            SeqOp::Submit(r) => sets.push(allowed(reference, r)),
        }
        accepted.push(op);
    }
    (accepted, sets)
}

/// Runs `ops` (all valid: see [`run`]) on the model of `variant` built
/// from `tree`, one at a time in the calling execution: each request's
/// outcome, in order. A punted request runs on the io-wq worker before the
/// next step. Afterwards the process closes its fds and every
/// end-of-execution invariant of the model is checked; a broken one is
/// raised, so it is the execution's violation.
pub fn run_single(variant: &str, tree: &'static [Node], ops: &[SeqOp]) -> Vec<Outcome> {
    let flavor = super::VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let world = World::new(flavor, tree);
    let flavor = flavor.ring;
    let submitter = Task::new("submitter", Context::Task);
    let actor = Task::new("actor", Context::Task);
    let worker = io_worker_task(flavor, WORKERS[0]);
    let main = Task::new("main", Context::Task);
    let ring = world.ring(flavor);
    let run_worker = |_: usize| ring.io_wq_worker(&worker);
    let mut outcomes = Vec::new();
    for &op in ops {
        match op {
            SeqOp::Change(change) => act(&world.vfs, &actor, change),
            SeqOp::Submit(r) => {
                let req = ring.io_submit_sqe(&submitter, r.sqe(), &run_worker);
                outcomes.push(read_cqe(&world, &main, req));
            }
        }
    }
    vfsmc_model::exec::check_final("main", "no_lost_install", || no_lost_install_of(&world.fds));
    exit_files(&world, &main);
    crate::raise_end_violations("main", super::INVARIANTS, &world);
    outcomes
}

/// The application reads request `req`'s CQE and closes the fd it names.
fn read_cqe(world: &World, main: &Task, req: usize) -> Outcome {
    let (cqe, path) = {
        let mut log = world.ring.log();
        let r = &mut log.reqs[req];
        (r.cqes.first().copied(), r.file_path.take())
    };
    let fd = cqe.expect("a sequential request completes before the next step")?;
    let path = path.expect("a successful open installed a file");
    let inode = world.vfs.dentry(path.dentry).d_inode.peek();
    let _ = vfsmc_model::files::FileTable::close_fd(&world.fds, main, fd);
    vfsmc_model::namei::path_put(&world.vfs, main, path);
    Ok(inode)
}
