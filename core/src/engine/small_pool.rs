//! Buffers for small unexpected eager messages.
//!
//! An eager message that arrives before its receive is posted must be kept
//! somewhere once the device wants its slot back (an shm fastbox slot:
//! `Incoming::hand_over_allocates`). A message of up to [`SMALL_MAX`] bytes is
//! copied into one of these buffers instead of a fresh allocation, and the
//! buffer comes back here when a receive has copied the message out. So a steady stream of unexpected small messages
//! allocates nothing (the `zero_alloc` test checks it).
//!
//! The pool starts with [`PREALLOCATED`] buffers and keeps at most
//! [`RETAINED`] (256 KiB): a burst of more unexpected messages than that
//! allocates the difference, and the excess is freed as it drains. Packets
//! a device hands over without a copy (an shm cell, a network buffer) stay
//! handed over, which an ARecv takes as it is. A buffer handed to an ARecv
//! leaves the pool with the message.

use crate::buffer::Buf;

/// The largest message the pool holds.
pub(crate) const SMALL_MAX: usize = 1024;
/// Buffers made when the engine starts.
pub(crate) const PREALLOCATED: usize = 32;
/// Buffers kept at most.
pub(crate) const RETAINED: usize = 256;

#[derive(Debug)]
pub(crate) struct SmallPool {
    free: Vec<Vec<u8>>,
}

impl Default for SmallPool {
    fn default() -> Self {
        let mut free = Vec::with_capacity(RETAINED);
        free.extend((0..PREALLOCATED).map(|_| Vec::with_capacity(SMALL_MAX)));
        SmallPool { free }
    }
}

impl SmallPool {
    /// `payload` in a pooled buffer; `None` if it is too large for one.
    #[inline]
    pub(crate) fn copy(&mut self, payload: &[u8]) -> Option<Buf> {
        if payload.len() > SMALL_MAX {
            return None;
        }
        let mut v = self
            .free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(SMALL_MAX));
        v.extend_from_slice(payload);
        Some(Buf::from_vec(v))
    }

    /// Takes back a buffer whose message was copied out (any other buffer
    /// is simply dropped).
    #[inline]
    pub(crate) fn give_back(&mut self, buf: Buf) {
        if let Ok(mut v) = buf.into_vec() {
            if v.capacity() == SMALL_MAX && self.free.len() < RETAINED {
                v.clear();
                self.free.push(v);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_the_pool_stays_bounded() {
        let mut pool = SmallPool::default();
        assert_eq!(pool.held(), PREALLOCATED);
        assert!(pool.copy(&[0; SMALL_MAX + 1]).is_none());
        let b = pool.copy(b"hello").expect("small");
        assert_eq!(b.as_slice(), b"hello");
        assert_eq!(pool.held(), PREALLOCATED - 1);
        pool.give_back(b);
        assert_eq!(pool.held(), PREALLOCATED);
        // A burst past what the pool holds allocates; the excess is freed.
        let burst: Vec<_> = (0..RETAINED + 10)
            .map(|i| pool.copy(&[i as u8]).unwrap())
            .collect();
        for b in burst {
            pool.give_back(b);
        }
        assert_eq!(pool.held(), RETAINED);
        // A buffer that is not the pool's is dropped, not kept.
        pool.give_back(Buf::from_vec(vec![1, 2, 3]));
        assert_eq!(pool.held(), RETAINED);
    }
}
