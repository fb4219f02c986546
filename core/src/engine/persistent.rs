//! Persistent point-to-point requests (`MPI_Send_init`, `MPI_Recv_init`,
//! `MPI_Start`, `MPI_Startall`).
//!
//! A persistent request is created inactive and owns its buffer. `start`
//! makes it active; completing it (`wait`, `test`, ...) makes it inactive
//! again without freeing it. Its buffer is reachable only while inactive, so
//! the engine and the user never hold it at once. `wait` on an inactive
//! request returns at once with the empty status (MPI's rule).

use super::outbox::{self, Out};
use super::post::{pattern_of, PROC_NULL_STATUS};
use super::request::{Cold, Kind, Life, Op, Queued, Req, SendMode, Spec};
use super::{Engine, State};
use crate::buffer::Buf;
use crate::device::Device;
use crate::envelope::{check_send_tag, ContextId, Rank, Tag, PROC_NULL};
use crate::error::{Error, Result, UsageError};
use crate::handle::Request;
use crate::status::Status;

impl<D: Device> Engine<D> {
    /// A persistent send (`MPI_Send_init`): inactive until [`Engine::start`].
    /// The request keeps `buf` between starts; reach it with
    /// [`Engine::persistent_buf_mut`] while inactive.
    ///
    /// # Errors
    /// As for [`Engine::isend`].
    pub fn send_init(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
        mode: SendMode,
    ) -> Result<Request> {
        check_send_tag(tag)?;
        if dest != PROC_NULL {
            self.check_rank_arg(dest)?;
        }
        self.check_len(buf.len())?;
        let spec = Spec {
            peer: dest,
            tag,
            context,
            mode,
        };
        Ok(self.persistent(Kind::Send, spec, buf))
    }

    /// A persistent receive (`MPI_Recv_init`).
    ///
    /// # Errors
    /// As for [`Engine::irecv`].
    pub fn recv_init(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
    ) -> Result<Request> {
        self.pattern(source, tag, context)?;
        let spec = Spec {
            peer: source,
            tag,
            context,
            mode: SendMode::Standard,
        };
        Ok(self.persistent(Kind::Recv, spec, buf))
    }

    fn persistent(&mut self, kind: Kind, spec: Spec, buf: Buf) -> Request {
        let req = Req::persistent(kind, spec, Some(buf));
        Request(self.st.requests.insert(req))
    }

    /// Starts an inactive persistent request.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`], [`UsageError::WrongRequestKind`] for a
    /// non-persistent request, [`UsageError::RequestActive`] if it is active.
    pub fn start(&mut self, request: &Request) -> Result<()> {
        let key = request.0;
        let req = self.st.requests.get_mut(key).filter(|r| !r.life.detached());
        let req = req.ok_or_else(State::stale)?;
        if !req.life.persistent() {
            return Err(UsageError::WrongRequestKind("start needs a persistent request").into());
        }
        if req.life.active() {
            return Err(UsageError::RequestActive.into());
        }
        req.life = Life::Started;
        req.status = Status::EMPTY;
        if let Op::Coll(run) = req.op {
            return self.start_coll_persistent(run);
        }
        let spec = req.spec;
        if spec.peer == PROC_NULL {
            let status = if req.kind == Kind::Send {
                Status::EMPTY
            } else {
                PROC_NULL_STATUS
            };
            self.st.complete(key, status);
            return Ok(());
        }
        if req.kind == Kind::Send {
            let len = req.buf.as_ref().map_or(0, Buf::len);
            let contiguous = req.buf.as_ref().is_none_or(Buf::is_contiguous);
            let proto = self.st.protocol_for(spec.peer, len, contiguous);
            if let Some(req) = self.st.requests.get_mut(key) {
                let queued = Cold::SendQueued(Queued {
                    proto,
                    exposed: None,
                    len,
                });
                self.st.cold.set(&mut req.op, queued);
            }
            self.st.outbox.push_back(Out::Send(key));
        } else {
            let pattern = pattern_of(req);
            self.st.activate_recv(key, pattern);
        }
        outbox::flush(&mut self.device, &mut self.st)
    }

    /// Starts several persistent requests (`MPI_Startall`). All are checked
    /// before any is started, and their sends go to the device as one batch
    /// (see [`Engine::batch_begin`]).
    ///
    /// # Errors
    /// As for [`Engine::start`].
    pub fn startall(&mut self, requests: &[Request]) -> Result<()> {
        for r in requests {
            let req = self.st.requests.get(r.0).ok_or_else(State::stale)?;
            if !req.life.persistent() {
                return Err(
                    UsageError::WrongRequestKind("start needs a persistent request").into(),
                );
            }
            if req.life.active() {
                return Err(UsageError::RequestActive.into());
            }
        }
        self.batch_begin();
        let started = requests.iter().try_for_each(|r| self.start(r));
        let posted = self.batch_end();
        started?;
        posted
    }

    /// The buffer of an inactive persistent request.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`], [`UsageError::WrongRequestKind`],
    /// [`UsageError::RequestActive`] while the request is active.
    pub fn persistent_buf(&self, request: &Request) -> Result<&Buf> {
        let req = self.st.requests.get(request.0).ok_or_else(State::stale)?;
        check_inactive_persistent(req)?;
        req.buf
            .as_ref()
            .ok_or(Error::Internal("persistent request without a buffer"))
    }

    /// The buffer of an inactive persistent request, writable.
    ///
    /// # Errors
    /// As for [`Engine::persistent_buf`].
    pub fn persistent_buf_mut(&mut self, request: &Request) -> Result<&mut Buf> {
        let req = self
            .st
            .requests
            .get_mut(request.0)
            .ok_or_else(State::stale)?;
        check_inactive_persistent(req)?;
        if let Op::Coll(_) = req.op {
            // A persistent collective's one buffer: its output, or the
            // input of a member without one (a reduce's non-root).
            let (input, output) = self.coll_buffers_mut(request)?;
            return output
                .or(input)
                .ok_or(Error::Internal("persistent collective without a buffer"));
        }
        let req = self
            .st
            .requests
            .get_mut(request.0)
            .ok_or_else(State::stale)?;
        req.buf
            .as_mut()
            .ok_or(Error::Internal("persistent request without a buffer"))
    }

    /// Is this request a collective?
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`].
    pub fn is_coll(&self, request: &Request) -> Result<bool> {
        let req = self.st.requests.get(request.0).ok_or_else(State::stale)?;
        Ok(matches!(req.op, Op::Coll(_) | Op::NodeColl(_)))
    }
}

fn check_inactive_persistent(req: &Req) -> Result<()> {
    if !req.life.persistent() {
        return Err(UsageError::WrongRequestKind("not a persistent request").into());
    }
    if req.life.active() {
        return Err(UsageError::RequestActive.into());
    }
    Ok(())
}
