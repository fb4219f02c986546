//! How a simulated network is built ([`NetConfig`]), what it counts, and the
//! rule that gives each pair of ranks one set of caps.

use crate::device::Caps;

/// How to build a [`Network`](super::Network).
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// The number of ranks (`0..ranks`).
    pub ranks: usize,
    /// The caps of every rank, until [`Network::set_caps`](super::Network::set_caps) changes one.
    pub caps: Caps,
    /// The smallest delay, in ticks, of a packet or an RDMA operation.
    pub min_delay: u64,
    /// The largest delay, in ticks.
    pub max_delay: u64,
    /// The most packets in flight (sent and not yet delivered) per link;
    /// `send` returns [`Sent::Busy`](crate::device::Sent::Busy) beyond it. `None` is unbounded.
    pub link_capacity: Option<usize>,
    /// The seed of every random choice; a run is reproducible from it.
    pub seed: u64,
    /// Ranks per simulated node, for the node collectives
    /// ([`SimDevice`](super::SimDevice) offers them only when set): ranks
    /// `k·i .. k·(i+1)` share node `i`.
    pub ranks_per_node: Option<usize>,
}

impl NetConfig {
    /// The default caps of a simulated rank: 16 KiB payloads, `get` and
    /// `put`, no fd.
    pub const DEFAULT_CAPS: Caps = Caps {
        name: "sim",
        max_payload: 16 * 1024,
        eager_preferred: 8192,
        rdma_get: true,
        rdma_put: true,
        wait_fd: false,
    };

    /// `ranks` ranks with [`NetConfig::DEFAULT_CAPS`], delays of 0 to 3
    /// ticks, unbounded links and seed 1.
    pub fn new(ranks: usize) -> NetConfig {
        NetConfig {
            ranks,
            caps: NetConfig::DEFAULT_CAPS,
            min_delay: 0,
            max_delay: 3,
            link_capacity: None,
            seed: 1,
            ranks_per_node: None,
        }
    }

    /// Groups the ranks into nodes of `k` for the node collectives.
    #[must_use]
    pub fn with_nodes(mut self, k: usize) -> NetConfig {
        self.ranks_per_node = Some(k.max(1));
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> NetConfig {
        self.seed = seed;
        self
    }

    /// Sets the delay range `min..=max`, in ticks.
    #[must_use]
    pub fn with_delay(mut self, min: u64, max: u64) -> NetConfig {
        self.min_delay = min;
        self.max_delay = max;
        self
    }

    /// Bounds every link at `packets` in flight.
    #[must_use]
    pub fn with_link_capacity(mut self, packets: usize) -> NetConfig {
        self.link_capacity = Some(packets);
        self
    }

    /// Sets the caps of every rank.
    #[must_use]
    pub fn with_caps(mut self, caps: Caps) -> NetConfig {
        self.caps = caps;
        self
    }
}

/// Counters of one link (`from -> to`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets accepted by `send`.
    pub packets_sent: u64,
    /// Packets handed to the receiver's sink.
    pub packets_delivered: u64,
    /// Payload bytes accepted by `send`.
    pub bytes_sent: u64,
    /// Payload bytes handed to the receiver's sink.
    pub bytes_delivered: u64,
    /// Sends refused with [`Sent::Busy`](crate::device::Sent::Busy).
    pub busy: u64,
    /// Packets whose header [`Network::corrupt_next`](super::Network::corrupt_next) garbled.
    pub corrupted: u64,
    /// Packets dropped because an end of the link died.
    pub dropped: u64,
}

/// Counters of RDMA operations, network-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdmaStats {
    /// `get`s accepted.
    pub gets: u64,
    /// `put`s accepted.
    pub puts: u64,
    /// Bytes copied by operations that succeeded.
    pub bytes: u64,
    /// Operations that completed with an error.
    pub failed: u64,
}

/// The caps of the link between `local` and `remote`: what both ends can do,
/// so that both ranks build the same protocol table for their pair. The name
/// is the local rank's; `wait_fd` is always false, since the simulation
/// raises a flag instead of an fd.
pub(super) fn meet(local: &Caps, remote: &Caps) -> Caps {
    Caps {
        name: local.name,
        max_payload: local.max_payload.min(remote.max_payload),
        eager_preferred: local.eager_preferred.min(remote.eager_preferred),
        rdma_get: local.rdma_get && remote.rdma_get,
        rdma_put: local.rdma_put && remote.rdma_put,
        wait_fd: false,
    }
}
