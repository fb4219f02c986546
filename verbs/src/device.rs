//! [`VerbsDevice`] and its [`Device`] implementation: the send and progress
//! hot paths, RDMA, waiting, and peer failure.

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, Sent, Sink};
use ferry_core::wire::{RemoteKey, MAX_HEADER};
use ferry_core::{Buf, Error, PeerError, Rank, UsageError};

use crate::connect::Connecting;
use crate::context::Selected;
use crate::cq::{Completion, Completions};
use crate::doorbell::Doorbell;
use crate::ffi::{sys, Pd, SendOp};
use crate::handshake::{Endpoint, UD_RECV_TAG, UD_SEND_TAG};
use crate::imm::Imm;
use crate::limits::Limits;
use crate::liveness::Liveness;
use crate::mr::Registry;
use crate::observe::Observer;
use crate::options::VerbsOptions;
use crate::peers::{Peer, PeerIndex};
use crate::rdma::{Ops, RdmaOp, RDMA_TAG};
use crate::sends::SendPool;
use crate::srq::{RecvPool, VerbsIncoming, RECV_TAG};

/// Work-request id tags (top byte); the low 32 bits carry a slot or op index.
pub(crate) const SEND_BUF_TAG: u64 = 1 << 56;
pub(crate) const INLINE_TAG: u64 = 2 << 56;
pub(crate) const CREDIT_TAG: u64 = 3 << 56;
/// Keepalive probes (`liveness.rs`); the low bits carry the peer index.
pub(crate) const PROBE_TAG: u64 = 6 << 56;
const TAG_MASK: u64 = 0xff << 56;

use ferry_core::device::{PeerFailures, RdmaDir};

/// The verbs device. See the crate docs.
///
/// Its state, one concern per part: the peers and their QPs (`Peer`,
/// found through `PeerIndex`, their health in `failures`), the UD
/// endpoint of the connection handshakes (`Endpoint`, with the
/// handshakes in progress in `Connecting`), registrations
/// (`Registry`), send and receive buffers (`SendPool`, `RecvPool`),
/// RDMA operations (`Ops`), keepalives and the wait set (`Liveness`,
/// with the observer ring in `Observer`), the CQ (`Completions`),
/// held sends (`Doorbell`) and the sizes setup chose (`Limits`).
#[derive(Debug)]
pub struct VerbsDevice {
    // Field order is destruction order (verbs children before parents):
    // RC QPs, the UD endpoint (its QP, address handles and slots), then
    // user MRs, send and receive buffers (with the SRQ), the CQ and its
    // channel, the PD, and the device context last.
    pub(crate) peers: Vec<Peer>,
    pub(crate) ud: Endpoint,
    pub(crate) registry: Registry,
    pub(crate) send: SendPool,
    pub(crate) recv: RecvPool,
    pub(crate) live: Liveness,
    pub(crate) cq: Completions,
    pub(crate) pd: Pd,
    pub(crate) sel: Selected,
    pub(crate) opts: VerbsOptions,
    pub(crate) rank: Rank,
    pub(crate) caps: Caps,
    pub(crate) limits: Limits,
    pub(crate) index: PeerIndex,
    /// Each peer's health (by index into `peers`), and the failures not
    /// yet reported.
    pub(crate) failures: PeerFailures,
    /// Explicit credit messages may be due (`flush_credits`).
    pub(crate) credits_due: bool,
    pub(crate) connecting: Connecting,
    pub(crate) observer: Observer,
    pub(crate) ops: Ops,
    /// Sends held by an open batch (`doorbell.rs`).
    pub(crate) doorbell: Doorbell,
}

/// What a device holds, for measurements ([`VerbsDevice::footprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Peers with an RC QP (connected or connecting).
    pub connected: usize,
    /// RC QPs (the loopback pair counts two) plus the UD QP.
    pub qps: usize,
    /// Entries of the CQ now.
    pub cq_entries: u32,
    /// Receive buffers posted to the SRQ.
    pub srq_posted: usize,
    /// Bytes registered for the device's own buffers (send slab, receive
    /// chunks, the UD endpoint's slots).
    pub registered_bytes: usize,
    /// Address handles (one per peer this rank sent a datagram to).
    pub address_handles: usize,
}

impl VerbsDevice {
    /// The device and port in use, e.g. `rxe0:1`.
    pub fn port_name(&self) -> String {
        format!("{}:{}", self.sel.name, self.sel.port)
    }

    /// The GID index used for addressing (`None` on InfiniBand with LID
    /// routing).
    pub fn gid_index(&self) -> Option<u8> {
        self.sel.gid_index
    }

    /// The largest header + payload sent inline (`IBV_SEND_INLINE`).
    pub fn max_inline(&self) -> usize {
        self.limits.max_inline()
    }

    /// Whether `addr` lies in the eager receive buffers: an ARecv buffer
    /// whose [`Buf::id`] does was handed over without a copy.
    pub fn eager_buffer_contains(&self, addr: usize) -> bool {
        self.recv.contains(addr)
    }

    /// What the device holds now: connections, QPs, CQ entries and
    /// registered bytes (they grow with the peers used, not with the job).
    pub fn footprint(&self) -> Footprint {
        Footprint {
            connected: self.peers.iter().filter(|p| p.qp.is_some()).count(),
            qps: self.connecting.qps() as usize + 1,
            cq_entries: self.cq.entries(),
            srq_posted: self.recv.chunks() * self.limits.per_peer() as usize,
            registered_bytes: self.send.registered_bytes()
                + self.recv.registered_bytes()
                + self.ud.registered_bytes(),
            address_handles: self.ud.ah_count(),
        }
    }

    /// Whether `peer` is connected both ways (see `qp.rs`).
    pub fn is_connected(&self, peer: Rank) -> bool {
        self.peer_index(peer).is_ok_and(|i| self.peers[i].up)
    }

    /// Starts connecting to `peer` now rather than at its first use;
    /// `Ok(true)` once connected. Progress the device (on both sides) to
    /// complete the handshake.
    ///
    /// # Errors
    /// A rank that is not a peer, or the peer's failure.
    pub fn connect(&mut self, peer: Rank) -> Result<bool, Error> {
        let i = self.peer_index(peer)?;
        self.alive(i)?;
        if !self.peers[i].up {
            self.start_connect(i)?;
        }
        Ok(self.peers[i].up)
    }

    /// Handshake datagrams dropped as malformed, stale or misaddressed.
    pub fn dropped_datagrams(&self) -> u64 {
        self.ud.dropped()
    }

    /// Data messages this rank may still send to `peer` before it must wait
    /// for credits (`None` for a rank that is not a peer).
    pub fn credits_available(&self, peer: Rank) -> Option<u32> {
        let i = self.peer_index(peer).ok()?;
        Some(self.peers[i].credits.available())
    }

    /// Live rendezvous registrations.
    pub fn registrations(&self) -> usize {
        self.registry.live()
    }

    /// Registrations reused from the cache and made anew so far (empty
    /// buffers, which need none, are not counted); see `mr.rs`.
    pub fn registration_cache_stats(&self) -> (u64, u64) {
        let s = self.registry.stats();
        (s.hits, s.misses)
    }

    #[inline]
    pub(crate) fn peer_index(&self, peer: Rank) -> Result<usize, Error> {
        self.index.of_rank(peer)
    }

    /// Sends explicit credit messages where due and possible.
    fn flush_credits(&mut self) -> Result<(), Error> {
        self.credits_due = false;
        for (i, p) in self.peers.iter_mut().enumerate() {
            if !p.up || !self.failures.is_alive(i) || !p.credits.explicit_due() {
                continue;
            }
            let Some(qp) = p.qp.as_mut() else {
                continue;
            };
            if p.sq_free == 0 {
                // Retried after a send completion frees a slot.
                self.credits_due = true;
                continue;
            }
            let n = p.credits.take_owed();
            // A zero-length SEND carries only the immediate.
            let covers = crate::signal::covers(&mut p.unsig);
            let r = qp.post_empty(CREDIT_TAG | covers, SendOp::SendImm(Imm::credit(n)));
            match r {
                Ok(()) => p.sq_free -= 1,
                Err(e) => {
                    p.unsig = (covers >> 32) as u32;
                    p.credits.restore_owed(n);
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }

    /// Sends a keepalive probe to every live remote peer that has none in
    /// flight (see `liveness.rs`).
    fn probe(&mut self) {
        for (i, p) in self.peers.iter_mut().enumerate() {
            if !p.up || p.loop_rx.is_some() || p.probing || !self.failures.is_alive(i) {
                continue;
            }
            let Some(qp) = p.qp.as_mut().filter(|_| p.sq_free > 0) else {
                continue;
            };
            let op = SendOp::Write { addr: 0, rkey: 0 };
            // A zero-length RDMA WRITE reads no local memory and writes none
            // at the peer (the rkey is not even checked).
            let covers = crate::signal::covers(&mut p.unsig);
            match qp.post_empty(PROBE_TAG | covers | i as u64, op) {
                Ok(()) => {
                    p.sq_free -= 1;
                    p.probing = true;
                }
                Err(e) => {
                    p.unsig = (covers >> 32) as u32;
                    tracing::warn!(peer = p.rank, error = %e, "verbs keepalive probe not posted")
                }
            }
        }
    }

    /// A completion of the UD endpoint: a handshake datagram arrived (or a
    /// datagram send finished).
    #[cold]
    fn complete_ud(&mut self, c: &Completion) {
        match self.ud.complete(c, self.rank, self.index.by_rank()) {
            Ok(Some((i, msg))) => self.on_handshake(i, msg),
            Ok(None) => {}
            Err(e) => {
                // The endpoint could not repost a receive: handshakes may
                // stall, and the requesters' deadlines report it.
                tracing::error!(error = %e, "verbs: UD receive not reposted");
            }
        }
    }

    /// Handles one completion; returns the events reported to the sink.
    #[inline]
    fn complete<S: Sink>(&mut self, c: &Completion, sink: &mut S) -> usize {
        let index = (c.wr_id & 0xffff_ffff) as u32;
        match c.wr_id & TAG_MASK {
            RECV_TAG => return self.complete_recv(c, index, sink),
            UD_RECV_TAG | UD_SEND_TAG => {
                self.complete_ud(c);
                return 0;
            }
            _ => {}
        }
        let Some(pi) = self.index.of_qpn(c.qp_num) else {
            tracing::error!(qpn = c.qp_num, "verbs completion for an unknown QP");
            return 0;
        };
        let ok = c.status == sys::ibv_wc_status::IBV_WC_SUCCESS;
        if c.wr_id & TAG_MASK == crate::signal::UNSIG_TAG {
            // Only a flushed unsignaled send completes on its own; its slot
            // is retired by the signaled one after it.
            if !ok {
                self.wc_failed(pi, c.status);
            }
            return 0;
        }
        self.peers[pi].sq_free += 1 + crate::signal::covered(c.wr_id);
        if self.peers[pi].credits.explicit_due() {
            self.credits_due = true;
        }
        if !ok {
            self.wc_failed(pi, c.status);
        }
        match c.wr_id & TAG_MASK {
            SEND_BUF_TAG => {
                self.send.give_back(index);
                0
            }
            PROBE_TAG => {
                self.peers[pi].probing = false;
                0
            }
            RDMA_TAG => {
                let status = (!ok).then_some(c.status as i32);
                match self.ops.chunk_done(index, status) {
                    Some((token, result)) => {
                        sink.rdma_done(token, result);
                        1
                    }
                    None => 0,
                }
            }
            _ => 0,
        }
    }

    fn complete_recv<S: Sink>(&mut self, c: &Completion, index: u32, sink: &mut S) -> usize {
        let Some(slot) = self.recv.slot_valid(u64::from(index)) else {
            tracing::error!(index, "verbs receive completion for an unknown buffer");
            return 0;
        };
        let Some(pi) = self.index.of_qpn(c.qp_num) else {
            self.recv.recycle(slot);
            return 0;
        };
        if c.status != sys::ibv_wc_status::IBV_WC_SUCCESS {
            self.recv.recycle(slot);
            self.wc_failed(pi, c.status);
            return 0;
        }
        let rank = self.peers[pi].rank;
        if !self.peers[pi].up && self.failures.is_alive(pi) {
            // The requester's first packet: its side is connected too.
            self.up(pi);
        }
        if !self.failures.is_alive(pi) {
            // What a failed peer sends after its failure was reported is
            // dropped (its requests have failed already).
            self.recv.recycle(slot);
            return 0;
        }
        let byte_len = c.byte_len as usize;
        let decoded = if !c.with_imm {
            Err("verbs: message without an immediate")
        } else if byte_len > self.recv.slot_size() {
            Err("verbs: message longer than an eager buffer")
        } else {
            Imm::decode(c.imm, byte_len)
        };
        let imm = match decoded
            .and_then(|imm| self.peers[pi].credits.returned(imm.credits).map(|()| imm))
        {
            Ok(imm) => imm,
            Err(what) => {
                self.recv.recycle(slot);
                self.fail(pi, PeerError::Protocol { rank, what }.into());
                return 0;
            }
        };
        if imm.credit_only {
            self.recv.recycle(slot);
            return 0;
        }
        let packet = VerbsIncoming {
            pool: &mut self.recv,
            slot: Some(slot),
            header_len: imm.header_len,
            payload_len: byte_len - imm.header_len,
        };
        // Dropping the packet (inside or after the sink) refills the SRQ;
        // only then is the peer's credit owed back.
        sink.packet(rank, packet);
        let credits = &mut self.peers[pi].credits;
        credits.consumed();
        if credits.explicit_due() {
            self.credits_due = true;
        }
        1
    }
}

impl Device for VerbsDevice {
    fn caps(&self, _peer: Rank) -> &Caps {
        &self.caps
    }

    #[inline]
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        let i = self.peer_index(peer)?;
        // The engine's limits (the device contract's *Size limits*): the
        // immediate's header length and the send slots rely on them (a
        // slot refuses a longer packet all the same: `Slab::write`).
        debug_assert!(header.len() <= MAX_HEADER, "header past MAX_HEADER");
        debug_assert!(
            payload.len() <= self.caps.max_payload,
            "payload past max_payload"
        );
        self.alive(i)?;
        if !self.peers[i].up {
            self.start_connect(i)?;
            return Ok(Sent::Busy);
        }
        if self.doorbell.must_ring_before(i) {
            self.ring();
            self.alive(i)?;
        }
        let p = &mut self.peers[i];
        let Some(qp) = p.qp.as_mut() else {
            return Err(Error::Internal("verbs: a peer up without a QP"));
        };
        if p.sq_free == 0 || !p.credits.take() {
            return Ok(Sent::Busy);
        }
        let total = header.len() + payload.len();
        let slot = if total <= self.limits.max_inline() {
            None
        } else if let Some(s) = self.send.take() {
            Some(s)
        } else {
            p.credits.untake();
            return Ok(Sent::Busy);
        };
        let owed = p.credits.take_owed();
        let imm = Imm::data(header.len(), owed);
        let unsig = p.unsig;
        let post = self.doorbell.route(i, qp);
        let r = match slot {
            // Inline: the provider (or the batch's chain) copies the bytes
            // during the call, and the send may go unsignaled (`signal.rs`).
            None if crate::signal::may_skip(p.unsig, p.sq_free, self.limits.signal_every()) => {
                p.unsig += 1;
                post.inline(crate::signal::UNSIG_TAG, imm, [header, payload], false)
            }
            None => {
                let covers = crate::signal::covers(&mut p.unsig);
                post.inline(INLINE_TAG | covers, imm, [header, payload], true)
            }
            // Slot `s` is free (popped from the free list: no send in flight
            // reads it) and holds `max_payload + MAX_HEADER >= total` bytes
            // (the contract's *Size limits*; `write` checks it again, as
            // memory safety needs); it is not touched again until its completion
            // returns it to the free list.
            Some(s) => match self.send.write(s, header, payload) {
                Some(len) => post.slot(
                    SEND_BUF_TAG | crate::signal::covers(&mut p.unsig) | u64::from(s),
                    SendOp::SendImm(imm),
                    self.send.slab(),
                    s,
                    len,
                ),
                None => Err(crate::ffi::FfiError::Missing("a send longer than its slot")),
            },
        };
        match r {
            Ok(()) => {
                p.sq_free -= 1;
                Ok(Sent::Done)
            }
            Err(e) => {
                p.unsig = unsig;
                p.credits.untake();
                p.credits.restore_owed(owed);
                if let Some(s) = slot {
                    self.send.give_back(s);
                }
                Err(e.into())
            }
        }
    }

    fn register(
        &mut self,
        _peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        self.registry.register(&self.pd, buf, access)
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.registry.deregister(mem)
    }

    fn rdma(
        &mut self,
        dir: RdmaDir,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        let i = self.peer_index(peer)?;
        self.alive(i)?;
        let l = self.registry.local(local).ok_or(UsageError::StaleHandle)?;
        if len > l.len {
            return Err(UsageError::LengthMismatch(
                "verbs: RDMA longer than the local registration",
            )
            .into());
        }
        let Ok(rkey) = u32::try_from(remote.key) else {
            return Err(PeerError::Protocol {
                rank: peer,
                what: "verbs: remote key wider than 32 bits",
            }
            .into());
        };
        if len == 0 {
            self.ops.complete_now(token);
            return Ok(Sent::Done);
        }
        if !self.peers[i].up {
            self.start_connect(i)?;
            return Ok(Sent::Busy);
        }
        if self.peers[i].sq_free == 0 {
            return Ok(Sent::Busy);
        }
        // Behind the sends before it on the QP.
        self.ring();
        let op = RdmaOp {
            token,
            dir,
            peer: i,
            local: l.addr,
            lkey: l.lkey,
            remote: remote.addr,
            rkey,
            len,
            posted: 0,
            in_flight: 0,
            error: None,
        };
        Ok(
            if self
                .ops
                .start(op, &mut self.peers, &self.failures, self.limits.max_msg())?
            {
                Sent::Done
            } else {
                Sent::Busy
            },
        )
    }

    #[inline]
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        if let Some(e) = self.recv.failed() {
            return Err(e.into());
        }
        self.ring();
        let mut events = 0;
        while let Some(token) = self.ops.pop_ready() {
            sink.rdma_done(token, Ok(()));
            events += 1;
        }
        let (batch, polled) = self.cq.poll_batch();
        for c in &batch {
            events += self.complete(c, sink);
        }
        self.cq.give_back(batch);
        polled?;
        if self.credits_due {
            self.flush_credits()?;
        }
        if self.ops.has_unposted() {
            let mut done = Vec::new();
            self.ops.resume(
                &mut self.peers,
                &self.failures,
                self.limits.max_msg(),
                |t, r| done.push((t, r)),
            );
            for (t, r) in done {
                sink.rdma_done(t, r);
                events += 1;
            }
        }
        if self.connecting.any() && self.live.handshake_due() {
            self.handshake_timers();
        }
        if self.observer.rewatch_due() {
            self.watch_ring();
        }
        if self.observer.notices_due() {
            self.flush_notices();
        }
        if self.live.due() {
            self.probe();
        }
        if self.live.events_due() {
            self.take_async_events();
        }
        if self.failures.has_unreported() {
            events += self.report_failures(sink);
        }
        Ok(events)
    }

    fn batch_begin(&mut self) {
        self.open_batch();
    }

    fn batch_end(&mut self) -> Result<(), Error> {
        self.close_batch();
        Ok(())
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        self.ring();
        if self.ops.has_ready() || self.failures.has_unreported() || self.recv.failed().is_some() {
            return Ok(Armed::Pending);
        }
        if self.live.arm(self.next_handshake_timer())? {
            return Ok(Armed::Pending);
        }
        Ok(if self.cq.arm()? {
            Armed::Pending
        } else {
            Armed::Sleep
        })
    }

    fn disarm(&mut self) {
        self.cq.disarm();
        self.live.disarm();
    }

    fn wait_fd(&self) -> Option<i32> {
        Some(self.live.fd())
    }

    fn peer_died_elsewhere(&mut self, rank: Rank) {
        self.announce_rank(rank);
    }
}

/// The device's wait fd (an epoll set of the completion channel and the
/// keepalive timer), borrowed.
impl std::os::fd::AsFd for VerbsDevice {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.live.as_fd()
    }
}
