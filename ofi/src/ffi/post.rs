//! Where the device hands its memory to the provider: a receive buffer, a
//! send buffer, an RMA region. Each wrapper is safe: it checks what it can
//! (the slot is free, the length fits the buffer) and states the invariant
//! of the device's bookkeeping that keeps the memory alive and untouched
//! until the completion is read:
//! - a posted receive buffer lives in its slot of [`RecvBufs`] until
//!   `complete` or `complete_err` takes it, after reading slot `i`'s
//!   completion;
//! - a send buffer is off the free list of [`SendBufs`] from
//!   `take_send_buf` until its completion puts it back, and the buffers
//!   never shrink;
//! - an RMA's local region stays registered until the RMA completes:
//!   `deregister` turns a region with an RMA in flight into a zombie
//!   ([`Transfers`]), released by `release_zombie` at the completion;
//! - the endpoint is closed (`Drop for OfiDevice`) before any of these
//!   buffers is freed, and the contexts live as long as the device.
//!
//! [`RecvBufs`]: crate::buffers::RecvBufs
//! [`SendBufs`]: crate::buffers::SendBufs
//! [`Transfers`]: crate::transfers::Transfers

use std::ffi::c_void;

use ferry_core::device::RdmaDir;
use ferry_core::wire::RemoteKey;

use super::{Addr, Fail};
use crate::device::OfiDevice;
use crate::eager::{Bounce, TAG_MASK};
use crate::rma::Local;
use crate::sys;

fn invalid(what: &'static str) -> Fail {
    Fail {
        what,
        code: sys::FI_EINVAL as i32,
    }
}

impl OfiDevice {
    /// Posts `b` as the receive of empty slot `i`: `Ok(None)` when posted
    /// (`b` now lives in slot `i`), `Ok(Some(b))` on `-FI_EAGAIN`.
    ///
    /// # Errors
    /// The provider's failure, or a slot that is not empty, with `b` back.
    #[allow(clippy::result_large_err)]
    pub(crate) fn post_recv(
        &mut self,
        i: usize,
        mut b: Bounce,
    ) -> Result<Option<Bounce>, (Fail, Bounce)> {
        if !self.recvs.is_empty_slot(i) {
            return Err((invalid("fi_trecv: receive slot busy or unknown"), b));
        }
        let ctx = self.cq.recv_ctx(i);
        let (ptr, len, desc) = (b.mem.as_mut_ptr(), b.mem.len(), b.desc as *mut c_void);
        // SAFETY: `b` moves into slot `i` below (a `Box` does not move its
        // heap block) and stays there until slot `i`'s completion is read
        // (module docs); ctx is slot i's context, unused while the slot is
        // empty; desc is the buffer's MR descriptor or NULL.
        let r = unsafe { self.fabric.trecv(ptr, len, desc, TAG_MASK, ctx) };
        match r {
            Ok(true) => {
                self.recvs.posted(i, b);
                Ok(None)
            }
            Ok(false) => Ok(Some(b)),
            Err(f) => Err((f, b)),
        }
    }

    /// Sends the first `len` bytes of send buffer `slot`, which the caller
    /// took off the free list: `Ok(false)` on `-FI_EAGAIN`.
    ///
    /// # Errors
    /// The provider's failure, or a slot or length out of range.
    pub(crate) fn post_send(
        &mut self,
        slot: usize,
        len: usize,
        addr: Addr,
        tag: u64,
    ) -> Result<bool, Fail> {
        let Some(b) = self.sends.buf(slot) else {
            return Err(invalid("fi_tsend: unknown send buffer"));
        };
        if len > b.mem.len() {
            return Err(invalid("fi_tsend: longer than the send buffer"));
        }
        let (ptr, desc) = (b.mem.as_ptr(), b.desc as *mut c_void);
        let ctx = self.cq.send_ctx(slot);
        // SAFETY: send buffer `slot` is off the free list until its
        // completion and the send buffers never shrink (module docs); ctx is
        // that slot's context.
        unsafe { self.fabric.tsend(ptr, len, desc, addr, tag, ctx) }
    }

    /// Starts `dir` on RMA slot `slot` (free, taken by the caller) between
    /// `local` (checked for `len` by `Registrations::local`) and the peer's
    /// `remote`: `Ok(false)` on `-FI_EAGAIN`.
    ///
    /// # Errors
    /// The provider's failure.
    pub(crate) fn post_rma(
        &mut self,
        slot: usize,
        dir: RdmaDir,
        local: Local,
        len: usize,
        addr: Addr,
        remote: RemoteKey,
    ) -> Result<bool, Fail> {
        let ctx = self.cq.rma_ctx(slot);
        // SAFETY: the local region is registered and stays so until the RMA
        // completes (a deregistration meanwhile makes it a zombie; module
        // docs); ctx belongs to a free RMA slot, held until its completion.
        unsafe {
            self.fabric.rma(
                dir,
                local.ptr,
                len,
                local.desc,
                addr,
                remote.addr,
                remote.key,
                ctx,
            )
        }
    }
}
