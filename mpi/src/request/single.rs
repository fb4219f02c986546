//! Completing one request: `MPI_Wait`, `MPI_Test`, `MPI_Request_free`,
//! `MPI_Request_get_status`, and `MPI_Cancel` / `MPI_Test_cancelled`.
//!
//! A request is lent out of its table (its handle stays reserved) while
//! ferry works on it, so no table is held while a thread blocks; it goes
//! back (persistent, or still pending) or is freed (completed) after.
//! `MPI_REQUEST_NULL` completes at once with the empty status, as the
//! standard says; an inactive persistent request likewise, keeping its
//! handle.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::MPIX_REQUEST_EMPTY;
use crate::abi::{MpiStatus, MPI_REQUEST_NULL};
use crate::error::{Fail, Res};
use crate::ffi::raw::{get, put, put_status};
use crate::request::direct;
use crate::request::object::{finish, Report, ReqObj, State};
use crate::request::plain::TestAll;
use crate::state::{rt, Runtime};

/// A bad request handle as a failure.
pub(crate) fn bad_request(b: crate::handle::BadHandle) -> Fail {
    Fail::handle(MPI_ERR_REQUEST, b, "request")
}

/// Lends the request `h` out of its table (a direct one: see `direct.rs`).
#[inline]
pub(crate) fn lend(rt: &Runtime, h: usize) -> Res<ReqObj> {
    if let Some(r) = direct::decode(h) {
        return Ok(direct::lend(rt, r));
    }
    let mut obj = rt.requests.with(|t| t.lend(h))?.map_err(bad_request)?;
    obj.promote(rt);
    Ok(obj)
}

/// Gives a lent request back: kept under its handle if it is pending or
/// persistent, freed otherwise. True if it was freed (the program's handle
/// becomes `MPI_REQUEST_NULL`).
#[inline]
pub(crate) fn give_back(rt: &Runtime, h: usize, obj: ReqObj) -> Res<bool> {
    if direct::is_direct(h) {
        return direct::give_back(obj);
    }
    let spent = obj.inactive() && !obj.persistent();
    if spent {
        rt.requests.with(|t| t.release(h))?;
        drop(obj);
    } else {
        rt.requests.with(|t| t.restore(h, obj))?;
    }
    Ok(spent)
}

/// Completes a lent request, blocking until it is complete.
pub(crate) fn wait_one(obj: &mut ReqObj) -> Res<Report> {
    match &mut obj.state {
        State::Active(req) => {
            let done = req.wait().map_err(|e| Fail::from(e).on(obj.comm))?;
            Ok(finish(obj, done))
        }
        State::Ready(_) => Ok(obj.complete_ready().unwrap_or_else(Report::empty)),
        State::Inactive => Ok(Report::empty()),
        State::Raw(_) => Err(crate::request::object::unpromoted(obj.comm)),
        State::Pair(p) => {
            // Blocks in ferry on each half rather than polling.
            p.wait().map_err(|f| f.on(obj.comm))?;
            obj.poll_pending()?;
            Ok(obj.complete_ready().unwrap_or_else(Report::empty))
        }
        State::Greq(g) => {
            g.wait();
            Ok(obj.complete_ready().unwrap_or_else(Report::empty))
        }
        State::Idup(_) | State::Flush(_) => {
            while obj.poll_pending()? {
                std::thread::yield_now();
            }
            Ok(obj.complete_ready().unwrap_or_else(Report::empty))
        }
    }
}

/// Tests a lent request: its report if it completed.
pub(crate) fn test_one(obj: &mut ReqObj) -> Res<Option<Report>> {
    match &mut obj.state {
        State::Active(req) => match req.test().map_err(|e| Fail::from(e).on(obj.comm))? {
            Some(done) => Ok(Some(finish(obj, done))),
            None => Ok(None),
        },
        State::Ready(_) => Ok(obj.complete_ready()),
        State::Inactive => Ok(Some(Report::empty())),
        State::Raw(_) => Err(crate::request::object::unpromoted(obj.comm)),
        State::Idup(_) | State::Pair(_) | State::Greq(_) | State::Flush(_) => {
            if obj.poll_pending()? {
                return Ok(None);
            }
            Ok(obj.complete_ready())
        }
    }
}

/// The handle of a request just made: `MPIX_REQUEST_EMPTY` for an
/// operation that finished inside its call (its post step run now, at
/// once), else a new table entry.
///
/// # Safety
/// As for the post step (`Post::run`): the operation's buffers are valid.
pub(crate) unsafe fn empty_or_store(obj: ReqObj) -> Res<usize> {
    let rt = rt()?;
    let crate::request::object::State::Active(req) = &obj.state else {
        return rt.add_request(obj);
    };
    // An ARecv's buffer goes out through its status, which an empty
    // request has none of.
    if !req.is_empty() || obj.persistent() || matches!(obj.post, crate::request::post::Post::Arecv)
    {
        return rt.add_request(obj);
    }
    if obj.post.writes_buffers() {
        let mut obj = obj;
        wait_one(&mut obj)?.result?;
    }
    Ok(crate::abi::MPIX_REQUEST_EMPTY)
}

/// `MPI_Wait`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn wait(request: *mut usize, status: *mut MpiStatus) -> Res {
    // SAFETY: in/out argument.
    let h = unsafe { get(request)? };
    if h == MPI_REQUEST_NULL || h == MPIX_REQUEST_EMPTY {
        // SAFETY: as above; MPI_STATUS_IGNORE (null) or a status.
        unsafe {
            put_status(status, MpiStatus::EMPTY);
            if h == MPIX_REQUEST_EMPTY {
                put(request, MPI_REQUEST_NULL)?;
            }
        }
        return Ok(());
    }
    let rt = rt()?;
    let mut one = h;
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    if let Some(r) = crate::request::plain::wait(rt, &mut one, unsafe { status.as_mut() }) {
        // SAFETY: in/out argument.
        unsafe { put(request, one)? };
        return r;
    }
    let mut obj = lend(rt, h)?;
    let report = {
        let _waiting = match &obj.state {
            State::Active(r) => crate::request::waiting::enter(rt, std::iter::once((h, r))),
            _ => None,
        };
        wait_one(&mut obj)
    };
    if give_back(rt, h, obj)? {
        // SAFETY: as above.
        unsafe { put(request, MPI_REQUEST_NULL)? };
    }
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    unsafe { report?.write(status) }
}

/// `MPI_Test`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn test(request: *mut usize, flag: *mut c_int, status: *mut MpiStatus) -> Res {
    // SAFETY: in/out argument.
    let h = unsafe { get(request)? };
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    if h == MPI_REQUEST_NULL || h == MPIX_REQUEST_EMPTY {
        // SAFETY: flag checked; status is MPI_STATUS_IGNORE or valid;
        // `request` is an in/out argument.
        unsafe {
            put_status(status, MpiStatus::EMPTY);
            if h == MPIX_REQUEST_EMPTY {
                put(request, MPI_REQUEST_NULL)?;
            }
            return put(flag, 1);
        }
    }
    let rt = rt()?;
    let mut one = h;
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    match crate::request::plain::test(rt, &mut one, unsafe { status.as_mut() }) {
        None => {}
        // SAFETY: checked non-null.
        Some(TestAll::Incomplete) => return unsafe { put(flag, 0) },
        Some(TestAll::Complete(r)) => {
            // SAFETY: in/out argument; checked non-null.
            unsafe {
                put(request, one)?;
                put(flag, 1)?;
            }
            return r;
        }
        Some(TestAll::Failed(f)) => return Err(f),
    }
    let mut obj = lend(rt, h)?;
    let tested = test_one(&mut obj);
    if give_back(rt, h, obj)? {
        // SAFETY: as above.
        unsafe { put(request, MPI_REQUEST_NULL)? };
    }
    match tested? {
        // SAFETY: checked non-null.
        None => unsafe { put(flag, 0) },
        Some(report) => {
            // SAFETY: checked flag; status is IGNORE or valid.
            unsafe {
                put(flag, 1)?;
                report.write(status)
            }
        }
    }
}

/// `MPI_Request_free`: a pending operation goes on in the background
/// (a persistent one is freed once its activation completes).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn request_free(request: *mut usize) -> Res {
    // SAFETY: in/out argument.
    let h = unsafe { get(request)? };
    if h == MPI_REQUEST_NULL {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_REQUEST_NULL cannot be freed",
        ));
    }
    if h == MPIX_REQUEST_EMPTY {
        // SAFETY: as above.
        return unsafe { put(request, MPI_REQUEST_NULL) };
    }
    let rt = rt()?;
    let mut obj = match direct::decode(h) {
        Some(r) => direct::lend_live(rt, r)?,
        None => rt.requests.with(|t| t.remove(h))?.map_err(bad_request)?,
    };
    obj.promote(rt);
    if let State::Greq(g) = &obj.state {
        return g.release(obj.comm).and_then(|()| {
            // SAFETY: as above.
            unsafe { put(request, MPI_REQUEST_NULL) }
        });
    }
    crate::request::orphan::adopt(rt, obj)?;
    // SAFETY: as above.
    unsafe { put(request, MPI_REQUEST_NULL) }
}

/// The status of a lent request if it is complete, without ending it. A
/// request with a post step is completed in ferry (so that its data is in
/// the program's buffer when the flag says complete) and kept as
/// [`State::Ready`] until a completion call reports it.
pub(crate) fn peek_one(obj: &mut ReqObj) -> Res<Option<MpiStatus>> {
    match &mut obj.state {
        State::Active(req) if !obj.post.writes_buffers() => {
            let s = req.get_status().map_err(|e| Fail::from(e).on(obj.comm))?;
            Ok(s.map(|s| MpiStatus::from_ferry(&s)))
        }
        State::Active(req) => match req.test().map_err(|e| Fail::from(e).on(obj.comm))? {
            Some(done) => {
                let report = finish(obj, done);
                obj.state = State::Ready(report.status);
                Ok(Some(report.status))
            }
            None => Ok(None),
        },
        State::Ready(s) => Ok(Some(*s)),
        State::Inactive => Ok(Some(MpiStatus::EMPTY)),
        State::Raw(_) => Err(crate::request::object::unpromoted(obj.comm)),
        State::Idup(_) | State::Flush(_) => Ok((!obj.poll_pending()?).then_some(MpiStatus::EMPTY)),
        State::Pair(_) => match obj.poll_pending()? {
            true => Ok(None),
            false => peek_one(obj),
        },
        State::Greq(g) => g.query().map_err(|f| f.on(obj.comm)),
    }
}

/// `MPI_Request_get_status`: completion without freeing.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn request_get_status(
    request: usize,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    let found = if request == MPI_REQUEST_NULL || request == MPIX_REQUEST_EMPTY {
        Some(MpiStatus::EMPTY)
    } else {
        let rt = rt()?;
        let mut obj = lend(rt, request)?;
        let found = peek_one(&mut obj);
        give_back(rt, request, obj)?;
        found?
    };
    if let Some(s) = found {
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, s) };
    }
    // SAFETY: checked non-null.
    unsafe { put(flag, c_int::from(found.is_some())) }
}
