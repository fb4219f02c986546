//! Arrivals: the engine as the device's [`Sink`].
//!
//! Each packet is decoded and validated first; anything malformed, out of
//! sequence, or naming a request the peer has no business naming is a
//! protocol violation. The offending peer is cut off ([`State::fail_peer`])
//! and the rest of the job carries on.

use super::request::{Cold, Kind, Op};
use super::{Body, Out, State, Unexpected};
use crate::buffer::Buf;
use crate::device::{Incoming, OpToken, Sink};
use crate::envelope::{Envelope, Rank};
use crate::error::{Error, PeerError, Result, UsageError};
use crate::handle::Message;
use crate::status::Status;
use crate::wire::{Eager, Header, Rts};

impl Sink for State {
    /// A plain eager packet from a live peer (the common one) is handled
    /// inline in the device's delivery; the rest out of line.
    #[inline(always)]
    fn packet<I: Incoming>(&mut self, from: Rank, packet: I) {
        self.events += 1;
        self.counters.packets_in += 1;
        let live = self
            .peers
            .get(from as usize)
            .is_some_and(|p| p.failed.is_none());
        if live {
            if let Some(e) = Header::decode_plain_eager(packet.header()) {
                return self.on_eager(from, e, packet);
            }
        }
        self.packet_general(from, packet);
    }

    fn rdma_done(&mut self, token: OpToken, result: Result<()>) {
        self.events += 1;
        self.on_rdma_done(token, result);
    }

    fn peer_failed(&mut self, peer: Rank, error: Error) {
        self.events += 1;
        if self.valid_peer(peer) {
            self.fail_peer(peer, error);
        }
    }
}

impl State {
    /// [`Sink::packet`] of anything but a plain eager packet from a live
    /// peer (the events are counted).
    #[inline(never)]
    fn packet_general<I: Incoming>(&mut self, from: Rank, packet: I) {
        if !self.valid_peer(from) {
            tracing::error!(from, "device reported a packet from a rank outside the job");
            return;
        }
        if self.peers[from as usize].failed.is_some() {
            return;
        }
        if let Some(e) = Header::decode_plain_eager(packet.header()) {
            return self.on_eager(from, e, packet);
        }
        let header = match Header::decode(packet.header()) {
            Ok(h) => h,
            Err(what) => return self.protocol_error(from, what),
        };
        let carries_data = matches!(header, Header::Eager(_) | Header::Frag(_));
        if !carries_data && !packet.payload().is_empty() {
            return self.protocol_error(from, "payload on a header-only packet");
        }
        match header {
            Header::Eager(e) => self.on_eager(from, e, packet),
            Header::Rts(r) => self.on_rts(from, r),
            Header::Cts(c) => self.on_cts(from, c),
            Header::Frag(f) => self.on_frag(from, f, packet.payload()),
            Header::Fin { request, failed } => self.on_fin(from, request, failed),
            Header::SyncAck { request } => self.on_sync_ack(from, request),
            Header::Credit { credits } => self.on_credit(from, credits),
        }
    }
}

/// Lets a buffered payload be delivered by the same code as a packet.
impl Incoming for Buf {
    fn header(&self) -> &[u8] {
        &[]
    }
    fn payload(&self) -> &[u8] {
        self.as_slice()
    }
    fn into_payload(self) -> Result<Buf> {
        Ok(self)
    }
}

impl State {
    /// Matched packets carry a per-peer sequence number: a gap or repeat
    /// means the device broke its ordering promise or the peer is corrupt.
    #[inline(always)]
    pub(super) fn check_seq(&mut self, from: Rank, seq: u32) -> bool {
        let peer = &mut self.peers[from as usize];
        if seq != peer.recv_seq {
            self.protocol_error(from, "out-of-order or duplicate sequence number");
            return false;
        }
        peer.recv_seq = seq.wrapping_add(1);
        true
    }

    /// An eager packet: matched and landed inline (the common case of a
    /// posted receive), queued as unexpected out of line.
    #[inline(always)]
    fn on_eager<I: Incoming>(&mut self, from: Rank, e: Eager, packet: I) {
        if !self.check_seq(from, e.seq) {
            return;
        }
        let env = Envelope {
            source: from,
            tag: e.tag,
            context: e.context,
        };
        match self.posted.take_match(&env) {
            Some(key) => drop(self.deliver_eager(key, env, packet, e.sync)),
            None => self.eager_unexpected(env, e.sync, packet),
        }
    }

    #[inline(never)]
    fn eager_unexpected<I: Incoming>(&mut self, env: Envelope, sync: Option<u64>, packet: I) {
        let pooled = if packet.hand_over_allocates() {
            self.small.copy(packet.payload())
        } else {
            None
        };
        let data = match pooled {
            Some(d) => d,
            None => match packet.into_payload() {
                Ok(d) => d,
                Err(err) => return self.fail_peer(env.source, err),
            },
        };
        let msg = Unexpected {
            body: Body::Eager { data, sync },
        };
        self.push_unexpected(env, msg);
    }

    fn on_rts(&mut self, from: Rank, r: Rts) {
        if !self.check_seq(from, r.seq) {
            return;
        }
        let env = Envelope {
            source: from,
            tag: r.tag,
            context: r.context,
        };
        match self.posted.take_match(&env) {
            Some(key) => self.match_rts(key, env, r),
            None => {
                if r.ready {
                    self.counters.ready_unmatched += 1;
                }
                self.push_unexpected(env, Unexpected { body: Body::Rts(r) });
            }
        }
    }

    fn push_unexpected(&mut self, env: Envelope, msg: Unexpected) {
        self.counters.unexpected_arrivals += 1;
        let len = msg.len();
        self.unexpected.push(env, msg);
        if !self.probes.is_empty() {
            self.wake_probes(env, len);
        }
    }

    /// Completes probe requests that this arrival satisfies.
    fn wake_probes(&mut self, env: Envelope, len: usize) {
        let mut i = 0;
        while i < self.probes.len() {
            let key = self.probes[i];
            let hit = self
                .requests
                .get(key)
                .is_some_and(|r| super::post::pattern_of(r).matches(&env));
            if hit {
                self.probes.swap_remove(i);
                self.complete(key, arrival_status(env, len));
            } else {
                i += 1;
            }
        }
    }

    /// Delivers eager data to a matched receive-like request: settles the
    /// credit and the sync ack (this is the message's match), then lands it.
    /// Returns `data` if it was only copied from (a pooled buffer then
    /// goes back to the pool).
    #[inline(always)]
    pub(crate) fn deliver_eager<I: Incoming>(
        &mut self,
        key: u64,
        env: Envelope,
        data: I,
        sync: Option<u64>,
    ) -> Option<I> {
        self.consumed_eager(env.source);
        if let Some(sender) = sync {
            let header = Header::SyncAck { request: sender };
            self.outbox.push_back(Out::Ctrl {
                peer: env.source,
                header,
            });
        }
        self.land_eager(key, env, data)
    }

    /// Puts eager data into a matched request. `data` is a packet (copy out
    /// of it, or take it for ARecv) or a buffered payload. Returns `data`
    /// when it was only copied from.
    #[inline(always)]
    pub(crate) fn land_eager<I: Incoming>(
        &mut self,
        key: u64,
        env: Envelope,
        data: I,
    ) -> Option<I> {
        let Some(req) = self.requests.get_mut(key) else {
            return Some(data);
        };
        if req.kind == Kind::Recv {
            if let Some(buf) = req.buf.as_mut() {
                let len = data.payload().len();
                if len <= buf.len() {
                    // The common case, inline: a receive with room for the
                    // message. Completes through the lookup it has.
                    buf.write_at(0, data.payload());
                    self.events += 1;
                    if !super::settle(&mut self.cold, req, arrival_status(env, len)) {
                        drop(self.requests.remove(key));
                    }
                    return Some(data);
                }
            }
        }
        self.land_eager_general(key, env, data)
    }

    /// [`State::land_eager`] of everything but a receive with room.
    #[inline(never)]
    fn land_eager_general<I: Incoming>(&mut self, key: u64, env: Envelope, data: I) -> Option<I> {
        let Some(req) = self.requests.get_mut(key) else {
            return Some(data);
        };
        let len = data.payload().len();
        let mut status = arrival_status(env, len);
        match req.kind {
            Kind::ARecv => match data.into_payload() {
                // The device's (or the unexpected queue's) buffer is handed
                // over as it is: the zero-copy ARecv path.
                Ok(buf) => req.buf = Some(buf),
                Err(err) => {
                    status = Status {
                        bytes: 0,
                        error: Some(err),
                        ..status
                    }
                }
            },
            Kind::MProbe => {
                let data = match data.into_payload() {
                    Ok(b) => b,
                    Err(err) => {
                        self.complete(
                            key,
                            Status {
                                error: Some(err),
                                ..status
                            },
                        );
                        return None;
                    }
                };
                let msg = Unexpected {
                    body: Body::Eager { data, sync: None },
                };
                let m = Message(self.messages.insert((env, msg)));
                if let Some(req) = self.requests.get_mut(key) {
                    req.message = Some(m);
                }
            }
            _ => {
                let buf = req.buf.get_or_insert_with(Buf::new);
                let n = len.min(buf.len());
                buf.write_at(0, &data.payload()[..n]);
                status.bytes = n;
                if len > n {
                    let e = UsageError::Truncated {
                        message: len,
                        capacity: buf.len(),
                    };
                    status.error = Some(e.into());
                }
                // The common case completes through the lookup it has.
                self.events += 1;
                if !super::settle(&mut self.cold, req, status) {
                    drop(self.requests.remove(key));
                }
                return Some(data);
            }
        }
        self.complete(key, status);
        None
    }

    /// A receive-like request matched an RTS.
    pub(crate) fn match_rts(&mut self, key: u64, env: Envelope, r: Rts) {
        let Some(req) = self.requests.get_mut(key) else {
            return;
        };
        if req.kind == Kind::MProbe {
            let msg = Unexpected { body: Body::Rts(r) };
            let m = Message(self.messages.insert((env, msg)));
            req.message = Some(m);
            return self.complete(key, arrival_status(env, r.len as usize));
        }
        self.start_rndv_recv(key, env.source, r);
    }

    /// An eager message from `from` left the unexpected memory budget:
    /// return credits in batches of half the window.
    #[inline(always)]
    pub(crate) fn consumed_eager(&mut self, from: Rank) {
        let batch = (self.config.eager_credits / 2).max(1);
        let peer = &mut self.peers[from as usize];
        peer.to_return += 1;
        if peer.to_return >= batch {
            let credits = std::mem::take(&mut peer.to_return);
            self.outbox.push_back(Out::Ctrl {
                peer: from,
                header: Header::Credit { credits },
            });
        }
    }

    fn on_credit(&mut self, from: Rank, credits: u32) {
        let max = self.config.eager_credits;
        let peer = &mut self.peers[from as usize];
        match peer.credits.checked_add(credits).filter(|&c| c <= max) {
            Some(c) => peer.credits = c,
            None => self.protocol_error(from, "more credits returned than were lent"),
        }
    }

    fn on_sync_ack(&mut self, from: Rank, request: u64) {
        match self.requests.get(request).map(|r| &r.op) {
            Some(Op::AwaitAck { dest }) if *dest == from => self.complete(request, Status::EMPTY),
            _ => self.protocol_error(from, "sync ack for a send not awaiting one"),
        }
    }

    /// A peer violated the protocol: cut it off.
    #[cold]
    #[inline(never)]
    pub(crate) fn protocol_error(&mut self, from: Rank, what: &'static str) {
        self.counters.protocol_errors += 1;
        tracing::warn!(from, what, "protocol violation; cutting the peer off");
        self.fail_peer(from, PeerError::Protocol { rank: from, what }.into());
    }

    /// `peer` is gone (dead, or cut off): fail every request that depends on
    /// it. Requests that can still be satisfied by others (ANY_SOURCE
    /// receives) stay posted, as in ULFM; eager messages it already sent stay
    /// receivable.
    pub(crate) fn fail_peer(&mut self, peer: Rank, error: Error) {
        if self.peers[peer as usize].failed.is_some() {
            return;
        }
        self.events += 1;
        self.peer_failures += 1;
        self.failure_order.push(peer);
        self.peers[peer as usize].failed = Some(error);
        tracing::warn!(peer, %error, "peer failed");
        // Receives from ANY_SOURCE on a communicator holding the peer can
        // never be sure they are not waiting for it.
        let members = &self.context_members;
        let pending = self.posted.remove_where(|pattern, _| {
            pattern.source.is_none() && super::is_member(members, pattern.context, peer)
        });
        for key in pending {
            self.complete(
                key,
                Status {
                    error: Some(PeerError::FailedPending { rank: peer }.into()),
                    ..Status::EMPTY
                },
            );
        }
        // Unexpected RTSs from the peer can never be fetched.
        self.unexpected
            .remove_where(|env, m| env.source == peer && matches!(m.body, Body::Rts(_)));
        let posted = self
            .posted
            .remove_where(|pattern, _| pattern.source == Some(peer));
        for key in posted {
            self.complete(
                key,
                Status {
                    error: Some(error),
                    ..Status::EMPTY
                },
            );
        }
        for key in self.requests.keys() {
            let Some(req) = self.requests.get_mut(key) else {
                continue;
            };
            if req.life.complete() || !depends_on(req, peer) {
                continue;
            }
            // A registered buffer must come back from the device first.
            let mem = super::post::registered_mem(&req.op);
            let mut status = if req.kind == Kind::Send {
                Status::EMPTY
            } else {
                req.status
            };
            status.error = Some(error);
            if mem.is_some() {
                let releasing = Cold::Releasing(super::request::Releasing {
                    mem,
                    status,
                    fin: None,
                });
                self.cold.set(&mut req.op, releasing);
                self.outbox.push_back(Out::Release(key));
            } else {
                self.probes.retain(|&k| k != key);
                self.complete(key, status);
            }
        }
    }
}

/// Does this pending request need `peer` to finish?
fn depends_on(req: &super::Req, peer: Rank) -> bool {
    use super::request::{RndvRecv, RndvSend};
    match &req.op {
        Op::AwaitAck { .. } | Op::Probing => req.spec.peer == peer,
        Op::Cold(c) => match &**c {
            Cold::SendQueued(_) => req.spec.peer == peer,
            Cold::RndvSend(s) => {
                let dest = match s {
                    RndvSend::AwaitFin(w) => w.dest,
                    RndvSend::AwaitCts(w) => w.dest,
                    RndvSend::Putting(p) => p.dest,
                    RndvSend::Fragmenting(f) => f.dest,
                };
                dest == peer
            }
            Cold::RndvRecv(r) => {
                let m = match r {
                    RndvRecv::Getting(g) => g.m,
                    RndvRecv::AwaitPutFin(w) => w.m,
                    RndvRecv::AwaitFrags(w) => w.m,
                };
                m.source == peer
            }
            Cold::Releasing(_) => false,
        },
        // A collective fails through its own sends and receives.
        Op::Posted { .. } | Op::Idle | Op::Coll(_) | Op::NodeColl(_) => false,
    }
}

/// The status of a message that matched, before any truncation.
pub(crate) fn arrival_status(env: Envelope, len: usize) -> Status {
    Status {
        source: env.source,
        tag: env.tag,
        bytes: len,
        error: None,
        cancelled: false,
    }
}
