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
//!
//! The pool itself, and the registry of the idups in flight, are in
//! `pool.rs`, a floor below the communicators (see the crate docs), so the
//! world's shared state can hold them; the agreements, which run on
//! communicators, are here.

pub(crate) mod pool;

use ferry_core::ContextId;

use crate::coll::op::Op;
use crate::comm::{Comm, CONTEXTS_PER_COMM, FIRST_FREE_CONTEXT};
use crate::error::{ApiError, Result};
use pool::{ContextPool, Part, WORDS};

/// The first context id of block `block`.
pub(crate) fn base_of(block: u32) -> ContextId {
    FIRST_FREE_CONTEXT + block * CONTEXTS_PER_COMM
}

impl ContextPool {
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
        let key = self.enter(key_comm.context(), 0);
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
}
