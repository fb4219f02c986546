//! A registered slab: one aligned allocation, one memory region, cut into
//! fixed-size slots. The send pool and the eager receive pool are slabs.
//!
//! The block is reference-counted so that a receive slot lent to the user
//! as a `Buf` ([`RecvBuf`], ARecv zero copy) stays valid after the device is
//! dropped; only the registration ends with the device.
//!
//! # Slot ownership
//! A slot has one owner at a time, by the device's bookkeeping: the HCA
//! (posted receive, or a send in flight), the pool's free or spare list,
//! the packet being delivered, or a [`RecvBuf`]. The safe accessors here
//! (`write`, `bytes`, `lend`) are called only by a slot's current owner:
//! `srq.rs` reads a slot between its receive completion and its repost,
//! `device.rs` writes a send slot it took off the free list.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use ferry_core::ByteStorage;

use crate::error::VerbsError;
use crate::ffi::{Mr, Pd, Sge};

/// Slots lent to users come back here.
pub(crate) type Returns = Arc<Mutex<Vec<u32>>>;

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

    /// Bytes registered for the slab.
    pub(crate) fn registered_bytes(&self) -> usize {
        self.slot * self.count as usize
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn lkey(&self) -> u32 {
        self.mr.lkey()
    }

    /// The address of slot `i`, `None` past the slab.
    #[inline]
    fn ptr(&self, i: u32) -> Option<*mut u8> {
        // In bounds: `i < count`, so the offset stays inside the block.
        (i < self.count).then(|| self.block.ptr().wrapping_add(i as usize * self.slot))
    }

    /// The SGE of the first `len` bytes of slot `i` (`None` past the slab
    /// or the slot).
    #[inline]
    pub(crate) fn sge(&self, i: u32, len: usize) -> Option<Sge> {
        let p = self.ptr(i)?;
        (len <= self.slot).then(|| Sge {
            addr: p as u64,
            len: len as u32,
            lkey: self.lkey(),
        })
    }

    /// Copies `header ++ payload` into slot `i`, which the caller owns (see
    /// the module docs); `None` (nothing written) if they do not fit.
    #[inline]
    pub(crate) fn write(&mut self, i: u32, header: &[u8], payload: &[u8]) -> Option<usize> {
        let total = header.len() + payload.len();
        let dst = self.ptr(i).filter(|_| total <= self.slot)?;
        // SAFETY: `dst..dst+total` lies in slot `i` of the block (checked
        // above), which the caller owns: no send in flight reads it and no
        // one else writes it (module docs).
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), dst, header.len());
            std::ptr::copy_nonoverlapping(payload.as_ptr(), dst.add(header.len()), payload.len());
        }
        Some(total)
    }

    /// `len` bytes of slot `i` from `start`, clamped to the slot; the
    /// caller owns the slot and the HCA no longer writes it (a completed
    /// receive not yet reposted).
    #[inline]
    pub(crate) fn bytes(&self, i: u32, start: usize, len: usize) -> &[u8] {
        let Some(p) = self.ptr(i) else {
            return &[];
        };
        let start = start.min(self.slot);
        let len = len.min(self.slot - start);
        // SAFETY: `p+start .. p+start+len` lies in slot `i` (clamped above),
        // inside the block this slab keeps alive; the caller owns the slot,
        // so nothing writes it while the borrow of `self` lasts.
        unsafe { std::slice::from_raw_parts(p.add(start), len) }
    }

    /// Lends slot `i` (owned by the caller, a completed receive) to the
    /// user from byte `offset`: `back` (the pool's name for the slot) comes
    /// back on `returns` when the [`RecvBuf`] drops.
    pub(crate) fn lend(
        &self,
        i: u32,
        offset: usize,
        returns: &Returns,
        back: u32,
    ) -> Option<RecvBuf> {
        let p = self.ptr(i)?;
        let offset = offset.min(self.slot);
        Some(RecvBuf {
            block: Arc::clone(&self.block),
            ptr: p.wrapping_add(offset),
            cap: self.slot - offset,
            slot: back,
            returns: Arc::clone(returns),
        })
    }

    /// Whether `addr` lies inside the slab.
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let base = self.block.ptr() as usize;
        (base..base + self.slot * self.count as usize).contains(&addr)
    }
}

/// An eager receive buffer lent to the user: the payload part of a slot.
/// Dropping it gives the slot back to the pool (from any thread).
pub(crate) struct RecvBuf {
    /// Keeps the memory alive even after the device is gone.
    block: Arc<Block>,
    ptr: *mut u8,
    cap: usize,
    slot: u32,
    returns: Returns,
}

impl std::fmt::Debug for RecvBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecvBuf(slot {}, {} bytes)", self.slot, self.cap)
    }
}

// SAFETY: the slot is owned by this value alone (it is neither posted nor
// lent elsewhere until `drop` returns it), and the block it points into is
// kept alive by the `Arc`.
unsafe impl Send for RecvBuf {}

impl ByteStorage for RecvBuf {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+cap` lies in the block (a slot's payload part),
        // which this value keeps alive and owns exclusively (see `Send`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.cap) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `bytes`; `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.cap) }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Drop for RecvBuf {
    fn drop(&mut self) {
        let _ = &self.block;
        if let Ok(mut r) = self.returns.lock() {
            r.push(self.slot);
        }
    }
}

/// An aligned, zeroed heap block that never moves; freed on drop.
#[derive(Debug)]
pub(crate) struct Block {
    ptr: NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: a plain heap allocation; access is coordinated by its owners (see
// `slab.rs`: each slot has one owner at a time).
unsafe impl Send for Block {}
// SAFETY: as above; `&Block` only hands out the base pointer.
unsafe impl Sync for Block {}

impl Block {
    pub(crate) fn new(len: usize) -> Option<Block> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| Block { ptr, layout })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}
