//! Invariants every model shares: kernel primitives raise them where the
//! misuse happens (a freed object touched, a sleep in atomic context, a lock
//! order inverted), so no model writes a check for them. A model's registry
//! includes this slice ([`crate::Spec::SHARED`]); each entry's shortest
//! witness is taken over the variants, in any model, that break it.

use crate::Invariant;

const fn built_in(name: &'static str, about: &'static str) -> Invariant {
    Invariant {
        name,
        about,
        check: (),
    }
}

pub const USE_AFTER_FREE: Invariant = built_in(
    "use_after_free",
    "built in (kernel::rcu::Slab): no access to a freed object",
);
pub const DOUBLE_FREE: Invariant = built_in(
    "double_free",
    "built in (kernel::rcu::Slab): no object is freed twice",
);
pub const NULL_DEREF: Invariant = built_in(
    "null_deref",
    "built in (kernel::rcu::Slab): no NULL object pointer is dereferenced",
);
pub const ERR_PTR_DEREF: Invariant = built_in(
    "err_ptr_deref",
    "built in (kernel::errptr): no NULL or ERR_PTR value is dereferenced",
);
pub const RCU_BALANCE: Invariant = built_in(
    "rcu_balance",
    "built in (kernel::rcu): rcu_read_unlock only inside a read-side section",
);
pub const MIGHT_SLEEP: Invariant = built_in(
    "might_sleep",
    "built in (kernel::task::Task::might_sleep): nothing blocks in atomic context",
);
pub const LOCKDEP: Invariant = built_in(
    "lockdep",
    "built in (kernel::spinlock::Locked): guarded data is touched only under its own lock",
);
pub const LOCK_ORDER: Invariant = built_in(
    "lock_order",
    "built in (kernel::task, lockdep): no two lock classes are taken in both orders, \
     and no class is taken twice without a nesting annotation",
);
pub const LOCKREF_LOCKED_SECTION: Invariant = built_in(
    "lockref_locked_section",
    "built in (kernel::lockref): no lockless update lands while the embedded lock is held",
);

/// The kernel's own checks, in the order `vfsmc show` lists them.
pub const KERNEL: &[Invariant] = &[
    USE_AFTER_FREE,
    DOUBLE_FREE,
    NULL_DEREF,
    ERR_PTR_DEREF,
    RCU_BALANCE,
    MIGHT_SLEEP,
    LOCKDEP,
    LOCK_ORDER,
    LOCKREF_LOCKED_SECTION,
];
