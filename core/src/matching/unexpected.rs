//! The unexpected-message queue: arrived messages no receive has taken yet.

use super::class::{Class, ClassIndex};
use super::shallow::Shallow;
use super::slots::{Ref, SeqSlab};
use super::MatchStats;
use crate::envelope::{ContextId, Envelope, Pattern};

/// Identifies one unexpected message (for probe results and matched probe).
///
/// Opaque. Once the message is removed the key names nothing, even after its
/// slot is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnexpectedKey(Ref);

#[derive(Debug)]
struct Arrived<M> {
    env: Envelope,
    msg: M,
}

/// Arrived messages that no posted receive matched, in arrival order.
///
/// A receive (or probe) gets the earliest-arrived message its pattern
/// matches. Each message is indexed in four lanes, one per wildcard class,
/// so every pattern reads exactly one lane head. See the
/// [module docs](super).
#[derive(Debug)]
pub struct UnexpectedQueue<M> {
    slab: SeqSlab<Arrived<M>>,
    /// Holds the queue while it is short (see `shallow.rs`)...
    shallow: Shallow,
    /// ...and these lanes otherwise.
    index: ClassIndex,
    next_seq: u64,
    searches: u64,
    examined: u64,
}

impl<M> Default for UnexpectedQueue<M> {
    fn default() -> Self {
        UnexpectedQueue {
            slab: SeqSlab::default(),
            shallow: Shallow::default(),
            index: ClassIndex::default(),
            next_seq: 0,
            searches: 0,
            examined: 0,
        }
    }
}

impl<M> UnexpectedQueue<M> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an arrived message (arrival order = sequence order).
    ///
    /// Non-overtaking is the caller's half of the contract: messages from one
    /// sender on one context must be pushed in the order they were sent.
    pub fn push(&mut self, env: Envelope, msg: M) -> UnexpectedKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let r = self.slab.insert(seq, Arrived { env, msg });
        if !self.shallow.push(r) {
            if self.shallow.active() {
                for earlier in self.shallow.spill() {
                    let env = self
                        .slab
                        .get(earlier)
                        .expect("a listed message is live")
                        .env;
                    for class in Class::of_envelope(&env) {
                        self.index.push(class, earlier);
                    }
                }
            }
            for class in Class::of_envelope(&env) {
                self.index.push(class, r);
            }
        }
        UnexpectedKey(r)
    }

    /// The earliest-arrived message matching `pattern`, not removed (probe).
    ///
    /// Takes `&mut self` because the search drops stale lane entries it
    /// walks past.
    pub fn peek(&mut self, pattern: &Pattern) -> Option<(UnexpectedKey, Envelope, &M)> {
        let (_, r) = self.find(pattern)?;
        let arrived = self.slab.get(r)?;
        Some((UnexpectedKey(r), arrived.env, &arrived.msg))
    }

    /// The earliest-arrived message matching `pattern`, removed (a receive
    /// was posted, or a matched probe).
    pub fn take(&mut self, pattern: &Pattern) -> Option<(Envelope, M)> {
        if self.shallow.active() {
            self.searches += 1;
            let i = self.listed(|env| pattern.matches(env))?;
            let r = self.shallow.remove_at(i).expect("a listed message");
            let arrived = self.slab.remove(r).expect("a listed message is live");
            return Some((arrived.env, arrived.msg));
        }
        let (class, r) = self.find(pattern)?;
        let arrived = self.slab.remove(r).expect("a lane head is live");
        let slab = &self.slab;
        self.index.pop_head(class, |r| slab.is_live(r));
        for other in Class::of_envelope(&arrived.env) {
            if other != class {
                self.index.mark_stale(other, r, |r| slab.is_live(r));
            }
        }
        self.drained_check();
        Some((arrived.env, arrived.msg))
    }

    /// The position of the first listed message whose envelope satisfies
    /// `f` (the shallow queue's search).
    fn listed(&mut self, mut f: impl FnMut(&Envelope) -> bool) -> Option<usize> {
        let slab = &self.slab;
        for (i, r) in self.shallow.refs().enumerate() {
            self.examined += 1;
            if slab.get(r).is_some_and(|a| f(&a.env)) {
                return Some(i);
            }
        }
        None
    }

    /// Back to the list once the lanes hold nothing.
    fn drained_check(&mut self) {
        if self.slab.len() == 0 {
            self.shallow.drained();
        }
    }

    /// Removes a specific message; `None` if it is already gone.
    pub fn remove(&mut self, key: UnexpectedKey) -> Option<(Envelope, M)> {
        let arrived = self.slab.remove(key.0)?;
        if !(self.shallow.active() && self.shallow.remove(key.0)) {
            let slab = &self.slab;
            for class in Class::of_envelope(&arrived.env) {
                self.index.mark_stale(class, key.0, |r| slab.is_live(r));
            }
            self.drained_check();
        }
        Some((arrived.env, arrived.msg))
    }

    /// The message behind `key`, if it is still queued (e.g. to append a
    /// late fragment to it).
    pub fn get_mut(&mut self, key: UnexpectedKey) -> Option<&mut M> {
        self.slab.get_mut(key.0).map(|a| &mut a.msg)
    }

    /// Removes every message for which `f` is true (cold path: peer failure),
    /// returned in arrival order. Linear in the queue.
    pub fn remove_where(&mut self, mut f: impl FnMut(&Envelope, &M) -> bool) -> Vec<(Envelope, M)> {
        let doomed = self.slab.refs_where(|a| f(&a.env, &a.msg));
        doomed
            .into_iter()
            .filter_map(|r| self.remove(UnexpectedKey(r)))
            .collect()
    }

    /// The earliest-arrived message on `context` whose envelope satisfies
    /// `f`. Linear in that context's queued messages: for a collective that
    /// waits (collective contexts hold few messages), not a receive's path.
    pub fn find_on_context(
        &self,
        context: ContextId,
        mut f: impl FnMut(&Envelope) -> bool,
    ) -> Option<Envelope> {
        if self.shallow.active() {
            return self
                .shallow
                .refs()
                .filter_map(|r| self.slab.get(r))
                .map(|a| a.env)
                .find(|env| env.context == context && f(env));
        }
        self.index
            .on_context(context)
            .filter_map(|r| self.slab.get(r))
            .map(|a| a.env)
            .find(|env| f(env))
    }

    /// Number of queued messages.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// True when no message is queued.
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

    /// Every message that matches `pattern` is in the lane of the pattern's
    /// class, in arrival order, so that lane's live head is the answer.
    fn find(&mut self, pattern: &Pattern) -> Option<(Class, Ref)> {
        self.searches += 1;
        if self.shallow.active() {
            let i = self.listed(|env| pattern.matches(env))?;
            return Some((Class::of_pattern(pattern), self.shallow.get(i)?));
        }
        let class = Class::of_pattern(pattern);
        let slab = &self.slab;
        let r = self
            .index
            .head(class, |r| slab.is_live(r), &mut self.examined)?;
        debug_assert!(slab.get(r).is_some_and(|a| pattern.matches(&a.env)));
        Some((class, r))
    }

    /// A queue whose lanes hold every message, however few (for the
    /// lanes' own tests).
    #[cfg(test)]
    pub(crate) fn lanes_only() -> Self {
        UnexpectedQueue {
            shallow: Shallow::never(Ref { seq: 0, index: 0 }),
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

    const CTX: u32 = 3;

    fn env(source: i32, tag: i32) -> Envelope {
        Envelope {
            source,
            tag,
            context: CTX,
        }
    }

    fn pat(source: Option<i32>, tag: Option<i32>) -> Pattern {
        Pattern {
            context: CTX,
            source,
            tag,
        }
    }

    #[test]
    fn each_pattern_class_takes_the_earliest_arrival() {
        let mut q = UnexpectedQueue::new();
        q.push(env(1, 5), 'a');
        q.push(env(2, 6), 'b');
        q.push(env(1, 6), 'c');
        q.push(env(2, 5), 'd');
        assert_eq!(q.take(&pat(Some(2), Some(5))).map(|m| m.1), Some('d'));
        assert_eq!(q.take(&pat(None, Some(6))).map(|m| m.1), Some('b'));
        assert_eq!(q.take(&pat(Some(1), None)).map(|m| m.1), Some('a'));
        assert_eq!(q.take(&pat(Some(2), None)), None);
        assert_eq!(q.take(&pat(None, None)), Some((env(1, 6), 'c')));
        assert!(q.is_empty());
        assert_eq!(
            q.index_mut().lane_count(),
            0,
            "every lane emptied and left the maps"
        );
    }

    #[test]
    fn other_contexts_never_match() {
        let mut q = UnexpectedQueue::new();
        q.push(
            Envelope {
                source: 1,
                tag: 5,
                context: CTX + 1,
            },
            (),
        );
        assert_eq!(q.take(&pat(None, None)), None);
        assert_eq!(q.peek(&pat(Some(1), Some(5))).map(|p| p.1), None);
    }

    #[test]
    fn peek_does_not_remove_and_its_key_removes() {
        let mut q = UnexpectedQueue::new();
        q.push(env(1, 5), 10);
        q.push(env(1, 5), 11);
        let (key, e, &m) = q.peek(&pat(None, None)).unwrap();
        assert_eq!((e, m), (env(1, 5), 10));
        assert_eq!(
            q.peek(&pat(Some(1), Some(5))).map(|p| *p.2),
            Some(10),
            "still there"
        );
        *q.get_mut(key).unwrap() += 100;
        assert_eq!(q.remove(key), Some((env(1, 5), 110)));
        assert_eq!(q.remove(key), None);
        assert_eq!(q.get_mut(key), None);
        assert_eq!(q.take(&pat(Some(1), None)), Some((env(1, 5), 11)));
    }

    #[test]
    fn remove_of_head_and_middle_entries() {
        let mut q = UnexpectedQueue::new();
        let a = q.push(env(1, 5), 'a');
        let b = q.push(env(1, 5), 'b');
        q.push(env(1, 5), 'c');
        assert_eq!(q.remove(b).map(|m| m.1), Some('b'));
        assert_eq!(q.remove(a).map(|m| m.1), Some('a'));
        assert_eq!(q.len(), 1);
        assert_eq!(q.take(&pat(None, Some(5))).map(|m| m.1), Some('c'));
        assert_eq!(q.index_mut().lane_count(), 0);
    }

    #[test]
    fn compaction_bounds_lane_length() {
        let mut q = UnexpectedQueue::lanes_only();
        let n = 10_000;
        for tag in 0..n {
            q.push(env(1, tag), tag);
        }
        let shared = [Class::AnyTag(CTX, 1), Class::AnyBoth(CTX)];
        // Take newest first: the shared lanes never lose their head, so
        // only compaction can shorten them.
        for (taken, tag) in (0..n).rev().enumerate() {
            assert_eq!(q.take(&pat(Some(1), Some(tag))).map(|m| m.1), Some(tag));
            let live = (n as usize) - taken - 1;
            for class in shared {
                let lane = q.index_mut().lane_len(class);
                assert!(lane <= 2 * live, "{class:?} holds {lane} for {live} live");
            }
        }
        assert_eq!(q.index_mut().lane_count(), 0);
        assert!(
            q.index_mut().compacted() <= 2 * n as u64,
            "compaction work is amortized"
        );
    }

    #[test]
    fn remove_where_returns_matches_in_arrival_order() {
        let mut q = UnexpectedQueue::new();
        q.push(env(1, 5), 0);
        q.push(env(2, 5), 1);
        q.push(env(1, 6), 2);
        q.push(env(2, 7), 3);
        let gone = q.remove_where(|e, _| e.source == 2);
        assert_eq!(gone, vec![(env(2, 5), 1), (env(2, 7), 3)]);
        assert_eq!(q.take(&pat(None, Some(5))), Some((env(1, 5), 0)));
        assert_eq!(q.take(&pat(None, None)), Some((env(1, 6), 2)));
        assert!(q.is_empty());
    }
}
