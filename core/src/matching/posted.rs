//! The posted-receive queue: receives waiting for a message.
//!
//! While the queue is short its receives sit in the shallow list itself
//! (pattern, item and sequence number in one ring entry), so posting and
//! matching a window of in-order receives touch nothing else. Once it
//! grows past the list, they move into the slab and its lanes (see
//! `shallow.rs`) until it drains.

use super::class::{Class, ClassIndex};
use super::shallow::Shallow;
use super::slots::{Ref, SeqSlab};
use super::MatchStats;
use crate::envelope::{Envelope, Pattern};

/// Identifies one posted receive, for [`PostedQueue::remove`] (cancel).
///
/// Opaque. A key outlives its receive harmlessly: once the receive is matched
/// or removed, the key names nothing, even after its slot is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostedKey(Ref);

/// The slab index of a key whose receive was posted into the list: the
/// receive is found by its sequence number (in the list, or, after a
/// spill, through `PostedQueue::spilled`).
const LISTED: u32 = u32::MAX;

#[derive(Debug)]
struct Posted<T> {
    pattern: Pattern,
    item: T,
}

/// A receive as the shallow list holds it.
#[derive(Debug, Clone, Copy)]
struct Listed<T> {
    seq: u64,
    pattern: Pattern,
    item: T,
}

/// Posted receives, matched against arriving messages in posting order.
///
/// An arriving message is given to the earliest-posted receive whose pattern
/// matches it. Each receive sits in the one lane of its wildcard class; a
/// message looks at the heads of the (up to) four lanes that can match it and
/// takes the smallest sequence number. See the [module docs](super).
#[derive(Debug)]
pub struct PostedQueue<T: Copy + Default> {
    /// The receives while the lanes hold the queue.
    slab: SeqSlab<Posted<T>>,
    /// Holds the queue while it is short (see `shallow.rs`)...
    shallow: Shallow<Listed<T>>,
    /// ...and these lanes otherwise.
    index: ClassIndex,
    /// Where the receives that were listed when the list last spilled went
    /// in the slab (by sequence number, ascending): what their keys name
    /// until the queue drains. At most [`SHALLOW`](super::SHALLOW).
    spilled: Vec<Ref>,
    /// Live receives per wildcard class (any-source, any-tag, any-both).
    /// A zero lets `take_match` skip that class without hashing: with no
    /// wildcard receive posted, only the exact lane is consulted.
    wildcards: [usize; 3],
    next_seq: u64,
    searches: u64,
    examined: u64,
}

impl<T: Copy + Default> Default for PostedQueue<T> {
    fn default() -> Self {
        PostedQueue {
            slab: SeqSlab::default(),
            shallow: Shallow::new(Listed::default()),
            index: ClassIndex::default(),
            spilled: Vec::with_capacity(super::SHALLOW),
            wildcards: [0; 3],
            next_seq: 0,
            searches: 0,
            examined: 0,
        }
    }
}

impl<T: Copy + Default> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            seq: 0,
            pattern: Pattern {
                context: 0,
                source: None,
                tag: None,
            },
            item: T::default(),
        }
    }
}

impl<T: Copy + Default> PostedQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Posts a receive; assigns it the next sequence number.
    ///
    /// This does not look at unexpected messages: an engine first tries
    /// [`UnexpectedQueue::take`](super::UnexpectedQueue::take) and posts
    /// only if nothing matched.
    #[inline]
    pub fn post(&mut self, pattern: Pattern, item: T) -> PostedKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let class = Class::of_pattern(&pattern);
        if let Some(slot) = class.wildcard_slot() {
            self.wildcards[slot] += 1;
        }
        if self.shallow.push(Listed { seq, pattern, item }) {
            return PostedKey(Ref { seq, index: LISTED });
        }
        self.post_deep(seq, pattern, item, class)
    }

    /// [`PostedQueue::post`] into the lanes (moving the list there first
    /// if it is full).
    #[cold]
    #[inline(never)]
    fn post_deep(&mut self, seq: u64, pattern: Pattern, item: T, class: Class) -> PostedKey {
        if self.shallow.active() {
            self.spilled.clear();
            for e in self.shallow.spill() {
                let r = self.slab.insert(
                    e.seq,
                    Posted {
                        pattern: e.pattern,
                        item: e.item,
                    },
                );
                self.index.push(Class::of_pattern(&e.pattern), r);
                self.spilled.push(r);
            }
        }
        let r = self.slab.insert(seq, Posted { pattern, item });
        self.index.push(class, r);
        PostedKey(r)
    }

    /// The shallow list's search: the first listed receive that matches.
    #[inline(always)]
    fn take_listed(&mut self, env: &Envelope) -> Option<T> {
        // In-order traffic matches the front: looked at in place.
        if self.shallow.front().is_some_and(|e| e.pattern.matches(env)) {
            self.examined += 1;
            let e = self.shallow.pop_front();
            self.forget_wildcard(Class::of_pattern(&e.pattern));
            return Some(e.item);
        }
        self.take_listed_scan(env)
    }

    #[inline(never)]
    fn take_listed_scan(&mut self, env: &Envelope) -> Option<T> {
        let mut found = None;
        for (i, e) in self.shallow.refs().enumerate() {
            self.examined += 1;
            if e.pattern.matches(env) {
                found = Some(i);
                break;
            }
        }
        let e = self.shallow.remove_at(found?)?;
        self.forget_wildcard(Class::of_pattern(&e.pattern));
        Some(e.item)
    }

    /// The earliest-posted receive whose pattern matches `env`, removed from
    /// the queue.
    #[inline]
    pub fn take_match(&mut self, env: &Envelope) -> Option<T> {
        self.searches += 1;
        if self.shallow.active() {
            return self.take_listed(env);
        }
        self.take_deep(env)
    }

    /// [`PostedQueue::take_match`] from the lanes.
    #[inline(never)]
    fn take_deep(&mut self, env: &Envelope) -> Option<T> {
        if self.wildcards == [0; 3] {
            // Only exact receives are posted: the one lane that can match
            // holds the answer at its head, taken with one lookup.
            let slab = &self.slab;
            let class = Class::Exact(env.context, env.source, env.tag);
            let r = self
                .index
                .take_head(class, |r| slab.is_live(r), &mut self.examined)?;
            let posted = self.slab.remove(r).expect("a lane head is live");
            debug_assert!(posted.pattern.matches(env));
            self.drained_check();
            return Some(posted.item);
        }
        let slab = &self.slab;
        let mut best: Option<(Class, Ref)> = None;
        for class in Class::of_envelope(env) {
            if class
                .wildcard_slot()
                .is_some_and(|slot| self.wildcards[slot] == 0)
            {
                continue;
            }
            if let Some(r) = self
                .index
                .head(class, |r| slab.is_live(r), &mut self.examined)
            {
                if best.is_none_or(|(_, b)| r.seq < b.seq) {
                    best = Some((class, r));
                }
            }
        }
        let (class, r) = best?;
        let posted = self.slab.remove(r).expect("a lane head is live");
        debug_assert!(posted.pattern.matches(env));
        let slab = &self.slab;
        self.index.pop_head(class, |r| slab.is_live(r));
        self.forget_wildcard(class);
        self.drained_check();
        Some(posted.item)
    }

    /// Back to the list once the lanes hold nothing.
    fn drained_check(&mut self) {
        if self.slab.len() == 0 {
            self.shallow.drained();
            self.spilled.clear();
        }
    }

    /// Removes a posted receive (cancel). Returns its item if it was still
    /// posted, `None` if it was already matched or removed.
    pub fn remove(&mut self, key: PostedKey) -> Option<T> {
        let mut r = key.0;
        if r.index == LISTED {
            if self.shallow.active() {
                let e = self.shallow.remove_first(|e| e.seq == r.seq)?;
                self.forget_wildcard(Class::of_pattern(&e.pattern));
                return Some(e.item);
            }
            // Listed when posted, in the lanes since the spill.
            let i = self.spilled.binary_search_by_key(&r.seq, |s| s.seq).ok()?;
            r = self.spilled[i];
        }
        let posted = self.slab.remove(r)?;
        let class = Class::of_pattern(&posted.pattern);
        let slab = &self.slab;
        self.index.mark_stale(class, r, |r| slab.is_live(r));
        self.drained_check();
        self.forget_wildcard(class);
        Some(posted.item)
    }

    /// Removes every posted receive for which `f` is true (cold path: peer
    /// failure), and returns their items in posting order. Linear in the
    /// queue.
    pub fn remove_where(&mut self, mut f: impl FnMut(&Pattern, &T) -> bool) -> Vec<T> {
        if self.shallow.active() {
            let doomed: Vec<u64> = self
                .shallow
                .refs()
                .filter(|e| f(&e.pattern, &e.item))
                .map(|e| e.seq)
                .collect();
            return doomed
                .into_iter()
                .filter_map(|seq| self.remove(PostedKey(Ref { seq, index: LISTED })))
                .collect();
        }
        let doomed = self.slab.refs_where(|p| f(&p.pattern, &p.item));
        doomed
            .into_iter()
            .filter_map(|r| self.remove(PostedKey(r)))
            .collect()
    }

    /// Number of posted receives.
    #[inline]
    pub fn len(&self) -> usize {
        if self.shallow.active() {
            self.shallow.len()
        } else {
            self.slab.len()
        }
    }

    /// True when no receive is posted.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Depth and work counters.
    pub fn stats(&self) -> MatchStats {
        MatchStats {
            depth: self.len(),
            searches: self.searches,
            entries_examined: self.examined,
        }
    }

    #[inline]
    fn forget_wildcard(&mut self, class: Class) {
        if let Some(slot) = class.wildcard_slot() {
            self.wildcards[slot] -= 1;
        }
    }

    /// A queue whose lanes hold every receive, however few (for the lanes'
    /// own tests).
    #[cfg(test)]
    pub(crate) fn lanes_only() -> Self {
        PostedQueue {
            shallow: Shallow::never(Listed::default()),
            ..Self::default()
        }
    }

    #[cfg(test)]
    pub(crate) fn index_mut(&mut self) -> &mut ClassIndex {
        &mut self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: u32 = 7;

    fn exact(source: i32, tag: i32) -> Pattern {
        Pattern {
            context: CTX,
            source: Some(source),
            tag: Some(tag),
        }
    }

    fn env(source: i32, tag: i32) -> Envelope {
        Envelope {
            source,
            tag,
            context: CTX,
        }
    }

    const ANY_SOURCE: Pattern = Pattern {
        context: CTX,
        source: None,
        tag: Some(5),
    };
    const ANY_TAG: Pattern = Pattern {
        context: CTX,
        source: Some(1),
        tag: None,
    };
    const ANY_BOTH: Pattern = Pattern {
        context: CTX,
        source: None,
        tag: None,
    };

    #[test]
    fn exact_posted_first_wins_over_wildcard() {
        for wild in [ANY_SOURCE, ANY_TAG, ANY_BOTH] {
            let mut q = PostedQueue::new();
            q.post(exact(1, 5), "exact");
            q.post(wild, "wild");
            assert_eq!(q.take_match(&env(1, 5)), Some("exact"), "{wild:?}");
            assert_eq!(q.take_match(&env(1, 5)), Some("wild"), "{wild:?}");
            assert_eq!(q.take_match(&env(1, 5)), None);
            assert!(q.is_empty());
        }
    }

    #[test]
    fn wildcard_posted_first_wins_over_exact() {
        for wild in [ANY_SOURCE, ANY_TAG, ANY_BOTH] {
            let mut q = PostedQueue::new();
            q.post(wild, "wild");
            q.post(exact(1, 5), "exact");
            assert_eq!(q.take_match(&env(1, 5)), Some("wild"), "{wild:?}");
            assert_eq!(q.take_match(&env(1, 5)), Some("exact"), "{wild:?}");
            assert!(q.is_empty());
        }
    }

    #[test]
    fn earliest_of_all_four_classes_wins() {
        let mut q = PostedQueue::new();
        q.post(ANY_BOTH, 0);
        q.post(ANY_TAG, 1);
        q.post(exact(1, 5), 2);
        q.post(ANY_SOURCE, 3);
        let got: Vec<_> = (0..4).map(|_| q.take_match(&env(1, 5)).unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    #[test]
    fn non_matching_context_source_and_tag_are_ignored() {
        let mut q = PostedQueue::new();
        q.post(ANY_BOTH, "other");
        assert_eq!(
            q.take_match(&Envelope {
                source: 1,
                tag: 5,
                context: CTX + 1
            }),
            None
        );
        q.post(ANY_TAG, "any tag");
        q.post(ANY_SOURCE, "any source");
        assert_eq!(q.take_match(&env(2, 6)), Some("other"));
        assert_eq!(q.take_match(&env(2, 6)), None, "neither source 1 nor tag 5");
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn cancel_head_entry() {
        let mut q = PostedQueue::lanes_only();
        let a = q.post(exact(1, 5), 'a');
        q.post(exact(1, 5), 'b');
        assert_eq!(q.remove(a), Some('a'));
        assert_eq!(q.remove(a), None, "second cancel finds nothing");
        assert_eq!(
            q.index_mut().lane_len(Class::of_pattern(&exact(1, 5))),
            1,
            "head popped"
        );
        assert_eq!(q.take_match(&env(1, 5)), Some('b'));
        assert_eq!(q.stats().entries_examined, 1);
    }

    #[test]
    fn cancel_middle_entry() {
        let mut q = PostedQueue::new();
        q.post(exact(1, 5), 'a');
        let b = q.post(exact(1, 5), 'b');
        q.post(exact(1, 5), 'c');
        let w = q.post(ANY_BOTH, 'w');
        assert_eq!(q.remove(b), Some('b'));
        assert_eq!(q.remove(w), Some('w'));
        assert_eq!(q.len(), 2);
        assert_eq!(q.take_match(&env(1, 5)), Some('a'));
        assert_eq!(
            q.take_match(&env(1, 5)),
            Some('c'),
            "the cancelled middle is skipped"
        );
        assert_eq!(q.take_match(&env(1, 5)), None);
        assert_eq!(q.remove(b), None);
        assert_eq!(q.index_mut().lane_count(), 0);
    }

    #[test]
    fn cancel_after_match_returns_none() {
        let mut q = PostedQueue::new();
        let a = q.post(ANY_SOURCE, 1u32);
        assert_eq!(q.take_match(&env(3, 5)), Some(1));
        assert_eq!(q.remove(a), None);
        // The freed slot is reused; the old key must not reach the new entry.
        let b = q.post(ANY_SOURCE, 2);
        assert_eq!(q.remove(a), None);
        assert_eq!(q.remove(b), Some(2));
    }

    #[test]
    fn compaction_bounds_lane_length() {
        let mut q = PostedQueue::lanes_only();
        let n = 10_000;
        let keys: Vec<_> = (0..n).map(|i| q.post(exact(1, 5), i)).collect();
        // Cancel every receive but the first, from the back: none is ever at
        // the head, so only compaction can shorten the lane.
        for (cancelled, &k) in keys[1..].iter().rev().enumerate() {
            assert!(q.remove(k).is_some());
            let live = n - 1 - cancelled;
            let lane = q.index_mut().lane_len(Class::of_pattern(&exact(1, 5)));
            assert!(
                lane <= 2 * live,
                "lane holds {lane} entries for {live} live"
            );
        }
        assert!(
            q.index_mut().compacted() < n as u64,
            "compaction work is amortized"
        );
        assert_eq!(q.take_match(&env(1, 5)), Some(0));
        assert_eq!(q.index_mut().lane_count(), 0);
    }

    #[test]
    fn distinct_tag_churn_does_not_grow_the_maps() {
        let mut q = PostedQueue::lanes_only();
        for tag in 0..10_000 {
            let k = q.post(exact(1, tag), tag);
            q.post(
                Pattern {
                    context: CTX,
                    source: None,
                    tag: Some(tag),
                },
                tag,
            );
            if tag % 2 == 0 {
                q.remove(k);
            } else {
                assert_eq!(q.take_match(&env(1, tag)), Some(tag));
            }
            assert_eq!(q.take_match(&env(2, tag)), Some(tag));
            assert_eq!(q.index_mut().lane_count(), 0);
        }
    }

    #[test]
    fn remove_where_takes_matching_receives_in_post_order() {
        let mut q = PostedQueue::new();
        q.post(exact(1, 5), 10);
        q.post(exact(2, 5), 20);
        q.post(ANY_BOTH, 30);
        let k = q.post(exact(1, 6), 11);
        q.post(ANY_TAG, 12);
        let failed = q.remove_where(|p, _| p.source == Some(1));
        assert_eq!(failed, vec![10, 11, 12]);
        assert_eq!(q.remove(k), None);
        assert_eq!(q.len(), 2);
        assert_eq!(
            q.take_match(&env(1, 5)),
            Some(30),
            "source 1 is left to the wildcard"
        );
        assert_eq!(q.take_match(&env(2, 5)), Some(20));
        assert!(q.is_empty());
        assert_eq!(q.stats().depth, 0);
    }

    #[test]
    fn order_holds_across_the_list_and_the_lanes() {
        // Fill past the list (into the lanes), drain to empty (back to the
        // list), and fill again: posting order wins every time.
        let mut q = PostedQueue::new();
        for round in 0..3 {
            let n = super::super::shallow::SHALLOW * (round + 1) + 1;
            let keys: Vec<_> = (0..n)
                .map(|i| {
                    let p = if i % 3 == 0 { ANY_BOTH } else { exact(1, 5) };
                    q.post(p, i)
                })
                .collect();
            // A cancel in the middle, wherever the queue is kept.
            assert_eq!(q.remove(keys[n / 2]), Some(n / 2));
            let mut got = Vec::new();
            while let Some(i) = q.take_match(&env(1, 5)) {
                got.push(i);
            }
            let want: Vec<_> = (0..n).filter(|&i| i != n / 2).collect();
            assert_eq!(got, want, "round {round}");
            assert!(q.is_empty());
        }
    }
}
