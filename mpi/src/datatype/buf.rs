//! A program's `(buffer, count, datatype)` as bytes ferry can move.
//!
//! Data that is one contiguous run (every predefined type but the padded
//! pair types, and derived types without holes) is lent to ferry where it
//! lies. Other data is lent as a segmented buffer (`segments.rs`,
//! [`SendData::Streamed`], [`RecvData::Streamed`]): ferry gathers a small
//! message straight into its eager packet and a large one fragment by
//! fragment, pipelined with the transfer, and scatters what arrives
//! straight into the program's blocks, so no staging copy of the message
//! is made on either side. (Measured against packing whole, which this
//! replaced: faster at every size, 64 B to 64 MiB: 0.33 against 0.40 µs
//! at 64 B, 0.95 against 2.42 µs at 4 KiB, 7.3 against 32 µs at 64 KiB on
//! shm; `benches/compare/src/mpi_strided.c`.) Receives that need an owned
//! vector (collectives, an `MPI_Imrecv`) are staged and unpacked after
//! ([`RecvData::Staged`]). The program's memory is reached through its
//! span (`datatype::pack::span`): one slice from the least to the greatest
//! byte the elements touch.
//!
//! # Contract
//! This is the crate's one module (with `segments`) that reaches a
//! program's data buffers. It takes them only as the tokens a generated
//! shim made of the C arguments ([`SendBuf`], [`RecvBuf`]: the program's
//! promise for that argument, see `ffi::args`), with the count and
//! datatype of the same call, and hands out what it made of them only in
//! forms a chapter cannot forge ([`SendData`] and [`RecvData`] keep their
//! pointers private; ferry's raw calls are started here). So every body
//! that moves a program's data is safe Rust.

use std::ffi::c_int;

use ferry::{Buf, Comm, SendMode};

use crate::abi::class::*;
use crate::datatype::pack::{pack, span, unpack};
use crate::datatype::segments::segmented;
use crate::datatype::{Layout, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{RecvBuf, SendBuf};

/// `addr + off` as an address (the ABI passes buffers as pointers; a
/// datatype's displacements may reach below the pointer).
fn offset(addr: usize, off: isize) -> usize {
    addr.wrapping_add_signed(off)
}

pub(crate) fn null_buffer() -> Fail {
    Fail::new(MPI_ERR_BUFFER, "a null buffer with a non-zero count")
}

/// The span of `count` elements of `layout` at `buf`: `(start address,
/// length, origin)`, origin being the index of `buf` in the span.
fn located(buf: usize, count: usize, layout: &Layout) -> Res<Option<(usize, usize, isize)>> {
    match span(layout, count)? {
        None => Ok(None),
        Some((lo, len)) => {
            let start = offset(buf, lo);
            if start == 0 {
                return Err(null_buffer());
            }
            Ok(Some((start, len, -lo)))
        }
    }
}

/// The program's contiguous bytes, as a chapter holds them: it cannot
/// make one, nor reach the pointer.
#[derive(Debug)]
pub(crate) struct Raw<P> {
    ptr: P,
    len: usize,
}

impl<P> Raw<P> {
    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// Data to send.
#[derive(Debug)]
pub(crate) enum SendData {
    /// The program's own bytes.
    Raw(Raw<*const u8>),
    /// The program's scattered bytes, gathered into an eager packet or
    /// fragment by fragment.
    Streamed(Buf),
}

impl SendData {
    /// The bytes, if they are one slice (not `Streamed`). The program's
    /// buffer is readable while the call that passed it runs.
    pub(crate) fn slice(&self) -> Option<&[u8]> {
        match self {
            SendData::Raw(Raw { len: 0, .. }) => Some(&[]),
            // SAFETY: non-null with a non-zero length (checked when made),
            // valid for reads (the token's promise) during the call that
            // holds `self`.
            SendData::Raw(r) => Some(unsafe { std::slice::from_raw_parts(r.ptr, r.len) }),
            SendData::Streamed(_) => None,
        }
    }

    /// The bytes as a vector of their own (for data that must be set
    /// aside: a buffered send, a send-receive in one buffer).
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            SendData::Streamed(b) => b.to_vec(),
            raw => raw.slice().map(<[u8]>::to_vec).unwrap_or_default(),
        }
    }

    /// Starts a nonblocking send.
    ///
    /// # Errors
    /// What ferry reports for the rank, tag or communicator.
    pub(crate) fn start(
        self,
        c: &Comm,
        dest: c_int,
        tag: c_int,
        mode: SendMode,
    ) -> Res<ferry::Request> {
        let (dest, tag) = (crate::abi::rank_in(dest), crate::abi::tag_in(tag));
        Ok(match self {
            // SAFETY: null only with no bytes; the program's buffer stays
            // valid and unwritten until the send completes (the token's
            // promise: MPI's rule for a send buffer).
            SendData::Raw(r) => unsafe { c.isend_raw(r.ptr, r.len, dest, tag, mode)? },
            SendData::Streamed(b) => c.isend_buf(b, None, dest, tag, mode)?,
        })
    }
}

impl SendData {
    /// `len` bytes of a buffer the program gave the library (an attached
    /// buffer for buffered sends), to send from where they lie: the
    /// caller keeps them untouched until the send completes.
    ///
    /// # Errors
    /// `MPI_ERR_BUFFER` for null with bytes.
    pub(crate) fn attached(buf: RecvBuf, len: usize) -> Res<SendData> {
        let ptr = buf.addr() as *const u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        Ok(SendData::Raw(Raw { ptr, len }))
    }
}

impl Raw<*const u8> {
    /// Starts a nonblocking send kept as ferry's bare engine handle
    /// (`MPI_Isend` on a communicator of the job's ranks).
    ///
    /// # Errors
    /// As [`SendData::start`].
    pub(crate) fn start_request(
        self,
        c: &Comm,
        dest: c_int,
        tag: c_int,
        mode: SendMode,
    ) -> Res<ferry::RawRequest> {
        let (dest, tag) = (crate::abi::rank_in(dest), crate::abi::tag_in(tag));
        // SAFETY: as in `SendData::start`; the request is completed by a
        // completion call, or promoted (see `ReqObj::promote`).
        Ok(unsafe { c.isend_raw_request(self.ptr, self.len, dest, tag, mode)? })
    }
}

/// `len` bytes of the program's input buffer `buf` as a slice, for the
/// call that passed it.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
pub(crate) fn bytes<'a>(buf: SendBuf, len: usize) -> Res<&'a [u8]> {
    // SAFETY: the token's promise: readable for the data its call
    // describes, `len` bytes from `buf` (a contiguous run the caller
    // computed from the call's count and datatype), during the call.
    unsafe { crate::ffi::raw::bytes(buf.addr() as *const u8, len) }
}

/// `len` bytes of the program's output buffer `buf` as a slice, for the
/// call that passed it.
///
/// # Errors
/// As [`bytes`].
pub(crate) fn bytes_mut<'a>(buf: RecvBuf, len: usize) -> Res<&'a mut [u8]> {
    // SAFETY: as in `bytes`, for writes, touched by nothing else.
    unsafe { crate::ffi::raw::bytes_mut(buf.addr() as *mut u8, len) }
}

/// `len` bytes of the program's input buffer `buf`, lent to ferry where
/// they lie for an operation that may outlive the call (a nonblocking or
/// persistent collective): the token's promise keeps them valid and
/// unwritten until it completes.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
pub(crate) fn lend_in(buf: SendBuf, len: usize) -> Res<Buf> {
    let ptr = buf.addr() as *const u8;
    if ptr.is_null() && len > 0 {
        return Err(null_buffer());
    }
    // SAFETY: non-null with bytes; readable and unwritten until the
    // operation completes (the token's promise: MPI's rule for a
    // nonblocking call's buffers), which is when ferry drops the `Buf`.
    Ok(unsafe { ferry::lent(ptr, len) })
}

/// `len` bytes of the program's output buffer `buf`, lent to ferry to
/// write where they lie (as [`lend_in`]).
///
/// # Errors
/// As [`lend_in`].
pub(crate) fn lend_out(buf: RecvBuf, len: usize) -> Res<Buf> {
    let ptr = buf.addr() as *mut u8;
    if ptr.is_null() && len > 0 {
        return Err(null_buffer());
    }
    // SAFETY: as in `lend_in`, for writes, touched by nothing else.
    Ok(unsafe { ferry::lent_mut(ptr, len) })
}

/// Resolves a send buffer: `count` elements of `ty` at `buf`.
///
/// # Errors
/// `MPI_ERR_BUFFER` for a null buffer with data; `MPI_ERR_COUNT` for an
/// overflowing size.
pub(crate) fn send_data(buf: SendBuf, count: usize, ty: &TypeRef) -> Res<SendData> {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        let ptr = offset(buf.addr(), off) as *const u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        return Ok(SendData::Raw(Raw { ptr, len }));
    }
    // SAFETY: the token's promise (read only).
    Ok(SendData::Streamed(unsafe {
        segmented(buf.addr(), count, ty, false)?
    }))
}

/// Where received bytes go when they need unpacking.
#[derive(Debug)]
pub(crate) struct Unpack {
    /// Start of the span.
    start: usize,
    /// Length of the span.
    len: usize,
    /// Index of the buffer pointer in the span.
    origin: isize,
    count: usize,
    /// The datatype (kept alive even if the program frees its handle).
    ty: TypeRef,
    /// The data is one run at the span's start: one copy.
    contiguous: bool,
}

impl Unpack {
    /// Copies packed `data` into the program's buffer (a short message
    /// fills a prefix). Run when the receive it belongs to completes: the
    /// buffer is the program's receive buffer, writable and touched by
    /// nothing else until then (the token's promise it was made from).
    pub(crate) fn run(&self, data: &[u8]) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the promise above; `start` is non-null (checked when
        // the span was located).
        let mem = unsafe { std::slice::from_raw_parts_mut(self.start as *mut u8, self.len) };
        if self.contiguous {
            let n = data.len().min(mem.len());
            mem[..n].copy_from_slice(&data[..n]);
            return;
        }
        unpack(data, mem, self.origin, &self.ty.layout(), self.count);
    }
}

/// Where to receive.
#[derive(Debug)]
pub(crate) enum RecvData {
    /// Into the program's bytes.
    Raw(Raw<*mut u8>),
    /// Into a staging vector of `len` bytes, then [`Unpack::run`].
    Staged {
        /// Capacity.
        len: usize,
        /// The unpacking.
        unpack: Unpack,
    },
    /// Into the program's scattered bytes, fragment by fragment.
    Streamed(Buf),
}

impl RecvData {
    /// Starts a nonblocking receive: the request, and the unpacking its
    /// completion must run (a staged receive).
    ///
    /// # Errors
    /// What ferry reports for the rank, tag or communicator.
    pub(crate) fn start(
        self,
        c: &Comm,
        source: c_int,
        tag: c_int,
    ) -> Res<(ferry::Request, Option<Unpack>)> {
        let (source, tag) = (crate::abi::rank_in(source), crate::abi::tag_in(tag));
        Ok(match self {
            // SAFETY: null only with no bytes; the program's buffer stays
            // writable and untouched by anything else until the receive
            // completes (the token's promise).
            RecvData::Raw(r) => (unsafe { c.irecv_raw(r.ptr, r.len, source, tag)? }, None),
            RecvData::Staged { len, unpack } => {
                (c.irecv(vec![0u8; len], source, tag)?, Some(unpack))
            }
            RecvData::Streamed(b) => (c.irecv_buf(b, None, source, tag)?, None),
        })
    }
}

impl Raw<*mut u8> {
    /// The receive buffer of `MPI_Recv`'s fast path: `len` bytes at `buf`.
    ///
    /// # Errors
    /// `MPI_ERR_BUFFER` for null with bytes.
    pub(crate) fn new(buf: RecvBuf, len: usize) -> Res<Self> {
        let ptr = buf.addr() as *mut u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        Ok(Raw { ptr, len })
    }

    /// The bytes, for the call that passed the buffer (a blocking receive
    /// into them).
    ///
    /// # Errors
    /// `MPI_ERR_BUFFER` for null with bytes (never: checked when made).
    pub(crate) fn bytes(&mut self) -> Res<&mut [u8]> {
        // SAFETY: writable and untouched by anything else during the
        // call (the token's promise).
        unsafe { crate::ffi::raw::bytes_mut(self.ptr, self.len) }
    }

    /// Receives, blocking, into these bytes.
    ///
    /// # Errors
    /// What ferry reports for the rank, tag or communicator.
    pub(crate) fn recv(self, c: &Comm, source: c_int, tag: c_int) -> Res<ferry::Status> {
        let (source, tag) = (crate::abi::rank_in(source), crate::abi::tag_in(tag));
        // SAFETY: null only with no bytes; writable and untouched by
        // anything else during this call, which returns once the receive
        // is complete.
        Ok(unsafe { c.recv_raw(self.ptr, self.len, source, tag)? })
    }

    /// Starts a nonblocking receive kept as ferry's bare engine handle
    /// (`MPI_Irecv` on a communicator of the job's ranks).
    ///
    /// # Errors
    /// As [`Raw::recv`].
    pub(crate) fn start_request(
        self,
        c: &Comm,
        source: c_int,
        tag: c_int,
    ) -> Res<ferry::RawRequest> {
        let (source, tag) = (crate::abi::rank_in(source), crate::abi::tag_in(tag));
        // SAFETY: the token's promise until the receive completes; the
        // request is completed by a completion call, or promoted.
        Ok(unsafe { c.irecv_raw_request(self.ptr, self.len, source, tag)? })
    }
}

/// Resolves a receive buffer: `count` elements of `ty` at `buf`.
///
/// # Errors
/// As for [`send_data`].
pub(crate) fn recv_data(buf: RecvBuf, count: usize, ty: &TypeRef) -> Res<RecvData> {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        let ptr = offset(buf.addr(), off) as *mut u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        return Ok(RecvData::Raw(Raw { ptr, len }));
    }
    // SAFETY: the token's promise: writable, and touched by nothing else,
    // until the receive completes; ferry writes it only until then.
    Ok(RecvData::Streamed(unsafe {
        segmented(buf.addr(), count, ty, true)?
    }))
}

/// A receive into a staging vector whatever the layout (for ferry calls
/// that only take owned buffers).
///
/// # Errors
/// As for [`send_data`].
pub(crate) fn staged(buf: RecvBuf, count: usize, ty: &TypeRef) -> Res<RecvData> {
    let len = ty.bytes(count as i64)?;
    let layout = ty.layout();
    let (start, span_len, origin) = located(buf.addr(), count, &layout)?.unwrap_or((0, 0, 0));
    Ok(RecvData::Staged {
        len,
        unpack: Unpack {
            start,
            len: span_len,
            origin,
            count,
            ty: ty.clone(),
            contiguous: ty.contiguous_from(count).is_some(),
        },
    })
}

/// Packs `count` elements at `buf` into `out` (which holds at least
/// `count * size` bytes): `MPI_Pack`.
///
/// # Errors
/// As for [`send_data`].
pub(crate) fn pack_into(buf: SendBuf, count: usize, ty: &TypeRef, out: &mut [u8]) -> Res {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        if len > 0 {
            let data = bytes(buf.offset(off), len)?;
            out[..len].copy_from_slice(data);
        }
        return Ok(());
    }
    let layout = ty.layout();
    if let Some((start, span_len, origin)) = located(buf.addr(), count, &layout)? {
        // SAFETY: the span is the bytes the elements' data covers,
        // readable by the token's promise.
        let mem = unsafe { std::slice::from_raw_parts(start as *const u8, span_len) };
        pack(mem, origin, &layout, count, out);
    }
    Ok(())
}

/// Unpacks `data` into `count` elements at `buf`: `MPI_Unpack`.
///
/// # Errors
/// As for [`send_data`].
pub(crate) fn unpack_into(data: &[u8], buf: RecvBuf, count: usize, ty: &TypeRef) -> Res {
    match recv_data(buf, count, ty)? {
        RecvData::Raw(r) => {
            let n = r.len.min(data.len());
            if n > 0 {
                // SAFETY: non-null, writable for `len >= n` bytes (the
                // token's promise); `data` may be the program's other
                // buffer, so no slice is made of both (`copy`).
                unsafe { std::ptr::copy(data.as_ptr(), r.ptr, n) };
            }
        }
        RecvData::Staged { unpack, .. } => unpack.run(data),
        RecvData::Streamed(mut b) => {
            let n = b.len().min(data.len());
            b.write_at(0, &data[..n]);
        }
    }
    Ok(())
}
