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

use std::ffi::c_void;

use ferry::Buf;

use crate::abi::class::*;
use crate::datatype::pack::{pack, span, unpack};
use crate::datatype::segments::segmented;
use crate::datatype::{Layout, TypeRef};
use crate::error::{Fail, Res};

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

/// Data to send.
#[derive(Debug)]
pub(crate) enum SendData {
    /// The program's own bytes.
    Raw {
        /// Start.
        ptr: *const u8,
        /// Length.
        len: usize,
    },
    /// The program's scattered bytes, gathered into an eager packet or
    /// fragment by fragment.
    Streamed(Buf),
}

impl SendData {
    /// The bytes, if they are one slice (not `Streamed`).
    ///
    /// # Safety
    /// For `Raw`, the program's buffer is valid for reads while the
    /// slice lives.
    pub(crate) unsafe fn slice(&self) -> Option<&[u8]> {
        match self {
            SendData::Raw { len: 0, .. } => Some(&[]),
            // SAFETY: non-null with a non-zero length (checked when made),
            // valid for reads (the caller's promise).
            SendData::Raw { ptr, len } => Some(unsafe { std::slice::from_raw_parts(*ptr, *len) }),
            SendData::Streamed(_) => None,
        }
    }

    /// The bytes as a vector of their own (for data that must be set
    /// aside: a buffered send, a send-receive in one buffer).
    ///
    /// # Safety
    /// The program's buffer is valid for reads during the call.
    pub(crate) unsafe fn into_vec(self) -> Vec<u8> {
        match self {
            SendData::Streamed(b) => b.to_vec(),
            // SAFETY: forwarded.
            raw => unsafe { raw.slice() }
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
        }
    }
}

/// Resolves a send buffer.
///
/// # Safety
/// `buf` is valid for reads of the data `count` elements of `ty` describe
/// (MPI's rule for a send buffer) during this call, and, for
/// `Raw` and `Streamed` data, until the send completes.
///
/// # Errors
/// `MPI_ERR_BUFFER` for a null buffer with data; `MPI_ERR_COUNT` for an
/// overflowing size.
pub(crate) unsafe fn send_data(buf: *const c_void, count: usize, ty: &TypeRef) -> Res<SendData> {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        let ptr = offset(buf as usize, off) as *const u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        return Ok(SendData::Raw { ptr, len });
    }
    // SAFETY: forwarded; read only.
    Ok(SendData::Streamed(unsafe {
        segmented(buf, count, ty, false)?
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
    /// fills a prefix).
    ///
    /// # Safety
    /// The span is valid for writes, and accessed by nothing else, for the
    /// duration of the call (MPI's rule for a receive buffer until the
    /// operation completes).
    pub(crate) unsafe fn run(&self, data: &[u8]) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the caller's promise; `start` is non-null (checked when
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
    Raw {
        /// Start.
        ptr: *mut u8,
        /// Capacity.
        len: usize,
    },
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

/// Resolves a receive buffer.
///
/// # Safety
/// For `Streamed` data (what a non-contiguous `ty` gives), `buf` is
/// valid for writes of the elements' data, and accessed by nothing else,
/// until the receive completes (MPI's rule for a receive buffer); ferry
/// writes it only until then.
///
/// # Errors
/// As for [`send_data`].
pub(crate) unsafe fn recv_data(buf: *mut c_void, count: usize, ty: &TypeRef) -> Res<RecvData> {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        let ptr = offset(buf as usize, off) as *mut u8;
        if ptr.is_null() && len > 0 {
            return Err(null_buffer());
        }
        return Ok(RecvData::Raw { ptr, len });
    }
    // SAFETY: forwarded.
    Ok(RecvData::Streamed(unsafe {
        segmented(buf, count, ty, true)?
    }))
}

/// A receive into a staging vector whatever the layout (for ferry calls
/// that only take owned buffers).
///
/// # Errors
/// As for [`send_data`].
pub(crate) fn staged(buf: *mut c_void, count: usize, ty: &TypeRef) -> Res<RecvData> {
    let len = ty.bytes(count as i64)?;
    let layout = ty.layout();
    let (start, span_len, origin) = located(buf as usize, count, &layout)?.unwrap_or((0, 0, 0));
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
/// # Safety
/// As for [`send_data`].
pub(crate) unsafe fn pack_into(
    buf: *const c_void,
    count: usize,
    ty: &TypeRef,
    out: &mut [u8],
) -> Res {
    let len = ty.bytes(count as i64)?;
    if let Some(off) = ty.contiguous_from(count) {
        if len > 0 {
            let ptr = offset(buf as usize, off) as *const u8;
            if ptr.is_null() {
                return Err(null_buffer());
            }
            // SAFETY: non-null and readable for `len` bytes (the caller's
            // promise); `out` is a distinct slice.
            out[..len].copy_from_slice(unsafe { std::slice::from_raw_parts(ptr, len) });
        }
        return Ok(());
    }
    let layout = ty.layout();
    if let Some((start, span_len, origin)) = located(buf as usize, count, &layout)? {
        // SAFETY: the span is the bytes the elements' data covers, readable
        // by the caller's promise.
        let mem = unsafe { std::slice::from_raw_parts(start as *const u8, span_len) };
        pack(mem, origin, &layout, count, out);
    }
    Ok(())
}

/// Unpacks `data` into `count` elements at `buf`: `MPI_Unpack`.
///
/// # Safety
/// `buf` is valid for writes of the elements' data and accessed by nothing
/// else during the call.
pub(crate) unsafe fn unpack_into(data: &[u8], buf: *mut c_void, count: usize, ty: &TypeRef) -> Res {
    // SAFETY: forwarded; a segmented buffer is written in this call only.
    match unsafe { recv_data(buf, count, ty)? } {
        RecvData::Raw { ptr, len } => {
            let n = len.min(data.len());
            if n > 0 {
                // SAFETY: non-null, writable for `len >= n` bytes (the
                // caller's promise); `data` is the program's other buffer.
                unsafe { std::ptr::copy(data.as_ptr(), ptr, n) };
            }
        }
        // SAFETY: forwarded.
        RecvData::Staged { unpack, .. } => unsafe { unpack.run(data) },
        RecvData::Streamed(mut b) => {
            let n = b.len().min(data.len());
            b.write_at(0, &data[..n]);
        }
    }
    Ok(())
}
