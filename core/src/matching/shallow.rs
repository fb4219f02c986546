//! The shallow form of a matching queue: while a queue holds at most
//! [`SHALLOW`] entries, they sit in one list in queue order, and a search
//! is a scan of that list from its front (no hashing). Traffic consumed in
//! order (a ping-pong, a window of receives filled in posting order)
//! matches the first entry, and taking the front of the ring moves nothing.
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

/// Entries kept in the list before the lanes take over: an OSU-style
/// window (64 receives or sends in flight) stays in the list. A scan that
/// must go deep (a match at the back) costs at most 64 short compares,
/// about what two lane lookups cost; the usual match is the front.
pub(crate) const SHALLOW: usize = 64;
const MASK: usize = SHALLOW - 1;
const _: () = assert!(SHALLOW.is_power_of_two());

/// See the module docs. A ring of [`SHALLOW`] entries (refs into the
/// queue's slab, or, for the posted queue, the entries themselves): taking
/// the front (the usual match) is an index bump, with none of a general
/// deque's wrap and growth checks.
#[derive(Debug)]
pub(crate) struct Shallow<E = Ref> {
    /// The queue's entries, `len` of them from `head` (wrapping), in
    /// sequence order, while `active`.
    ring: Box<[E; SHALLOW]>,
    head: usize,
    len: usize,
    active: bool,
    /// [`SHALLOW`], or 0 for a queue that always uses its lanes (the lanes'
    /// own tests).
    limit: usize,
}

impl Default for Shallow<Ref> {
    fn default() -> Self {
        Shallow::new(Ref { seq: 0, index: 0 })
    }
}

impl<E: Copy> Shallow<E> {
    /// An empty list; `fill` only fills the ring's unused places.
    pub(crate) fn new(fill: E) -> Self {
        Shallow {
            ring: Box::new([fill; SHALLOW]),
            head: 0,
            len: 0,
            active: true,
            limit: SHALLOW,
        }
    }

    /// A queue that never lists: the lanes always hold it.
    #[cfg(test)]
    pub(crate) fn never(fill: E) -> Self {
        Shallow {
            active: false,
            limit: 0,
            ..Shallow::new(fill)
        }
    }

    /// Entries listed (0 while the lanes hold the queue).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True while the list (not the lanes) holds the queue.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    /// Appends `r` if the list holds the queue and has room; `false` means
    /// the caller must put it in the lanes (after [`Shallow::spill`]).
    #[inline]
    pub(crate) fn push(&mut self, r: E) -> bool {
        if self.active && self.len < self.limit {
            self.ring[(self.head + self.len) & MASK] = r;
            self.len += 1;
            return true;
        }
        false
    }

    /// Hands the list's entries, in order, to the lanes: from now on they
    /// hold the queue.
    pub(crate) fn spill(&mut self) -> impl Iterator<Item = E> + '_ {
        self.active = false;
        let (head, len) = (self.head, std::mem::take(&mut self.len));
        (0..len).map(move |i| self.ring[(head + i) & MASK])
    }

    /// The queue emptied: the next entry starts a list again (the lanes
    /// hold no live entry, and compaction has removed their stale ones).
    #[inline]
    pub(crate) fn drained(&mut self) {
        self.active = true;
    }

    /// The entries, in order.
    #[inline]
    pub(crate) fn refs(&self) -> impl Iterator<Item = E> + '_ {
        (0..self.len).map(move |i| self.ring[(self.head + i) & MASK])
    }

    /// The front entry, by reference (the usual match of in-order
    /// traffic, looked at without copying it out).
    #[inline(always)]
    pub(crate) fn front(&self) -> Option<&E> {
        (self.len != 0).then(|| &self.ring[self.head])
    }

    /// Removes the front entry (there is one).
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> E {
        debug_assert!(self.len != 0);
        let e = self.ring[self.head];
        self.head = (self.head + 1) & MASK;
        self.len -= 1;
        e
    }

    /// The entry at `i` (of [`Shallow::refs`]).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<E> {
        (i < self.len).then(|| self.ring[(self.head + i) & MASK])
    }

    /// Removes the entry at `i` (found by a scan of [`Shallow::refs`]).
    #[inline]
    pub(crate) fn remove_at(&mut self, i: usize) -> Option<E> {
        if i >= self.len {
            return None;
        }
        let r = self.ring[(self.head + i) & MASK];
        if i == 0 {
            // The usual case, the front: nothing moves.
            self.head = (self.head + 1) & MASK;
        } else {
            // Close the gap from behind (the entries after `i` move up).
            for k in i..self.len - 1 {
                self.ring[(self.head + k) & MASK] = self.ring[(self.head + k + 1) & MASK];
            }
        }
        self.len -= 1;
        Some(r)
    }

    /// Removes the first entry for which `is` is true, if the list has one.
    pub(crate) fn remove_first(&mut self, is: impl Fn(&E) -> bool) -> Option<E> {
        let i = self.refs().position(|x| is(&x))?;
        self.remove_at(i)
    }
}

impl Shallow<Ref> {
    /// Removes `r` if the list has it.
    pub(crate) fn remove(&mut self, r: Ref) -> bool {
        self.remove_first(|&x| x == r).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(seq: u64) -> Ref {
        Ref {
            seq,
            index: seq as u32,
        }
    }

    #[test]
    fn the_ring_keeps_order_through_wraps_and_middle_removals() {
        let mut s = Shallow::default();
        let mut model: std::collections::VecDeque<Ref> = Default::default();
        let mut next = 0;
        // Pushes, front takes and middle removals, many times around.
        for round in 0..500u64 {
            while model.len() < SHALLOW && next % 7 != 3 || model.is_empty() {
                assert!(s.push(r(next)));
                model.push_back(r(next));
                next += 1;
            }
            next += 1;
            let i = (round as usize * 5) % model.len();
            assert_eq!(s.remove_at(i), model.remove(i));
            if let Some(front) = model.front().copied() {
                assert_eq!(s.remove_at(0), Some(front));
                model.pop_front();
            }
            assert!(s.refs().eq(model.iter().copied()), "round {round}");
        }
        while model.len() < SHALLOW {
            assert!(s.push(r(next)));
            model.push_back(r(next));
            next += 1;
        }
        assert!(!s.push(r(next)), "a full list refuses");
        assert!(s.spill().eq(model.iter().copied()));
        assert!(!s.active() && s.refs().next().is_none());
    }
}
