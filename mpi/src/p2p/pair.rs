//! `MPI_Isendrecv` and `MPI_Isendrecv_replace` (MPI 4.0): a receive and a
//! send started together (the receive first, as `MPI_Sendrecv` does) under
//! one request, complete when both are. Its status is the receive's; a
//! failed send makes the status's error, and the completion's, its class.
//!
//! The request is a [`Polled`] one (`State::Polled`): `MPI_Wait` blocks in ferry on each
//! half; the other completion calls poll it (`ReqObj::poll_pending`), and
//! `MPI_Cancel` cancels both halves.

use std::ffi::c_int;

use ferry::SendMode;

use crate::datatype::buf::{recv_data, send_data};

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::p2p::messages::{check_request, start_recv};
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
fn store(
    comm: usize,
    send: ferry::Request,
    recv: (ferry::Request, Post),
    request: &mut Out<'_, usize>,
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
    request.set(h)
}

/// The body of `MPI_Isendrecv` and `MPI_Isendrecv_c` (whose counts are `MPI_Count`s).
pub(crate) fn isendrecv(
    sendbuf: SendBuf,
    sendcount: impl Into<i64>,
    sendtype: usize,
    dest: c_int,
    sendtag: c_int,
    recvbuf: RecvBuf,
    recvcount: impl Into<i64>,
    recvtype: usize,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let (st, rty) = (rt.comm_type(sendtype)?, rt.comm_type(recvtype)?);
    check_request(&request)?;
    let target = recv_data(recvbuf, count_arg(recvcount.into())?, &rty)?;
    let data = send_data(sendbuf, count_arg(sendcount.into())?, &st)?;
    let recv = start_recv(&c.comm, target, source, recvtag)?;
    let send = match data.start(&c.comm, dest, sendtag, SendMode::Standard) {
        Ok(s) => s,
        Err(f) => {
            let _ = recv.0.cancel();
            return Err(f);
        }
    };
    store(comm, send, recv, &mut request)
}

/// The body of `MPI_Isendrecv_replace` and `MPI_Isendrecv_replace_c` (whose counts are `MPI_Count`s).
pub(crate) fn isendrecv_replace(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    check_request(&request)?;
    let n = count_arg(count.into())?;
    // Read before the receive starts: the buffer is the message too.
    let outgoing = send_data(buf.input(), n, &ty)?.into_vec();
    let target = recv_data(buf, n, &ty)?;
    let recv = start_recv(&c.comm, target, source, recvtag)?;
    let send = match c.comm.isend(outgoing, rank_in(dest), tag_in(sendtag)) {
        Ok(s) => s,
        Err(e) => {
            let _ = recv.0.cancel();
            return Err(Fail::from(e));
        }
    };
    store(comm, send, recv, &mut request)
}
