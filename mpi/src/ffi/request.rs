//! Request completion: wait and test, their all/any/some forms,
//! `MPI_Request_free` and `MPI_Request_get_status`.
//!
//! A request is taken out of its table (or lent, for the multiple forms)
//! before ferry waits on it, so no table lock is held while a thread
//! blocks. `MPI_REQUEST_NULL` entries complete at once with the empty
//! status, as the standard says.

use std::ffi::c_int;

use ferry::{Completion, Outcome};

use super::{get, mpi_fn, put, put_status};
use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_REQUEST_NULL, MPI_UNDEFINED};
use crate::error::{Fail, Res};
use crate::state::{lock, rt, ReqObj, Runtime};

fn bad_request(b: crate::handle::BadHandle) -> Fail {
    Fail::handle(MPI_ERR_REQUEST, b, "request")
}

/// The status of a completion, and its error as a failure on `comm`.
fn finish(done: &Completion, comm: usize) -> (MpiStatus, Res) {
    let status = MpiStatus::from_ferry(&done.status);
    let r = match done.status.error {
        None => Ok(()),
        Some(e) => Err(Fail::from(e).on(comm)),
    };
    (status, r)
}

mpi_fn! {
    /// `MPI_Wait`.
    MPI_Wait / PMPI_Wait(request: *mut usize, status: *mut MpiStatus) {
        // SAFETY: in/out argument.
        let h = unsafe { get(request)? };
        if h == MPI_REQUEST_NULL {
            // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
            unsafe { put_status(status, MpiStatus::EMPTY) };
            return Ok(());
        }
        let rt = rt()?;
        let ReqObj { mut req, comm } = lock(&rt.requests).remove(h).map_err(bad_request)?;
        // SAFETY: as above.
        unsafe { put(request, MPI_REQUEST_NULL)? };
        let done = req.wait().map_err(|e| Fail::from(e).on(comm))?;
        let (s, r) = finish(&done, comm);
        // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
        unsafe { put_status(status, s) };
        r
    }
}

mpi_fn! {
    /// `MPI_Test`.
    MPI_Test / PMPI_Test(request: *mut usize, flag: *mut c_int, status: *mut MpiStatus) {
        // SAFETY: in/out argument.
        let h = unsafe { get(request)? };
        if flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
        }
        if h == MPI_REQUEST_NULL {
            // SAFETY: flag checked; status is MPI_STATUS_IGNORE or valid.
            unsafe {
                put_status(status, MpiStatus::EMPTY);
                return put(flag, 1);
            }
        }
        let rt = rt()?;
        let mut table = lock(&rt.requests);
        let obj = table.get_mut(h).map_err(bad_request)?;
        let comm = obj.comm;
        let tested = obj.req.test();
        let done = match tested {
            Ok(Some(done)) => done,
            Ok(None) => {
                drop(table);
                // SAFETY: checked non-null.
                return unsafe { put(flag, 0) };
            }
            Err(e) => return Err(Fail::from(e).on(comm)),
        };
        let _ = table.remove(h);
        drop(table);
        let (s, r) = finish(&done, comm);
        // SAFETY: in/out request, checked flag, status or IGNORE.
        unsafe {
            put(request, MPI_REQUEST_NULL)?;
            put(flag, 1)?;
            put_status(status, s);
        }
        r
    }
}

mpi_fn! {
    /// `MPI_Request_free`: the operation goes on in the background.
    MPI_Request_free / PMPI_Request_free(request: *mut usize) {
        // SAFETY: in/out argument.
        let h = unsafe { get(request)? };
        if h == MPI_REQUEST_NULL {
            return Err(Fail::new(MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed"));
        }
        let rt = rt()?;
        let obj = lock(&rt.requests).remove(h).map_err(bad_request)?;
        drop(obj);
        // SAFETY: as above.
        unsafe { put(request, MPI_REQUEST_NULL) }
    }
}

mpi_fn! {
    /// `MPI_Request_get_status`: completion without freeing.
    MPI_Request_get_status / PMPI_Request_get_status(request: usize, flag: *mut c_int, status: *mut MpiStatus) {
        if flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
        }
        let found = if request == MPI_REQUEST_NULL {
            Some(ferry::Status::EMPTY)
        } else {
            let rt = rt()?;
            let table = lock(&rt.requests);
            let obj = table.get(request).map_err(bad_request)?;
            obj.req.get_status().map_err(|e| Fail::from(e).on(obj.comm))?
        };
        if let Some(s) = &found {
            // SAFETY: MPI_STATUS_IGNORE (null) or a status to fill.
            unsafe { put_status(status, MpiStatus::from_ferry(s)) };
        }
        // SAFETY: checked non-null.
        unsafe { put(flag, c_int::from(found.is_some())) }
    }
}

/// Requests lent out of the table for a multiple-completion call.
struct Lent<'a> {
    rt: &'a Runtime,
    handles: &'a mut [usize],
    reqs: Vec<ferry::Request>,
    comms: Vec<usize>,
}

impl<'a> Lent<'a> {
    /// Lends every non-null handle; on a bad one, puts the others back.
    fn take(rt: &'a Runtime, handles: &'a mut [usize]) -> Res<Lent<'a>> {
        let mut reqs = Vec::with_capacity(handles.len());
        let mut comms = Vec::with_capacity(handles.len());
        let mut table = lock(&rt.requests);
        for (i, &h) in handles.iter().enumerate() {
            if h == MPI_REQUEST_NULL {
                reqs.push(ferry::Request::NULL);
                comms.push(crate::abi::MPI_COMM_SELF);
                continue;
            }
            match table.lend(h) {
                Ok(o) => {
                    reqs.push(o.req);
                    comms.push(o.comm);
                }
                Err(b) => {
                    for (j, req) in reqs.into_iter().enumerate() {
                        if handles[j] != MPI_REQUEST_NULL {
                            table.restore(
                                handles[j],
                                ReqObj {
                                    req,
                                    comm: comms[j],
                                },
                            );
                        }
                    }
                    return Err(Fail::msg(
                        MPI_ERR_REQUEST,
                        format!("request {i} of the array: {}", bad_request(b).what),
                    ));
                }
            }
        }
        drop(table);
        Ok(Lent {
            rt,
            handles,
            reqs,
            comms,
        })
    }

    /// Puts back what is still pending; frees (and sets to
    /// `MPI_REQUEST_NULL`) what completed.
    fn settle(self) {
        let mut table = lock(&self.rt.requests);
        for ((h, req), comm) in self.handles.iter_mut().zip(self.reqs).zip(self.comms) {
            if *h == MPI_REQUEST_NULL {
                continue;
            }
            if req.is_null() {
                table.release(*h);
                *h = MPI_REQUEST_NULL;
            } else {
                table.restore(*h, ReqObj { req, comm });
            }
        }
    }

    fn comm(&self, i: usize) -> usize {
        self.comms
            .get(i)
            .copied()
            .unwrap_or(crate::abi::MPI_COMM_SELF)
    }
}

/// Writes the statuses of a completed `*all` call; `MPI_ERR_IN_STATUS` if
/// any failed.
fn all_statuses(done: &[Completion], statuses: Option<&mut [MpiStatus]>, lent: &Lent<'_>) -> Res {
    let failed = done.iter().position(|c| c.status.error.is_some());
    if let Some(out) = statuses {
        for (o, c) in out.iter_mut().zip(done) {
            *o = MpiStatus::from_ferry(&c.status);
        }
    }
    match failed {
        None => Ok(()),
        Some(i) => Err(
            Fail::new(MPI_ERR_IN_STATUS, "an operation failed: see the statuses").on(lent.comm(i)),
        ),
    }
}

/// The request array and status array of a multiple-completion call.
///
/// # Safety
/// `requests` is valid for `count` handles; `statuses` is null
/// (`MPI_STATUSES_IGNORE`) or valid for `count` statuses.
unsafe fn arrays<'a>(
    count: c_int,
    requests: *mut usize,
    statuses: *mut MpiStatus,
) -> Res<(&'a mut [usize], Option<&'a mut [MpiStatus]>)> {
    let n = usize::try_from(count)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("invalid count {count}")))?;
    if n == 0 {
        return Ok((&mut [], None));
    }
    if requests.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request array"));
    }
    // SAFETY: non-null and valid for `n` handles (the caller's promise).
    let reqs = unsafe { std::slice::from_raw_parts_mut(requests, n) };
    let st = if statuses.is_null() {
        None
    } else {
        // SAFETY: non-null and valid for `n` statuses (the caller's promise);
        // a status array cannot overlap the request array.
        Some(unsafe { std::slice::from_raw_parts_mut(statuses, n) })
    };
    Ok((reqs, st))
}

mpi_fn! {
    /// `MPI_Waitall`.
    MPI_Waitall / PMPI_Waitall(count: c_int, array_of_requests: *mut usize, array_of_statuses: *mut MpiStatus) {
        // SAFETY: the caller's arrays of `count` entries.
        let (handles, statuses) = unsafe { arrays(count, array_of_requests, array_of_statuses)? };
        if handles.is_empty() {
            return Ok(());
        }
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::wait_all(&mut lent.reqs);
        let first = lent.comm(0);
        let result = match &r {
            Ok(done) => all_statuses(done, statuses, &lent),
            Err(_) => Ok(()),
        };
        lent.settle();
        r.map_err(|e| Fail::from(e).on(first))?;
        result
    }
}

mpi_fn! {
    /// `MPI_Testall`: all complete (flag true, requests freed) or nothing
    /// changes.
    MPI_Testall / PMPI_Testall(count: c_int, array_of_requests: *mut usize, flag: *mut c_int, array_of_statuses: *mut MpiStatus) {
        if flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
        }
        // SAFETY: the caller's arrays of `count` entries.
        let (handles, statuses) = unsafe { arrays(count, array_of_requests, array_of_statuses)? };
        if handles.is_empty() {
            // SAFETY: checked non-null.
            return unsafe { put(flag, 1) };
        }
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::test_all(&mut lent.reqs);
        let first = lent.comm(0);
        let (complete, result) = match &r {
            Ok(Some(done)) => (true, all_statuses(done, statuses, &lent)),
            _ => (false, Ok(())),
        };
        lent.settle();
        r.map_err(|e| Fail::from(e).on(first))?;
        // SAFETY: checked non-null.
        unsafe { put(flag, c_int::from(complete))? };
        result
    }
}

/// Reports one completion of an `*any` call.
///
/// # Safety
/// `index` is valid for a write; `status` is null or valid.
unsafe fn any_result(
    outcome: Outcome<(usize, Completion)>,
    lent: &Lent<'_>,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    match outcome {
        Outcome::Completed((i, done)) => {
            let (s, r) = finish(&done, lent.comm(i));
            // SAFETY: forwarded.
            unsafe {
                put(index, c_int::try_from(i).unwrap_or(MPI_UNDEFINED))?;
                put_status(status, s);
            }
            r
        }
        _ => {
            // SAFETY: forwarded.
            unsafe {
                put(index, MPI_UNDEFINED)?;
                put_status(status, MpiStatus::EMPTY);
            }
            Ok(())
        }
    }
}

mpi_fn! {
    /// `MPI_Waitany`: `MPI_UNDEFINED` and the empty status if every request
    /// is null.
    MPI_Waitany / PMPI_Waitany(count: c_int, array_of_requests: *mut usize, index: *mut c_int, status: *mut MpiStatus) {
        if index.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null index pointer"));
        }
        // SAFETY: the caller's array of `count` requests.
        let (handles, _) = unsafe { arrays(count, array_of_requests, std::ptr::null_mut())? };
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::wait_any(&mut lent.reqs);
        let first = lent.comm(0);
        let result = match r {
            // SAFETY: index checked; status is IGNORE or valid.
            Ok(outcome) => unsafe { any_result(outcome, &lent, index, status) },
            Err(e) => Err(Fail::from(e).on(first)),
        };
        lent.settle();
        result
    }
}

mpi_fn! {
    /// `MPI_Testany`.
    MPI_Testany / PMPI_Testany(count: c_int, array_of_requests: *mut usize, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) {
        if index.is_null() || flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null index or flag pointer"));
        }
        // SAFETY: the caller's array of `count` requests.
        let (handles, _) = unsafe { arrays(count, array_of_requests, std::ptr::null_mut())? };
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::test_any(&mut lent.reqs);
        let first = lent.comm(0);
        let result = match r {
            Ok(None) => {
                // SAFETY: checked non-null.
                unsafe {
                    put(flag, 0)?;
                    put(index, MPI_UNDEFINED)
                }
            }
            Ok(Some(outcome)) => {
                // SAFETY: checked non-null; status is IGNORE or valid.
                unsafe {
                    put(flag, 1)?;
                    any_result(outcome, &lent, index, status)
                }
            }
            Err(e) => Err(Fail::from(e).on(first)),
        };
        lent.settle();
        result
    }
}

/// Reports the completions of a `*some` call.
///
/// # Safety
/// `outcount` is valid; `indices` is valid for `incount` ints; `statuses`
/// null or valid for `incount` statuses.
unsafe fn some_result(
    outcome: Outcome<Vec<(usize, Completion)>>,
    lent: &Lent<'_>,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> Res {
    let done = match outcome {
        Outcome::Completed(done) => done,
        _ => {
            // SAFETY: forwarded.
            return unsafe { put(outcount, MPI_UNDEFINED) };
        }
    };
    if !done.is_empty() && indices.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index array"));
    }
    let mut failed = None;
    for (k, (i, c)) in done.iter().enumerate() {
        if c.status.error.is_some() && failed.is_none() {
            failed = Some(*i);
        }
        // SAFETY: `indices` holds `incount` >= done.len() ints; `statuses`
        // likewise, when not MPI_STATUSES_IGNORE.
        unsafe {
            indices
                .add(k)
                .write(c_int::try_from(*i).unwrap_or(MPI_UNDEFINED));
            if !statuses.is_null() {
                statuses.add(k).write(MpiStatus::from_ferry(&c.status));
            }
        }
    }
    // SAFETY: forwarded.
    unsafe { put(outcount, c_int::try_from(done.len()).unwrap_or(c_int::MAX))? };
    match failed {
        None => Ok(()),
        Some(i) => Err(
            Fail::new(MPI_ERR_IN_STATUS, "an operation failed: see the statuses").on(lent.comm(i)),
        ),
    }
}

mpi_fn! {
    /// `MPI_Waitsome`.
    MPI_Waitsome / PMPI_Waitsome(incount: c_int, array_of_requests: *mut usize, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MpiStatus) {
        if outcount.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null outcount pointer"));
        }
        // SAFETY: the caller's array of `incount` requests.
        let (handles, _) = unsafe { arrays(incount, array_of_requests, std::ptr::null_mut())? };
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::wait_some(&mut lent.reqs);
        let first = lent.comm(0);
        let result = match r {
            // SAFETY: the caller's arrays of `incount` entries.
            Ok(o) => unsafe { some_result(o, &lent, outcount, array_of_indices, array_of_statuses) },
            Err(e) => Err(Fail::from(e).on(first)),
        };
        lent.settle();
        result
    }
}

mpi_fn! {
    /// `MPI_Testsome`.
    MPI_Testsome / PMPI_Testsome(incount: c_int, array_of_requests: *mut usize, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MpiStatus) {
        if outcount.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null outcount pointer"));
        }
        // SAFETY: the caller's array of `incount` requests.
        let (handles, _) = unsafe { arrays(incount, array_of_requests, std::ptr::null_mut())? };
        let mut lent = Lent::take(rt()?, handles)?;
        let r = ferry::test_some(&mut lent.reqs);
        let first = lent.comm(0);
        let result = match r {
            // SAFETY: the caller's arrays of `incount` entries.
            Ok(o) => unsafe { some_result(o, &lent, outcount, array_of_indices, array_of_statuses) },
            Err(e) => Err(Fail::from(e).on(first)),
        };
        lent.settle();
        result
    }
}
