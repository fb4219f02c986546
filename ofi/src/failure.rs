//! Failure handling: CQ error entries, the error an operation gets, and
//! dead peers (from error completions or the liveness sockets), each
//! reported to the sink once, after what the peer sent before dying.

use ferry_core::device::Sink;
use ferry_core::{Error, PeerError, Rank};

use crate::cq::{is_dead, op_error, Op};
use crate::device::OfiDevice;
use crate::eager;
use crate::ffi::Fail;
use crate::sys;

impl OfiDevice {
    /// Marks `peer` failed (reported once the CQ is drained).
    pub(crate) fn fail(&mut self, peer: Rank, error: Error) {
        if let Ok(p) = usize::try_from(peer) {
            self.failures.fail(p, error);
        }
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
        match self.ctx.classify(e.op_context as usize) {
            Op::Recv(i) => {
                if let Some(b) = self.slots.get_mut(i).and_then(Option::take) {
                    self.free.push(b);
                    self.empty.push(i);
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
                self.send_free.push(i);
                let peer = self.send_peer[i];
                tracing::warn!(rank = self.rank, peer, code, %text, "ofi: send failed");
                let err = self.failed_op_error(peer, "ofi send", code);
                self.fail(peer, err);
                Ok(0)
            }
            Op::Rma(i) => {
                let Some((token, peer, mem)) = self.rma_ops.get_mut(i).and_then(Option::take)
                else {
                    return Ok(0);
                };
                self.rma_free.push(i);
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
                self.failures.error(peer as usize),
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
        while let Some((p, error)) = self.failures.take_unreported() {
            self.held.retain(|h| h.from != p as Rank);
            tracing::warn!(rank = self.rank, peer = p, %error, "ofi peer failed");
            sink.peer_failed(p as Rank, error);
            events += 1;
        }
        events
    }

    pub(crate) fn check_liveness(&mut self) {
        let Some(l) = &mut self.liveness else {
            return;
        };
        l.poll(&mut self.dead);
        while let Some(r) = self.dead.pop() {
            self.fail(r, PeerError::Died { rank: r }.into());
        }
    }
}
