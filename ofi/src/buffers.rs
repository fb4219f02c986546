//! The device's eager buffers: [`SendBufs`] (the inject scratch and the
//! registered send buffers) and [`RecvBufs`] (the posted receive slots,
//! the spare and returned buffers, and the arrivals held for ordering).
//! Both only keep the books; posting them is the device's (`ffi::post`),
//! and making a buffer is [`Registrations::new_bounce`](crate::rma::Registrations::new_bounce)'s.

use std::sync::Arc;

use ferry_core::Rank;

use crate::eager::{Bounce, Held, OfiIncoming, Returned};

/// The send side: `fi_tinject`'s scratch, and send buffers by slot.
#[derive(Debug)]
pub(crate) struct SendBufs {
    /// Packets up to this many bytes go by `fi_tinject`.
    inject_size: usize,
    /// Where an injected packet is put together (`inject_size` bytes).
    scratch: Vec<u8>,
    /// Send buffers by slot; never shrinks once setup made them.
    bufs: Vec<Bounce>,
    /// The free slots.
    free: Vec<usize>,
    /// Each busy slot's peer (for its error completion).
    peer: Vec<Rank>,
}

impl SendBufs {
    /// `count` send slots (buffers added by [`SendBufs::add`]).
    pub(crate) fn new(inject_size: usize, count: usize) -> SendBufs {
        SendBufs {
            inject_size,
            scratch: vec![0; inject_size],
            bufs: Vec::with_capacity(count),
            free: (0..count).rev().collect(),
            peer: vec![0; count],
        }
    }

    /// Adds the next slot's buffer (setup).
    pub(crate) fn add(&mut self, b: Bounce) {
        self.bufs.push(b);
    }

    /// `header ++ payload` in the inject scratch, if it fits there.
    #[inline]
    pub(crate) fn inject(&mut self, header: &[u8], payload: &[u8]) -> Option<&[u8]> {
        let (h, total) = (header.len(), header.len() + payload.len());
        if total > self.inject_size {
            return None;
        }
        self.scratch[..h].copy_from_slice(header);
        self.scratch[h..total].copy_from_slice(payload);
        Some(&self.scratch[..total])
    }

    /// A free slot, if any.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<usize> {
        self.free.pop()
    }

    /// Slot `i` is free again (not posted, or its completion read).
    #[inline]
    pub(crate) fn give_back(&mut self, i: usize) {
        self.free.push(i);
    }

    /// Copies `header ++ payload` into slot `slot` (taken off the free
    /// list); returns the length.
    #[inline]
    pub(crate) fn fill(&mut self, slot: usize, header: &[u8], payload: &[u8]) -> usize {
        let (h, total) = (header.len(), header.len() + payload.len());
        let b = &mut self.bufs[slot];
        b.mem[..h].copy_from_slice(header);
        b.mem[h..total].copy_from_slice(payload);
        total
    }

    /// Slot `slot`'s send to `peer` was posted.
    #[inline]
    pub(crate) fn posted(&mut self, slot: usize, peer: Rank) {
        self.peer[slot] = peer;
    }

    /// The peer of busy slot `i`.
    pub(crate) fn peer(&self, i: usize) -> Rank {
        self.peer[i]
    }

    /// Slot `i`'s buffer.
    #[inline]
    pub(crate) fn buf(&self, i: usize) -> Option<&Bounce> {
        self.bufs.get(i)
    }

    /// Free slots right now.
    pub(crate) fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Whether a send is still in flight.
    pub(crate) fn in_flight(&self) -> bool {
        self.free.len() < self.bufs.len()
    }

    /// Every slot's buffer (tests).
    #[cfg(test)]
    pub(crate) fn bufs(&self) -> &[Bounce] {
        &self.bufs
    }
}

/// The receive side: receive buffers posted by slot, spare ones, those
/// handed to the engine, and arrivals waiting for an earlier one.
#[derive(Debug)]
pub(crate) struct RecvBufs {
    /// Posted receive buffers by slot (`None`: not posted).
    slots: Vec<Option<Bounce>>,
    /// The slots without a buffer.
    empty: Vec<usize>,
    /// Buffers ready to post.
    free: Vec<Bounce>,
    /// Buffers handed to the engine, and those coming back.
    returned: Arc<Returned>,
    /// Arrivals waiting for an earlier one from the same peer; each sits
    /// in a buffer taken off its slot, so there are at most `slots` of them.
    held: Vec<Held>,
    /// Buffers made so far, at most `max_buffers`.
    allocated: usize,
    max_buffers: usize,
    /// Buffers handed to the engine at most at a time (then it copies).
    max_parked: usize,
    /// Each buffer's size: `MAX_HEADER` plus the eager size.
    buf_size: usize,
}

impl RecvBufs {
    /// `recv` receive slots of `buf_size`-byte buffers, at most
    /// `max_parked` of them handed over at a time.
    pub(crate) fn new(recv: usize, max_parked: usize, buf_size: usize) -> RecvBufs {
        let max_buffers = recv + max_parked + recv;
        RecvBufs {
            slots: (0..recv).map(|_| None).collect(),
            empty: (0..recv).rev().collect(),
            // Room for every buffer the device may make: returning one to
            // this list must never allocate.
            free: Vec::with_capacity(max_buffers),
            returned: Arc::new(Returned::default()),
            held: Vec::with_capacity(recv),
            allocated: 0,
            max_buffers,
            max_parked,
            buf_size,
        }
    }

    /// Each buffer's size.
    pub(crate) fn buf_size(&self) -> usize {
        self.buf_size
    }

    /// A spare or returned buffer, if any.
    pub(crate) fn reuse(&mut self) -> Option<Bounce> {
        if self.free.is_empty() {
            self.returned.drain_into(&mut self.free);
        }
        self.free.pop()
    }

    /// Whether the cap allows another buffer.
    pub(crate) fn may_allocate(&self) -> bool {
        self.allocated < self.max_buffers
    }

    /// Counts a buffer made for the pool.
    pub(crate) fn allocated_one(&mut self) {
        self.allocated += 1;
    }

    /// A buffer is spare again.
    #[inline]
    pub(crate) fn recycle(&mut self, b: Bounce) {
        self.free.push(b);
    }

    /// The empty slot to post next, if any.
    #[inline]
    pub(crate) fn next_empty(&self) -> Option<usize> {
        self.empty.last().copied()
    }

    /// Whether a slot has no buffer posted.
    #[inline]
    pub(crate) fn has_empty(&self) -> bool {
        !self.empty.is_empty()
    }

    /// Whether no slot has a buffer posted.
    pub(crate) fn none_posted(&self) -> bool {
        self.empty.len() == self.slots.len()
    }

    /// Whether slot `i` exists and has no buffer.
    pub(crate) fn is_empty_slot(&self, i: usize) -> bool {
        matches!(self.slots.get(i), Some(None))
    }

    /// `b` was posted in empty slot `i` (the one [`RecvBufs::next_empty`]
    /// named).
    pub(crate) fn posted(&mut self, i: usize, b: Bounce) {
        self.slots[i] = Some(b);
        if self.empty.last() == Some(&i) {
            self.empty.pop();
        } else {
            self.empty.retain(|&j| j != i);
        }
    }

    /// Takes slot `i`'s buffer after its completion; the slot is empty.
    #[inline]
    pub(crate) fn take_posted(&mut self, i: usize) -> Option<Bounce> {
        let b = self.slots.get_mut(i).and_then(Option::take)?;
        self.empty.push(i);
        Some(b)
    }

    /// Keeps an arrival until the ones before it from its peer arrive.
    pub(crate) fn hold(&mut self, h: Held) {
        self.held.push(h);
    }

    /// The held arrival from `from` with sequence number `seq`, if any.
    #[inline]
    pub(crate) fn take_held(&mut self, from: Rank, seq: u16) -> Option<Held> {
        if self.held.is_empty() {
            return None;
        }
        let pos = self
            .held
            .iter()
            .position(|h| h.from == from && h.seq == seq)?;
        Some(self.held.swap_remove(pos))
    }

    /// Drops what is held from a failed `peer`.
    pub(crate) fn drop_held_from(&mut self, peer: Rank) {
        self.held.retain(|h| h.from != peer);
    }

    /// The packet in `bounce`, as the sink sees it.
    #[inline]
    pub(crate) fn incoming(
        &mut self,
        bounce: Bounce,
        header_len: usize,
        payload_len: usize,
    ) -> OfiIncoming<'_> {
        OfiIncoming {
            bounce: Some(bounce),
            header_len,
            payload_len,
            free: &mut self.free,
            returned: &self.returned,
            max_parked: self.max_parked,
        }
    }

    /// Buffers handed to the engine and not yet returned.
    pub(crate) fn parked(&self) -> usize {
        self.returned.parked()
    }

    /// Posted buffers (tests).
    #[cfg(test)]
    pub(crate) fn posted_bufs(&self) -> impl Iterator<Item = &Bounce> {
        self.slots.iter().flatten()
    }

    /// `(held, empty, free, allocated, parked)` (diagnostics).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize, usize, usize, usize) {
        (
            self.held.len(),
            self.empty.len(),
            self.free.len(),
            self.allocated,
            self.parked(),
        )
    }
}
