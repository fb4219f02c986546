//! [`Peer`], one peer of the device, and [`PeerIndex`], which finds a
//! peer from a job rank or from one of its QPs.

use std::collections::HashMap;

use ferry_core::{DeviceError, Error, Rank, UsageError};

use crate::connect::Link;
use crate::credits::Credits;
use crate::ffi::Qp;

/// One peer of the device: connected on first use (`connect.rs`).
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) rank: Rank,
    /// The QP this rank sends on (`None` until the peer is first used).
    pub(crate) qp: Option<Qp>,
    /// For this rank itself: the receiving end of the loopback pair (owned
    /// here so that it lives exactly as long as the sending end).
    pub(crate) loop_rx: Option<Qp>,
    /// Connected both ways: sends may go (the one test on the fast path).
    pub(crate) up: bool,
    /// A keepalive probe is in flight.
    pub(crate) probing: bool,
    pub(crate) credits: Credits,
    /// Send-queue slots free on `qp` (unsignaled work requests hold theirs
    /// until a later signaled one completes: `signal.rs`).
    pub(crate) sq_free: u32,
    /// Unsignaled work requests posted since the last signaled one.
    pub(crate) unsig: u32,
    pub(crate) link: Link,
}

/// Not a peer of this device, in [`PeerIndex`]'s table.
const NOT_PEER: u32 = u32::MAX;

/// Job rank → peer index, and local QP number → peer index.
#[derive(Debug)]
pub(crate) struct PeerIndex {
    /// By job rank (`NOT_PEER`: not a peer).
    of_rank: Vec<u32>,
    /// By the number of a local QP (RC QPs only).
    of_qpn: HashMap<u32, u32>,
}

impl PeerIndex {
    /// For a job of `size` ranks whose peers are `peers`, in peer order.
    pub(crate) fn new(size: usize, peers: &[Rank]) -> PeerIndex {
        let mut of_rank = vec![NOT_PEER; size];
        for (i, &p) in peers.iter().enumerate() {
            of_rank[p as usize] = i as u32;
        }
        PeerIndex {
            of_rank,
            of_qpn: HashMap::new(),
        }
    }

    /// The peer index of `rank`.
    ///
    /// # Errors
    /// A rank outside the job, or one that is not a peer of this device.
    #[inline]
    pub(crate) fn of_rank(&self, rank: Rank) -> Result<usize, Error> {
        let size = self.of_rank.len() as u32;
        let i = usize::try_from(rank)
            .ok()
            .and_then(|p| self.of_rank.get(p).copied())
            .ok_or(UsageError::InvalidRank { rank, size })?;
        if i == NOT_PEER {
            return Err(
                DeviceError::Unsupported("verbs: rank is not a peer of this device").into(),
            );
        }
        Ok(i as usize)
    }

    /// The table by job rank, `u32::MAX` for a rank that is not a peer
    /// (what the UD endpoint checks a datagram's sender against).
    pub(crate) fn by_rank(&self) -> &[u32] {
        &self.of_rank
    }

    /// The peer whose QP has number `qpn`.
    #[inline]
    pub(crate) fn of_qpn(&self, qpn: u32) -> Option<usize> {
        self.of_qpn.get(&qpn).map(|&i| i as usize)
    }

    /// Local QP `qpn` belongs to peer `i`.
    pub(crate) fn bind_qpn(&mut self, qpn: u32, i: usize) {
        self.of_qpn.insert(qpn, i as u32);
    }
}
