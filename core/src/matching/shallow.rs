//! The shallow form of a matching queue: while a queue holds at most
//! [`SHALLOW`] entries, they sit in one short list in queue order, and a
//! search is a scan of that list (one cache line of refs, no hashing).
//! When the list would overflow, its entries move into the lanes, which
//! then hold the queue until it drains completely; the next entry starts a
//! list again.
//!
//! Order is kept either way: the list is in sequence order, so its first
//! match is the earliest one, as the lanes' smallest head is. A queue moves
//! each entry into the lanes at most once per time the queue fills up, so
//! the lanes' amortized O(1) (and the 100 000-deep benches) are untouched;
//! MPICH keeps a plain linked list for the same reason (most queues are
//! short), UCX a hash.

use super::slots::Ref;

/// Entries kept in the list before the lanes take over. A ping-pong or a
/// halo exchange posts a few receives per peer; 8 refs are 128 bytes.
pub(crate) const SHALLOW: usize = 8;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Shallow {
    /// The queue's entries, in sequence order, while `active`.
    refs: Vec<Ref>,
    active: bool,
    /// [`SHALLOW`], or 0 for a queue that always uses its lanes (the lanes'
    /// own tests).
    limit: usize,
}

impl Default for Shallow {
    fn default() -> Self {
        Shallow {
            refs: Vec::with_capacity(SHALLOW),
            active: true,
            limit: SHALLOW,
        }
    }
}

impl Shallow {
    /// A queue that never lists: the lanes always hold it.
    #[cfg(test)]
    pub(crate) fn never() -> Shallow {
        Shallow {
            refs: Vec::new(),
            active: false,
            limit: 0,
        }
    }

    /// True while the list (not the lanes) holds the queue.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    /// Appends `r` if the list holds the queue and has room; `false` means
    /// the caller must put it in the lanes (after [`Shallow::spill`]).
    #[inline]
    pub(crate) fn push(&mut self, r: Ref) -> bool {
        if self.active && self.refs.len() < self.limit {
            self.refs.push(r);
            return true;
        }
        false
    }

    /// Hands the list's entries, in order, to the lanes: from now on they
    /// hold the queue.
    pub(crate) fn spill(&mut self) -> std::vec::Drain<'_, Ref> {
        self.active = false;
        self.refs.drain(..)
    }

    /// The queue emptied: the next entry starts a list again (the lanes
    /// hold no live entry, and compaction has removed their stale ones).
    #[inline]
    pub(crate) fn drained(&mut self) {
        self.active = true;
    }

    /// The entries, in order.
    #[inline]
    pub(crate) fn refs(&self) -> &[Ref] {
        &self.refs
    }

    /// Removes the entry at `i` (found by a scan of [`Shallow::refs`]).
    #[inline]
    pub(crate) fn remove_at(&mut self, i: usize) -> Ref {
        // The usual case, one entry (or the last): no `memmove` call.
        if i + 1 == self.refs.len() {
            if let Some(r) = self.refs.pop() {
                return r;
            }
        }
        self.refs.remove(i)
    }

    /// Removes `r` if the list has it.
    pub(crate) fn remove(&mut self, r: Ref) -> bool {
        match self.refs.iter().position(|&x| x == r) {
            Some(i) => {
                self.refs.remove(i);
                true
            }
            None => false,
        }
    }
}
