//! The simulated network: N ranks joined by in-memory links, with discrete
//! time, random delays, back-pressure and failure injection. The rules are
//! documented on [`Network`]; RDMA lives in `rdma.rs`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::config::{meet, LinkStats, NetConfig, RdmaStats};
use super::device::SimDevice;
use super::rdma::RdmaOp;
use super::rng::SimRng;
use crate::device::{Armed, Caps, Incoming, OpToken, Sent};
use crate::envelope::Rank;
use crate::error::{Error, PeerError, UsageError};
use crate::loopback::{InlinePacket, Region};

/// An event collected for a device's `progress`.
#[derive(Debug)]
pub(crate) enum Event {
    Packet(Rank, InlinePacket),
    Rdma(OpToken, Result<(), Error>),
    Failed(Rank),
}

#[derive(Debug)]
struct InFlight {
    packet: InlinePacket,
    deliver_at: u64,
    /// Network-wide send order: breaks ties between links.
    seq: u64,
}

#[derive(Debug, Default)]
struct Link {
    queue: VecDeque<InFlight>,
    last_deliver_at: u64,
    corrupt_next: bool,
    stats: LinkStats,
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) caps: Caps,
    pub(super) alive: bool,
    pub(super) armed: bool,
    pub(super) woken: bool,
    pub(super) failures: VecDeque<Rank>,
    pub(super) completed: VecDeque<(OpToken, Result<(), Error>)>,
    pub(super) delivered_ids: Vec<usize>,
    pub(super) next_handle: u32,
}

/// The shared state of a simulated network. Devices hold it as
/// `Rc<RefCell<Network>>`; a harness borrows it between device calls to
/// advance time, inject failures and inspect counters.
///
/// # Time and order
/// Time is a tick counter that only [`Network::advance`] (or
/// [`Network::advance_by`]) moves. A packet sent at tick `t` on the link
/// `a -> b` is delivered at `max(t + delay, deliver_at of the previous packet
/// on a -> b)`, with `delay` drawn from `min_delay..=max_delay`. Packets on
/// one link therefore stay in send order (the device contract's per-peer
/// FIFO) while packets from different senders interleave at random. A
/// receiver's `progress` reports every packet whose time has come, ordered by
/// delivery tick and then by send order. A packet counts against
/// `link_capacity` until the receiver's `progress` has taken it.
///
/// # RDMA
/// A `get` or `put` executes `min_delay..=max_delay` ticks after it was
/// started: the copy happens then (so a `get` reads the source as it is at
/// that tick), and the outcome waits for the initiator's next `progress`. A
/// put's data is therefore in the target before `rdma_done` reports it, which
/// is the contract's visibility rule. Keys, access and bounds are checked
/// when the operation executes, as a NIC does; every such failure is
/// reported through `rdma_done` as a
/// [`DeviceError::Completion`](crate::DeviceError::Completion) whose status
/// mirrors `ibv_wc_status` (1 local length, 4 local protection, 9 remote
/// length, 10 remote access). Only an invalid or dead peer, a dead initiator
/// and missing caps are returned from `get`/`put` themselves. A
/// [`RemoteKey`](crate::wire::RemoteKey) carries `owner rank << 32 | handle`
/// in `addr` and a random secret in `key`; handles are never reused, so a
/// stale key names no region.
///
/// # Failure
/// [`Network::kill`] drops every packet on the dead rank's links, fails the
/// RDMA operations that target it at once (`rdma_done` with
/// [`PeerError::Died`]), discards those it started, and queues exactly one
/// `peer_failed(dead, Died)` for every survivor. Afterwards `send`, `get`
/// and `put` towards it, and from it, return `PeerError::Died`.
///
/// # Waiting
/// Each rank has an `armed` and a `woken` flag. `arm` sets `armed` unless an
/// event is already deliverable (then it returns `Pending`); any later change
/// that makes an event deliverable for an armed rank (a tick, a zero-delay
/// send, a kill) sets `woken`, as an fd would become readable; `disarm`
/// clears both. A harness that finds a rank armed, not woken and with a
/// deliverable event has found a lost wakeup; one that finds a rank asleep
/// and the network idle has found a deadlock.
pub struct Network {
    pub(super) config: NetConfig,
    pub(super) now: u64,
    pub(super) rng: SimRng,
    seq: u64,
    pub(super) nodes: Vec<Node>,
    /// `links[from * ranks + to]`.
    links: Vec<Link>,
    pub(super) regions: FxHashMap<(Rank, u64), Region>,
    pub(super) rdma: Vec<RdmaOp>,
    pub(super) rdma_stats: RdmaStats,
    /// Node-collective regions, by (id, leader).
    pub(super) node_regions: FxHashMap<(u64, Rank), super::node::SimRegion>,
    /// Node-collective activity since the last step (deposits and
    /// completions are no packets, but they are progress).
    pub(super) node_events: usize,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("now", &self.now)
            .field("ranks", &self.nodes.len())
            .field(
                "packets_in_flight",
                &self.links.iter().map(|l| l.queue.len()).sum::<usize>(),
            )
            .field("rdma_in_flight", &self.rdma.len())
            .finish_non_exhaustive()
    }
}

impl Network {
    /// A network built from `config`, at tick 0.
    ///
    /// # Panics
    /// If `config.min_delay > config.max_delay` or `config.ranks` does not
    /// fit a [`Rank`]: both are mistakes in the test itself.
    pub fn new(config: NetConfig) -> Rc<RefCell<Network>> {
        assert!(
            config.min_delay <= config.max_delay,
            "NetConfig: min_delay > max_delay"
        );
        assert!(
            Rank::try_from(config.ranks).is_ok(),
            "NetConfig: too many ranks"
        );
        let n = config.ranks;
        let node = |_| Node {
            caps: config.caps.clone(),
            alive: true,
            armed: false,
            woken: false,
            failures: VecDeque::new(),
            completed: VecDeque::new(),
            delivered_ids: Vec::new(),
            next_handle: 1,
        };
        Rc::new(RefCell::new(Network {
            rng: SimRng::new(config.seed),
            now: 0,
            seq: 0,
            nodes: (0..n).map(node).collect(),
            links: (0..n * n).map(|_| Link::default()).collect(),
            regions: FxHashMap::default(),
            rdma: Vec::new(),
            rdma_stats: RdmaStats::default(),
            node_regions: FxHashMap::default(),
            node_events: 0,
            config,
        }))
    }

    /// One device per rank, in rank order.
    pub fn devices(net: &Rc<RefCell<Network>>) -> Vec<SimDevice> {
        let ranks = net.borrow().ranks();
        (0..ranks)
            .map(|r| SimDevice::new(Rc::clone(net), r as Rank))
            .collect()
    }

    /// The configuration the network was built from.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.nodes.len()
    }

    /// The current tick.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Moves time on by one tick.
    pub fn advance(&mut self) {
        self.advance_by(1);
    }

    /// Moves time on by `ticks` ticks: the same as `ticks` calls to
    /// [`Network::advance`], since nothing happens between ticks.
    pub fn advance_by(&mut self, ticks: u64) {
        self.now = self.now.saturating_add(ticks);
        self.execute_due_rdma();
        self.refresh_wakeups();
    }

    /// The earliest tick at which something in flight becomes deliverable
    /// (possibly `now` or earlier), or `None` if nothing is in flight. A
    /// harness can `advance_by` straight to it.
    pub fn next_event_at(&self) -> Option<u64> {
        let packets = self
            .links
            .iter()
            .filter_map(|l| l.queue.front().map(|p| p.deliver_at));
        let rdma = self.rdma.iter().map(|op| op.complete_at);
        let queued = self
            .nodes
            .iter()
            .any(|n| !n.completed.is_empty() || !n.failures.is_empty())
            .then_some(self.now);
        packets.chain(rdma).chain(queued).min()
    }

    fn index(&self, rank: Rank) -> Option<usize> {
        usize::try_from(rank).ok().filter(|&i| i < self.nodes.len())
    }

    pub(super) fn peer_index(&self, peer: Rank) -> Result<usize, Error> {
        self.index(peer).ok_or_else(|| {
            UsageError::InvalidRank {
                rank: peer,
                size: self.nodes.len() as u32,
            }
            .into()
        })
    }

    pub(super) fn expect_index(&self, rank: Rank) -> usize {
        match self.index(rank) {
            Some(i) => i,
            None => panic!(
                "rank {rank} is not in this {}-rank network",
                self.nodes.len()
            ),
        }
    }

    fn link(&self, from: usize, to: usize) -> &Link {
        &self.links[from * self.nodes.len() + to]
    }

    fn link_mut(&mut self, from: usize, to: usize) -> &mut Link {
        let n = self.nodes.len();
        &mut self.links[from * n + to]
    }

    pub(super) fn delay(&mut self) -> u64 {
        self.rng
            .range_inclusive(self.config.min_delay, self.config.max_delay)
    }

    /// Gives `rank` its own caps. Devices copy their caps when they are
    /// created, so call this before [`Network::devices`] or
    /// [`SimDevice::new`].
    ///
    /// # Panics
    /// If `rank` is not in the network.
    pub fn set_caps(&mut self, rank: Rank, caps: Caps) {
        let i = self.expect_index(rank);
        self.nodes[i].caps = caps;
    }

    /// The caps `local` sees towards `remote`: the meet of both ranks' caps
    /// (smaller payload limit, RDMA only if both have it), so both ends agree
    /// on the protocol; the name is `local`'s and `wait_fd` is false.
    ///
    /// # Panics
    /// If either rank is not in the network.
    pub fn link_caps(&self, local: Rank, remote: Rank) -> Caps {
        let (l, r) = (self.expect_index(local), self.expect_index(remote));
        meet(&self.nodes[l].caps, &self.nodes[r].caps)
    }

    /// Kills `rank`; see *Failure* in the module docs. Killing a dead rank
    /// does nothing.
    ///
    /// # Panics
    /// If `rank` is not in the network.
    pub fn kill(&mut self, rank: Rank) {
        let dead = self.expect_index(rank);
        if !self.nodes[dead].alive {
            return;
        }
        let node = &mut self.nodes[dead];
        node.alive = false;
        node.armed = false;
        node.woken = false;
        node.failures.clear();
        node.completed.clear();
        for other in 0..self.nodes.len() {
            for (from, to) in [(dead, other), (other, dead)] {
                let link = self.link_mut(from, to);
                link.stats.dropped += link.queue.len() as u64;
                link.queue.clear();
            }
        }
        // Flush like a NIC whose peer vanished: ops towards the dead rank
        // fail now rather than at their completion tick.
        let ops = std::mem::take(&mut self.rdma);
        for op in ops {
            if op.initiator == rank {
                continue;
            } else if op.peer == rank {
                self.rdma_stats.failed += 1;
                let initiator = &mut self.nodes[op.initiator as usize];
                initiator
                    .completed
                    .push_back((op.token, Err(PeerError::Died { rank }.into())));
            } else {
                self.rdma.push(op);
            }
        }
        for node in self.nodes.iter_mut().filter(|n| n.alive) {
            node.failures.push_back(rank);
        }
        self.refresh_wakeups();
    }

    /// True unless `rank` was killed (false for a rank not in the network).
    pub fn is_alive(&self, rank: Rank) -> bool {
        self.index(rank).is_some_and(|i| self.nodes[i].alive)
    }

    /// Garbles the header of the next packet accepted on `from -> to`: every
    /// header byte is inverted, so the packet arrives intact in framing and
    /// payload but with a header the engine must reject.
    ///
    /// # Panics
    /// If either rank is not in the network.
    pub fn corrupt_next(&mut self, from: Rank, to: Rank) {
        let (f, t) = (self.expect_index(from), self.expect_index(to));
        self.link_mut(f, t).corrupt_next = true;
    }

    /// True while `rank` is armed (after `arm` returned `Sleep`, until
    /// `disarm`).
    pub fn is_armed(&self, rank: Rank) -> bool {
        self.index(rank).is_some_and(|i| self.nodes[i].armed)
    }

    /// True if an event became deliverable for `rank` while it was armed:
    /// the simulated wait fd is readable.
    pub fn is_woken(&self, rank: Rank) -> bool {
        self.index(rank).is_some_and(|i| self.nodes[i].woken)
    }

    /// True if `rank`'s next `progress` would report something.
    pub fn has_deliverable(&self, rank: Rank) -> bool {
        self.index(rank).is_some_and(|i| self.deliverable(i))
    }

    fn deliverable(&self, i: usize) -> bool {
        let node = &self.nodes[i];
        node.alive
            && (!node.completed.is_empty()
                || !node.failures.is_empty()
                || (0..self.nodes.len()).any(|from| {
                    self.link(from, i)
                        .queue
                        .front()
                        .is_some_and(|p| p.deliver_at <= self.now)
                }))
    }

    /// True if any packet, RDMA operation, completion or failure notice is
    /// waiting anywhere, delivered yet or not.
    pub fn has_in_flight(&self) -> bool {
        self.next_event_at().is_some()
    }

    /// True if nothing at all is in flight: every rank's `progress` would
    /// report nothing, now and after any number of ticks.
    pub fn is_idle(&self) -> bool {
        !self.has_in_flight()
    }

    /// Packets in flight on `from -> to` (0 for ranks not in the network).
    pub fn in_flight(&self, from: Rank, to: Rank) -> usize {
        match (self.index(from), self.index(to)) {
            (Some(f), Some(t)) => self.link(f, t).queue.len(),
            _ => 0,
        }
    }

    /// The [`Buf::id`](crate::Buf::id) of every non-empty payload delivered to `rank`, in
    /// delivery order, so a test can prove that a buffer the engine handed
    /// out is the one the device delivered (no copy in between). Empty
    /// payloads are left out: they own no memory to identify.
    pub fn delivered_payload_ids(&self, rank: Rank) -> &[usize] {
        self.index(rank)
            .map_or(&[], |i| &self.nodes[i].delivered_ids)
    }

    /// The counters of `from -> to` (zero for ranks not in the network).
    pub fn link_stats(&self, from: Rank, to: Rank) -> LinkStats {
        match (self.index(from), self.index(to)) {
            (Some(f), Some(t)) => self.link(f, t).stats,
            _ => LinkStats::default(),
        }
    }

    /// The network-wide RDMA counters.
    pub fn rdma_stats(&self) -> RdmaStats {
        self.rdma_stats
    }

    fn refresh_wakeups(&mut self) {
        for i in 0..self.nodes.len() {
            self.wake_if_deliverable(i);
        }
    }

    pub(super) fn wake_if_deliverable(&mut self, i: usize) {
        if self.nodes[i].armed && !self.nodes[i].woken && self.deliverable(i) {
            self.nodes[i].woken = true;
        }
    }

    pub(super) fn check_alive(&self, local: usize, peer: usize) -> Result<(), Error> {
        for i in [local, peer] {
            if !self.nodes[i].alive {
                return Err(PeerError::Died { rank: i as Rank }.into());
            }
        }
        Ok(())
    }

    pub(crate) fn send(
        &mut self,
        from: Rank,
        to: Rank,
        header: &[u8],
        payload: &[u8],
    ) -> Result<Sent, Error> {
        let (f, t) = (self.expect_index(from), self.peer_index(to)?);
        self.check_alive(f, t)?;
        let max = self.nodes[f]
            .caps
            .max_payload
            .min(self.nodes[t].caps.max_payload);
        if payload.len() > max {
            return Err(UsageError::MessageTooLarge {
                len: payload.len(),
                max,
            }
            .into());
        }
        if self
            .config
            .link_capacity
            .is_some_and(|cap| self.link(f, t).queue.len() >= cap)
        {
            self.link_mut(f, t).stats.busy += 1;
            return Ok(Sent::Busy);
        }
        let mut packet = InlinePacket::new(header, payload.to_vec())?;
        let delay = self.delay();
        let (now, seq) = (self.now, self.seq);
        self.seq += 1;
        let link = self.link_mut(f, t);
        if std::mem::take(&mut link.corrupt_next) {
            packet.header_mut().iter_mut().for_each(|b| *b = !*b);
            link.stats.corrupted += 1;
        }
        let deliver_at = now.saturating_add(delay).max(link.last_deliver_at);
        link.last_deliver_at = deliver_at;
        link.stats.packets_sent += 1;
        link.stats.bytes_sent += payload.len() as u64;
        link.queue.push_back(InFlight {
            packet,
            deliver_at,
            seq,
        });
        self.wake_if_deliverable(t);
        Ok(Sent::Done)
    }

    /// Moves everything deliverable to `rank` into `out`: packets in
    /// delivery order, then RDMA completions, then failure notices.
    pub(crate) fn collect(&mut self, rank: Rank, out: &mut Vec<Event>) {
        let r = self.expect_index(rank);
        if !self.nodes[r].alive {
            return;
        }
        loop {
            let mut best: Option<(u64, u64, usize)> = None;
            for from in 0..self.nodes.len() {
                if let Some(p) = self.link(from, r).queue.front() {
                    let key = (p.deliver_at, p.seq, from);
                    if p.deliver_at <= self.now && best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
            }
            let Some((_, _, from)) = best else { break };
            let link = self.link_mut(from, r);
            let Some(InFlight { packet, .. }) = link.queue.pop_front() else {
                break;
            };
            let bytes = packet.payload().len();
            link.stats.packets_delivered += 1;
            link.stats.bytes_delivered += bytes as u64;
            if bytes > 0 {
                self.nodes[r]
                    .delivered_ids
                    .push(packet.payload().as_ptr() as usize);
            }
            out.push(Event::Packet(from as Rank, packet));
        }
        let node = &mut self.nodes[r];
        out.extend(
            node.completed
                .drain(..)
                .map(|(token, result)| Event::Rdma(token, result)),
        );
        out.extend(node.failures.drain(..).map(Event::Failed));
    }

    pub(crate) fn arm(&mut self, rank: Rank) -> Armed {
        let r = self.expect_index(rank);
        if self.deliverable(r) {
            return Armed::Pending;
        }
        // A dead rank never gets another event, so it may sleep for good.
        self.nodes[r].armed = self.nodes[r].alive;
        Armed::Sleep
    }

    pub(crate) fn disarm(&mut self, rank: Rank) {
        let r = self.expect_index(rank);
        self.nodes[r].armed = false;
        self.nodes[r].woken = false;
    }

    /// The caps `rank` sees towards every rank, for a new device's snapshot.
    pub(crate) fn caps_row(&self, rank: Rank) -> Vec<Caps> {
        let r = self.expect_index(rank);
        self.nodes
            .iter()
            .map(|peer| meet(&self.nodes[r].caps, &peer.caps))
            .collect()
    }

    /// `rank`'s own caps (what it reports for a rank not in the network).
    pub(crate) fn own_caps(&self, rank: Rank) -> Caps {
        let r = self.expect_index(rank);
        meet(&self.nodes[r].caps, &self.nodes[r].caps)
    }
}
