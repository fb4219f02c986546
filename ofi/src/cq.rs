//! What a completion (or a CQ error entry) means: which operation (the
//! context array is in `ffi::context`) and which error; and
//! [`Completions`], the device's side of its completion queue.

use std::collections::VecDeque;

use ferry_core::{DeviceError, Error, PeerError, Rank};

pub(crate) use crate::ffi::{Contexts, Op};
use crate::ffi::{CqRead, Done, Fabric, Fail, OpContext, CQ_BATCH};
use crate::sys;

/// Completions read outside `progress` are kept at most this many.
const STASH_MAX: usize = 4096;

/// The operation contexts, and the completions read but not yet handled.
#[derive(Debug)]
pub(crate) struct Completions {
    ctx: Contexts,
    /// Successful completions read by `send`/`rdma` while making room.
    stash: VecDeque<Done>,
    /// `fi_cq_read`'s output, reused (taken while its entries are handled).
    entries: Vec<Done>,
}

impl Completions {
    /// Contexts for `recv` receive slots, `send` send slots, `rma` RMA slots.
    pub(crate) fn new(recv: usize, send: usize, rma: usize) -> Completions {
        Completions {
            ctx: Contexts::new(recv, send, rma),
            stash: VecDeque::new(),
            entries: Vec::with_capacity(CQ_BATCH),
        }
    }

    /// What a completion with context address `ctx` is for.
    #[inline]
    pub(crate) fn classify(&self, ctx: usize) -> Op {
        self.ctx.classify(ctx)
    }

    /// Receive slot `i`'s context.
    pub(crate) fn recv_ctx(&mut self, i: usize) -> *mut OpContext {
        self.ctx.recv(i)
    }

    /// Send slot `i`'s context.
    #[inline]
    pub(crate) fn send_ctx(&mut self, i: usize) -> *mut OpContext {
        self.ctx.send(i)
    }

    /// RMA slot `i`'s context.
    pub(crate) fn rma_ctx(&mut self, i: usize) -> *mut OpContext {
        self.ctx.rma(i)
    }

    /// Reads completions while a post is refused, so that the provider
    /// progresses (manual progress) and send buffers come back: an EAGAIN
    /// answered by retrying without reading the CQ can deadlock. A send's
    /// completion frees its slot through `send_done`; the rest are stashed
    /// for `progress` (at most `STASH_MAX`).
    ///
    /// # Errors
    /// The provider's failure (an error entry stays at the head of the CQ
    /// for `progress`).
    #[cold]
    pub(crate) fn read_aside(
        &mut self,
        fabric: &mut Fabric,
        mut send_done: impl FnMut(usize),
    ) -> Result<(), Fail> {
        if self.stash.len() >= STASH_MAX {
            return Ok(());
        }
        let r = fabric.cq_read(&mut self.entries);
        for e in self.entries.drain(..) {
            match self.ctx.classify(e.ctx) {
                Op::Send(i) => send_done(i),
                _ => self.stash.push_back(e),
            }
        }
        r.map(|_| ())
    }

    /// The next completion stashed by [`Completions::read_aside`].
    #[inline]
    pub(crate) fn pop_stashed(&mut self) -> Option<Done> {
        self.stash.pop_front()
    }

    /// Whether a stashed completion waits.
    pub(crate) fn has_stashed(&self) -> bool {
        !self.stash.is_empty()
    }

    /// Reads up to [`CQ_BATCH`] completions into the buffer it returns;
    /// hand the buffer back with [`Completions::give_back`].
    #[inline]
    pub(crate) fn read(&mut self, fabric: &mut Fabric) -> (Vec<Done>, Result<CqRead, Fail>) {
        let mut entries = std::mem::take(&mut self.entries);
        let r = fabric.cq_read(&mut entries);
        (entries, r)
    }

    /// The buffer [`Completions::read`] returned, emptied.
    #[inline]
    pub(crate) fn give_back(&mut self, entries: Vec<Done>) {
        self.entries = entries;
    }

    /// Stashed completions (diagnostics).
    #[cfg(test)]
    pub(crate) fn stashed(&self) -> usize {
        self.stash.len()
    }
}

/// Whether an `FI_E*` code means the peer is gone (tcp reports a killed
/// peer as a reset or refused connection, or EIO).
pub(crate) fn is_dead(code: i32) -> bool {
    [
        sys::FI_ECONNRESET,
        sys::FI_ECONNREFUSED,
        sys::FI_ECONNABORTED,
        sys::FI_EHOSTUNREACH,
        sys::FI_ENETUNREACH,
        sys::FI_ENOTCONN,
        libc::EPIPE as u32,
        sys::FI_ESHUTDOWN,
        sys::FI_ETIMEDOUT,
        sys::FI_EIO,
        sys::FI_EADDRNOTAVAIL,
    ]
    .iter()
    .any(|&c| c as i32 == code)
}

/// The error a failed operation towards `peer` gets.
pub(crate) fn op_error(peer: Rank, what: &'static str, code: i32) -> Error {
    if is_dead(code) {
        PeerError::Died { rank: peer }.into()
    } else {
        DeviceError::Completion { what, status: code }.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::OpContext;

    #[test]
    fn contexts_classify_by_address_only() {
        let mut c = Contexts::new(3, 2, 4);
        let (r, s, m) = (c.recv(2) as usize, c.send(0) as usize, c.rma(3) as usize);
        assert_eq!(c.classify(r), Op::Recv(2));
        assert_eq!(c.classify(s), Op::Send(0));
        assert_eq!(c.classify(m), Op::Rma(3));
        assert_eq!(c.classify(0), Op::Unknown);
        let odd = c.rma(0) as usize + 1;
        assert_eq!(c.classify(odd), Op::Unknown);
        assert_eq!(
            c.classify(m + std::mem::size_of::<OpContext>()),
            Op::Unknown
        );
    }
}
