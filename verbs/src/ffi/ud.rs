//! The raw calls of the lazy-connection handshake (`handshake.rs`): address
//! handles, receives posted on a QP's own receive queue (the UD QP has no
//! SRQ), UD sends, and resizing the CQ as connections are added.

use std::ptr::{self, NonNull};

use super::slab::Slab;
use super::{check, ops, os, sys, Cq, FfiError, Pd, Qp, Result};

/// An address handle: where a UD datagram goes.
#[derive(Debug)]
pub(crate) struct Ah(NonNull<sys::ibv_ah>);

// SAFETY: see the `ffi` module docs.
unsafe impl Send for Ah {}

impl Ah {
    pub(crate) fn new(pd: &Pd, attr: &mut sys::ibv_ah_attr) -> Result<Ah> {
        // SAFETY: live PD, valid attributes (copied by the provider).
        let ah = unsafe { sys::ibv_create_ah(pd.raw(), attr) };
        NonNull::new(ah).map(Ah).ok_or_else(|| os("ibv_create_ah"))
    }
}

impl Drop for Ah {
    fn drop(&mut self) {
        // SAFETY: created by `ibv_create_ah`, destroyed once, before its PD
        // (the device's field order).
        let rc = unsafe { sys::ibv_destroy_ah(self.0.as_ptr()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_ah failed");
        }
    }
}

impl Cq {
    /// Grows the CQ to at least `cqe` entries (`ibv_resize_cq`; the
    /// provider may round up).
    pub(crate) fn resize(&mut self, cqe: i32) -> Result<()> {
        // SAFETY: a live CQ; resizing keeps its completions (the verbs
        // contract) and the CQ stays at the same address.
        check("ibv_resize_cq", unsafe {
            sys::ibv_resize_cq(self.raw(), cqe)
        })
    }

    /// The number of entries the CQ has now.
    pub(crate) fn entries(&self) -> u32 {
        // SAFETY: a live CQ; `cqe` is updated only by create/resize, which
        // take `&mut self`.
        u32::try_from(unsafe { (*self.raw()).cqe }).unwrap_or(0)
    }
}

impl Qp {
    /// Posts slot `i` of `slab` (registered with LOCAL_WRITE) on this QP's
    /// own receive queue; the caller owns the slot (not posted).
    pub(crate) fn post_recv_slot(&mut self, wr_id: u64, slab: &Slab, i: u32) -> Result<()> {
        let sge = slab
            .sge(i, slab.slot_size())
            .ok_or(FfiError::Missing("a receive slot past the slab"))?;
        // SAFETY: a live QP, so its context is live.
        let f = unsafe { ops((*self.0.as_ptr()).context) }
            .post_recv
            .ok_or(FfiError::Missing("ibv_post_recv"))?;
        let mut list = sys::ibv_sge {
            addr: sge.addr,
            length: sge.len,
            lkey: sge.lkey,
        };
        let mut wr = sys::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut list,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and SGE live across the call (the provider copies
        // them); the slot lies in the slab's registered region (checked by
        // `sge`), which outlives its MR, and the HCA owns it until the
        // completion is polled (`ffi::slab`, "Slot ownership").
        check("ibv_post_recv", unsafe {
            f(self.0.as_ptr(), &mut wr, &mut bad)
        })
    }

    /// Sends the first `len` bytes of slot `i` of `slab` as one signaled
    /// UD datagram to QP `qpn` behind `ah`, with Q_Key `qkey`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn post_ud_slot(
        &mut self,
        wr_id: u64,
        slab: &Slab,
        i: u32,
        len: usize,
        ah: &Ah,
        qpn: u32,
        qkey: u32,
    ) -> Result<()> {
        let sge = slab
            .sge(i, len)
            .ok_or(FfiError::Missing("a datagram slot past the slab"))?;
        // SAFETY: a live QP, so its context is live.
        let f = unsafe { ops((*self.0.as_ptr()).context) }
            .post_send
            .ok_or(FfiError::Missing("ibv_post_send"))?;
        let mut list = sys::ibv_sge {
            addr: sge.addr,
            length: sge.len,
            lkey: sge.lkey,
        };
        // SAFETY: all-zero is a valid value of this plain C struct (null
        // pointers, zero counts).
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = &mut list;
        wr.num_sge = 1;
        wr.opcode = sys::ibv_wr_opcode::IBV_WR_SEND;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        wr.wr.ud = sys::ud_t {
            ah: ah.0.as_ptr(),
            remote_qpn: qpn,
            remote_qkey: qkey,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and SGE live across the call (the provider copies
        // them); the slot lies in the slab's registered region (checked by
        // `sge`) and is the caller's until the send completes; the AH is
        // live across the call (and, owned by the device, until the QP is
        // destroyed).
        check("ibv_post_send", unsafe {
            f(
                self.0.as_ptr(),
                &mut wr,
                &mut bad as *mut *mut sys::ibv_send_wr,
            )
        })
    }
}
