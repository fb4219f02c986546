//! Generalized requests (MPI 4.1 §13.2): `MPI_Grequest_start` and
//! `MPI_Grequest_complete`, and the callbacks the completion calls run.
//!
//! The request is [`State::Greq`], pending until the program calls
//! `MPI_Grequest_complete` (`MPI_Wait` on it sleeps until then; the
//! multiple-completion calls poll it). Then, as the standard says:
//! - the completion call that reports it (`MPI_Wait`, `MPI_Test` and the
//!   multiple forms) calls `query_fn` for its status, then `free_fn`, and
//!   frees the handle; `MPI_Request_get_status(_*)` calls `query_fn` only;
//! - `MPI_Request_free` calls `free_fn` at once if the request is complete,
//!   else `MPI_Grequest_complete` calls it later (and no `query_fn` runs);
//! - `MPI_Cancel` calls `cancel_fn(extra_state, complete)`.
//!
//! A callback's non-`MPI_SUCCESS` return is the error of the call that ran
//! it. `MPI_Grequest_complete` and `MPI_Cancel` find the request through a
//! registry of their own, not the request table, since another thread may
//! be blocked on it (its table entry lent out).

use std::ffi::c_int;
use std::sync::{Arc, Condvar, Mutex};

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_COMM_SELF};
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::ffi::callbacks;
use crate::request::object::{Report, ReqObj, State};
use crate::request::post::Post;
use crate::state::{lock, rt};

use crate::abi::callback::{
    GrequestCancelFn as CancelFn, GrequestFreeFn as FreeFn, GrequestQueryFn as QueryFn,
};

/// The program's callbacks and its `extra_state`.
#[derive(Debug, Clone, Copy)]
struct Callbacks {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    /// The program's pointer, passed back as is.
    extra: usize,
}

/// Where a generalized request is.
#[derive(Debug, Default)]
struct Flags {
    /// `MPI_Grequest_complete` was called.
    complete: bool,
    /// The handle was freed (`MPI_Request_free`) before completion.
    freed: bool,
}

/// What the request, `MPI_Grequest_complete` and `MPI_Cancel` share.
#[derive(Debug)]
struct Shared {
    cb: Callbacks,
    flags: Mutex<Flags>,
    /// Signalled when `complete` is set (`MPI_Wait` sleeps on it).
    completed: Condvar,
}

/// The registry: request handle -> its shared state, from start until
/// `free_fn` runs.
static GREQS: Mutex<Vec<(usize, Arc<Shared>)>> = Mutex::new(Vec::new());

fn registered(h: usize) -> Option<Arc<Shared>> {
    lock(&GREQS)
        .iter()
        .find(|(g, _)| *g == h)
        .map(|(_, s)| Arc::clone(s))
}

fn unregister(shared: &Arc<Shared>) {
    lock(&GREQS).retain(|(_, s)| !Arc::ptr_eq(s, shared));
}

/// A callback's return code as a result.
fn code(rc: c_int, what: &'static str) -> Res {
    match rc {
        MPI_SUCCESS => Ok(()),
        rc => Err(Fail::new(rc, what)),
    }
}

impl Callbacks {
    fn query(&self) -> Res<MpiStatus> {
        let Some(q) = self.query else {
            return Ok(MpiStatus::EMPTY);
        };
        let (rc, status) = callbacks::grequest_query(q, self.extra);
        code(rc, "the generalized request's query_fn failed")?;
        Ok(status)
    }

    fn free(&self) -> Res {
        match self.free {
            // Called once (the callers' rule).
            Some(f) => code(
                callbacks::grequest_free(f, self.extra),
                "the generalized request's free_fn failed",
            ),
            None => Ok(()),
        }
    }

    fn cancel(&self, complete: bool) -> Res {
        match self.cancel {
            Some(c) => code(
                callbacks::grequest_cancel(c, self.extra, complete),
                "the generalized request's cancel_fn failed",
            ),
            None => Ok(()),
        }
    }
}

/// A generalized request's object ([`State::Greq`]).
#[derive(Debug)]
pub(crate) struct Greq {
    shared: Arc<Shared>,
}

impl Greq {
    /// True once `MPI_Grequest_complete` was called.
    pub(crate) fn is_complete(&self) -> bool {
        lock(&self.shared.flags).complete
    }

    /// Sleeps until `MPI_Grequest_complete` is called (by another thread).
    pub(crate) fn wait(&self) {
        let mut fl = lock(&self.shared.flags);
        while !fl.complete {
            fl = self
                .shared
                .completed
                .wait(fl)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// `query_fn`'s status if complete (`MPI_Request_get_status`).
    pub(crate) fn query(&self) -> Res<Option<MpiStatus>> {
        if !self.is_complete() {
            return Ok(None);
        }
        self.shared.cb.query().map(Some)
    }

    /// The report of the completion call that frees the complete request:
    /// `query_fn`, then `free_fn`.
    pub(crate) fn finish(&self, comm: usize) -> Report {
        let cb = self.shared.cb;
        unregister(&self.shared);
        let mut report = match cb.query() {
            Ok(status) => Report::ok(status),
            Err(f) => {
                let mut r = Report::ok(MpiStatus::EMPTY);
                r.status.error = f.class;
                r.result = Err(f.on(comm));
                r
            }
        };
        if let Err(f) = cb.free() {
            if report.result.is_ok() {
                report.result = Err(f.on(comm));
            }
        }
        report
    }

    /// `MPI_Request_free`: `free_fn` now if complete, else at
    /// `MPI_Grequest_complete`.
    pub(crate) fn release(&self, comm: usize) -> Res {
        let complete = {
            let mut fl = lock(&self.shared.flags);
            fl.freed = true;
            fl.complete
        };
        if !complete {
            return Ok(());
        }
        unregister(&self.shared);
        self.shared.cb.free().map_err(|f| f.on(comm))
    }
}

/// `MPI_Cancel` on a generalized request: `Some` if `h` is one.
pub(crate) fn cancel(h: usize) -> Option<Res> {
    let shared = registered(h)?;
    let complete = lock(&shared.flags).complete;
    Some(shared.cb.cancel(complete))
}

/// `MPI_Grequest_start`: a request the program completes with
/// `MPI_Grequest_complete`; null callbacks are skipped.
pub(crate) fn grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let shared = Arc::new(Shared {
        cb: Callbacks {
            query: query_fn,
            free: free_fn,
            cancel: cancel_fn,
            extra: extra_state,
        },
        flags: Mutex::new(Flags::default()),
        completed: Condvar::new(),
    });
    let obj = ReqObj {
        state: State::Greq(Box::new(Greq {
            shared: Arc::clone(&shared),
        })),
        comm: MPI_COMM_SELF,
        post: Post::None,
        persist: None,
    };
    let h = rt.add_request(obj)?;
    lock(&GREQS).push((h, shared));
    request.set(h)
}

/// `MPI_Grequest_complete`: the request is complete; if the program
/// freed it already, `free_fn` runs now.
pub(crate) fn grequest_complete(request: usize) -> Res {
    let shared = registered(request).ok_or_else(|| {
        Fail::new(
            MPI_ERR_REQUEST,
            "not a pending generalized request (MPI_Grequest_start)",
        )
    })?;
    let freed = {
        let mut fl = lock(&shared.flags);
        if fl.complete {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "MPI_Grequest_complete was already called on this request",
            ));
        }
        fl.complete = true;
        shared.completed.notify_all();
        fl.freed
    };
    if freed {
        unregister(&shared);
        return shared.cb.free();
    }
    Ok(())
}
