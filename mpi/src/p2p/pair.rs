//! `MPI_Isendrecv` and `MPI_Isendrecv_replace` (MPI 4.0): a receive and a
//! send started together (the receive first, as `MPI_Sendrecv` does) under
//! one request, complete when both are. Its status is the receive's; a
//! failed send makes the status's error, and the completion's, its class.
//!
//! The request is a [`Polled`] one (`State::Polled`): `MPI_Wait` blocks in ferry on each
//! half; the other completion calls poll it (`ReqObj::poll_pending`), and
//! `MPI_Cancel` cancels both halves.

use std::ffi::{c_int, c_void};

use ferry::SendMode;

use crate::datatype::buf::{recv_data, send_data};

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::raw::put;
use crate::p2p::messages::{start_recv, start_send};
use crate::request::object::{Polled, Report, ReqObj, State};
use crate::request::post::Post;
use crate::state::rt;

/// The two halves of an `MPI_Isendrecv`, and their reports once done.
#[derive(Debug)]
pub(crate) struct Pair {
    send: ReqObj,
    recv: ReqObj,
    sent: Option<Report>,
    got: Option<Report>,
}

impl Polled for Pair {
    /// Tests the halves not complete yet; the status once both are.
    fn poll(&mut self) -> Res<Option<MpiStatus>> {
        if self.sent.is_none() {
            self.sent = self.send.test()?;
        }
        if self.got.is_none() {
            self.got = self.recv.test()?;
        }
        Ok(self.status())
    }

    /// Waits for both halves, blocking in ferry on each.
    fn wait(&mut self) -> Res<MpiStatus> {
        if self.sent.is_none() {
            self.sent = Some(self.send.wait()?);
        }
        if self.got.is_none() {
            self.got = Some(self.recv.wait()?);
        }
        self.status().ok_or_else(|| {
            Fail::new(
                crate::abi::class::MPI_ERR_INTERN,
                "internal error (please report): a sendrecv pair without both reports",
            )
        })
    }

    /// Cancels both halves (what has completed stays complete).
    fn cancel(&self) -> Res {
        for half in [&self.send, &self.recv] {
            if let State::Active(req) = &half.state {
                req.cancel().map_err(Fail::from)?;
            }
        }
        Ok(())
    }

    /// Its receive half may have a post step of its own.
    fn outlives_free(&self) -> bool {
        true
    }
}

impl Pair {
    /// The pair's status once both halves reported.
    fn status(&self) -> Option<MpiStatus> {
        let (Some(sent), Some(got)) = (&self.sent, &self.got) else {
            return None;
        };
        let mut status = got.status;
        if let (MPI_SUCCESS, Err(f)) = (status.error, &got.result) {
            status.error = f.class;
        }
        if let (MPI_SUCCESS, Err(f)) = (status.error, &sent.result) {
            status.error = f.class;
        }
        Some(status)
    }
}

/// Stores the pair's request and writes its handle.
///
/// # Safety
/// `request` is null or valid for a write.
unsafe fn store(
    comm: usize,
    send: ferry::Request,
    recv: (ferry::Request, Post),
    request: *mut usize,
) -> Res {
    let pair = Pair {
        send: ReqObj::active(send, comm, Post::None),
        recv: ReqObj::active(recv.0, comm, recv.1),
        sent: None,
        got: None,
    };
    let obj = ReqObj {
        state: State::Polled(Box::new(pair)),
        comm,
        post: Post::None,
        persist: None,
    };
    let h = rt()?.add_request(obj)?;
    // SAFETY: the caller's out-argument (null is reported).
    unsafe { put(request, h) }
}

/// The body of `MPI_Isendrecv` and `MPI_Isendrecv_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Isendrecv`: the caller's buffers and out-arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv(
    sendbuf: *const c_void,
    sendcount: impl Into<i64>,
    sendtype: usize,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: impl Into<i64>,
    recvtype: usize,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    request: *mut usize,
) -> Res {
    let sendcount: i64 = sendcount.into();
    let recvcount: i64 = recvcount.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let (st, rty) = (rt.comm_type(sendtype)?, rt.comm_type(recvtype)?);
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    // SAFETY: MPI's rule for a nonblocking receive buffer.
    let target = unsafe { recv_data(recvbuf, count_arg(recvcount)?, &rty)? };
    // SAFETY: MPI's rule for nonblocking buffers: both stay valid and
    // untouched until the request completes.
    let data = unsafe { send_data(sendbuf, count_arg(sendcount)?, &st)? };
    // SAFETY: as above.
    let recv = unsafe { start_recv(&c.comm, target, source, recvtag)? };
    // SAFETY: as above.
    let send = match unsafe { start_send(&c.comm, data, dest, sendtag, SendMode::Standard) } {
        Ok(s) => s,
        Err(f) => {
            let _ = recv.0.cancel();
            return Err(f);
        }
    };
    // SAFETY: checked non-null.
    unsafe { store(comm, send, recv, request) }
}

/// The body of `MPI_Isendrecv_replace` and `MPI_Isendrecv_replace_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Isendrecv_replace`: the caller's buffers and out-arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv_replace(
    buf: *mut c_void,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    request: *mut usize,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let n = count_arg(count)?;
    // SAFETY: the caller's buffer, read here before the receive starts.
    let outgoing = unsafe { send_data(buf.cast_const(), n, &ty)?.into_vec() };
    // SAFETY: MPI's rule for the buffer until the receive completes.
    let target = unsafe { recv_data(buf, n, &ty)? };
    // SAFETY: MPI's rule for a nonblocking buffer: valid and untouched
    // until the request completes.
    let recv = unsafe { start_recv(&c.comm, target, source, recvtag)? };
    let send = match c.comm.isend(outgoing, rank_in(dest), tag_in(sendtag)) {
        Ok(s) => s,
        Err(e) => {
            let _ = recv.0.cancel();
            return Err(Fail::from(e));
        }
    };
    // SAFETY: checked non-null.
    unsafe { store(comm, send, recv, request) }
}
