//! `MPI_Pack`, `MPI_Unpack` and `MPI_Pack_size`. The packed format is the
//! data's own bytes in type-map order (ferry's processes share one data
//! representation), so `MPI_PACKED` messages are plain bytes. And their
//! `external32` forms (`datatype::external`), packed natively first and
//! converted.

use std::ffi::{c_char, c_int, c_void};

use crate::datatype::buf::{pack_into, unpack_into};

use crate::abi::class::*;
use crate::datatype::{count_arg, external};
use crate::error::{Fail, Res};
use crate::ffi::raw::{bytes, bytes_mut, cstr, get, put};
use crate::state::rt;

/// A position within a buffer of `size` bytes (`int`s, or the external
/// and `_c` forms' `MPI_Aint`s and `MPI_Count`s).
pub(crate) fn position(pos: impl Into<i64>, size: impl Into<i64>) -> Res<(usize, usize)> {
    let (pos, size) = (pos.into(), size.into());
    let size = usize::try_from(size)
        .map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid buffer size {size}")))?;
    let pos = usize::try_from(pos)
        .ok()
        .filter(|&p| p <= size)
        .ok_or_else(|| {
            Fail::msg(
                MPI_ERR_ARG,
                format!("position {pos} is outside the {size}-byte buffer"),
            )
        })?;
    Ok((pos, size))
}

/// A packed byte count as the `int` position it advances.
fn advanced(pos: usize, n: usize) -> Res<c_int> {
    c_int::try_from(pos + n)
        .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed position exceeds an int"))
}

/// The datatype of `n` elements of `datatype` on `comm` and their packed
/// length, which must fit the `left` bytes of the `side` buffer
/// (`MPI_ERR_TRUNCATE` otherwise): what `MPI_Pack` and `MPI_Unpack` check
/// first.
fn fitted(
    datatype: usize,
    n: usize,
    left: usize,
    comm: usize,
    what: &str,
    side: &str,
) -> Res<(crate::datatype::TypeRef, usize)> {
    let rt = rt()?;
    rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    let len = ty.bytes(n as i64)?;
    room(len, left, what, side)?;
    Ok((ty, len))
}

/// `MPI_ERR_TRUNCATE` unless `len` bytes to `what` fit the `left` bytes of
/// the `side` buffer.
fn room(len: usize, left: usize, what: &str, side: &str) -> Res {
    if len > left {
        return Err(Fail::msg(
            MPI_ERR_TRUNCATE,
            format!("{len} bytes to {what}, {left} left in the {side} buffer"),
        ));
    }
    Ok(())
}

/// `MPI_Pack(_c)`: `n` elements at `pos` of the `size`-byte `outbuf`; the
/// position after them. `MPI_ERR_TRUNCATE` if they do not fit.
///
/// # Safety
/// `inbuf` holds the data; `outbuf` is valid for `size` bytes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn pack_wide(
    inbuf: *const c_void,
    n: usize,
    datatype: usize,
    outbuf: *mut c_void,
    pos: usize,
    size: usize,
    comm: usize,
) -> Res<usize> {
    let (ty, len) = fitted(datatype, n, size - pos, comm, "pack", "output")?;
    // SAFETY: the output buffer of `size` bytes (the caller's promise).
    let out = unsafe { bytes_mut(outbuf.cast(), size)? };
    // SAFETY: the input buffer holds the data `n` elements describe.
    unsafe { pack_into(inbuf, n, &ty, &mut out[pos..pos + len])? };
    Ok(pos + len)
}

/// `MPI_Unpack(_c)`: `n` elements from `pos` of the `size`-byte `inbuf`;
/// the position after them. `MPI_ERR_TRUNCATE` if it holds fewer bytes.
///
/// # Safety
/// `inbuf` is valid for `size` bytes; `outbuf` holds `n` elements.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn unpack_wide(
    inbuf: *const c_void,
    pos: usize,
    size: usize,
    outbuf: *mut c_void,
    n: usize,
    datatype: usize,
    comm: usize,
) -> Res<usize> {
    let (ty, len) = fitted(datatype, n, size - pos, comm, "unpack", "input")?;
    // SAFETY: the input buffer of `size` bytes (the caller's promise).
    let data = unsafe { bytes(inbuf.cast(), size)? };
    // SAFETY: the output buffer holds `n` elements.
    unsafe { unpack_into(&data[pos..pos + len], outbuf, n, &ty)? };
    Ok(pos + len)
}

/// `MPI_Pack_size(_c)`: exactly the data's size (no header).
pub(crate) fn pack_size_wide(n: i64, datatype: usize, comm: usize) -> Res<usize> {
    let rt = rt()?;
    rt.comm(comm)?;
    rt.any_type(datatype)?.bytes(n)
}

/// `MPI_Pack`: `MPI_ERR_TRUNCATE` if the data does not fit in what is
/// left of `outbuf`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: c_int,
    position_: *mut c_int,
    comm: usize,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: in/out argument.
    let (pos, size) = position(unsafe { get(position_)? }, outsize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { pack_wide(inbuf, n, datatype, outbuf, pos, size, comm)? };
    // SAFETY: as above.
    unsafe { put(position_, advanced(end, 0)?) }
}

/// `MPI_Unpack`: `MPI_ERR_TRUNCATE` if `inbuf` holds fewer bytes than
/// `outcount` elements need.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack(
    inbuf: *const c_void,
    insize: c_int,
    position_: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: usize,
    comm: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: in/out argument.
    let (pos, size) = position(unsafe { get(position_)? }, insize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { unpack_wide(inbuf, pos, size, outbuf, n, datatype, comm)? };
    // SAFETY: as above.
    unsafe { put(position_, advanced(end, 0)?) }
}

/// `MPI_Pack_size`: exactly the data's size (no header).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_size(
    incount: c_int,
    datatype: usize,
    comm: usize,
    size: *mut c_int,
) -> Res {
    let len = pack_size_wide(incount.into(), datatype, comm)?;
    let len = c_int::try_from(len)
        .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size exceeds an int"))?;
    // SAFETY: out-argument.
    unsafe { put(size, len) }
}

/// `MPI_Pack_external(_c)`: `n` elements in external32 at `pos` of the
/// `size`-byte `outbuf`; the position after them.
///
/// # Safety
/// `datarep` is a C string; `inbuf` holds the data; `outbuf` is valid for
/// `size` bytes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn pack_external_wide(
    datarep: *const c_char,
    inbuf: *const c_void,
    n: usize,
    datatype: usize,
    outbuf: *mut c_void,
    pos: usize,
    size: usize,
) -> Res<usize> {
    let rt = rt()?;
    // SAFETY: a NUL-terminated string (the caller's promise).
    external::check_datarep(unsafe { cstr(datarep)? })?;
    let ty = rt.comm_type(datatype)?;
    let layout = ty.layout();
    let len = external::size(&layout, n)?;
    room(len, size - pos, "pack", "output")?;
    let mut native = vec![0u8; ty.bytes(n as i64)?];
    // SAFETY: the input buffer holds the data `n` elements describe.
    unsafe { pack_into(inbuf, n, &ty, &mut native)? };
    // SAFETY: the output buffer of `size` bytes (the caller's promise).
    let out = unsafe { bytes_mut(outbuf.cast(), size)? };
    external::to_external(&native, &layout, n, &mut out[pos..pos + len])?;
    Ok(pos + len)
}

/// `MPI_Unpack_external(_c)`: `n` elements from external32 data at `pos`
/// of the `size`-byte `inbuf`; the position after them.
///
/// # Safety
/// `datarep` is a C string; `inbuf` is valid for `size` bytes; `outbuf`
/// holds `n` elements.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn unpack_external_wide(
    datarep: *const c_char,
    inbuf: *const c_void,
    pos: usize,
    size: usize,
    outbuf: *mut c_void,
    n: usize,
    datatype: usize,
) -> Res<usize> {
    let rt = rt()?;
    // SAFETY: a NUL-terminated string (the caller's promise).
    external::check_datarep(unsafe { cstr(datarep)? })?;
    let ty = rt.comm_type(datatype)?;
    let layout = ty.layout();
    let len = external::size(&layout, n)?;
    room(len, size - pos, "unpack", "input")?;
    // SAFETY: the input buffer of `size` bytes (the caller's promise).
    let data = unsafe { bytes(inbuf.cast(), size)? };
    let mut native = vec![0u8; ty.bytes(n as i64)?];
    external::from_external(&data[pos..pos + len], &layout, n, &mut native)?;
    // SAFETY: the output buffer holds `n` elements.
    unsafe { unpack_into(&native, outbuf, n, &ty)? };
    Ok(pos + len)
}

/// `MPI_Pack_external_size(_c)`: the external32 bytes of `n` elements.
///
/// # Safety
/// `datarep` is a C string.
pub(crate) unsafe fn pack_external_size_wide(
    datarep: *const c_char,
    n: usize,
    datatype: usize,
) -> Res<usize> {
    let rt = rt()?;
    // SAFETY: a NUL-terminated string (the caller's promise).
    external::check_datarep(unsafe { cstr(datarep)? })?;
    let ty = rt.any_type(datatype)?;
    external::size(&ty.layout(), n)
}

/// An external32 position or size as the int forms' `MPI_Aint`.
fn aint(n: usize) -> Res<isize> {
    isize::try_from(n).map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size exceeds an MPI_Aint"))
}

/// `MPI_Pack_external`: `incount` elements into `outbuf` in external32.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: isize,
    position_: *mut isize,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: in/out argument.
    let (pos, size) = position(unsafe { get(position_)? } as i64, outsize as i64)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { pack_external_wide(datarep, inbuf, n, datatype, outbuf, pos, size)? };
    // SAFETY: as above.
    unsafe { put(position_, aint(end)?) }
}

/// `MPI_Unpack_external`: `outcount` elements from external32 data.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: isize,
    position_: *mut isize,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: in/out argument.
    let (pos, size) = position(unsafe { get(position_)? } as i64, insize as i64)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { unpack_external_wide(datarep, inbuf, pos, size, outbuf, n, datatype)? };
    // SAFETY: as above.
    unsafe { put(position_, aint(end)?) }
}

/// `MPI_Pack_external_size`: the external32 bytes of `incount` elements.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: usize,
    size: *mut isize,
) -> Res {
    // SAFETY: the caller's string.
    let len = unsafe { pack_external_size_wide(datarep, count_arg(incount)?, datatype)? };
    // SAFETY: out-argument.
    unsafe { put(size, aint(len)?) }
}

// ---- The large-count (`_c`) forms: the int forms' bodies with 64-bit
// counts, positions and sizes.

/// Reads an in/out `MPI_Count` position.
///
/// # Safety
/// `p` is null or valid for a read.
unsafe fn read_pos(p: *const i64) -> Res<i64> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null position pointer"));
    }
    // SAFETY: non-null (checked), valid for a read (the caller's promise).
    Ok(unsafe { p.read() })
}

/// `MPI_Pack_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_c(
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position_: *mut i64,
    comm: usize,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, outsize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { pack_wide(inbuf, n, datatype, outbuf, pos, size, comm)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Unpack_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack_c(
    inbuf: *const c_void,
    insize: i64,
    position_: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
    comm: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, insize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { unpack_wide(inbuf, pos, size, outbuf, n, datatype, comm)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Pack_size_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_size_c(
    incount: i64,
    datatype: usize,
    comm: usize,
    size: *mut i64,
) -> Res {
    let len = pack_size_wide(incount, datatype, comm)?;
    // SAFETY: out-argument (a size is at most isize::MAX).
    unsafe { put(size, len as i64) }
}

/// `MPI_Pack_external_c`: `MPI_Count` where the int form has `int`
/// and `MPI_Aint`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position_: *mut i64,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, outsize)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { pack_external_wide(datarep, inbuf, n, datatype, outbuf, pos, size)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Unpack_external_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position_: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, insize)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { unpack_external_wide(datarep, inbuf, pos, size, outbuf, n, datatype)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Pack_external_size_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external_size_c(
    datarep: *const c_char,
    incount: i64,
    datatype: usize,
    size: *mut i64,
) -> Res {
    // SAFETY: the caller's string.
    let len = unsafe { pack_external_size_wide(datarep, count_arg(incount)?, datatype)? };
    // SAFETY: out-argument (a size is at most isize::MAX).
    unsafe { put(size, len as i64) }
}
