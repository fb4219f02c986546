//! Reading and setting statuses: `MPI_Get_count(_c)`,
//! `MPI_Get_elements(_x, _c)`, `MPI_Status_set_elements(_x)`,
//! `MPI_Status_set_cancelled`, `MPI_Test_cancelled`.
//!
//! A status keeps the bytes received (`internal[0..2]`) and the cancelled
//! flag (`internal[2]`); counts in elements are derived from the bytes and
//! the datatype when asked.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::MpiStatus;
use crate::datatype::int_count;
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::state::rt;

/// `MPI_Get_count`: `MPI_UNDEFINED` if the bytes are not whole elements
/// of `datatype` (or their number does not fit an `int`).
pub(crate) fn get_count(status: MpiStatus, datatype: usize, mut count: Out<'_, c_int>) -> Res {
    let ty = rt()?.any_type(datatype)?;
    count.set(int_count(ty.count_of(status.bytes())))
}

/// `MPI_Get_count_c`.
pub(crate) fn get_count_c(status: MpiStatus, datatype: usize, mut count: Out<'_, i64>) -> Res {
    let ty = rt()?.any_type(datatype)?;
    count.set(ty.count_of(status.bytes()))
}

/// Basic elements in the status's bytes, `MPI_UNDEFINED` if not whole.
fn elements(status: &MpiStatus, datatype: usize) -> Res<i64> {
    let ty = rt()?.any_type(datatype)?;
    Ok(ty.elements_of(status.bytes()))
}

/// `MPI_Get_elements`.
pub(crate) fn get_elements(status: MpiStatus, datatype: usize, mut count: Out<'_, c_int>) -> Res {
    count.set(int_count(elements(&status, datatype)?))
}

/// `MPI_Get_elements_x` (and `MPI_Get_elements_c`).
pub(crate) fn get_elements_x(status: MpiStatus, datatype: usize, mut count: Out<'_, i64>) -> Res {
    count.set(elements(&status, datatype)?)
}

/// Sets the status's bytes to those of `count` basic elements.
fn set_elements(status: &mut Out<'_, MpiStatus>, datatype: usize, count: i64) -> Res {
    let ty = rt()?.any_type(datatype)?;
    let n = u64::try_from(count)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("invalid count {count}")))?;
    let mut s = status.get()?;
    s.set_bytes(ty.layout().bytes_of_elements(n));
    status.set(s)
}

/// `MPI_Status_set_elements`.
pub(crate) fn status_set_elements(
    mut status: Out<'_, MpiStatus>,
    datatype: usize,
    count: c_int,
) -> Res {
    set_elements(&mut status, datatype, i64::from(count))
}

/// `MPI_Status_set_elements_x`.
pub(crate) fn status_set_elements_x(
    mut status: Out<'_, MpiStatus>,
    datatype: usize,
    count: i64,
) -> Res {
    set_elements(&mut status, datatype, count)
}

/// `MPI_Status_set_cancelled`.
pub(crate) fn status_set_cancelled(mut status: Out<'_, MpiStatus>, flag: c_int) -> Res {
    set_field(&mut status, |s| s.internal[2] = c_int::from(flag != 0))
}

/// `MPI_Status_get_source` (MPI 4.1: the fields through calls, for
/// languages that cannot reach a struct's fields).
pub(crate) fn status_get_source(status: MpiStatus, mut source: Out<'_, c_int>) -> Res {
    source.set(status.source)
}

/// `MPI_Status_get_tag`.
pub(crate) fn status_get_tag(status: MpiStatus, mut tag: Out<'_, c_int>) -> Res {
    tag.set(status.tag)
}

/// `MPI_Status_get_error`.
pub(crate) fn status_get_error(status: MpiStatus, mut error: Out<'_, c_int>) -> Res {
    error.set(status.error)
}

/// Sets one field of `status` (the setters below).
fn set_field(status: &mut Out<'_, MpiStatus>, f: impl FnOnce(&mut MpiStatus)) -> Res {
    let mut s = status.get()?;
    f(&mut s);
    status.set(s)
}

/// `MPI_Status_set_source`.
pub(crate) fn status_set_source(mut status: Out<'_, MpiStatus>, source: c_int) -> Res {
    set_field(&mut status, |s| s.source = source)
}

/// `MPI_Status_set_tag`.
pub(crate) fn status_set_tag(mut status: Out<'_, MpiStatus>, tag: c_int) -> Res {
    set_field(&mut status, |s| s.tag = tag)
}

/// `MPI_Status_set_error`.
pub(crate) fn status_set_error(mut status: Out<'_, MpiStatus>, error: c_int) -> Res {
    set_field(&mut status, |s| s.error = error)
}

/// `MPI_Test_cancelled`.
pub(crate) fn test_cancelled(status: MpiStatus, mut flag: Out<'_, c_int>) -> Res {
    flag.set(c_int::from(status.cancelled()))
}
