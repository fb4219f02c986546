//! Point-to-point with owned buffers: nonblocking operations take a
//! `Vec<T>` and hand it back in their [`Completion`]; ARecv, probes and
//! matched probes. (Blocking operations on borrowed slices are in
//! [`raw`](crate::raw), which owns all of ferry's `unsafe`; the scoped
//! borrowed API is [`Comm::scope`].)
//!
//! Ranks are communicator ranks; [`PROC_NULL`](ferry_core::PROC_NULL),
//! [`ANY_SOURCE`](ferry_core::ANY_SOURCE) and
//! [`ANY_TAG`](ferry_core::ANY_TAG) work as in MPI. If a call returns an
//! error, the buffer it was given is dropped.

use std::sync::Arc;

use ferry_core::{Buf, Rank, SendMode, Started, Status, Tag};

use crate::comm::{Comm, CommInner};
use crate::error::{ApiError, Result};
use crate::request::Request;
use crate::typed::{origin_of, vec_into_buf, Element};

impl Comm {
    /// Starts a standard-mode send of `data` to `dest`. An eager send the
    /// device accepts at once returns an EMPTY request
    /// ([`Request::is_empty`]) holding the vector, ready to take back.
    ///
    /// # Errors
    /// A bad rank or tag, a message over the size limit, a fatal device
    /// error, or the world was finalized.
    pub fn isend<T: Element>(&self, data: Vec<T>, dest: Rank, tag: Tag) -> Result<Request> {
        self.isend_buf(
            vec_into_buf(data),
            origin_of::<T>(),
            dest,
            tag,
            SendMode::Standard,
        )
    }

    /// Starts a synchronous send: it completes once a receive matched it.
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub fn issend<T: Element>(&self, data: Vec<T>, dest: Rank, tag: Tag) -> Result<Request> {
        self.isend_buf(
            vec_into_buf(data),
            origin_of::<T>(),
            dest,
            tag,
            SendMode::Synchronous,
        )
    }

    /// Starts a ready-mode send (the matching receive must be posted).
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub fn irsend<T: Element>(&self, data: Vec<T>, dest: Rank, tag: Tag) -> Result<Request> {
        self.isend_buf(
            vec_into_buf(data),
            origin_of::<T>(),
            dest,
            tag,
            SendMode::Ready,
        )
    }

    /// Starts a send of any [`Buf`] in any mode (the untyped form).
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub fn isend_buf(
        &self,
        buf: Buf,
        origin: crate::typed::Origin,
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<Request> {
        let c = &self.inner;
        let dest = c.peers.to_job(dest)?;
        let started = c
            .shared
            .lock()?
            .engine()?
            .isend_mode(dest, tag, c.context, buf, mode)?;
        Ok(Request::started(self, started, origin))
    }

    /// Starts a receive into `buf` (its full length is the capacity).
    ///
    /// # Errors
    /// A bad rank or tag, a fatal device error, or the world was finalized.
    pub fn irecv<T: Element>(&self, buf: Vec<T>, source: Rank, tag: Tag) -> Result<Request> {
        self.irecv_buf(vec_into_buf(buf), origin_of::<T>(), source, tag)
    }

    /// Starts a receive into any [`Buf`] (the untyped form).
    ///
    /// # Errors
    /// As for [`Comm::irecv`].
    pub fn irecv_buf(
        &self,
        buf: Buf,
        origin: crate::typed::Origin,
        source: Rank,
        tag: Tag,
    ) -> Result<Request> {
        let started = self.start_recv(Some(buf), source, tag)?;
        Ok(Request::started(self, started, origin))
    }

    /// Starts a receive into `buf` (or an ARecv, with `None`) from
    /// `source` in this communicator's ranks, with its hint on completing
    /// inside the call.
    pub(crate) fn start_recv(&self, buf: Option<Buf>, source: Rank, tag: Tag) -> Result<Started> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let empty_ok = c.hints.recv_may_be_empty;
        let mut g = c.shared.lock()?;
        Ok(g.engine()?
            .irecv_hinted(source, tag, c.context, buf, empty_ok)?)
    }

    /// Starts an ARecv: a receive of a message of unknown size into a
    /// buffer the library allocates (handed over without a copy where the
    /// device allows). Take it with [`Completion::into_vec`] or
    /// [`Completion::into_buf`].
    ///
    /// [`Completion::into_vec`]: crate::Completion::into_vec
    /// [`Completion::into_buf`]: crate::Completion::into_buf
    ///
    /// # Errors
    /// As for [`Comm::irecv`].
    pub fn iarecv(&self, source: Rank, tag: Tag) -> Result<Request> {
        let started = self.start_recv(None, source, tag)?;
        Ok(Request::started(self, started, None))
    }

    /// Blocking ARecv: the message as a `Vec<T>`, and its status.
    ///
    /// # Errors
    /// As for [`Comm::irecv`]; the operation's own error (a dead peer);
    /// [`ApiError::ElementSize`] if the message is not a whole number of
    /// `T`s.
    pub fn arecv<T: Element>(&self, source: Rank, tag: Tag) -> Result<(Vec<T>, Status)> {
        let done = self.iarecv(source, tag)?.wait()?;
        let status = done.status;
        status.ok()?;
        Ok((done.into_vec()?, status))
    }

    /// Blocks until a matching message is available; reports it without
    /// receiving it.
    ///
    /// # Errors
    /// A bad rank or tag, a dead source, a fatal device error, or the world
    /// was finalized.
    pub fn probe(&self, source: Rank, tag: Tag) -> Result<Status> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let handle = c
            .shared
            .lock()?
            .engine()?
            .iprobe_request(source, tag, c.context)?;
        let status = Request::new(self, handle, None).wait()?.status;
        status.ok()?;
        Ok(status)
    }

    /// Reports a matching message if one is available now (progresses
    /// once).
    ///
    /// # Errors
    /// As for [`Comm::probe`].
    pub fn iprobe(&self, source: Rank, tag: Tag) -> Result<Option<Status>> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let s = c.shared.lock()?.engine()?.iprobe(source, tag, c.context)?;
        Ok(s.map(|s| c.status(s)))
    }

    /// Blocks until a matching message is available and takes it out of
    /// matching: no other receive can match it. Receive it through the
    /// [`Message`].
    ///
    /// # Errors
    /// As for [`Comm::probe`].
    pub fn mprobe(&self, source: Rank, tag: Tag) -> Result<(Message, Status)> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let handle = c
            .shared
            .lock()?
            .engine()?
            .improbe_request(source, tag, c.context)?;
        let done = Request::new(self, handle, None).wait()?;
        done.status.ok()?;
        let crate::request::Extra::Message(message) = done.extra else {
            return Err(crate::Error::Internal("mprobe completed without a message"));
        };
        Ok((Message::new(&self.inner, message), done.status))
    }

    /// Takes a matching message out of matching if one is available now.
    ///
    /// # Errors
    /// As for [`Comm::probe`].
    pub fn improbe(&self, source: Rank, tag: Tag) -> Result<Option<(Message, Status)>> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let found = c.shared.lock()?.engine()?.improbe(source, tag, c.context)?;
        Ok(found.map(|(m, s)| (Message::new(c, m), c.status(s))))
    }

    /// Receives a message taken by `mprobe` into `buf` (nonblocking).
    ///
    /// # Errors
    /// As for [`Message::irecv`].
    pub fn imrecv<T: Element>(&self, message: Message, buf: Vec<T>) -> Result<Request> {
        message.irecv(buf)
    }
}

/// A message taken out of matching by [`Comm::mprobe`] or
/// [`Comm::improbe`] (`MPI_Message`). Receive it once; dropping it
/// unreceived discards it.
#[derive(Debug)]
#[must_use = "a message taken by mprobe is discarded unless received"]
pub struct Message {
    pub(crate) handle: ferry_core::Message,
    pub(crate) comm: Arc<CommInner>,
}

impl Message {
    fn new(comm: &Arc<CommInner>, handle: ferry_core::Message) -> Message {
        Message {
            handle,
            comm: Arc::clone(comm),
        }
    }

    /// True for the message "received" from `PROC_NULL`
    /// (`MPI_MESSAGE_NO_PROC`).
    pub fn is_no_proc(&self) -> bool {
        self.handle.is_no_proc()
    }

    fn comm(&self) -> Comm {
        Comm {
            inner: Arc::clone(&self.comm),
        }
    }

    pub(crate) fn take(&mut self) -> Result<ferry_core::Message> {
        let m = std::mem::replace(&mut self.handle, ferry_core::Message::NULL);
        if m.is_null() {
            return Err(ApiError::MessageTaken.into());
        }
        Ok(m)
    }

    /// Starts receiving the message into `buf` (`MPI_Imrecv`).
    ///
    /// # Errors
    /// A fatal device error, or the world was finalized.
    pub fn irecv<T: Element>(self, buf: Vec<T>) -> Result<Request> {
        self.irecv_buf(vec_into_buf(buf), origin_of::<T>())
    }

    /// Starts receiving the message into any [`Buf`] (the untyped form).
    ///
    /// # Errors
    /// As for [`Message::irecv`].
    pub fn irecv_buf(mut self, buf: Buf, origin: crate::typed::Origin) -> Result<Request> {
        let mut m = self.take()?;
        let started = self.comm.shared.lock()?.engine()?.imrecv(&mut m, buf)?;
        Ok(Request::started(&self.comm(), started, origin))
    }

    /// Starts receiving the message into a buffer the library allocates.
    ///
    /// # Errors
    /// As for [`Message::irecv`].
    pub fn iarecv(mut self) -> Result<Request> {
        let mut m = self.take()?;
        let started = self.comm.shared.lock()?.engine()?.imarecv(&mut m)?;
        Ok(Request::started(&self.comm(), started, None))
    }

    /// Receives the message as a `Vec<T>` the library allocates.
    ///
    /// # Errors
    /// As for [`Message::irecv`]; [`ApiError::ElementSize`].
    pub fn arecv<T: Element>(self) -> Result<(Vec<T>, Status)> {
        let done = self.iarecv()?.wait()?;
        let status = done.status;
        status.ok()?;
        Ok((done.into_vec()?, status))
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if self.handle.is_null() || self.handle.is_no_proc() {
            return;
        }
        // Receive it into a library buffer and drop that: the engine then
        // forgets the message (and a rendezvous sender is released).
        let Ok(mut g) = self.comm.shared.lock() else {
            // A thread the thread level forbids: the message stays matched.
            return;
        };
        if let Ok(e) = g.engine() {
            if let Ok(mut started) = e.imarecv(&mut self.handle) {
                let _ = e.free(&mut started.request);
            }
        }
    }
}
