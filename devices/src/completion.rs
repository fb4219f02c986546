//! The completion family over many requests: `wait_all`, `test_all`,
//! `wait_any`, `test_any`, `wait_some`, `test_some`, and the non-destructive
//! `get_status_all`, `get_status_any`, `get_status_some` (MPI 4.1).
//!
//! Any mix of requests goes in (sends, receives, ARecv, persistent, probes,
//! null, EMPTY), as long as they belong to one [`World`](crate::World). The
//! rules are core's, which are MPI's:
//! - null and inactive persistent requests are *inactive*: the `any` and
//!   `some` forms skip them and report [`Outcome::Undefined`] when every
//!   entry is inactive; the `all` forms report them complete with an empty
//!   status;
//! - EMPTY requests are complete, not cancelled, with an empty status (and
//!   hand back their buffer);
//! - the `any`/`some` forms progress before looking and rotate their start,
//!   so no request starves another (the same fairness for `get_status_*`);
//! - `get_status_*` complete nothing and free nothing.
//!
//! Completed requests become null (persistent ones inactive), as MPI's
//! handles do.

use std::sync::Arc;

use ferry_core::{Buf, Outcount, Status, StatusAny};

use crate::error::{ApiError, Result};
use crate::request::{Completion, Request};
use crate::shared::Shared;
use crate::waiter::block_on;

/// The result of an `any` or `some` call.
#[derive(Debug)]
pub enum Outcome<T> {
    /// What completed.
    Completed(T),
    /// Every request was null or inactive (`MPI_UNDEFINED`).
    Undefined,
}

impl<T> Outcome<T> {
    /// The completed value, `None` for `Undefined`.
    pub fn completed(self) -> Option<T> {
        match self {
            Outcome::Completed(t) => Some(t),
            Outcome::Undefined => None,
        }
    }
}

/// The world all the non-null requests belong to (`None` if all are null).
///
/// # Errors
/// [`ApiError::MixedWorlds`].
pub(crate) fn common_world(requests: &[Request]) -> Result<Option<Arc<Shared>>> {
    let mut world: Option<&Arc<Shared>> = None;
    for r in requests {
        if let Some(c) = &r.comm {
            match world {
                None => world = Some(&c.shared),
                Some(w) if Arc::ptr_eq(w, &c.shared) => {}
                Some(_) => return Err(ApiError::MixedWorlds.into()),
            }
        }
    }
    Ok(world.cloned())
}

/// Runs `f` on this thread's scratch vector of core handles, cleared (no
/// allocation once it has grown to the longest list).
fn scratch<R>(f: impl FnOnce(&mut Vec<ferry_core::Request>) -> R) -> R {
    SCRATCH.with(|scratch| {
        // A nested call (none exists today) would find the scratch borrowed:
        // fall back to a fresh vector rather than panic.
        let mut fresh = Vec::new();
        let mut guard = scratch.try_borrow_mut();
        let hs = match guard.as_deref_mut() {
            Ok(hs) => hs,
            Err(_) => &mut fresh,
        };
        hs.clear();
        f(hs)
    })
}

/// Runs `f` on `requests`' core handles (in the scratch vector), then
/// writes the handles back (completed ones became null).
fn with_handles<R>(
    requests: &mut [Request],
    f: impl FnOnce(&mut Vec<ferry_core::Request>, &mut [Request]) -> R,
) -> R {
    scratch(|hs| {
        hs.extend(requests.iter().map(|r| r.handle));
        let r = f(hs, requests);
        write_back(requests, hs);
        r
    })
}

/// [`with_handles`] for calls that change no handle.
fn with_handles_ref<R>(requests: &[Request], f: impl FnOnce(&[ferry_core::Request]) -> R) -> R {
    scratch(|hs| {
        hs.extend(requests.iter().map(|r| r.handle));
        f(hs)
    })
}

fn write_back(requests: &mut [Request], handles: &[ferry_core::Request]) {
    for (r, h) in requests.iter_mut().zip(handles) {
        r.handle = *h;
    }
}

#[inline]
fn finish(r: &mut Request, c: ferry_core::Completion) -> Completion {
    let ready = r.take_ready();
    Completion::from_core(r.comm.as_deref(), c, ready, r.origin)
}

/// `wait_all_into`'s completions, pushed in order onto `out`.
struct Into<'a> {
    requests: &'a mut [Request],
    out: &'a mut Vec<Completion>,
}

impl ferry_core::engine::Taker for Into<'_> {
    #[inline]
    fn plain(&mut self, i: usize, status: Status, buf: Option<Buf>) {
        let r = &mut self.requests[i];
        let buf = buf.or_else(|| r.take_ready());
        self.out
            .push(Completion::plain(r.comm.as_deref(), status, buf, r.origin));
    }

    #[inline]
    fn other(&mut self, i: usize, completion: ferry_core::Completion) {
        self.out.push(finish(&mut self.requests[i], completion));
    }
}

fn status_of(r: &Request, s: Status) -> Status {
    r.comm.as_ref().map_or(s, |c| c.status(s))
}

// Without a world, every request is null or EMPTY (an EMPTY request holds
// no communicator): EMPTY ones are complete and hand back their buffer, null
// ones are inactive. These settle such a list as the engine would.

fn offline_all(requests: &mut [Request]) -> impl Iterator<Item = Completion> + '_ {
    requests.iter_mut().map(Request::take_trivial)
}

fn offline_any(requests: &mut [Request]) -> Outcome<(usize, Completion)> {
    match requests.iter().position(Request::is_empty) {
        Some(i) => Outcome::Completed((i, requests[i].take_trivial())),
        None => Outcome::Undefined,
    }
}

fn offline_some(requests: &mut [Request]) -> Outcome<Vec<(usize, Completion)>> {
    let done: Vec<_> = requests
        .iter_mut()
        .enumerate()
        .filter(|(_, r)| r.is_empty())
        .map(|(i, r)| (i, r.take_trivial()))
        .collect();
    if done.is_empty() {
        Outcome::Undefined
    } else {
        Outcome::Completed(done)
    }
}

fn offline_status_some(requests: &[Request]) -> Outcome<Vec<(usize, Status)>> {
    let done: Vec<_> = (0..requests.len())
        .filter(|&i| requests[i].is_empty())
        .map(|i| (i, Status::EMPTY))
        .collect();
    if done.is_empty() {
        Outcome::Undefined
    } else {
        Outcome::Completed(done)
    }
}

/// `MPI_Waitall`: blocks until every request is complete, then completes
/// them all; one [`Completion`] per request, in order.
///
/// # Errors
/// [`ApiError::MixedWorlds`], a stale handle (nothing is completed then),
/// a fatal device error, or the world was finalized.
pub fn wait_all(requests: &mut [Request]) -> Result<Vec<Completion>> {
    let mut out = Vec::with_capacity(requests.len());
    wait_all_into(requests, &mut out)?;
    Ok(out)
}

thread_local! {
    /// Per-thread scratch for [`wait_all_into`]: the core handles, kept
    /// between calls so that a steady loop allocates nothing.
    static SCRATCH: std::cell::RefCell<Vec<ferry_core::Request>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`wait_all`] into a caller-owned vector (cleared first), for loops that
/// must not allocate: with `out` reused, a steady `isend`/`irecv`/
/// `wait_all_into` loop makes no allocation after its first round.
///
/// # Errors
/// As for [`wait_all`].
pub fn wait_all_into(requests: &mut [Request], out: &mut Vec<Completion>) -> Result<()> {
    out.clear();
    let Some(shared) = common_world(requests)? else {
        out.extend(offline_all(requests));
        return Ok(());
    };
    // Each completion goes straight into `out` (no vector of core
    // completions in between: a window of 64 moved 128-byte values twice
    // more per request).
    with_handles(requests, |hs, requests| {
        let mut cursor = None;
        block_on(&shared, |e| {
            let mut into = Into {
                requests: &mut *requests,
                out: &mut *out,
            };
            Ok(e.waitall_step(hs, &mut cursor, &mut into)?.then_some(()))
        })
    })
}

/// `MPI_Testall`: if every request is complete, completes them all;
/// otherwise completes none and returns `None`. Progresses once.
///
/// # Errors
/// As for [`wait_all`].
pub fn test_all(requests: &mut [Request]) -> Result<Option<Vec<Completion>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(Some(offline_all(requests).collect()));
    };
    let mut out = Vec::with_capacity(requests.len());
    let done = with_handles(requests, |hs, _| -> Result<bool> {
        Ok(shared.lock()?.engine()?.testall(hs, &mut out)?)
    })?;
    if !done {
        return Ok(None);
    }
    Ok(Some(
        out.into_iter()
            .zip(requests.iter_mut())
            .map(|(c, r)| finish(r, c))
            .collect(),
    ))
}

fn any_outcome(requests: &mut [Request], any: ferry_core::Any) -> Outcome<(usize, Completion)> {
    match any {
        ferry_core::Any::Completed { index, completion } => {
            Outcome::Completed((index, finish(&mut requests[index], completion)))
        }
        _ => Outcome::Undefined,
    }
}

/// `MPI_Waitany`: blocks until one active request completes and completes
/// it: `(index, completion)`.
///
/// # Errors
/// As for [`wait_all`].
pub fn wait_any(requests: &mut [Request]) -> Result<Outcome<(usize, Completion)>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(offline_any(requests));
    };
    let r = with_handles(requests, |hs, _| block_on(&shared, |e| e.testany(hs)));
    Ok(any_outcome(requests, r?))
}

/// `MPI_Testany`: progresses once; completes one complete active request
/// if there is one (`None` if none is complete).
///
/// # Errors
/// As for [`wait_all`].
pub fn test_any(requests: &mut [Request]) -> Result<Option<Outcome<(usize, Completion)>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(Some(offline_any(requests)));
    };
    let r = with_handles(requests, |hs, _| -> Result<_> {
        Ok(shared.lock()?.engine()?.testany(hs)?)
    });
    Ok(r?.map(|any| any_outcome(requests, any)))
}

fn some_outcome(
    requests: &mut [Request],
    count: Outcount,
    out: Vec<(usize, ferry_core::Completion)>,
) -> Outcome<Vec<(usize, Completion)>> {
    match count {
        Outcount::Undefined => Outcome::Undefined,
        Outcount::Count(_) => Outcome::Completed(
            out.into_iter()
                .map(|(i, c)| (i, finish(&mut requests[i], c)))
                .collect(),
        ),
    }
}

/// `MPI_Waitsome`: blocks until at least one active request completes,
/// then completes every complete one: `(index, completion)` pairs.
///
/// # Errors
/// As for [`wait_all`].
pub fn wait_some(requests: &mut [Request]) -> Result<Outcome<Vec<(usize, Completion)>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(offline_some(requests));
    };
    let mut out = Vec::new();
    let r = with_handles(requests, |hs, _| {
        block_on(&shared, |e| {
            Ok(match e.testsome(hs, &mut out)? {
                Outcount::Count(0) => None,
                c => Some(c),
            })
        })
    });
    Ok(some_outcome(requests, r?, out))
}

/// `MPI_Testsome`: progresses once and completes every complete active
/// request (possibly none).
///
/// # Errors
/// As for [`wait_all`].
pub fn test_some(requests: &mut [Request]) -> Result<Outcome<Vec<(usize, Completion)>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(offline_some(requests));
    };
    let mut out = Vec::new();
    let r = with_handles(requests, |hs, _| -> Result<_> {
        Ok(shared.lock()?.engine()?.testsome(hs, &mut out)?)
    });
    Ok(some_outcome(requests, r?, out))
}

/// `MPI_Request_get_status_all`: every status if all are complete (`None`
/// otherwise). Completes and frees nothing; progresses once if needed.
///
/// # Errors
/// As for [`wait_all`].
pub fn get_status_all(requests: &[Request]) -> Result<Option<Vec<Status>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(Some(vec![Status::EMPTY; requests.len()]));
    };
    let mut out = Vec::with_capacity(requests.len());
    let all = with_handles_ref(requests, |hs| -> Result<bool> {
        Ok(shared.lock()?.engine()?.get_status_all(hs, &mut out)?)
    })?;
    if !all {
        return Ok(None);
    }
    Ok(Some(
        out.into_iter()
            .zip(requests)
            .map(|(s, r)| status_of(r, s))
            .collect(),
    ))
}

/// `MPI_Request_get_status_any`: a complete active request's index and
/// status (`None` if none is complete). Completes and frees nothing.
///
/// # Errors
/// As for [`wait_all`].
pub fn get_status_any(requests: &[Request]) -> Result<Option<Outcome<(usize, Status)>>> {
    let Some(shared) = common_world(requests)? else {
        let first = requests.iter().position(Request::is_empty);
        return Ok(Some(first.map_or(Outcome::Undefined, |i| {
            Outcome::Completed((i, Status::EMPTY))
        })));
    };
    let found = with_handles_ref(requests, |hs| -> Result<_> {
        Ok(shared.lock()?.engine()?.get_status_any(hs)?)
    })?;
    Ok(found.map(|s| match s {
        StatusAny::Completed { index, status } => {
            Outcome::Completed((index, status_of(&requests[index], status)))
        }
        _ => Outcome::Undefined,
    }))
}

/// `MPI_Request_get_status_some`: `(index, status)` of every complete
/// active request. Completes and frees nothing.
///
/// # Errors
/// As for [`wait_all`].
pub fn get_status_some(requests: &[Request]) -> Result<Outcome<Vec<(usize, Status)>>> {
    let Some(shared) = common_world(requests)? else {
        return Ok(offline_status_some(requests));
    };
    let mut out = Vec::new();
    let count = with_handles_ref(requests, |hs| -> Result<_> {
        Ok(shared.lock()?.engine()?.get_status_some(hs, &mut out)?)
    })?;
    match count {
        Outcount::Undefined => Ok(Outcome::Undefined),
        Outcount::Count(_) => Ok(Outcome::Completed(
            out.into_iter()
                .map(|(i, s)| (i, status_of(&requests[i], s)))
                .collect(),
        )),
    }
}
