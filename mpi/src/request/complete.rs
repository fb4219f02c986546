//! The completion calls: `MPI_Wait`, `MPI_Test`, `MPI_Waitall`,
//! `MPI_Testall`, `MPI_Waitany`, `MPI_Testany`, `MPI_Waitsome` and
//! `MPI_Testsome`, each a [`Batch`] of its requests (one for the
//! single-request calls) completed on the one path of `batch.rs`.
//!
//! `MPI_REQUEST_NULL` and inactive persistent requests complete at once
//! with the empty status, as the standard says (an inactive persistent
//! request keeps its handle); `MPIX_REQUEST_EMPTY` likewise, becoming
//! `MPI_REQUEST_NULL`.

use std::ffi::c_int;

use ferry::{Completion, Outcome};

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_REQUEST_NULL, MPI_UNDEFINED};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, OutSlice, StatusOut};
use crate::request::batch::{self, in_status, Batch, Block, Errors};
use crate::request::handle::ReqHandle;

/// A count argument as a length.
pub(crate) fn count_of(count: c_int) -> Res<usize> {
    usize::try_from(count).map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("invalid count {count}")))
}

/// Fails on a null pointer the call must write whatever happens (checked
/// first, so that nothing completes in a call that then fails).
fn non_null<T: Copy>(p: &Out<'_, T>, what: &'static str) -> Res {
    match p.is_null() {
        true => Err(Fail::new(MPI_ERR_ARG, what)),
        false => Ok(()),
    }
}

/// `MPI_Wait` (`Block::Wait`) or `MPI_Test` on one request: the handle
/// afterwards, and `Some(result)` if it completed.
fn one(h: usize, block: Block, status: &mut StatusOut<'_>) -> Res<(usize, Option<Res>)> {
    if ReqHandle::is_trivial(h) {
        status.set(MpiStatus::EMPTY);
        return Ok((MPI_REQUEST_NULL, Some(Ok(()))));
    }
    let mut handle = [h];
    let done = batch::with(&mut handle, true, |b| b.all(block, status, Errors::Own))?;
    Ok((handle[0], done))
}

/// `MPI_Wait`.
pub(crate) fn wait(mut request: Out<'_, usize>, mut status: StatusOut<'_>) -> Res {
    let h = request.get()?;
    let (after, done) = one(h, Block::Wait, &mut status)?;
    if after != h {
        request.set(after)?;
    }
    // A wait returns only once the request is complete.
    done.unwrap_or(Ok(()))
}

/// `MPI_Test`.
pub(crate) fn test(
    mut request: Out<'_, usize>,
    mut flag: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    let h = request.get()?;
    non_null(&flag, "a null flag pointer")?;
    let (after, done) = one(h, Block::Test, &mut status)?;
    if after != h {
        request.set(after)?;
    }
    flag.set(c_int::from(done.is_some()))?;
    done.unwrap_or(Ok(()))
}

/// `MPI_Waitall`.
pub(crate) fn waitall(
    count: c_int,
    array_of_requests: &mut [usize],
    mut array_of_statuses: Option<OutSlice<'_, MpiStatus>>,
) -> Res {
    if count_of(count)? == 0 {
        return Ok(());
    }
    let done = batch::with(array_of_requests, true, |b| {
        b.all(Block::Wait, &mut array_of_statuses, Errors::InStatus)
    })?;
    done.unwrap_or(Ok(()))
}

/// `MPI_Testall`: all complete (flag true, requests freed) or nothing
/// changes.
pub(crate) fn testall(
    count: c_int,
    array_of_requests: &mut [usize],
    mut flag: Out<'_, c_int>,
    mut array_of_statuses: Option<OutSlice<'_, MpiStatus>>,
) -> Res {
    non_null(&flag, "a null flag pointer")?;
    if count_of(count)? == 0 {
        return flag.set(1);
    }
    let done = batch::with(array_of_requests, true, |b| {
        b.all(Block::Test, &mut array_of_statuses, Errors::InStatus)
    })?;
    flag.set(c_int::from(done.is_some()))?;
    done.unwrap_or(Ok(()))
}

/// An `*any` call's find: the entry and ferry's completion of it (`None`
/// for one complete without ferry); `None` if every entry is inactive.
type Found = Option<(usize, Option<Completion>)>;

/// An `Outcome` of ferry's `any` functions as an entry and its completion.
fn any_found(o: Outcome<(usize, Completion)>) -> Found {
    o.completed().map(|(i, c)| (i, Some(c)))
}

/// Reports one completion of an `*any` call.
fn any_result(
    b: &mut Batch<'_>,
    found: Found,
    index: &mut Out<'_, c_int>,
    status: &mut StatusOut<'_>,
) -> Res {
    match found {
        Some((i, c)) => {
            let report = b.report(i, c);
            index.set(c_int::try_from(i).unwrap_or(MPI_UNDEFINED))?;
            report.write_status(status)
        }
        None => {
            index.set(MPI_UNDEFINED)?;
            status.set(MpiStatus::EMPTY);
            Ok(())
        }
    }
}

/// `MPI_Waitany`: `MPI_UNDEFINED` and the empty status if every request
/// is null or inactive.
pub(crate) fn waitany(
    count: c_int,
    array_of_requests: &mut [usize],
    mut index: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    non_null(&index, "a null index pointer")?;
    count_of(count)?;
    batch::with(array_of_requests, false, |b| {
        let first = b.first_comm();
        let found = loop {
            let pending = b.advance_pending()?;
            if let Some(i) = b.first_ready() {
                break Some((i, None));
            }
            if !pending {
                let _waiting = b.waiting();
                break any_found(
                    ferry::wait_any(&mut b.s.reqs).map_err(|e| Fail::from(e).on(first))?,
                );
            }
            if let Some(Outcome::Completed((i, c))) =
                ferry::test_any(&mut b.s.reqs).map_err(|e| Fail::from(e).on(first))?
            {
                break Some((i, Some(c)));
            }
            std::thread::yield_now();
        };
        any_result(b, found, &mut index, &mut status)
    })
}

/// `MPI_Testany`.
pub(crate) fn testany(
    count: c_int,
    array_of_requests: &mut [usize],
    mut index: Out<'_, c_int>,
    mut flag: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    if index.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index or flag pointer"));
    }
    count_of(count)?;
    batch::with(array_of_requests, false, |b| {
        let pending = b.advance_pending()?;
        let tested = match b.first_ready() {
            Some(i) => Some(Some((i, None))),
            None => {
                let first = b.first_comm();
                match ferry::test_any(&mut b.s.reqs).map_err(|e| Fail::from(e).on(first))? {
                    // Every ferry request is inactive, but one polled here is not.
                    Some(Outcome::Undefined) if pending => None,
                    t => t.map(any_found),
                }
            }
        };
        match tested {
            None => {
                flag.set(0)?;
                index.set(MPI_UNDEFINED)
            }
            Some(found) => {
                flag.set(1)?;
                any_result(b, found, &mut index, &mut status)
            }
        }
    })
}

/// The out-arguments of a `*some` call.
struct SomeOut<'a> {
    outcount: Out<'a, c_int>,
    indices: Option<OutSlice<'a, c_int>>,
    statuses: Option<OutSlice<'a, MpiStatus>>,
}

/// Reports the completions of a `*some` call: ferry's, plus the entries
/// complete without ferry. `MPI_UNDEFINED` if every entry is inactive.
fn some_result(
    b: &mut Batch<'_>,
    pending: bool,
    ferry_done: Outcome<Vec<(usize, Completion)>>,
    out: &mut SomeOut<'_>,
) -> Res {
    let any_ready = b.first_ready().is_some();
    let done = match ferry_done {
        Outcome::Completed(v) => v,
        Outcome::Undefined if !any_ready && !pending => return out.outcount.set(MPI_UNDEFINED),
        Outcome::Undefined => Vec::new(),
    };
    let mut indices = match out.indices.as_mut() {
        Some(indices) => Some(indices),
        None if any_ready || !done.is_empty() => {
            return Err(Fail::new(MPI_ERR_ARG, "a null index array"));
        }
        None => None,
    };
    let mut failed = None;
    let mut k = 0usize;
    let mut emit = |b: &mut Batch<'_>, i: usize, c: Option<Completion>| {
        let report = b.report(i, c);
        if report.result.is_err() && failed.is_none() {
            failed = Some(i);
        }
        if let Some(indices) = indices.as_mut() {
            indices.set(k, c_int::try_from(i).unwrap_or(MPI_UNDEFINED));
        }
        if let Some(statuses) = out.statuses.as_mut() {
            statuses.set(k, report.status);
        }
        k += 1;
    };
    // The entries complete without ferry first (a ferry completion never
    // leaves an entry ready), then ferry's.
    for i in 0..b.len() {
        if b.is_ready(i) {
            emit(b, i, None);
        }
    }
    for (i, c) in done {
        emit(b, i, Some(c));
    }
    out.outcount.set(c_int::try_from(k).unwrap_or(c_int::MAX))?;
    match failed {
        None => Ok(()),
        Some(i) => Err(in_status(b.comm(i))),
    }
}

/// `MPI_Waitsome` (`Block::Wait`) and `MPI_Testsome`.
pub(crate) fn some(
    block: Block,
    incount: c_int,
    array_of_requests: &mut [usize],
    outcount: Out<'_, c_int>,
    array_of_indices: Option<OutSlice<'_, c_int>>,
    array_of_statuses: Option<OutSlice<'_, MpiStatus>>,
) -> Res {
    let mut out = SomeOut {
        outcount,
        indices: array_of_indices,
        statuses: array_of_statuses,
    };
    non_null(&out.outcount, "a null outcount pointer")?;
    count_of(incount)?;
    batch::with(array_of_requests, false, |b| {
        let first = b.first_comm();
        loop {
            let pending = b.advance_pending()?;
            let ready = b.first_ready().is_some();
            let blocks = block == Block::Wait && !ready && !pending;
            let _waiting = if blocks { b.waiting() } else { None };
            let reqs = &mut b.s.reqs;
            let r = if blocks {
                ferry::wait_some(reqs)
            } else {
                ferry::test_some(reqs)
            };
            let done = r.map_err(|e| Fail::from(e).on(first))?;
            let nothing = !ready
                && match &done {
                    Outcome::Completed(v) => v.is_empty(),
                    Outcome::Undefined => true,
                };
            if block == Block::Wait && pending && nothing {
                std::thread::yield_now();
                continue;
            }
            return some_result(b, pending, done, &mut out);
        }
    })
}
