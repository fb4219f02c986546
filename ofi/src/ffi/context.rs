//! Operation contexts: every operation the device posts gets an
//! `fi_context2` (the `FI_CONTEXT`/`FI_CONTEXT2` modes require one the
//! provider may scribble on) in one array: receive slots, then send
//! buffers, then RMA slots. A completion's `op_context` is classified by
//! address arithmetic alone, never dereferenced, so a bogus pointer from a
//! provider bug is "unknown", not undefined behaviour.

use super::OpContext;

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
