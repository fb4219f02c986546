//! The pool of context blocks free on this process, and the registry of
//! the agreements in flight on it (idups' rounds): the state the
//! agreements (`contexts/mod.rs`, `idup.rs`) work on. It knows nothing of
//! communicators, so the world's shared state can hold it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use ferry_core::ContextId;

use crate::error::{ApiError, Result};

/// Mask words: 64 × 64 = 4096 communicators alive at once per process.
pub(crate) const WORDS: usize = 64;
/// The mask's first words, for the first round of blocking agreements.
const EAGER_WORDS: usize = 2;

/// Which words of the mask a round offers. An idup holds the mask across
/// rounds that need other members' progress; a blocking agreement those
/// members are in meanwhile (`MPI_Comm_create_group` on some, before
/// their idup) must still be able to settle, so its first round offers
/// words no idup ever takes (MPICH's eager context ids). Every member's
/// first round is an eager one, so they agree on which part they offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Eager = 0,
    Main = 1,
}

impl Part {
    fn words(self) -> std::ops::Range<usize> {
        match self {
            Part::Eager => 0..EAGER_WORDS,
            Part::Main => EAGER_WORDS..WORDS,
        }
    }
}

#[derive(Debug)]
struct Pool {
    /// Bit set: the block is free here.
    free: [u64; WORDS],
    /// A round is offering the part's words (indexed by [`Part`]).
    in_use: [bool; 2],
    /// Priority keys of the agreements in progress (with a count, for
    /// several threads on one parent).
    trying: BTreeMap<Key, usize>,
}

/// An agreement's priority, the same on every process: its parent's
/// context id, then the idup's tag on that parent (0 for a blocking
/// agreement). The lowest goes first.
pub(crate) type Key = (ContextId, ferry_core::Tag);

/// This process's free context blocks; see the module docs.
#[derive(Debug)]
pub(crate) struct ContextPool {
    pool: Mutex<Pool>,
}

impl Default for ContextPool {
    fn default() -> Self {
        ContextPool {
            pool: Mutex::new(Pool {
                free: [u64::MAX; WORDS],
                in_use: [false; 2],
                trying: BTreeMap::new(),
            }),
        }
    }
}

impl ContextPool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives a block back (its communicator's last handle dropped).
    pub(crate) fn release(&self, block: u32) {
        let (w, b) = (block as usize / 64, block % 64);
        if let Some(word) = self.lock().free.get_mut(w) {
            *word |= 1 << b;
        }
    }

    /// Registers an agreement on the communicator of context `parent`
    /// (`tag`: an idup's, else 0); returns its priority key.
    pub(crate) fn enter(&self, parent: ContextId, tag: ferry_core::Tag) -> Key {
        let key = (parent, tag);
        *self.lock().trying.entry(key).or_default() += 1;
        key
    }

    /// Unregisters an agreement.
    pub(crate) fn leave(&self, key: Key) {
        let mut pool = self.lock();
        if let Some(n) = pool.trying.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                pool.trying.remove(&key);
            }
        }
    }

    /// This round's contribution: the free words of `part` and an all-ones
    /// last word if this round may offer them, zeros otherwise. Only the
    /// agreement with priority may offer the main part; the eager part
    /// goes to whoever asks while no other round offers it.
    pub(crate) fn offer(&self, key: Key, part: Part) -> (Vec<u64>, bool) {
        let mut words = vec![0u64; WORDS + 1];
        let mut pool = self.lock();
        let first = pool.trying.keys().next().copied();
        if !pool.in_use[part as usize] && (part == Part::Eager || first == Some(key)) {
            pool.in_use[part as usize] = true;
            let range = part.words();
            words[range.clone()].copy_from_slice(&pool.free[range]);
            words[WORDS] = u64::MAX;
            return (words, true);
        }
        (words, false)
    }

    /// After the reduction: the agreed block, or `None` to try again (in
    /// the main part, after an eager round). `offered`: the part this
    /// process offered, which it gives back.
    pub(crate) fn conclude(
        &self,
        words: &[u64],
        offered: Option<Part>,
        reduced: Result<()>,
    ) -> Option<Result<u32>> {
        let mut pool = self.lock();
        if let Some(part) = offered {
            pool.in_use[part as usize] = false;
        }
        if let Err(e) = reduced {
            return Some(Err(e));
        }
        if words.get(WORDS) != Some(&u64::MAX) {
            return None;
        }
        let Some(w) = words[..WORDS].iter().position(|&w| w != 0) else {
            // Every member offered, and nothing is free everywhere: the
            // eager part is used up (the main part is next), or the main.
            return match offered {
                Some(Part::Eager) => None,
                _ => Some(Err(ApiError::ContextsExhausted.into())),
            };
        };
        let b = words[w].trailing_zeros();
        pool.free[w] &= !(1 << b);
        Some(Ok((w * 64) as u32 + b))
    }
}

/// An agreement in flight that the registry moves on: an idup's rounds
/// (`idup.rs`).
pub(crate) trait InFlight: Send + Sync {
    /// Moves it on as far as its messages allow, unless another thread is
    /// doing so.
    fn try_advance(&self);
}

/// The agreements in flight on this process; see `idup.rs`.
#[derive(Default)]
pub(crate) struct Rounds {
    live: Mutex<Vec<Weak<dyn InFlight>>>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("live", &lock(&self.live).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Rounds {
    /// Registers an agreement in flight; a dropped one leaves the registry
    /// at the next [`Rounds::advance_all`].
    pub(crate) fn register(&self, round: Weak<dyn InFlight>) {
        lock(&self.live).push(round);
    }

    /// Advances every agreement in flight once; one that another thread is
    /// advancing is skipped.
    pub(crate) fn advance_all(&self) {
        let live: Vec<Arc<dyn InFlight>> = {
            let mut v = lock(&self.live);
            v.retain(|w| w.strong_count() > 0);
            v.iter().filter_map(Weak::upgrade).collect()
        };
        for r in live {
            r.try_advance();
        }
    }
}
