//! Safe ways to post work requests. `Qp::post_send` and `Srq::post_recv`
//! take raw SGEs; these wrappers take what makes an SGE safe to hand over:
//! - nothing at all ([`Qp::post_empty`]: credit messages, keepalive probes);
//! - borrowed bytes sent inline ([`Qp::post_inline`]: the provider copies
//!   them during the call);
//! - a slot of a registered [`Slab`] ([`Qp::post_slot`], [`Srq::post_slot`]);
//! - a range of a live registration ([`Qp::post_registered`]).
//!
//! Memory an SGE names is accessed by the HCA only through its `lkey`'s MR,
//! which confines the access to that region, and every MR is deregistered
//! before its memory is freed ([`Slab`]'s and [`RegisteredBuf`]'s field
//! order). What remains is the device's bookkeeping, which keeps a posted
//! slot or region away from Rust code until its completion is polled (see
//! `ffi::slab`, "Slot ownership", and `rdma.rs`).
//!
//! [`RegisteredBuf`]: super::RegisteredBuf

use super::slab::Slab;
use super::{FfiError, Qp, Result, SendOp, Sge, Srq};

impl Qp {
    /// Posts `op` with no data: a zero-length SEND with immediate, or a
    /// zero-length RDMA WRITE (which needs no remote buffer).
    #[inline]
    pub(crate) fn post_empty(&mut self, wr_id: u64, op: SendOp) -> Result<()> {
        if matches!(op, SendOp::Read { .. }) {
            return Err(FfiError::Missing("an empty RDMA READ"));
        }
        // SAFETY: no SGE: the work request reads and writes no local memory.
        unsafe { self.post_send(wr_id, op, &[], false, true) }
    }

    /// Sends `parts` (up to two, empty ones skipped) inline with immediate
    /// data `imm`: the provider copies the bytes during the call, so the
    /// work request may go unsignaled (it holds no buffer).
    #[inline]
    pub(crate) fn post_inline(
        &mut self,
        wr_id: u64,
        imm: u32,
        parts: [&[u8]; 2],
        signaled: bool,
    ) -> Result<()> {
        let mut sges = [Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        }; 2];
        let mut n = 0;
        for part in parts {
            if !part.is_empty() {
                sges[n] = Sge {
                    addr: part.as_ptr() as u64,
                    len: part.len() as u32,
                    lkey: 0,
                };
                n += 1;
            }
        }
        // SAFETY: IBV_SEND_INLINE: the provider copies the bytes during the
        // call, so the borrowed slices need only live across it; a SEND
        // writes no local memory.
        unsafe { self.post_send(wr_id, SendOp::SendImm(imm), &sges[..n], true, signaled) }
    }

    /// Sends the first `len` bytes of slot `i` of `slab` (the registered
    /// send slab; the caller owns the slot until the completion).
    #[inline]
    pub(crate) fn post_slot(
        &mut self,
        wr_id: u64,
        op: SendOp,
        slab: &Slab,
        i: u32,
        len: usize,
    ) -> Result<()> {
        let sge = slab
            .sge(i, len)
            .ok_or(FfiError::Missing("a send slot past the slab"))?;
        // SAFETY: the SGE lies in the slab's registered region (checked by
        // `sge`), which outlives its MR; the slot is the caller's until the
        // completion (module docs), which is signaled.
        unsafe { self.post_send(wr_id, op, &[sge], false, true) }
    }

    /// Posts an RDMA `op` on `sge`, a range of a live registration
    /// (`mr.rs`) with its `lkey`.
    #[inline]
    pub(crate) fn post_registered(&mut self, wr_id: u64, op: SendOp, sge: Sge) -> Result<()> {
        // SAFETY: the HCA reaches the memory only through `sge.lkey`'s MR,
        // within that region; a registration is deregistered before its
        // buffer is released (`RegisteredBuf`), and the engine deregisters
        // only after `rdma_done` (module docs).
        unsafe { self.post_send(wr_id, op, &[sge], false, true) }
    }
}

impl Srq {
    /// Posts slot `i` of `slab` (the registered receive slab, LOCAL_WRITE)
    /// as one receive; the caller owns the slot (neither posted nor lent).
    #[inline]
    pub(crate) fn post_slot(&mut self, wr_id: u64, slab: &Slab, i: u32) -> Result<()> {
        let sge = slab
            .sge(i, slab.slot_size())
            .ok_or(FfiError::Missing("a receive slot past the slab"))?;
        // SAFETY: the slot lies in the slab's registered region (checked by
        // `sge`), which outlives its MR; the HCA owns it until the
        // completion is polled (module docs).
        unsafe { self.post_recv(wr_id, sge.addr, sge.len, sge.lkey) }
    }
}
