//! Giving up on a request: `MPI_Request_free` (the operation goes on in
//! the background) and `MPI_Cancel` (a receive that has not matched
//! completes cancelled).

use crate::abi::class::*;
use crate::abi::MPI_REQUEST_NULL;
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::request::handle::{bad_request, give_back, lend, lend_live, ReqHandle};
use crate::request::object::State;
use crate::state::rt;

/// `MPI_Request_free`: a pending operation goes on in the background
/// (a persistent one is freed once its activation completes).
pub(crate) fn request_free(mut request: Out<'_, usize>) -> Res {
    let h = request.get()?;
    let rt = match ReqHandle::of(h) {
        ReqHandle::Null => {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "MPI_REQUEST_NULL cannot be freed",
            ));
        }
        ReqHandle::Empty => return request.set(MPI_REQUEST_NULL),
        _ => rt()?,
    };
    let mut obj = match ReqHandle::of(h) {
        ReqHandle::Direct(r) => lend_live(rt, r)?,
        _ => rt.requests().with(|t| t.remove(h))?.map_err(bad_request)?,
    };
    obj.promote(rt);
    if let State::Greq(g) = &obj.state {
        g.release(obj.comm)?;
        return request.set(MPI_REQUEST_NULL);
    }
    crate::request::orphan::adopt(rt, obj)?;
    request.set(MPI_REQUEST_NULL)
}

/// Cancels a request's pending operation: a receive that has not matched
/// completes cancelled; anything else goes on.
pub(crate) fn cancel_handle(h: usize) -> Res {
    if let Some(r) = crate::request::greq::cancel(h) {
        return r;
    }
    let rt = rt()?;
    // (Cancelling a stale engine handle does nothing: a direct one is
    // checked first.)
    let obj = match ReqHandle::of(h) {
        ReqHandle::Direct(r) => lend_live(rt, r),
        _ => lend(rt, h),
    };
    let obj = match obj {
        Ok(o) => o,
        Err(f) => {
            // Another thread is completing it (MULTIPLE): cancel through its
            // registered canceller.
            if let Some(c) = crate::request::waiting::canceller(h) {
                return c.cancel().map_err(Fail::from);
            }
            return Err(f);
        }
    };
    let r = match &obj.state {
        State::Active(req) => req.cancel().map_err(|e| Fail::from(e).on(obj.comm)),
        State::Polled(p) => p.cancel().map_err(|f| f.on(obj.comm)),
        _ => Ok(()),
    };
    give_back(rt, h, obj)?;
    r
}

/// `MPI_Cancel`.
pub(crate) fn cancel(request: Out<'_, usize>) -> Res {
    match ReqHandle::of(request.get()?) {
        ReqHandle::Null => Err(bad_request(crate::handle::BadHandle::Foreign)),
        // Complete already: nothing to cancel.
        ReqHandle::Empty => Ok(()),
        _ => cancel_handle(request.get()?),
    }
}
