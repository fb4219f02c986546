//! Context ids for new communicators, agreed by every member (MPICH's
//! mask allreduce), never taken from a local counter: two communicators
//! made in different orders on different ranks can never share one.
//!
//! Each process keeps a mask of the context blocks it has free. To make a
//! communicator, the members of the parent AND their masks together (an
//! allreduce on the parent) and all take the lowest block free everywhere.
//!
//! Threads: only one thread of a process may offer its mask at a time, or
//! two concurrent agreements could both pick the same block. A thread that
//! finds the mask taken offers zeros, and everyone retries (MPICH's scheme);
//! among the threads trying, the one whose parent has the lowest context id
//! goes first, so the retries always end. Several idups on one parent
//! are told apart by their tags (`idup.rs`), lowest first, after any
//! blocking agreement on it (tag 0). The allreduce carries a last word
//! saying whether every member offered its real mask: only then is the
//! result final, and an empty result means the contexts are exhausted.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ferry_core::ContextId;

use crate::coll::op::Op;
use crate::comm::{Comm, CONTEXTS_PER_COMM, FIRST_FREE_CONTEXT};
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

/// The first context id of block `block`.
pub(crate) fn base_of(block: u32) -> ContextId {
    FIRST_FREE_CONTEXT + block * CONTEXTS_PER_COMM
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

    /// Agrees on a block with every member of `parent`: collective over
    /// `parent`.
    ///
    /// # Errors
    /// [`ApiError::ContextsExhausted`]; a failure of the allreduce.
    pub(crate) fn agree(&self, parent: &Comm) -> Result<u32> {
        self.agree_by(parent, |words| {
            parent.allreduce_in_place(words, &Op::band())
        })
    }

    /// The agreement loop, with `reduce` ANDing every member's words into
    /// every member's (collective over whoever takes part; `key_comm` names the
    /// communicator whose agreement this is, for the threads' priority).
    fn agree_by(
        &self,
        key_comm: &Comm,
        mut reduce: impl FnMut(&mut [u64]) -> Result<()>,
    ) -> Result<u32> {
        let key = self.enter(key_comm, 0);
        let mut part = Part::Eager;
        let result = loop {
            let (mut words, offered) = self.offer(key, part);
            let reduced = reduce(&mut words[..]);
            match self.conclude(&words, offered.then_some(part), reduced) {
                Some(r) => break r,
                None if part == Part::Eager => part = Part::Main,
                None => {
                    // An idup in flight may hold the mask: only its next
                    // round gives it back.
                    key_comm.shared().rounds.advance_all();
                    std::thread::yield_now();
                }
            }
        };
        self.leave(key);
        result
    }

    /// Agrees on a block with every member of `local` and of a remote side
    /// that runs the same agreement: `local`'s masks are ANDed, `leader`
    /// swaps the result with the remote leader through `swap` (which
    /// returns the remote side's words), and tells `local` the AND of the
    /// two. Collective over both sides.
    ///
    /// # Errors
    /// As for [`ContextPool::agree`]; the leader's failed swap
    /// ([`ApiError::LeaderFailed`] on the other members).
    pub(crate) fn agree_across(
        &self,
        local: &Comm,
        leader: ferry_core::Rank,
        mut swap: impl FnMut(&[u64]) -> Result<Vec<u64>>,
    ) -> Result<u32> {
        self.agree_by(local, |words| {
            local.allreduce_in_place(words, &Op::band())?;
            // The last word tells the side whether its leader's swap failed.
            let mut told = words.to_vec();
            told.push(0);
            let mut failed = None;
            if local.rank() == leader {
                match swap(words) {
                    Ok(theirs) => told.iter_mut().zip(theirs).for_each(|(w, t)| *w &= t),
                    Err(e) => {
                        told[WORDS + 1] = 1;
                        failed = Some(e);
                    }
                }
            }
            local.bcast(&mut told[..], leader)?;
            if let Some(e) = failed {
                return Err(e);
            }
            if told[WORDS + 1] != 0 {
                return Err(ApiError::LeaderFailed.into());
            }
            words.copy_from_slice(&told[..=WORDS]);
            Ok(())
        })
    }

    /// Agrees on a block with the members of `scratch` only (its parent's
    /// other processes take no part): `MPI_Comm_create_group`. The masks
    /// are gathered at member 0 and the AND sent back, point-to-point on
    /// `scratch` with `tag` (which tells concurrent calls apart).
    pub(crate) fn agree_among(
        &self,
        key: &Comm,
        scratch: &Comm,
        tag: ferry_core::Tag,
    ) -> Result<u32> {
        self.agree_by(key, |words| {
            let n = scratch.size() as ferry_core::Rank;
            if scratch.rank() == 0 {
                let mut theirs = vec![0u64; words.len()];
                for r in 1..n {
                    scratch.recv(&mut theirs, r, tag)?;
                    words.iter_mut().zip(&theirs).for_each(|(w, t)| *w &= t);
                }
                for r in 1..n {
                    scratch.send(words, r, tag)?;
                }
            } else {
                scratch.send(words, 0, tag)?;
                scratch.recv(words, 0, tag)?;
            }
            Ok(())
        })
    }

    /// Registers an agreement on `parent` (`tag`: an idup's, else 0);
    /// returns its priority key.
    pub(crate) fn enter(&self, parent: &Comm, tag: ferry_core::Tag) -> Key {
        let key = (parent.context(), tag);
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
