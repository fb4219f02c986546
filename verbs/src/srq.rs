//! The eager receive side: the shared receive queue, its registered
//! buffers, and the ARecv handover of a buffer to the user.
//!
//! # Growth with connections (lazy connections, `qp.rs`)
//! The SRQ is created empty (with room for `max_depth` receives) and the
//! pool grows by one **chunk** per connected peer: `C + RESERVE` buffers
//! posted and as many spare, one slab (one MR) per chunk
//! ([`RecvPool::grow`]). So a rank holds receive memory only for the peers
//! it talks to, `2 × (C + 2) × FERRY_VERBS_EAGER` bytes each (544 KiB with
//! the defaults), and the credit argument of `credits.rs` holds unchanged:
//! every connected peer's `C + 2` buffers are posted before it is told the
//! connection exists. Chunks are never given back while the device lives
//! (connections are not torn down). A slot's index is global: chunk
//! `i / per`, slot `i % per` (`per` = slots per chunk).
//!
//! # Buffers
//! Each chunk has twice as many slots as it posts. When the engine takes a
//! payload ([`Incoming::into_payload`], an unexpected message or an ARecv),
//! the slot itself becomes the user's `Buf` ([`RecvBuf`]) and a spare is
//! posted in its place; dropping the `Buf` (on any thread) puts the slot
//! back on a shared return list. When no spare is left (the user holds as
//! many buffers as are posted), the payload is copied and the slot
//! reposted: memory stays bounded by the pool, and the SRQ is refilled
//! either way before the credit is returned (see `credits.rs`).
//!
//! [`RecvBuf`]: crate::ffi::slab::RecvBuf

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
    srq: Srq,
    /// One slab per chunk.
    slabs: Vec<Slab>,
    /// Slots per chunk (half posted, half spare).
    per: u32,
    size: usize,
    spare: Vec<u32>,
    returns: Returns,
    /// Set when a repost failed inside a drop (reported by `progress`).
    failed: Option<FfiError>,
}

impl RecvPool {
    /// An SRQ with room for `max_depth` receives and no buffers yet;
    /// [`RecvPool::grow`] adds chunks of `per_chunk` posted buffers of
    /// `size` bytes.
    pub(crate) fn new(
        pd: &Pd,
        max_depth: u32,
        per_chunk: u32,
        size: usize,
    ) -> Result<RecvPool, VerbsError> {
        Ok(RecvPool {
            srq: Srq::new(pd, max_depth)?,
            slabs: Vec::new(),
            per: per_chunk * 2,
            size,
            spare: Vec::new(),
            returns: Arc::default(),
            failed: None,
        })
    }

    /// The SRQ (for creating QPs on it).
    pub(crate) fn srq(&self) -> &Srq {
        &self.srq
    }

    /// A repost that failed inside a drop, if any (`progress` reports it).
    #[inline]
    pub(crate) fn failed(&self) -> Option<FfiError> {
        self.failed
    }

    /// Adds one chunk: registers it and posts half of its slots.
    pub(crate) fn grow(&mut self, pd: &Pd) -> Result<(), VerbsError> {
        let slab = Slab::new(
            pd,
            self.size,
            self.per,
            sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0,
        )?;
        let base = self.slabs.len() as u32 * self.per;
        self.slabs.push(slab);
        let half = self.per / 2;
        self.spare.extend((base + half..base + self.per).rev());
        for i in base..base + half {
            self.post(i)?;
        }
        Ok(())
    }

    /// Chunks so far (one per connected peer).
    pub(crate) fn chunks(&self) -> usize {
        self.slabs.len()
    }

    /// Registered bytes of the pool.
    pub(crate) fn registered_bytes(&self) -> usize {
        self.slabs.len() * self.per as usize * self.size
    }

    /// The slab and local slot of global slot `i`.
    #[inline]
    fn locate(&self, i: u32) -> Option<(&Slab, u32)> {
        let s = self.slabs.get((i / self.per) as usize)?;
        Some((s, i % self.per))
    }

    /// Posts slot `i` on the SRQ.
    #[inline]
    pub(crate) fn post(&mut self, i: u32) -> Result<(), FfiError> {
        let Some(slab) = self.slabs.get((i / self.per) as usize) else {
            return Err(FfiError::Missing("a receive slot past the pool"));
        };
        // Slot `i` is owned by this pool (not lent, not posted) until its
        // completion is polled.
        self.srq
            .post_slot(RECV_TAG | u64::from(i), slab, i % self.per)
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

    /// The slot of a receive completion's id, if it is one of the pool's.
    pub(crate) fn slot_valid(&self, i: u64) -> Option<u32> {
        u32::try_from(i)
            .ok()
            .filter(|&i| (i as usize) < self.slabs.len() * self.per as usize)
    }

    pub(crate) fn slot_size(&self) -> usize {
        self.size
    }

    /// Gives back a slot whose message is dropped (a credit message, a
    /// failed completion, a packet from a failed peer).
    pub(crate) fn recycle(&mut self, i: u32) {
        self.repost(i);
    }

    /// Whether `addr` lies in the receive buffers (ARecv zero-copy check).
    pub(crate) fn contains(&self, addr: usize) -> bool {
        self.slabs.iter().any(|s| s.contains(addr))
    }

    /// Bytes of slot `i`, a completed receive not yet reposted.
    fn bytes(&self, i: u32, start: usize, len: usize) -> &[u8] {
        match self.locate(i) {
            Some((slab, j)) => slab.bytes(j, start, len),
            None => &[],
        }
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
            let lent = self
                .pool
                .locate(i)
                .and_then(|(slab, j)| slab.lend(j, self.header_len, &self.pool.returns, i));
            let Some(storage) = lent else {
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
