//! FIFO lanes with lazy deletion, kept in a hash map by key.
//!
//! A lane holds [`Ref`]s in sequence order. An entry can die without its
//! lane noticing (it was matched through another lane, or cancelled), so the
//! lane only counts its stale entries and drops them later: at the head when
//! a search walks past them, or all at once by compaction.
//!
//! Invariant, restored after every operation: a lane in the map has at least
//! one live entry, and no more stale entries than live ones. So a lane's
//! length is at most twice its live count, an idle key costs nothing, and
//! compaction (linear in the lane) only runs after at least as many cheap
//! operations made entries stale, which keeps everything amortized O(1).

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::slots::Ref;

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
    lanes: FxHashMap<K, Lane>,
    spare: Vec<VecDeque<Ref>>,
    /// Entries dropped by compaction: lets tests check that compaction work
    /// stays proportional to the removals that caused it.
    compacted: u64,
}

impl<K> Default for LaneMap<K> {
    fn default() -> Self {
        LaneMap {
            lanes: FxHashMap::default(),
            spare: Vec::new(),
            compacted: 0,
        }
    }
}

impl<K: Hash + Eq + Copy> LaneMap<K> {
    /// Appends `r`, whose sequence number is larger than any in the lane.
    pub(crate) fn push(&mut self, key: K, r: Ref) {
        let spare = &mut self.spare;
        let lane = self.lanes.entry(key).or_insert_with(|| Lane {
            entries: spare.pop().unwrap_or_default(),
            stale: 0,
        });
        debug_assert!(lane.entries.back().is_none_or(|b| b.seq < r.seq));
        lane.entries.push_back(r);
    }

    /// The earliest live entry of the lane. Stale entries in front of it are
    /// popped; every entry looked at is added to `examined`.
    pub(crate) fn head(
        &mut self,
        key: K,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        let lane = self.lanes.get_mut(&key)?;
        while let Some(&r) = lane.entries.front() {
            *examined += 1;
            if is_live(r) {
                return Some(r);
            }
            lane.entries.pop_front();
            debug_assert!(lane.stale > 0, "an uncounted stale entry");
            lane.stale -= 1;
        }
        // The invariant says this cannot happen; recover rather than leak.
        debug_assert!(false, "a lane without a live entry");
        self.drop_lane(key);
        None
    }

    /// Pops the head that [`head`](Self::head) just returned. The caller has
    /// already removed the entry from the slab.
    pub(crate) fn pop_head(&mut self, key: K, is_live: impl Fn(Ref) -> bool) {
        if let Some(lane) = self.lanes.get_mut(&key) {
            lane.entries.pop_front();
            self.settle(key, is_live);
        }
    }

    /// `r`, an entry of this lane, was removed from the slab through some
    /// other path.
    pub(crate) fn mark_stale(&mut self, key: K, r: Ref, is_live: impl Fn(Ref) -> bool) {
        let Some(lane) = self.lanes.get_mut(&key) else {
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
        let Some(lane) = self.lanes.get_mut(&key) else {
            return;
        };
        let live = lane.entries.len() - lane.stale;
        if lane.stale > live {
            let before = lane.entries.len();
            lane.entries.retain(|&r| is_live(r));
            debug_assert_eq!(lane.entries.len(), live, "stale count out of sync");
            self.compacted += (before - lane.entries.len()) as u64;
            lane.stale = 0;
            let len = lane.entries.len();
            if lane.entries.capacity() > SHRINK_MIN_CAPACITY.max(SHRINK_FACTOR * len) {
                lane.entries.shrink_to(2 * len);
            }
        }
        if lane.entries.is_empty() {
            self.drop_lane(key);
        }
    }

    fn drop_lane(&mut self, key: K) {
        if let Some(mut lane) = self.lanes.remove(&key) {
            if self.spare.len() < SPARE_LANES && lane.entries.capacity() <= SPARE_CAPACITY {
                lane.entries.clear();
                self.spare.push(lane.entries);
            }
        }
    }

    /// Number of lanes in the map.
    #[cfg(test)]
    pub(crate) fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// Entries (live and stale) in one lane.
    #[cfg(test)]
    pub(crate) fn lane_len(&self, key: K) -> usize {
        self.lanes.get(&key).map_or(0, |l| l.entries.len())
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
        assert_eq!(lanes.lane_count(), 0, "an empty lane leaves the map");
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
        assert_eq!(lanes.spare.len(), 1, "one buffer cycles through every key");
    }
}
