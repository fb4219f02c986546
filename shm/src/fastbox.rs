//! Fastboxes: a ring of small inline slots per ordered pair of local ranks,
//! the short path for small packets (as Open MPI vader's fast boxes, UCX
//! sysv's per-pair rings and MPICH's fastboxes).
//!
//! # Why
//! The cell path costs 4–6 cross-core cache-line transfers per packet: the
//! sender pops a cell its receivers returned (the free queue's lines), writes
//! it, exchanges the receiver's queue tail and links the previous node, the
//! receiver pops it, and later pushes the cell back to its owner. A fastbox
//! packet costs the line(s) of one slot, written by the sender and read and
//! cleared by the receiver: nothing else is shared.
//!
//! # Slot layout
//! The ring from `src` to `dst` has `K` slots of `Z` bytes (`K` =
//! [`ShmOptions::fastbox_slots`](crate::ShmOptions), `Z` =
//! [`ShmOptions::fastbox_slot_size`](crate::ShmOptions)), each on a cache
//! line boundary:
//!
//! | slot offset | size | field |
//! |---|---|---|
//! | 0 | 8 | control word (atomic, see below); 0 = free |
//! | 8 | h | header bytes (h ≤ [`HEADER_CAP`]) |
//! | 8 + h | p | payload bytes (h + p ≤ Z − 8) |
//!
//! The control word carries everything else, so a receiver reads one atomic
//! and then only the bytes it delivers: bit 63 = full, bits 0–31 = the
//! packet's per-pair sequence number, bits 32–39 = header length, bits
//! 40–55 = payload length, bits 56–62 = 0. A small packet (an 8-byte
//! message with the engine's eager header) is one cache line.
//!
//! # Protocol
//! - **Sender** (the only writer of its rings): if the control word of its
//!   next slot is 0 (Acquire: the receiver is done with the bytes), it writes
//!   the bytes, then publishes the control word with an AcqRel exchange
//!   (`publish`), and moves to the next slot. A taken slot or a packet that
//!   does not fit sends the packet by cell instead: never `Busy` because of
//!   a fastbox.
//! - **Receiver** (the only reader): polls the next slot of every peer's ring
//!   (one load per peer per `progress`), delivers a full slot (Acquire), and
//!   frees consumed slots by clearing their control words (Release). The
//!   clear is deferred to the next poll that finds the ring idle (at the
//!   latest after 16 slots or half the ring, and always before sleeping):
//!   in a ping-pong the clear's cache-line transfer then overlaps the wait
//!   instead of delaying the reply. A consumed slot still looks full, so the
//!   receiver never reads a slot it has not freed: with every slot used it
//!   frees them before looking at the next.
//! - The sender, after publishing, loads the control word of its next slot
//!   (the line travels while it waits for a reply); a slot seen free stays
//!   free, so its next send skips the check.
//!
//! # Order across the two paths
//! The device contract wants per-pair FIFO order; fastbox packets and cells
//! travel separately. Every packet, cell or slot, carries a per-pair
//! sequence number, and the receiver delivers packet `s` of peer `p` only
//! when `s` is the next it expects from `p` ([`order`]):
//! - a **slot** ahead of the expected number waits: the packets before it are
//!   cells on their way (at most the peer's pool, `cells_per_rank`; a bigger
//!   gap is a protocol error);
//! - a **cell** ahead of the expected number means the packets before it went
//!   by fastbox. They were published before the cell was enqueued, and the
//!   cell's pop is an Acquire of that enqueue, so they are visible: the
//!   receiver delivers them from the ring first (at most `K` of them; a
//!   bigger gap, or a slot that is not there or not the expected one, is a
//!   protocol error).
//!
//! Everything read from a slot is checked ([`decode`], fuzzed by
//! `fuzz/fuzz_targets/shm_fastbox.rs`): a corrupted control word, length or
//! sequence number is [`PeerError::Protocol`] for that peer, whose packets
//! are dropped from then on (its sequence can no longer be trusted).
//!
//! # Sleeping
//! A fastbox publish must wake an armed receiver exactly as an enqueue does
//! (see the `queue` module). The receiver's `arm` raises its `sleeping` flag
//! (A1), then reads the next slot of every peer with a read-modify-write
//! (`probe`, `fetch_add(0)`, A2); the sender publishes with an exchange (P1)
//! and then loads the flag (P2). A2 and P1 are RMWs of the same word, so one
//! comes first in its modification order: if P1, A2 sees the full slot and
//! the receiver does not sleep; if A2, P1 reads A2's value (nobody else
//! writes a free slot), A2 (Release) synchronizes with P1 (Acquire), A1
//! happens before P2, and the sender sees the flag and signals. The same
//! argument as the cell queue's, without `SeqCst` (which loom does not
//! model): `loom_fastbox_no_lost_wakeup` checks it.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::sync::atomic::{AtomicU64, Ordering};

use ferry_core::device::{Incoming, Sink};
use ferry_core::{Buf, Error, PeerError, Rank};

use crate::device::ShmDevice;
use crate::ffi::{Ring, Segment};

/// Bytes of a slot's control word (the slot's data follows it).
pub const CTRL_LEN: usize = 8;
/// Room for a packet header in a slot.
pub const HEADER_CAP: usize = ferry_core::wire::MAX_HEADER;
/// Smallest slot size.
pub const MIN_SLOT: usize = 64;
/// Largest slot size (payload lengths fit the control word's 16 bits).
pub const MAX_SLOT: usize = 4096;
/// Most slots per ring.
pub const MAX_SLOTS: usize = 1 << 16;
/// Version of the control word's format (in the segment fingerprint).
pub(crate) const FORMAT: u32 = 1;

const FULL: u64 = 1 << 63;
/// A receiver frees consumed slots at the latest when this many (or half
/// the ring) are used.
pub(crate) const FREE_AT: u32 = 16;
const RESERVED: u64 = 0x7F << 56;

/// Whether `z` is a valid slot size: a multiple of 64 in
/// [`MIN_SLOT`]`..=`[`MAX_SLOT`].
pub const fn slot_size_ok(z: usize) -> bool {
    z >= MIN_SLOT && z <= MAX_SLOT && z % 64 == 0
}

/// A decoded slot: its sequence number and views into its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot<'a> {
    /// The packet's per-pair sequence number (judged by [`order`]).
    pub seq: u32,
    /// The packet header.
    pub header: &'a [u8],
    /// The packet payload.
    pub payload: &'a [u8],
}

/// Why a slot was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// The control word says the slot is free.
    #[error("fastbox slot is empty")]
    Empty,
    /// Reserved bits of the control word are set.
    #[error("fastbox control word has reserved bits set")]
    Reserved,
    /// The header length exceeds [`HEADER_CAP`].
    #[error("fastbox header length out of range")]
    HeaderTooLong,
    /// Header and payload do not fit the slot.
    #[error("fastbox packet longer than its slot")]
    TooLong,
}

impl SlotError {
    /// A static description, for [`PeerError::Protocol`].
    pub fn what(self) -> &'static str {
        match self {
            SlotError::Empty => "shm fastbox slot empty",
            SlotError::Reserved => "shm fastbox control word malformed",
            SlotError::HeaderTooLong => "shm fastbox header length out of range",
            SlotError::TooLong => "shm fastbox packet longer than its slot",
        }
    }
}

/// The sequence number in a control word.
#[inline]
pub fn seq_of(ctrl: u64) -> u32 {
    ctrl as u32
}

/// Decodes a slot: its control word (as loaded, once) and its data (the
/// slot's bytes after the control word). Lengths are checked against
/// `data` before anything is sliced.
///
/// # Errors
/// A [`SlotError`] naming what is out of range.
#[inline]
pub fn decode(ctrl: u64, data: &[u8]) -> Result<Slot<'_>, SlotError> {
    if ctrl & FULL == 0 {
        return Err(SlotError::Empty);
    }
    if ctrl & RESERVED != 0 {
        return Err(SlotError::Reserved);
    }
    let header_len = (ctrl >> 32) as usize & 0xFF;
    let payload_len = (ctrl >> 40) as usize & 0xFFFF;
    if header_len > HEADER_CAP {
        return Err(SlotError::HeaderTooLong);
    }
    if header_len + payload_len > data.len() {
        return Err(SlotError::TooLong);
    }
    Ok(Slot {
        seq: seq_of(ctrl),
        header: &data[..header_len],
        payload: &data[header_len..header_len + payload_len],
    })
}

/// Writes a packet into a slot's data and returns the control word that
/// publishes it.
///
/// # Errors
/// [`SlotError::HeaderTooLong`] or [`SlotError::TooLong`] if it does not fit
/// (nothing is written then).
#[inline]
pub fn encode(data: &mut [u8], seq: u32, header: &[u8], payload: &[u8]) -> Result<u64, SlotError> {
    let (h, p) = (header.len(), payload.len());
    if h > HEADER_CAP {
        return Err(SlotError::HeaderTooLong);
    }
    if h + p > data.len() || p > 0xFFFF {
        return Err(SlotError::TooLong);
    }
    ferry_core::buffer::copy_short(data, header);
    ferry_core::buffer::copy_short(&mut data[h..], payload);
    Ok(FULL | (p as u64) << 40 | (h as u64) << 32 | u64::from(seq))
}

/// Where a packet stands in its pair's sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// It is the next one: deliver it.
    Now,
    /// `gap` packets (1 ≤ gap ≤ the window) come before it.
    Later(u32),
    /// Behind, or too far ahead: the peer broke the protocol.
    Bad,
}

/// Judges sequence number `seq` against the `expected` one, allowing at
/// most `window` packets before it (wrapping arithmetic).
#[inline]
pub fn order(seq: u32, expected: u32, window: u32) -> Order {
    match seq.wrapping_sub(expected) {
        0 => Order::Now,
        gap if gap <= window => Order::Later(gap),
        _ => Order::Bad,
    }
}

/// An atomic control word: `std`'s in the segment, loom's in the models.
pub(crate) trait Word {
    fn load(&self, order: Ordering) -> u64;
    fn store(&self, value: u64, order: Ordering);
    fn swap(&self, value: u64, order: Ordering) -> u64;
    fn fetch_add(&self, value: u64, order: Ordering) -> u64;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            #[inline]
            fn load(&self, order: Ordering) -> u64 {
                <$t>::load(self, order)
            }
            #[inline]
            fn store(&self, value: u64, order: Ordering) {
                <$t>::store(self, value, order)
            }
            #[inline]
            fn swap(&self, value: u64, order: Ordering) -> u64 {
                <$t>::swap(self, value, order)
            }
            #[inline]
            fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
                <$t>::fetch_add(self, value, order)
            }
        }
    };
}
word!(AtomicU64);
#[cfg(loom)]
word!(loom::sync::atomic::AtomicU64);

/// Sender: whether the slot may be written.
#[inline]
pub(crate) fn is_free<W: Word>(ctrl: &W) -> bool {
    // Acquire: pairs with the receiver's Release clear in `release`, so its
    // reads of the old bytes happen before our writes of the new ones.
    ctrl.load(Acquire) == 0
}

/// Sender: publishes a written slot.
#[inline]
pub(crate) fn publish<W: Word>(ctrl: &W, word: u64) {
    // AcqRel RMW. Release: publishes the bytes (pairs with the Acquire in
    // `peek`). RMW with Acquire: the producer half (P1) of the Dekker pair,
    // see the module docs and `probe`.
    ctrl.swap(word, AcqRel);
}

/// Receiver: the slot's control word.
#[inline]
pub(crate) fn peek<W: Word>(ctrl: &W) -> u64 {
    // Acquire: pairs with the Release half of `publish`.
    ctrl.load(Acquire)
}

/// Receiver: frees a consumed slot.
#[inline]
pub(crate) fn release<W: Word>(ctrl: &W) {
    // Release: our reads of the bytes happen before the sender's next
    // writes (it loads with Acquire in `is_free`).
    ctrl.store(0, Release);
}

/// Armed receiver: reads the slot's control word as the consumer half (A2)
/// of the Dekker pair: an AcqRel RMW, so it reads the latest value in the
/// word's modification order (see the module docs).
#[inline]
pub(crate) fn probe<W: Word>(ctrl: &W) -> u64 {
    ctrl.fetch_add(0, AcqRel)
}

/// This process's sequencing state for one local peer (private memory).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Lane {
    /// Sequence number of the next packet to the peer.
    pub(crate) tx_seq: u32,
    /// Next slot of our ring to the peer.
    pub(crate) tx_slot: u32,
    /// Sequence number expected next from the peer.
    pub(crate) rx_seq: u32,
    /// Next slot of the peer's ring to us.
    pub(crate) rx_slot: u32,
    /// Slots before `rx_slot` consumed but not yet freed (see
    /// [`ShmDevice::fb_free`]).
    pub(crate) rx_used: u32,
    /// Our next slot to the peer is known to be free (checked ahead, after
    /// the last publish).
    pub(crate) tx_ready: bool,
    /// The peer broke the sequencing: its packets are dropped.
    pub(crate) poisoned: bool,
    /// Our ring to the peer and the peer's ring to us (`None` when
    /// fastboxes are off), found once at setup.
    pub(crate) tx_ring: Option<Ring>,
    pub(crate) rx_ring: Option<Ring>,
}

/// A packet in a fastbox slot, as the sink sees it. The slot is freed
/// later, by [`ShmDevice::fb_free`], once the sink is done with it.
#[derive(Debug)]
pub(crate) struct FbIncoming<'a> {
    header: &'a [u8],
    payload: &'a [u8],
}

impl Incoming for FbIncoming<'_> {
    #[inline]
    fn header(&self) -> &[u8] {
        self.header
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        self.payload
    }

    /// A copy: slots are small and must be freed at once.
    fn into_payload(self) -> Result<Buf, Error> {
        Buf::copy_from(self.payload)
    }

    #[inline]
    fn hand_over_allocates(&self) -> bool {
        true
    }
}

/// What [`ShmDevice::fb_next`] found.
enum Take {
    /// Delivered one packet.
    Took,
    /// The next slot is free.
    Empty,
    /// The next slot waits for cells sent before it.
    Wait,
    /// The peer broke the protocol.
    Bad(&'static str),
}

/// Whether no fastbox holds a packet this rank could deliver now: the armed
/// receiver's check (A2 of the Dekker pair, on every peer's next slot). A
/// slot waiting for earlier cells does not count: those cells are in the
/// receive queue, whose own check follows.
pub(crate) fn quiet(seg: &Segment, lanes: &[Lane], window: u32) -> bool {
    for lane in lanes {
        if lane.poisoned {
            continue;
        }
        let Some(ctrl) = lane.rx_ring.and_then(|r| seg.ring_ctrl(r, lane.rx_slot)) else {
            continue;
        };
        let word = probe(ctrl);
        if word != 0 && !matches!(order(seq_of(word), lane.rx_seq, window), Order::Later(_)) {
            return false;
        }
    }
    true
}

impl ShmDevice {
    /// Sends by fastbox to local peer `dest` if its next slot is free:
    /// `None` if not (the caller sends a cell), else whether `dest` sleeps
    /// and must be signalled. The caller checked that the packet fits.
    #[inline]
    pub(crate) fn fb_send(&mut self, dest: u32, header: &[u8], payload: &[u8]) -> Option<bool> {
        let lane = &mut self.lanes[dest as usize];
        let slot = lane.tx_slot;
        let (ctrl, data) = self.seg.ring_out(&mut self.consumer, lane.tx_ring?, slot)?;
        if !lane.tx_ready && !is_free(ctrl) {
            return None;
        }
        let word = encode(data, lane.tx_seq, header, payload).ok()?;
        publish(ctrl, word);
        lane.tx_seq = lane.tx_seq.wrapping_add(1);
        let next = if slot + 1 == self.fb_slots {
            0
        } else {
            slot + 1
        };
        lane.tx_slot = next;
        let sleeps = self.seg.take_sleeper(dest);
        // Look at the next slot now, off the next send's critical path: the
        // load brings its line here while we wait for a reply, and a slot
        // seen free stays free (only we fill it).
        lane.tx_ready = lane
            .tx_ring
            .and_then(|r| self.seg.ring_ctrl(r, next))
            .is_some_and(is_free);
        Some(sleeps)
    }

    /// Frees the slots consumed from local peer `p`'s ring (clears their
    /// control words). Deferred from delivery to the next poll that finds
    /// the ring idle (or to [`FREE_AT`] used slots, or to `arm`): in a
    /// ping-pong the clear's cache-line transfer then happens while we
    /// wait, not between a delivery and the reply.
    #[inline]
    pub(crate) fn fb_free(&mut self, p: u32) {
        let lane = &mut self.lanes[p as usize];
        let k = self.fb_slots;
        if k == 0 {
            return;
        }
        let first = (lane.rx_slot + k - lane.rx_used % k) % k;
        if let Some(ring) = lane.rx_ring {
            self.seg.fb_ctrl_run(ring, first, lane.rx_used, release);
        }
        lane.rx_used = 0;
    }

    /// Frees every consumed slot (before sleeping).
    pub(crate) fn fb_free_all(&mut self) {
        for p in 0..self.lanes.len() as u32 {
            if self.lanes[p as usize].rx_used > 0 {
                self.fb_free(p);
            }
        }
    }

    /// Delivers the next packet of local peer `p`'s ring to us if it is the
    /// one expected. The usual outcome of a poll (an empty slot) is decided
    /// inline: the delivery (`deliver_slot`) does not inline, and an idle
    /// poll would pay its frame. The slot's address is worked out once,
    /// here, for both the look and the delivery.
    #[inline(always)]
    fn fb_next<S: Sink>(&mut self, p: u32, sink: &mut S) -> Take {
        let used = self.lanes[p as usize].rx_used;
        if used != 0 && used == self.fb_slots {
            // Every slot is used, the next one too: free them first (the
            // next one is not new, it still holds what we consumed).
            self.fb_free(p);
        }
        let lane = &mut self.lanes[p as usize];
        let Some((ctrl, data)) = lane
            .rx_ring
            .and_then(|r| self.seg.ring_in(&self.consumer, r, lane.rx_slot))
        else {
            return Take::Empty;
        };
        let word = peek(ctrl);
        if word == 0 {
            return Take::Empty;
        }
        let rank = self.ranks[p as usize];
        let window = self.seg.geometry().cells_per_rank;
        deliver_slot(lane, rank, self.fb_slots, window, word, data, sink)
    }

    /// Delivers the fastbox packets that are next in their peer's sequence,
    /// at most `budget`. Returns how many, and whether the budget ran out.
    /// Polls every peer on a small node, else the active set and one quiet
    /// peer (see `active.rs`).
    pub(crate) fn fb_poll<S: Sink>(&mut self, sink: &mut S, budget: usize) -> (usize, bool) {
        let mut n = 0;
        if self.active.everyone() {
            for p in 0..self.lanes.len() as u32 {
                if self.fb_poll_peer(p, sink, budget, &mut n) {
                    return (n, true);
                }
            }
            return (n, false);
        }
        let mut peers = [0; crate::active::ACTIVE_MAX + 1];
        let count = self.active.round(self.calls, &mut peers);
        for &p in &peers[..count] {
            if self.fb_poll_peer(p, sink, budget, &mut n) {
                return (n, true);
            }
        }
        (n, false)
    }

    /// Delivers what local peer `p`'s ring holds, counting into `n`; true
    /// if the budget ran out.
    #[inline(always)]
    fn fb_poll_peer<S: Sink>(
        &mut self,
        p: u32,
        sink: &mut S,
        budget: usize,
        n: &mut usize,
    ) -> bool {
        let lane = &self.lanes[p as usize];
        // Our own ring needs no look when everything we sent ourselves has
        // been delivered (private knowledge) and nothing is to free.
        let idle_self = p == self.me && lane.tx_seq == lane.rx_seq && lane.rx_used == 0;
        if lane.poisoned || idle_self {
            return false;
        }
        let mut took = false;
        loop {
            if *n == budget {
                return true;
            }
            match self.fb_next(p, sink) {
                Take::Took => {
                    *n += 1;
                    if !took {
                        self.active.delivered(p, self.calls);
                    }
                    took = true;
                    if self.lanes[p as usize].rx_used >= self.fb_free_at {
                        self.fb_free(p);
                    }
                    if sink.satisfied() {
                        // Stop here, as if out of budget: a blocking
                        // receive got its message and returns.
                        return true;
                    }
                }
                Take::Empty | Take::Wait => {
                    // Not right after a delivery: the engine is likely to
                    // answer it first.
                    if !took && self.lanes[p as usize].rx_used > 0 {
                        self.fb_free(p);
                    }
                    return false;
                }
                Take::Bad(what) => {
                    self.poison(p, what);
                    return false;
                }
            }
        }
    }

    /// A cell with sequence number `seq` arrived from local peer `p`:
    /// delivers the fastbox packets `p` sent before it. Returns whether the
    /// cell may be delivered now (else `p` is poisoned), and how many
    /// packets were delivered.
    pub(crate) fn fb_catch_up<S: Sink>(&mut self, p: u32, seq: u32, sink: &mut S) -> (bool, usize) {
        let lane = self.lanes[p as usize];
        if lane.poisoned {
            return (false, 0);
        }
        match order(seq, lane.rx_seq, self.fb_slots) {
            Order::Now => return (true, 0),
            Order::Bad => {
                self.poison(p, "shm cell out of sequence");
                return (false, 0);
            }
            Order::Later(_) => {}
        }
        let mut n = 0;
        while self.lanes[p as usize].rx_seq != seq {
            match self.fb_next(p, sink) {
                Take::Took => n += 1,
                Take::Bad(what) => {
                    self.poison(p, what);
                    return (false, n);
                }
                Take::Empty | Take::Wait => {
                    self.poison(p, "shm fastbox packet missing before a cell");
                    return (false, n);
                }
            }
        }
        (true, n)
    }

    /// Local peer `p` broke the protocol: drop its packets from now on and
    /// report it.
    #[cold]
    pub(crate) fn poison(&mut self, p: u32, what: &'static str) {
        let rank = self.ranks[p as usize];
        tracing::warn!(rank = self.rank, from = rank, what, "bad shm packet");
        self.lanes[p as usize].poisoned = true;
        self.fail(p, PeerError::Protocol { rank, what }.into());
    }
}

/// [`ShmDevice::fb_next`]'s delivery of a full slot (control word `word`,
/// bytes `data`) from the peer whose lane is `lane`: decoded, checked
/// against the lane's sequence, and handed to `sink` if it is next.
#[inline(never)]
fn deliver_slot<S: Sink>(
    lane: &mut Lane,
    rank: Rank,
    fb_slots: u32,
    window: u32,
    word: u64,
    data: &[u8],
    sink: &mut S,
) -> Take {
    match decode(word, data) {
        Ok(s) => match order(s.seq, lane.rx_seq, window) {
            Order::Now => {
                lane.rx_seq = lane.rx_seq.wrapping_add(1);
                lane.rx_slot = if lane.rx_slot + 1 == fb_slots {
                    0
                } else {
                    lane.rx_slot + 1
                };
                lane.rx_used += 1;
                sink.packet(
                    rank,
                    FbIncoming {
                        header: s.header,
                        payload: s.payload,
                    },
                );
                Take::Took
            }
            Order::Later(_) => Take::Wait,
            Order::Bad => Take::Bad("shm fastbox packet out of sequence"),
        },
        Err(e) => Take::Bad(e.what()),
    }
}

#[cfg(test)]
mod tests;
