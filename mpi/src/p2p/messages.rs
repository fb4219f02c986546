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

use std::ffi::{c_int, c_void};

use ferry::{Comm, SendMode};

use crate::datatype::buf::{recv_data, send_data, RecvData, SendData};

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::raw::{put, put_status};
use crate::request::object::{Report, ReqObj};
use crate::request::post::Post;
use crate::state::{rt, Runtime};

/// Starts a nonblocking send of resolved data.
///
/// # Safety
/// `Raw` data stays valid for reads, and unwritten, until the request
/// completes (MPI's rule for nonblocking sends).
pub(crate) unsafe fn start_send(
    c: &Comm,
    data: SendData,
    dest: c_int,
    tag: c_int,
    mode: SendMode,
) -> Res<ferry::Request> {
    let (dest, tag) = (rank_in(dest), tag_in(tag));
    Ok(match data {
        // SAFETY: forwarded; null only with no bytes.
        SendData::Raw { ptr, len } => unsafe { c.isend_raw(ptr, len, dest, tag, mode)? },
        SendData::Streamed(b) => c.isend_buf(b, None, dest, tag, mode)?,
    })
}

/// Starts a nonblocking receive; the request and its post step.
///
/// # Safety
/// `Raw` memory, and a staged receive's span, stay valid for writes and
/// untouched by anything else until the request completes.
pub(crate) unsafe fn start_recv(
    c: &Comm,
    target: RecvData,
    source: c_int,
    tag: c_int,
) -> Res<(ferry::Request, Post)> {
    let (source, tag) = (rank_in(source), tag_in(tag));
    Ok(match target {
        // SAFETY: forwarded; null only with no bytes.
        RecvData::Raw { ptr, len } => (unsafe { c.irecv_raw(ptr, len, source, tag)? }, Post::None),
        RecvData::Staged { len, unpack } => (
            c.irecv(vec![0u8; len], source, tag)?,
            Post::Unpack(Box::new(unpack)),
        ),
        RecvData::Streamed(b) => (c.irecv_buf(b, None, source, tag)?, Post::None),
    })
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

/// The arguments every MPI send call begins with: `buf, count, datatype,
/// dest, tag, comm`, as the program passed them (the count widened: an
/// `int`, or a `_c` form's `MPI_Count`).
#[derive(Clone, Copy)]
pub(crate) struct SendArgs {
    pub(crate) buf: *const c_void,
    pub(crate) count: i64,
    pub(crate) datatype: usize,
    pub(crate) dest: c_int,
    pub(crate) tag: c_int,
    pub(crate) comm: usize,
}

/// Gathers a send call's leading arguments into a [`SendArgs`].
macro_rules! send_args {
    ($buf:ident, $count:ident, $datatype:ident, $dest:ident, $tag:ident, $comm:ident) => {
        $crate::p2p::messages::SendArgs {
            buf: $buf,
            count: $count.into(),
            datatype: $datatype,
            dest: $dest,
            tag: $tag,
            comm: $comm,
        }
    };
}
#[cfg(test)]
pub(crate) use send_args;

/// The shared body of `MPI_Isend`, `MPI_Issend` and `MPI_Irsend`.
///
/// # Safety
/// MPI's rule for a nonblocking send buffer; `request` is an out-argument.
pub(crate) unsafe fn isend_call(a: SendArgs, request: *mut usize, mode: SendMode) -> Res {
    let rt = rt()?;
    let c = rt.comm(a.comm)?;
    let ty = rt.comm_type(a.datatype)?;
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    // SAFETY: forwarded.
    let data = match unsafe { send_data(a.buf, count_arg(a.count)?, &ty)? } {
        SendData::Raw { ptr, len } if c.comm.has_job_ranks() => {
            let (dest, tag) = (rank_in(a.dest), tag_in(a.tag));
            // SAFETY: forwarded; the request is completed by a completion
            // call, or promoted (see `ReqObj::promote`).
            let r = unsafe { c.comm.isend_raw_request(ptr, len, dest, tag, mode)? };
            // SAFETY: checked non-null; an out-argument.
            return unsafe { put(request, store_raw(rt, r, a.comm)?) };
        }
        data => data,
    };
    // SAFETY: forwarded.
    let req = unsafe { start_send(&c.comm, data, a.dest, a.tag, mode)? };
    // SAFETY: no post step: nothing is written.
    let h = crate::request::handle::store(ReqObj::active(req, a.comm, Post::None))?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(request, h) }
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
    count: c_int,
    buf: *const c_void,
) -> Option<(&Comm, usize)> {
    if comm != crate::abi::MPI_COMM_WORLD || buf.is_null() {
        return None;
    }
    let size = crate::datatype::dense(datatype)?.size;
    // A predefined type's size is at most 64 bytes (a unit test checks
    // it), so a non-negative c_int count times it stays far below
    // isize::MAX: no overflow check.
    let count = usize::try_from(count).ok()?;
    Some((&rt.world_comm.comm, count * size))
}

/// The blocking sends' fast path (the table's `fast`): `plain_world`'s
/// case straight to ferry's slice call, under one guard, with none of the
/// general body's intermediate values (the communicator and datatype
/// references, the resolved buffer). osu_latency's `MPI_Send` takes it.
///
/// # Safety
/// `buf` is valid for reads of the message's data during the call.
#[inline(always)]
unsafe fn send_world(a: SendArgs, mode: SendMode) -> Option<Res> {
    // Not initialized or finalized: the general path reports it.
    let rt = rt().ok()?;
    let (c, len) = plain_world(
        rt,
        a.comm,
        a.datatype,
        c_int::try_from(a.count).ok()?,
        a.buf,
    )?;
    // SAFETY: non-null (checked), and valid for reads of the message's
    // `len` bytes during the call (the caller's promise).
    let bytes = unsafe { std::slice::from_raw_parts(a.buf.cast::<u8>(), len) };
    Some(send_bytes(c, bytes, a.dest, a.tag, mode))
}

/// The general body of the blocking sends.
///
/// # Safety
/// `buf` is valid for reads of the message's data during the call.
pub(crate) unsafe fn send_call(a: SendArgs, mode: SendMode) -> Res {
    let rt = rt()?;
    let c = rt.comm(a.comm)?;
    let ty = rt.comm_type(a.datatype)?;
    // SAFETY: the send buffer, read during this call only.
    let data = unsafe { send_data(a.buf, count_arg(a.count)?, &ty)? };
    // SAFETY: as above; the slice lives until the send completes here.
    if let Some(bytes) = unsafe { data.slice() } {
        return send_bytes(&c.comm, bytes, a.dest, a.tag, mode);
    }
    // SAFETY: as above: the send completes before this returns.
    let s = unsafe { start_send(&c.comm, data, a.dest, a.tag, mode)? };
    ReqObj::active(s, a.comm, Post::None).wait()?.result
}

/// A blocking send of `bytes` in `mode`.
#[inline(always)]
fn send_bytes(c: &Comm, bytes: &[u8], dest: c_int, tag: c_int, mode: SendMode) -> Res {
    let (dest, tag) = (rank_in(dest), tag_in(tag));
    match mode {
        SendMode::Synchronous => c.ssend(bytes, dest, tag)?,
        SendMode::Ready => c.rsend(bytes, dest, tag)?,
        _ => c.send(bytes, dest, tag)?,
    }
    Ok(())
}

/// The blocking sends' fast path, for every mode (see [`send`]).
///
/// # Safety
/// `buf` is valid for reads of the message's data during the call.
#[inline(always)]
pub(crate) unsafe fn send_fast(
    mode: SendMode,
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
) -> Option<Res> {
    // SAFETY: the caller's send buffer.
    unsafe { send_world(send_args!(buf, count, datatype, dest, tag, comm), mode) }
}

/// `MPI_Send`, `MPI_Ssend` and `MPI_Rsend`, and their `_c` forms: one
/// body for every mode (the table's rows name the mode; the count is an
/// `int` or an `MPI_Count`).
///
/// # Safety
/// `buf` is valid for reads of the message's data during the call.
pub(crate) unsafe fn send(
    mode: SendMode,
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
) -> Res {
    // SAFETY: the caller's send buffer.
    unsafe { send_call(send_args!(buf, count, datatype, dest, tag, comm), mode) }
}

/// `MPI_Isend`, `MPI_Issend` and `MPI_Irsend`, and their `_c` forms.
///
/// # Safety
/// MPI's rule for a nonblocking send buffer; `request` is an out-argument.
pub(crate) unsafe fn isend(
    mode: SendMode,
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    request: *mut usize,
) -> Res {
    // SAFETY: forwarded.
    unsafe {
        isend_call(
            send_args!(buf, count, datatype, dest, tag, comm),
            request,
            mode,
        )
    }
}

/// The body of `MPI_Irecv` and `MPI_Irecv_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Irecv`: the caller's buffers and out-arguments.
pub(crate) unsafe fn irecv(
    buf: *mut c_void,
    count: impl Into<i64>,
    datatype: usize,
    source: c_int,
    tag: c_int,
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
    // SAFETY: MPI's nonblocking rule for `buf`.
    let target = match unsafe { recv_data(buf, count_arg(count)?, &ty)? } {
        RecvData::Raw { ptr, len } if c.comm.has_job_ranks() => {
            let (source, tag) = (rank_in(source), tag_in(tag));
            // SAFETY: MPI's nonblocking rule for `buf`; the request is
            // completed by a completion call, or promoted.
            let r = unsafe { c.comm.irecv_raw_request(ptr, len, source, tag)? };
            // SAFETY: checked non-null; an out-argument.
            return unsafe { put(request, store_raw(rt, r, comm)?) };
        }
        target => target,
    };
    // SAFETY: MPI's nonblocking rule for `buf`.
    let (req, post) = unsafe { start_recv(&c.comm, target, source, tag)? };
    // SAFETY: the receive buffer, valid as above.
    let h = crate::request::handle::store(ReqObj::active(req, comm, post))?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(request, h) }
}

/// Receives and waits: the request's report (status and error).
///
/// # Safety
/// `buf` is valid for the received data's writes during the call.
unsafe fn recv_wait(
    comm: usize,
    c: &Comm,
    target: RecvData,
    source: c_int,
    tag: c_int,
) -> Res<Report> {
    // SAFETY: forwarded; the request completes before this returns.
    let (req, post) = unsafe { start_recv(c, target, source, tag)? };
    ReqObj::active(req, comm, post).wait()
}

/// A blocking receive of contiguous bytes into `ptr`, its status written
/// to `status` (which may be `MPI_STATUS_IGNORE`): no request object and
/// no post step.
///
/// # Safety
/// `ptr` is valid for writes of `len` bytes during the call, or null with
/// none; `status` is null or valid for a write.
#[inline(always)]
unsafe fn recv_contiguous(
    c: &Comm,
    ptr: *mut u8,
    len: usize,
    source: c_int,
    tag: c_int,
    status: *mut MpiStatus,
) -> Res {
    // SAFETY: forwarded (the call returns once the receive is complete).
    let s = unsafe { c.recv_raw(ptr, len, rank_in(source), tag_in(tag))? };
    // SAFETY: forwarded.
    unsafe { put_status(status, MpiStatus::from_ferry(&s)) };
    s.error.map_or(Ok(()), |e| Err(Fail::from(e)))
}

/// The body of `MPI_Recv` and `MPI_Recv_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Recv`: the caller's buffers and out-arguments.
pub(crate) unsafe fn recv(
    buf: *mut c_void,
    count: impl Into<i64>,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    status: *mut MpiStatus,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    // SAFETY: the caller's receive buffer; the receive completes
    // before this returns.
    let report = match unsafe { recv_data(buf, count_arg(count)?, &ty)? } {
        RecvData::Raw { ptr, len } => {
            // SAFETY: the caller's receive buffer and status, for the
            // duration of the call.
            return unsafe { recv_contiguous(&c.comm, ptr, len, source, tag, status) };
        }
        // SAFETY: as above.
        staged => unsafe { recv_wait(comm, &c.comm, staged, source, tag)? },
    };
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    report.write_status(&mut unsafe { crate::ffi::args::status_out(status) })
}

/// `MPI_Recv`: a truncated message fills the buffer, sets the status
/// (count = the buffer's size, `MPI_ERROR` = `MPI_ERR_TRUNCATE`) and
/// returns `MPI_ERR_TRUNCATE`. Its fast path: `None` hands the call to [`recv`].
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
#[inline(always)]
pub(crate) unsafe fn recv_fast(
    buf: *mut c_void,
    count: c_int,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    status: *mut MpiStatus,
) -> Option<Res> {
    // The fast path (as `send_world`'s); osu_latency's `MPI_Recv`.
    let rt = rt().ok()?;
    let (c, len) = plain_world(rt, comm, datatype, count, buf.cast_const())?;
    // SAFETY: the caller's receive buffer, non-null (checked), for the
    // duration of the call; `status` is MPI_STATUS_IGNORE or writable.
    Some(unsafe { recv_contiguous(c, buf.cast::<u8>(), len, source, tag, status) })
}

/// The body of `MPI_Sendrecv` and `MPI_Sendrecv_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Sendrecv`: the caller's buffers and out-arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv(
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
    status: *mut MpiStatus,
) -> Res {
    let sendcount: i64 = sendcount.into();
    let recvcount: i64 = recvcount.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let (st, rty) = (rt.comm_type(sendtype)?, rt.comm_type(recvtype)?);
    // SAFETY: the caller's receive buffer; the receive completes
    // before this returns.
    let target = unsafe { recv_data(recvbuf, count_arg(recvcount)?, &rty)? };
    // SAFETY: both buffers are the caller's for the duration of the
    // call, and both requests complete before it returns.
    let data = unsafe { send_data(sendbuf, count_arg(sendcount)?, &st)? };
    // SAFETY: as above.
    let (r, post) = unsafe { start_recv(&c.comm, target, source, recvtag)? };
    let mut r = ReqObj::active(r, comm, post);
    // SAFETY: as above.
    let s = unsafe { start_send(&c.comm, data, dest, sendtag, SendMode::Standard) };
    let sent = s.and_then(|s| ReqObj::active(s, comm, Post::None).wait());
    let got = r.wait()?;
    sent?.result?;
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    got.write_status(&mut unsafe { crate::ffi::args::status_out(status) })
}

/// The body of `MPI_Sendrecv_replace` and `MPI_Sendrecv_replace_c` (whose counts are `MPI_Count`s).
///
/// # Safety
/// As for `MPI_Sendrecv_replace`: the caller's buffers and out-arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv_replace(
    buf: *mut c_void,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: usize,
    status: *mut MpiStatus,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    let n = count_arg(count)?;
    // SAFETY: the caller's buffer, read here before the receive starts.
    let outgoing = unsafe { send_data(buf.cast_const(), n, &ty)?.into_vec() };
    // SAFETY: MPI's rule for the buffer until the receive completes.
    let target = unsafe { recv_data(buf, n, &ty)? };
    // SAFETY: the caller's buffer for the duration of the call; the
    // receive completes before this returns.
    let (r, post) = unsafe { start_recv(&c.comm, target, source, recvtag)? };
    let mut r = ReqObj::active(r, comm, post);
    let sent = c.comm.send(&outgoing, rank_in(dest), tag_in(sendtag));
    let got = r.wait()?;
    sent?;
    // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
    got.write_status(&mut unsafe { crate::ffi::args::status_out(status) })
}
