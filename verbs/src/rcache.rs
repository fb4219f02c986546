//! The cache of registrations of lent memory (memory the user owns and lends
//! for one operation: the blocking `send`/`recv`, the raw API, the C ABI).
//! A key is reused only when the page frames now mapped at its address are
//! the ones it pinned (`pagemap.rs`); see `mr.rs` ("Lent memory") for the
//! argument.
//!
//! Entries match exactly (address, length, access), are bounded in number
//! ([`MAX_ENTRIES`]) and in pinned bytes (the device's budget, shared with
//! attached registrations), and the least recently used one not in use is
//! evicted first. Nothing here allocates on a hit.

use ferry_core::Buf;

use crate::ffi::{register_lent, Budget, FfiError, Mr, Pd};
use crate::mr::Local;
use crate::pagemap::Pagemap;

/// The most lent registrations kept (a linear scan finds one).
pub(crate) const MAX_ENTRIES: usize = 64;

#[derive(Debug)]
struct Entry {
    mr: Mr,
    addr: u64,
    len: usize,
    access: u32,
    /// The page frames the MR pinned, read right after registering.
    frames: Vec<u64>,
    /// Live handles using the key.
    users: u32,
    /// Last use, for eviction.
    stamp: u64,
}

/// A lent registration in use: where it is, and its keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    pub(crate) slot: u32,
    pub(crate) local: Local,
    pub(crate) rkey: u32,
    pub(crate) hit: bool,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct LentCache {
    entries: Vec<Option<Entry>>,
    clock: u64,
    budget: Budget,
}

impl LentCache {
    /// A cache within `budget`; it works with the page-frame check the
    /// device has (without one, lent memory is registered per use).
    pub(crate) fn new(budget: Budget) -> LentCache {
        LentCache {
            entries: Vec::with_capacity(MAX_ENTRIES),
            clock: 0,
            budget,
        }
    }

    /// A key for the lent `buf`: a cached one whose pages are proven to be
    /// the ones mapped now, or a new registration kept for later. `None`
    /// when the cache cannot take it (full of entries in use, over the
    /// budget, pages not present): the caller registers per use.
    ///
    /// # Errors
    /// The failure of `ibv_reg_mr`.
    pub(crate) fn acquire(
        &mut self,
        pagemap: &mut Pagemap,
        pd: &Pd,
        buf: &mut Buf,
        access: u32,
        writable: bool,
    ) -> Result<Option<Lease>, FfiError> {
        let (addr, len) = if writable {
            let s = buf.as_mut_slice();
            (s.as_mut_ptr() as u64, s.len())
        } else {
            (buf.as_slice().as_ptr() as u64, buf.as_slice().len())
        };
        if len == 0 {
            return Ok(None);
        }
        self.clock += 1;
        let found = self.entries.iter().position(|e| {
            e.as_ref()
                .is_some_and(|e| e.addr == addr && e.len == len && e.access == access)
        });
        if let Some(i) = found {
            if let Some(e) = self.entries[i].as_mut() {
                if pagemap.same(addr as usize, len, &e.frames) {
                    e.users += 1;
                    e.stamp = self.clock;
                    return Ok(Some(lease(i, e, true)));
                }
                if e.users == 0 {
                    // Other pages at the address now: the key is for memory
                    // that is gone. End it, and register anew below.
                    self.evict(i);
                }
            }
        }
        let Some(slot) = self.make_room(len) else {
            return Ok(None);
        };
        let (mr, addr, len) = register_lent(pd, buf, access, writable)?;
        let mut frames = Vec::new();
        if !pagemap.frames(addr as usize, len, &mut frames) || !self.budget.take(len) {
            // Nothing proven about these pages (or no room): use the MR for
            // this operation only, through the same lease, and drop it at
            // release.
            frames.clear();
        }
        let cached = !frames.is_empty();
        let e = Entry {
            mr,
            addr,
            len,
            access,
            frames,
            users: 1,
            stamp: if cached { self.clock } else { 0 },
        };
        let l = lease(slot, &e, false);
        if slot == self.entries.len() {
            self.entries.push(Some(e));
        } else {
            self.entries[slot] = Some(e);
        }
        Ok(Some(l))
    }

    /// Ends a use of the key at `slot` (the MR stays cached; one that was
    /// for a single use is deregistered).
    pub(crate) fn release(&mut self, slot: u32) {
        let i = slot as usize;
        let Some(e) = self.entries.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        e.users = e.users.saturating_sub(1);
        if e.users == 0 && e.frames.is_empty() {
            self.entries[i] = None;
        }
    }

    /// A free slot, evicting the least recently used entry not in use if
    /// there is none or the budget has no room for `len` more bytes.
    fn make_room(&mut self, len: usize) -> Option<usize> {
        loop {
            let free = self.entries.iter().position(Option::is_none);
            let free = free.or((self.entries.len() < MAX_ENTRIES).then_some(self.entries.len()));
            let fits = self.budget.pinned().saturating_add(len) <= self.budget.max();
            if let (Some(i), true) = (free, fits) {
                return Some(i);
            }
            let victim = (0..self.entries.len())
                .filter_map(|i| Some((i, self.entries[i].as_ref()?)))
                .filter(|(_, e)| e.users == 0)
                .min_by_key(|(_, e)| e.stamp)
                .map(|(i, _)| i);
            match victim {
                Some(i) => self.evict(i),
                // Everything is in use: a free slot can still take a
                // single-use registration (not counted in the budget).
                None => return free,
            }
        }
    }

    /// Deregisters the entry at `i` (not in use).
    fn evict(&mut self, i: usize) {
        if let Some(e) = self.entries[i].take() {
            if !e.frames.is_empty() {
                self.budget.give(e.len);
            }
        }
    }

    #[cfg(test)]
    /// Cached entries (for tests).
    pub(crate) fn entries(&self) -> usize {
        self.entries.iter().flatten().count()
    }
}

fn lease(slot: usize, e: &Entry, hit: bool) -> Lease {
    Lease {
        slot: slot as u32,
        local: Local {
            addr: e.addr,
            len: e.len,
            lkey: e.mr.lkey(),
        },
        rkey: e.mr.rkey(),
        hit,
    }
}

impl Drop for LentCache {
    fn drop(&mut self) {
        for i in 0..self.entries.len() {
            self.evict(i);
        }
    }
}
