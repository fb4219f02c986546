//! A generational slab: O(1) insert, lookup and remove, with stale keys
//! detected by generation.
//!
//! Keys are `u64` values from [`crate::handle::pack`]. Generations start at 1
//! and skip 0 when they wrap, so a key can never equal a reserved handle.
//! Freed slots are reused LIFO (the most recently freed slot is warm in cache).

use crate::handle::{pack, unpack};

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// An empty slab with room for `n` values before it allocates.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            len: 0,
        }
    }

    /// Stores `value` and returns its key.
    #[inline]
    pub(crate) fn insert(&mut self, value: T) -> u64 {
        self.insert_with(move || value)
    }

    /// [`Slab::insert`] of the value `make` builds once its slot is found,
    /// so that an inlined `make` can build it in the slot rather than on
    /// the stack and copy it there (a `memcpy` call for a request).
    #[inline(always)]
    pub(crate) fn insert_with(&mut self, make: impl FnOnce() -> T) -> u64 {
        if let Some(&index) = self.free.last() {
            if let Some(slot) = self.slots.get_mut(index as usize) {
                self.free.pop();
                self.len += 1;
                // A free slot holds `None`: nothing to drop, so none of
                // the drop glue an assignment would run (the old value is
                // read only to be forgotten).
                let old = slot.value.replace(make());
                debug_assert!(old.is_none(), "a free slot was occupied");
                std::mem::forget(old);
                return pack(index, slot.generation);
            }
        }
        self.push_new(make())
    }

    /// [`Slab::insert`] with no free slot: a new one (may grow).
    #[cold]
    #[inline(never)]
    fn push_new(&mut self, value: T) -> u64 {
        self.len += 1;
        let index = u32::try_from(self.slots.len()).expect("slab exceeds u32::MAX entries");
        self.slots.push(Slot {
            generation: 1,
            value: Some(value),
        });
        pack(index, 1)
    }

    /// The key the next [`Slab::insert`] returns (for a value that must
    /// know its own key before it is stored).
    #[inline]
    pub(crate) fn vacant_key(&self) -> u64 {
        match self.free.last() {
            Some(&index) => pack(index, self.slots[index as usize].generation),
            None => pack(self.slots.len() as u32, 1),
        }
    }

    #[inline]
    fn slot(&self, key: u64) -> Option<&Slot<T>> {
        let (index, generation) = unpack(key);
        self.slots
            .get(index as usize)
            .filter(|s| s.generation == generation)
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<&T> {
        self.slot(key).and_then(|s| s.value.as_ref())
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut T> {
        let (index, generation) = unpack(key);
        self.slots
            .get_mut(index as usize)
            .filter(|s| s.generation == generation)
            .and_then(|s| s.value.as_mut())
    }

    /// Removes the value after `f` has taken what it needs from it, in
    /// place: the value is dropped where it lies instead of being moved out
    /// (a request is a few cache lines; moving it costs a `memcpy`).
    #[inline]
    pub(crate) fn remove_with<R>(&mut self, key: u64, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let (index, slot) = self.occupied(key)?;
        let out = f(slot.value.as_mut()?);
        slot.value = None;
        self.retire(index);
        Some(out)
    }

    /// Removes the value if `pick` says so, after taking what it needs from
    /// it in place; `Some(None)` if the value stays, `None` for a stale
    /// key. One lookup for the look and the removal.
    #[inline]
    pub(crate) fn remove_if<R>(
        &mut self,
        key: u64,
        pick: impl FnOnce(&mut T) -> Option<R>,
    ) -> Option<Option<R>> {
        let (index, slot) = self.occupied(key)?;
        let out = pick(slot.value.as_mut()?);
        if out.is_some() {
            slot.value = None;
            self.retire(index);
        }
        Some(out)
    }

    /// Removes and returns the value; the key (and every copy of it) becomes
    /// stale.
    pub(crate) fn remove(&mut self, key: u64) -> Option<T> {
        let (index, slot) = self.occupied(key)?;
        let value = slot.value.take()?;
        self.retire(index);
        Some(value)
    }

    /// The slot `key` names, if its generation is still `key`'s.
    #[inline]
    fn occupied(&mut self, key: u64) -> Option<(u32, &mut Slot<T>)> {
        let (index, generation) = unpack(key);
        let slot = self.slots.get_mut(index as usize)?;
        (slot.generation == generation).then_some((index, slot))
    }

    /// Frees slot `index`, just emptied: a new generation, so that every
    /// copy of the old key is stale, and back on the free list.
    #[inline]
    fn retire(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        self.free.push(index);
        self.len -= 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keys of all live values (cold paths only: failure handling, teardown).
    pub(crate) fn keys(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.is_some())
            .map(|(i, s)| pack(i as u32, s.generation))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vacant_key_is_the_next_insert_s_key() {
        let mut slab = Slab::default();
        for round in 0..3 {
            // Fresh slots, then reused ones (newer generations), in LIFO order.
            let mut keys = Vec::new();
            for i in 0..4 {
                let want = slab.vacant_key();
                assert_eq!(slab.insert(round * 10 + i), want);
                keys.push(want);
            }
            for k in keys.into_iter().rev() {
                slab.remove(k);
            }
        }
    }

    #[test]
    fn stale_key_after_remove_and_reuse() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.remove(a), None, "double free is detected");
        let b = slab.insert("b");
        assert_eq!(unpack(a).0, unpack(b).0, "slot reused");
        assert_ne!(a, b);
        assert_eq!(slab.get(a), None, "stale key never reaches the new value");
        assert_eq!(slab.get(b), Some(&"b"));
    }

    #[test]
    fn keys_never_collide_with_reserved_handles() {
        let mut slab = Slab::default();
        for _ in 0..4 {
            let k = slab.insert(());
            assert!(k > 1);
        }
    }
}
