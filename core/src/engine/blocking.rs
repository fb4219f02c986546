//! Blocking forms, built on the nonblocking ones and `wait`. Each blocks
//! through a [`Park`], so it sleeps in the caller's OS wait rather than
//! spinning (unless the park is [`SpinPark`](super::SpinPark)).

use super::{Completion, Engine, Park, Started};
use crate::buffer::Buf;
use crate::device::Device;
use crate::envelope::{ContextId, Rank, Tag};
use crate::error::Result;
use crate::handle::Message;
use crate::status::Status;

impl<D: Device> Engine<D> {
    /// Blocking standard send; returns the buffer in the completion.
    ///
    /// # Errors
    /// As for [`Engine::isend`] and [`Engine::wait`].
    pub fn send<P: Park>(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
        park: &mut P,
    ) -> Result<Completion> {
        let started = self.isend(dest, tag, context, buf)?;
        self.finish(started, park)
    }

    /// Blocking synchronous send.
    ///
    /// # Errors
    /// As for [`Engine::issend`] and [`Engine::wait`].
    pub fn ssend<P: Park>(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
        park: &mut P,
    ) -> Result<Completion> {
        let started = self.issend(dest, tag, context, buf)?;
        self.finish(started, park)
    }

    /// Blocking receive into `buf`. (With
    /// [`Config::recv_may_be_empty`](crate::Config::recv_may_be_empty), a
    /// message that was already here completes as EMPTY: the status is then
    /// empty, as the opt-in says.)
    ///
    /// # Errors
    /// As for [`Engine::irecv`] and [`Engine::wait`].
    pub fn recv<P: Park>(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
        park: &mut P,
    ) -> Result<Completion> {
        let started = self.irecv(source, tag, context, buf)?;
        self.finish(started, park)
    }

    /// Blocking ARecv: the message in a library-allocated buffer.
    ///
    /// # Errors
    /// As for [`Engine::iarecv`] and [`Engine::wait`].
    pub fn arecv<P: Park>(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        park: &mut P,
    ) -> Result<Completion> {
        let started = self.iarecv(source, tag, context)?;
        self.finish(started, park)
    }

    /// Blocking receive of a message taken by `mprobe`.
    ///
    /// # Errors
    /// As for [`Engine::imrecv`] and [`Engine::wait`].
    pub fn mrecv<P: Park>(
        &mut self,
        message: &mut Message,
        buf: Buf,
        park: &mut P,
    ) -> Result<Completion> {
        let started = self.imrecv(message, buf)?;
        self.finish(started, park)
    }

    /// Blocks until a matching message is available; reports it without
    /// receiving it.
    ///
    /// # Errors
    /// Bad arguments, a fatal device error, or a failed park.
    pub fn probe<P: Park>(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        park: &mut P,
    ) -> Result<Status> {
        let mut request = self.iprobe_request(source, tag, context)?;
        Ok(self.wait(&mut request, park)?.status)
    }

    /// Blocks until a matching message is available and takes it out of
    /// matching.
    ///
    /// # Errors
    /// Bad arguments, a fatal device error, or a failed park.
    pub fn mprobe<P: Park>(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        park: &mut P,
    ) -> Result<(Message, Status)> {
        let mut request = self.improbe_request(source, tag, context)?;
        let done = self.wait(&mut request, park)?;
        let message = Some(done.message)
            .filter(|m| *m != Message::NULL)
            .ok_or(crate::Error::Internal("mprobe completed without a message"))?;
        Ok((message, done.status))
    }

    /// Waits for a started operation, or hands back at once what an EMPTY
    /// one returned.
    fn finish<P: Park>(&mut self, started: Started, park: &mut P) -> Result<Completion> {
        if started.request.is_empty() {
            return Ok(Completion {
                status: Status::EMPTY,
                buf: started.buf,
                message: Message::NULL,
                input: None,
            });
        }
        let mut request = started.request;
        self.wait(&mut request, park)
    }
}
