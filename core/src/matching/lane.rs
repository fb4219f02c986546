//! FIFO lanes with lazy deletion, kept in a hash map by key.
//!
//! A lane holds [`Ref`]s in sequence order. An entry can die without its
//! lane noticing (it was matched through another lane, or cancelled), so the
//! lane only counts its stale entries and drops them later: at the head when
//! a search walks past them, or all at once by compaction.
//!
//! Invariant, restored after every operation: a lane has no more stale
//! entries than live ones (so an empty lane has none at all). So a lane's
//! length is at most twice its live count, and compaction (linear in the
//! lane) only runs after at least as many cheap operations made entries
//! stale, which keeps everything amortized O(1).
//!
//! A lane that empties stays in the map: the next message on the same key
//! (a ping-pong reuses one key forever) then finds it without a hash
//! insert and remove per message. Empty lanes are swept out together once
//! they outnumber both [`EMPTY_KEEP`] and the lanes in use, so a stream of
//! distinct keys costs amortized O(1) and bounded memory.
//!
//! Lanes live in a vector, and the map gives a key's index; the last key
//! looked up is remembered with its index, so a receive posted and matched
//! on one key (the usual traffic, however deep the queue) hashes nothing.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::slots::Ref;

/// Empty lanes tolerated in the map before a sweep.
const EMPTY_KEEP: usize = 64;
/// Emptied lanes kept for reuse, so that churn through distinct keys (a new
/// tag per message) does not allocate a fresh `VecDeque` every time.
const SPARE_LANES: usize = 64;
/// Only small buffers are worth keeping; a large one would pin memory.
const SPARE_CAPACITY: usize = 32;
/// After compaction, give memory back once the buffer is this sparse.
const SHRINK_FACTOR: usize = 4;
const SHRINK_MIN_CAPACITY: usize = 64;

#[derive(Debug, Default)]
struct Lane {
    entries: VecDeque<Ref>,
    stale: usize,
}

/// One class of lanes (exact, any-source, ...), keyed by what that class
/// matches on.
#[derive(Debug)]
pub(crate) struct LaneMap<K> {
    /// Each key's index in `lanes`.
    ids: FxHashMap<K, u32>,
    lanes: Vec<Lane>,
    /// Indices of `lanes` that no key uses (swept out).
    free_ids: Vec<u32>,
    /// The last key looked up and its index: `ids` is not consulted again
    /// for it until a sweep.
    last: Option<(K, u32)>,
    spare: Vec<VecDeque<Ref>>,
    /// Lanes in the map with no entry.
    empty: usize,
    /// Entries dropped by compaction: lets tests check that compaction work
    /// stays proportional to the removals that caused it.
    compacted: u64,
}

impl<K> Default for LaneMap<K> {
    fn default() -> Self {
        LaneMap {
            ids: FxHashMap::default(),
            lanes: Vec::new(),
            free_ids: Vec::new(),
            last: None,
            spare: Vec::new(),
            empty: 0,
            compacted: 0,
        }
    }
}

impl<K: Hash + Eq + Copy> LaneMap<K> {
    /// The index of `key`'s lane, if it has one.
    #[inline]
    fn id(&mut self, key: K) -> Option<u32> {
        if let Some((k, id)) = self.last {
            if k == key {
                return Some(id);
            }
        }
        let id = *self.ids.get(&key)?;
        self.last = Some((key, id));
        Some(id)
    }

    /// `key`'s lane, if it has one.
    #[inline]
    fn lane_mut(&mut self, key: K) -> Option<&mut Lane> {
        let id = self.id(key)?;
        Some(&mut self.lanes[id as usize])
    }

    /// Appends `r`, whose sequence number is larger than any in the lane.
    #[inline]
    pub(crate) fn push(&mut self, key: K, r: Ref) {
        let id = match self.id(key) {
            Some(id) => {
                if self.lanes[id as usize].entries.is_empty() {
                    self.empty -= 1;
                }
                id
            }
            None => self.new_lane(key),
        };
        let lane = &mut self.lanes[id as usize];
        debug_assert!(lane.entries.back().is_none_or(|b| b.seq < r.seq));
        lane.entries.push_back(r);
    }

    /// A lane for `key`, which has none.
    fn new_lane(&mut self, key: K) -> u32 {
        let lane = Lane {
            entries: self.spare.pop().unwrap_or_default(),
            stale: 0,
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.lanes[id as usize] = lane;
                id
            }
            None => {
                self.lanes.push(lane);
                (self.lanes.len() - 1) as u32
            }
        };
        self.ids.insert(key, id);
        self.last = Some((key, id));
        id
    }

    /// The earliest live entry of the lane. Stale entries in front of it are
    /// popped; every entry looked at is added to `examined`.
    pub(crate) fn head(
        &mut self,
        key: K,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        let lane = self.lane_mut(key)?;
        if lane.entries.is_empty() {
            return None;
        }
        let head = Self::live_front(lane, is_live, examined);
        if head.is_none() {
            self.emptied();
        }
        head
    }

    /// Pops the stale entries in front of the lane's first live one and
    /// returns that one (left in place). `None` only if the lane held no
    /// live entry, which the invariant rules out: the lane is then emptied
    /// (recovering rather than leaking), and the caller must count it.
    fn live_front(
        lane: &mut Lane,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        while let Some(&r) = lane.entries.front() {
            *examined += 1;
            if is_live(r) {
                return Some(r);
            }
            lane.entries.pop_front();
            debug_assert!(lane.stale > 0, "an uncounted stale entry");
            lane.stale = lane.stale.saturating_sub(1);
        }
        debug_assert!(false, "a lane without a live entry");
        lane.stale = 0;
        None
    }

    /// Every entry of a lane, live and stale, in sequence order.
    pub(crate) fn entries(&self, key: K) -> impl Iterator<Item = Ref> + '_ {
        self.ids
            .get(&key)
            .into_iter()
            .flat_map(|&id| self.lanes[id as usize].entries.iter().copied())
    }

    /// Pops the head that [`head`](Self::head) just returned. The caller has
    /// already removed the entry from the slab.
    pub(crate) fn pop_head(&mut self, key: K, is_live: impl Fn(Ref) -> bool) {
        if let Some(id) = self.id(key) {
            let lane = &mut self.lanes[id as usize];
            lane.entries.pop_front();
            if Self::settle_lane(lane, is_live, &mut self.compacted) {
                self.emptied();
            }
        }
    }

    /// [`head`](Self::head) and [`pop_head`](Self::pop_head) with one hash
    /// lookup, for a caller that takes the head whatever it is: the earliest
    /// live entry, popped. `is_live` must say false of the returned entry
    /// from now on (the caller removes it from the slab next).
    pub(crate) fn take_head(
        &mut self,
        key: K,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        let id = self.id(key)?;
        let lane = &mut self.lanes[id as usize];
        if lane.entries.is_empty() {
            return None;
        }
        let head = Self::live_front(lane, &is_live, examined);
        // The lane lost a live entry (or, against the invariant, had none):
        // the stale ones may need dropping.
        lane.entries.pop_front();
        if Self::settle_lane(lane, &is_live, &mut self.compacted) {
            self.emptied();
        }
        head
    }

    /// `r`, an entry of this lane, was removed from the slab through some
    /// other path.
    pub(crate) fn mark_stale(&mut self, key: K, r: Ref, is_live: impl Fn(Ref) -> bool) {
        let Some(lane) = self.lane_mut(key) else {
            debug_assert!(false, "a live entry missing from its lane");
            return;
        };
        // Dropping a dead head at once is free, and it is the common case
        // when traffic is consumed in order: such lanes then never compact.
        if lane.entries.front() == Some(&r) {
            lane.entries.pop_front();
        } else {
            lane.stale += 1;
        }
        self.settle(key, is_live);
    }

    /// Restores the invariant for one lane after it lost a live entry.
    fn settle(&mut self, key: K, is_live: impl Fn(Ref) -> bool) {
        let Some(id) = self.id(key) else {
            return;
        };
        let lane = &mut self.lanes[id as usize];
        if Self::settle_lane(lane, is_live, &mut self.compacted) {
            self.emptied();
        }
    }

    /// [`settle`](Self::settle) on a lane already looked up; true if the
    /// lane is now empty (the caller then calls [`emptied`](Self::emptied)).
    #[inline]
    fn settle_lane(lane: &mut Lane, is_live: impl Fn(Ref) -> bool, compacted: &mut u64) -> bool {
        let live = lane.entries.len() - lane.stale;
        if lane.stale > live {
            let before = lane.entries.len();
            lane.entries.retain(|&r| is_live(r));
            debug_assert_eq!(lane.entries.len(), live, "stale count out of sync");
            *compacted += (before - lane.entries.len()) as u64;
            lane.stale = 0;
            let len = lane.entries.len();
            if lane.entries.capacity() > SHRINK_MIN_CAPACITY.max(SHRINK_FACTOR * len) {
                lane.entries.shrink_to(2 * len);
            }
        }
        lane.entries.is_empty()
    }

    /// One more lane became empty: sweep the empty ones out once they
    /// outnumber the lanes in use (and [`EMPTY_KEEP`]). The sweep is linear
    /// in the map, after at least as many lanes emptied: amortized O(1).
    fn emptied(&mut self) {
        self.empty += 1;
        let in_use = self.ids.len() - self.empty;
        if self.empty <= EMPTY_KEEP.max(in_use) {
            return;
        }
        let (spare, lanes, free_ids) = (&mut self.spare, &mut self.lanes, &mut self.free_ids);
        self.ids.retain(|_, &mut id| {
            let lane = &mut lanes[id as usize];
            if !lane.entries.is_empty() {
                return true;
            }
            let entries = std::mem::take(&mut lane.entries);
            if spare.len() < SPARE_LANES && entries.capacity() <= SPARE_CAPACITY {
                spare.push(entries);
            }
            free_ids.push(id);
            false
        });
        self.last = None;
        self.empty = 0;
    }

    /// Number of lanes in use (with at least one entry).
    #[cfg(test)]
    pub(crate) fn lane_count(&self) -> usize {
        self.ids
            .values()
            .filter(|&&id| !self.lanes[id as usize].entries.is_empty())
            .count()
    }

    /// Number of lanes in the map, empty ones included.
    #[cfg(test)]
    pub(crate) fn map_len(&self) -> usize {
        self.ids.len()
    }

    /// Entries (live and stale) in one lane.
    #[cfg(test)]
    pub(crate) fn lane_len(&self, key: K) -> usize {
        self.ids
            .get(&key)
            .map_or(0, |&id| self.lanes[id as usize].entries.len())
    }

    #[cfg(test)]
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::slots::SeqSlab;

    fn fill(slab: &mut SeqSlab<()>, lanes: &mut LaneMap<u8>, n: u64) -> Vec<Ref> {
        (0..n)
            .map(|seq| {
                let r = slab.insert(seq, ());
                lanes.push(0, r);
                r
            })
            .collect()
    }

    #[test]
    fn stale_never_outnumbers_live() {
        let mut slab = SeqSlab::default();
        let mut lanes = LaneMap::default();
        let refs = fill(&mut slab, &mut lanes, 1000);
        // Kill from the back, so no death is ever at the head.
        for (killed, &r) in refs.iter().rev().enumerate() {
            slab.remove(r);
            lanes.mark_stale(0, r, |r| slab.is_live(r));
            let live = 1000 - killed - 1;
            assert!(
                lanes.lane_len(0) <= 2 * live,
                "lane {} for {live} live",
                lanes.lane_len(0)
            );
        }
        assert_eq!(lanes.lane_count(), 0, "no lane left in use");
        assert!(lanes.compacted() <= 1000);
    }

    #[test]
    fn head_skips_and_pops_stale_entries() {
        let mut slab = SeqSlab::default();
        let mut lanes = LaneMap::default();
        let refs = fill(&mut slab, &mut lanes, 4);
        // refs[1] dies in the middle: counted, not popped.
        slab.remove(refs[1]);
        lanes.mark_stale(0, refs[1], |r| slab.is_live(r));
        assert_eq!(lanes.lane_len(0), 4);
        // refs[0] dies at the head: popped at once.
        slab.remove(refs[0]);
        lanes.mark_stale(0, refs[0], |r| slab.is_live(r));
        assert_eq!(lanes.lane_len(0), 3);
        let mut examined = 0;
        assert_eq!(
            lanes.head(0, |r| slab.is_live(r), &mut examined),
            Some(refs[2])
        );
        assert_eq!(examined, 2, "one stale skip, then the live head");
        assert_eq!(lanes.lane_len(0), 2);
    }

    #[test]
    fn spare_lanes_are_reused() {
        let mut slab = SeqSlab::default();
        let mut lanes = LaneMap::default();
        for seq in 0..100u64 {
            let r = slab.insert(seq, ());
            lanes.push(seq as u8, r);
            slab.remove(r);
            let mut examined = 0;
            lanes.head(
                seq as u8,
                |r| slab.is_live(r) || r.seq == seq,
                &mut examined,
            );
            lanes.pop_head(seq as u8, |r| slab.is_live(r));
        }
        assert_eq!(lanes.lane_count(), 0);
        assert!(
            lanes.map_len() <= EMPTY_KEEP + 1,
            "empty lanes are swept: {} kept",
            lanes.map_len()
        );
        assert!(lanes.spare.len() <= SPARE_LANES);
    }

    #[test]
    fn a_key_in_steady_use_keeps_its_lane() {
        let mut slab = SeqSlab::default();
        let mut lanes = LaneMap::default();
        for seq in 0..10u64 {
            let r = slab.insert(seq, ());
            lanes.push(7, r);
            let mut examined = 0;
            assert_eq!(lanes.head(7, |r| slab.is_live(r), &mut examined), Some(r));
            slab.remove(r);
            lanes.pop_head(7, |r| slab.is_live(r));
            assert_eq!(lanes.lane_count(), 0);
            assert_eq!(
                lanes.map_len(),
                1,
                "the emptied lane stays for the next message"
            );
            assert_eq!(lanes.empty, 1);
        }
    }
}
