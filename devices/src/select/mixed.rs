//! [`Mixed`]: one device made of two, routing each peer to one of them.
//!
//! A job that spans nodes reaches the ranks on this node through shared
//! memory and the others through the network device (ofi or verbs), in one
//! engine, as MPICH CH4 does with its shm module and netmod. The route of
//! each peer is fixed at setup.
//!
//! Registrations name their device in the top bit of the handle, so
//! `deregister`, `get` and `put` find the device that owns a buffer without
//! a lookup. Both devices are progressed on every call, the node device
//! first (its latency is the lower one, so it is the one not to delay).

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, RdmaDir, Sent, Sink};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, Error, Rank};

/// The bit of a [`MemHandle`] that says "the network device's".
const NET_BIT: u64 = 1 << 63;

/// Which of the two devices reaches a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Node,
    Net,
}

/// Two devices behind one [`Device`]: `node` for the ranks on this node,
/// `net` for the others.
#[derive(Debug)]
pub struct Mixed<L, N> {
    node: L,
    net: N,
    /// Indexed by global rank.
    routes: Vec<Route>,
}

impl<L: Device, N: Device> Mixed<L, N> {
    /// Routes the ranks with `on_node[rank] == true` to `node`, the others
    /// to `net`.
    pub fn new(node: L, net: N, on_node: &[bool]) -> Self {
        let routes = on_node
            .iter()
            .map(|&local| if local { Route::Node } else { Route::Net })
            .collect();
        Mixed { node, net, routes }
    }

    fn route(&self, peer: Rank) -> Result<Route, Error> {
        usize::try_from(peer)
            .ok()
            .and_then(|i| self.routes.get(i).copied())
            .ok_or(Error::Internal(
                "a device call named a rank outside the job",
            ))
    }

    /// The node device's wait fd and the network device's, when both have
    /// one: a sleeper must watch both.
    pub fn wait_fds(&self) -> Option<(i32, i32)> {
        Some((self.node.wait_fd()?, self.net.wait_fd()?))
    }

    /// The node device.
    pub fn node_device(&self) -> &L {
        &self.node
    }

    /// True if `peer` is reached through the node device, false if through
    /// the network device; `None` for a rank outside the job.
    pub fn is_on_node(&self, peer: Rank) -> Option<bool> {
        self.route(peer).ok().map(|r| r == Route::Node)
    }

    /// How many peers each device reaches: (node, net).
    pub fn peer_counts(&self) -> (usize, usize) {
        let node = self.routes.iter().filter(|r| **r == Route::Node).count();
        (node, self.routes.len() - node)
    }
}

/// Tags a network registration's handle (the devices' own handles never
/// use the top bit: both count registrations from zero).
fn tag_net(mem: MemHandle) -> Result<MemHandle, Error> {
    if mem.0 & NET_BIT != 0 {
        return Err(Error::Internal(
            "network device handle uses the routing bit",
        ));
    }
    Ok(MemHandle(mem.0 | NET_BIT))
}

fn split(mem: MemHandle) -> (Route, MemHandle) {
    if mem.0 & NET_BIT != 0 {
        (Route::Net, MemHandle(mem.0 & !NET_BIT))
    } else {
        (Route::Node, mem)
    }
}

impl<L: Device, N: Device> Device for Mixed<L, N> {
    fn caps(&self, peer: Rank) -> &Caps {
        match self.route(peer) {
            Ok(Route::Net) => self.net.caps(peer),
            // An out-of-range peer never gets here (the engine checks ranks
            // first); any answer is as good as another.
            _ => self.node.caps(peer),
        }
    }

    #[inline]
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        match self.route(peer)? {
            Route::Node => self.node.send(peer, header, payload),
            Route::Net => self.net.send(peer, header, payload),
        }
    }

    fn register(
        &mut self,
        peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        match self.route(peer) {
            Err(e) => Err((e, buf)),
            Ok(Route::Node) => {
                let (mem, key) = self.node.register(peer, buf, access)?;
                if mem.0 & NET_BIT != 0 {
                    let buf = self.node.deregister(mem).unwrap_or_default();
                    return Err((
                        Error::Internal("node device handle uses the routing bit"),
                        buf,
                    ));
                }
                Ok((mem, key))
            }
            Ok(Route::Net) => {
                let (mem, key) = self.net.register(peer, buf, access)?;
                match tag_net(mem) {
                    Ok(tagged) => Ok((tagged, key)),
                    Err(e) => Err((e, self.net.deregister(mem).unwrap_or_default())),
                }
            }
        }
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        match split(mem) {
            (Route::Node, mem) => self.node.deregister(mem),
            (Route::Net, mem) => self.net.deregister(mem),
        }
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
        match (self.route(peer)?, split(local)) {
            (Route::Node, (Route::Node, mem)) => self.node.rdma(dir, peer, mem, remote, len, token),
            (Route::Net, (Route::Net, mem)) => self.net.rdma(dir, peer, mem, remote, len, token),
            _ => Err(Error::Internal(match dir {
                RdmaDir::Get => "get with a registration of the other device",
                RdmaDir::Put => "put with a registration of the other device",
            })),
        }
    }

    #[inline]
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        let mut watch = DeathWatch {
            sink,
            died: Vec::new(),
        };
        let node = self.node.progress(&mut watch)?;
        // A death on this node is news to the ranks on other nodes that
        // wait for it without a connection to it (see `peer_died_elsewhere`).
        for rank in std::mem::take(&mut watch.died) {
            self.net.peer_died_elsewhere(rank);
        }
        Ok(node + self.net.progress(sink)?)
    }

    fn batch_begin(&mut self) {
        self.node.batch_begin();
        self.net.batch_begin();
    }

    fn batch_end(&mut self) -> Result<(), Error> {
        let node = self.node.batch_end();
        self.net.batch_end()?;
        node
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        // After `Pending` the engine disarms both; a device accepts a
        // `disarm` that follows a failed or skipped `arm`.
        if self.node.arm()? == Armed::Pending {
            return Ok(Armed::Pending);
        }
        self.net.arm()
    }

    fn disarm(&mut self) {
        self.node.disarm();
        self.net.disarm();
    }

    #[inline]
    fn driving(&self) -> bool {
        self.node.driving() || self.net.driving()
    }

    /// A single fd only when one device has none (then the job must poll
    /// anyway: see [`Mixed::wait_fds`], which the waiter uses).
    fn wait_fd(&self) -> Option<i32> {
        None
    }

    /// The node device's: collectives among this node's ranks go through
    /// its shared memory.
    fn node(&mut self) -> Option<&mut dyn ferry_core::device::NodeCollectives> {
        self.node.node()
    }
}

/// Passes everything to the engine's sink and keeps the ranks the node
/// device reported dead (the list allocates only when one dies).
struct DeathWatch<'a, S> {
    sink: &'a mut S,
    died: Vec<Rank>,
}

impl<S: Sink> Sink for DeathWatch<'_, S> {
    #[inline]
    fn packet<I: ferry_core::device::Incoming>(&mut self, from: Rank, packet: I) {
        self.sink.packet(from, packet);
    }

    #[inline]
    fn rdma_done(&mut self, token: OpToken, result: Result<(), Error>) {
        self.sink.rdma_done(token, result);
    }

    #[cold]
    fn peer_failed(&mut self, peer: Rank, error: Error) {
        if matches!(error, Error::Peer(ferry_core::PeerError::Died { .. })) {
            self.died.push(peer);
        }
        self.sink.peer_failed(peer, error);
    }

    #[inline]
    fn satisfied(&self) -> bool {
        self.sink.satisfied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::loopback::Loopback;

    #[test]
    fn registrations_carry_their_device_in_the_handle() {
        // Rank 0 of a 2-rank job: itself over `node`, rank 1 over `net`
        // (a loopback stands in for each; only the routing is under test).
        let mut dev = Mixed::new(Loopback::new(0), Loopback::new(0), &[true, false]);
        let (node_mem, _) = dev
            .register(0, Buf::from(&b"node"[..]), Access::RemoteRead)
            .unwrap();
        let (net_mem, _) = dev
            .register(1, Buf::from(&b"net!"[..]), Access::RemoteRead)
            .unwrap();
        assert_eq!(node_mem.0 & NET_BIT, 0);
        assert_ne!(net_mem.0 & NET_BIT, 0);
        assert_eq!(&dev.deregister(net_mem).unwrap()[..], b"net!");
        assert_eq!(&dev.deregister(node_mem).unwrap()[..], b"node");
        assert!(dev.deregister(net_mem).is_none(), "handle is spent");
        assert_eq!(dev.peer_counts(), (1, 1));
    }

    #[test]
    fn a_registration_cannot_be_used_with_the_other_device() {
        let mut dev = Mixed::new(Loopback::new(0), Loopback::new(0), &[true, false]);
        let (node_mem, key) = dev
            .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
            .unwrap();
        let err = dev.get(1, key, node_mem, 4, OpToken(7)).unwrap_err();
        assert!(matches!(err, Error::Internal(_)), "{err:?}");
        let err = dev.send(5, b"h", b"").unwrap_err();
        assert!(matches!(err, Error::Internal(_)), "{err:?}");
    }
}
