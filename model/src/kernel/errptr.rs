//! Error pointers (include/linux/err.h:IS_ERR as read at torvalds/linux
//! 5a14da1c1b98, a v3.x-era copy, merge not identified; `IS_ERR` is the same in
//! copy id 239738719, a version with `IS_ERR_PCPU` of unknown repository): a
//! result is a pointer, NULL or `ERR_PTR(-E…)`. Modelled as a sum type; dereferencing anything but a
//! pointer is a violation naming the call site (brief §1.6.1).

use std::fmt;

use crate::kernel::task::Task;
use crate::trace::{Show, Val};

/// The errno values the models return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Errno {
    ENOENT,
    EBADF,
    EAGAIN,
    ENOMEM,
    EBUSY,
    EEXIST,
    EINVAL,
    EMFILE,
    ECHILD,
    ENOTDIR,
    ELOOP,
    EISDIR,
    ESTALE,
    ENOTEMPTY,
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "-{self:?}")
    }
}

/// `struct foo *` as the kernel returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrPtr<T> {
    Ptr(T),
    Null,
    Err(Errno),
}

impl<T: fmt::Display> fmt::Display for ErrPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrPtr::Ptr(p) => p.fmt(f),
            ErrPtr::Null => f.write_str("NULL"),
            ErrPtr::Err(e) => write!(f, "ERR_PTR({e})"),
        }
    }
}

/// The raw word of an error pointer as a trace value: errnos sit at the top
/// of the address space, as in the kernel, and NULL is 0.
const MAX_ERRNO: u64 = 4095;

impl ErrPtr<u64> {
    /// This result as a trace value.
    pub fn val(&self) -> Val {
        let raw = match *self {
            ErrPtr::Ptr(p) => p,
            ErrPtr::Null => 0,
            ErrPtr::Err(e) => u64::MAX - e as u64,
        };
        Val::with(raw, Show::With(show_raw))
    }
}

fn show_raw(raw: u64) -> String {
    let r = if raw == 0 {
        ErrPtr::Null
    } else if raw >= u64::MAX - MAX_ERRNO {
        ErrPtr::Err(ERRNOS[(u64::MAX - raw) as usize])
    } else {
        ErrPtr::Ptr(raw)
    };
    r.to_string()
}

/// Every errno, in declaration order (the inverse of `e as u64`).
const ERRNOS: [Errno; 14] = [
    Errno::ENOENT,
    Errno::EBADF,
    Errno::EAGAIN,
    Errno::ENOMEM,
    Errno::EBUSY,
    Errno::EEXIST,
    Errno::EINVAL,
    Errno::EMFILE,
    Errno::ECHILD,
    Errno::ENOTDIR,
    Errno::ELOOP,
    Errno::EISDIR,
    Errno::ESTALE,
    Errno::ENOTEMPTY,
];

impl<T> ErrPtr<T> {
    /// IS_ERR.
    pub fn is_err(&self) -> bool {
        matches!(self, ErrPtr::Err(_))
    }

    /// IS_ERR_OR_NULL.
    pub fn is_err_or_null(&self) -> bool {
        !matches!(self, ErrPtr::Ptr(_))
    }

    /// Dereferences the pointer at `site`: a violation if it is NULL or an
    /// error value.
    pub fn deref(self, t: &Task, site: &str) -> T {
        match self {
            ErrPtr::Ptr(p) => p,
            ErrPtr::Null => t.violation("err_ptr_deref", format!("{site} dereferenced NULL")),
            ErrPtr::Err(e) => {
                t.violation("err_ptr_deref", format!("{site} dereferenced ERR_PTR({e})"))
            }
        }
    }
}
