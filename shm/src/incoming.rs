//! Arrivals: the [`Incoming`] packet view of a cell, and [`CellBuf`], the
//! cell handed to the engine as an ARecv / unexpected-message buffer.
//!
//! # The parking rule (ARecv zero-copy)
//! [`Incoming::into_payload`] hands the engine the cell itself: the `Buf`'s
//! bytes *are* the cell's payload, and dropping the `Buf` returns the cell to
//! its owner's free queue. A parked cell is one its owner cannot send with,
//! so parking is bounded: at most **half of each owner's cells** may be
//! parked at once, by all receivers together (a shared `parked` counter in
//! the owner's rank block). Beyond that, `into_payload` copies the payload
//! into a `Vec` and returns the cell at once. So however many unexpected
//! messages a receiver holds, every sender keeps half its pool, and a job
//! cannot deadlock on cells parked in unexpected queues.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use ferry_core::device::Incoming;
use ferry_core::{Buf, ByteStorage, Error};

use crate::cell::{FIELDS_LEN, PAYLOAD_OFFSET};
use crate::ffi::{OwnedCell, Segment};

/// Gives a consumed cell back: to the local pool if it is ours (no atomics),
/// else to its owner's free queue.
#[inline]
pub(crate) fn recycle(seg: &Segment, me: u32, pool: &mut Vec<OwnedCell>, cell: OwnedCell) {
    if seg.geometry().owner(cell.index()) == me {
        pool.push(cell);
    } else if let Err(c) = seg.push_free(cell) {
        tracing::error!(node = c.node, "shm free queue corrupted; cell dropped");
    }
}

/// A packet in a cell, as the sink sees it.
#[derive(Debug)]
pub(crate) struct ShmIncoming<'a> {
    pub(crate) seg: &'a Arc<Segment>,
    pub(crate) me: u32,
    pub(crate) pool: &'a mut Vec<OwnedCell>,
    /// `None` once handed over.
    pub(crate) cell: Option<OwnedCell>,
    /// Validated by [`crate::cell::decode`].
    pub(crate) header_len: usize,
    /// Validated by [`crate::cell::decode`].
    pub(crate) payload_len: usize,
    /// Parking limit per owner.
    pub(crate) max_parked: u32,
}

impl ShmIncoming<'_> {
    fn slice(&self, start: usize, len: usize) -> &[u8] {
        match &self.cell {
            // Lengths were validated against this body's size; `get` keeps
            // even a logic error from panicking.
            Some(c) => self.seg.body(c).get(start..start + len).unwrap_or_default(),
            None => &[],
        }
    }
}

impl Incoming for ShmIncoming<'_> {
    #[inline]
    fn header(&self) -> &[u8] {
        self.slice(FIELDS_LEN, self.header_len)
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        self.slice(PAYLOAD_OFFSET, self.payload_len)
    }

    /// A box around the cell (or a copy, past the parking bound).
    #[inline]
    fn hand_over_allocates(&self) -> bool {
        true
    }

    fn into_payload(mut self) -> Result<Buf, Error> {
        let Some(cell) = self.cell.take() else {
            return Ok(Buf::new());
        };
        let owner = self.seg.geometry().owner(cell.index());
        let parked = self.seg.rank(owner).map(|b| &b.info.parked);
        // Relaxed: a counter that bounds parking, not a synchronization; the
        // RMW makes the bound exact across receivers.
        let may_park = parked.is_some_and(|p| p.fetch_add(1, Relaxed) < self.max_parked);
        if may_park {
            let storage = CellBuf {
                seg: Arc::clone(self.seg),
                cell: Some(cell),
                owner,
            };
            return Ok(Buf::from_storage_with_len(
                Box::new(storage),
                self.payload_len,
            ));
        }
        if let Some(p) = parked {
            p.fetch_sub(1, Relaxed);
        }
        let copy = Buf::copy_from(
            self.seg
                .body(&cell)
                .get(PAYLOAD_OFFSET..PAYLOAD_OFFSET + self.payload_len)
                .unwrap_or_default(),
        );
        recycle(self.seg, self.me, self.pool, cell);
        copy
    }
}

impl Drop for ShmIncoming<'_> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            recycle(self.seg, self.me, self.pool, cell);
        }
    }
}

/// A parked cell: [`ByteStorage`] over the cell's payload room. Dropping it
/// returns the cell to its owner (from any thread; the free queue is
/// multi-producer) and unparks it.
#[derive(Debug)]
pub(crate) struct CellBuf {
    seg: Arc<Segment>,
    cell: Option<OwnedCell>,
    owner: u32,
}

impl ByteStorage for CellBuf {
    fn bytes(&self) -> &[u8] {
        match &self.cell {
            Some(c) => self.seg.body(c).get(PAYLOAD_OFFSET..).unwrap_or_default(),
            None => &[],
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.cell {
            Some(c) => self
                .seg
                .body_mut(c)
                .get_mut(PAYLOAD_OFFSET..)
                .unwrap_or_default(),
            None => &mut [],
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Drop for CellBuf {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            if let Err(c) = self.seg.push_free(cell) {
                tracing::error!(node = c.node, "shm free queue corrupted; cell dropped");
            }
            if let Some(b) = self.seg.rank(self.owner) {
                // Relaxed: see `into_payload`.
                b.info.parked.fetch_sub(1, Relaxed);
            }
        }
    }
}
