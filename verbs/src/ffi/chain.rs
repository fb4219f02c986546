//! A chain of SEND work requests held for one QP and posted by one
//! `ibv_post_send`: doorbell batching (`doorbell.rs` decides when).
//!
//! A posted list costs one doorbell: one MMIO write on a hardware HCA, one
//! `write(2)` to the kernel under Soft-RoCE, whose `post_send` queues every
//! request of the list and then rings once.
//!
//! # What a held request may point at
//! - **Inline bytes** are copied into the chain's own staging block when the
//!   request is held, so the caller's slices are free at once, as the
//!   device contract's `Sent::Done` requires. The provider copies them again
//!   during the post (IBV_SEND_INLINE), after which nothing refers to them.
//! - **A slot of the registered send slab**: as for [`Qp::post_slot`], the
//!   device owns the slot from the moment it popped it from its free list
//!   until the request's (always signaled) completion, or until a refused
//!   post hands it back (`Refused::unposted`).
//!
//! The lists, SGEs and staging live in boxed slices whose heap addresses
//! never move, so the pointers a held request stores stay valid while the
//! `Chain` itself moves.

use std::fmt;
use std::os::raw::c_int;
use std::ptr;

use super::slab::Slab;
use super::{check, fill_send_wr, ops, sys, FfiError, Qp, SendOp};

/// Requests one chain holds at most: a post of 32 sends amortizes the
/// doorbell to about 3 % of what it was, and a chain that fills is posted
/// at once (the HCA starts on it while the next one fills).
pub(crate) const CHAIN_MAX: usize = 32;

/// Requests held for one QP (see the module docs).
pub(crate) struct Chain {
    wrs: Box<[sys::ibv_send_wr]>,
    sges: Box<[sys::ibv_sge]>,
    staged: Box<[u8]>,
    /// Staging bytes per request: the QP's inline limit.
    stride: usize,
    len: usize,
}

// SAFETY: the raw pointers in the held requests point only into the
// chain's own heap blocks and the device's registered slab, both owned by
// the one device that owns the chain and moved with it between threads.
unsafe impl Send for Chain {}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chain")
            .field("len", &self.len)
            .field("stride", &self.stride)
            .finish_non_exhaustive()
    }
}

/// A post the provider refused: the error, and the `wr_id`s of the requests
/// it did not take (the first refused one and everything after it).
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: FfiError,
    pub(crate) unposted: Vec<u64>,
}

impl Chain {
    /// An empty chain whose inline requests carry up to `max_inline` bytes.
    pub(crate) fn new(max_inline: usize) -> Chain {
        let empty_sge = sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        Chain {
            // SAFETY: all-zero is a valid value of this plain C struct
            // (null pointers, zero counts).
            wrs: (0..CHAIN_MAX)
                .map(|_| unsafe { std::mem::zeroed() })
                .collect(),
            sges: vec![empty_sge; CHAIN_MAX].into_boxed_slice(),
            staged: vec![0u8; CHAIN_MAX * max_inline].into_boxed_slice(),
            stride: max_inline,
            len: 0,
        }
    }

    /// Requests held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len == CHAIN_MAX
    }

    /// Holds a SEND with immediate `imm` of `header ++ payload`, inline
    /// (the bytes are copied into the chain now).
    ///
    /// # Errors
    /// [`FfiError::Missing`] if the chain is full or the bytes exceed the
    /// inline limit (the caller checks both first).
    #[inline]
    pub(crate) fn hold_inline(
        &mut self,
        wr_id: u64,
        imm: u32,
        parts: [&[u8]; 2],
        signaled: bool,
    ) -> Result<(), FfiError> {
        let total = parts[0].len() + parts[1].len();
        if self.is_full() || total > self.stride {
            return Err(FfiError::Missing("an inline send past the chain"));
        }
        let i = self.len;
        let at = i * self.stride;
        let (a, b) = (parts[0].len(), parts[1].len());
        self.staged[at..at + a].copy_from_slice(parts[0]);
        self.staged[at + a..at + a + b].copy_from_slice(parts[1]);
        self.sges[i] = sys::ibv_sge {
            addr: self.staged[at..].as_ptr() as u64,
            length: total as u32,
            lkey: 0,
        };
        let n = usize::from(total > 0);
        self.set(i, wr_id, SendOp::SendImm(imm), n, true, signaled);
        Ok(())
    }

    /// Holds a signaled SEND `op` of the first `len` bytes of slot `slot`
    /// of `slab` (the registered send slab; the caller owns the slot).
    ///
    /// # Errors
    /// [`FfiError::Missing`] if the chain is full or the slot is not in the
    /// slab.
    #[inline]
    pub(crate) fn hold_slot(
        &mut self,
        wr_id: u64,
        op: SendOp,
        slab: &Slab,
        slot: u32,
        len: usize,
    ) -> Result<(), FfiError> {
        if self.is_full() {
            return Err(FfiError::Missing("a send past the chain"));
        }
        let sge = slab
            .sge(slot, len)
            .ok_or(FfiError::Missing("a send slot past the slab"))?;
        let i = self.len;
        self.sges[i] = sys::ibv_sge {
            addr: sge.addr,
            length: sge.len,
            lkey: sge.lkey,
        };
        self.set(i, wr_id, op, 1, false, true);
        Ok(())
    }

    fn set(&mut self, i: usize, wr_id: u64, op: SendOp, sges: usize, inline: bool, signaled: bool) {
        let sge = ptr::addr_of_mut!(self.sges[i]);
        let wr = &mut self.wrs[i];
        fill_send_wr(wr, wr_id, op, inline, signaled);
        wr.sg_list = sge;
        wr.num_sge = sges as c_int;
        wr.next = ptr::null_mut();
        self.len += 1;
    }

    /// Posts every held request on `qp` with one `ibv_post_send` and
    /// empties the chain.
    ///
    /// # Errors
    /// The provider's refusal, with the requests it did not take.
    pub(crate) fn post(&mut self, qp: &mut Qp) -> Result<(), Refused> {
        let n = std::mem::take(&mut self.len);
        if n == 0 {
            return Ok(());
        }
        let base = self.wrs.as_mut_ptr();
        for i in 0..n - 1 {
            // SAFETY: `i + 1 < n <= CHAIN_MAX`: within the block.
            self.wrs[i].next = unsafe { base.add(i + 1) };
        }
        self.wrs[n - 1].next = ptr::null_mut();
        let refuse = |error, from: usize, wrs: &[sys::ibv_send_wr]| Refused {
            error,
            unposted: wrs[from..n].iter().map(|w| w.wr_id).collect(),
        };
        // SAFETY: a live QP, so its context is live.
        let Some(f) = (unsafe { ops((*qp.0.as_ptr()).context) }).post_send else {
            return Err(refuse(FfiError::Missing("ibv_post_send"), 0, &self.wrs));
        };
        let mut bad: *mut sys::ibv_send_wr = ptr::null_mut();
        // SAFETY: the list and its SGEs live in the chain's blocks across
        // the call; inline bytes are in the staging block (the provider
        // copies them); a slab SGE names a registered slot the device owns
        // until the completion (module docs).
        let rc = unsafe { f(qp.0.as_ptr(), base, &mut bad) };
        match check("ibv_post_send (chain)", rc) {
            Ok(()) => Ok(()),
            Err(error) => {
                // `bad` is the first request not posted; a provider that
                // leaves it null or outside the list posted nothing.
                let from = (0..n).find(|&i| ptr::eq(&self.wrs[i], bad)).unwrap_or(0);
                Err(refuse(error, from, &self.wrs))
            }
        }
    }

    /// Drops every held request unposted, returning their `wr_id`s.
    pub(crate) fn discard(&mut self) -> Vec<u64> {
        let n = std::mem::take(&mut self.len);
        self.wrs[..n].iter().map(|w| w.wr_id).collect()
    }
}
