//! The MPI 5.0 ABI's Fortran queries: what a Fortran binding built over
//! the C library (any standard-ABI one) tells it once at start, and what
//! a tool reads back. ferry has no Fortran binding of its own, so it knows
//! only what one set: `MPI_Abi_set_fortran_info` (the binding's info:
//! type sizes, supported types) and `MPI_Abi_set_fortran_booleans` (its
//! `LOGICAL`'s `.TRUE.` and `.FALSE.` bit patterns), each once per process
//! (a second call is `MPI_ERR_ABI`, as the ABI says). Usable before
//! `MPI_Init`.

use std::ffi::c_int;
use std::sync::Mutex;

use crate::abi::class::*;
use crate::abi::MPI_INFO_NULL;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf};
use crate::info::Info;
use crate::state::lock;

/// The binding's info, once set.
static INFO: Mutex<Option<Info>> = Mutex::new(None);
/// A binding's `LOGICAL`: its size, the bits of `.TRUE.` and `.FALSE.`.
type Logical = (usize, Vec<u8>, Vec<u8>);
/// The binding's `LOGICAL` values, once set.
static BOOLEANS: Mutex<Option<Logical>> = Mutex::new(None);

fn once() -> Fail {
    Fail::new(
        MPI_ERR_ABI,
        "the Fortran binding's facts can be set once per process",
    )
}

/// A `LOGICAL`'s size: a power of two up to 16 bytes.
fn logical_size(n: c_int) -> Res<usize> {
    match n {
        1 | 2 | 4 | 8 | 16 => Ok(n as usize),
        _ => Err(Fail::msg(MPI_ERR_ARG, format!("a LOGICAL of {n} bytes"))),
    }
}

/// `MPI_Abi_set_fortran_info`: keeps a copy of `info`.
pub(crate) fn abi_set_fortran_info(info: usize) -> Res {
    if info == MPI_INFO_NULL {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "MPI_INFO_NULL is no Fortran binding's info",
        ));
    }
    let copy = crate::info::calls::read(info)?;
    let mut slot = lock(&INFO);
    if slot.is_some() {
        return Err(once());
    }
    *slot = Some(copy);
    Ok(())
}

/// `MPI_Abi_get_fortran_info`: a new info object, a copy of what the
/// binding set; `MPI_INFO_NULL` if none did (ferry has no Fortran
/// binding of its own to describe).
pub(crate) fn abi_get_fortran_info(mut info: Out<'_, usize>) -> Res {
    let Some(copy) = lock(&INFO).clone() else {
        return info.set(MPI_INFO_NULL);
    };
    info.set(crate::info::calls::insert(copy)?)
}

/// `MPI_Abi_set_fortran_booleans`: `logical_size` bytes at each pointer.
pub(crate) fn abi_set_fortran_booleans(
    logical_size_: c_int,
    logical_true: RecvBuf,
    logical_false: RecvBuf,
) -> Res {
    let n = logical_size(logical_size_)?;
    let t = crate::datatype::buf::bytes_mut(logical_true, n)?.to_vec();
    let f = crate::datatype::buf::bytes_mut(logical_false, n)?.to_vec();
    if t == f {
        return Err(Fail::new(
            MPI_ERR_ARG,
            ".TRUE. and .FALSE. are the same bits",
        ));
    }
    let mut slot = lock(&BOOLEANS);
    if slot.is_some() {
        return Err(once());
    }
    *slot = Some((n, t, f));
    Ok(())
}

/// `MPI_Abi_get_fortran_booleans`: the values, when the binding set them
/// for a `LOGICAL` of `logical_size` bytes (`*is_set` 1), else `*is_set` 0
/// and nothing written.
pub(crate) fn abi_get_fortran_booleans(
    logical_size_: c_int,
    logical_true: RecvBuf,
    logical_false: RecvBuf,
    mut is_set: Out<'_, c_int>,
) -> Res {
    let n = logical_size(logical_size_)?;
    let slot = lock(&BOOLEANS);
    match slot.as_ref() {
        Some((size, t, f)) if *size == n => {
            crate::datatype::buf::bytes_mut(logical_true, n)?.copy_from_slice(t);
            crate::datatype::buf::bytes_mut(logical_false, n)?.copy_from_slice(f);
            is_set.set(1)
        }
        _ => is_set.set(0),
    }
}
