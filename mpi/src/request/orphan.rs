//! Requests the program freed while their operation was pending and still
//! had a post step to run (a receive staged for a non-contiguous datatype,
//! a nonblocking collective's copy-out, an `MPI_Isendrecv`):
//! `MPI_Request_free` hands them here, and they are finished when they
//! complete.
//!
//! There is no progress thread of the C layer's own, so orphans are polled
//! at the end of every MPI call while any exist (one relaxed load per call
//! otherwise). A program learns that a freed receive completed only through
//! another MPI call (a message from the sender, a barrier), and that call
//! finishes the orphan before it returns.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::request::object::{ReqObj, State};
use crate::request::post::finish;

use crate::error::Res;
use crate::state::{rt, Runtime};

/// How many orphans wait (Relaxed: only a hint that `poll` has work; the
/// list itself is behind its cell).
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// Takes over a request the program freed: drops it (its operation goes on
/// in ferry) unless a post step must still run on its completion.
///
/// # Errors
/// As for `LevelCell::with`.
pub(crate) fn adopt(rt: &Runtime, mut obj: ReqObj) -> Res {
    // A freed persistent request is not started again.
    obj.make_one_shot();
    let keep = match &obj.state {
        State::Active(_) => obj.post.writes_buffers(),
        // (An `MPI_Isendrecv`'s receive half may have a post step of its own.)
        State::Polled(p) => p.outlives_free(),
        _ => false,
    };
    if !keep {
        drop(obj);
        return Ok(());
    }
    rt.orphans().with(|o| o.push(obj))?;
    COUNT.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Finishes the orphans that completed; called at the end of MPI calls.
#[inline]
pub(crate) fn poll() {
    if COUNT.load(Ordering::Relaxed) != 0 {
        poll_orphans();
    }
}

/// [`poll`]'s work, out of line: inlined, it made every MPI call save and
/// restore the registers it needs.
#[cold]
#[inline(never)]
fn poll_orphans() {
    let Ok(rt) = rt() else {
        return;
    };
    let taken = rt.orphans().with(std::mem::take).unwrap_or_default();
    let mut pending = Vec::with_capacity(taken.len());
    for mut obj in taken {
        let done = match &mut obj.state {
            State::Active(req) => match req.test() {
                Ok(Some(c)) => Some(c),
                Ok(None) => None,
                // The operation failed beyond completing: nothing is left
                // to finish.
                Err(_) => {
                    COUNT.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
            },
            State::Polled(_) => match obj.poll_pending() {
                Ok(true) => None,
                // Done (its halves finished their post steps) or failed.
                Ok(false) | Err(_) => {
                    COUNT.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
            },
            _ => None,
        };
        match done {
            Some(c) => {
                // The program gave up its handle: nobody sees the report.
                let _ = finish(&mut obj, c);
                COUNT.fetch_sub(1, Ordering::Relaxed);
            }
            None => pending.push(obj),
        }
    }
    let _ = rt.orphans().with(|o| o.append(&mut pending));
}
