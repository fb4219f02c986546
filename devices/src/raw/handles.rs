//! Operations known only by their engine handle, for a library that keeps
//! its own request table (the MPI C ABI).
//!
//! A [`Request`] carries what a Rust caller needs: a reference to its
//! communicator (which keeps the world alive and translates the status),
//! the buffer of an operation that completed in its call, and its drop,
//! which frees the operation. A C request table keeps all of that itself,
//! so for a contiguous send or receive it needs only the engine's handle:
//! a [`RawRequest`] (`Copy`, no reference count to move, nothing on drop).
//! These calls start such operations on lent memory, and complete arrays
//! of them in one go (`MPI_Waitall`, `MPI_Testall`).
//!
//! Only communicators whose ranks are the job's ranks
//! ([`Comm::has_job_ranks`]) start raw operations: their statuses need no
//! translation, so a raw request needs no communicator to be completed.
//! [`Request::from_raw`] turns one into an ordinary request for every
//! other completion call.

use ferry_core::{Rank, SendMode, Status, Tag};

use super::lend_mut;
use crate::comm::Comm;
use crate::error::{ApiError, Result};
use crate::request::Request;
use crate::waiter::block_on;

/// An operation's engine handle alone; see the module docs. `NULL` and
/// `EMPTY` as for [`Request`].
pub use ferry_core::Request as RawRequest;

impl Comm {
    /// True if rank `i` of this communicator is rank `i` of the job, for
    /// every member (the world, its duplicates, and its prefixes): the only
    /// communicators that start raw operations.
    pub fn has_job_ranks(&self) -> bool {
        self.inner.inter.is_none() && self.inner.group.is_identity()
    }

    /// [`Comm::isend_raw`], keeping only the engine's handle
    /// ([`RawRequest::EMPTY`] if the send completed inside the call).
    ///
    /// # Safety
    /// As for [`Comm::isend_raw`]; and the operation must be completed
    /// ([`Comm::wait_all_raw`], [`Comm::test_all_raw`]) or handed to
    /// [`Request::from_raw`] (whose drop frees it): a raw request that is
    /// forgotten keeps the memory lent for the life of the world.
    ///
    /// # Errors
    /// As for [`Comm::isend`]; [`ApiError::RawRanks`] on a communicator
    /// without [job ranks](Comm::has_job_ranks).
    pub unsafe fn isend_raw_request(
        &self,
        ptr: *const u8,
        len: usize,
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<RawRequest> {
        self.check_job_ranks()?;
        // SAFETY: forwarded to our caller (see # Safety).
        Ok(unsafe { self.isend_ptr(ptr, len, dest, tag, mode)? }.request)
    }

    /// [`Comm::irecv_raw`], keeping only the engine's handle.
    ///
    /// # Safety
    /// As for [`Comm::irecv_raw`], and as for [`Comm::isend_raw_request`].
    ///
    /// # Errors
    /// As for [`Comm::isend_raw_request`].
    pub unsafe fn irecv_raw_request(
        &self,
        ptr: *mut u8,
        len: usize,
        source: Rank,
        tag: Tag,
    ) -> Result<RawRequest> {
        self.check_job_ranks()?;
        // SAFETY: forwarded to our caller (see # Safety).
        let buf = unsafe { lend_mut(ptr, len) };
        // A receive that completed in the call hands the loan back here.
        Ok(self.start_recv(Some(buf), source, tag)?.request)
    }

    /// `MPI_Waitall` over raw requests of this communicator's world (of any
    /// of its communicators with job ranks): blocks until all are complete,
    /// hands `each` every entry's index and status (null and EMPTY entries
    /// get the empty status), and sets every entry to `NULL`.
    ///
    /// # Errors
    /// A stale handle (nothing is completed then), a fatal device error, or
    /// the world was finalized.
    pub fn wait_all_raw(
        &self,
        requests: &mut [RawRequest],
        mut each: impl FnMut(usize, Status),
    ) -> Result<()> {
        let mut cursor = None;
        block_on(self.shared(), |e| {
            let mut statuses = Statuses(&mut each);
            Ok(e.waitall_step(requests, &mut cursor, &mut statuses)?
                .then_some(()))
        })
    }

    /// `MPI_Testall` over raw requests: progresses once; if all are complete,
    /// completes them as [`Comm::wait_all_raw`] does and returns true;
    /// otherwise changes nothing and returns false.
    ///
    /// # Errors
    /// As for [`Comm::wait_all_raw`].
    pub fn test_all_raw(
        &self,
        requests: &mut [RawRequest],
        mut each: impl FnMut(usize, Status),
    ) -> Result<bool> {
        let mut g = self.shared().lock()?;
        let e = g.engine()?;
        if !e.testall_ready(requests, &mut None)? {
            return Ok(false);
        }
        e.take_all_split(requests, &mut Statuses(&mut each))?;
        Ok(true)
    }

    fn check_job_ranks(&self) -> Result<()> {
        if self.has_job_ranks() {
            Ok(())
        } else {
            Err(ApiError::RawRanks.into())
        }
    }
}

impl Request {
    /// An ordinary request for a raw operation started on `comm` (or on any
    /// communicator of its world with job ranks): waits, tests, cancels and
    /// frees it as any other, and its drop frees it.
    pub fn from_raw(comm: &Comm, raw: RawRequest) -> Request {
        if raw.is_null() {
            return Request::NULL;
        }
        Request::begun(comm, raw, None, None)
    }

    /// The inverse of [`Request::from_raw`]: the engine handle of a
    /// request, which no longer frees the operation on drop, so the caller
    /// completes it as a raw request again. Meant for requests made by
    /// `from_raw` (they hold no buffer: anything else a request holds is
    /// dropped here).
    pub fn into_raw(mut self) -> RawRequest {
        std::mem::replace(&mut self.handle, RawRequest::NULL)
    }
}

/// Hands each completion's status to a raw completion call's `each` (a raw
/// request's buffer is the caller's memory, lent: nothing to hand back).
struct Statuses<F>(F);

impl<F: FnMut(usize, Status)> ferry_core::engine::Taker for Statuses<F> {
    #[inline]
    fn plain(&mut self, i: usize, status: Status, _lent: Option<ferry_core::Buf>) {
        (self.0)(i, status);
    }

    #[inline]
    fn other(&mut self, i: usize, completion: ferry_core::Completion) {
        (self.0)(i, completion.status);
    }
}
