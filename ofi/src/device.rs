//! [`OfiDevice`] and its [`Device`] implementation: the send and progress
//! paths, waiting, and peer failure.

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, RdmaDir, Sent, Sink};
use ferry_core::wire::{RemoteKey, MAX_HEADER};
use ferry_core::{Buf, DeviceError, Error, PeerError, Rank};

use crate::buffers::{RecvBufs, SendBufs};
use crate::cq::{Completions, Op};
use crate::eager::{self, Bounce, Held, HELLO};
use crate::failure::Watch;
use crate::ffi::{Addr, CqRead, Done, Fabric, Fail};
use crate::peers::Peers;
use crate::rma::Registrations;
use crate::sys;
use crate::transfers::{InFlight, Transfers};

/// The libfabric device. See the crate docs.
///
/// Its state, one concern per part: the peers (`Peers`), the send and
/// receive buffers (`SendBufs`, `RecvBufs`), the RMA operations in
/// flight (`Transfers`), the completion queue's contexts and stash
/// (`Completions`), the liveness sockets (`Watch`), the registrations
/// (`Registrations`) and the fabric itself.
#[derive(Debug)]
pub struct OfiDevice {
    pub(crate) rank: Rank,
    pub(crate) caps: Caps,
    pub(crate) provider: String,
    /// The provider moves data only inside our calls (`FI_PROGRESS_MANUAL`).
    pub(crate) manual_progress: bool,
    pub(crate) peers: Peers,
    pub(crate) sends: SendBufs,
    pub(crate) recvs: RecvBufs,
    pub(crate) transfers: Transfers,
    pub(crate) cq: Completions,
    pub(crate) watch: Watch,
    // Dropped in this order after `Drop::drop` closed the endpoint: the
    // registrations (their MRs), then the fabric's AV, CQ and domain.
    pub(crate) mem: Registrations,
    pub(crate) fabric: Fabric,
}

/// How long teardown waits for this rank's own sends and RMA operations
/// to complete before it closes the endpoint anyway (a dead peer's never
/// complete).
const QUIESCE: std::time::Duration = std::time::Duration::from_millis(200);

impl Drop for OfiDevice {
    fn drop(&mut self) {
        self.quiesce();
        // Posted receives and sends reference our buffers and MRs: the
        // endpoint goes first, so nothing touches them afterwards.
        self.fabric.close_ep();
    }
}

/// A sink for teardown: the engine is gone, so whatever still arrives is
/// dropped (its buffer goes back to the device).
struct Discard;

impl Sink for Discard {
    fn packet<I: ferry_core::device::Incoming>(&mut self, _from: Rank, _packet: I) {}
    fn rdma_done(&mut self, _token: OpToken, _result: Result<(), Error>) {}
    fn peer_failed(&mut self, _peer: Rank, _error: Error) {}
}

impl OfiDevice {
    /// Lets this rank's sends and RMA operations complete (for at most
    /// `QUIESCE`) before the endpoint closes, so that `fi_close` finds none
    /// of their completions still to flush: `verbs;ofi_rxm` can crash
    /// flushing a connection's completions inside `fi_close`
    /// (ofiwg/libfabric#11828; see the crate docs).
    fn quiesce(&mut self) {
        let deadline = std::time::Instant::now() + QUIESCE;
        let mut sink = Discard;
        while (self.sends.in_flight() || self.transfers.in_flight())
            && std::time::Instant::now() < deadline
        {
            if self.progress(&mut sink).is_err() {
                break;
            }
        }
        let waited =
            QUIESCE.saturating_sub(deadline.saturating_duration_since(std::time::Instant::now()));
        tracing::debug!(
            rank = self.rank,
            ?waited,
            "ofi: quiesced before closing the endpoint"
        );
    }

    /// The provider in use (`tcp;ofi_rxm`, `shm`, ...).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Live memory registrations (diagnostics and leak checks).
    pub fn registrations(&self) -> usize {
        self.mem.live()
    }

    /// Receive buffers handed to the engine and not yet returned.
    pub fn parked_buffers(&self) -> usize {
        self.recvs.parked()
    }

    /// Free send buffers right now.
    pub fn free_send_buffers(&self) -> usize {
        self.sends.free_count()
    }

    /// Reads completions while a post is refused (see
    /// [`Completions::read_aside`]): the provider progresses and send
    /// buffers come back.
    #[cold]
    fn make_room(&mut self) -> Result<(), Error> {
        let sends = &mut self.sends;
        self.cq
            .read_aside(&mut self.fabric, |i| sends.give_back(i))
            .map_err(Error::from)
    }

    /// A free send buffer, or `None` (back-pressure).
    #[inline]
    fn take_send_buf(&mut self) -> Result<Option<usize>, Error> {
        if let Some(i) = self.sends.take() {
            return Ok(Some(i));
        }
        self.make_room()?;
        Ok(self.sends.take())
    }

    /// A free RMA slot, or `None` (back-pressure).
    fn take_rma_slot(&mut self) -> Result<Option<usize>, Error> {
        if let Some(i) = self.transfers.take() {
            return Ok(Some(i));
        }
        self.make_room()?;
        Ok(self.transfers.take())
    }

    /// A receive buffer: a free or returned one, or a new one while under
    /// the cap.
    fn take_bounce(&mut self) -> Result<Option<Bounce>, Fail> {
        if let Some(b) = self.recvs.reuse() {
            return Ok(Some(b));
        }
        if !self.recvs.may_allocate() {
            return Ok(None);
        }
        let size = self.recvs.buf_size();
        let b = self
            .mem
            .new_bounce(&mut self.fabric, size, u64::from(sys::FI_RECV))?;
        self.recvs.allocated_one();
        Ok(Some(b))
    }

    /// Posts a receive buffer into every empty slot (as far as buffers and
    /// the provider allow).
    pub(crate) fn replenish(&mut self) -> Result<(), Error> {
        while let Some(i) = self.recvs.next_empty() {
            let Some(b) = self.take_bounce()? else {
                break;
            };
            match self.post_recv(i, b) {
                Ok(None) => {}
                Ok(Some(b)) => {
                    self.recvs.recycle(b);
                    break;
                }
                Err((f, b)) => {
                    self.recvs.recycle(b);
                    return Err(f.into());
                }
            }
        }
        Ok(())
    }

    /// Sends one message: `fi_tinject` when it fits, else through a send
    /// buffer.
    #[inline]
    fn post(
        &mut self,
        addr: Addr,
        peer: Rank,
        tag: u64,
        header: &[u8],
        payload: &[u8],
    ) -> Result<Sent, Error> {
        if let Some(bytes) = self.sends.inject(header, payload) {
            return match self.fabric.tinject(bytes, addr, tag) {
                Ok(true) => Ok(Sent::Done),
                Ok(false) => {
                    self.make_room()?;
                    Ok(Sent::Busy)
                }
                Err(f) => Err(self.post_error(peer, f)),
            };
        }
        let Some(slot) = self.take_send_buf()? else {
            return Ok(Sent::Busy);
        };
        let total = self.sends.fill(slot, header, payload);
        let r = self.post_send(slot, total, addr, tag);
        match r {
            Ok(true) => {
                self.sends.posted(slot, peer);
                Ok(Sent::Done)
            }
            Ok(false) => {
                self.sends.give_back(slot);
                self.make_room()?;
                Ok(Sent::Busy)
            }
            Err(f) => {
                self.sends.give_back(slot);
                Err(self.post_error(peer, f))
            }
        }
    }

    /// Sends setup's hello to `peer` (opening the provider's connection).
    pub(crate) fn send_hello(&mut self, peer: Rank) -> Result<Sent, Error> {
        let addr = self.peers.addr(peer)?;
        self.post(addr, peer, eager::tag(self.rank, 0, 0) | HELLO, &[], &[])
    }

    /// Handles one successful completion; returns the events reported.
    fn complete<S: Sink>(&mut self, e: &Done, sink: &mut S) -> usize {
        match self.cq.classify(e.ctx) {
            Op::Recv(i) => {
                let Some(b) = self.recvs.take_posted(i) else {
                    tracing::warn!(slot = i, "ofi: receive completion for an empty slot");
                    return 0;
                };
                self.arrived(b, e.len, e.tag, sink)
            }
            Op::Send(i) => {
                self.sends.give_back(i);
                0
            }
            Op::Rma(i) => match self.transfers.finish(i) {
                Some(op) => {
                    self.release_zombie(op.mem);
                    sink.rdma_done(op.token, Ok(()));
                    1
                }
                None => 0,
            },
            Op::Unknown => 0,
        }
    }

    /// Validates an arrival and delivers it (and any held arrivals it
    /// unblocks) in per-peer sequence order.
    fn arrived<S: Sink>(&mut self, b: Bounce, len: usize, tag: u64, sink: &mut S) -> usize {
        let (from, seq, header_len) = eager::untag(tag);
        let from = from as Rank;
        if !self.peers.is_known(from) {
            tracing::warn!(
                rank = self.rank,
                from,
                "ofi: packet from an unknown rank dropped"
            );
            self.recvs.recycle(b);
            return 0;
        }
        if tag & HELLO != 0 {
            self.peers.hello_from(from);
            self.recvs.recycle(b);
            return 0;
        }
        if header_len > MAX_HEADER || header_len > len || len > b.mem.len() {
            let what = "ofi packet with a bad header length";
            self.fail(from, PeerError::Protocol { rank: from, what }.into());
            self.recvs.recycle(b);
            return 0;
        }
        if !self.peers.is_alive(from) {
            self.recvs.recycle(b);
            return 0;
        }
        let payload_len = len - header_len;
        if seq != self.peers.seq_in(from) {
            self.recvs.hold(Held {
                from,
                seq,
                bounce: b,
                header_len,
                payload_len,
            });
            return 0;
        }
        self.deliver(from, b, header_len, payload_len, sink);
        let mut n = 1;
        while let Some(h) = self.recvs.take_held(from, self.peers.seq_in(from)) {
            self.deliver(from, h.bounce, h.header_len, h.payload_len, sink);
            n += 1;
        }
        n
    }

    #[inline]
    fn deliver<S: Sink>(
        &mut self,
        from: Rank,
        bounce: Bounce,
        header_len: usize,
        payload_len: usize,
        sink: &mut S,
    ) {
        self.peers.delivered(from);
        sink.packet(from, self.recvs.incoming(bounce, header_len, payload_len));
    }

    /// Releases a deregistered region once no RMA on it is in flight.
    pub(crate) fn release_zombie(&mut self, mem: MemHandle) {
        if self.transfers.unbury(mem) {
            drop(self.mem.deregister(mem));
        }
    }
}

impl Device for OfiDevice {
    fn caps(&self, _peer: Rank) -> &Caps {
        &self.caps
    }

    #[inline]
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        let addr = self.peers.addr(peer)?;
        // The engine's limits (the device contract's *Size limits*): the
        // tag's 7-bit header length and the send buffers rely on them.
        debug_assert!(header.len() <= MAX_HEADER, "header past MAX_HEADER");
        debug_assert!(
            payload.len() <= self.caps.max_payload,
            "payload past max_payload"
        );
        let tag = eager::tag(self.rank, self.peers.seq_out(peer), header.len());
        let sent = self.post(addr, peer, tag, header, payload)?;
        if sent == Sent::Done {
            self.peers.sent(peer);
        }
        Ok(sent)
    }

    fn register(
        &mut self,
        _peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        self.mem.register(&mut self.fabric, buf, access)
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        if self.transfers.uses(mem) {
            // Only after a failure does the engine give up on a transfer
            // still in flight: the provider may yet write the buffer, so it
            // stays registered and owned here until the operation ends.
            tracing::warn!(
                rank = self.rank,
                "ofi: deregistering a region with an RMA in flight"
            );
            self.transfers.bury(mem);
            return None;
        }
        self.mem.deregister(mem)
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
        if !self.caps.rdma(dir) {
            return Err(DeviceError::Unsupported(dir.name()).into());
        }
        let addr = self.peers.addr(peer)?;
        let l = self.mem.local(local, len)?;
        if len == 0 {
            self.transfers.done_now(token);
            return Ok(Sent::Done);
        }
        let Some(slot) = self.take_rma_slot()? else {
            return Ok(Sent::Busy);
        };
        let r = self.post_rma(slot, dir, l, len, addr, remote);
        match r {
            Ok(true) => {
                let op = InFlight {
                    token,
                    peer,
                    mem: local,
                };
                self.transfers.started(slot, op);
                Ok(Sent::Done)
            }
            Ok(false) => {
                self.transfers.give_back(slot);
                self.make_room()?;
                Ok(Sent::Busy)
            }
            Err(f) => {
                self.transfers.give_back(slot);
                Err(self.post_error(peer, f))
            }
        }
    }

    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        // Receives consumed by the previous call are posted again first
        // thing here rather than at its end: that call's caller (a
        // ping-pong's reply, typically) goes first, and `fi_trecv` stays
        // off the critical path. Posted receives run short by at most one
        // call's worth.
        if self.recvs.has_empty() {
            self.replenish()?;
        }
        let mut events = 0;
        while let Some((token, r)) = self.transfers.pop_done() {
            sink.rdma_done(token, r);
            events += 1;
        }
        while let Some(e) = self.cq.pop_stashed() {
            events += self.complete(&e, sink);
        }
        let mut drained = false;
        for _ in 0..4 {
            let (mut entries, r) = self.cq.read(&mut self.fabric);
            let n = match r {
                Ok(CqRead::Entries(n)) => n,
                Ok(CqRead::Error) => {
                    self.cq.give_back(entries);
                    events += self.complete_err(sink)?;
                    continue;
                }
                Err(f) => {
                    self.cq.give_back(entries);
                    return Err(f.into());
                }
            };
            for e in entries.drain(..) {
                events += self.complete(&e, sink);
            }
            self.cq.give_back(entries);
            if n != crate::ffi::CQ_BATCH {
                drained = true;
                break;
            }
        }
        if self.watch.due() {
            self.check_liveness();
        }
        // Deaths are reported once the CQ is drained, so that what a dead
        // peer sent before dying is delivered first.
        if drained && self.peers.has_unreported() {
            events += self.report_failures(sink);
        }
        Ok(events)
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        if self.transfers.has_done() || self.cq.has_stashed() || self.peers.has_unreported() {
            return Ok(Armed::Pending);
        }
        // A message that finds no posted receive raises no completion, so
        // no wake-up: post them all before sleeping, and poll if none can
        // be posted (every buffer handed out).
        if self.recvs.has_empty() {
            self.replenish()?;
            if self.recvs.none_posted() {
                return Ok(Armed::Pending);
            }
        }
        if self.fabric.wait_fd().is_none() {
            // Nothing to sleep on: the owner sees `wait_fd() == None` (and
            // `caps.wait_fd == false`) and polls instead of sleeping.
            return Ok(Armed::Sleep);
        }
        if self.fabric.trywait()? {
            Ok(Armed::Sleep)
        } else {
            Ok(Armed::Pending)
        }
    }

    fn disarm(&mut self) {
        // The wake-up may have been a peer's death.
        self.watch.soon();
    }

    /// Under manual progress an RMA transfer's bytes move only inside
    /// `fi_cq_read`, yet complete as one event: a hybrid waiter that slept
    /// between events took 1 MiB over `tcp;ofi_rxm` to 0.73x of polling
    /// (osu_bw's C loop, 5 alternating pairs).
    #[inline]
    fn driving(&self) -> bool {
        self.manual_progress && self.transfers.in_flight()
    }

    fn wait_fd(&self) -> Option<i32> {
        self.fabric.wait_fd()?;
        self.watch.fd().or_else(|| self.fabric.wait_fd())
    }
}
