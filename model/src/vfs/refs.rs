//! The ghost reference ledger: who holds which reference on which dentry or
//! mount. Every get and put in the substrate goes through it with the
//! holder's name (a task, or a structural owner such as `d_parent` for the
//! reference a child holds on its parent), so that a leak, a double put, or
//! a reference on a dead or freed object is reported with its holder, and
//! the final state can be compared with the objects' own counts.

use std::sync::Mutex as GhostMutex;

use crate::trace::Name;

use super::{DentryRef, MountRef};

/// An object a reference is held on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Obj {
    Dentry(DentryRef),
    Mount(MountRef),
}

/// References held, by holder and object.
#[derive(Default)]
pub struct Ledger(GhostMutex<Vec<(Name, Obj, u32)>>);

impl Ledger {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<(Name, Obj, u32)>) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// `holder` now holds one more reference on `obj`.
    pub fn take(&self, holder: Name, obj: Obj) {
        self.with(
            |v| match v.iter_mut().find(|(h, o, _)| *h == holder && *o == obj) {
                Some(e) => e.2 += 1,
                None => v.push((holder, obj, 1)),
            },
        );
    }

    /// `holder` gives one reference on `obj` back; an error when it holds
    /// none (a double put, or a put of a reference never taken).
    pub fn put(&self, holder: Name, obj: Obj) -> Result<(), String> {
        self.with(
            |v| match v.iter().position(|(h, o, _)| *h == holder && *o == obj) {
                Some(i) => {
                    v[i].2 -= 1;
                    if v[i].2 == 0 {
                        v.remove(i);
                    }
                    Ok(())
                }
                None => Err(format!(
                    "{holder} puts a reference on {obj:?} it does not hold"
                )),
            },
        )
    }

    /// One reference `from` holds on `obj` now belongs to `to` (a
    /// structure took it over: an opened file installed in a table); an
    /// error when `from` holds none.
    pub fn hand_over(&self, from: Name, to: Name, obj: Obj) -> Result<(), String> {
        self.put(from, obj)?;
        self.take(to, obj);
        Ok(())
    }

    /// References on `obj`, over every holder.
    pub fn count(&self, obj: Obj) -> u32 {
        self.with(|v| v.iter().filter(|(_, o, _)| *o == obj).map(|e| e.2).sum())
    }

    /// What `holder` holds, in a stable order.
    pub fn held_by(&self, holder: Name) -> Vec<(Obj, u32)> {
        let mut out: Vec<(Obj, u32)> = self.with(|v| {
            v.iter()
                .filter(|e| e.0 == holder)
                .map(|e| (e.1, e.2))
                .collect()
        });
        out.sort();
        out
    }

    /// Every (holder, object, references) entry, for reports.
    pub fn entries(&self) -> Vec<(Name, Obj, u32)> {
        let mut out = self.with(|v| v.clone());
        out.sort();
        out
    }
}
