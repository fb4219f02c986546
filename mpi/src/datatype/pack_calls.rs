//! `MPI_Pack`, `MPI_Unpack` and `MPI_Pack_size`. The packed format is the
//! data's own bytes in type-map order (ferry's processes share one data
//! representation), so `MPI_PACKED` messages are plain bytes. And their
//! `external32` forms (`datatype::external`), packed natively first and
//! converted. One body serves a function and its `_c` form: positions and
//! sizes are [`Position`]s (`int`, `MPI_Aint` or `MPI_Count`).

use std::ffi::c_int;

use crate::datatype::buf::{bytes, bytes_mut, pack_into, unpack_into};

use crate::abi::class::*;
use crate::datatype::{count_arg, external, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::state::rt;

/// A position or packed size as a form passes it: `int`, or the external
/// and `_c` forms' `MPI_Aint` and `MPI_Count`.
pub(crate) trait Position: Copy {
    /// The value, widened.
    fn wide(self) -> i64;

    /// `n` bytes as this type.
    ///
    /// # Errors
    /// `MPI_ERR_COUNT` when it does not fit.
    fn of_len(n: usize) -> Res<Self>;
}

impl Position for c_int {
    fn wide(self) -> i64 {
        self.into()
    }

    fn of_len(n: usize) -> Res<c_int> {
        c_int::try_from(n).map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size exceeds an int"))
    }
}

impl Position for isize {
    fn wide(self) -> i64 {
        self as i64
    }

    fn of_len(n: usize) -> Res<isize> {
        isize::try_from(n)
            .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size exceeds an MPI_Aint"))
    }
}

impl Position for i64 {
    fn wide(self) -> i64 {
        self
    }

    fn of_len(n: usize) -> Res<i64> {
        i64::try_from(n)
            .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size exceeds an MPI_Count"))
    }
}

/// A position within a buffer of `size` bytes.
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

/// Fails with `MPI_ERR_TRUNCATE` unless `len` bytes fit in `left`.
fn room(len: usize, left: usize, what: &str, side: &str) -> Res {
    if len > left {
        return Err(Fail::msg(
            MPI_ERR_TRUNCATE,
            format!("{len} bytes to {what}, {left} left in the {side} buffer"),
        ));
    }
    Ok(())
}

/// The datatype of a pack call on `comm` (checked to exist).
fn pack_type(datatype: usize, comm: usize) -> Res<TypeRef> {
    let rt = rt()?;
    rt.comm(comm)?;
    rt.comm_type(datatype)
}

/// `MPI_Pack(_c)`: packs at `*position` of `outbuf`, advancing it.
pub(crate) fn pack<P: Position>(
    inbuf: SendBuf,
    incount: P,
    datatype: usize,
    outbuf: RecvBuf,
    outsize: P,
    mut position_: Out<'_, P>,
    comm: usize,
) -> Res {
    let n = count_arg(incount.wide())?;
    let (pos, size) = position(position_.get()?.wide(), outsize.wide())?;
    let ty = pack_type(datatype, comm)?;
    let len = ty.bytes(n as i64)?;
    room(len, size - pos, "pack", "output")?;
    pack_into(inbuf, n, &ty, bytes_mut(outbuf.offset(pos as isize), len)?)?;
    position_.set(P::of_len(pos + len)?)
}

/// `MPI_Unpack(_c)`: unpacks from `*position` of `inbuf`, advancing it.
pub(crate) fn unpack<P: Position>(
    inbuf: SendBuf,
    insize: P,
    mut position_: Out<'_, P>,
    outbuf: RecvBuf,
    outcount: P,
    datatype: usize,
    comm: usize,
) -> Res {
    let n = count_arg(outcount.wide())?;
    let (pos, size) = position(position_.get()?.wide(), insize.wide())?;
    let ty = pack_type(datatype, comm)?;
    let len = ty.bytes(n as i64)?;
    room(len, size - pos, "unpack", "input")?;
    unpack_into(bytes(inbuf.offset(pos as isize), len)?, outbuf, n, &ty)?;
    position_.set(P::of_len(pos + len)?)
}

/// `MPI_Pack_size(_c)`: the packed size of `incount` elements.
pub(crate) fn pack_size<P: Position>(
    incount: P,
    datatype: usize,
    comm: usize,
    mut size: Out<'_, P>,
) -> Res {
    let rt = rt()?;
    rt.comm(comm)?;
    let len = rt.any_type(datatype)?.bytes(incount.wide())?;
    size.set(P::of_len(len)?)
}

/// `MPI_Pack_external(_c)`: packs natively, then converts to
/// `external32` at `*position` of `outbuf`.
pub(crate) fn pack_external<C: Into<i64>, P: Position>(
    datarep: &str,
    inbuf: SendBuf,
    incount: C,
    datatype: usize,
    outbuf: RecvBuf,
    outsize: P,
    mut position_: Out<'_, P>,
) -> Res {
    let n = count_arg(incount.into())?;
    let (pos, size) = position(position_.get()?.wide(), outsize.wide())?;
    let rt = rt()?;
    external::check_datarep(datarep)?;
    let ty = rt.comm_type(datatype)?;
    let layout = ty.layout();
    let len = external::size(&layout, n)?;
    room(len, size - pos, "pack", "output")?;
    let mut native = vec![0u8; ty.bytes(n as i64)?];
    pack_into(inbuf, n, &ty, &mut native)?;
    let out = bytes_mut(outbuf.offset(pos as isize), len)?;
    external::to_external(&native, &layout, n, out)?;
    position_.set(P::of_len(pos + len)?)
}

/// `MPI_Unpack_external(_c)`: converts from `external32` at `*position`
/// of `inbuf`, then unpacks natively.
pub(crate) fn unpack_external<C: Into<i64>, P: Position>(
    datarep: &str,
    inbuf: SendBuf,
    insize: P,
    mut position_: Out<'_, P>,
    outbuf: RecvBuf,
    outcount: C,
    datatype: usize,
) -> Res {
    let n = count_arg(outcount.into())?;
    let (pos, size) = position(position_.get()?.wide(), insize.wide())?;
    let rt = rt()?;
    external::check_datarep(datarep)?;
    let ty = rt.comm_type(datatype)?;
    let layout = ty.layout();
    let len = external::size(&layout, n)?;
    room(len, size - pos, "unpack", "input")?;
    let data = bytes(inbuf.offset(pos as isize), len)?;
    let mut native = vec![0u8; ty.bytes(n as i64)?];
    external::from_external(data, &layout, n, &mut native)?;
    unpack_into(&native, outbuf, n, &ty)?;
    position_.set(P::of_len(pos + len)?)
}

/// `MPI_Pack_external_size(_c)`.
pub(crate) fn pack_external_size<C: Into<i64>, P: Position>(
    datarep: &str,
    incount: C,
    datatype: usize,
    mut size: Out<'_, P>,
) -> Res {
    let rt = rt()?;
    external::check_datarep(datarep)?;
    let ty = rt.any_type(datatype)?;
    let len = external::size(&ty.layout(), count_arg(incount.into())?)?;
    size.set(P::of_len(len)?)
}
