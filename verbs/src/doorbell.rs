//! Doorbell batching: the device's side of `Device::batch_begin` /
//! `batch_end` (see *Batches* in `ferry_core::device`).
//!
//! While a batch is open, [`VerbsDevice::send`](ferry_core::device::Device::send)
//! holds each SEND in a [`Chain`] instead of posting it, and the chain goes
//! to the QP with one `ibv_post_send` (one doorbell) when:
//! - the outermost batch ends;
//! - it is full ([`CHAIN_MAX`] requests);
//! - a send to another peer arrives (a chain belongs to one QP);
//! - anything else is about to touch the device: `progress` (so a caller
//!   waiting inside a batch still sees its sends go out), `arm`, `get` and
//!   `put` (so an RDMA operation stays behind the sends before it).
//!
//! Everything else about a send is decided when it is held, exactly as when
//! it is posted at once: credits and a send-queue slot are taken, the
//! signalling choice is made (`signal.rs`), a slab slot is filled. So the
//! flow-control and completion accounting does not know batching exists;
//! only the moment of the doorbell moves.
//!
//! A chain the provider refuses (the QP went to the error state between
//! hold and post) fails its peer with the provider's error, like an error
//! completion would, and the slab slots of the requests not posted go back
//! to the free list.

use ferry_core::Error;

use crate::device::{VerbsDevice, SEND_BUF_TAG};
use crate::ffi::slab::Slab;
use crate::ffi::{Chain, FfiError, Qp, SendOp};

/// Open batches and the chain they hold.
#[derive(Debug)]
pub(crate) struct Doorbell {
    depth: u32,
    /// The peer (index) whose QP the chain is for, while it holds any.
    peer: usize,
    chain: Chain,
}

/// Where one SEND goes: to the QP now, or into the open batch's chain.
pub(crate) enum Post<'a> {
    Now(&'a mut Qp),
    Held(&'a mut Chain),
}

impl Post<'_> {
    /// `header ++ payload` inline, with immediate `imm`.
    #[inline]
    pub(crate) fn inline(
        self,
        wr_id: u64,
        imm: u32,
        parts: [&[u8]; 2],
        signaled: bool,
    ) -> Result<(), FfiError> {
        match self {
            Post::Now(qp) => qp.post_inline(wr_id, imm, parts, signaled),
            Post::Held(chain) => chain.hold_inline(wr_id, imm, parts, signaled),
        }
    }

    /// The first `len` bytes of slot `slot` of the send slab.
    #[inline]
    pub(crate) fn slot(
        self,
        wr_id: u64,
        op: SendOp,
        slab: &Slab,
        slot: u32,
        len: usize,
    ) -> Result<(), FfiError> {
        match self {
            Post::Now(qp) => qp.post_slot(wr_id, op, slab, slot, len),
            Post::Held(chain) => chain.hold_slot(wr_id, op, slab, slot, len),
        }
    }
}

impl Doorbell {
    pub(crate) fn new(max_inline: usize) -> Doorbell {
        Doorbell {
            depth: 0,
            peer: 0,
            chain: Chain::new(max_inline),
        }
    }

    /// Sends held, not yet posted.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.chain.len()
    }

    /// True if a send to peer `i` cannot join the chain as it stands.
    #[inline]
    pub(crate) fn must_ring_before(&self, i: usize) -> bool {
        !self.chain.is_empty() && (self.peer != i || self.chain.is_full())
    }

    /// Where a send to peer `i`, on `qp`, goes now. The caller has rung
    /// first if [`Doorbell::must_ring_before`] said so.
    #[inline]
    pub(crate) fn route<'a>(&'a mut self, i: usize, qp: &'a mut Qp) -> Post<'a> {
        if self.depth == 0 {
            return Post::Now(qp);
        }
        debug_assert!(self.chain.is_empty() || self.peer == i);
        self.peer = i;
        Post::Held(&mut self.chain)
    }
}

impl VerbsDevice {
    pub(crate) fn open_batch(&mut self) {
        self.doorbell.depth += 1;
    }

    pub(crate) fn close_batch(&mut self) {
        self.doorbell.depth = self.doorbell.depth.saturating_sub(1);
        if self.doorbell.depth == 0 {
            self.ring();
        }
    }

    /// Posts the held chain, if any, with one doorbell.
    #[inline]
    pub(crate) fn ring(&mut self) {
        if !self.doorbell.chain.is_empty() {
            self.ring_held();
        }
    }

    #[inline(never)]
    fn ring_held(&mut self) {
        let i = self.doorbell.peer;
        let refused = match self.peers.get_mut(i).and_then(|p| p.qp.as_mut()) {
            Some(qp) => match self.doorbell.chain.post(qp) {
                Ok(()) => return,
                Err(r) => (Error::from(r.error), r.unposted),
            },
            // Held only for a peer with a QP, which is never taken away.
            None => (
                Error::Internal("verbs: sends held for a peer without a QP"),
                self.doorbell.chain.discard(),
            ),
        };
        let (error, unposted) = refused;
        for wr_id in unposted {
            if wr_id & (0xff << 56) == SEND_BUF_TAG {
                self.send.give_back(wr_id as u32);
            }
        }
        self.fail(i, error);
    }
}
