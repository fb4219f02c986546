//! Raw access to the shared mapping: the crate's only `unsafe` code.
//!
//! # Invariants
//! - **Bounds.** A [`Segment`] is built only over a mapping at least
//!   [`Geometry::total`] bytes long and page-aligned ([`Segment::new`]). Every
//!   pointer is `base + offset` with an offset computed by [`Geometry`] from
//!   an index checked against it here (ranks `< nranks`, nodes
//!   `< ncells + 2·nranks`, cells `< ncells`), so it stays inside the mapping.
//! - **Alignment.** The base is page-aligned; rank blocks start at
//!   [`RANKS_OFFSET`] + a multiple of their size, which is a multiple of
//!   their alignment; cells start on [`CELL_ALIGN`] boundaries, and a cell's
//!   link is its first word (asserted at compile time in `layout`).
//! - **Shared mutation.** The structures we hand out references to
//!   (`SegmentHeader`, `RankBlock`, links) consist only of atomics (and
//!   `CachePadded` padding), so other processes writing them concurrently is
//!   not a data race.
//! - **Cell bodies** are plain bytes. A body is only ever viewed through an
//!   [`OwnedCell`], a token this module mints once per handover (from the
//!   rank's initial pool, or from a queue pop, whose Acquire makes the
//!   sender's writes visible) and consumes when the cell is pushed on, so in
//!   this process at most one view of a body exists at a time, and by the
//!   queue protocol no other process writes it meanwhile. A process that
//!   breaks the protocol (it shares the segment: same user, mode 0600) can
//!   change bytes under a reader, as with any shared mapping (see memmap2's
//!   docs); readers therefore take every length once and validate it
//!   ([`crate::cell::decode`]), so they never index out of bounds.
//! - **Fastbox slots** (see [`crate::fastbox`]) are plain bytes behind an
//!   atomic control word. The [`Consumer`] of rank `r` is also the right to
//!   write the slots of the rings *from* `r` and to read those of the rings
//!   *to* `r`: the writable view ([`Segment::ring_out`]) needs the
//!   `&mut Consumer`, the readable one ([`Segment::ring_in`]) a `&Consumer`,
//!   so in this process the two never coexist (even on the ring from `r` to
//!   itself). By the protocol the sender writes a slot only while its
//!   control word is 0 and the receiver reads it only while it is not, so
//!   no other process writes the bytes we read or reads those we write;
//!   a process that breaks the protocol can change bytes under us, as for
//!   cells, and every length is again taken once and validated
//!   ([`crate::fastbox::decode`]).
//! - **Lifetime.** The mapping lives as long as the [`Segment`]; references
//!   borrow the `Segment`, and ARecv buffers hold an `Arc<Segment>`.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use memmap2::MmapRaw;

use crate::fastbox::CTRL_LEN;
use crate::layout::{
    Geometry, RankBlock, SegmentHeader, CELL_ALIGN, CELL_BODY, CELL_LINK, PAGE, RANKS_OFFSET,
};
use crate::queue::{claim_sleeper, Arena, Corrupt, Pop, Queue};

/// The header of a mapping whose geometry is not yet known (a mapper reads
/// it to learn the geometry). `None` if the mapping is too short or not
/// page-aligned.
pub(crate) fn header_of(map: &MmapRaw) -> Option<&SegmentHeader> {
    if map.len() < std::mem::size_of::<SegmentHeader>() || map.as_ptr() as usize % PAGE != 0 {
        return None;
    }
    // Offset 0 is inside the mapping (checked just above) and page-aligned
    // (≥ the header's alignment); the reference borrows `map`, which keeps
    // the mapping alive.
    // SAFETY: in bounds, aligned, alive; the header is atomics only
    // (module invariant "shared mutation").
    Some(unsafe { &*map.as_ptr().cast::<SegmentHeader>() })
}

/// The mapped segment with its geometry.
#[derive(Debug)]
pub(crate) struct Segment {
    map: MmapRaw,
    geo: Geometry,
    /// Whether [`Segment::claim`] has been called on this mapping.
    claimed: AtomicBool,
}

/// Proof that this process owns one cell exclusively: minted only here,
/// once per handover, and consumed by the pushes. See the module docs.
#[derive(Debug)]
pub(crate) struct OwnedCell {
    idx: u32,
}

impl OwnedCell {
    /// The cell's index.
    #[inline]
    pub(crate) fn index(&self) -> u32 {
        self.idx
    }
}

/// What [`Segment::pop_recv`] found.
#[derive(Debug)]
pub(crate) enum Popped {
    /// A cell, now ours.
    Cell(OwnedCell),
    /// The queue is empty.
    Empty,
    /// A push is half done; retry soon.
    Busy,
}

/// Where one fastbox ring lies in the segment (see [`Segment::fb_ring`]):
/// only a segment makes one, from bounds it checked, and a device uses the
/// rings of its own segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ring {
    off: usize,
    src: u32,
    dst: u32,
}

/// The right to consume one rank's queues (they are single-consumer):
/// minted once per segment by [`Segment::claim`].
#[derive(Debug)]
pub(crate) struct Consumer {
    rank: u32,
}

impl Segment {
    /// Wraps a mapping.
    ///
    /// # Errors
    /// The mapping is shorter than `geo.total` or not page-aligned.
    pub(crate) fn new(map: MmapRaw, geo: Geometry) -> Result<Segment, &'static str> {
        if map.len() < geo.total {
            return Err("mapping shorter than the segment geometry");
        }
        if map.as_ptr() as usize % PAGE != 0 {
            return Err("mapping is not page-aligned");
        }
        Ok(Segment {
            map,
            geo,
            claimed: AtomicBool::new(false),
        })
    }

    /// The geometry.
    #[inline]
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The address range of the mapping (tests check ARecv buffers fall in
    /// it).
    pub(crate) fn address_range(&self) -> std::ops::Range<usize> {
        let base = self.map.as_ptr() as usize;
        base..base + self.map.len()
    }

    /// The segment header.
    #[inline]
    pub(crate) fn header(&self) -> &SegmentHeader {
        // SAFETY: `new` checked the mapping holds the whole geometry, which
        // starts with the header at offset 0; alignment, shared mutation and
        // lifetime as in the module invariants.
        unsafe { &*self.map.as_ptr().cast::<SegmentHeader>() }
    }

    /// Rank `r`'s block, or `None` for a rank outside the segment.
    #[inline]
    pub(crate) fn rank(&self, r: u32) -> Option<&RankBlock> {
        if r >= self.geo.nranks {
            return None;
        }
        let off = self.geo.rank_off(r);
        debug_assert!(
            off >= RANKS_OFFSET && off + std::mem::size_of::<RankBlock>() <= self.geo.total
        );
        // SAFETY: `r < nranks`, so the block lies inside the mapping
        // (invariant "bounds") at an aligned offset ("alignment"); it
        // consists of atomics ("shared mutation"); it borrows `self`.
        Some(unsafe { &*self.map.as_ptr().add(off).cast::<RankBlock>() })
    }

    /// The `next` link of queue node `node` (a cell or a stub), or `None`
    /// for an index outside the segment.
    #[inline]
    pub(crate) fn link(&self, node: u32) -> Option<&AtomicU32> {
        let g = &self.geo;
        if node < g.ncells {
            let off = g.cell_off(node) + CELL_LINK;
            debug_assert!(off % CELL_ALIGN == 0 && off + 4 <= g.total);
            // SAFETY: `node < ncells`, so the cell and its first word lie
            // inside the mapping at a CELL_ALIGN boundary; the link is an
            // atomic; it borrows `self`.
            return Some(unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU32>() });
        }
        let stub = node - g.ncells;
        let block = self.rank(stub / 2)?;
        Some(if stub % 2 == 0 {
            &*block.recv_stub
        } else {
            &*block.free_stub
        })
    }

    fn recv_queue(&self, r: u32) -> Option<Queue<'_, AtomicU32>> {
        let b = self.rank(r)?;
        Some(Queue::new(
            &b.recv.tail,
            &*b.recv_head,
            self.geo.recv_stub(r),
        ))
    }

    fn free_queue(&self, r: u32) -> Option<Queue<'_, AtomicU32>> {
        let b = self.rank(r)?;
        Some(Queue::new(
            &*b.free_tail,
            &*b.free_head,
            self.geo.free_stub(r),
        ))
    }

    /// Creator only, before publishing the segment: empty queues and clear
    /// links everywhere.
    pub(crate) fn init_queues(&self) -> Result<(), Corrupt> {
        for c in 0..self.geo.ncells {
            self.link(c)
                .ok_or(Corrupt { node: c })?
                .store(crate::queue::NIL, Ordering::Relaxed);
        }
        for r in 0..self.geo.nranks {
            let bad = Corrupt { node: r };
            self.recv_queue(r).ok_or(bad)?.init(self)?;
            self.free_queue(r).ok_or(bad)?.init(self)?;
        }
        Ok(())
    }

    /// Claims rank `r`: the consumer right to its queues and its initial
    /// pool of cells. Once per mapping, and once per rank across processes
    /// (an `attached` word in the rank block is swapped from 0 to 1).
    ///
    /// # Errors
    /// A static reason: the rank is outside the segment or already claimed.
    pub(crate) fn claim(&self, r: u32) -> Result<(Consumer, Vec<OwnedCell>), &'static str> {
        let block = self.rank(r).ok_or("rank outside the segment")?;
        if self.claimed.swap(true, Ordering::Relaxed) {
            return Err("this mapping already claimed a rank");
        }
        // AcqRel: orders this claim with a competing claimer's (exactly one
        // sees 0); peers read `attached` (Acquire, in setup) after the second
        // barrier.
        let was = block.info.attached.swap(1, Ordering::AcqRel);
        if was != 0 {
            return Err("rank already attached by another process");
        }
        let pool = self.geo.pool(r).map(|idx| OwnedCell { idx }).collect();
        Ok((Consumer { rank: r }, pool))
    }

    /// Pops the consumer's receive queue. A popped index that is not a cell
    /// is reported as [`Corrupt`].
    #[inline]
    pub(crate) fn pop_recv(&self, c: &mut Consumer) -> Result<Popped, Corrupt> {
        let q = self.recv_queue(c.rank).ok_or(Corrupt { node: c.rank })?;
        Ok(match q.pop(self)? {
            Pop::Item(idx) if idx < self.geo.ncells => Popped::Cell(OwnedCell { idx }),
            Pop::Item(idx) => return Err(Corrupt { node: idx }),
            Pop::Empty => Popped::Empty,
            Pop::Busy => Popped::Busy,
        })
    }

    /// Pops the consumer's free queue: one of its own cells, returned by a
    /// receiver. A cell from another pool is [`Corrupt`].
    #[inline]
    pub(crate) fn pop_free(&self, c: &mut Consumer) -> Result<Option<OwnedCell>, Corrupt> {
        let q = self.free_queue(c.rank).ok_or(Corrupt { node: c.rank })?;
        match q.pop(self)? {
            Pop::Item(idx) if self.geo.pool(c.rank).contains(&idx) => Ok(Some(OwnedCell { idx })),
            Pop::Item(idx) => Err(Corrupt { node: idx }),
            Pop::Empty | Pop::Busy => Ok(None),
        }
    }

    /// Enqueues `cell` on rank `dest`'s receive queue; returns whether
    /// `dest` sleeps and must be signalled.
    #[inline]
    pub(crate) fn push_recv(&self, dest: u32, cell: OwnedCell) -> Result<bool, Corrupt> {
        let b = self.rank(dest).ok_or(Corrupt { node: dest })?;
        let q = Queue::new(&b.recv.tail, &*b.recv_head, self.geo.recv_stub(dest));
        q.push_notify(self, cell.idx, &b.recv.sleeping)
    }

    /// Returns `cell` to its owner's free queue (any thread).
    #[inline]
    pub(crate) fn push_free(&self, cell: OwnedCell) -> Result<(), Corrupt> {
        let owner = self.geo.owner(cell.idx);
        let q = self.free_queue(owner).ok_or(Corrupt { node: cell.idx })?;
        q.push(self, cell.idx)
    }

    /// Raises the consumer's sleeping flag if its receive queue is empty
    /// and `quiet` (the fastbox check) agrees (see [`Queue::arm`]); `true`
    /// means it may sleep.
    pub(crate) fn arm(&self, c: &mut Consumer, quiet: impl FnOnce() -> bool) -> bool {
        match self.rank(c.rank) {
            Some(b) => Queue::new(&b.recv.tail, &*b.recv_head, self.geo.recv_stub(c.rank))
                .arm(&b.recv.sleeping, quiet),
            None => false,
        }
    }

    /// After a fastbox publish to `dest`: whether `dest` sleeps and must be
    /// signalled (claims the signal, see [`claim_sleeper`]).
    #[inline]
    pub(crate) fn take_sleeper(&self, dest: u32) -> bool {
        self.rank(dest)
            .is_some_and(|b| claim_sleeper(&b.recv.sleeping))
    }

    /// The offset of slot `slot` of the fastbox ring from `src` to `dst`,
    /// or `None` for an index outside the geometry (always, when fastboxes
    /// are off).
    #[inline]
    fn fb_off(&self, src: u32, dst: u32, slot: u32) -> Option<usize> {
        let g = &self.geo;
        if src >= g.nranks || dst >= g.nranks || slot >= g.fb_slots {
            return None;
        }
        let off = g.fb_slot_off(src, dst, slot);
        debug_assert!(off % CELL_ALIGN == 0 && off + g.fb_size <= g.total);
        Some(off)
    }

    /// The fastbox ring from `src` to `dst`, found once so that the hot
    /// path's slot lookups ([`Segment::ring_in`], [`Segment::ring_out`],
    /// [`Segment::ring_ctrl`]) check only the slot index. `None` for ranks
    /// outside the geometry, or when fastboxes are off.
    pub(crate) fn fb_ring(&self, src: u32, dst: u32) -> Option<Ring> {
        Some(Ring {
            off: self.fb_off(src, dst, 0)?,
            src,
            dst,
        })
    }

    /// The offset of slot `slot` of `ring`: as [`Segment::fb_off`], with
    /// the ring's part worked out once.
    #[inline(always)]
    fn ring_off(&self, ring: Ring, slot: u32) -> Option<usize> {
        let g = &self.geo;
        if slot >= g.fb_slots {
            return None;
        }
        let off = ring.off + slot as usize * g.fb_size;
        debug_assert_eq!(Some(off), self.fb_off(ring.src, ring.dst, slot));
        Some(off)
    }

    /// The control word of the fastbox slot at `off`, an offset from
    /// `fb_off` or `ring_off`.
    #[inline(always)]
    fn ctrl_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is a slot's offset (from `fb_off`, or `ring_off` of
        // a ring `fb_off` found in this segment, at an index below
        // `fb_slots`), so the slot lies inside the mapping (invariant
        // "bounds") on a CELL_ALIGN boundary, which satisfies AtomicU64's
        // alignment; the word is an atomic ("shared mutation"); it borrows
        // `self`.
        unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU64>() }
    }

    /// The control word of a fastbox slot.
    #[cfg(test)]
    pub(crate) fn fb_ctrl(&self, src: u32, dst: u32, slot: u32) -> Option<&AtomicU64> {
        Some(self.ctrl_at(self.fb_off(src, dst, slot)?))
    }

    /// [`Segment::fb_ctrl`] of slot `slot` of `ring`.
    #[inline(always)]
    pub(crate) fn ring_ctrl(&self, ring: Ring, slot: u32) -> Option<&AtomicU64> {
        Some(self.ctrl_at(self.ring_off(ring, slot)?))
    }

    /// The control words of `count` slots of the ring from `src` to `dst`,
    /// from slot `first` on, wrapping at the ring's end, each handed to
    /// `f`: a run of frees with one bounds check, not one per slot. Nothing
    /// for indices out of range (or `count` past the ring).
    #[inline]
    pub(crate) fn fb_ctrl_run(
        &self,
        ring: Ring,
        first: u32,
        count: u32,
        mut f: impl FnMut(&AtomicU64),
    ) {
        let g = &self.geo;
        if first >= g.fb_slots || count > g.fb_slots {
            return;
        }
        let mut slot = first;
        for _ in 0..count {
            let off = ring.off + slot as usize * g.fb_size;
            debug_assert_eq!(Some(off), self.ring_off(ring, slot));
            // `slot < fb_slots`: `off` is that slot's offset, as `ring_off`
            // would find it (without its check on every slot).
            f(self.ctrl_at(off));
            slot = if slot + 1 == g.fb_slots { 0 } else { slot + 1 };
        }
    }

    /// The control word and the data bytes (after the control word) of slot
    /// `slot` of `ring`, a ring to the consumer: read the bytes only while
    /// the control word says full (invariant "fastbox slots"). `None` for
    /// an index out of range. One bounds check for both: this is on every
    /// delivery.
    #[inline(always)]
    pub(crate) fn ring_in<'a>(
        &'a self,
        c: &'a Consumer,
        ring: Ring,
        slot: u32,
    ) -> Option<(&'a AtomicU64, &'a [u8])> {
        debug_assert_eq!(ring.dst, c.rank);
        Some(self.in_at(c, self.ring_off(ring, slot)?))
    }

    #[inline(always)]
    fn in_at<'a>(&'a self, _c: &'a Consumer, off: usize) -> (&'a AtomicU64, &'a [u8]) {
        // SAFETY: as in `ctrl_at` for the word; `off + fb_size` lies inside
        // the mapping and `fb_size > CTRL_LEN` (checked geometry); bytes
        // have no alignment or validity requirements; no writable view
        // exists in this process while `c` is borrowed (invariant "fastbox
        // slots").
        unsafe {
            let base = self.map.as_ptr().add(off);
            (
                &*base.cast::<AtomicU64>(),
                std::slice::from_raw_parts(base.add(CTRL_LEN), self.geo.fb_size - CTRL_LEN),
            )
        }
    }

    /// The control word and the writable data bytes of slot `slot` of
    /// `ring`, a ring from the consumer: write the bytes only while the
    /// control word is 0. `None` for an index out of range.
    #[inline(always)]
    pub(crate) fn ring_out<'a>(
        &'a self,
        c: &'a mut Consumer,
        ring: Ring,
        slot: u32,
    ) -> Option<(&'a AtomicU64, &'a mut [u8])> {
        debug_assert_eq!(ring.src, c.rank);
        let off = self.ring_off(ring, slot)?;
        Some(self.out_at(c, off))
    }

    #[inline(always)]
    fn out_at<'a>(&'a self, _c: &'a mut Consumer, off: usize) -> (&'a AtomicU64, &'a mut [u8]) {
        // SAFETY: in bounds as for `in_at`; the `&mut Consumer` makes this
        // the only view of the slot's bytes in this process while it lasts
        // (invariant "fastbox slots"); the control word (an atomic) and the
        // bytes after it do not overlap.
        unsafe {
            let base = self.map.as_mut_ptr().add(off);
            (
                &*base.cast::<AtomicU64>(),
                std::slice::from_raw_parts_mut(base.add(CTRL_LEN), self.geo.fb_size - CTRL_LEN),
            )
        }
    }

    /// Wake-up signals sent to the consumer so far (wrapping).
    pub(crate) fn signals(&self, c: &Consumer) -> u32 {
        // Relaxed: only compared with the datagrams drained; a byte whose
        // count is late is drained on a later disarm.
        self.rank(c.rank)
            .map_or(0, |b| b.info.signals.load(Ordering::Relaxed))
    }

    /// Counts a signal just sent to `dest`.
    pub(crate) fn count_signal(&self, dest: u32) {
        if let Some(b) = self.rank(dest) {
            // Relaxed: see `signals`.
            b.info.signals.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Lowers the consumer's sleeping flag.
    pub(crate) fn disarm(&self, c: &mut Consumer) {
        if let Some(b) = self.rank(c.rank) {
            Queue::new(&b.recv.tail, &*b.recv_head, self.geo.recv_stub(c.rank))
                .disarm(&b.recv.sleeping);
        }
    }

    #[inline]
    fn body_ptr(&self, idx: u32) -> *mut u8 {
        assert!(idx < self.geo.ncells, "OwnedCell index outside the segment");
        let off = self.geo.cell_off(idx) + CELL_BODY;
        debug_assert!(off + self.geo.body_len() <= self.geo.total);
        // SAFETY: `idx < ncells`, so `off` plus the body length lies inside
        // the mapping (invariant "bounds"): `add` stays in the allocation.
        unsafe { self.map.as_mut_ptr().add(off) }
    }

    /// The body of an owned cell.
    #[inline]
    pub(crate) fn body<'a>(&'a self, cell: &'a OwnedCell) -> &'a [u8] {
        let ptr = self.body_ptr(cell.idx);
        // `cell` proves exclusive ownership, so nothing in this process
        // writes the body while the borrow of `cell` lasts (invariant "cell
        // bodies"); bytes have no alignment or validity requirements.
        // SAFETY: in bounds (see `body_ptr`) and exclusively owned (above).
        unsafe { std::slice::from_raw_parts(ptr, self.geo.body_len()) }
    }

    /// The body of an owned cell, writable.
    #[inline]
    pub(crate) fn body_mut<'a>(&'a self, cell: &'a mut OwnedCell) -> &'a mut [u8] {
        let ptr = self.body_ptr(cell.idx);
        // SAFETY: as for `body`; the `&mut OwnedCell` makes this the only
        // view of the body in this process while it lasts.
        unsafe { std::slice::from_raw_parts_mut(ptr, self.geo.body_len()) }
    }
}

impl Arena for Segment {
    type Link = AtomicU32;
    #[inline]
    fn next(&self, node: u32) -> Option<&AtomicU32> {
        self.link(node)
    }
}
