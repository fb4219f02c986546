//! [`ShmDevice`] and its [`Device`] implementation: the send and progress
//! hot paths, waiting, and peer failure.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, Sent, Sink};
use ferry_core::wire::{RemoteKey, MAX_HEADER};
use ferry_core::{Buf, DeviceError, Error, PeerError, Rank, UsageError};

use crate::cell;
use crate::fastbox::{self, Lane};
use crate::ffi::{Consumer, OwnedCell, Popped, Segment};
use crate::incoming::{recycle, ShmIncoming};
use crate::os::{self, Epoll};
use crate::queue::Corrupt;
use crate::rdma::Rdma;

/// `local_of` entry of a rank not on this node.
pub(crate) const NOT_LOCAL: u32 = u32::MAX;
/// Progress calls between looks at the clock for the liveness check.
const LIVENESS_CLOCK_EVERY: u32 = 64;
/// The longest a polling rank goes without checking its peers' liveness.
const LIVENESS_MAX_AGE: std::time::Duration = std::time::Duration::from_millis(5);

/// Epoll tag of the wake socket (peers' pidfds are tagged with their local
/// index).
pub(crate) const WAKE_TAG: u64 = u64::MAX;

use ferry_core::device::{PeerFailures, RdmaDir};

/// A local peer.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) pid: u32,
    /// Readable once the peer exits; `None` where pidfds are unavailable
    /// (then `kill(pid, 0)` is polled).
    pub(crate) pidfd: Option<OwnedFd>,
}

/// The wake-up machinery: the socket peers signal, and the epoll set that
/// combines it with the peers' pidfds into one `wait_fd`.
#[derive(Debug)]
pub(crate) struct Wake {
    pub(crate) epoll: Epoll,
    pub(crate) sock: OwnedFd,
    /// A socket connected to each local peer's wake socket (`None`: us).
    pub(crate) to: Vec<Option<OwnedFd>>,
    pub(crate) ready: Vec<u64>,
    pub(crate) armed: bool,
    /// Wake-up datagrams read so far (compared with the segment's count of
    /// signals sent to us).
    pub(crate) drained: u32,
}

/// The shared-memory device. See the crate docs.
#[derive(Debug)]
pub struct ShmDevice {
    pub(crate) seg: Arc<Segment>,
    pub(crate) consumer: Consumer,
    /// This rank's local index.
    pub(crate) me: u32,
    pub(crate) rank: Rank,
    pub(crate) caps: Caps,
    /// Job rank → local index (or [`NOT_LOCAL`]).
    pub(crate) local_of: Vec<u32>,
    /// Local index → job rank.
    pub(crate) ranks: Vec<Rank>,
    /// This rank's free cells (LIFO, private: no atomics).
    pub(crate) pool: Vec<OwnedCell>,
    pub(crate) peers: Vec<Peer>,
    /// Per local peer: sequence numbers and fastbox positions.
    pub(crate) lanes: Vec<Lane>,
    /// Whose rings each progress call polls (`active.rs`).
    pub(crate) active: crate::active::Active,
    /// Slots per fastbox ring (0: fastboxes off).
    pub(crate) fb_slots: u32,
    /// Header plus payload bytes a fastbox slot holds (0: off).
    pub(crate) fb_cap: usize,
    /// Consumed slots are freed at the latest when this many are used.
    pub(crate) fb_free_at: u32,
    pub(crate) wake: Wake,
    pub(crate) rdma: Rdma,
    pub(crate) batch: usize,
    pub(crate) liveness_interval: u32,
    /// Progress calls left until the next liveness check (a countdown: a
    /// `%` by the interval would cost a division on every call).
    pub(crate) until_liveness: u32,
    pub(crate) calls: u32,
    pub(crate) check_now: bool,
    /// When the peers' liveness was last checked: a rank that polls
    /// instead of sleeping (work pushed back, an oversubscribed node where
    /// every poll yields) may make few progress calls per second, so the
    /// call count alone could leave a death unseen for a long time.
    pub(crate) last_liveness: std::time::Instant,
    pub(crate) max_parked: u32,
    /// Set when a shared queue of ours was found corrupted.
    pub(crate) broken: Option<&'static str>,
    /// Each local peer's health, and the failures not yet reported.
    pub(crate) failures: PeerFailures,
    pub(crate) name: String,
    /// Node-collective regions (`node/`).
    pub(crate) node: crate::node::Nodes,
}

impl ShmDevice {
    /// The job ranks this device reaches (this node's), sorted.
    pub fn local_ranks(&self) -> &[Rank] {
        &self.ranks
    }

    /// Whether rendezvous uses CMA (`caps.rdma_get`): requested, and the
    /// setup probe found the kernel allows it between every pair of local
    /// ranks.
    pub fn cma_enabled(&self) -> bool {
        self.caps.rdma_get
    }

    /// The segment's file name (already unlinked: for logs).
    pub fn segment_name(&self) -> &str {
        &self.name
    }

    /// Whether `addr` lies in the shared segment: an ARecv buffer whose
    /// [`Buf::id`] does was handed over in its cell, without a copy.
    pub fn segment_contains(&self, addr: usize) -> bool {
        self.seg.address_range().contains(&addr)
    }

    /// Free cells in this rank's private pool right now (for tests and
    /// diagnostics; cells returned by receivers are counted once `send`
    /// refills the pool).
    pub fn free_cells(&self) -> usize {
        self.pool.len()
    }

    fn local_index(&self, peer: Rank) -> Result<u32, Error> {
        let Some(&l) = usize::try_from(peer)
            .ok()
            .and_then(|p| self.local_of.get(p))
        else {
            return Err(UsageError::InvalidRank {
                rank: peer,
                size: self.local_of.len() as u32,
            }
            .into());
        };
        if l == NOT_LOCAL {
            return Err(DeviceError::Unsupported("shm: peer is not on this node").into());
        }
        Ok(l)
    }

    /// The error a call towards local peer `p` fails with, if any.
    fn peer_error(&self, p: u32) -> Option<Error> {
        if let Some(what) = self.broken {
            return Some(
                PeerError::Protocol {
                    rank: self.ranks[p as usize],
                    what,
                }
                .into(),
            );
        }
        self.failures.error(p as usize)
    }

    /// A free cell of ours, or `None` (back-pressure).
    #[inline]
    fn take_cell(&mut self) -> Option<OwnedCell> {
        if let Some(c) = self.pool.pop() {
            return Some(c);
        }
        self.refill();
        self.pool.pop()
    }

    /// Moves every cell receivers gave back into the private pool.
    #[cold]
    pub(crate) fn refill(&mut self) {
        loop {
            match self.seg.pop_free(&mut self.consumer) {
                Ok(Some(c)) => self.pool.push(c),
                Ok(None) => break,
                Err(c) => {
                    self.corrupted(c, "shm free queue corrupted");
                    break;
                }
            }
        }
    }

    /// A shared queue of ours is corrupt: nothing more can be trusted, so
    /// every peer is cut off (reported on the next `progress`).
    #[cold]
    fn corrupted(&mut self, c: Corrupt, what: &'static str) {
        tracing::error!(
            rank = self.rank,
            node = c.node,
            what,
            "shm segment corrupted"
        );
        self.broken = Some(what);
        for p in 0..self.peers.len() {
            let rank = self.ranks[p];
            self.fail(p as u32, PeerError::Protocol { rank, what }.into());
        }
    }

    /// Wakes local peer `p`, which is asleep: one datagram on its socket,
    /// counted in its rank block after it was sent.
    #[cold]
    pub(crate) fn signal(&mut self, p: u32) {
        let Some(Some(to)) = self.wake.to.get(p as usize) else {
            return;
        };
        match os::signal(to) {
            Ok(true) => self.seg.count_signal(p),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, peer = self.ranks[p as usize], "could not wake a sleeping shm peer")
            }
        }
    }

    /// Marks local peer `p` failed (reported on the next drained progress).
    pub(crate) fn fail(&mut self, p: u32, error: Error) {
        self.failures.fail(p as usize, error);
    }

    /// Hands one arrived cell to the sink, after the fastbox packets its
    /// sender sent before it (or rejects it). Returns the packets delivered.
    #[inline]
    fn deliver<S: Sink>(&mut self, cell: OwnedCell, sink: &mut S) -> usize {
        let owner = self.seg.geometry().owner(cell.index());
        let rank = self.ranks[owner as usize];
        let fields = cell::decode(self.seg.body(&cell), owner)
            .map(|d| (d.header.len(), d.payload.len(), d.seq));
        match fields {
            Ok((header_len, payload_len, seq)) => {
                let (now, events) = self.fb_catch_up(owner, seq, sink);
                if !now {
                    recycle(&self.seg, self.me, &mut self.pool, cell);
                    return events;
                }
                let lane = &mut self.lanes[owner as usize];
                lane.rx_seq = lane.rx_seq.wrapping_add(1);
                let packet = ShmIncoming {
                    seg: &self.seg,
                    me: self.me,
                    pool: &mut self.pool,
                    cell: Some(cell),
                    header_len,
                    payload_len,
                    max_parked: self.max_parked,
                };
                sink.packet(rank, packet);
                events + 1
            }
            Err(e) => {
                recycle(&self.seg, self.me, &mut self.pool, cell);
                self.poison(owner, e.what());
                0
            }
        }
    }

    /// Looks for dead peers: pidfds that became readable (one
    /// `epoll_wait(0)`), or `kill(pid, 0)` where there is no pidfd.
    fn check_liveness(&mut self) {
        self.wake.ready.clear();
        if let Err(e) = self.wake.epoll.ready_now(&mut self.wake.ready) {
            tracing::warn!(error = %e, "epoll_wait failed in the liveness check");
        }
        for i in 0..self.wake.ready.len() {
            let tag = self.wake.ready[i];
            if tag != WAKE_TAG && tag != u64::from(self.me) {
                let rank = self.ranks.get(tag as usize).copied().unwrap_or(-1);
                self.fail(tag as u32, PeerError::Died { rank }.into());
            }
        }
        for p in 0..self.peers.len() {
            let peer = &self.peers[p];
            if p as u32 != self.me
                && peer.pidfd.is_none()
                && self.failures.is_alive(p)
                && os::pid_gone(peer.pid)
            {
                let rank = self.ranks[p];
                self.fail(p as u32, PeerError::Died { rank }.into());
            }
        }
    }

    /// Tells the sink about failures not yet reported, once each.
    fn report_failures<S: Sink>(&mut self, sink: &mut S) -> usize {
        let mut events = 0;
        while let Some((p, error)) = self.failures.take_unreported() {
            let rank = self.ranks[p];
            tracing::warn!(rank = self.rank, peer = rank, %error, "shm peer failed");
            if let Some(fd) = &self.peers[p].pidfd {
                // A dead peer's pidfd stays readable: stop watching it, or
                // every later sleep would return at once.
                let _ = self.wake.epoll.remove(fd);
            }
            self.rdma.peer_died(p as u32, rank);
            sink.peer_failed(rank, error);
            events += 1;
        }
        if events > 0 {
            // A peer killed between sending a wake-up byte and counting it
            // would leave a byte no count announces (and every sleep would
            // end at once): drain, and take the count as it is.
            os::drain(&self.wake.sock);
            self.wake.drained = self.seg.signals(&self.consumer);
        }
        events
    }
}

/// The device's wait fd (the same fd as [`Device::wait_fd`]), borrowed.
impl std::os::fd::AsFd for ShmDevice {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.wake.epoll.as_fd()
    }
}

impl Device for ShmDevice {
    fn caps(&self, _peer: Rank) -> &Caps {
        &self.caps
    }

    #[inline]
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        let dest = self.local_index(peer)?;
        if let Some(e) = self.peer_error(dest) {
            return Err(e);
        }
        // The engine's limits (the device contract's *Size limits*); a
        // cell that is too small all the same is refused by `cell::encode`.
        debug_assert!(header.len() <= MAX_HEADER, "header past MAX_HEADER");
        debug_assert!(
            payload.len() <= self.caps.max_payload,
            "payload past max_payload"
        );
        if header.len() + payload.len() <= self.fb_cap {
            if let Some(sleeps) = self.fb_send(dest, header, payload) {
                if sleeps {
                    self.signal(dest);
                }
                return Ok(Sent::Done);
            }
        }
        let Some(mut cell) = self.take_cell() else {
            return Ok(Sent::Busy);
        };
        let seq = self.lanes[dest as usize].tx_seq;
        if cell::encode(self.seg.body_mut(&mut cell), self.me, seq, header, payload).is_err() {
            self.pool.push(cell);
            return Err(Error::Internal("shm cell smaller than max_payload"));
        }
        let pushed = self.seg.push_recv(dest, cell);
        if pushed.is_ok() {
            let lane = &mut self.lanes[dest as usize];
            lane.tx_seq = lane.tx_seq.wrapping_add(1);
        }
        match pushed {
            Ok(false) => {}
            Ok(true) => self.signal(dest),
            Err(c) => {
                self.corrupted(c, "shm receive queue of a peer corrupted");
                return Err(self
                    .peer_error(dest)
                    .unwrap_or(Error::Internal("shm corrupted")));
            }
        }
        Ok(Sent::Done)
    }

    fn register(
        &mut self,
        _peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        Ok(self.rdma.register(&self.seg, buf, access))
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.rdma.deregister(&self.seg, mem)
    }

    /// By CMA: starts the copy, reported by a later `progress`.
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
        let p = self.local_index(peer)?;
        if let Some(e) = self.peer_error(p) {
            return Err(e);
        }
        let pid = self.peers[p as usize].pid;
        let who = (p, peer, pid);
        self.rdma
            .start(&self.seg, who, remote, local, len, token, dir);
        Ok(Sent::Done)
    }

    #[inline]
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        let mut events = 0;
        let mut drained = true;
        if self.broken.is_none() {
            drained = false;
            let mut budget = self.batch;
            if self.fb_slots != 0 {
                let (n, _) = self.fb_poll(sink, budget);
                events += n;
                budget -= n;
                if sink.satisfied() {
                    budget = 0;
                }
            }
            for _ in 0..budget {
                match self.seg.pop_recv(&mut self.consumer) {
                    Ok(Popped::Cell(cell)) => {
                        events += self.deliver(cell, sink);
                        if sink.satisfied() {
                            break;
                        }
                    }
                    Ok(Popped::Empty | Popped::Busy) => {
                        drained = true;
                        break;
                    }
                    Err(c) => {
                        self.corrupted(c, "shm receive queue corrupted");
                        drained = true;
                        break;
                    }
                }
            }
        }
        if self.rdma.has_work() {
            events += self.rdma.progress(sink);
        }
        self.calls = self.calls.wrapping_add(1);
        self.until_liveness = self.until_liveness.saturating_sub(1);
        let periodic = self.until_liveness == 0
            || (self.calls % LIVENESS_CLOCK_EVERY == 0
                && self.last_liveness.elapsed() >= LIVENESS_MAX_AGE);
        if self.check_now || periodic {
            self.check_now = false;
            self.until_liveness = self.liveness_interval;
            self.last_liveness = std::time::Instant::now();
            self.check_liveness();
        }
        // Deaths are reported once the queue is drained, so that what a
        // dead peer sent before dying is delivered first.
        if (drained || periodic) && self.failures.has_unreported() {
            events += self.report_failures(sink);
        }
        Ok(events)
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        if self.rdma.has_work() || self.failures.has_unreported() {
            return Ok(Armed::Pending);
        }
        if self.broken.is_none() {
            // A sleeper holds no slot: its senders keep their rings.
            self.fb_free_all();
            let (seg, lanes) = (&self.seg, &self.lanes[..]);
            let window = seg.geometry().cells_per_rank;
            let fb = self.fb_slots != 0;
            let node = &self.node;
            if !seg.arm(&mut self.consumer, || {
                (!fb || fastbox::quiet(seg, lanes, window)) && node.quiet()
            }) {
                return Ok(Armed::Pending);
            }
        }
        self.wake.armed = true;
        Ok(Armed::Sleep)
    }

    fn disarm(&mut self) {
        let slept = std::mem::take(&mut self.wake.armed);
        if slept {
            self.seg.disarm(&mut self.consumer);
            // The wake-up may have been a peer's death.
            self.check_now = true;
        }
        // Drain if someone signalled since the last drain, and always after
        // having been armed: a sender counts its signal only after its
        // `sendto`, so a sender preempted in between would otherwise leave a
        // readable socket that makes every later `epoll_wait` return at once
        // (a busy loop of spurious wake-ups). An arm/disarm pair that nobody
        // noticed costs one extra non-blocking `recv` only after a sleep.
        if slept || self.seg.signals(&self.consumer) != self.wake.drained {
            let n = os::drain(&self.wake.sock);
            self.wake.drained = self.wake.drained.wrapping_add(n);
        }
    }

    fn wait_fd(&self) -> Option<i32> {
        Some(self.wake.epoll.raw())
    }

    fn node(&mut self) -> Option<&mut dyn ferry_core::device::NodeCollectives> {
        Some(self)
    }
}
