//! RDMA READ / WRITE operations (`get` / `put`), split into work requests of
//! at most the port's `max_msg_sz` (8 MiB on Soft-RoCE, 1–2 GiB on
//! ConnectX), posted as send-queue slots allow.
//!
//! An operation is accepted (`Sent::Done`) once its first chunk is posted;
//! the rest are posted by later `progress` calls as completions free slots,
//! so an operation of any size never needs more slots than the queue has.
//! Chunks of one operation complete in order (one RC send queue), and the
//! engine hears of the operation once, when the last chunk completed (or
//! when a chunk failed and nothing of it is still in flight).

use std::collections::VecDeque;

use ferry_core::device::OpToken;
use ferry_core::{DeviceError, Error};

use ferry_core::device::{PeerFailures, RdmaDir};

use crate::ffi::{SendOp, Sge};
use crate::peers::Peer;

/// Work-request id tag of RDMA chunks (top byte); low 32 bits: op index.
pub(crate) const RDMA_TAG: u64 = 4 << 56;

/// One `get` or `put`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RdmaOp {
    pub(crate) token: OpToken,
    pub(crate) dir: RdmaDir,
    pub(crate) peer: usize,
    /// Local start (registered with `lkey`).
    pub(crate) local: u64,
    pub(crate) lkey: u32,
    /// Remote start.
    pub(crate) remote: u64,
    pub(crate) rkey: u32,
    pub(crate) len: usize,
    /// Bytes posted so far.
    pub(crate) posted: usize,
    /// Chunks posted and not yet completed.
    pub(crate) in_flight: u32,
    /// The first failure (a completion status, or the peer's error).
    pub(crate) error: Option<Error>,
}

impl RdmaOp {
    /// Whether the engine can be told (nothing in flight, nothing more to post).
    fn finished(&self) -> bool {
        self.in_flight == 0 && (self.posted == self.len || self.error.is_some())
    }

    fn result(&self) -> Result<(), Error> {
        self.error.map_or(Ok(()), Err)
    }
}

/// The operations in progress.
#[derive(Debug, Default)]
pub(crate) struct Ops {
    ops: Vec<Option<RdmaOp>>,
    free: Vec<u32>,
    /// Operations with chunks still to post.
    unposted: Vec<u32>,
    /// Zero-length transfers, completed at the next `progress`.
    ready: VecDeque<OpToken>,
}

impl Ops {
    /// Starts `op` (nothing posted yet): posts what the send queue allows.
    /// `Ok(false)` = nothing could be posted (Busy; the op is dropped).
    pub(crate) fn start(
        &mut self,
        op: RdmaOp,
        peers: &mut [Peer],
        failures: &PeerFailures,
        max_msg: usize,
    ) -> Result<bool, Error> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.ops.push(None);
                (self.ops.len() - 1) as u32
            }
        };
        let mut op = op;
        let (peer, failed) = (&mut peers[op.peer], failures.error(op.peer));
        if let Err(e) = post(index, &mut op, peer, failed, max_msg) {
            if op.in_flight == 0 {
                self.free.push(index);
                return Err(e);
            }
            op.error.get_or_insert(e);
        }
        if op.in_flight == 0 {
            self.free.push(index);
            return Ok(false);
        }
        if op.posted < op.len && op.error.is_none() {
            self.unposted.push(index);
        }
        self.ops[index as usize] = Some(op);
        Ok(true)
    }

    /// A chunk of op `index` completed; returns the op's token and result
    /// when it is finished.
    pub(crate) fn chunk_done(
        &mut self,
        index: u32,
        status: Option<i32>,
    ) -> Option<(OpToken, Result<(), Error>)> {
        let op = self.ops.get_mut(index as usize)?.as_mut()?;
        op.in_flight = op.in_flight.saturating_sub(1);
        if let Some(status) = status {
            op.error.get_or_insert(
                DeviceError::Completion {
                    what: if op.dir == RdmaDir::Put {
                        "verbs RDMA write"
                    } else {
                        "verbs RDMA read"
                    },
                    status,
                }
                .into(),
            );
        }
        self.take_if_finished(index)
    }

    fn take_if_finished(&mut self, index: u32) -> Option<(OpToken, Result<(), Error>)> {
        let op = self.ops.get(index as usize)?.as_ref()?;
        if !op.finished() {
            return None;
        }
        let done = (op.token, op.result());
        self.ops[index as usize] = None;
        self.free.push(index);
        self.unposted.retain(|&i| i != index);
        Some(done)
    }

    /// Posts more chunks of unfinished operations; calls `done` for those
    /// that can no longer proceed (their peer failed) and have nothing in
    /// flight.
    pub(crate) fn resume(
        &mut self,
        peers: &mut [Peer],
        failures: &PeerFailures,
        max_msg: usize,
        mut done: impl FnMut(OpToken, Result<(), Error>),
    ) {
        let mut i = 0;
        while i < self.unposted.len() {
            let index = self.unposted[i];
            let Some(op) = self.ops.get_mut(index as usize).and_then(Option::as_mut) else {
                self.unposted.swap_remove(i);
                continue;
            };
            let (peer, failed) = (&mut peers[op.peer], failures.error(op.peer));
            if let Err(e) = post(index, op, peer, failed, max_msg) {
                op.error.get_or_insert(e);
            }
            if op.posted == op.len || op.error.is_some() {
                self.unposted.swap_remove(i);
                if let Some((t, r)) = self.take_if_finished(index) {
                    done(t, r);
                }
            } else {
                i += 1;
            }
        }
    }

    pub(crate) fn has_unposted(&self) -> bool {
        !self.unposted.is_empty()
    }

    /// A transfer with nothing to move: complete at the next `progress`.
    pub(crate) fn complete_now(&mut self, token: OpToken) {
        self.ready.push_back(token);
    }

    /// The next transfer completed without the hardware.
    #[inline]
    pub(crate) fn pop_ready(&mut self) -> Option<OpToken> {
        self.ready.pop_front()
    }

    /// Whether a transfer completed without the hardware waits.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }
}

/// Posts chunks of `op` while its peer has send-queue slots (none if the
/// peer `failed`).
fn post(
    index: u32,
    op: &mut RdmaOp,
    peer: &mut Peer,
    failed: Option<Error>,
    max_msg: usize,
) -> Result<(), Error> {
    if let Some(error) = failed {
        return Err(error);
    }
    let max = max_msg.clamp(1, u32::MAX as usize);
    let Some(qp) = peer.qp.as_mut() else {
        return Err(Error::Internal("verbs: RDMA towards an unconnected peer"));
    };
    while op.posted < op.len && peer.sq_free > 0 {
        let chunk = (op.len - op.posted).min(max);
        let (remote, local) = (op.remote + op.posted as u64, op.local + op.posted as u64);
        let wr = if op.dir == RdmaDir::Put {
            SendOp::Write {
                addr: remote,
                rkey: op.rkey,
            }
        } else {
            SendOp::Read {
                addr: remote,
                rkey: op.rkey,
            }
        };
        let sge = Sge {
            addr: local,
            len: chunk as u32,
            lkey: op.lkey,
        };
        // The SGE lies in a live registration (checked against its length
        // by `get`/`put`), owned with its `Buf` by the registry until the
        // engine deregisters it, which it does only after `rdma_done`; the
        // access flags match the operation (LocalWrite for a read's target,
        // LocalRead for a write's source).
        let covers = crate::signal::covers(&mut peer.unsig);
        if let Err(e) = qp.post_registered(RDMA_TAG | covers | u64::from(index), wr, sge) {
            peer.unsig = (covers >> 32) as u32;
            return Err(e.into());
        }
        peer.sq_free -= 1;
        op.in_flight += 1;
        op.posted += chunk;
    }
    Ok(())
}
