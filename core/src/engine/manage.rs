//! Managing requests: cancel, free, and generic requests that a collective
//! schedule completes.

use super::request::{Kind, Life, Op, Req, SendMode, Spec};
use super::{Engine, State};
use crate::buffer::Buf;
use crate::device::Device;
use crate::envelope::{ANY_TAG, PROC_NULL};
use crate::error::{Result, UsageError};
use crate::handle::Request;
use crate::status::Status;

impl<D: Device> Engine<D> {
    /// Cancels a receive (or probe request) that has not matched yet; it then
    /// completes with `status.cancelled`. A request that already matched, a
    /// send, or a completed request is left alone, and its status reports
    /// `cancelled == false` (MPI semantics).
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`].
    pub fn cancel(&mut self, request: &Request) -> Result<()> {
        if request.is_null() || request.is_empty() {
            return Ok(());
        }
        let key = request.0;
        let req = self.st.requests.get(key).filter(|r| !r.life.detached());
        let req = req.ok_or_else(State::stale)?;
        let cancelled = match req.op {
            Op::Posted { key: pk } => self.st.posted.remove(pk).is_some(),
            Op::Probing => {
                self.st.probes.retain(|&k| k != key);
                true
            }
            _ => false,
        };
        if cancelled {
            self.st.complete(
                key,
                Status {
                    cancelled: true,
                    ..Status::EMPTY
                },
            );
        }
        Ok(())
    }

    /// Frees a request (`MPI_Request_free`): a complete or inactive one at
    /// once, a pending one when it completes. The handle becomes NULL.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] for a null, stale or already freed handle.
    pub fn free(&mut self, request: &mut Request) -> Result<()> {
        if request.is_empty() {
            *request = Request::NULL;
            return Ok(());
        }
        let key = request.0;
        // A request already freed while pending is gone for the user: a
        // second free (through a copy of the handle) is a stale handle.
        let req = self.st.requests.get_mut(key).filter(|r| !r.life.detached());
        let req = req.ok_or_else(State::stale)?;
        if req.life.complete() {
            match self.st.requests.remove(key) {
                Some(Req {
                    op: Op::Coll(run), ..
                }) => self.st.drop_coll(run),
                Some(Req {
                    op: Op::NodeColl(run),
                    ..
                }) => drop(self.st.take_node_coll(run)),
                _ => {}
            }
        } else {
            req.life = Life::Detached;
        }
        *request = Request::NULL;
        Ok(())
    }

    /// A request of the generic kind, completed by its owner (a collective
    /// schedule) with [`Engine::complete_generic`]. It mixes with every
    /// completion call.
    pub fn generic_request(&mut self) -> Request {
        let spec = Spec {
            peer: PROC_NULL,
            tag: ANY_TAG,
            context: 0,
            mode: SendMode::Standard,
        };
        Request(self.st.requests.insert(Req::new(Kind::Generic, spec, None)))
    }

    /// Completes a generic request with `status` (and optionally a buffer
    /// the completion hands over).
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`], or [`UsageError::WrongRequestKind`] for
    /// a request that is not generic.
    pub fn complete_generic(
        &mut self,
        request: &Request,
        status: Status,
        buf: Option<Buf>,
    ) -> Result<()> {
        let req = self
            .st
            .requests
            .get_mut(request.0)
            .ok_or_else(State::stale)?;
        if req.kind != Kind::Generic || req.life.complete() {
            return Err(UsageError::WrongRequestKind("not a pending generic request").into());
        }
        req.buf = buf;
        self.st.complete(request.0, status);
        Ok(())
    }
}
