//! `MPI_Info` objects. Usable before `MPI_Init`, as the standard allows.

use std::ffi::{c_char, c_int};

use crate::ffi::{cstr, get, put, put_str};

use crate::abi::class::*;
use crate::abi::{MPI_INFO_ENV, MPI_INFO_NULL, MPI_MAX_INFO_KEY};
use crate::error::{Fail, Res};
use crate::info::{check_key, Info};
use crate::state::{lock, INFOS};

fn bad_info(b: crate::handle::BadHandle) -> Fail {
    Fail::handle(MPI_ERR_INFO, b, "info object")
}

/// Checks that `handle` names a live info object (`MPI_INFO_ENV`
/// included: it is an empty info here).
pub(crate) fn check(handle: usize) -> Res {
    if handle == MPI_INFO_ENV {
        return Ok(());
    }
    lock(&INFOS).get(handle).map(|_| ()).map_err(bad_info)
}

/// A copy of the info `handle` names (`MPI_INFO_ENV`: empty).
pub(crate) fn read(handle: usize) -> Res<Info> {
    if handle == MPI_INFO_ENV {
        return Ok(Info::default());
    }
    lock(&INFOS).get(handle).cloned().map_err(bad_info)
}

/// Stores a new info object; its handle.
pub(crate) fn insert(info: Info) -> Res<usize> {
    lock(&INFOS)
        .insert(info)
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many info objects"))
}

/// `MPI_Info_create`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_create(info: *mut usize) -> Res {
    if info.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let h = insert(Info::default())?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(info, h) }
}

/// `MPI_Info_set`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_set(info: usize, key: *const c_char, value: *const c_char) -> Res {
    // SAFETY: NUL-terminated string arguments.
    let (k, v) = unsafe { (cstr(key)?, cstr(value)?) };
    lock(&INFOS).get_mut(info).map_err(bad_info)?.set(k, v)
}

/// `MPI_Info_delete`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_delete(info: usize, key: *const c_char) -> Res {
    // SAFETY: a NUL-terminated string argument.
    let k = unsafe { cstr(key)? };
    lock(&INFOS).get_mut(info).map_err(bad_info)?.delete(k)
}

/// `MPI_Info_get` (deprecated in MPI 4.0, still in the ABI): copies at
/// most `valuelen` characters and a NUL.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_get(
    info: usize,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Res {
    // SAFETY: a NUL-terminated string argument.
    let k = unsafe { cstr(key)? };
    check_key(k)?;
    let cap = usize::try_from(valuelen)
        .map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid valuelen {valuelen}")))?;
    let i = read(info)?;
    match i.get(k) {
        // SAFETY: `value` has valuelen + 1 bytes (the standard's rule);
        // `flag` is an out-argument.
        Some(v) => unsafe {
            put_str(value, cap + 1, v, std::ptr::null_mut())?;
            put(flag, 1)
        },
        // SAFETY: out-argument.
        None => unsafe { put(flag, 0) },
    }
}

/// `MPI_Info_get_valuelen` (deprecated in MPI 4.0, still in the ABI).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_get_valuelen(
    info: usize,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> Res {
    // SAFETY: a NUL-terminated string argument.
    let k = unsafe { cstr(key)? };
    check_key(k)?;
    let i = read(info)?;
    match i.get(k) {
        // SAFETY: out-arguments.
        Some(v) => unsafe {
            put(valuelen, v.len() as c_int)?;
            put(flag, 1)
        },
        // SAFETY: out-argument.
        None => unsafe { put(flag, 0) },
    }
}

/// `MPI_Info_get_string` (MPI 4.0): `*buflen` in, the value's length + 1
/// out; the value is cut to fit.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_get_string(
    info: usize,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Res {
    // SAFETY: a NUL-terminated string argument; `buflen` in/out.
    let (k, cap) = unsafe { (cstr(key)?, get(buflen)?) };
    check_key(k)?;
    let i = read(info)?;
    match i.get(k) {
        Some(v) => {
            if cap > 0 {
                // SAFETY: `value` has `*buflen` bytes (the standard's rule).
                unsafe { put_str(value, cap as usize, v, std::ptr::null_mut())? };
            }
            // SAFETY: out-arguments.
            unsafe {
                put(buflen, (v.len() + 1) as c_int)?;
                put(flag, 1)
            }
        }
        // SAFETY: out-argument.
        None => unsafe { put(flag, 0) },
    }
}

/// `MPI_Info_get_nkeys`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_get_nkeys(info: usize, nkeys: *mut c_int) -> Res {
    let n = read(info)?.nkeys();
    // SAFETY: out-argument.
    unsafe { put(nkeys, n as c_int) }
}

/// `MPI_Info_get_nthkey`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_get_nthkey(info: usize, n: c_int, key: *mut c_char) -> Res {
    let i = read(info)?;
    let k = i.nthkey(n)?;
    // SAFETY: `key` has MPI_MAX_INFO_KEY bytes (the standard's rule).
    unsafe { put_str(key, MPI_MAX_INFO_KEY, k, std::ptr::null_mut()) }
}

/// `MPI_Info_dup`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_dup(info: usize, newinfo: *mut usize) -> Res {
    if newinfo.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let h = insert(read(info)?)?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(newinfo, h) }
}

/// `MPI_Info_free`: the handle becomes `MPI_INFO_NULL`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn info_free(info: *mut usize) -> Res {
    // SAFETY: in/out argument.
    let h = unsafe { get(info)? };
    if h == MPI_INFO_ENV {
        return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
    }
    lock(&INFOS).remove(h).map_err(bad_info)?;
    // SAFETY: as above.
    unsafe { put(info, MPI_INFO_NULL) }
}
