//! At `MPI_THREAD_MULTIPLE`, the requests some thread is blocked on, with
//! a ferry `Canceller` each, so that `MPI_Cancel` from another thread
//! reaches a request its table has lent out (a listener thread blocked in
//! `MPI_Wait` on a receive that another thread cancels at shutdown).
//!
//! Only blocking completion calls at `MULTIPLE` register; below it no
//! other thread can call `MPI_Cancel` meanwhile, and nothing is paid.

use std::sync::Mutex;

use ferry::{Canceller, Request};

use crate::state::{lock, Runtime};

static WAITING: Mutex<Vec<(usize, Canceller)>> = Mutex::new(Vec::new());

/// The canceller of request handle `h`, if a thread is blocked on it.
pub(crate) fn canceller(h: usize) -> Option<Canceller> {
    lock(&WAITING)
        .iter()
        .find(|(w, _)| *w == h)
        .map(|(_, c)| c.clone())
}

/// Registered handles; unregistered on drop.
#[derive(Debug)]
pub(crate) struct Waiting {
    handles: Vec<usize>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&WAITING).retain(|(h, _)| !self.handles.contains(h));
    }
}

/// Registers the requests a thread is about to block on (at `MULTIPLE`
/// only; `None` otherwise).
pub(crate) fn enter<'a>(
    rt: &Runtime,
    entries: impl Iterator<Item = (usize, &'a Request)>,
) -> Option<Waiting> {
    if rt.requests().unlocked() {
        return None;
    }
    let mut w = lock(&WAITING);
    let mut handles = Vec::new();
    for (h, r) in entries {
        if !r.is_null() {
            w.push((h, r.canceller()));
            handles.push(h);
        }
    }
    Some(Waiting { handles })
}
