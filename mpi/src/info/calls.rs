//! `MPI_Info` objects. Usable before `MPI_Init`, as the standard allows.

use std::ffi::c_int;

use crate::ffi::args::{Out, TextOut};

use crate::abi::class::*;
use crate::abi::{MPI_INFO_ENV, MPI_INFO_NULL};
use crate::error::{Fail, Res};
use crate::info::INFOS;
use crate::info::{check_key, Info};
use crate::sync::lock;

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
pub(crate) fn info_create(mut info: Out<'_, usize>) -> Res {
    if info.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let h = insert(Info::default())?;
    info.set(h)
}

/// `MPI_Info_set`.
pub(crate) fn info_set(info: usize, key: &str, value: &str) -> Res {
    lock(&INFOS)
        .get_mut(info)
        .map_err(bad_info)?
        .set(key, value)
}

/// `MPI_Info_delete`.
pub(crate) fn info_delete(info: usize, key: &str) -> Res {
    lock(&INFOS).get_mut(info).map_err(bad_info)?.delete(key)
}

/// `MPI_Info_get` (deprecated in MPI 4.0, still in the ABI): copies at
/// most `valuelen` characters and a NUL.
pub(crate) fn info_get(
    info: usize,
    key: &str,
    valuelen: c_int,
    mut value: TextOut<'_>,
    mut flag: Out<'_, c_int>,
) -> Res {
    check_key(key)?;
    if valuelen < 0 {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("invalid valuelen {valuelen}"),
        ));
    }
    let i = read(info)?;
    match i.get(key) {
        // `value` has valuelen + 1 bytes (the standard's rule: the table's
        // len(value)=valuelen+1).
        Some(v) => {
            value.set(v, None)?;
            flag.set(1)
        }
        None => flag.set(0),
    }
}

/// `MPI_Info_get_valuelen` (deprecated in MPI 4.0, still in the ABI).
pub(crate) fn info_get_valuelen(
    info: usize,
    key: &str,
    mut valuelen: Out<'_, c_int>,
    mut flag: Out<'_, c_int>,
) -> Res {
    check_key(key)?;
    let i = read(info)?;
    match i.get(key) {
        Some(v) => {
            valuelen.set(v.len() as c_int)?;
            flag.set(1)
        }
        None => flag.set(0),
    }
}

/// `MPI_Info_get_string` (MPI 4.0): `*buflen` in, the value's length + 1
/// out; the value is cut to fit.
pub(crate) fn info_get_string(
    info: usize,
    key: &str,
    mut buflen: Out<'_, c_int>,
    mut value: TextOut<'_>,
    mut flag: Out<'_, c_int>,
) -> Res {
    // `value` has *buflen bytes (the table's len(value)=*buflen).
    let cap = buflen.get()?;
    check_key(key)?;
    let i = read(info)?;
    match i.get(key) {
        Some(v) => {
            if cap > 0 {
                value.set(v, None)?;
            }
            buflen.set((v.len() + 1) as c_int)?;
            flag.set(1)
        }
        None => flag.set(0),
    }
}

/// `MPI_Info_get_nkeys`.
pub(crate) fn info_get_nkeys(info: usize, mut nkeys: Out<'_, c_int>) -> Res {
    let n = read(info)?.nkeys();
    nkeys.set(n as c_int)
}

/// `MPI_Info_get_nthkey`.
pub(crate) fn info_get_nthkey(info: usize, n: c_int, mut key: TextOut<'_>) -> Res {
    let i = read(info)?;
    let k = i.nthkey(n)?;
    key.set(k, None)
}

/// `MPI_Info_dup`.
pub(crate) fn info_dup(info: usize, mut newinfo: Out<'_, usize>) -> Res {
    if newinfo.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let h = insert(read(info)?)?;
    newinfo.set(h)
}

/// `MPI_Info_free`: the handle becomes `MPI_INFO_NULL`.
pub(crate) fn info_free(mut info: Out<'_, usize>) -> Res {
    let h = info.get()?;
    if h == MPI_INFO_ENV {
        return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
    }
    lock(&INFOS).remove(h).map_err(bad_info)?;
    info.set(MPI_INFO_NULL)
}
