//! Reading and setting statuses: `MPI_Get_elements(_x)`,
//! `MPI_Status_set_elements(_x)`, `MPI_Status_set_cancelled`,
//! `MPI_Test_cancelled`. (`MPI_Get_count` is with point-to-point.)
//!
//! A status keeps the bytes received (`internal[0..2]`) and the cancelled
//! flag (`internal[2]`); counts in elements are derived from the bytes and
//! the datatype when asked.

use std::ffi::c_int;

use crate::ffi::{get, put};

use crate::abi::class::*;
use crate::abi::MpiStatus;
use crate::datatype::int_count;
use crate::error::{Fail, Res};
use crate::state::rt;

/// Basic elements in the status's bytes, `MPI_UNDEFINED` if not whole.
fn elements(status: *const MpiStatus, datatype: usize) -> Res<i64> {
    let ty = rt()?.any_type(datatype)?;
    // SAFETY: a status the caller filled (null is reported).
    let s = unsafe { get(status)? };
    Ok(ty.elements_of(s.bytes()))
}

/// `MPI_Get_elements`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn get_elements(
    status: *const MpiStatus,
    datatype: usize,
    count: *mut c_int,
) -> Res {
    let n = elements(status, datatype)?;
    // SAFETY: out-argument.
    unsafe { put(count, int_count(n)) }
}

/// `MPI_Get_elements_x`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn get_elements_x(
    status: *const MpiStatus,
    datatype: usize,
    count: *mut i64,
) -> Res {
    let n = elements(status, datatype)?;
    // SAFETY: out-argument.
    unsafe { put(count, n) }
}

/// Sets the status's bytes to those of `count` basic elements.
fn set_elements(status: *mut MpiStatus, datatype: usize, count: i64) -> Res {
    let ty = rt()?.any_type(datatype)?;
    let n = u64::try_from(count)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("invalid count {count}")))?;
    // SAFETY: in/out argument (null is reported).
    let mut s = unsafe { get(status.cast_const())? };
    s.set_bytes(ty.layout().bytes_of_elements(n));
    // SAFETY: as above.
    unsafe { put(status, s) }
}

/// `MPI_Status_set_elements`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn status_set_elements(
    status: *mut MpiStatus,
    datatype: usize,
    count: c_int,
) -> Res {
    set_elements(status, datatype, i64::from(count))
}

/// `MPI_Status_set_elements_x`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn status_set_elements_x(
    status: *mut MpiStatus,
    datatype: usize,
    count: i64,
) -> Res {
    set_elements(status, datatype, count)
}

/// `MPI_Status_set_cancelled`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> Res {
    // SAFETY: in/out argument (null is reported).
    let mut s = unsafe { get(status.cast_const())? };
    s.internal[2] = c_int::from(flag != 0);
    // SAFETY: as above.
    unsafe { put(status, s) }
}

/// `MPI_Test_cancelled`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> Res {
    // SAFETY: a status the caller filled (null is reported).
    let s = unsafe { get(status)? };
    // SAFETY: out-argument.
    unsafe { put(flag, c_int::from(s.cancelled())) }
}
