//! [`SimDevice`]: one rank's view of a simulated [`Network`].

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::network::{Event, Network};
use crate::buffer::Buf;
use crate::device::{Access, Armed, Caps, Device, MemHandle, OpToken, RdmaDir, Sent, Sink};
use crate::envelope::Rank;
use crate::error::{Error, PeerError};
use crate::wire::RemoteKey;

/// The device of one rank on a simulated [`Network`].
///
/// - `caps(peer)` is [`Network::link_caps`]`(rank, peer)`, copied when the
///   device is created.
/// - `send` returns [`Sent::Busy`] when the link is at its capacity, and
///   [`PeerError::Died`] when either end is dead (so a killed rank's own
///   device refuses to send too).
/// - `get` and `put` never return `Busy`; see the network's module docs for
///   when they complete and how they fail.
/// - `progress` reports packets in delivery order, then RDMA completions,
///   then failed peers; a dead rank's device reports nothing.
/// - `wait_fd` is `None`: the harness watches [`Network::is_woken`] instead.
pub struct SimDevice {
    net: Rc<RefCell<Network>>,
    rank: Rank,
    caps: Vec<Caps>,
    own_caps: Caps,
    /// Reused between `progress` calls so that collecting allocates only
    /// when a burst is larger than any before it.
    events: Vec<Event>,
    /// This rank's node collectives (`node.rs`).
    pub(super) node: super::node::SimNode,
}

impl fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimDevice")
            .field("rank", &self.rank)
            .finish_non_exhaustive()
    }
}

impl SimDevice {
    /// The device of `rank` on `net`.
    ///
    /// # Panics
    /// If `rank` is not in the network.
    pub fn new(net: Rc<RefCell<Network>>, rank: Rank) -> SimDevice {
        let (caps, own_caps) = {
            let n = net.borrow();
            (n.caps_row(rank), n.own_caps(rank))
        };
        fn net_ranks_on_node(net: &Rc<RefCell<Network>>, rank: Rank) -> Vec<Rank> {
            let n = net.borrow();
            match n.config.ranks_per_node {
                Some(k) => {
                    let node = rank as usize / k;
                    (node * k..((node + 1) * k).min(n.config.ranks))
                        .map(|r| r as Rank)
                        .collect()
                }
                None => Vec::new(),
            }
        }
        let local = net_ranks_on_node(&net, rank);
        SimDevice {
            net,
            rank,
            caps,
            own_caps,
            events: Vec::new(),
            node: super::node::SimNode::new(&local),
        }
    }

    /// The rank this device belongs to.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// The network this device is attached to.
    pub fn network(&self) -> &Rc<RefCell<Network>> {
        &self.net
    }
}

impl Device for SimDevice {
    fn caps(&self, peer: Rank) -> &Caps {
        usize::try_from(peer)
            .ok()
            .and_then(|p| self.caps.get(p))
            .unwrap_or(&self.own_caps)
    }

    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        self.net.borrow_mut().send(self.rank, peer, header, payload)
    }

    fn register(
        &mut self,
        _peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        self.net.borrow_mut().register(self.rank, buf, access)
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.net.borrow_mut().deregister(self.rank, mem)
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
        let mut net = self.net.borrow_mut();
        net.start_rdma(self.rank, peer, dir, local, remote, len, token)
    }

    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        // Collect under the borrow, report after it: a test sink may look at
        // the network while it records.
        self.net.borrow_mut().collect(self.rank, &mut self.events);
        let count = self.events.len();
        for event in self.events.drain(..) {
            match event {
                Event::Packet(from, packet) => sink.packet(from, packet),
                Event::Rdma(token, result) => sink.rdma_done(token, result),
                Event::Failed(peer) => {
                    sink.peer_failed(peer, PeerError::Died { rank: peer }.into())
                }
            }
        }
        Ok(count)
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        Ok(self.net.borrow_mut().arm(self.rank))
    }

    fn disarm(&mut self) {
        self.net.borrow_mut().disarm(self.rank);
    }

    fn wait_fd(&self) -> Option<i32> {
        None
    }

    fn node(&mut self) -> Option<&mut dyn crate::device::NodeCollectives> {
        if self.node.is_on() {
            Some(self)
        } else {
            None
        }
    }
}
