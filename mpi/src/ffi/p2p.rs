//! Point-to-point on contiguous predefined datatypes: the send modes,
//! receives, sendrecv, probes and `MPI_Get_count`.
//!
//! Blocking sends use ferry's safe slice forms. Nonblocking operations use
//! ferry's raw forms (`isend_raw`/`irecv_raw`): the C program's promise
//! that the buffer stays valid until completion is MPI's own rule for
//! nonblocking calls. `MPI_PROC_NULL`, `MPI_ANY_SOURCE` and `MPI_ANY_TAG`
//! pass through to ferry, which gives them MPI's meaning (a receive from
//! `MPI_PROC_NULL` completes at once with source `MPI_PROC_NULL`, tag
//! `MPI_ANY_TAG`, count 0).

use std::ffi::{c_int, c_void};

use ferry::{Comm, SendMode};

use super::post::Post;
use super::req::ReqObj;
use super::{bytes, check_buf, get, mpi_fn, put, put_status};
use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::datatype::{self, count_of, int_count};
use crate::error::{Fail, Res};
use crate::state::rt;

/// Bytes of `count` elements of `datatype`.
#[inline]
fn size(count: c_int, datatype: usize) -> Res<usize> {
    datatype::bytes(i64::from(count), datatype::lookup(datatype)?)
}

/// The status's error as a failure (truncation, a dead peer), after the
/// status was written.
fn status_result(s: &ferry::Status) -> Res {
    match s.error {
        None => Ok(()),
        Some(e) => Err(e.into()),
    }
}

/// Starts a nonblocking send.
///
/// # Safety
/// `buf` is valid for reads of `len` bytes until the request completes.
unsafe fn isend(
    c: &Comm,
    buf: *const c_void,
    len: usize,
    dest: c_int,
    tag: c_int,
    mode: SendMode,
) -> Res<ferry::Request> {
    check_buf(buf.cast(), len)?;
    // SAFETY: forwarded (MPI's rule for nonblocking sends); null only with 0.
    Ok(unsafe { c.isend_raw(buf.cast(), len, rank_in(dest), tag_in(tag), mode)? })
}

/// Starts a nonblocking receive.
///
/// # Safety
/// `buf` is valid for reads and writes of `len` bytes, touched by nothing
/// else, until the request completes.
unsafe fn irecv(
    c: &Comm,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
) -> Res<ferry::Request> {
    check_buf(buf.cast_const().cast(), len)?;
    // SAFETY: forwarded (MPI's rule for nonblocking receives).
    Ok(unsafe { c.irecv_raw(buf.cast(), len, rank_in(source), tag_in(tag))? })
}

/// The shared body of `MPI_Isend`, `MPI_Issend` and `MPI_Irsend`.
///
/// # Safety
/// As for [`isend`]; `request` is an out-argument.
#[allow(clippy::too_many_arguments)]
unsafe fn isend_call(
    buf: *const c_void,
    count: c_int,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    request: *mut usize,
    mode: SendMode,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let len = size(count, datatype)?;
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    // SAFETY: forwarded.
    let req = unsafe { isend(&c.comm, buf, len, dest, tag, mode)? };
    let h = rt.add_request(ReqObj::active(req, comm, Post::None))?;
    // SAFETY: checked non-null above; an out-argument.
    unsafe { put(request, h) }
}

/// The shared body of the blocking sends.
///
/// # Safety
/// `buf` is valid for reads of the message's bytes during the call.
unsafe fn send_call(
    buf: *const c_void,
    count: c_int,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    mode: SendMode,
) -> Res {
    let c = rt()?.comm(comm)?;
    let len = size(count, datatype)?;
    // SAFETY: the send buffer, read during this call only.
    let data = unsafe { bytes(buf.cast(), len)? };
    match mode {
        SendMode::Synchronous => c.comm.ssend(data, rank_in(dest), tag_in(tag))?,
        SendMode::Ready => c.comm.rsend(data, rank_in(dest), tag_in(tag))?,
        _ => c.comm.send(data, rank_in(dest), tag_in(tag))?,
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Send`.
    MPI_Send / PMPI_Send [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize) {
        // SAFETY: the caller's send buffer.
        unsafe { send_call(buf, count, datatype, dest, tag, comm, SendMode::Standard) }
    }
}

mpi_fn! {
    /// `MPI_Ssend`.
    MPI_Ssend / PMPI_Ssend [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize) {
        // SAFETY: the caller's send buffer.
        unsafe { send_call(buf, count, datatype, dest, tag, comm, SendMode::Synchronous) }
    }
}

mpi_fn! {
    /// `MPI_Rsend`.
    MPI_Rsend / PMPI_Rsend [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize) {
        // SAFETY: the caller's send buffer.
        unsafe { send_call(buf, count, datatype, dest, tag, comm, SendMode::Ready) }
    }
}

mpi_fn! {
    /// `MPI_Isend`.
    MPI_Isend / PMPI_Isend [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: MPI's nonblocking rule for `buf`; `request` out-argument.
        unsafe { isend_call(buf, count, datatype, dest, tag, comm, request, SendMode::Standard) }
    }
}

mpi_fn! {
    /// `MPI_Issend`.
    MPI_Issend / PMPI_Issend [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: MPI's nonblocking rule for `buf`; `request` out-argument.
        unsafe { isend_call(buf, count, datatype, dest, tag, comm, request, SendMode::Synchronous) }
    }
}

mpi_fn! {
    /// `MPI_Irsend`.
    MPI_Irsend / PMPI_Irsend [comm] (buf: *const c_void, count: c_int, datatype: usize, dest: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: MPI's nonblocking rule for `buf`; `request` out-argument.
        unsafe { isend_call(buf, count, datatype, dest, tag, comm, request, SendMode::Ready) }
    }
}

mpi_fn! {
    /// `MPI_Irecv`.
    MPI_Irecv / PMPI_Irecv [comm] (buf: *mut c_void, count: c_int, datatype: usize, source: c_int, tag: c_int, comm: usize, request: *mut usize) {
        let rt = rt()?;
        let c = rt.comm(comm)?;
        let len = size(count, datatype)?;
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
        }
        // SAFETY: MPI's nonblocking rule for `buf`.
        let req = unsafe { irecv(&c.comm, buf, len, source, tag)? };
        let h = rt.add_request(ReqObj::active(req, comm, Post::None))?;
        // SAFETY: checked non-null; an out-argument.
        unsafe { put(request, h) }
    }
}

/// Receives into `buf` and waits; the ferry status.
///
/// # Safety
/// `buf` is valid for reads and writes of `len` bytes during the call.
unsafe fn recv_wait(
    c: &Comm,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
) -> Res<ferry::Status> {
    // SAFETY: forwarded; the request completes before this returns.
    let mut req = unsafe { irecv(c, buf, len, source, tag)? };
    Ok(req.wait()?.status)
}

mpi_fn! {
    /// `MPI_Recv`: a truncated message fills the buffer, sets the status
    /// (count = the buffer's size, `MPI_ERROR` = `MPI_ERR_TRUNCATE`) and
    /// returns `MPI_ERR_TRUNCATE`.
    MPI_Recv / PMPI_Recv [comm] (buf: *mut c_void, count: c_int, datatype: usize, source: c_int, tag: c_int, comm: usize, status: *mut MpiStatus) {
        let c = rt()?.comm(comm)?;
        let len = size(count, datatype)?;
        // SAFETY: the caller's receive buffer, for the duration of the call.
        let s = unsafe { recv_wait(&c.comm, buf, len, source, tag)? };
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, MpiStatus::from_ferry(&s)) };
        status_result(&s)
    }
}

mpi_fn! {
    /// `MPI_Sendrecv`: the receive is posted first, so two ranks exchanging
    /// with each other never wait on each other's send.
    MPI_Sendrecv / PMPI_Sendrecv [comm] (
        sendbuf: *const c_void, sendcount: c_int, sendtype: usize, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: usize, source: c_int, recvtag: c_int,
        comm: usize, status: *mut MpiStatus,
    ) {
        let c = rt()?.comm(comm)?;
        let slen = size(sendcount, sendtype)?;
        let rlen = size(recvcount, recvtype)?;
        // SAFETY: both buffers are the caller's for the duration of the
        // call, and both requests complete before it returns.
        let mut r = unsafe { irecv(&c.comm, recvbuf, rlen, source, recvtag)? };
        // SAFETY: as above.
        let mut s = unsafe { isend(&c.comm, sendbuf, slen, dest, sendtag, SendMode::Standard)? };
        let sent = s.wait()?.status;
        let got = r.wait()?.status;
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, MpiStatus::from_ferry(&got)) };
        status_result(&sent)?;
        status_result(&got)
    }
}

mpi_fn! {
    /// `MPI_Sendrecv_replace`: the outgoing data is copied aside first.
    MPI_Sendrecv_replace / PMPI_Sendrecv_replace [comm] (
        buf: *mut c_void, count: c_int, datatype: usize, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: usize, status: *mut MpiStatus,
    ) {
        let c = rt()?.comm(comm)?;
        let len = size(count, datatype)?;
        // SAFETY: the caller's buffer, read here before the receive starts.
        let outgoing = unsafe { bytes(buf.cast_const().cast(), len)? }.to_vec();
        // SAFETY: the caller's buffer for the duration of the call; the
        // receive completes before this returns.
        let mut r = unsafe { irecv(&c.comm, buf, len, source, recvtag)? };
        c.comm.send(&outgoing, rank_in(dest), tag_in(sendtag))?;
        let got = r.wait()?.status;
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, MpiStatus::from_ferry(&got)) };
        status_result(&got)
    }
}

mpi_fn! {
    /// `MPI_Probe`.
    MPI_Probe / PMPI_Probe [comm] (source: c_int, tag: c_int, comm: usize, status: *mut MpiStatus) {
        let c = rt()?.comm(comm)?;
        let s = c.comm.probe(rank_in(source), tag_in(tag))?;
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, MpiStatus::from_ferry(&s)) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Iprobe`.
    MPI_Iprobe / PMPI_Iprobe [comm] (source: c_int, tag: c_int, comm: usize, flag: *mut c_int, status: *mut MpiStatus) {
        let c = rt()?.comm(comm)?;
        if flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
        }
        let found = c.comm.iprobe(rank_in(source), tag_in(tag))?;
        if let Some(s) = &found {
            // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
            unsafe { put_status(status, MpiStatus::from_ferry(s)) };
        }
        // SAFETY: checked non-null; an out-argument.
        unsafe { put(flag, c_int::from(found.is_some())) }
    }
}

mpi_fn! {
    /// `MPI_Get_count`: `MPI_UNDEFINED` when the bytes are not a whole
    /// number of elements (or the count does not fit an `int`).
    MPI_Get_count / PMPI_Get_count(status: *const MpiStatus, datatype: usize, count: *mut c_int) {
        let dt = datatype::lookup(datatype)?;
        // SAFETY: a status the caller filled (null is reported).
        let s = unsafe { get(status)? };
        // SAFETY: out-argument.
        unsafe { put(count, int_count(count_of(s.bytes(), dt))) }
    }
}
