//! The four wildcard classes and the four lane maps that index them.
//!
//! A pattern belongs to exactly one class, and its lane key is the part of
//! the pattern that is not a wildcard. An envelope can be matched by one lane
//! of each class, whose keys are projections of the envelope. So a receive
//! is found from a message by looking at four lane heads, and a message is
//! found from a receive by looking at one.

use super::lane::LaneMap;
use super::slots::Ref;
use crate::envelope::{ContextId, Envelope, Pattern, Rank, Tag};

/// A lane's identity: its wildcard class plus its key within the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Exact(ContextId, Rank, Tag),
    AnySource(ContextId, Tag),
    AnyTag(ContextId, Rank),
    AnyBoth(ContextId),
}

impl Class {
    /// The one lane a pattern lives in (posted side) or reads (unexpected
    /// side).
    #[inline]
    pub(crate) fn of_pattern(p: &Pattern) -> Class {
        match (p.source, p.tag) {
            (Some(s), Some(t)) => Class::Exact(p.context, s, t),
            (None, Some(t)) => Class::AnySource(p.context, t),
            (Some(s), None) => Class::AnyTag(p.context, s),
            (None, None) => Class::AnyBoth(p.context),
        }
    }

    /// The four lanes whose patterns match `env`, exact first; the order is
    /// that of [`Class::wildcard_slot`] plus one.
    #[inline]
    pub(crate) fn of_envelope(env: &Envelope) -> [Class; 4] {
        [
            Class::Exact(env.context, env.source, env.tag),
            Class::AnySource(env.context, env.tag),
            Class::AnyTag(env.context, env.source),
            Class::AnyBoth(env.context),
        ]
    }

    /// Index into per-wildcard-class counters; `None` for exact.
    #[inline]
    pub(crate) fn wildcard_slot(self) -> Option<usize> {
        match self {
            Class::Exact(..) => None,
            Class::AnySource(..) => Some(0),
            Class::AnyTag(..) => Some(1),
            Class::AnyBoth(..) => Some(2),
        }
    }
}

/// The four lane maps, addressed by [`Class`].
#[derive(Debug, Default)]
pub(crate) struct ClassIndex {
    exact: LaneMap<(ContextId, Rank, Tag)>,
    any_source: LaneMap<(ContextId, Tag)>,
    any_tag: LaneMap<(ContextId, Rank)>,
    any_both: LaneMap<ContextId>,
}

/// Forwards one call to the map of the class, with the class's key.
macro_rules! dispatch {
    ($self:ident, $class:expr, |$map:ident, $key:ident| $body:expr) => {
        match $class {
            Class::Exact(c, s, t) => {
                let ($map, $key) = (&mut $self.exact, (c, s, t));
                $body
            }
            Class::AnySource(c, t) => {
                let ($map, $key) = (&mut $self.any_source, (c, t));
                $body
            }
            Class::AnyTag(c, s) => {
                let ($map, $key) = (&mut $self.any_tag, (c, s));
                $body
            }
            Class::AnyBoth(c) => {
                let ($map, $key) = (&mut $self.any_both, c);
                $body
            }
        }
    };
}

impl ClassIndex {
    pub(crate) fn push(&mut self, class: Class, r: Ref) {
        dispatch!(self, class, |map, key| map.push(key, r))
    }

    pub(crate) fn head(
        &mut self,
        class: Class,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        dispatch!(self, class, |map, key| map.head(key, is_live, examined))
    }

    pub(crate) fn take_head(
        &mut self,
        class: Class,
        is_live: impl Fn(Ref) -> bool,
        examined: &mut u64,
    ) -> Option<Ref> {
        dispatch!(self, class, |map, key| map
            .take_head(key, is_live, examined))
    }

    pub(crate) fn pop_head(&mut self, class: Class, is_live: impl Fn(Ref) -> bool) {
        dispatch!(self, class, |map, key| map.pop_head(key, is_live))
    }

    pub(crate) fn mark_stale(&mut self, class: Class, r: Ref, is_live: impl Fn(Ref) -> bool) {
        dispatch!(self, class, |map, key| map.mark_stale(key, r, is_live))
    }

    /// Every entry (live and stale) on one context, in arrival order.
    pub(crate) fn on_context(&self, context: ContextId) -> impl Iterator<Item = Ref> + '_ {
        self.any_both.entries(context)
    }

    /// Entries (live and stale) in one lane.
    #[cfg(test)]
    pub(crate) fn lane_len(&mut self, class: Class) -> usize {
        dispatch!(self, class, |map, key| map.lane_len(key))
    }

    /// Lanes across all four maps.
    #[cfg(test)]
    pub(crate) fn lane_count(&self) -> usize {
        self.exact.lane_count()
            + self.any_source.lane_count()
            + self.any_tag.lane_count()
            + self.any_both.lane_count()
    }

    /// Entries dropped by compaction across all four maps.
    #[cfg(test)]
    pub(crate) fn compacted(&self) -> u64 {
        self.exact.compacted()
            + self.any_source.compacted()
            + self.any_tag.compacted()
            + self.any_both.compacted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_matching_pattern_is_in_one_of_the_envelope_lanes() {
        let env = Envelope {
            source: 3,
            tag: 9,
            context: 1,
        };
        let lanes = Class::of_envelope(&env);
        for source in [None, Some(3), Some(4)] {
            for tag in [None, Some(9), Some(8)] {
                for context in [1, 2] {
                    let p = Pattern {
                        context,
                        source,
                        tag,
                    };
                    assert_eq!(
                        p.matches(&env),
                        lanes.contains(&Class::of_pattern(&p)),
                        "{p:?}"
                    );
                }
            }
        }
        for (i, class) in lanes.iter().enumerate() {
            assert_eq!(class.wildcard_slot(), i.checked_sub(1));
        }
    }
}
