//! Operation contexts and what a completion (or a CQ error entry) means.
//!
//! Every operation the device posts gets an `fi_context2` (the
//! `FI_CONTEXT`/`FI_CONTEXT2` modes require one the provider may scribble
//! on) in one array: receive slots, then send buffers, then RMA slots. A
//! completion's `op_context` is classified by address arithmetic alone,
//! never dereferenced, so a bogus pointer from a provider bug is
//! "unknown", not undefined behaviour.

use ferry_core::{DeviceError, Error, PeerError, Rank};

use crate::ffi::OpContext;
use crate::sys;

/// What a completion is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Recv(usize),
    Send(usize),
    Rma(usize),
    /// Not one of ours (an inject's error entry has no context).
    Unknown,
}

/// The context array.
#[derive(Debug)]
pub(crate) struct Contexts {
    ctx: Box<[OpContext]>,
    recv: usize,
    send: usize,
}

// SAFETY: the contexts are plain memory the provider writes only while an
// operation is outstanding, and the device (their owner) is used by one
// thread at a time.
unsafe impl Send for Contexts {}

impl Contexts {
    pub(crate) fn new(recv: usize, send: usize, rma: usize) -> Contexts {
        let ctx = (0..recv + send + rma)
            .map(|_| OpContext::default())
            .collect();
        Contexts { ctx, recv, send }
    }

    fn ptr(&mut self, i: usize) -> *mut OpContext {
        // Index checked by the callers' slot counts; `get_mut` keeps a logic
        // error from being out of bounds (NULL is refused by the provider).
        self.ctx
            .get_mut(i)
            .map_or(std::ptr::null_mut(), |c| c as *mut OpContext)
    }

    pub(crate) fn recv(&mut self, i: usize) -> *mut OpContext {
        self.ptr(i)
    }

    pub(crate) fn send(&mut self, i: usize) -> *mut OpContext {
        self.ptr(self.recv + i)
    }

    pub(crate) fn rma(&mut self, i: usize) -> *mut OpContext {
        self.ptr(self.recv + self.send + i)
    }

    pub(crate) fn classify(&self, p: usize) -> Op {
        let base = self.ctx.as_ptr() as usize;
        let size = std::mem::size_of::<OpContext>();
        if p < base || (p - base) % size != 0 {
            return Op::Unknown;
        }
        let i = (p - base) / size;
        if i < self.recv {
            Op::Recv(i)
        } else if i < self.recv + self.send {
            Op::Send(i - self.recv)
        } else if i < self.ctx.len() {
            Op::Rma(i - self.recv - self.send)
        } else {
            Op::Unknown
        }
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
