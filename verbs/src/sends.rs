//! [`SendPool`]: the registered send buffers of packets too long to go
//! inline, by slot, and the free slots.

use crate::error::VerbsError;
use crate::ffi::slab::Slab;
use crate::ffi::Pd;

/// The registered send buffers.
#[derive(Debug)]
pub(crate) struct SendPool {
    slab: Slab,
    free: Vec<u32>,
}

impl SendPool {
    /// `count` buffers of `size` bytes, registered with `pd`.
    pub(crate) fn new(pd: &Pd, size: usize, count: u32) -> Result<SendPool, VerbsError> {
        Ok(SendPool {
            slab: Slab::new(pd, size, count, 0)?,
            free: (0..count).rev().collect(),
        })
    }

    /// A free slot, if any.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<u32> {
        self.free.pop()
    }

    /// Slot `i` is free again: its send completed or was never posted
    /// (a slot number out of range, from a corrupt work-request id, is
    /// ignored).
    #[inline]
    pub(crate) fn give_back(&mut self, i: u32) {
        if i < self.slab.count() {
            self.free.push(i);
        }
    }

    /// Copies `header ++ payload` into slot `i` (taken, so no send in
    /// flight reads it); the length, or `None` if it does not fit.
    #[inline]
    pub(crate) fn write(&mut self, i: u32, header: &[u8], payload: &[u8]) -> Option<usize> {
        self.slab.write(i, header, payload)
    }

    /// The buffers, for posting a slot.
    #[inline]
    pub(crate) fn slab(&self) -> &Slab {
        &self.slab
    }

    /// Free slots (tests).
    #[cfg(test)]
    pub(crate) fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Bytes registered for the buffers.
    pub(crate) fn registered_bytes(&self) -> usize {
        self.slab.registered_bytes()
    }
}
