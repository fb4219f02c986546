//! The slab that owns queued entries, with sequence numbers as generations.
//!
//! This is [`crate::slab::Slab`]'s idea with one change. A lane entry has to
//! carry its sequence number anyway (lanes are merged by it), so the slot
//! stores that same number as its generation: liveness is one comparison, and
//! there is no ABA. A 32-bit generation could wrap while a stale lane entry
//! still points at the slot; a 64-bit sequence number is never reused.

/// Names one queued entry: its slot and the sequence number it was given.
/// Copies of it sit in lanes; they go stale when the entry is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ref {
    pub(crate) seq: u64,
    pub(crate) index: u32,
}

#[derive(Debug)]
struct Slot<T> {
    /// The sequence number of the current (or last) occupant.
    seq: u64,
    value: Option<T>,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct SeqSlab<T> {
    slots: Vec<Slot<T>>,
    /// Reused LIFO: the most recently freed slot is the warmest in cache.
    free: Vec<u32>,
    len: usize,
}

// Room for the shallow ring's entries (an OSU window) from the start: a
// queue that first gets that deep in the middle of a run (a peer that fell
// behind) allocates nothing then.
impl<T> Default for SeqSlab<T> {
    fn default() -> Self {
        SeqSlab {
            slots: Vec::with_capacity(super::shallow::SHALLOW),
            free: Vec::with_capacity(super::shallow::SHALLOW),
            len: 0,
        }
    }
}

impl<T> SeqSlab<T> {
    /// Stores `value` under `seq`, which must never have been used before.
    #[inline]
    pub(crate) fn insert(&mut self, seq: u64, value: T) -> Ref {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            self.slots[index as usize] = Slot {
                seq,
                value: Some(value),
            };
            return Ref { seq, index };
        }
        let index = u32::try_from(self.slots.len()).expect("more than u32::MAX queued entries");
        self.slots.push(Slot {
            seq,
            value: Some(value),
        });
        Ref { seq, index }
    }

    #[inline]
    pub(crate) fn get(&self, r: Ref) -> Option<&T> {
        self.slots
            .get(r.index as usize)
            .filter(|s| s.seq == r.seq)
            .and_then(|s| s.value.as_ref())
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, r: Ref) -> Option<&mut T> {
        self.slots
            .get_mut(r.index as usize)
            .filter(|s| s.seq == r.seq)
            .and_then(|s| s.value.as_mut())
    }

    #[inline]
    pub(crate) fn is_live(&self, r: Ref) -> bool {
        self.get(r).is_some()
    }

    /// Removes the entry; every copy of `r` becomes stale.
    #[inline]
    pub(crate) fn remove(&mut self, r: Ref) -> Option<T> {
        let slot = self
            .slots
            .get_mut(r.index as usize)
            .filter(|s| s.seq == r.seq)?;
        let value = slot.value.take()?;
        self.free.push(r.index);
        self.len -= 1;
        Some(value)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Live entries for which `keep` is true, in sequence order (cold paths
    /// only: removal by predicate on peer failure).
    pub(crate) fn refs_where(&self, mut keep: impl FnMut(&T) -> bool) -> Vec<Ref> {
        self.live_refs()
            .into_iter()
            .filter(|&r| self.get(r).is_some_and(&mut keep))
            .collect()
    }

    /// Every live entry, in sequence order (cold paths only).
    pub(crate) fn live_refs(&self) -> Vec<Ref> {
        let mut refs: Vec<Ref> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.is_some())
            .map(|(i, s)| Ref {
                seq: s.seq,
                index: i as u32,
            })
            .collect();
        refs.sort_unstable_by_key(|r| r.seq);
        refs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_slot_never_revives_a_stale_ref() {
        let mut slab = SeqSlab::default();
        let a = slab.insert(1, "a");
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.remove(a), None, "double remove is detected");
        let b = slab.insert(2, "b");
        assert_eq!(a.index, b.index, "slot reused");
        assert!(!slab.is_live(a));
        assert_eq!(slab.get(b), Some(&"b"));
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn live_refs_come_back_in_sequence_order() {
        let mut slab = SeqSlab::default();
        let r1 = slab.insert(1, ());
        let r2 = slab.insert(2, ());
        slab.remove(r1);
        let r3 = slab.insert(3, ()); // takes r1's slot, index 0
        assert_eq!(slab.live_refs(), vec![r2, r3]);
    }
}
