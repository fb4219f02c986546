//! Starting operations: sends in every mode (with the eager fast path that
//! completes inside the call), receives and ARecv, probes and matched probes
//! (`iprobe`, `improbe` and their request forms), and receives of a matched
//! message (`imrecv`, `imarecv`); also the protocol choice per message and
//! the activation of a posted receive. Persistent requests are in
//! `persistent.rs`, cancel and free in `manage.rs`, the blocking forms in
//! `blocking.rs`.
//!
//! Argument errors (a bad rank, a bad tag, a stale handle) are returned as
//! `Err` before anything starts. Once an operation has started, failures
//! complete its request with the error in the status and the buffer kept.

use super::outbox::{self, Out};
use super::request::{Cold, Kind, Life, Op, Queued, Req, SendMode, Spec};
use super::{Body, Engine, Started, State, Unexpected};
use crate::buffer::Buf;
use crate::device::{Device, MemHandle, Sent};
use crate::envelope::{
    check_recv_tag, check_send_tag, check_source, ContextId, Envelope, Pattern, Rank, Tag,
    ANY_SOURCE, ANY_TAG, PROC_NULL,
};
use crate::error::{Error, Result, UsageError};
use crate::handle::{Message, Request};
use crate::protocol::Protocol;
use crate::status::Status;
use crate::wire::Header;

/// The status of a receive from `PROC_NULL`.
pub(crate) const PROC_NULL_STATUS: Status = Status {
    source: PROC_NULL,
    tag: ANY_TAG,
    bytes: 0,
    error: None,
    cancelled: false,
};

impl<D: Device> Engine<D> {
    /// Starts a standard-mode send of `buf` to `dest`.
    ///
    /// An eager send that the device accepts at once completes inside this
    /// call: the result is [`Request::EMPTY`] with the buffer handed straight
    /// back, and no request object is allocated. Sends to `PROC_NULL` do the
    /// same.
    ///
    /// # Errors
    /// [`UsageError::InvalidRank`], [`UsageError::InvalidTag`],
    /// [`UsageError::MessageTooLarge`], or a fatal device error.
    pub fn isend(&mut self, dest: Rank, tag: Tag, context: ContextId, buf: Buf) -> Result<Started> {
        self.isend_mode(dest, tag, context, buf, SendMode::Standard)
    }

    /// Starts a synchronous send: it completes only once a receive matched it.
    ///
    /// # Errors
    /// As for [`Engine::isend`].
    pub fn issend(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
    ) -> Result<Started> {
        self.isend_mode(dest, tag, context, buf, SendMode::Synchronous)
    }

    /// Starts a ready-mode send (the receive must already be posted).
    ///
    /// # Errors
    /// As for [`Engine::isend`].
    pub fn irsend(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
    ) -> Result<Started> {
        self.isend_mode(dest, tag, context, buf, SendMode::Ready)
    }

    /// Starts a send in any [`SendMode`]. The eager send that completes at
    /// once is inline in the caller; queueing one is out of line.
    ///
    /// # Errors
    /// As for [`Engine::isend`].
    #[inline(always)]
    pub fn isend_mode(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
        mode: SendMode,
    ) -> Result<Started> {
        check_send_tag(tag)?;
        if dest == PROC_NULL {
            return Ok(Started {
                request: Request::EMPTY,
                buf: Some(buf),
            });
        }
        let spec = Spec {
            peer: dest,
            tag,
            context,
            mode,
        };
        if !buf.is_contiguous() {
            return self.isend_segmented(spec, buf);
        }
        match self.send_at_once(spec, buf.as_slice())? {
            None => Ok(Started {
                request: Request::EMPTY,
                buf: Some(buf),
            }),
            Some(proto) => self.queue_send(spec, proto, buf),
        }
    }

    /// A send of scattered bytes (see *Segmented buffers* in `Buf`'s docs):
    /// one of eager size is gathered into the engine's bounce buffer and
    /// sent as any eager message (completing here if the device takes it);
    /// a larger one goes by fragments, each gathered as it leaves. It is
    /// never registered with a device.
    #[inline(never)]
    fn isend_segmented(&mut self, spec: Spec, buf: Buf) -> Result<Started> {
        let (dest, len) = (spec.peer, buf.len());
        self.check_rank_arg(dest)?;
        self.check_len(len)?;
        if len <= self.st.peers[dest as usize].table.eager_max {
            let mut gathered = std::mem::take(&mut self.st.gather);
            if gathered.len() < len {
                gathered.resize(len, 0);
            }
            buf.read_at(0, &mut gathered[..len]);
            let sent = self.send_at_once(spec, &gathered[..len]);
            self.st.gather = gathered;
            return match sent? {
                None => Ok(Started {
                    request: Request::EMPTY,
                    buf: Some(buf),
                }),
                Some(Protocol::Eager) => self.queue_send(spec, Protocol::Eager, buf),
                Some(_) => self.queue_send(spec, Protocol::Fragmented, buf),
            };
        }
        self.queue_send(spec, Protocol::Fragmented, buf)
    }

    /// A send of memory the caller lends rather than gives: `bytes` is read
    /// in this call, and only if the send cannot complete here is `lend`
    /// called for a [`Buf`] over the same memory, which the engine then
    /// holds until the request completes. A small send that completes at
    /// once thus never builds a buffer (the C ABI's and the raw API's path).
    /// [`Started::buf`] is `None` for such a send: the memory never left
    /// the caller.
    ///
    /// # Errors
    /// As for [`Engine::isend`].
    pub fn isend_lent(
        &mut self,
        dest: Rank,
        tag: Tag,
        context: ContextId,
        bytes: &[u8],
        mode: SendMode,
        lend: impl FnOnce() -> Buf,
    ) -> Result<Started> {
        check_send_tag(tag)?;
        let spec = Spec {
            peer: dest,
            tag,
            context,
            mode,
        };
        if dest != PROC_NULL {
            if let Some(proto) = self.send_at_once(spec, bytes)? {
                return self.queue_send(spec, proto, lend());
            }
        }
        Ok(Started {
            request: Request::EMPTY,
            buf: None,
        })
    }

    /// Checks a send's destination and length, chooses its protocol and,
    /// for an eager send that nothing is queued ahead of, hands it to the
    /// device: `None` if it went out (done), else the protocol to queue it
    /// with.
    #[inline(always)]
    fn send_at_once(&mut self, spec: Spec, bytes: &[u8]) -> Result<Option<Protocol>> {
        let dest = spec.peer;
        self.check_rank_arg(dest)?;
        self.check_len(bytes.len())?;
        let proto = self.st.choose_protocol(dest, bytes.len());
        let fast = proto == Protocol::Eager
            && spec.mode != SendMode::Synchronous
            && self.st.outbox.is_empty()
            && self.st.peers[dest as usize].failed.is_none();
        if fast && self.try_eager_now(spec, bytes)? == Sent::Done {
            self.st.counters.empty_returns += 1;
            return Ok(None);
        }
        Ok(Some(proto))
    }

    /// Queues a send the device did not take at once.
    #[inline(never)]
    fn queue_send(&mut self, spec: Spec, proto: Protocol, buf: Buf) -> Result<Started> {
        let len = buf.len();
        let mut req = Req::new(Kind::Send, spec, Some(buf));
        let queued = Cold::SendQueued(Queued {
            proto,
            exposed: None,
            len,
        });
        self.st.cold.set(&mut req.op, queued);
        let key = self.st.requests.insert(req);
        self.st.outbox.push_back(Out::Send(key));
        outbox::flush(&mut self.device, &mut self.st)?;
        Ok(self.started(key))
    }

    /// The eager fast path: one device call, no request.
    #[inline(always)]
    fn try_eager_now(&mut self, spec: Spec, payload: &[u8]) -> Result<Sent> {
        let dest = spec.peer;
        let seq = self.st.peers[dest as usize].send_seq;
        let header = Header::encode_plain_eager(spec.context, spec.tag, seq);
        match self.device.send(dest, &header, payload) {
            Ok(Sent::Done) => {
                self.st.peers[dest as usize].send_seq = seq.wrapping_add(1);
                self.st.counters.eager_sent += 1;
                self.st.counters.eager_bytes += payload.len() as u64;
                Ok(Sent::Done)
            }
            other => Ok(self.st.eager_not_taken(other)),
        }
    }

    /// Turns a fresh request into what the caller gets back: EMPTY if it
    /// already completed cleanly (and is not persistent), else the handle.
    fn started(&mut self, key: u64) -> Started {
        let done = self.st.requests.get(key).is_some_and(|r| {
            r.life == Life::Complete && r.status.error.is_none() && r.kind == Kind::Send
        });
        if done {
            let buf = self.st.requests.remove(key).and_then(|r| r.buf);
            self.st.counters.empty_returns += 1;
            return Started {
                request: Request::EMPTY,
                buf,
            };
        }
        Started {
            request: Request(key),
            buf: None,
        }
    }

    pub(super) fn check_len(&self, len: usize) -> Result<()> {
        let max = self.st.config.max_message;
        if len > max {
            return Err(UsageError::MessageTooLarge { len, max }.into());
        }
        Ok(())
    }

    /// Starts a receive into `buf` from `source` (or [`ANY_SOURCE`]) with
    /// `tag` (or [`ANY_TAG`]).
    ///
    /// With [`Config::recv_may_be_empty`](crate::Config::recv_may_be_empty),
    /// a receive that finds its message already here completes inside the
    /// call and returns [`Request::EMPTY`] with the filled buffer (and no
    /// status). Otherwise it always returns a real request.
    ///
    /// # Errors
    /// [`UsageError::InvalidRank`] or [`UsageError::InvalidTag`].
    pub fn irecv(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        buf: Buf,
    ) -> Result<Started> {
        let empty_ok = self.st.config.recv_may_be_empty;
        self.post_recv(Kind::Recv, source, tag, context, Some(buf), empty_ok)
    }

    /// [`Engine::irecv`] (with `Some(buf)`) or [`Engine::iarecv`] (with
    /// `None`), with the `recv_may_be_empty` choice made by the caller (a
    /// communicator's hint) instead of the engine's configuration.
    ///
    /// # Errors
    /// As for [`Engine::irecv`].
    pub fn irecv_hinted(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
        buf: Option<Buf>,
        may_be_empty: bool,
    ) -> Result<Started> {
        let kind = if buf.is_some() {
            Kind::Recv
        } else {
            Kind::ARecv
        };
        self.post_recv(kind, source, tag, context, buf, may_be_empty)
    }

    /// Starts a receive of a message of unknown size into a buffer the
    /// library allocates (ARecv). On completion, [`Completion::buf`] is the
    /// message, exactly its length. An unexpected eager message is handed
    /// over in the buffer that already holds it (no copy); a rendezvous
    /// message gets one allocation of exactly its size.
    ///
    /// [`Completion::buf`]: super::Completion::buf
    ///
    /// # Errors
    /// As for [`Engine::irecv`].
    pub fn iarecv(&mut self, source: Rank, tag: Tag, context: ContextId) -> Result<Started> {
        let empty_ok = self.st.config.recv_may_be_empty;
        self.post_recv(Kind::ARecv, source, tag, context, None, empty_ok)
    }

    /// A request that completes when a matching message is available, with
    /// its status, and leaves the message to be received (a nonblocking
    /// `probe` that can sit in `waitany` with other requests).
    ///
    /// # Errors
    /// As for [`Engine::irecv`].
    pub fn iprobe_request(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
    ) -> Result<Request> {
        Ok(self
            .post_recv(Kind::Probe, source, tag, context, None, false)?
            .request)
    }

    /// A request that completes when a matching message is available and
    /// takes it out of matching: [`Completion::message`] is its handle for
    /// `imrecv` / `imarecv` (a request-based `mprobe`).
    ///
    /// [`Completion::message`]: super::Completion::message
    ///
    /// # Errors
    /// As for [`Engine::irecv`].
    pub fn improbe_request(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
    ) -> Result<Request> {
        Ok(self
            .post_recv(Kind::MProbe, source, tag, context, None, false)?
            .request)
    }

    /// Posts a receive-like request. The usual case of a pre-posted window
    /// is inline in the caller; the rest ([`Engine::post_recv_general`]) is
    /// out of line.
    #[inline(always)]
    pub(super) fn post_recv(
        &mut self,
        kind: Kind,
        source: Rank,
        tag: Tag,
        context: ContextId,
        buf: Option<Buf>,
        empty_ok: bool,
    ) -> Result<Started> {
        let spec = Spec {
            peer: source,
            tag,
            context,
            mode: SendMode::Standard,
        };
        if matches!(kind, Kind::Recv | Kind::ARecv)
            && self.st.peer_failures == 0
            && self.st.unexpected.is_empty()
            && source != PROC_NULL
        {
            // Checked in `pattern`'s order: a bad tag is reported first.
            let tag_pattern = check_recv_tag(tag)?;
            let pattern = Pattern {
                context,
                source: check_source(source, self.st.size)?,
                tag: tag_pattern,
            };
            // Nothing to match and no failure to report, so the receive is
            // posted as it is stored (not stored, looked up and posted,
            // then looked up again to record where), and nothing was
            // queued to send.
            let key = self.st.requests.vacant_key();
            let posted = self.st.posted.post(pattern, key);
            let stored = self.st.requests.insert_with(|| Req {
                op: Op::Posted { key: posted },
                ..Req::new(kind, spec, buf)
            });
            debug_assert_eq!(stored, key);
            return Ok(Started {
                request: Request(key),
                buf: None,
            });
        }
        self.post_recv_general(kind, spec, buf, empty_ok)
    }

    /// [`Engine::post_recv`] of everything but a receive with nothing
    /// unexpected and no failed peer.
    #[inline(never)]
    fn post_recv_general(
        &mut self,
        kind: Kind,
        spec: Spec,
        buf: Option<Buf>,
        empty_ok: bool,
    ) -> Result<Started> {
        let Some(pattern) = self.pattern(spec.peer, spec.tag, spec.context)? else {
            return Ok(self.proc_null_request(kind, spec, buf, empty_ok));
        };
        let key = self.st.requests.insert(Req::new(kind, spec, buf));
        if pattern.source.is_none() {
            if let Some(rank) = self.st.failed_member(spec.context) {
                let error = crate::error::PeerError::FailedPending { rank };
                let status = Status {
                    error: Some(error.into()),
                    ..Status::EMPTY
                };
                self.st.complete(key, status);
                return Ok(Started {
                    request: Request(key),
                    buf: None,
                });
            }
        }
        self.st.activate_recv(key, pattern);
        outbox::flush(&mut self.device, &mut self.st)?;
        Ok(self.recv_started(key, empty_ok))
    }

    /// EMPTY for a receive that completed cleanly inside the call, when the
    /// configuration allows it; the buffer comes straight back.
    fn recv_started(&mut self, key: u64, allowed: bool) -> Started {
        let done = allowed
            && self.st.requests.get(key).is_some_and(|r| {
                r.life == Life::Complete
                    && r.status.error.is_none()
                    && matches!(r.kind, Kind::Recv | Kind::ARecv)
            });
        if done {
            let buf = self.st.requests.remove(key).and_then(|r| r.buf);
            return Started {
                request: Request::EMPTY,
                buf,
            };
        }
        Started {
            request: Request(key),
            buf: None,
        }
    }

    fn proc_null_request(
        &mut self,
        kind: Kind,
        spec: Spec,
        buf: Option<Buf>,
        empty_ok: bool,
    ) -> Started {
        if empty_ok && matches!(kind, Kind::Recv | Kind::ARecv) {
            return Started {
                request: Request::EMPTY,
                buf: buf.or_else(|| Some(Buf::new())),
            };
        }
        let mut req = Req::new(kind, spec, buf);
        if kind == Kind::ARecv {
            req.buf = Some(Buf::new());
        }
        if kind == Kind::MProbe {
            req.message = Some(Message::NO_PROC);
        }
        let key = self.st.requests.insert(req);
        self.st.complete(key, PROC_NULL_STATUS);
        Started {
            request: Request(key),
            buf: None,
        }
    }

    /// Validates a receive selector; `None` means PROC_NULL.
    pub(super) fn pattern(
        &self,
        source: Rank,
        tag: Tag,
        context: ContextId,
    ) -> Result<Option<Pattern>> {
        let tag = check_recv_tag(tag)?;
        if source == PROC_NULL {
            return Ok(None);
        }
        let source = check_source(source, self.st.size)?;
        Ok(Some(Pattern {
            context,
            source,
            tag,
        }))
    }

    /// `iprobe`: progresses once, then reports the first matching message
    /// without receiving it.
    ///
    /// # Errors
    /// Bad arguments, or a fatal device error.
    pub fn iprobe(&mut self, source: Rank, tag: Tag, context: ContextId) -> Result<Option<Status>> {
        let Some(pattern) = self.pattern(source, tag, context)? else {
            return Ok(Some(PROC_NULL_STATUS));
        };
        self.progress()?;
        Ok(self
            .st
            .unexpected
            .peek(&pattern)
            .map(|(_, env, m)| super::incoming::arrival_status(env, m.len())))
    }

    /// `improbe`: progresses once, then takes the first matching message out
    /// of matching. Receive it with [`Engine::imrecv`] or
    /// [`Engine::imarecv`].
    ///
    /// # Errors
    /// Bad arguments, or a fatal device error.
    pub fn improbe(
        &mut self,
        source: Rank,
        tag: Tag,
        context: ContextId,
    ) -> Result<Option<(Message, Status)>> {
        let Some(pattern) = self.pattern(source, tag, context)? else {
            return Ok(Some((Message::NO_PROC, PROC_NULL_STATUS)));
        };
        self.progress()?;
        let Some((env, msg)) = self.st.unexpected.take(&pattern) else {
            return Ok(None);
        };
        let status = super::incoming::arrival_status(env, msg.len());
        let m = self.st.hold_message(env, msg);
        outbox::flush(&mut self.device, &mut self.st)?;
        Ok(Some((m, status)))
    }

    /// Receives a message taken by `improbe` into `buf`. The handle becomes
    /// [`Message::NULL`].
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] for a null, stale or already received
    /// message.
    pub fn imrecv(&mut self, message: &mut Message, buf: Buf) -> Result<Started> {
        self.receive_message(Kind::Recv, message, Some(buf))
    }

    /// Receives a message taken by `improbe` into a library-allocated buffer
    /// (ARecv from a message).
    ///
    /// # Errors
    /// As for [`Engine::imrecv`].
    pub fn imarecv(&mut self, message: &mut Message) -> Result<Started> {
        self.receive_message(Kind::ARecv, message, None)
    }

    fn receive_message(
        &mut self,
        kind: Kind,
        message: &mut Message,
        buf: Option<Buf>,
    ) -> Result<Started> {
        let spec = Spec {
            peer: PROC_NULL,
            tag: ANY_TAG,
            context: 0,
            mode: SendMode::Standard,
        };
        if message.is_no_proc() {
            *message = Message::NULL;
            return Ok(self.proc_null_request(kind, spec, buf, self.st.config.recv_may_be_empty));
        }
        let (env, msg) = self
            .st
            .messages
            .remove(message.0)
            .ok_or_else(State::stale)?;
        *message = Message::NULL;
        let spec = Spec {
            peer: env.source,
            tag: env.tag,
            context: env.context,
            ..spec
        };
        let key = self.st.requests.insert(Req::new(kind, spec, buf));
        match msg.body {
            // Credits and the sync ack were settled when the message was taken.
            Body::Eager { data, .. } => {
                if let Some(copied) = self.st.land_eager(key, env, data) {
                    self.st.small.give_back(copied);
                }
            }
            Body::Rts(r) => self.st.match_rts(key, env, r),
        }
        outbox::flush(&mut self.device, &mut self.st)?;
        Ok(self.recv_started(key, self.st.config.recv_may_be_empty))
    }
}

/// The matching pattern of a receive-like request.
pub(crate) fn pattern_of(req: &Req) -> Pattern {
    let s = req.spec;
    Pattern {
        context: s.context,
        source: (s.peer != ANY_SOURCE).then_some(s.peer),
        tag: (s.tag != ANY_TAG).then_some(s.tag),
    }
}

/// The registration a pending request holds, if any.
pub(crate) fn registered_mem(op: &Op) -> Option<MemHandle> {
    use super::request::{RndvRecv, RndvSend};
    match op.cold()? {
        Cold::SendQueued(q) => q.exposed.map(|(m, _)| m),
        Cold::RndvSend(RndvSend::AwaitFin(w)) => Some(w.mem),
        Cold::RndvSend(RndvSend::Putting(p)) => p.mem,
        Cold::RndvSend(RndvSend::Fragmenting(f)) => f.exposed,
        Cold::RndvRecv(RndvRecv::Getting(g)) => g.mem,
        Cold::RndvRecv(RndvRecv::AwaitPutFin(w)) => w.mem,
        _ => None,
    }
}

impl State {
    /// An eager send the device did not take at once (`Busy`, or an
    /// error): the queued path retries it, and completes the request with
    /// the error and keeps the buffer if the peer is gone.
    #[cold]
    #[inline(never)]
    fn eager_not_taken(&mut self, sent: Result<Sent>) -> Sent {
        match sent {
            Ok(Sent::Busy) => {
                self.counters.backpressure += 1;
                Sent::Busy
            }
            Ok(taken) => taken,
            Err(err) => {
                if let Error::Peer(crate::PeerError::Died { rank }) = err {
                    self.fail_peer(rank, err);
                }
                Sent::Busy
            }
        }
    }

    /// Chooses the protocol for a send of `len` bytes, taking an eager
    /// credit for it; a segmented buffer (`contiguous` false) is never
    /// registered, so it goes eager or by fragments.
    pub(crate) fn protocol_for(&mut self, dest: Rank, len: usize, contiguous: bool) -> Protocol {
        match self.choose_protocol(dest, len) {
            Protocol::Eager => Protocol::Eager,
            _ if !contiguous => Protocol::Fragmented,
            proto => proto,
        }
    }

    /// Chooses the protocol for a send and takes an eager credit for it.
    pub(crate) fn choose_protocol(&mut self, dest: Rank, len: usize) -> Protocol {
        let peer = &mut self.peers[dest as usize];
        let credit = peer.credits > 0;
        let proto = peer.table.select(len, credit);
        if proto == Protocol::Eager {
            peer.credits -= 1;
        } else if !credit && len <= peer.table.eager_max {
            self.counters.credit_stalls += 1;
        }
        proto
    }

    /// Matches a (new or restarted) receive-like request against the
    /// unexpected queue, or posts it.
    pub(crate) fn activate_recv(&mut self, key: u64, pattern: Pattern) {
        let Some(req) = self.requests.get(key) else {
            return;
        };
        if let Some(source) = pattern.source {
            if let Some(err) = self.peers[source as usize].failed {
                return self.complete(
                    key,
                    Status {
                        error: Some(err),
                        ..Status::EMPTY
                    },
                );
            }
        }
        if req.kind == Kind::Probe {
            if let Some((_, env, m)) = self.unexpected.peek(&pattern) {
                let status = super::incoming::arrival_status(env, m.len());
                return self.complete(key, status);
            }
            if let Some(req) = self.requests.get_mut(key) {
                req.op = Op::Probing;
            }
            return self.probes.push(key);
        }
        match self.unexpected.take(&pattern) {
            Some((
                env,
                Unexpected {
                    body: Body::Eager { data, sync },
                },
            )) => {
                if let Some(copied) = self.deliver_eager(key, env, data, sync) {
                    self.small.give_back(copied);
                }
            }
            Some((env, Unexpected { body: Body::Rts(r) })) => self.match_rts(key, env, r),
            None => {
                let pk = self.posted.post(pattern, key);
                if let Some(req) = self.requests.get_mut(key) {
                    req.op = Op::Posted { key: pk };
                }
            }
        }
    }

    /// Holds a message taken by `improbe`; settles its credit and sync ack,
    /// since taking it is its match.
    pub(crate) fn hold_message(&mut self, env: Envelope, mut msg: Unexpected) -> Message {
        if let Body::Eager { sync, .. } = &mut msg.body {
            let sync = sync.take();
            self.consumed_eager(env.source);
            if let Some(request) = sync {
                let header = Header::SyncAck { request };
                self.outbox.push_back(Out::Ctrl {
                    peer: env.source,
                    header,
                });
            }
        }
        Message(self.messages.insert((env, msg)))
    }
}
