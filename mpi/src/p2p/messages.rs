//! Point-to-point: the send modes, receives, sendrecv and probes, on any
//! committed datatype (statuses are read in `status`).
//!
//! Contiguous data goes through ferry's raw forms (`isend_raw` /
//! `irecv_raw`) where it lies: the C program's promise that the buffer
//! stays valid until completion is MPI's own rule for nonblocking calls.
//! On a communicator whose ranks are the job's, `MPI_Isend` and
//! `MPI_Irecv` keep only the operation's engine handle (`State::Raw`,
//! completed in place by `request/batch.rs`), the shortest path a small message can take;
//! on `MPI_COMM_WORLD` below `MPI_THREAD_MULTIPLE` that handle is the
//! `MPI_Request` itself, with no table entry (`request/handle.rs`).
//! Other data is packed first or received into a staging vector and
//! unpacked by the request's post step (`buf.rs`). `MPI_PROC_NULL`,
//! `MPI_ANY_SOURCE` and `MPI_ANY_TAG` pass through to ferry, which gives
//! them MPI's meaning (a receive from `MPI_PROC_NULL` completes at once
//! with source `MPI_PROC_NULL`, tag `MPI_ANY_TAG`, count 0).

use std::ffi::c_int;

use ferry::{Comm, SendMode};

use crate::datatype::buf::{recv_data, send_data, Raw, RecvData, SendData};

use crate::abi::MpiStatus;
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf, StatusOut};
use crate::request::object::{Report, ReqObj};
use crate::request::post::Post;
use crate::state::{rt, Runtime};

/// Starts a nonblocking receive; the request and its post step.
pub(crate) fn start_recv(
    c: &Comm,
    target: RecvData,
    source: c_int,
    tag: c_int,
) -> Res<(ferry::Request, Post)> {
    let (req, unpack) = target.start(c, source, tag)?;
    Ok((
        req,
        unpack.map_or(Post::None, |u| Post::Unpack(Box::new(u))),
    ))
}

/// The handle of a raw operation just started: `MPIX_REQUEST_EMPTY` if it
/// completed inside its call, else a direct handle (`request/handle.rs`) where
/// one may name it, else a new table entry.
fn store_raw(rt: &Runtime, r: ferry::RawRequest, comm: usize) -> Res<usize> {
    if r.is_empty() {
        return Ok(crate::abi::MPIX_REQUEST_EMPTY);
    }
    if let Some(h) = crate::request::handle::encode(rt, r, comm) {
        return Ok(h);
    }
    rt.add_request(ReqObj::raw(r, comm))
}

/// Reports a null request pointer before an operation starts, so nothing
/// is left running without a handle.
pub(crate) fn check_request(request: &Out<'_, usize>) -> Res {
    if request.is_null() {
        return Err(Fail::new(
            crate::abi::class::MPI_ERR_ARG,
            "a null request pointer",
        ));
    }
    Ok(())
}

/// The bytes of `count` elements of `datatype` when the blocking calls'
/// common case applies: `comm` is `MPI_COMM_WORLD` (a field of the
/// runtime, its ranks the job's), `datatype` predefined and dense
/// (contiguous from the buffer's start: not a padded pair type, whose
/// padding is not sent), `count` valid and `buf` not null. `None` sends the
/// call down the general path, which checks and reports everything else.
#[inline(always)]
fn plain_world(
    rt: &Runtime,
    comm: usize,
    datatype: usize,
    count: i64,
    buf: usize,
) -> Option<(&Comm, usize)> {
    if comm != crate::abi::MPI_COMM_WORLD || buf == 0 {
        return None;
    }
    let size = crate::datatype::dense(datatype)?.size;
    // A predefined type's size is at most 64 bytes (a unit test checks
    // it), so a non-negative c_int count times it stays far below
    // isize::MAX: no overflow check.
    let count = usize::try_from(c_int::try_from(count).ok()?).ok()?;
    Some((&rt.world_comm.comm, count * size))
}

/// A blocking send of `bytes` in `mode`.
#[inline(always)]
fn send_bytes(c: &Comm, bytes: &[u8], dest: c_int, tag: c_int, mode: SendMode) -> Res {
    let (dest, tag) = (crate::abi::rank_in(dest), crate::abi::tag_in(tag));
    match mode {
        SendMode::Synchronous => c.ssend(bytes, dest, tag)?,
        SendMode::Ready => c.rsend(bytes, dest, tag)?,
        _ => c.send(bytes, dest, tag)?,
    }
    Ok(())
}

/// The blocking sends' fast path (the table's `fast`): `plain_world`'s
/// case straight to ferry's slice call, under one guard, with none of the
/// general body's intermediate values (the communicator and datatype
/// references, the resolved buffer). osu_latency's `MPI_Send` takes it.
#[inline(always)]
pub(crate) fn send_fast(
    mode: SendMode,
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
) -> Option<Res> {
    // Not initialized or finalized: the general path reports it.
    let rt = rt().ok()?;
    let (c, len) = plain_world(rt, comm, datatype, count.into(), buf.addr())?;
    Some(crate::datatype::buf::bytes(buf, len).and_then(|b| send_bytes(c, b, dest, tag, mode)))
}

/// `MPI_Send`, `MPI_Ssend` and `MPI_Rsend`, and their `_c` forms: one
/// body for every mode (the table's rows name the mode; the count is an
/// `int` or an `MPI_Count`).
pub(crate) fn send(
    mode: SendMode,
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    let data = send_data(buf, count_arg(count.into())?, &ty)?;
    if let Some(bytes) = data.slice() {
        return send_bytes(&c.comm, bytes, dest, tag, mode);
    }
    let s = data.start(&c.comm, dest, tag, mode)?;
    ReqObj::active(s, comm, Post::None).wait()?.result
}

/// `MPI_Isend`, `MPI_Issend` and `MPI_Irsend`, and their `_c` forms.
pub(crate) fn isend(
    mode: SendMode,
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    check_request(&request)?;
    let data = match send_data(buf, count_arg(count.into())?, &ty)? {
        SendData::Raw(raw) if c.comm.has_job_ranks() => {
            let r = raw.start_request(&c.comm, dest, tag, mode)?;
            return request.set(store_raw(rt, r, comm)?);
        }
        data => data,
    };
    let req = data.start(&c.comm, dest, tag, mode)?;
    let h = crate::request::handle::store(ReqObj::active(req, comm, Post::None))?;
    request.set(h)
}

/// The body of `MPI_Irecv` and `MPI_Irecv_c` (whose counts are `MPI_Count`s).
pub(crate) fn irecv(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    check_request(&request)?;
    let target = match recv_data(buf, count_arg(count.into())?, &ty)? {
        RecvData::Raw(raw) if c.comm.has_job_ranks() => {
            let r = raw.start_request(&c.comm, source, tag)?;
            return request.set(store_raw(rt, r, comm)?);
        }
        target => target,
    };
    let (req, post) = start_recv(&c.comm, target, source, tag)?;
    let h = crate::request::handle::store(ReqObj::active(req, comm, post))?;
    request.set(h)
}

/// Receives and waits: the request's report (status and error).
fn recv_wait(comm: usize, c: &Comm, target: RecvData, source: c_int, tag: c_int) -> Res<Report> {
    let (req, post) = start_recv(c, target, source, tag)?;
    ReqObj::active(req, comm, post).wait()
}

/// A blocking receive of contiguous bytes, its status written to
/// `status` (which may be `MPI_STATUS_IGNORE`): no request object and no
/// post step.
#[inline(always)]
fn recv_contiguous(
    c: &Comm,
    raw: Raw<*mut u8>,
    source: c_int,
    tag: c_int,
    status: &mut StatusOut<'_>,
) -> Res {
    let s = raw.recv(c, source, tag)?;
    status.set(MpiStatus::from_ferry(&s));
    s.error.map_or(Ok(()), |e| Err(Fail::from(e)))
}

/// The body of `MPI_Recv` and `MPI_Recv_c` (whose counts are `MPI_Count`s).
pub(crate) fn recv(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    mut status: StatusOut<'_>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    let report = match recv_data(buf, count_arg(count.into())?, &ty)? {
        RecvData::Raw(raw) => return recv_contiguous(&c.comm, raw, source, tag, &mut status),
        staged => recv_wait(comm, &c.comm, staged, source, tag)?,
    };
    report.write_status(&mut status)
}

/// `MPI_Recv`: a truncated message fills the buffer, sets the status
/// (count = the buffer's size, `MPI_ERROR` = `MPI_ERR_TRUNCATE`) and
/// returns `MPI_ERR_TRUNCATE`. Its fast path: `None` hands the call to [`recv`].
#[inline(always)]
pub(crate) fn recv_fast(
    buf: RecvBuf,
    count: c_int,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    mut status: StatusOut<'_>,
) -> Option<Res> {
    // The fast path (as `send_fast`'s); osu_latency's `MPI_Recv`.
    let rt = rt().ok()?;
    let (c, len) = plain_world(rt, comm, datatype, count.into(), buf.addr())?;
    Some(Raw::new(buf, len).and_then(|raw| recv_contiguous(c, raw, source, tag, &mut status)))
}

/// The body of `MPI_Sendrecv` and `MPI_Sendrecv_c` (whose counts are `MPI_Count`s).
pub(crate) fn sendrecv(
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
    mut status: StatusOut<'_>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let (st, rty) = (rt.comm_type(sendtype)?, rt.comm_type(recvtype)?);
    let target = recv_data(recvbuf, count_arg(recvcount.into())?, &rty)?;
    let data = send_data(sendbuf, count_arg(sendcount.into())?, &st)?;
    let (r, post) = start_recv(&c.comm, target, source, recvtag)?;
    let mut r = ReqObj::active(r, comm, post);
    let s = data.start(&c.comm, dest, sendtag, SendMode::Standard);
    let sent = s.and_then(|s| ReqObj::active(s, comm, Post::None).wait());
    let got = r.wait()?;
    sent?.result?;
    got.write_status(&mut status)
}

/// The body of `MPI_Sendrecv_replace` and `MPI_Sendrecv_replace_c` (whose counts are `MPI_Count`s).
pub(crate) fn sendrecv_replace(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    mut status: StatusOut<'_>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    let n = count_arg(count.into())?;
    // Read before the receive starts: the buffer is the message too.
    let outgoing = send_data(buf.input(), n, &ty)?.into_vec();
    let target = recv_data(buf, n, &ty)?;
    let (r, post) = start_recv(&c.comm, target, source, recvtag)?;
    let mut r = ReqObj::active(r, comm, post);
    let sent = c.comm.send(
        &outgoing,
        crate::abi::rank_in(dest),
        crate::abi::tag_in(sendtag),
    );
    let got = r.wait()?;
    sent?;
    got.write_status(&mut status)
}
