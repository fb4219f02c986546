//! `MPI_Waitall` and `MPI_Testall` over plain requests, without lending.
//!
//! The general path (`multi.rs`) lends every entry out of the request
//! table, completes the ferry operations together, builds a report per
//! entry and gives the entries back: several moves of each request object
//! and of each completion, which a windowed stream of small messages pays
//! per message. Most arrays hold only plain requests: null, EMPTY, or a
//! one-shot ferry operation with no post step (a contiguous send or
//! receive). Below `MPI_THREAD_MULTIPLE` no other thread can reach the table
//! while this thread is in a call, so such an array needs no lending: the
//! ferry operations are taken out of their entries in place, completed
//! together, and the entries removed, with each status written straight
//! from its completion.
//!
//! The results are the general path's: the same statuses, the same handles
//! freed, the same `MPI_ERR_IN_STATUS` raised on the first failed entry's
//! communicator. An array with anything else in it (a persistent or
//! generalized request, a staged receive, a collective) takes the general
//! path.

use std::cell::RefCell;

use ferry::{Completion, Request};

use super::mpix::MPIX_REQUEST_EMPTY;
use super::req::ReqObj;
use crate::abi::{MpiStatus, MPI_COMM_SELF, MPI_REQUEST_NULL};
use crate::error::{Fail, Res};
use crate::state::Runtime;

/// Per-thread vectors, reused between calls (no allocation once grown).
#[derive(Debug, Default)]
struct Scratch {
    /// The ferry operations taken out of the entries (`Request::NULL` for
    /// null and EMPTY handles).
    reqs: Vec<Request>,
    /// Each entry's communicator (errors are raised on it).
    comms: Vec<usize>,
    done: Vec<Completion>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A one-shot ferry operation with no post step. (One whose operation was
/// already taken out, a handle listed twice, is not: the general path
/// reports the duplicate.)
fn is_plain(obj: &ReqObj) -> bool {
    matches!(&obj.state, super::req::State::Active(r) if !r.is_null())
        && matches!(obj.post, super::post::Post::None)
        && !obj.persistent()
}

fn is_trivial(h: usize) -> bool {
    h == MPI_REQUEST_NULL || h == MPIX_REQUEST_EMPTY
}

/// `MPI_Waitall`'s plain path: `None` if it does not apply (then nothing
/// changed and the general path runs).
pub(crate) fn waitall(
    rt: &'static Runtime,
    handles: &mut [usize],
    statuses: Option<&mut [MpiStatus]>,
) -> Option<Res> {
    with_scratch(|s| {
        if !take(rt, handles, s)? {
            return None;
        }
        if let Err(e) = ferry::wait_all_into(&mut s.reqs, &mut s.done) {
            return Some(put_back(rt, handles, s).and(Err(Fail::from(e).on(first_comm(s)))));
        }
        Some(finish(rt, handles, s, statuses))
    })
}

/// What `MPI_Testall`'s plain path found.
pub(crate) enum TestAll {
    /// Not every request is complete: nothing changed (flag false).
    Incomplete,
    /// Every request completed and was freed (flag true), with the call's
    /// result (`MPI_ERR_IN_STATUS` if an operation failed).
    Complete(Res),
    /// The call failed (the flag is not written).
    Failed(Fail),
}

/// `MPI_Testall`'s plain path: `None` if it does not apply.
pub(crate) fn testall(
    rt: &'static Runtime,
    handles: &mut [usize],
    statuses: Option<&mut [MpiStatus]>,
) -> Option<TestAll> {
    with_scratch(|s| {
        if !take(rt, handles, s)? {
            return None;
        }
        let failed = |s: &mut Scratch, f: Fail| match put_back(rt, handles, s) {
            Ok(()) => TestAll::Failed(f),
            Err(g) => TestAll::Failed(g),
        };
        Some(match ferry::test_all(&mut s.reqs) {
            Ok(Some(done)) => {
                s.done = done;
                TestAll::Complete(finish(rt, handles, s, statuses))
            }
            Ok(None) => match put_back(rt, handles, s) {
                Ok(()) => TestAll::Incomplete,
                Err(f) => TestAll::Failed(f),
            },
            Err(e) => {
                let f = Fail::from(e).on(first_comm(s));
                failed(s, f)
            }
        })
    })
}

fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

/// Takes the ferry operations out of the entries, if the path applies:
/// below `MPI_THREAD_MULTIPLE`, and every entry plain. `None` for a call
/// from a thread that may not call (the general path reports it).
fn take(rt: &Runtime, handles: &[usize], s: &mut Scratch) -> Option<bool> {
    if !rt.requests.unlocked() {
        return Some(false);
    }
    s.reqs.clear();
    s.comms.clear();
    s.done.clear();
    let taken = rt.requests.with(|t| {
        for &h in handles {
            if is_trivial(h) {
                s.reqs.push(Request::NULL);
                s.comms.push(MPI_COMM_SELF);
                continue;
            }
            match t.get_mut(h) {
                Ok(o) if is_plain(o) => {
                    s.comms.push(o.comm);
                    s.reqs.push(o.take_ferry());
                }
                // Not plain, busy or stale: the general path decides.
                _ => {
                    for (&h, r) in handles.iter().zip(s.reqs.drain(..)) {
                        if let Ok(o) = t.get_mut(h) {
                            o.put_ferry(r);
                        }
                    }
                    return false;
                }
            }
        }
        true
    });
    taken.ok()
}

/// Puts every ferry operation back into its entry (nothing completed).
fn put_back(rt: &Runtime, handles: &[usize], s: &mut Scratch) -> Res {
    rt.requests.with(|t| {
        for (&h, r) in handles.iter().zip(s.reqs.drain(..)) {
            if is_trivial(h) {
                continue;
            }
            if let Ok(o) = t.get_mut(h) {
                o.put_ferry(r);
            }
        }
    })
}

/// Frees every entry, setting its handle to `MPI_REQUEST_NULL`, and writes
/// the statuses; `MPI_ERR_IN_STATUS` if an operation failed.
fn finish(
    rt: &Runtime,
    handles: &mut [usize],
    s: &mut Scratch,
    mut statuses: Option<&mut [MpiStatus]>,
) -> Res {
    let mut failed = None;
    rt.requests.with(|t| {
        for (i, (h, c)) in handles.iter_mut().zip(s.done.drain(..)).enumerate() {
            let status = if is_trivial(*h) {
                MpiStatus::EMPTY
            } else {
                drop(t.remove(*h));
                let s = c.into_status();
                if s.error.is_some() && failed.is_none() {
                    failed = Some(i);
                }
                MpiStatus::from_ferry(&s)
            };
            *h = MPI_REQUEST_NULL;
            if let Some(out) = statuses.as_deref_mut() {
                out[i] = status;
            }
        }
    })?;
    s.reqs.clear();
    match failed {
        None => Ok(()),
        Some(i) => Err(super::multi::in_status(s.comms[i])),
    }
}

/// The communicator a failure of the whole call is raised on: the first
/// entry's that has one.
fn first_comm(s: &Scratch) -> usize {
    s.comms
        .iter()
        .copied()
        .find(|&c| c != MPI_COMM_SELF)
        .unwrap_or(MPI_COMM_SELF)
}
