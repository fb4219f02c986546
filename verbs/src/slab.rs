//! A registered slab: one aligned allocation, one memory region, cut into
//! fixed-size slots. The send pool and the eager receive pool are slabs.
//!
//! The block is reference-counted so that a receive slot lent to the user
//! as a `Buf` (ARecv zero copy) stays valid after the device is dropped;
//! only the registration ends with the device.

use std::sync::Arc;

use crate::error::VerbsError;
use crate::ffi::{Block, Mr, Pd};

/// Fixed-size registered slots.
#[derive(Debug)]
pub(crate) struct Slab {
    // Field order is drop order: the MR is deregistered before the block can
    // be freed.
    mr: Mr,
    block: Arc<Block>,
    slot: usize,
    count: u32,
}

impl Slab {
    /// `count` slots of `slot` bytes, registered with `access`.
    pub(crate) fn new(pd: &Pd, slot: usize, count: u32, access: u32) -> Result<Slab, VerbsError> {
        let len = slot
            .checked_mul(count as usize)
            .ok_or(VerbsError::OutOfMemory(usize::MAX))?;
        let block = Block::new(len).ok_or(VerbsError::OutOfMemory(len))?;
        // SAFETY: the block is owned by this slab (and by lent slots through
        // the `Arc`), so it outlives the MR, which the slab drops first.
        let mr = unsafe { pd.reg_mr(block.ptr(), block.len(), access) }?;
        Ok(Slab {
            mr,
            block: Arc::new(block),
            slot,
            count,
        })
    }

    pub(crate) fn slot_size(&self) -> usize {
        self.slot
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn lkey(&self) -> u32 {
        self.mr.lkey()
    }

    pub(crate) fn block(&self) -> &Arc<Block> {
        &self.block
    }

    /// The address of slot `i` (`i < count`, checked by callers).
    #[inline]
    pub(crate) fn ptr(&self, i: u32) -> *mut u8 {
        debug_assert!(i < self.count);
        // SAFETY: `i < count`, so the offset stays inside the block.
        unsafe { self.block.ptr().add(i as usize * self.slot) }
    }

    /// Whether `addr` lies inside the slab.
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let base = self.block.ptr() as usize;
        (base..base + self.slot * self.count as usize).contains(&addr)
    }
}
