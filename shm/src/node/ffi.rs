//! Raw access to a node-collective region: the node module's only
//! `unsafe` code.
//!
//! # Layout
//! One page-aligned mapping per region, for `m` members and slots of `s`
//! bytes (a multiple of 64):
//! - line 0: the header (magic, members, slot size);
//! - lines `1 ..= m`: member `i`'s words: `arrive`, `done` and the two
//!   `meta` words (one per parity), then [`INLINE`] bytes per parity for
//!   chunks that small. Only member `i` writes its line, so one 64-byte
//!   line each keeps members from sharing a line they write, and a reader
//!   fetches one line per member: for a chunk of at most `INLINE` bytes
//!   (an 8-byte broadcast or allreduce) the data comes with the counter,
//!   without a second line;
//! - then two slots per member, `2i + p` for parity `p`, for larger chunks.
//!
//! # Invariants
//! - **Bounds.** A [`Region`] is built only over a mapping at least
//!   [`Region::bytes`] long (checked in `over`), and every index is checked
//!   against `members` and the slot size here, so every pointer stays
//!   inside the mapping.
//! - **Alignment.** The mapping is page-aligned; counters sit on 64-byte
//!   lines, slots on 64-byte boundaries.
//! - **Shared mutation.** Counters are atomics. Slot bytes are plain: by
//!   the protocol (`node/mod.rs`) member `i` writes slot `(i, p)` only after
//!   every member's `done` reached the slot's previous use, and others read
//!   it only between seeing `arrive[i]` reach the current use (Acquire) and
//!   publishing their own `done` (Release), so no write overlaps a read.
//!   A process that breaks the protocol (it shares the file: same user,
//!   mode 0600) can change bytes under a reader, as for any shared mapping;
//!   readers take lengths only from their own arguments, never from the
//!   region, so they cannot index out of bounds.
//! - **Lifetime.** Views borrow the `Region`, which owns the mapping.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapRaw;

const MAGIC: u64 = u64::from_le_bytes(*b"ferrync1");
const LINE: usize = 64;
/// Bytes of a member's line after its four words, per parity.
const INLINE: usize = 16;
/// Where the inline bytes start in a member's line.
const INLINE_AT: usize = 32;

/// A mapped region; see the module docs.
#[derive(Debug)]
pub(crate) struct Region {
    map: MmapRaw,
    members: usize,
    slot: usize,
}

impl Region {
    /// Bytes a region of `members` members with `slot`-byte slots takes.
    pub(crate) fn bytes(members: usize, slot: usize) -> Option<usize> {
        let flags = LINE.checked_mul(members.checked_add(1)?)?;
        flags.checked_add(slot.checked_mul(members.checked_mul(2)?)?)
    }

    /// Creates the region in `file` (sized here) and writes its header.
    pub(crate) fn create(file: &File, members: usize, slot: usize) -> io::Result<Region> {
        let len = Self::bytes(members, slot).ok_or_else(|| io::Error::other("region too large"))?;
        file.set_len(len as u64)?;
        let r = Self::over(MmapRaw::map_raw(file)?, members, slot)?;
        r.word(1).store(members as u64, Ordering::Relaxed);
        r.word(2).store(slot as u64, Ordering::Relaxed);
        // Release: the geometry words before the magic; pairs with the
        // Acquire in `open`.
        r.word(0).store(MAGIC, Ordering::Release);
        Ok(r)
    }

    /// Maps a region another member created, checking its header.
    pub(crate) fn open(file: &File, members: usize, slot: usize) -> io::Result<Region> {
        let r = Self::over(MmapRaw::map_raw(file)?, members, slot)?;
        // Acquire: pairs with the Release in `create`.
        let ok = r.word(0).load(Ordering::Acquire) == MAGIC
            && r.word(1).load(Ordering::Relaxed) == members as u64
            && r.word(2).load(Ordering::Relaxed) == slot as u64;
        if !ok {
            return Err(io::Error::other("node region header does not match"));
        }
        Ok(r)
    }

    fn over(map: MmapRaw, members: usize, slot: usize) -> io::Result<Region> {
        let need =
            Self::bytes(members, slot).ok_or_else(|| io::Error::other("region too large"))?;
        if map.len() < need || map.as_ptr() as usize % 4096 != 0 || slot % LINE != 0 {
            return Err(io::Error::other(
                "node region mapping too short or misaligned",
            ));
        }
        Ok(Region { map, members, slot })
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < 3);
        // SAFETY: the header's three words lie in line 0, inside the
        // mapping (`over` checked its length) and 8-byte aligned (the base
        // is page-aligned); atomics make concurrent access by other
        // processes race-free; the reference borrows `self`, which owns the
        // mapping.
        unsafe { &*self.map.as_ptr().add(i * 8).cast::<AtomicU64>() }
    }

    /// Word `word` of member `i`'s line.
    fn counter(&self, i: usize, word: usize) -> &AtomicU64 {
        assert!(i < self.members && word < 4);
        // SAFETY: member `i`'s line (asserted in range) is inside the
        // mapping (`over` checked its length), and `word` keeps the
        // address 8-byte aligned within it; see `word` for the rest.
        unsafe {
            &*self
                .map
                .as_ptr()
                .add((1 + i) * LINE + word * 8)
                .cast::<AtomicU64>()
        }
    }

    /// Member `i`'s `arrive` counter.
    pub(crate) fn arrive(&self, i: usize) -> &AtomicU64 {
        self.counter(i, 0)
    }

    /// Member `i`'s `done` counter.
    pub(crate) fn done(&self, i: usize) -> &AtomicU64 {
        self.counter(i, 1)
    }

    /// Member `i`'s `meta` word of parity `p`: the length of the operation
    /// it publishes there, so that members that disagree on it find out.
    pub(crate) fn meta(&self, i: usize, parity: usize) -> &AtomicU64 {
        assert!(parity < 2);
        self.counter(i, 2 + parity)
    }

    fn slot_ptr(&self, i: usize, parity: usize, len: usize) -> *mut u8 {
        assert!(i < self.members && parity < 2 && len <= self.slot);
        // Writer and readers agree on `len` (the meta word is checked
        // first), so they agree on where the chunk lives.
        let off = if len <= INLINE {
            (1 + i) * LINE + INLINE_AT + parity * INLINE
        } else {
            LINE * (self.members + 1) + (2 * i + parity) * self.slot
        };
        // SAFETY: `off + len` is within the mapping: the index checks above
        // and `bytes` (checked in `over`); an inline chunk ends at most at
        // `INLINE_AT + 2 * INLINE == LINE`, inside member `i`'s line, past
        // its four counter words.
        unsafe { self.map.as_mut_ptr().add(off) }
    }

    /// Fills the first `src.len()` bytes of member `me`'s slot `parity`.
    /// The caller is member `me` and, by the protocol, no one reads the
    /// slot meanwhile (see the module docs).
    pub(crate) fn write_slot(&self, me: usize, parity: usize, src: &[u8]) {
        let dst = self.slot_ptr(me, parity, src.len());
        // SAFETY: `dst` is valid for `src.len()` bytes (`slot_ptr`); the
        // slot is in a mapping `src` cannot overlap (it is caller memory or
        // another member's slot, whose parity or owner differs); by the
        // protocol no one reads or writes these bytes during the copy.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }

    /// The first `len` bytes of member `i`'s slot `parity`, to read while
    /// the protocol says its owner leaves it alone.
    pub(crate) fn slot(&self, i: usize, parity: usize, len: usize) -> &[u8] {
        let p = self.slot_ptr(i, parity, len);
        // SAFETY: valid for `len` bytes (`slot_ptr`), borrowed with `self`;
        // by the protocol nobody writes them while this view is used (see
        // the module docs).
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

// The inline bytes fill the rest of a member's line, after its counters.
const _: () = assert!(INLINE_AT == 4 * 8 && INLINE_AT + 2 * INLINE == LINE);
