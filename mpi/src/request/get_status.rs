//! `MPI_Request_get_status` and MPI 4.1's `MPI_Request_get_status_all`,
//! `_any` and `_some`: the statuses of complete requests, completing and
//! freeing nothing ([`ReqObj::peek`] on each entry of a lent batch).

use std::ffi::c_int;

use ferry::Request;

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_UNDEFINED};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, OutSlice, StatusOut};
use crate::request::batch::{self, Batch};
use crate::request::complete::count_of;
use crate::request::handle::{give_back, lend, ReqHandle};
use crate::state::rt;

/// `MPI_Request_get_status`: completion without freeing.
pub(crate) fn request_get_status(
    request: usize,
    mut flag: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    let found = if ReqHandle::is_trivial(request) {
        Some(MpiStatus::EMPTY)
    } else {
        let rt = rt()?;
        let mut obj = lend(rt, request)?;
        let found = obj.peek();
        give_back(rt, request, obj)?;
        found?
    };
    if let Some(s) = found {
        status.set(s);
    }
    flag.set(c_int::from(found.is_some()))
}

/// What the entries of an array show: the statuses of those complete now
/// (`(index, status)`, inactive and null entries left out), and how many
/// are active.
struct Peeked {
    found: Vec<(usize, MpiStatus)>,
    active: usize,
}

/// Peeks at every entry of `handles` (a copy: nothing is freed), after one
/// progress pass through ferry for all of them (each peek then reads engine
/// state, and tests only the requests with post steps).
fn peek_all(count: c_int, handles: &[usize]) -> Res<Peeked> {
    count_of(count)?;
    let mut copy = handles.to_vec();
    batch::with(&mut copy, false, |b: &mut Batch<'_>| {
        let first = b.first_comm();
        ferry::get_status_some(&b.s.reqs).map_err(|e| Fail::from(e).on(first))?;
        let mut found = Vec::new();
        let mut active = 0;
        for i in 0..b.len() {
            let r = std::mem::replace(&mut b.s.reqs[i], Request::NULL);
            let Some(obj) = b.obj(i) else {
                continue;
            };
            if obj.inactive() {
                continue;
            }
            active += 1;
            obj.put_ferry(r);
            let s = obj.peek();
            let r = obj.take_ferry();
            b.s.reqs[i] = r;
            if let Some(s) = s? {
                found.push((i, s));
            }
        }
        Ok(Peeked { found, active })
    })
}

/// `MPI_Request_get_status_all` (MPI 4.1): every status if all are
/// complete; completes and frees nothing.
pub(crate) fn request_get_status_all(
    count: c_int,
    array_of_requests: &[usize],
    mut flag: Out<'_, c_int>,
    mut array_of_statuses: Option<OutSlice<'_, MpiStatus>>,
) -> Res {
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    let p = peek_all(count, array_of_requests)?;
    let all = p.found.len() >= p.active;
    if all {
        if let Some(out) = array_of_statuses.as_mut() {
            let mut found = p.found.iter().peekable();
            for i in 0..array_of_requests.len() {
                match found.next_if(|(j, _)| *j == i) {
                    Some((_, s)) => out.set(i, *s),
                    None => out.set(i, MpiStatus::EMPTY),
                }
            }
        }
    }
    flag.set(c_int::from(all))
}

/// `MPI_Request_get_status_any` (MPI 4.1).
pub(crate) fn request_get_status_any(
    count: c_int,
    array_of_requests: &[usize],
    mut index: Out<'_, c_int>,
    mut flag: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    if flag.is_null() || index.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index or flag pointer"));
    }
    let p = peek_all(count, array_of_requests)?;
    match p.found.first() {
        Some(&(i, s)) => {
            flag.set(1)?;
            index.set(c_int::try_from(i).unwrap_or(MPI_UNDEFINED))?;
            status.set(s);
        }
        None if p.active == 0 => {
            flag.set(1)?;
            index.set(MPI_UNDEFINED)?;
            status.set(MpiStatus::EMPTY);
        }
        None => {
            flag.set(0)?;
            index.set(MPI_UNDEFINED)?;
        }
    }
    Ok(())
}

/// `MPI_Request_get_status_some` (MPI 4.1).
pub(crate) fn request_get_status_some(
    incount: c_int,
    array_of_requests: &[usize],
    mut outcount: Out<'_, c_int>,
    mut array_of_indices: Option<OutSlice<'_, c_int>>,
    mut array_of_statuses: Option<OutSlice<'_, MpiStatus>>,
) -> Res {
    if outcount.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null outcount pointer"));
    }
    let p = peek_all(incount, array_of_requests)?;
    if p.active == 0 {
        return outcount.set(MPI_UNDEFINED);
    }
    if !p.found.is_empty() && array_of_indices.is_none() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index array"));
    }
    for (k, &(i, s)) in p.found.iter().enumerate() {
        if let Some(indices) = array_of_indices.as_mut() {
            indices.set(k, c_int::try_from(i).unwrap_or(MPI_UNDEFINED));
        }
        if let Some(statuses) = array_of_statuses.as_mut() {
            statuses.set(k, s);
        }
    }
    outcount.set(c_int::try_from(p.found.len()).unwrap_or(c_int::MAX))
}
