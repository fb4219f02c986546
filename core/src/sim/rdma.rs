//! RDMA on the simulated network: registration, and `get`/`put` that execute
//! after a delay. The rules are documented on [`Network`] (*RDMA*).

use rustc_hash::FxHashMap;

use super::config::meet;
use super::network::Network;
use crate::buffer::Buf;
use crate::device::{Access, MemHandle, OpToken, RdmaDir, Sent, WcStatus};
use crate::envelope::Rank;
use crate::error::{DeviceError, Error, PeerError};
use crate::loopback::{rdma_copy, Endpoint, Region, RegionTable};
use crate::wire::RemoteKey;

#[derive(Debug)]
pub(super) struct RdmaOp {
    pub(super) initiator: Rank,
    pub(super) peer: Rank,
    pub(super) kind: RdmaDir,
    pub(super) local: u64,
    pub(super) remote: RemoteKey,
    pub(super) len: usize,
    pub(super) token: OpToken,
    pub(super) complete_at: u64,
}

impl RegionTable<(Rank, u64)> for FxHashMap<(Rank, u64), Region> {
    fn region(&self, key: (Rank, u64)) -> Option<&Region> {
        self.get(&key)
    }
    fn region_mut(&mut self, key: (Rank, u64)) -> Option<&mut Region> {
        self.get_mut(&key)
    }
}

impl Network {
    /// The bytes of `rank`'s registration `mem`, for a test to look at a
    /// put's target or a get's destination while the device owns it.
    pub fn registered_bytes(&self, rank: Rank, mem: MemHandle) -> Option<&[u8]> {
        self.regions.get(&(rank, mem.0)).map(|r| r.buf.as_slice())
    }

    #[allow(clippy::result_large_err)]
    pub(crate) fn register(
        &mut self,
        rank: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let i = self.expect_index(rank);
        if !self.nodes[i].alive {
            return Err((PeerError::Died { rank }.into(), buf));
        }
        let handle = self.nodes[i].next_handle;
        let Some(next) = handle.checked_add(1) else {
            let exhausted = DeviceError::Os {
                what: "sim register: handles exhausted",
                code: 12,
            };
            return Err((exhausted.into(), buf));
        };
        self.nodes[i].next_handle = next;
        // Never 0, so a default RemoteKey never names a region.
        let secret = self.rng.next_u64() | 1;
        self.regions.insert(
            (rank, u64::from(handle)),
            Region {
                buf,
                access,
                secret,
            },
        );
        let addr = (u64::from(rank as u32) << 32) | u64::from(handle);
        Ok((
            MemHandle(u64::from(handle)),
            RemoteKey { addr, key: secret },
        ))
    }

    pub(crate) fn deregister(&mut self, rank: Rank, mem: MemHandle) -> Option<Buf> {
        self.regions.remove(&(rank, mem.0)).map(|r| r.buf)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_rdma(
        &mut self,
        initiator: Rank,
        peer: Rank,
        kind: RdmaDir,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        let (i, p) = (self.expect_index(initiator), self.peer_index(peer)?);
        self.check_alive(i, p)?;
        let caps = meet(&self.nodes[i].caps, &self.nodes[p].caps);
        if !caps.rdma(kind) {
            return Err(DeviceError::Unsupported(kind.name()).into());
        }
        match kind {
            RdmaDir::Get => self.rdma_stats.gets += 1,
            RdmaDir::Put => self.rdma_stats.puts += 1,
        }
        let complete_at = self.now.saturating_add(self.delay());
        let op = RdmaOp {
            initiator,
            peer,
            kind,
            local: local.0,
            remote,
            len,
            token,
            complete_at,
        };
        self.rdma.push(op);
        // With a zero delay the op executes now, so the caller's very next
        // progress reports it.
        self.execute_due_rdma();
        self.wake_if_deliverable(i);
        Ok(Sent::Done)
    }

    pub(super) fn execute_due_rdma(&mut self) {
        let now = self.now;
        if !self.rdma.iter().any(|op| op.complete_at <= now) {
            return;
        }
        // Issue order among ops due at the same tick, so overlapping copies
        // land in the order they were started.
        let (due, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut self.rdma)
            .into_iter()
            .partition(|op| op.complete_at <= now);
        self.rdma = pending;
        for op in due {
            let result = self.execute(&op);
            match result {
                Ok(()) => self.rdma_stats.bytes += op.len as u64,
                Err(_) => self.rdma_stats.failed += 1,
            }
            self.nodes[op.initiator as usize]
                .completed
                .push_back((op.token, result));
        }
    }

    fn execute(&mut self, op: &RdmaOp) -> Result<(), Error> {
        // `addr` is `owner << 32 | handle`; a key from another rank's
        // registration must not reach this peer's memory.
        let owner = (op.remote.addr >> 32) as u32 as Rank;
        if owner != op.peer {
            return Err(DeviceError::Completion {
                what: "rdma: remote key belongs to another rank",
                status: WcStatus::RemAccessErr.code(),
            }
            .into());
        }
        let handle = op.remote.addr & 0xFFFF_FFFF;
        let local = |access| Endpoint {
            key: (op.initiator, op.local),
            secret: None,
            access,
        };
        let remote = |access| Endpoint {
            key: (op.peer, handle),
            secret: Some(op.remote.key),
            access,
        };
        match op.kind {
            RdmaDir::Get => rdma_copy(
                &mut self.regions,
                remote(Access::RemoteRead),
                local(Access::LocalWrite),
                op.len,
            ),
            RdmaDir::Put => rdma_copy(
                &mut self.regions,
                local(Access::LocalRead),
                remote(Access::RemoteWrite),
                op.len,
            ),
        }
    }
}
