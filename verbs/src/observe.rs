//! The observer ring: how a rank learns that a peer it never talked to
//! died.
//!
//! Keepalive probes (`liveness.rs`) only run on connections, and
//! connections are lazy (`qp.rs`): a rank blocked on a receive from a peer
//! it never exchanged a packet with would not notice that peer's death. So,
//! while keepalives are on, each rank also **observes its successor**: the
//! next live peer after it in rank order (cyclically), to which it keeps a
//! connection (made at its first `progress`, with no deadline: a peer that
//! does not progress for a while is not failed for it) and so a probe.
//! When a connection of this rank fails as a dead peer's does (retries
//! exhausted, `PeerError::Died`), it sends a **down** notice
//! (`ferry_verbs_wire::connect::Kind::Down`) over UD to every other live
//! peer, twice (UD may drop one), and moves on to observe the next live
//! peer. A rank that receives a notice from a peer (validated like every
//! datagram: the sender's published UD QPN and nonce, this instance's
//! nonce) fails the named rank with `PeerError::Died`, reported once
//! through the sink like any failure; it does not forward the notice.
//! A death that another device of this rank saw (shared memory, for a rank
//! of this node, which no verbs peer may observe: with two ranks per node
//! the ring's successors are all first ranks of their nodes) is announced
//! the same way (`Device::peer_died_elsewhere`).
//!
//! Cost: one connection (two with the predecessor's) and one probe per
//! interval per rank, whatever the job size; `2 × (peers − 1)` datagrams
//! per death. Handshake timeouts and asynchronous events are local and are
//! not announced. The ring is over the device's peer list: with shm inside
//! a node and verbs across (`FERRY_DEVICE=auto`), it covers the off-node
//! ranks each rank reaches through verbs.

use std::collections::VecDeque;

use ferry_core::{PeerError, Rank};
use ferry_verbs_wire::connect::{ConnectMsg, Kind};

use crate::connect::Link;
use crate::device::VerbsDevice;

/// Copies of each down notice.
const COPIES: usize = 2;

/// The observer ring's state: whether it runs, whether it needs
/// (re)connecting, and the down notices still to send.
#[derive(Debug)]
pub(crate) struct Observer {
    /// Keepalives are on (`FERRY_VERBS_KEEPALIVE_MS` > 0): the ring runs.
    enabled: bool,
    /// The ring needs (re)connecting.
    rewatch: bool,
    /// Down notices to send: (peer index, the rank that died).
    notices: VecDeque<(u32, Rank)>,
}

impl Observer {
    /// `enabled`: keepalives are on; `watch`: connect the ring at the
    /// first `progress` (there is a remote peer to watch).
    pub(crate) fn new(enabled: bool, watch: bool) -> Observer {
        Observer {
            enabled,
            rewatch: enabled && watch,
            notices: VecDeque::new(),
        }
    }

    /// Whether the ring needs (re)connecting.
    #[inline]
    pub(crate) fn rewatch_due(&self) -> bool {
        self.rewatch
    }

    /// A peer failed: the ring may have lost this rank's successor.
    pub(crate) fn rewatch_after_failure(&mut self) {
        self.rewatch = self.enabled;
    }

    /// Whether down notices wait to be sent.
    #[inline]
    pub(crate) fn notices_due(&self) -> bool {
        !self.notices.is_empty()
    }
}

impl VerbsDevice {
    /// Whether the observer ring runs (keepalives on, a remote peer).
    pub(crate) fn observing(&self) -> bool {
        self.observer.enabled
    }

    /// The peer this rank observes: the next live remote peer after it in
    /// rank order, cyclically.
    fn successor(&self) -> Option<usize> {
        let n = self.peers.len();
        let start = self.peers.partition_point(|p| p.rank <= self.rank);
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.peers[i].rank != self.rank && self.failures.is_alive(i))
    }

    /// Connects to the successor if it is not connected (cold: at the first
    /// `progress`, and after a failure).
    #[cold]
    pub(crate) fn watch_ring(&mut self) {
        self.observer.rewatch = false;
        if let Some(i) = self.successor() {
            if self.peers[i].link == Link::Idle {
                let _ = self.begin_connect(i, false);
            }
        }
    }

    /// Peer `i` died (its connection's retries ran out): tells every other
    /// live remote peer.
    #[cold]
    pub(crate) fn announce(&mut self, i: usize) {
        let dead = self.peers[i].rank;
        self.announce_rank(dead);
    }

    /// `dead` died: tells every other live remote peer. `dead` need not be
    /// a peer of this device: another device of this rank (shared memory,
    /// for a rank of this node) may have seen it die, and the ranks on
    /// other nodes that wait for it without a connection to it (nobody's
    /// successor over verbs) hear of it only this way.
    #[cold]
    pub(crate) fn announce_rank(&mut self, dead: Rank) {
        if !self.observing() {
            return;
        }
        for _ in 0..COPIES {
            for (j, p) in self.peers.iter().enumerate() {
                if p.rank != dead && p.rank != self.rank && self.failures.is_alive(j) {
                    self.observer.notices.push_back((j as u32, dead));
                }
            }
        }
        self.flush_notices();
    }

    /// Sends queued down notices while the UD endpoint has send slots.
    pub(crate) fn flush_notices(&mut self) {
        while let Some(&(j, dead)) = self.observer.notices.front() {
            let j = j as usize;
            let Some(addr) = self.ud.addr(j) else {
                self.observer.notices.pop_front();
                continue;
            };
            let msg = ConnectMsg {
                kind: Kind::Down { rank: dead },
                from: self.rank,
                to: self.peers[j].rank,
                from_nonce: self.ud.me().nonce,
                to_nonce: addr.nonce,
                qpn: 0,
                psn: 0,
            };
            match self.ud.send(&self.pd, &self.sel, j, &msg) {
                Ok(true) => {}
                // No send slot: the rest goes at a later `progress`.
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %e, "verbs: down notice not sent"),
            }
            self.observer.notices.pop_front();
        }
    }

    /// A peer says `rank` died.
    pub(crate) fn on_down(&mut self, rank: Rank) {
        if rank == self.rank {
            return;
        }
        let Ok(i) = self.peer_index(rank) else {
            return;
        };
        if self.failures.is_alive(i) {
            tracing::info!(
                rank = self.rank,
                dead = rank,
                "verbs: a peer reported a death"
            );
            self.fail(i, PeerError::Died { rank }.into());
        }
    }
}
