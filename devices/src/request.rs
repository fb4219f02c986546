//! [`Request`]: one untyped handle for every kind of operation (sends,
//! receives, ARecv, persistent), so that any mix goes into every completion
//! call; and [`Completion`], what a finished operation hands back.
//!
//! A request owns what the engine needs to finish the operation (the
//! engine holds the buffer), so leaking a request with `mem::forget` leaks
//! the buffer and never leaves a dangling borrow. Dropping a pending request
//! frees it (`MPI_Request_free`): the operation completes in the background
//! and its buffer is dropped then.

use crate::typed::Origin;
use std::sync::Arc;

use ferry_core::{Buf, Started, Status};

use crate::comm::{Comm, CommInner};
use crate::error::{ApiError, Result};
use crate::raw::Exclusive;
use crate::typed::{buf_into_vec, copy_slice_to_vec, Element};
use crate::waiter::block_on;

/// A handle to an operation in flight; see the module docs.
///
/// `Send + Sync`. [`Request::NULL`] is the null request (`MPI_REQUEST_NULL`);
/// [`Request::is_empty`] recognises `MPI_REQUEST_EMPTY` (an operation that
/// completed inside its initiating call) without taking any lock.
#[derive(Debug)]
#[must_use = "dropping a request frees it; its operation goes on in the background"]
pub struct Request {
    pub(crate) handle: ferry_core::Request,
    /// The buffer handed back when the operation completed inside its call.
    /// (`Buf` is not `Sync`; it is only reached through `&mut self`, which
    /// `Exclusive` turns into `Request: Sync`.)
    ready: Exclusive<Option<Buf>>,
    /// The element type of the buffer, when it came from a `Vec<T>`.
    pub(crate) origin: Origin,
    /// `None` for the null request and for EMPTY ones.
    pub(crate) comm: Option<Arc<CommInner>>,
}

/// What a finished operation hands back: its status and its buffer.
#[derive(Debug)]
pub struct Completion {
    /// The operation's status: source in the communicator's ranks, bytes
    /// delivered, the operation's error (truncation, a dead peer), and
    /// whether it was cancelled.
    pub status: Status,
    pub(crate) buf: Option<Buf>,
    pub(crate) origin: Origin,
    /// What only some operations hand back, in one field: completions are
    /// moved on every test, and two optional fields would make them bigger
    /// than the compiler copies without a `memcpy` call.
    pub(crate) extra: Extra,
}

// A completion is moved on every test; at 128 bytes or less the compiler
// copies it inline (eight 16-byte moves) instead of calling `memcpy`.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Result<Option<Completion>>>() <= 128);

/// The part of a [`Completion`] only some operations have.
#[derive(Debug, Default)]
pub(crate) enum Extra {
    #[default]
    None,
    /// A matched probe's message.
    Message(ferry_core::Message),
    /// A collective's input buffer, handed back beside its output.
    Input(Buf),
}

impl Extra {
    fn new(message: ferry_core::Message, input: Option<Buf>) -> Extra {
        match input {
            Some(input) => Extra::Input(input),
            None if message != ferry_core::Message::NULL => Extra::Message(message),
            None => Extra::None,
        }
    }
}

impl Completion {
    pub(crate) fn empty() -> Completion {
        Completion {
            status: Status::EMPTY,
            buf: None,
            origin: None,
            extra: Extra::None,
        }
    }

    #[inline]
    pub(crate) fn from_core(
        comm: Option<&CommInner>,
        c: ferry_core::Completion,
        ready: Option<Buf>,
        origin: Origin,
    ) -> Completion {
        Completion {
            status: comm.map_or(c.status, |comm| comm.status(c.status)),
            buf: c.buf.or(ready),
            origin,
            extra: Extra::new(c.message, c.input),
        }
    }

    /// A point-to-point operation's completion from its parts.
    #[inline]
    pub(crate) fn plain(
        comm: Option<&CommInner>,
        status: Status,
        buf: Option<Buf>,
        origin: Origin,
    ) -> Completion {
        Completion {
            status: comm.map_or(status, |comm| comm.status(status)),
            buf,
            origin,
            extra: Extra::None,
        }
    }

    /// True if a collective's input buffer came back.
    pub(crate) fn has_input(&self) -> bool {
        matches!(self.extra, Extra::Input(_))
    }

    /// The buffer's bytes (empty if there is none). For a receive this is
    /// the whole buffer given; [`Status::bytes`] says how much was filled.
    pub fn bytes(&self) -> &[u8] {
        self.buf.as_ref().map_or(&[], |b| b.as_slice())
    }

    /// True if the completion carries a buffer (sends and receives do;
    /// persistent requests keep theirs).
    pub fn has_buf(&self) -> bool {
        self.buf.is_some()
    }

    /// Elements of `T` received (`None` if the byte count is not a whole
    /// number of them: `MPI_UNDEFINED`).
    pub fn count<T: Element>(&self) -> Option<usize> {
        self.status.count(std::mem::size_of::<T>())
    }

    /// The buffer as a `Vec<T>`: the caller's own vector, moved back without
    /// a copy, if the operation was given a `Vec<T>`; otherwise (an ARecv
    /// buffer, or a vector of another type) a copy.
    ///
    /// # Errors
    /// [`ApiError::NoBuffer`], [`ApiError::ElementSize`], or
    /// `OutOfMemory` if a copy cannot be allocated.
    pub fn into_vec<T: Element>(self) -> Result<Vec<T>> {
        // A collective rank without an output (a reduce's non-root) gets
        // its input back.
        let input = match self.extra {
            Extra::Input(input) => Some(input),
            _ => None,
        };
        match self.buf.or(input) {
            Some(buf) => buf_into_vec(buf, self.origin),
            None => Err(ApiError::NoBuffer.into()),
        }
    }

    /// The buffer as it came back from the engine (a device buffer for an
    /// ARecv that was handed over without a copy).
    pub fn into_buf(self) -> Option<Buf> {
        self.buf
    }

    /// The status, dropping the rest (the way to finish an operation of
    /// the raw API, [`Comm::isend_raw`](crate::Comm::isend_raw), ..., whose
    /// buffer is only the caller's own memory lent back).
    pub fn into_status(self) -> Status {
        self.status
    }

    /// The buffer's filled part (`status.bytes`) as a new `Vec<T>`.
    ///
    /// # Errors
    /// As for [`Completion::into_vec`].
    pub fn received<T: Element>(&self) -> Result<Vec<T>> {
        let bytes = self.bytes();
        copy_slice_to_vec(&bytes[..self.status.bytes.min(bytes.len())])
    }
}

impl Request {
    /// The null request: completion calls skip it (or report it complete
    /// with an empty status, as MPI does).
    pub const NULL: Request = Request {
        handle: ferry_core::Request::NULL,
        ready: Exclusive::new(None),
        origin: None,
        comm: None,
    };

    pub(crate) fn new(comm: &Comm, handle: ferry_core::Request, origin: Origin) -> Self {
        Request {
            handle,
            ready: Exclusive::new(None),
            origin,
            comm: Some(Arc::clone(&comm.inner)),
        }
    }

    pub(crate) fn coll_started(
        comm: &Comm,
        started: ferry_core::CollStarted,
        origin: Origin,
    ) -> Self {
        Request::begun(
            comm,
            started.request,
            started.output.or(started.input),
            origin,
        )
    }

    pub(crate) fn started(comm: &Comm, started: Started, origin: Origin) -> Self {
        Request::begun(comm, started.request, started.buf, origin)
    }

    /// A request the engine has started. An EMPTY one (done inside its
    /// call) needs nothing of its communicator: completing it only hands
    /// back `ready`, so it holds no reference, which spares a send that
    /// completes at once two atomic operations on the communicator's count.
    #[inline]
    pub(crate) fn begun(
        comm: &Comm,
        handle: ferry_core::Request,
        ready: Option<Buf>,
        origin: Origin,
    ) -> Self {
        Request {
            handle,
            ready: Exclusive::new(ready),
            origin,
            comm: if handle.is_empty() {
                None
            } else {
                Some(Arc::clone(&comm.inner))
            },
        }
    }

    /// The buffer an EMPTY request holds.
    pub(crate) fn take_ready(&mut self) -> Option<Buf> {
        self.ready.get_mut().take()
    }

    /// True for the null request (never started, or already completed).
    pub fn is_null(&self) -> bool {
        self.handle.is_null()
    }

    /// True for `REQUEST_EMPTY`: the operation completed inside its
    /// initiating call. Reads the handle only: no lock, no progress.
    pub fn is_empty(&self) -> bool {
        self.handle.is_empty()
    }

    /// The engine's handle (for logs; `Copy`).
    pub fn handle(&self) -> ferry_core::Request {
        self.handle
    }

    fn comm(&self) -> Option<&CommInner> {
        self.comm.as_deref()
    }

    /// True if complete, read without progress (null, empty and inactive
    /// persistent requests count as complete).
    ///
    /// # Errors
    /// A stale handle, or the world was finalized.
    pub fn is_complete(&self) -> Result<bool> {
        let Some(comm) = self.comm() else {
            return Ok(true);
        };
        if self.handle.is_null() || self.handle.is_empty() {
            return Ok(true);
        }
        let g = comm.shared.lock()?;
        Ok(g.engine_ref()?.is_complete(&self.handle)?)
    }

    /// `MPI_Test`: progresses once if needed; on completion the request
    /// becomes null (or, if persistent, inactive) and hands back its buffer.
    ///
    /// # Errors
    /// A stale handle, a fatal device error, or the world was finalized.
    pub fn test(&mut self) -> Result<Option<Completion>> {
        if self.handle.is_empty() || self.handle.is_null() {
            return Ok(Some(self.take_trivial()));
        }
        // Borrowed field by field (no `Arc` clone: two atomic operations
        // per test).
        let Some(comm) = self.comm.as_deref() else {
            return Ok(Some(Completion::empty()));
        };
        let mut g = comm.shared.lock()?;
        let engine = g.engine()?;
        // Tested first, so that an idle test builds nothing.
        if !engine.test_ready(&self.handle)? {
            return Ok(None);
        }
        let mut one = One::new(comm, self.ready.get_mut(), self.origin);
        engine.take_split(&mut self.handle, &mut one)?;
        drop(g);
        Ok(one.done)
    }

    /// `MPI_Wait`: blocks (spinning, then sleeping, as configured) until
    /// the request completes.
    ///
    /// # Errors
    /// As for [`Request::test`].
    pub fn wait(&mut self) -> Result<Completion> {
        if self.handle.is_empty() || self.handle.is_null() {
            return Ok(self.take_trivial());
        }
        let Some(comm) = self.comm.as_deref() else {
            return Ok(Completion::empty());
        };
        let handle = &mut self.handle;
        let mut one = One::new(comm, self.ready.get_mut(), self.origin);
        block_on(&comm.shared, |e| {
            Ok(e.test_split(handle, &mut one)?.then_some(()))
        })?;
        one.done
            .ok_or_else(|| ferry_core::Error::Internal("wait ended without a completion").into())
    }

    /// Completes an EMPTY (or null) request without the lock.
    pub(crate) fn take_trivial(&mut self) -> Completion {
        self.handle = ferry_core::Request::NULL;
        Completion {
            buf: self.take_ready(),
            origin: self.origin,
            ..Completion::empty()
        }
    }

    /// `MPI_Request_get_status`: the status if complete, without completing
    /// the request. Progresses once if it is not complete yet.
    ///
    /// # Errors
    /// As for [`Request::test`].
    pub fn get_status(&self) -> Result<Option<Status>> {
        let Some(comm) = self.comm() else {
            return Ok(Some(Status::EMPTY));
        };
        if self.handle.is_empty() || self.handle.is_null() {
            return Ok(Some(Status::EMPTY));
        }
        let mut g = comm.shared.lock()?;
        let s = g.engine()?.get_status(&self.handle)?;
        Ok(s.map(|s| comm.status(s)))
    }

    /// `MPI_Cancel`: a receive that has not matched yet completes with
    /// `status.cancelled`; anything else is left alone. Wakes any thread
    /// waiting for it.
    ///
    /// # Errors
    /// A stale handle, or the world was finalized.
    pub fn cancel(&self) -> Result<()> {
        self.canceller().cancel()
    }

    /// A handle that can cancel this request from another thread while
    /// this one waits for it.
    pub fn canceller(&self) -> Canceller {
        Canceller {
            handle: self.handle,
            comm: self.comm.clone(),
        }
    }

    /// Frees the request (`MPI_Request_free`); the same as dropping it.
    pub fn free(self) {}
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.handle.is_null() || self.handle.is_empty() {
            return;
        }
        if let Some(comm) = &self.comm {
            // A thread the thread level forbids leaks the request (with its
            // buffer) rather than race: see `ThreadLevel`.
            let Ok(mut g) = comm.shared.lock() else {
                return;
            };
            if let Ok(e) = g.engine() {
                // Stale only if the world was torn down and rebuilt, which
                // cannot happen: nothing to report either way.
                let _ = e.free(&mut self.handle);
            }
        }
    }
}

/// One request's completion, built from its parts where it is a plain
/// point-to-point one (see `Engine::take_all_split`).
struct One<'a> {
    comm: &'a CommInner,
    ready: &'a mut Option<Buf>,
    origin: Origin,
    done: Option<Completion>,
}

impl<'a> One<'a> {
    fn new(comm: &'a CommInner, ready: &'a mut Option<Buf>, origin: Origin) -> One<'a> {
        One {
            comm,
            ready,
            origin,
            done: None,
        }
    }
}

impl ferry_core::engine::Taker for One<'_> {
    #[inline]
    fn plain(&mut self, _: usize, status: Status, buf: Option<Buf>) {
        let buf = buf.or_else(|| self.ready.take());
        self.done = Some(Completion::plain(Some(self.comm), status, buf, self.origin));
    }

    #[inline]
    fn other(&mut self, _: usize, c: ferry_core::Completion) {
        let ready = self.ready.take();
        self.done = Some(Completion::from_core(
            Some(self.comm),
            c,
            ready,
            self.origin,
        ));
    }
}

/// Cancels a request from any thread (see [`Request::canceller`]).
#[derive(Debug, Clone)]
pub struct Canceller {
    handle: ferry_core::Request,
    comm: Option<Arc<CommInner>>,
}

impl Canceller {
    /// Cancels the request if it is still pending and cancellable; does
    /// nothing if it already completed (or was freed).
    ///
    /// # Errors
    /// The world was finalized.
    pub fn cancel(&self) -> Result<()> {
        let Some(comm) = &self.comm else {
            return Ok(());
        };
        if self.handle.is_null() || self.handle.is_empty() {
            return Ok(());
        }
        let mut g = comm.shared.lock()?;
        match g.engine()?.cancel(&self.handle) {
            // Completed and freed already: nothing to cancel. Generations
            // make sure a reused slot is never mistaken for this request.
            Err(ferry_core::Error::Usage(ferry_core::UsageError::StaleHandle)) | Ok(()) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
