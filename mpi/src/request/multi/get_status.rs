//! MPI 4.1's `MPI_Request_get_status_all`, `_any` and `_some`: the
//! statuses of complete requests, completing and freeing nothing, over the
//! lent entries of `multi`.

use super::{arrays, lent, Lent};
use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_UNDEFINED};
use crate::error::{Fail, Res};
use crate::ffi::raw::put;
use crate::request::single::peek_one;
use ferry::Request;
use std::ffi::c_int;

/// The statuses of the lent entries that are complete now, completing
/// nothing (`peek_one` on each): `(index, status)`, inactive and null
/// entries left out. Progresses once through ferry first.
fn peek_all(lent: &mut Lent<'_>) -> Res<Vec<(usize, MpiStatus)>> {
    let first = lent.first_comm();
    // One progress pass for all of them (each `peek_one` below then reads
    // engine state, and tests only the requests with post steps).
    ferry::get_status_some(&lent.s.reqs).map_err(|e| Fail::from(e).on(first))?;
    let mut found = Vec::new();
    for i in 0..lent.s.objs.len() {
        let Some(obj) = lent.s.objs[i].as_mut() else {
            continue;
        };
        if obj.inactive() {
            continue;
        }
        let r = std::mem::replace(&mut lent.s.reqs[i], Request::NULL);
        obj.put_ferry(r);
        let s = peek_one(obj);
        lent.s.reqs[i] = obj.take_ferry();
        if let Some(s) = s? {
            found.push((i, s));
        }
    }
    Ok(found)
}

/// `MPI_Request_get_status_all` (MPI 4.1): every status if all are
/// complete; completes and frees nothing.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn request_get_status_all(
    count: c_int,
    array_of_requests: *const usize,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    // SAFETY: the caller's arrays of `count` entries; the handles are
    // not written (no entry completes or is freed here).
    let (handles, statuses) =
        unsafe { arrays(count, array_of_requests.cast_mut(), array_of_statuses)? };
    let mut copy = handles.to_vec();
    let (found, active) = lent(&mut copy, |lent| {
        let active = lent
            .s
            .objs
            .iter()
            .flatten()
            .filter(|o| !o.inactive())
            .count();
        Ok((peek_all(lent)?, active))
    })?;
    let all = found.len() >= active;
    if all {
        if let Some(out) = statuses {
            out.fill(MpiStatus::EMPTY);
            for (i, s) in found {
                out[i] = s;
            }
        }
    }
    // SAFETY: checked non-null.
    unsafe { put(flag, c_int::from(all)) }
}

/// `MPI_Request_get_status_any` (MPI 4.1).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn request_get_status_any(
    count: c_int,
    array_of_requests: *const usize,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    if flag.is_null() || index.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index or flag pointer"));
    }
    // SAFETY: as for get_status_all.
    let (handles, _) =
        unsafe { arrays(count, array_of_requests.cast_mut(), std::ptr::null_mut())? };
    let mut copy = handles.to_vec();
    let (found, any_active) = lent(&mut copy, |lent| {
        let active = lent.s.objs.iter().flatten().any(|o| !o.inactive());
        Ok((peek_all(lent)?.into_iter().next(), active))
    })?;
    // SAFETY: checked non-null; status is IGNORE or valid.
    unsafe {
        match found {
            Some((i, s)) => {
                put(flag, 1)?;
                put(index, c_int::try_from(i).unwrap_or(MPI_UNDEFINED))?;
                crate::ffi::raw::put_status(status, s);
            }
            None if !any_active => {
                put(flag, 1)?;
                put(index, MPI_UNDEFINED)?;
                crate::ffi::raw::put_status(status, MpiStatus::EMPTY);
            }
            None => {
                put(flag, 0)?;
                put(index, MPI_UNDEFINED)?;
            }
        }
    }
    Ok(())
}

/// `MPI_Request_get_status_some` (MPI 4.1).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn request_get_status_some(
    incount: c_int,
    array_of_requests: *const usize,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    if outcount.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null outcount pointer"));
    }
    // SAFETY: as for get_status_all.
    let (handles, _) =
        unsafe { arrays(incount, array_of_requests.cast_mut(), std::ptr::null_mut())? };
    let mut copy = handles.to_vec();
    let (found, any_active) = lent(&mut copy, |lent| {
        let active = lent.s.objs.iter().flatten().any(|o| !o.inactive());
        Ok((peek_all(lent)?, active))
    })?;
    if !any_active {
        // SAFETY: checked non-null.
        return unsafe { put(outcount, MPI_UNDEFINED) };
    }
    if !found.is_empty() && array_of_indices.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index array"));
    }
    for (k, (i, s)) in found.iter().enumerate() {
        // SAFETY: the caller's arrays of `incount` entries; at most
        // `incount` are reported.
        unsafe {
            array_of_indices
                .add(k)
                .write(c_int::try_from(*i).unwrap_or(MPI_UNDEFINED));
            if !array_of_statuses.is_null() {
                array_of_statuses.add(k).write(*s);
            }
        }
    }
    // SAFETY: checked non-null.
    unsafe { put(outcount, c_int::try_from(found.len()).unwrap_or(c_int::MAX)) }
}
