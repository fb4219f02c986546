//! The eager receive side: the shared receive queue, its registered
//! buffers, and the ARecv handover of a buffer to the user.
//!
//! # Buffers
//! The receive slab has twice as many slots as the SRQ holds: `depth`
//! posted, `depth` spare. When the engine takes a payload
//! ([`Incoming::into_payload`], an unexpected message or an ARecv), the
//! slot itself becomes the user's `Buf` ([`RecvBuf`]) and a spare is posted
//! in its place; dropping the `Buf` (on any thread) puts the slot back on a
//! shared return list. When no spare is left (the user holds `depth`
//! buffers), the payload is copied and the slot reposted: memory stays
//! bounded by the pool, and the SRQ is refilled either way before the
//! credit is returned (see `credits.rs`).

use std::sync::Arc;

use ferry_core::device::Incoming;
use ferry_core::{Buf, Error};

use crate::error::VerbsError;
use crate::ffi::slab::{Returns, Slab};
use crate::ffi::{sys, FfiError, Pd, Srq};

/// Receive work-request ids carry this tag in the top byte.
pub(crate) const RECV_TAG: u64 = 5 << 56;

/// The SRQ and its buffers.
#[derive(Debug)]
pub(crate) struct RecvPool {
    pub(crate) srq: Srq,
    slab: Slab,
    spare: Vec<u32>,
    returns: Returns,
    /// Set when a repost failed inside a drop (reported by `progress`).
    pub(crate) failed: Option<FfiError>,
}

impl RecvPool {
    /// An SRQ of `depth` buffers of `size` bytes, all posted.
    pub(crate) fn new(pd: &Pd, depth: u32, size: usize) -> Result<RecvPool, VerbsError> {
        let srq = Srq::new(pd, depth)?;
        let slab = Slab::new(
            pd,
            size,
            depth * 2,
            sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0,
        )?;
        let mut pool = RecvPool {
            srq,
            slab,
            spare: (depth..depth * 2).rev().collect(),
            returns: Arc::default(),
            failed: None,
        };
        for i in 0..depth {
            pool.post(i)?;
        }
        Ok(pool)
    }

    /// Posts slot `i` on the SRQ.
    #[inline]
    pub(crate) fn post(&mut self, i: u32) -> Result<(), FfiError> {
        // Slot `i` is owned by this pool (not lent, not posted) until its
        // completion is polled.
        self.srq.post_slot(RECV_TAG | u64::from(i), &self.slab, i)
    }

    fn repost(&mut self, i: u32) {
        if let Err(e) = self.post(i) {
            tracing::error!(error = %e, "could not repost an eager receive buffer");
            self.failed.get_or_insert(e);
        }
    }

    /// A spare slot: from the private list, else from those users gave back.
    fn take_spare(&mut self) -> Option<u32> {
        if let Some(i) = self.spare.pop() {
            return Some(i);
        }
        if let Ok(mut r) = self.returns.lock() {
            self.spare.append(&mut r);
        }
        self.spare.pop()
    }

    /// The bytes of slot `i` (`i` from a receive completion, validated).
    pub(crate) fn slot_valid(&self, i: u64) -> Option<u32> {
        u32::try_from(i).ok().filter(|&i| i < self.slab.count())
    }

    pub(crate) fn slot_size(&self) -> usize {
        self.slab.slot_size()
    }

    /// Gives back a slot whose message is dropped (a credit message, a
    /// failed completion, a packet from a failed peer).
    pub(crate) fn recycle(&mut self, i: u32) {
        self.repost(i);
    }

    /// Whether `addr` lies in the receive buffers (ARecv zero-copy check).
    pub(crate) fn contains(&self, addr: usize) -> bool {
        self.slab.contains(addr)
    }

    /// Bytes of slot `i`, a completed receive not yet reposted.
    fn bytes(&self, i: u32, start: usize, len: usize) -> &[u8] {
        self.slab.bytes(i, start, len)
    }
}

/// A received packet in its slot, as the sink sees it. Dropping it reposts
/// the slot (or, after a handover, the spare that replaces it).
#[derive(Debug)]
pub(crate) struct VerbsIncoming<'a> {
    pub(crate) pool: &'a mut RecvPool,
    /// `None` once handed over.
    pub(crate) slot: Option<u32>,
    /// Validated by `Imm::decode` against the received length.
    pub(crate) header_len: usize,
    /// Received length minus header, validated against the slot size.
    pub(crate) payload_len: usize,
}

impl Incoming for VerbsIncoming<'_> {
    #[inline]
    fn header(&self) -> &[u8] {
        match self.slot {
            Some(i) => self.pool.bytes(i, 0, self.header_len),
            None => &[],
        }
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        match self.slot {
            Some(i) => self.pool.bytes(i, self.header_len, self.payload_len),
            None => &[],
        }
    }

    /// A box around the receive buffer (or a copy, past the parking
    /// bound): the engine copies a small unexpected payload into its pool
    /// instead, and the buffer goes straight back to the device.
    #[inline]
    fn hand_over_allocates(&self) -> bool {
        true
    }

    fn into_payload(mut self) -> Result<Buf, Error> {
        let Some(i) = self.slot.take() else {
            return Ok(Buf::new());
        };
        if let Some(spare) = self.pool.take_spare() {
            self.pool.repost(spare);
            let Some(storage) = self.pool.slab.lend(i, self.header_len, &self.pool.returns) else {
                return Err(Error::Internal("verbs: a receive slot past the slab"));
            };
            return Ok(Buf::from_storage_with_len(
                Box::new(storage),
                self.payload_len,
            ));
        }
        let copy = Buf::copy_from(self.pool.bytes(i, self.header_len, self.payload_len));
        self.pool.repost(i);
        copy
    }
}

impl Drop for VerbsIncoming<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.slot.take() {
            self.pool.repost(i);
        }
    }
}
