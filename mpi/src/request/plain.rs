//! `MPI_Waitall`, `MPI_Testall`, `MPI_Wait` and `MPI_Test` over plain
//! requests, without lending.
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
//! Raw operations (`State::Raw`: contiguous sends and receives on
//! communicators with job ranks, and the direct handles of `direct.rs`,
//! which are not in the table at all) are completed by their engine handles
//! alone; ferry requests (`State::Active`) through ferry's completion
//! calls. An array mixing the two takes the general path.
//!
//! The results are the general path's: the same statuses, the same handles
//! freed, the same `MPI_ERR_IN_STATUS` raised on the first failed entry's
//! communicator. An array with anything else in it (a persistent or
//! generalized request, a staged receive, a collective) takes the general
//! path.

use std::cell::RefCell;

use ferry::{Completion, RawRequest, Request, Status};

use crate::request::direct;

use crate::abi::MPIX_REQUEST_EMPTY;
use crate::abi::{MpiStatus, MPI_COMM_SELF, MPI_COMM_WORLD, MPI_REQUEST_NULL};
use crate::error::{Fail, Res};
use crate::request::direct::is_direct;
use crate::request::object::{ReqObj, State};
use crate::state::Runtime;

/// Per-thread vectors, reused between calls (no allocation once grown).
#[derive(Debug, Default)]
struct Scratch {
    /// The raw operations taken out of the entries (`NULL` for null and
    /// EMPTY handles), in raw mode.
    raws: Vec<RawRequest>,
    /// The ferry operations taken out, in ferry mode.
    reqs: Vec<Request>,
    /// Each entry's communicator (errors are raised on it).
    comms: Vec<usize>,
    done: Vec<Completion>,
    /// The direct handles met (a handle listed twice takes the general
    /// path, which reports it).
    seen: direct::Seen,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// What the entries of an array hold, when the path applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Raw operations (and null or EMPTY handles) only.
    Raw,
    /// One-shot ferry operations without a post step (and null or EMPTY
    /// handles) only.
    Ferry,
}

/// The mode an entry allows. (One whose operation was already taken out,
/// a handle listed twice, allows none: the general path reports it.)
fn mode_of(obj: &ReqObj) -> Option<Mode> {
    if !matches!(obj.post, crate::request::post::Post::None) || obj.persistent() {
        return None;
    }
    match &obj.state {
        State::Raw(r) if !r.is_null() => Some(Mode::Raw),
        State::Active(r) if !r.is_null() => Some(Mode::Ferry),
        _ => None,
    }
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
    wait_with(rt, handles, statuses, Errors::InStatus)
}

/// `MPI_Wait`'s plain path: as [`waitall`] for one request, whose own error
/// the call returns.
pub(crate) fn wait(
    rt: &'static Runtime,
    handle: &mut usize,
    status: Option<&mut MpiStatus>,
) -> Option<Res> {
    let statuses = status.map(std::slice::from_mut);
    wait_with(rt, std::slice::from_mut(handle), statuses, Errors::Own)
}

/// How a failed operation fails the call.
#[derive(Debug, Clone, Copy)]
enum Errors {
    /// `MPI_ERR_IN_STATUS` (the `*all` calls; the statuses say which).
    InStatus,
    /// The operation's own error (the single-request calls).
    Own,
}

fn wait_with(
    rt: &'static Runtime,
    handles: &mut [usize],
    statuses: Option<&mut [MpiStatus]>,
    errors: Errors,
) -> Option<Res> {
    Some(
        match complete(rt, handles, statuses, errors, Block::Wait)? {
            TestAll::Complete(r) => r,
            TestAll::Failed(f) => Err(f),
            // A wait returns only once all are complete.
            TestAll::Incomplete => Ok(()),
        },
    )
}

/// Whether the plain path blocks until every request is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Wait,
    Test,
}

/// The plain path's body for both the wait and the test forms.
fn complete(
    rt: &'static Runtime,
    handles: &mut [usize],
    mut statuses: Option<&mut [MpiStatus]>,
    errors: Errors,
    block: Block,
) -> Option<TestAll> {
    with_scratch(|s| {
        let mode = take(rt, handles, s)?;
        let mut failed = None;
        let mut each = |i: usize, st: &Status| report(i, st, statuses.as_deref_mut(), &mut failed);
        let done = match (mode, block) {
            // Null and EMPTY entries only (the sends of a window that all
            // completed in their calls): nothing for the engine to do.
            (Mode::Raw, _) if s.raws.iter().all(|r| r.is_null()) => {
                for i in 0..s.raws.len() {
                    each(i, &Status::EMPTY);
                }
                Ok(true)
            }
            (Mode::Raw, Block::Wait) => rt
                .world_comm
                .comm
                .wait_all_raw(&mut s.raws, |i, st| each(i, &st))
                .map(|()| true),
            (Mode::Raw, Block::Test) => rt
                .world_comm
                .comm
                .test_all_raw(&mut s.raws, |i, st| each(i, &st)),
            (Mode::Ferry, Block::Wait) => {
                ferry::wait_all_into(&mut s.reqs, &mut s.done).map(|()| true)
            }
            (Mode::Ferry, Block::Test) => {
                ferry::test_all(&mut s.reqs).map(|done| done.map(|d| s.done = d).is_some())
            }
        };
        for (i, c) in s.done.drain(..).enumerate() {
            each(i, &c.into_status());
        }
        Some(match done {
            Ok(true) => TestAll::Complete(finish(rt, handles, s, failed, errors)),
            Ok(false) => match put_back(rt, handles, s) {
                Ok(()) => TestAll::Incomplete,
                Err(f) => TestAll::Failed(f),
            },
            Err(e) => {
                let f = Fail::from(e).on(first_comm(s));
                TestAll::Failed(put_back(rt, handles, s).err().unwrap_or(f))
            }
        })
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
    test_with(rt, handles, statuses, Errors::InStatus)
}

/// `MPI_Test`'s plain path: as [`testall`] for one request, whose own error
/// the call returns.
pub(crate) fn test(
    rt: &'static Runtime,
    handle: &mut usize,
    status: Option<&mut MpiStatus>,
) -> Option<TestAll> {
    let statuses = status.map(std::slice::from_mut);
    test_with(rt, std::slice::from_mut(handle), statuses, Errors::Own)
}

fn test_with(
    rt: &'static Runtime,
    handles: &mut [usize],
    statuses: Option<&mut [MpiStatus]>,
    errors: Errors,
) -> Option<TestAll> {
    complete(rt, handles, statuses, errors, Block::Test)
}

/// The first entry whose operation failed, and its error.
type Failed = Option<(usize, ferry::ferry_core::Error)>;

/// Writes entry `i`'s status (unless `MPI_STATUSES_IGNORE`) and notes the
/// first that failed.
fn report(i: usize, st: &Status, out: Option<&mut [MpiStatus]>, failed: &mut Failed) {
    if let (Some(e), None) = (st.error, &failed) {
        *failed = Some((i, e));
    }
    if let Some(out) = out {
        out[i] = MpiStatus::from_ferry(st);
    }
}

fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

/// Takes the operations out of the entries, if the path applies: below
/// `MPI_THREAD_MULTIPLE`, and every entry plain, of one mode. `None`
/// otherwise, nothing taken (also for a call from a thread that may not
/// call: the general path reports it).
fn take(rt: &Runtime, handles: &[usize], s: &mut Scratch) -> Option<Mode> {
    if !rt.requests.unlocked() {
        return None;
    }
    s.raws.clear();
    s.reqs.clear();
    s.comms.clear();
    s.done.clear();
    let taken = rt.requests.with(|t| {
        // First a look, so that only the mode's own vector is filled.
        let mut mode = None;
        s.seen.begin();
        for &h in handles {
            if is_trivial(h) {
                continue;
            }
            let m = if let Some(r) = direct::decode(h) {
                if !s.seen.first_time(r) {
                    return None;
                }
                Mode::Raw
            } else {
                t.get(h).ok().and_then(mode_of)?
            };
            if mode.is_some_and(|mode| mode != m) {
                return None;
            }
            mode = Some(m);
        }
        // An array of null and EMPTY handles only: either mode serves.
        let mode = mode.unwrap_or(Mode::Raw);
        for &h in handles {
            if let Some(r) = direct::decode(h) {
                // (The look above made the mode `Raw`.)
                s.comms.push(MPI_COMM_WORLD);
                s.raws.push(r);
                continue;
            }
            let o = if is_trivial(h) {
                None
            } else {
                t.get_mut(h).ok()
            };
            let Some(o) = o else {
                s.comms.push(MPI_COMM_SELF);
                match mode {
                    Mode::Raw => s.raws.push(RawRequest::NULL),
                    Mode::Ferry => s.reqs.push(Request::NULL),
                }
                continue;
            };
            // A handle listed twice is found taken the second time: the
            // general path reports it.
            if mode_of(o) != Some(mode) {
                put_back_taken(t, handles, s);
                return None;
            }
            s.comms.push(o.comm);
            match &mut o.state {
                State::Raw(r) => s.raws.push(std::mem::replace(r, RawRequest::NULL)),
                _ => s.reqs.push(o.take_ferry()),
            }
        }
        Some(mode)
    });
    taken.ok().flatten()
}

/// Puts back what `take` took so far, in the table's own borrow. (A direct
/// handle took nothing out of the table: it still names its operation.)
fn put_back_taken(t: &mut crate::handle::Table<ReqObj>, handles: &[usize], s: &mut Scratch) {
    let raws = s.raws.drain(..).map(Taken::Raw);
    let reqs = s.reqs.drain(..).map(Taken::Ferry);
    for (&h, taken) in handles.iter().zip(raws.chain(reqs)) {
        if is_trivial(h) || is_direct(h) {
            continue;
        }
        if let Ok(o) = t.get_mut(h) {
            restore(o, taken);
        }
    }
}

/// An operation taken out of an entry.
enum Taken {
    Raw(RawRequest),
    Ferry(Request),
}

/// Puts an operation taken out of `o` back.
fn restore(o: &mut ReqObj, taken: Taken) {
    match (&mut o.state, taken) {
        (State::Raw(r), Taken::Raw(raw)) => *r = raw,
        (_, Taken::Ferry(req)) => o.put_ferry(req),
        _ => {}
    }
}

/// Puts every operation back into its entry (nothing completed).
fn put_back(rt: &Runtime, handles: &[usize], s: &mut Scratch) -> Res {
    rt.requests.with(|t| put_back_taken(t, handles, s))
}

/// Frees every entry (all complete, their statuses written), setting its
/// handle to `MPI_REQUEST_NULL`; the error of the call if an operation
/// failed.
fn finish(
    rt: &Runtime,
    handles: &mut [usize],
    s: &mut Scratch,
    failed: Failed,
    errors: Errors,
) -> Res {
    rt.requests.with(|t| {
        for h in handles.iter_mut() {
            if !is_trivial(*h) && !is_direct(*h) {
                drop(t.remove(*h));
            }
            *h = MPI_REQUEST_NULL;
        }
    })?;
    s.raws.clear();
    s.reqs.clear();
    match (failed, errors) {
        (None, _) => Ok(()),
        (Some((i, _)), Errors::InStatus) => Err(crate::request::multi::in_status(s.comms[i])),
        (Some((i, e)), Errors::Own) => Err(Fail::from(e).on(s.comms[i])),
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
