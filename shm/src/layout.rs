//! The segment's layout: `#[repr(C)]` structures made only of atomics (so
//! that other processes may write them while we hold references), offsets
//! instead of pointers, and the geometry arithmetic, all checked.
//!
//! ```text
//! offset 0            SegmentHeader (128 B): magic, version, geometry, layout fingerprint
//! RANKS_OFFSET        RankBlock × N (2944 B each): receive queue, free queue,
//!                     sleeping flag, pid/CMA/parking info, registration table
//! cells_off (page)    cell × (N × cells_per_rank), `stride` bytes each:
//!                     [link: u32][pad: 12 B][body: see crate::cell]
//! fb_off (page)       fastbox ring × N² (only if fb_slots > 0), ring
//!                     (src → dst) at index dst·N + src: fb_slots slots of
//!                     fb_size bytes, [control word: u64][data: see crate::fastbox]
//! ```
//! Cell `i` belongs to rank `i / cells_per_rank`. Queue nodes are named by
//! `u32` index: cells are `0..ncells`; rank `r`'s receive-queue stub is
//! `ncells + 2r` and its free-queue stub `ncells + 2r + 1` (the stubs' links
//! live in the rank block).

use std::mem::{align_of, offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64};

use crossbeam_utils::CachePadded;

use crate::cell;

/// "FERRYSHM", little-endian.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"FERRYSHM");
/// Bumped on any incompatible layout change.
pub(crate) const VERSION: u32 = 2;
/// Published registrations per rank (rendezvous keys a peer can check).
pub(crate) const REG_SLOTS: usize = 64;
/// Offset of a cell's queue link.
pub(crate) const CELL_LINK: usize = 0;
/// Offset of a cell's body (after the link and padding that keeps the
/// payload 16-byte aligned).
pub(crate) const CELL_BODY: usize = 16;
/// Offset of a cell's payload.
pub(crate) const CELL_PAYLOAD: usize = CELL_BODY + cell::PAYLOAD_OFFSET;
/// Cells start on this boundary.
pub(crate) const CELL_ALIGN: usize = 64;
/// The cell area starts on a page.
pub(crate) const PAGE: usize = 4096;
/// Where the rank blocks start.
pub(crate) const RANKS_OFFSET: usize = size_of::<SegmentHeader>();

/// The segment header at offset 0. The creator writes every field, then
/// `magic` last (Release); a mapper checks `magic` (Acquire) first.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct SegmentHeader {
    pub(crate) magic: AtomicU64,
    pub(crate) version: AtomicU32,
    pub(crate) nranks: AtomicU32,
    pub(crate) cell_payload: AtomicU32,
    pub(crate) cells_per_rank: AtomicU32,
    /// [`FINGERPRINT`]: refuses a binary with another layout.
    pub(crate) fingerprint: AtomicU64,
    pub(crate) total_len: AtomicU64,
    /// Slots per fastbox ring (0: no fastboxes).
    pub(crate) fb_slots: AtomicU32,
    /// Bytes per fastbox slot.
    pub(crate) fb_slot_size: AtomicU32,
    _reserved: [AtomicU64; 10],
}

/// The producers' line of a receive queue: `tail`, and the consumer's
/// `sleeping` flag next to it, so the producer's flag check after its
/// exchange hits a line it already owns.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct TailLine {
    pub(crate) tail: AtomicU32,
    pub(crate) sleeping: AtomicU32,
}

/// A rank's identity and state others may read.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct RankInfo {
    pub(crate) pid: AtomicU32,
    pub(crate) job_rank: AtomicU32,
    /// 0: not yet probed; 1: CMA reads of every peer worked; 2: they did not
    /// (or CMA is disabled).
    pub(crate) cma_ok: AtomicU32,
    /// Set (Release) once the rank has mapped the segment and bound its
    /// wake socket.
    pub(crate) attached: AtomicU32,
    /// This rank's cells that receivers hold as ARecv buffers right now.
    pub(crate) parked: AtomicU32,
    /// Wake-up datagrams sent to this rank (each signalling producer
    /// increments it after its `sendto`), so the rank drains its socket only
    /// when there is something to drain.
    pub(crate) signals: AtomicU32,
    _reserved2: AtomicU64,
}

/// A published registration: what a `RemoteKey` may name. `secret` is 0
/// when the slot is free; the owner writes the other fields before the
/// secret (Release) and clears the secret before reusing them.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct RegSlot {
    pub(crate) secret: AtomicU64,
    pub(crate) addr: AtomicU64,
    pub(crate) len: AtomicU64,
    pub(crate) access: AtomicU64,
}

/// Everything one rank owns in the segment besides its cells.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct RankBlock {
    pub(crate) recv: CachePadded<TailLine>,
    pub(crate) recv_head: CachePadded<AtomicU32>,
    pub(crate) recv_stub: CachePadded<AtomicU32>,
    pub(crate) free_tail: CachePadded<AtomicU32>,
    pub(crate) free_head: CachePadded<AtomicU32>,
    pub(crate) free_stub: CachePadded<AtomicU32>,
    pub(crate) info: CachePadded<RankInfo>,
    pub(crate) regs: [RegSlot; REG_SLOTS],
}

// Compile-time layout checks: the sizes the formula documents, and the
// alignments the offsets rely on.
const _: () = {
    assert!(size_of::<SegmentHeader>() == 128);
    assert!(align_of::<SegmentHeader>() == 8);
    assert!(size_of::<TailLine>() == 8);
    assert!(size_of::<RankInfo>() == 32);
    assert!(size_of::<RegSlot>() == 32);
    assert!(align_of::<CachePadded<AtomicU32>>() >= 64);
    assert!(size_of::<RankBlock>() % align_of::<RankBlock>() == 0);
    assert!(RANKS_OFFSET % align_of::<RankBlock>() == 0);
    assert!(PAGE % align_of::<RankBlock>() == 0);
    assert!(CELL_ALIGN % align_of::<AtomicU32>() == 0);
    assert!(CELL_LINK + size_of::<AtomicU32>() <= CELL_BODY);
    assert!(CELL_PAYLOAD % 16 == 0);
};

const fn mix(h: u64, v: usize) -> u64 {
    (h ^ v as u64).wrapping_mul(0x0000_0100_0000_01B3)
}

/// A hash of every size and offset the layout depends on: two binaries with
/// different layouts (another `CachePadded` width, another version) refuse
/// each other's segment instead of misreading it.
pub(crate) const FINGERPRINT: u64 = {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    h = mix(h, VERSION as usize);
    h = mix(h, size_of::<SegmentHeader>());
    h = mix(h, size_of::<RankBlock>());
    h = mix(h, align_of::<RankBlock>());
    h = mix(h, offset_of!(RankBlock, recv_head));
    h = mix(h, offset_of!(RankBlock, free_tail));
    h = mix(h, offset_of!(RankBlock, info));
    h = mix(h, offset_of!(RankBlock, regs));
    h = mix(h, REG_SLOTS);
    h = mix(h, CELL_BODY);
    h = mix(h, CELL_PAYLOAD);
    h = mix(h, CELL_ALIGN);
    h = mix(h, offset_of!(SegmentHeader, fb_slots));
    h = mix(h, crate::fastbox::CTRL_LEN);
    h = mix(h, crate::fastbox::FORMAT as usize);
    h
};

const fn round_up(v: usize, to: usize) -> Option<usize> {
    match v.checked_add(to - 1) {
        Some(x) => Some(x / to * to),
        None => None,
    }
}

/// Where everything is, for a given rank count and cell geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) nranks: u32,
    pub(crate) payload: usize,
    pub(crate) cells_per_rank: u32,
    pub(crate) ncells: u32,
    /// Bytes per cell.
    pub(crate) stride: usize,
    pub(crate) cells_off: usize,
    /// Slots per fastbox ring (0: fastboxes off).
    pub(crate) fb_slots: u32,
    /// Bytes per fastbox slot (a multiple of [`CELL_ALIGN`]).
    pub(crate) fb_size: usize,
    /// Where the fastbox rings start (page-aligned; `total` when off).
    pub(crate) fb_off: usize,
    /// Segment length.
    pub(crate) total: usize,
}

impl Geometry {
    /// The geometry, or `None` if it overflows or the node indices would not
    /// fit in a `u32` below the null index. `fb_slots` = 0 means no
    /// fastboxes (`fb_size` is then ignored); otherwise `fb_size` must be a
    /// multiple of [`CELL_ALIGN`] accepted by [`crate::fastbox::slot_size_ok`].
    pub(crate) fn new(
        nranks: usize,
        payload: usize,
        cells_per_rank: usize,
        fb_slots: usize,
        fb_size: usize,
    ) -> Option<Geometry> {
        if nranks == 0 || cells_per_rank == 0 || payload > u32::MAX as usize / 2 {
            return None;
        }
        let (fb_slots, fb_size) = if fb_slots == 0 {
            (0, 0)
        } else {
            if !crate::fastbox::slot_size_ok(fb_size) || fb_slots > crate::fastbox::MAX_SLOTS {
                return None;
            }
            (fb_slots, fb_size)
        };
        let ncells = nranks.checked_mul(cells_per_rank)?;
        let nodes = ncells.checked_add(nranks.checked_mul(2)?)?;
        if nodes >= crate::queue::NIL as usize {
            return None;
        }
        let stride = round_up(CELL_PAYLOAD.checked_add(payload)?, CELL_ALIGN)?;
        let blocks = nranks.checked_mul(size_of::<RankBlock>())?;
        let cells_off = round_up(RANKS_OFFSET.checked_add(blocks)?, PAGE)?;
        let fb_off = round_up(cells_off.checked_add(ncells.checked_mul(stride)?)?, PAGE)?;
        let rings = nranks.checked_mul(nranks)?;
        let fb_bytes = rings.checked_mul(fb_slots)?.checked_mul(fb_size)?;
        let total = round_up(fb_off.checked_add(fb_bytes)?, PAGE)?;
        Some(Geometry {
            nranks: u32::try_from(nranks).ok()?,
            payload,
            cells_per_rank: u32::try_from(cells_per_rank).ok()?,
            ncells: u32::try_from(ncells).ok()?,
            stride,
            cells_off,
            fb_slots: u32::try_from(fb_slots).ok()?,
            fb_size,
            fb_off,
            total,
        })
    }

    /// The offset of rank `r`'s block (`r < nranks`).
    #[inline]
    pub(crate) fn rank_off(&self, r: u32) -> usize {
        RANKS_OFFSET + r as usize * size_of::<RankBlock>()
    }

    /// The offset of cell `c` (`c < ncells`).
    #[inline]
    pub(crate) fn cell_off(&self, c: u32) -> usize {
        self.cells_off + c as usize * self.stride
    }

    /// The rank whose pool holds cell `c`.
    #[inline]
    pub(crate) fn owner(&self, c: u32) -> u32 {
        c / self.cells_per_rank
    }

    /// Rank `r`'s cells.
    pub(crate) fn pool(&self, r: u32) -> std::ops::Range<u32> {
        r * self.cells_per_rank..(r + 1) * self.cells_per_rank
    }

    /// The stub node of rank `r`'s receive queue.
    #[inline]
    pub(crate) fn recv_stub(&self, r: u32) -> u32 {
        self.ncells + 2 * r
    }

    /// The stub node of rank `r`'s free queue.
    #[inline]
    pub(crate) fn free_stub(&self, r: u32) -> u32 {
        self.ncells + 2 * r + 1
    }

    /// The offset of slot `slot` of the fastbox ring from `src` to `dst`
    /// (all in range: `src, dst < nranks`, `slot < fb_slots`).
    #[inline]
    pub(crate) fn fb_slot_off(&self, src: u32, dst: u32, slot: u32) -> usize {
        let ring = dst as usize * self.nranks as usize + src as usize;
        self.fb_off + (ring * self.fb_slots as usize + slot as usize) * self.fb_size
    }

    /// Bytes of a cell body.
    pub(crate) fn body_len(&self) -> usize {
        cell::body_len(self.payload)
    }
}

/// The per-rank overhead in the formula (rank block).
pub(crate) const RANK_BLOCK_BYTES: usize = size_of::<RankBlock>();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_is_checked() {
        let g = Geometry::new(4, 1000, 8, 0, 0).unwrap();
        assert_eq!(g.ncells, 32);
        assert_eq!(g.stride % CELL_ALIGN, 0);
        assert!(g.stride >= CELL_PAYLOAD + 1000);
        assert_eq!(g.cells_off % PAGE, 0);
        assert!(g.cells_off >= RANKS_OFFSET + 4 * RANK_BLOCK_BYTES);
        assert_eq!(g.total % PAGE, 0);
        assert_eq!(g.owner(9), 1);
        assert_eq!(g.pool(2), 16..24);
        assert_eq!(g.recv_stub(1), 34);
        assert_eq!(g.free_stub(1), 35);
        assert_eq!(g.fb_off, g.total);
        assert!(Geometry::new(0, 1, 1, 0, 0).is_none());
        assert!(Geometry::new(1 << 20, 1 << 20, 1 << 20, 0, 0).is_none());
        assert!(Geometry::new(usize::MAX, 1, 1, 0, 0).is_none());
        assert!(Geometry::new(1, usize::MAX, 1, 0, 0).is_none());
        // Fastboxes: N² rings after the cells.
        let f = Geometry::new(4, 1000, 8, 16, 256).unwrap();
        assert_eq!(f.fb_off, g.total);
        assert_eq!(f.total, g.total + 16 * 16 * 256);
        assert_eq!(f.fb_slot_off(0, 0, 0), f.fb_off);
        assert_eq!(f.fb_slot_off(1, 0, 0), f.fb_off + 16 * 256);
        assert_eq!(f.fb_slot_off(0, 1, 2), f.fb_off + (4 * 16 + 2) * 256);
        assert_eq!(f.fb_slot_off(3, 3, 15) + 256, f.total);
        assert!(
            Geometry::new(4, 1000, 8, 16, 100).is_none(),
            "not a line multiple"
        );
        assert!(Geometry::new(4, 1000, 8, 1 << 30, 256).is_none());
    }
}
