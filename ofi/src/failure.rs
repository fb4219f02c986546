//! Failure handling: CQ error entries, the error an operation gets, and
//! dead peers (from error completions or the liveness sockets), each
//! reported to the sink once, after what the peer sent before dying.

use ferry_core::device::Sink;
use ferry_core::{Error, PeerError, Rank};

use crate::cq::{is_dead, op_error, Op};
use crate::device::OfiDevice;
use crate::eager;
use crate::ffi::Fail;
use crate::liveness::Liveness;
use crate::sys;
use crate::transfers::InFlight;

/// `progress` checks the liveness sockets once per this many calls.
const LIVENESS_EVERY: u32 = 1024;

/// The liveness sockets (one idle TCP connection per pair of ranks, which
/// the kernel closes when a process dies) and when to look at them.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    liveness: Option<Liveness>,
    /// Connections the liveness setup refused (each one logged).
    refused: usize,
    /// The ranks whose connection closed, found by the last look.
    dead: Vec<Rank>,
    /// `progress` calls so far (wrapping).
    calls: u32,
    /// Look at the next `progress` (a wake-up may have been a death).
    check_now: bool,
}

impl Watch {
    /// Watches through `liveness`; setup refused `refused` connections.
    pub(crate) fn set(&mut self, liveness: Liveness, refused: usize) {
        self.liveness = Some(liveness);
        self.refused = refused;
    }

    /// Counts a `progress` call: whether it should look at the sockets.
    #[inline]
    pub(crate) fn due(&mut self) -> bool {
        self.calls = self.calls.wrapping_add(1);
        if self.check_now || self.calls % LIVENESS_EVERY == 0 {
            self.check_now = false;
            return true;
        }
        false
    }

    /// Look at the next `progress`.
    pub(crate) fn soon(&mut self) {
        self.check_now = true;
    }

    /// The epoll set of the sockets (and the CQ's fd), if watching.
    pub(crate) fn fd(&self) -> Option<i32> {
        self.liveness.as_ref().map(Liveness::fd)
    }

    /// Reports each rank whose connection closed to `dead`.
    pub(crate) fn poll(&mut self, mut dead: impl FnMut(Rank)) {
        let Some(l) = &mut self.liveness else {
            return;
        };
        l.poll(&mut self.dead);
        while let Some(r) = self.dead.pop() {
            dead(r);
        }
    }

    /// Connections the liveness setup refused.
    #[cfg(test)]
    pub(crate) fn refused(&self) -> usize {
        self.refused
    }
}

impl OfiDevice {
    /// Marks `peer` failed (reported once the CQ is drained).
    pub(crate) fn fail(&mut self, peer: Rank, error: Error) {
        self.peers.fail(peer, error);
    }

    /// The error for a failed post towards `peer`.
    pub(crate) fn post_error(&mut self, peer: Rank, f: Fail) -> Error {
        if is_dead(f.code) {
            let e: Error = PeerError::Died { rank: peer }.into();
            self.fail(peer, e);
            e
        } else {
            f.into()
        }
    }

    /// Handles the error entry at the head of the CQ.
    pub(crate) fn complete_err<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        let Some((e, text)) = self.fabric.cq_readerr()? else {
            return Ok(0);
        };
        let code = e.err;
        match self.cq.classify(e.op_context as usize) {
            Op::Recv(i) => {
                if let Some(b) = self.recvs.take_posted(i) {
                    self.recvs.recycle(b);
                }
                if code == sys::FI_ETRUNC as i32 {
                    let from = eager::untag(e.tag).0 as Rank;
                    let what = "ofi packet larger than the receive buffers";
                    self.fail(from, PeerError::Protocol { rank: from, what }.into());
                } else if code != sys::FI_ECANCELED as i32 {
                    tracing::warn!(rank = self.rank, code, %text, "ofi: receive failed");
                }
                Ok(0)
            }
            Op::Send(i) => {
                self.sends.give_back(i);
                let peer = self.sends.peer(i);
                tracing::warn!(rank = self.rank, peer, code, %text, "ofi: send failed");
                let err = self.failed_op_error(peer, "ofi send", code);
                self.fail(peer, err);
                Ok(0)
            }
            Op::Rma(i) => {
                let Some(InFlight { token, peer, mem }) = self.transfers.finish(i) else {
                    return Ok(0);
                };
                self.release_zombie(mem);
                tracing::warn!(rank = self.rank, peer, code, %text, "ofi: rma failed");
                let err = self.failed_op_error(peer, "ofi rma", code);
                if err == (PeerError::Died { rank: peer }).into() {
                    self.fail(peer, err);
                }
                sink.rdma_done(token, Err(err));
                Ok(1)
            }
            Op::Unknown => {
                // An inject's failure carries no context; the tag names the
                // destination only on some providers, so only log it.
                tracing::warn!(rank = self.rank, code, %text, "ofi: error completion without context");
                Ok(0)
            }
        }
    }

    /// The error for an operation towards `peer` that failed with `code`:
    /// the peer's death if that is why (a reset connection, or rxm
    /// cancelling what was in flight on a connection that went away, or a
    /// liveness socket that closed), else the completion status.
    fn failed_op_error(&mut self, peer: Rank, what: &'static str, code: i32) -> Error {
        self.check_liveness();
        let dead = is_dead(code)
            || code == sys::FI_ECANCELED as i32
            || matches!(
                self.peers.error(peer),
                Some(Error::Peer(PeerError::Died { .. }))
            );
        if dead {
            PeerError::Died { rank: peer }.into()
        } else {
            op_error(peer, what, code)
        }
    }

    /// Tells the sink about failures not yet reported, once each.
    pub(crate) fn report_failures<S: Sink>(&mut self, sink: &mut S) -> usize {
        let mut events = 0;
        while let Some((p, error)) = self.peers.take_unreported() {
            self.recvs.drop_held_from(p);
            tracing::warn!(rank = self.rank, peer = p, %error, "ofi peer failed");
            sink.peer_failed(p, error);
            events += 1;
        }
        events
    }

    pub(crate) fn check_liveness(&mut self) {
        let peers = &mut self.peers;
        self.watch
            .poll(|r| peers.fail(r, PeerError::Died { rank: r }.into()));
    }
}
