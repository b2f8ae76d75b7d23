//! The `open_creat` model against the sequential reference of
//! [`crate::unlazy::reference`]: open(2) calls (O_RDWR, with O_CREAT, with
//! O_CREAT|O_EXCL) and namespace changes, one thread at a time. The
//! reference says what each open returns ([`Reference::open`], written from
//! open(2) and path_resolution(7)); [`run_single`] runs the same steps on
//! the model, so a test can compare them step by step.

use vfsmc_model::kernel::errptr::Errno;
use vfsmc_model::kernel::task::Task;
use vfsmc_model::namei::open::{do_file_open, open_flags, OpenLog, FMODE_CREATED};
use vfsmc_model::namei::Filename;
use vfsmc_model::trace::Context;
use vfsmc_model::vfs::{Node, Vfs};

use super::World;
use crate::unlazy::reference::Reference;
use crate::unlazy::{act, Op};

/// What an open returns: the inode opened (numbered as [`Reference`]
/// numbers them) and whether the open created it, or the errno.
pub type OpenOutcome = Result<(u64, bool), Errno>;

/// One step of a sequential run.
#[derive(Clone, Copy, Debug)]
pub enum SeqOp {
    /// A namespace change by the actor (`Rename`, `Unlink`, `Rmdir`,
    /// `Mkdir`, `Create`: the ones [`Reference::change`] accepts).
    Change(Op),
    /// open(2) of the path with the flags by the opener; its result is
    /// reported and the file, if opened, closed again.
    Open(&'static str, u32),
}

/// Runs `ops` on `reference`: the ones it accepted (every open, the valid
/// changes) and the outcome of each open, as [`run_single`] reports them.
pub fn run(reference: &mut Reference, ops: &[SeqOp]) -> (Vec<SeqOp>, Vec<OpenOutcome>) {
    let (mut accepted, mut outcomes) = (Vec::new(), Vec::new());
    for &op in ops {
        match op {
            SeqOp::Change(change) => {
                if reference.change(change).is_err() {
                    continue;
                }
            }
            SeqOp::Open(path, flags) => outcomes.push(reference.open(path, flags)),
        }
        accepted.push(op);
    }
    (accepted, outcomes)
}

/// Runs `ops` (all valid: see [`run`]) on the model of `variant` built
/// from `tree`, one at a time in the calling execution: each open's
/// outcome, in order (the file is closed after each successful open).
/// Afterwards pending RCU callbacks run and every end-of-execution
/// invariant of the model is checked; a broken one is raised, so it is the
/// execution's violation.
pub fn run_single(variant: &str, tree: &'static [Node], ops: &[SeqOp]) -> Vec<OpenOutcome> {
    let flavor = super::VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .expect("a registered variant")
        .code;
    let world = World {
        vfs: Vfs::build(flavor.walk.vfs, tree),
        opens: OpenLog::default(),
    };
    let vfs = &world.vfs;
    let opener = Task::new("opener", Context::Task);
    let actor = Task::new("actor", Context::Task);
    let mut outcomes = Vec::new();
    for &op in ops {
        match op {
            SeqOp::Change(change) => act(vfs, &actor, change),
            SeqOp::Open(path, flags) => {
                let name = Filename::new(path);
                let r = do_file_open(
                    vfs,
                    &opener,
                    flavor,
                    &world.opens,
                    &name,
                    open_flags(flags),
                    false,
                );
                outcomes.push(r.map(|mut o| {
                    let inode = vfs.dentry(o.file.f_path.dentry).d_inode.peek();
                    let created = o.file.f_mode & FMODE_CREATED != 0;
                    o.fput();
                    (inode, created)
                }));
            }
        }
    }
    let main = Task::new("main", Context::Task);
    vfs.rcu.quiesce(&main);
    crate::raise_end_violations("main", super::INVARIANTS, &world);
    outcomes
}
