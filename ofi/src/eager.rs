//! Eager packets: the tag that frames them, the device-owned send and
//! receive (bounce) buffers, and the [`Incoming`] view that hands a bounce
//! buffer to the engine without a copy.
//!
//! # Framing
//! A packet is one tagged message whose body is `header ++ payload`. The
//! 64-bit tag carries what the receiver needs to frame and order it, in the
//! low 48 bits (cxi's tags are 48 bits; psm3 and rxm have 64):
//!
//! | bits   | field                                   |
//! |--------|-----------------------------------------|
//! | 0..24  | sender's rank                           |
//! | 24..40 | per-pair sequence number (wraps)        |
//! | 40..47 | header length (at most `MAX_HEADER`)    |
//! | 47     | hello: setup's connection handshake      |
//!
//! Receives are posted for any source with every tag bit ignored, so the
//! provider matches them in posting order. Sends between a pair leave in
//! order (`FI_ORDER_SAS`), but completions need not (rxm finishes a large
//! message's rendezvous after a later small message), so the receiver
//! delivers by sequence number and holds early arrivals back.
//!
//! # Receive buffers (why not FI_MULTI_RECV)
//! Each posted receive is its own bounce buffer, so an arrival can be given
//! to the engine as a [`Buf`] (ARecv, unexpected messages) and a different
//! buffer posted in its place. A FI_MULTI_RECV slab could only be handed
//! over whole, pinning every other message in it. Handed-over buffers come
//! back to the device's pool when the `Buf` drops (from any thread), still
//! registered where FI_MR_LOCAL needs it. At most `max_parked` are out at a
//! time; beyond that `into_payload` copies, so an application that keeps
//! its ARecv buffers cannot starve the device of receive buffers. Handing
//! one over boxes it (an allocation), so `hand_over_allocates` says so: the
//! engine copies an unexpected payload of up to 1 KiB into its own pool of
//! vectors instead, and the buffer is reposted at once.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use ferry_core::device::Incoming;
use ferry_core::{Buf, ByteStorage, Error, Rank};

/// Tag bits the device uses; a receive ignores all of them.
pub(crate) const TAG_MASK: u64 = (1 << 48) - 1;
/// Marks the setup handshake's hello (not a packet, not sequenced).
pub(crate) const HELLO: u64 = 1 << 47;
/// The largest rank the tag can carry, plus one.
pub(crate) const MAX_RANKS: u64 = 1 << 24;

/// Builds a packet's tag.
#[inline]
pub(crate) fn tag(from: Rank, seq: u16, header_len: usize) -> u64 {
    (from as u64 & (MAX_RANKS - 1)) | (u64::from(seq) << 24) | ((header_len as u64 & 0x7f) << 40)
}

/// Splits a tag read off the wire: `(rank, seq, header_len)`.
#[inline]
pub(crate) fn untag(tag: u64) -> (u32, u16, usize) {
    (
        (tag & (MAX_RANKS - 1)) as u32,
        (tag >> 24) as u16,
        ((tag >> 40) & 0x7f) as usize,
    )
}

/// A device-owned buffer, registered where the provider needs local
/// descriptors.
#[derive(Debug)]
pub(crate) struct Bounce {
    pub(crate) mem: Box<[u8]>,
    /// The MR descriptor (`fi_mr_desc`) as an address, 0 when none is
    /// needed. Valid while the device lives; used only by the device.
    pub(crate) desc: usize,
}

/// Buffers handed over to the engine, coming back.
#[derive(Debug, Default)]
pub(crate) struct Returned {
    list: Mutex<Vec<Bounce>>,
    /// Handed over and not yet back.
    parked: AtomicUsize,
}

impl Returned {
    /// Moves every returned buffer into `free`.
    pub(crate) fn drain_into(&self, free: &mut Vec<Bounce>) {
        if let Ok(mut l) = self.list.lock() {
            free.append(&mut l);
        }
    }

    pub(crate) fn parked(&self) -> usize {
        // Relaxed: a bound on parking, not a synchronization.
        self.parked.load(Relaxed)
    }
}

/// A packet in a bounce buffer, as the sink sees it.
#[derive(Debug)]
pub(crate) struct OfiIncoming<'a> {
    /// `None` once handed over.
    pub(crate) bounce: Option<Bounce>,
    /// Validated against the received length and `MAX_HEADER`.
    pub(crate) header_len: usize,
    /// Validated: `header_len + payload_len` is within the buffer.
    pub(crate) payload_len: usize,
    pub(crate) free: &'a mut Vec<Bounce>,
    pub(crate) returned: &'a Arc<Returned>,
    pub(crate) max_parked: usize,
}

impl OfiIncoming<'_> {
    fn slice(&self, start: usize, len: usize) -> &[u8] {
        self.bounce
            .as_ref()
            .and_then(|b| b.mem.get(start..start + len))
            .unwrap_or_default()
    }
}

impl Incoming for OfiIncoming<'_> {
    #[inline]
    fn header(&self) -> &[u8] {
        self.slice(0, self.header_len)
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        self.slice(self.header_len, self.payload_len)
    }

    /// A box around the receive buffer (or a copy, past the parking
    /// bound): the engine copies a small unexpected payload into its pool
    /// instead, and the buffer goes straight back to the device.
    #[inline]
    fn hand_over_allocates(&self) -> bool {
        true
    }

    fn into_payload(mut self) -> Result<Buf, Error> {
        let Some(bounce) = self.bounce.take() else {
            return Ok(Buf::new());
        };
        // Relaxed: see `Returned::parked`; the RMW keeps the bound exact.
        if self.returned.parked.fetch_add(1, Relaxed) < self.max_parked {
            let storage = BounceBuf {
                bounce: Some(bounce),
                offset: self.header_len,
                returned: Arc::clone(self.returned),
            };
            return Ok(Buf::from_storage_with_len(
                Box::new(storage),
                self.payload_len,
            ));
        }
        self.returned.parked.fetch_sub(1, Relaxed);
        let copy = Buf::copy_from(
            bounce
                .mem
                .get(self.header_len..self.header_len + self.payload_len)
                .unwrap_or_default(),
        );
        self.free.push(bounce);
        copy
    }
}

impl Drop for OfiIncoming<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.bounce.take() {
            self.free.push(b);
        }
    }
}

/// A bounce buffer handed to the engine: [`ByteStorage`] over the payload;
/// dropping it gives the buffer back to the device (or frees it, if the
/// device is gone).
#[derive(Debug)]
pub(crate) struct BounceBuf {
    bounce: Option<Bounce>,
    offset: usize,
    returned: Arc<Returned>,
}

impl ByteStorage for BounceBuf {
    fn bytes(&self) -> &[u8] {
        self.bounce
            .as_ref()
            .and_then(|b| b.mem.get(self.offset..))
            .unwrap_or_default()
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.bounce {
            Some(b) => b.mem.get_mut(self.offset..).unwrap_or_default(),
            None => &mut [],
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Drop for BounceBuf {
    fn drop(&mut self) {
        if let Some(b) = self.bounce.take() {
            if let Ok(mut l) = self.returned.list.lock() {
                l.push(b);
            }
            // Relaxed: see `Returned::parked`.
            self.returned.parked.fetch_sub(1, Relaxed);
        }
    }
}

/// An arrival waiting for an earlier one from the same peer.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) from: Rank,
    pub(crate) seq: u16,
    pub(crate) bounce: Bounce,
    pub(crate) header_len: usize,
    pub(crate) payload_len: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_within_48_bits() {
        for (r, s, h) in [(0, 0, 0), (5, 65535, 64), ((1 << 24) - 1, 7, 33)] {
            let t = tag(r, s, h);
            assert_eq!(t & !TAG_MASK, 0);
            assert_eq!(t & HELLO, 0);
            assert_eq!(untag(t), (r as u32, s, h));
        }
    }
}
