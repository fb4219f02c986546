//! Completing many requests: `MPI_Waitall`, `MPI_Testall`, `MPI_Waitany`,
//! `MPI_Testany`, `MPI_Waitsome`, `MPI_Testsome` and MPI 4.1's
//! `MPI_Request_get_status_all/any/some`.
//!
//! The requests are lent out of their table together ([`Lent`]); their
//! ferry operations go through ferry's own multiple-completion functions
//! in one call, then each completed request runs its post step. The
//! vectors this needs are per-thread scratch kept between calls, so a
//! steady loop of these calls allocates nothing in this layer.
//!
//! Requests that completed inside their initiating call
//! ([`State::Ready`]) are complete without asking ferry: the `any` forms
//! report them first, the `some` forms with whatever ferry completes.

use std::cell::RefCell;
use std::ffi::c_int;

use ferry::{Completion, Outcome, Request};

use crate::abi::class::*;
use crate::abi::MPIX_REQUEST_EMPTY;
use crate::abi::{MpiStatus, MPI_COMM_SELF, MPI_REQUEST_NULL, MPI_UNDEFINED};
use crate::error::{Fail, Res};
use crate::ffi::raw::put;
use crate::request::direct;
use crate::request::object::{finish, Report, ReqObj, State};
use crate::request::plain::TestAll;
use crate::request::single::bad_request;
use crate::state::{rt, Runtime};

/// Per-thread vectors of the lent requests; reused between calls.
#[derive(Debug, Default)]
struct Scratch {
    /// The lent objects (`None` for `MPI_REQUEST_NULL`).
    objs: Vec<Option<ReqObj>>,
    /// Their ferry operations, in the same order (`Request::NULL` for
    /// everything ferry has nothing to do with).
    reqs: Vec<Request>,
    /// Completions from `wait_all_into`.
    done: Vec<Completion>,
    /// The direct handles met (`direct.rs`): a second one is busy.
    seen: direct::Seen,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch (fresh vectors if it is in use,
/// which no call path does today).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

/// The requests of one call, lent out of their table.
struct Lent<'a> {
    rt: &'static Runtime,
    handles: &'a mut [usize],
    s: &'a mut Scratch,
}

impl<'a> Lent<'a> {
    /// Lends every non-null handle; on a bad one, puts the others back.
    fn take(rt: &'static Runtime, handles: &'a mut [usize], s: &'a mut Scratch) -> Res<Lent<'a>> {
        s.objs.clear();
        s.reqs.clear();
        s.done.clear();
        let (objs, seen) = (&mut s.objs, &mut s.seen);
        seen.begin();
        rt.requests.with(|t| {
            for (i, &h) in handles.iter().enumerate() {
                if h == MPI_REQUEST_NULL {
                    objs.push(None);
                    continue;
                }
                if h == MPIX_REQUEST_EMPTY {
                    // Complete, with no table entry: a ready request here.
                    objs.push(Some(ReqObj::ready(MpiStatus::EMPTY, MPI_COMM_SELF)));
                    continue;
                }
                let lent = match direct::decode(h) {
                    Some(r) if seen.first_time(r) => {
                        objs.push(Some(direct::lend(rt, r)));
                        continue;
                    }
                    Some(_) => Err(crate::handle::BadHandle::Busy),
                    None => t.lend(h),
                };
                match lent {
                    Ok(mut o) => {
                        o.promote(rt);
                        objs.push(Some(o));
                    }
                    Err(b) => {
                        for (&h, o) in handles.iter().zip(objs.drain(..)) {
                            match o {
                                _ if h == MPIX_REQUEST_EMPTY => {}
                                // (Nothing ran on it: it is still pending.)
                                Some(o) if direct::is_direct(h) => drop(direct::give_back(o)),
                                Some(o) => t.restore(h, o),
                                None => {}
                            }
                        }
                        return Err(Fail::msg(
                            MPI_ERR_REQUEST,
                            format!("request {i} of the array: {}", bad_request(b).what),
                        ));
                    }
                }
            }
            Ok(())
        })??;
        s.reqs.extend(
            s.objs
                .iter_mut()
                .map(|o| o.as_mut().map_or(Request::NULL, ReqObj::take_ferry)),
        );
        Ok(Lent { rt, handles, s })
    }

    /// The communicator errors of entry `i` are raised on.
    fn comm(&self, i: usize) -> usize {
        self.s
            .objs
            .get(i)
            .and_then(Option::as_ref)
            .map_or(MPI_COMM_SELF, |o| o.comm)
    }

    /// The first entry's communicator (for an error of the whole call).
    fn first_comm(&self) -> usize {
        (0..self.s.objs.len())
            .find(|&i| self.s.objs[i].is_some())
            .map_or(MPI_COMM_SELF, |i| self.comm(i))
    }

    /// Registers the entries for `MPI_Cancel` from other threads while
    /// this one blocks (`waiting.rs`).
    fn waiting(&self) -> Option<crate::request::waiting::Waiting> {
        crate::request::waiting::enter(
            self.rt,
            self.handles.iter().copied().zip(self.s.reqs.iter()),
        )
    }

    /// Polls every entry the C layer completes itself once (`MPI_Comm_idup`,
    /// `MPI_Isendrecv`, generalized requests; those done become ready);
    /// true if one is still pending.
    fn advance_pending(&mut self) -> Res<bool> {
        let mut pending = false;
        for o in self.s.objs.iter_mut().flatten() {
            pending |= o.poll_pending()?;
        }
        Ok(pending)
    }

    /// The first entry that completed inside its call.
    fn first_ready(&self) -> Option<usize> {
        self.s
            .objs
            .iter()
            .position(|o| o.as_ref().is_some_and(ReqObj::is_ready))
    }

    /// Entry `i`'s report, given ferry's completion of its operation (if
    /// it had one). Entries ferry did not complete are reported only if
    /// they are null, inactive or ready.
    fn report(&mut self, i: usize, c: Option<Completion>) -> Report {
        let Some(obj) = self.s.objs[i].as_mut() else {
            return Report::empty();
        };
        match (&obj.state, c) {
            (State::Active(_), Some(c)) => finish(obj, c),
            _ if obj.is_ready() => obj.complete_ready().unwrap_or_else(Report::empty),
            _ => Report::empty(),
        }
    }

    /// Puts back what is still pending or persistent; frees (and sets to
    /// `MPI_REQUEST_NULL`) what completed.
    fn settle(self) -> Res {
        let Lent { rt, handles, s } = self;
        for (o, r) in s.objs.iter_mut().zip(s.reqs.drain(..)) {
            if let Some(o) = o {
                o.put_ferry(r);
            }
        }
        let objs = &mut s.objs;
        let mut direct_failed = Ok(());
        rt.requests.with(|t| {
            for (h, o) in handles.iter_mut().zip(objs.drain(..)) {
                let Some(o) = o else { continue };
                if *h == MPIX_REQUEST_EMPTY {
                    if o.inactive() {
                        *h = MPI_REQUEST_NULL;
                    }
                    continue;
                }
                if direct::is_direct(*h) {
                    match direct::give_back(o) {
                        Ok(true) => *h = MPI_REQUEST_NULL,
                        Ok(false) => {}
                        Err(f) if direct_failed.is_ok() => direct_failed = Err(f),
                        Err(_) => {}
                    }
                    continue;
                }
                if o.inactive() && !o.persistent() {
                    t.release(*h);
                    *h = MPI_REQUEST_NULL;
                } else {
                    t.restore(*h, o);
                }
            }
        })?;
        direct_failed
    }
}

/// Runs a multiple-completion body over lent requests and settles them.
fn lent<R>(handles: &mut [usize], body: impl FnOnce(&mut Lent<'_>) -> Res<R>) -> Res<R> {
    let rt = rt()?;
    with_scratch(|s| {
        let mut lent = Lent::take(rt, handles, s)?;
        let r = body(&mut lent);
        lent.settle()?;
        r
    })
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

/// `MPI_ERR_IN_STATUS` on entry `i`'s communicator.
pub(crate) fn in_status(comm: usize) -> Fail {
    Fail::new(MPI_ERR_IN_STATUS, "an operation failed: see the statuses").on(comm)
}

/// Reports every entry of a completed `*all` call.
fn all_reports(
    lent: &mut Lent<'_>,
    statuses: Option<&mut [MpiStatus]>,
    done: Option<Vec<Completion>>,
) -> Res {
    let n = lent.s.objs.len();
    let mut completions = match done {
        Some(v) => v,
        None => std::mem::take(&mut lent.s.done),
    };
    let mut failed = None;
    let mut out = statuses;
    for (i, c) in completions.drain(..).enumerate().take(n) {
        let report = lent.report(i, Some(c));
        if report.result.is_err() && failed.is_none() {
            failed = Some(i);
        }
        if let Some(out) = out.as_deref_mut() {
            out[i] = report.status;
        }
    }
    // Keep the (emptied) vector's capacity for the next call.
    if lent.s.done.capacity() < completions.capacity() {
        lent.s.done = completions;
    }
    match failed {
        None => Ok(()),
        Some(i) => Err(in_status(lent.comm(i))),
    }
}

/// `MPI_Waitall`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn waitall(
    count: c_int,
    array_of_requests: *mut usize,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    // SAFETY: the caller's arrays of `count` entries.
    let (handles, mut statuses) = unsafe { arrays(count, array_of_requests, array_of_statuses)? };
    if handles.is_empty() {
        return Ok(());
    }
    if let Some(r) = crate::request::plain::waitall(rt()?, handles, statuses.as_deref_mut()) {
        return r;
    }
    lent(handles, |lent| {
        let first = lent.first_comm();
        while lent.advance_pending()? {
            std::thread::yield_now();
        }
        let _waiting = lent.waiting();
        let s = &mut *lent.s;
        ferry::wait_all_into(&mut s.reqs, &mut s.done).map_err(|e| Fail::from(e).on(first))?;
        all_reports(lent, statuses, None)
    })
}

/// `MPI_Testall`: all complete (flag true, requests freed) or nothing
/// changes.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn testall(
    count: c_int,
    array_of_requests: *mut usize,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    // SAFETY: the caller's arrays of `count` entries.
    let (handles, mut statuses) = unsafe { arrays(count, array_of_requests, array_of_statuses)? };
    if handles.is_empty() {
        // SAFETY: checked non-null.
        return unsafe { put(flag, 1) };
    }
    match crate::request::plain::testall(rt()?, handles, statuses.as_deref_mut()) {
        None => {}
        // SAFETY: checked non-null.
        Some(TestAll::Incomplete) => return unsafe { put(flag, 0) },
        Some(TestAll::Complete(r)) => {
            // SAFETY: checked non-null.
            unsafe { put(flag, 1)? };
            return r;
        }
        Some(TestAll::Failed(f)) => return Err(f),
    }
    lent(handles, |lent| {
        let first = lent.first_comm();
        if lent.advance_pending()? {
            // SAFETY: checked non-null.
            return unsafe { put(flag, 0) };
        }
        let done = ferry::test_all(&mut lent.s.reqs).map_err(|e| Fail::from(e).on(first))?;
        let complete = done.is_some();
        let r = match done {
            Some(v) => all_reports(lent, statuses, Some(v)),
            None => Ok(()),
        };
        // SAFETY: checked non-null.
        unsafe { put(flag, c_int::from(complete))? };
        r
    })
}

/// Reports one completion of an `*any` call.
///
/// # Safety
/// `index` is valid for a write; `status` is null or valid.
unsafe fn any_result(
    lent: &mut Lent<'_>,
    found: Option<(usize, Option<Completion>)>,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    match found {
        Some((i, c)) => {
            let report = lent.report(i, c);
            // SAFETY: forwarded.
            unsafe {
                put(index, c_int::try_from(i).unwrap_or(MPI_UNDEFINED))?;
                report.write(status)
            }
        }
        None => {
            // SAFETY: forwarded.
            unsafe {
                put(index, MPI_UNDEFINED)?;
                crate::ffi::raw::put_status(status, MpiStatus::EMPTY);
            }
            Ok(())
        }
    }
}

/// An `Outcome` of ferry's `any` functions as an entry and its completion.
fn any_found(o: Outcome<(usize, Completion)>) -> Option<(usize, Option<Completion>)> {
    o.completed().map(|(i, c)| (i, Some(c)))
}

/// `MPI_Waitany`: `MPI_UNDEFINED` and the empty status if every request
/// is null or inactive.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn waitany(
    count: c_int,
    array_of_requests: *mut usize,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    if index.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index pointer"));
    }
    // SAFETY: the caller's array of `count` requests.
    let (handles, _) = unsafe { arrays(count, array_of_requests, std::ptr::null_mut())? };
    lent(handles, |lent| {
        let first = lent.first_comm();
        let found = loop {
            let pending = lent.advance_pending()?;
            if let Some(i) = lent.first_ready() {
                break Some((i, None));
            }
            if !pending {
                let _waiting = lent.waiting();
                break any_found(
                    ferry::wait_any(&mut lent.s.reqs).map_err(|e| Fail::from(e).on(first))?,
                );
            }
            if let Some(Outcome::Completed((i, c))) =
                ferry::test_any(&mut lent.s.reqs).map_err(|e| Fail::from(e).on(first))?
            {
                break Some((i, Some(c)));
            }
            std::thread::yield_now();
        };
        // SAFETY: index checked; status is IGNORE or valid.
        unsafe { any_result(lent, found, index, status) }
    })
}

/// `MPI_Testany`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn testany(
    count: c_int,
    array_of_requests: *mut usize,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> Res {
    if index.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index or flag pointer"));
    }
    // SAFETY: the caller's array of `count` requests.
    let (handles, _) = unsafe { arrays(count, array_of_requests, std::ptr::null_mut())? };
    lent(handles, |lent| {
        let pending = lent.advance_pending()?;
        let tested = match lent.first_ready() {
            Some(i) => Some(Some((i, None))),
            None => {
                let first = lent.first_comm();
                match ferry::test_any(&mut lent.s.reqs).map_err(|e| Fail::from(e).on(first))? {
                    // Every ferry request is inactive, but one polled here is not.
                    Some(Outcome::Undefined) if pending => None,
                    t => t.map(any_found),
                }
            }
        };
        match tested {
            None => {
                // SAFETY: checked non-null.
                unsafe {
                    put(flag, 0)?;
                    put(index, MPI_UNDEFINED)
                }
            }
            Some(found) => {
                // SAFETY: checked non-null; status is IGNORE or valid.
                unsafe {
                    put(flag, 1)?;
                    any_result(lent, found, index, status)
                }
            }
        }
    })
}

/// Reports the completions of a `*some` call: ferry's, plus the entries
/// that completed inside their call. `None` if every entry is inactive.
///
/// # Safety
/// `outcount` is valid; `indices` is valid for `incount` ints; `statuses`
/// null or valid for `incount` statuses.
unsafe fn some_result(
    lent: &mut Lent<'_>,
    pending: bool,
    ferry_done: Outcome<Vec<(usize, Completion)>>,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> Res {
    let any_ready = lent.first_ready().is_some();
    let done = match ferry_done {
        Outcome::Completed(v) => v,
        Outcome::Undefined if !any_ready && !pending => {
            // SAFETY: forwarded.
            return unsafe { put(outcount, MPI_UNDEFINED) };
        }
        Outcome::Undefined => Vec::new(),
    };
    if (any_ready || !done.is_empty()) && indices.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null index array"));
    }
    let mut failed = None;
    let mut k = 0usize;
    let mut emit = |lent: &mut Lent<'_>, i: usize, c: Option<Completion>| {
        let report = lent.report(i, c);
        if report.result.is_err() && failed.is_none() {
            failed = Some(i);
        }
        // SAFETY: `indices` holds `incount` ints and at most `incount`
        // entries complete; `statuses` likewise unless MPI_STATUSES_IGNORE.
        unsafe {
            indices
                .add(k)
                .write(c_int::try_from(i).unwrap_or(MPI_UNDEFINED));
            if !statuses.is_null() {
                statuses.add(k).write(report.status);
            }
        }
        k += 1;
    };
    // The entries that completed inside their call first (a ferry
    // completion never leaves an entry ready), then ferry's.
    for i in 0..lent.s.objs.len() {
        if lent.s.objs[i].as_ref().is_some_and(ReqObj::is_ready) {
            emit(lent, i, None);
        }
    }
    for (i, c) in done {
        emit(lent, i, Some(c));
    }
    // SAFETY: forwarded.
    unsafe { put(outcount, c_int::try_from(k).unwrap_or(c_int::MAX))? };
    match failed {
        None => Ok(()),
        Some(i) => Err(in_status(lent.comm(i))),
    }
}

/// The body of `MPI_Waitsome` (`wait`) and `MPI_Testsome`.
///
/// # Safety
/// As for [`some_result`]; `requests` valid for `incount` handles.
unsafe fn some(
    wait: bool,
    incount: c_int,
    requests: *mut usize,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> Res {
    if outcount.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null outcount pointer"));
    }
    // SAFETY: the caller's array of `incount` requests.
    let (handles, _) = unsafe { arrays(incount, requests, std::ptr::null_mut())? };
    lent(handles, |lent| {
        let first = lent.first_comm();
        loop {
            let pending = lent.advance_pending()?;
            let ready = lent.first_ready().is_some();
            let block = wait && !ready && !pending;
            let _waiting = if block { lent.waiting() } else { None };
            let reqs = &mut lent.s.reqs;
            let r = if block {
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
            if wait && pending && nothing {
                std::thread::yield_now();
                continue;
            }
            // SAFETY: forwarded.
            return unsafe { some_result(lent, pending, done, outcount, indices, statuses) };
        }
    })
}

/// `MPI_Waitsome`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn waitsome(
    incount: c_int,
    array_of_requests: *mut usize,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    // SAFETY: the caller's arrays of `incount` entries.
    unsafe {
        some(
            true,
            incount,
            array_of_requests,
            outcount,
            array_of_indices,
            array_of_statuses,
        )
    }
}

/// `MPI_Testsome`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn testsome(
    incount: c_int,
    array_of_requests: *mut usize,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> Res {
    // SAFETY: the caller's arrays of `incount` entries.
    unsafe {
        some(
            false,
            incount,
            array_of_requests,
            outcount,
            array_of_indices,
            array_of_statuses,
        )
    }
}

pub(crate) mod get_status;
