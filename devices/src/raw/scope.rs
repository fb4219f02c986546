//! The scoped borrowed API: [`Comm::scope`] lends slices to nonblocking
//! operations and completes every one of them before it returns, as
//! `std::thread::scope` joins its threads.
//!
//! ```
//! # let world = ferry::Config::default().init().unwrap();
//! let comm = world.self_comm();
//! let data = [1u32, 2, 3];
//! let mut buf = [0u32; 3];
//! comm.scope(|s| {
//!     let r = s.irecv(&mut buf, 0, 7).unwrap();
//!     s.isend(&data, 0, 7).unwrap();
//!     assert_eq!(r.wait().unwrap().bytes, 12);
//! });
//! assert_eq!(buf, data);
//! ```
//!
//! Soundness does not depend on the caller: the scope keeps its own list of
//! the requests it started, so a [`ScopedRequest`] that is dropped or leaked
//! with `mem::forget` is still completed at the end of the scope, before the
//! borrows end, and the same happens when the closure panics.

use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use ferry_core::{Rank, SendMode, Status, Tag};

use super::{finish, lend, lend_mut, started};
use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;
use crate::typed::{as_bytes, as_bytes_mut, Element};

/// The requests of a scope; index `i` belongs to one [`ScopedRequest`].
#[derive(Debug)]
struct ScopeState {
    comm: Comm,
    /// `None` once completed.
    pending: Mutex<Vec<Option<ferry_core::Request>>>,
}

/// A scope for nonblocking operations on borrowed memory; see the module
/// docs. `Sync`: threads spawned inside may start operations through it.
#[derive(Debug)]
pub struct Scope<'scope, 'env: 'scope> {
    state: ScopeState,
    /// Invariant over 'scope, as `std::thread::Scope`.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

/// A request started in a [`Scope`]. Waiting for it is optional: the scope
/// completes whatever is left.
#[derive(Debug)]
pub struct ScopedRequest<'scope> {
    state: &'scope ScopeState,
    index: usize,
    empty: bool,
}

impl Comm {
    /// Runs `f` with a [`Scope`] in which nonblocking operations may borrow
    /// slices; every operation started in it is complete when `scope`
    /// returns (or unwinds). Like `std::thread::scope`, it blocks until the
    /// last of them completes: cancel receives you no longer want.
    ///
    /// If completing them fails with a fatal device error, the engine is
    /// torn down first, so that no borrowed slice is ever touched again.
    pub fn scope<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        let scope = Scope {
            state: ScopeState {
                comm: self.clone(),
                pending: Mutex::new(Vec::new()),
            },
            scope: PhantomData,
            env: PhantomData,
        };
        let result = catch_unwind(AssertUnwindSafe(|| f(&scope)));
        scope.state.finish_all();
        match result {
            Ok(r) => r,
            Err(panic) => resume_unwind(panic),
        }
    }
}

impl ScopeState {
    fn push(&self, mut req: Request) -> ScopedRequest<'_> {
        let empty = req.is_empty();
        // The scope takes over the engine handle; `req` is left null, so
        // dropping it frees nothing.
        let handle = std::mem::replace(&mut req.handle, ferry_core::Request::NULL);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.push(Some(handle));
        ScopedRequest {
            state: self,
            index: pending.len() - 1,
            empty,
        }
    }

    fn take(&self, index: usize) -> Option<ferry_core::Request> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.get_mut(index).and_then(Option::take)
    }

    fn put_back(&self, index: usize, handle: ferry_core::Request) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = pending.get_mut(index) {
            *slot = Some(handle);
        }
    }

    fn request(&self, handle: ferry_core::Request) -> Request {
        Request::new(&self.comm, handle, None)
    }

    /// Completes every request left; see [`Comm::scope`].
    fn finish_all(&self) {
        let left: Vec<_> = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.drain(..).flatten().collect()
        };
        for handle in left {
            if let Err(err) = finish(self.comm.shared(), self.request(handle)) {
                tracing::error!(%err, "a scoped request failed at the end of its scope");
            }
        }
    }
}

impl<'scope> Scope<'scope, '_> {
    /// The communicator the scope's operations use.
    pub fn comm(&self) -> &Comm {
        &self.state.comm
    }

    fn send(
        &'scope self,
        bytes: &'scope [u8],
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<ScopedRequest<'scope>> {
        let comm = &self.state.comm;
        // SAFETY: `bytes` is borrowed for 'scope, and the scope completes
        // the request (or tears the engine down) before 'scope ends;
        // `started` does the same for a start that failed midway.
        let loan = unsafe { lend(bytes.as_ptr(), bytes.len()) };
        let req = started(comm.shared(), comm.isend_buf(loan, None, dest, tag, mode))?;
        Ok(self.state.push(req))
    }

    /// Starts a standard send of `data`, borrowed until the scope ends.
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub fn isend<T: Element>(
        &'scope self,
        data: &'scope [T],
        dest: Rank,
        tag: Tag,
    ) -> Result<ScopedRequest<'scope>> {
        self.send(as_bytes(data), dest, tag, SendMode::Standard)
    }

    /// Starts a synchronous send of `data`.
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub fn issend<T: Element>(
        &'scope self,
        data: &'scope [T],
        dest: Rank,
        tag: Tag,
    ) -> Result<ScopedRequest<'scope>> {
        self.send(as_bytes(data), dest, tag, SendMode::Synchronous)
    }

    /// Starts a receive into `buf`, borrowed until the scope ends.
    ///
    /// # Errors
    /// As for [`Comm::irecv`].
    pub fn irecv<T: Element>(
        &'scope self,
        buf: &'scope mut [T],
        source: Rank,
        tag: Tag,
    ) -> Result<ScopedRequest<'scope>> {
        let comm = &self.state.comm;
        let bytes = as_bytes_mut(buf);
        // SAFETY: `buf` is mutably borrowed for 'scope, and the scope
        // completes the request (or tears the engine down) before 'scope
        // ends.
        let loan = unsafe { lend_mut(bytes.as_mut_ptr(), bytes.len()) };
        let req = started(comm.shared(), comm.irecv_buf(loan, None, source, tag))?;
        Ok(self.state.push(req))
    }
}

impl ScopedRequest<'_> {
    /// True if the operation completed inside its initiating call
    /// (REQUEST_EMPTY): no lock needed.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Blocks until the operation completes; its status.
    ///
    /// # Errors
    /// A fatal device error (the engine is then torn down), or the world was
    /// finalized.
    pub fn wait(self) -> Result<Status> {
        let Some(handle) = self.state.take(self.index) else {
            return Ok(Status::EMPTY);
        };
        let c = finish(self.state.comm.shared(), self.state.request(handle))?;
        Ok(c.status)
    }

    /// Progresses once; the status if the operation is complete.
    ///
    /// # Errors
    /// A fatal device error, or the world was finalized.
    pub fn test(&mut self) -> Result<Option<Status>> {
        let Some(handle) = self.state.take(self.index) else {
            return Ok(Some(Status::EMPTY));
        };
        let mut req = self.state.request(handle);
        let r = req.test();
        // Still pending (or the test failed): the scope keeps it.
        let handle = std::mem::replace(&mut req.handle, ferry_core::Request::NULL);
        if !handle.is_null() {
            self.state.put_back(self.index, handle);
        }
        Ok(r?.map(|c| c.status))
    }
}
