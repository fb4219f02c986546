//! Registration of the engine's buffers, in the one order that is safe to
//! drop (the MR first, then the memory):
//! - [`RegisteredBuf`]: a `Buf` held by the device for one transfer, with
//!   its MR either owned (registered for this use) or attached to the `Buf`
//!   (a cached registration, [`Attached`]);
//! - [`Attached`]: a registration carried by an owned `Buf` between
//!   transfers, ended when the `Buf` drops or its memory leaves it, or when
//!   the device goes ([`Revoker`]), whichever comes first;
//! - [`register_lent`]: a registration of memory lent by the user, which the
//!   registration cache (`rcache.rs`) keeps past the loan.
//!
//! See `mr.rs` for why none of them can be stale.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use ferry_core::{Attachment, Buf};

use super::{FfiError, Mr, Pd};
use crate::pagemap::Pagemap;

/// Bytes pinned by cached registrations, against a bound (shared by the
/// device and the attachments it made, which may drop on other threads).
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pinned: Arc<AtomicUsize>,
    max: usize,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Budget {
        Budget {
            pinned: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// Takes `len` bytes if they fit under the bound. (Relaxed throughout:
    /// a counter that bounds a resource, ordering nothing else.)
    pub(crate) fn take(&self, len: usize) -> bool {
        self.pinned
            .fetch_update(Relaxed, Relaxed, |p| {
                p.checked_add(len).filter(|&n| n <= self.max)
            })
            .is_ok()
    }

    pub(crate) fn give(&self, len: usize) {
        self.pinned.fetch_sub(len, Relaxed);
    }

    /// The bound.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Bytes pinned now.
    pub(crate) fn pinned(&self) -> usize {
        self.pinned.load(Relaxed)
    }
}

/// One cached registration of an owned buffer's memory.
#[derive(Debug)]
struct Cell {
    /// `None` once ended (by the attachment's drop or by the device's).
    /// The lock is held across `ibv_dereg_mr`, so the device never frees
    /// its PD while an attachment is still deregistering on another thread.
    mr: Mutex<Option<Mr>>,
    /// The device that made it ([`Revoker::domain`]).
    domain: u64,
    access: u32,
    addr: u64,
    len: usize,
    lkey: u32,
    rkey: u32,
    /// The page frames it pinned, checked at each reuse; empty for a
    /// registration pinned for writing (which needs no check).
    frames: Vec<u64>,
    budget: Budget,
}

impl Cell {
    /// Ends the registration (once).
    fn end(&self) {
        // A poisoned lock only means a panic elsewhere while it was held;
        // the option inside is still the truth.
        let mut mr = self.mr.lock().unwrap_or_else(|p| p.into_inner());
        if mr.take().is_some() {
            self.budget.give(self.len);
        }
    }

    fn live(&self) -> bool {
        self.mr.lock().map(|m| m.is_some()).unwrap_or(false)
    }
}

/// A registration carried by the `Buf` it registers (see the module docs).
#[derive(Debug)]
pub(crate) struct Attached(Arc<Cell>);

impl Attachment for Attached {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Ends, when the device goes, every registration it attached to a `Buf`
/// that is still alive (the PD cannot be freed under them). Declared in the
/// device before the PD.
#[derive(Debug)]
pub(crate) struct Revoker {
    domain: u64,
    cells: Vec<Weak<Cell>>,
}

impl Revoker {
    pub(crate) fn new() -> Revoker {
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        Revoker {
            domain: NEXT.fetch_add(1, Relaxed) as u64,
            cells: Vec::new(),
        }
    }

    fn track(&mut self, cell: &Arc<Cell>) {
        if self.cells.len() == self.cells.capacity() {
            self.cells.retain(|c| c.strong_count() > 0);
        }
        self.cells.push(Arc::downgrade(cell));
    }

    #[cfg(test)]
    /// Attached registrations still alive (for tests).
    pub(crate) fn live(&self) -> usize {
        self.cells
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| c.live())
            .count()
    }
}

impl Drop for Revoker {
    fn drop(&mut self) {
        for cell in self.cells.iter().filter_map(Weak::upgrade) {
            cell.end();
        }
    }
}

/// What caching an owned buffer's registration needs: the device's revoker
/// and budget, and the page-frame check if the process can read frames.
#[derive(Debug)]
pub(crate) struct AttachCache<'a> {
    pub(crate) revoker: &'a mut Revoker,
    pub(crate) budget: &'a Budget,
    pub(crate) pagemap: Option<&'a mut Pagemap>,
}

/// A `Buf` registered with the HCA for one transfer. The region is
/// deregistered before the buffer can go: by field order on drop, and
/// explicitly in [`RegisteredBuf::into_buf`]; or it is attached to the
/// `Buf`, which ends it before its memory goes.
#[derive(Debug)]
pub(crate) struct RegisteredBuf {
    // Field order is drop order: deregister, then release the buffer.
    /// A registration for this use only (`None` for an empty buffer, or
    /// when the registration is attached to `buf`).
    mr: Option<Mr>,
    buf: Buf,
    addr: u64,
    len: usize,
    lkey: u32,
    rkey: u32,
    /// The registration was attached to `buf` before this use.
    hit: bool,
}

/// The buffer's memory as registration takes it: `writable` registrations
/// take it with `as_mut_slice`; others are never written through.
fn memory(buf: &mut Buf, writable: bool) -> (*mut u8, usize) {
    if writable {
        let s = buf.as_mut_slice();
        (s.as_mut_ptr(), s.len())
    } else {
        let s = buf.as_slice();
        (s.as_ptr().cast_mut(), s.len())
    }
}

/// The verbs flag that makes `ibv_reg_mr` pin pages for writing.
const LOCAL_WRITE: u32 = super::sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;

impl RegisteredBuf {
    /// Registers `buf` with `access` (verbs access flags), for one use or,
    /// with `cache`, attached to `buf` for the next ones too (reusing the
    /// one already attached when it is this device's, for this access and
    /// this memory, on the same pages).
    ///
    /// # Errors
    /// The failure of `ibv_reg_mr`, with the buffer back.
    #[allow(clippy::result_large_err)]
    pub(crate) fn new(
        pd: &Pd,
        mut buf: Buf,
        access: u32,
        writable: bool,
        cache: Option<AttachCache<'_>>,
    ) -> Result<RegisteredBuf, (FfiError, Buf)> {
        let (ptr, len) = memory(&mut buf, writable);
        let mut reg = RegisteredBuf {
            mr: None,
            buf,
            addr: ptr as u64,
            len,
            lkey: 0,
            rkey: 0,
            hit: false,
        };
        // Only memory the `Buf` owns can carry a registration.
        let Some(mut c) = cache.filter(|_| len > 0 && !reg.buf.is_lent()) else {
            return reg.register(pd, access);
        };
        if let Some(cell) = reg
            .buf
            .attachment()
            .and_then(|a| a.as_any().downcast_ref::<Attached>())
            .map(|a| &a.0)
            .filter(|c2| c2.domain == c.revoker.domain && c2.access == access)
            .filter(|c2| c2.addr == reg.addr && len <= c2.len && c2.live())
        {
            let same_pages = cell.frames.is_empty()
                || c.pagemap
                    .as_deref_mut()
                    .is_some_and(|pm| pm.same(cell.addr as usize, cell.len, &cell.frames));
            if same_pages {
                (reg.lkey, reg.rkey, reg.hit) = (cell.lkey, cell.rkey, true);
                return Ok(reg);
            }
        }
        // A cached registration must stay on the pages the `Buf` maps. A
        // pin for writing makes them the mapping's own (the kernel breaks
        // copy-on-write at pin time, and pinned pages are neither migrated
        // nor reclaimed), so nothing but unmapping them, which the `Buf`
        // prevents, can change them; that needs the memory writable through
        // the `Buf`. Read-only memory (a zero page, a page shared after
        // fork) may be replaced on a later write: its frames are recorded
        // and checked at each reuse instead, or it is registered per use.
        let full = reg.buf.as_mut_slice();
        let (full_ptr, full_len) = (full.as_mut_ptr(), full.len());
        let write_pinned = full_ptr as u64 == reg.addr && full_len == len;
        if !write_pinned && c.pagemap.is_none() {
            return reg.register(pd, access);
        }
        let flags = if write_pinned {
            access | LOCAL_WRITE
        } else {
            access
        };
        let mut reg = reg.register(pd, flags)?;
        let mut frames = Vec::new();
        if !write_pinned {
            let pm = c.pagemap.as_deref_mut();
            if !pm.is_some_and(|pm| pm.frames(ptr as usize, len, &mut frames)) {
                return Ok(reg);
            }
        }
        if !c.budget.take(len) {
            return Ok(reg);
        }
        let Some(mr) = reg.mr.take() else {
            return Ok(reg);
        };
        let cell = Arc::new(Cell {
            mr: Mutex::new(Some(mr)),
            domain: c.revoker.domain,
            access,
            addr: reg.addr,
            len,
            lkey: reg.lkey,
            rkey: reg.rkey,
            frames,
            budget: c.budget.clone(),
        });
        c.revoker.track(&cell);
        // Replaces (and so ends) an attachment of another device, access,
        // length or set of pages. Never refused: the memory is owned.
        if let Err(refused) = reg.buf.attach(Box::new(Attached(cell))) {
            drop(refused);
            return Err((FfiError::Missing("cache of a lent buffer"), reg.buf));
        }
        Ok(reg)
    }

    /// Registers this buffer's memory with `flags` for this use.
    #[allow(clippy::result_large_err)]
    fn register(mut self, pd: &Pd, flags: u32) -> Result<RegisteredBuf, (FfiError, Buf)> {
        if self.len == 0 {
            return Ok(self);
        }
        // SAFETY: `addr..addr+len` is the buffer's memory, which does not
        // move while the `Buf` lives (buffer.rs, "Address stability"). The
        // MR is dropped before the `Buf` can go: it is either kept in this
        // value (dropped first, by field order) or moved into an attachment
        // of the `Buf`, which ends it before its memory goes. Write access
        // is only asked for memory taken with `as_mut_slice`.
        match unsafe { pd.reg_mr(self.addr as *mut u8, self.len, flags) } {
            Ok(mr) => {
                (self.lkey, self.rkey) = (mr.lkey(), mr.rkey());
                self.mr = Some(mr);
                Ok(self)
            }
            Err(e) => Err((e, self.buf)),
        }
    }

    /// The registered memory's address.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The registered length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The local key (0 for an empty buffer).
    pub(crate) fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key (0 for an empty buffer).
    pub(crate) fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Whether the registration was reused from the buffer's attachment.
    pub(crate) fn hit(&self) -> bool {
        self.hit
    }

    /// Deregisters a registration made for this use (`ibv_dereg_mr`), then
    /// gives the buffer back (with its attachment, if cached).
    pub(crate) fn into_buf(self) -> Buf {
        let RegisteredBuf { mr, buf, .. } = self;
        drop(mr);
        buf
    }
}

/// Registers the memory of a lent `buf` (memory the user owns) for the
/// registration cache, which may keep the MR after the loan ends: see
/// `mr.rs` ("Lent memory"). Returns the MR, its address and length.
///
/// # Errors
/// The failure of `ibv_reg_mr`.
pub(crate) fn register_lent(
    pd: &Pd,
    buf: &mut Buf,
    access: u32,
    writable: bool,
) -> Result<(Mr, u64, usize), FfiError> {
    let (ptr, len) = memory(buf, writable);
    // SAFETY: the memory is valid now (the loan of `buf` guarantees it for
    // as long as `buf` lives). It may be unmapped after the loan while the
    // MR lives: `ibv_reg_mr` pins the pages (the kernel takes a long-term
    // reference on each), so they are never freed or reused while the MR
    // exists, and the HCA only ever reaches those pinned pages, never
    // whatever is mapped at the address later. The cache checks that the
    // pages at the address are still the pinned ones before reusing the
    // key (`pagemap.rs`). Write access is only asked for memory taken with
    // `as_mut_slice`.
    let mr = unsafe { pd.reg_mr(ptr, len, access) }?;
    Ok((mr, ptr as u64, len))
}
