//! `MPI_Comm_idup`: a duplication whose context agreement (`contexts.rs`)
//! runs as nonblocking allreduce rounds.
//!
//! A round does not settle when some member had its mask taken by another
//! agreement: two idups in flight on different communicators, started in
//! different orders on different members, each hold one member's mask in
//! their first round. The next round must then start on every member, and
//! the agreement with priority (the lowest parent context) settles first,
//! but only if someone drives it: a program may wait on the other one
//! first. So every idup in flight on a process is a [`Round`] in the
//! pool's registry, and testing or waiting on any of them advances all of
//! them, as a progress engine would.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use ferry_core::ContextId;

use crate::coll::op::Op;
use crate::comm::{Comm, Hints};
use crate::error::Result;
use crate::request::Request;

/// One idup's agreement: its current round, or its outcome.
#[derive(Debug)]
pub(crate) struct Round {
    parent: Comm,
    /// The round in flight (`None` once settled).
    request: Option<Request>,
    /// This member offered its real mask in the round in flight.
    offered: bool,
    key: ContextId,
    /// The agreed block, or the failure, once settled (until taken).
    outcome: Option<Result<u32>>,
    /// The mask and the key are given back.
    settled: bool,
}

/// The rounds in flight on this process; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    live: Mutex<Vec<Weak<Mutex<Round>>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Rounds {
    /// Advances every round in flight once. A round another thread is
    /// advancing is skipped.
    fn advance_all(&self) {
        let live: Vec<Arc<Mutex<Round>>> = {
            let mut v = lock(&self.live);
            v.retain(|w| w.strong_count() > 0);
            v.iter().filter_map(Weak::upgrade).collect()
        };
        for r in live {
            if let Ok(mut round) = r.try_lock() {
                round.advance();
            }
        }
    }
}

impl Round {
    /// Ends the round in flight if it is complete: settled, or the next
    /// round started (every member sees the same result, so all do the
    /// same).
    fn advance(&mut self) {
        let Some(request) = self.request.as_mut() else {
            return;
        };
        let c = match request.test() {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => return self.settle(Err(e)),
        };
        let pool = &self.parent.shared().contexts;
        let status = c.status;
        let reduced = status.ok().map(|_| ()).map_err(Into::into);
        let words: Vec<u64> = match c.into_vec() {
            Ok(w) => w,
            Err(e) => return self.settle(Err(e)),
        };
        let agreed = pool.conclude(&words, self.offered, reduced);
        self.offered = false;
        match agreed {
            Some(r) => self.settle(r),
            None => {
                let (words, offered) = pool.offer(self.key);
                self.offered = offered;
                match self.parent.iallreduce(words, &Op::band()) {
                    Ok(r) => self.request = Some(r),
                    Err(e) => self.settle(Err(e)),
                }
            }
        }
    }

    fn settle(&mut self, outcome: Result<u32>) {
        self.release();
        self.request = None;
        self.outcome = Some(outcome);
    }

    /// Gives the mask (if offered) and the key back, once.
    fn release(&mut self) {
        if self.settled {
            return;
        }
        self.settled = true;
        let pool = &self.parent.shared().contexts;
        if self.offered {
            let _ = pool.conclude(&[], true, Ok(()));
            self.offered = false;
        }
        pool.leave(self.key);
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        // A dropped idup in flight (its block, if it ever settles on the
        // others, stays taken there: as a leaked communicator).
        self.release();
    }
}

impl Comm {
    /// `MPI_Comm_idup`: starts a dup; [`PendingComm::wait`] or
    /// [`PendingComm::test`] gives the communicator.
    ///
    /// # Errors
    /// As for [`Comm::dup`].
    pub fn idup(&self) -> Result<PendingComm> {
        self.idup_with_hints(self.hints())
    }

    /// `MPI_Comm_idup_with_info`: as [`Comm::idup`] with other hints.
    ///
    /// # Errors
    /// As for [`Comm::dup`].
    pub fn idup_with_hints(&self, hints: Hints) -> Result<PendingComm> {
        self.intra_only("idup of an intercommunicator")?;
        let pool = &self.shared().contexts;
        let key = pool.enter(self);
        let (words, offered) = pool.offer(key);
        let mut round = Round {
            parent: self.clone(),
            request: None,
            offered,
            key,
            outcome: None,
            settled: false,
        };
        // On failure, dropping the round gives the mask and the key back.
        round.request = Some(self.iallreduce(words, &Op::band())?);
        let round = Arc::new(Mutex::new(round));
        lock(&self.shared().rounds.live).push(Arc::downgrade(&round));
        Ok(PendingComm {
            parent: self.clone(),
            hints,
            round,
        })
    }
}

/// A communicator being duplicated by [`Comm::idup`].
#[derive(Debug)]
#[must_use = "wait or test it to get the communicator"]
pub struct PendingComm {
    parent: Comm,
    hints: Hints,
    round: Arc<Mutex<Round>>,
}

impl PendingComm {
    /// The communicator, once the agreement is done (`MPI_Test` on the
    /// idup request). Advances every idup in flight on this process.
    ///
    /// # Errors
    /// As for [`Comm::dup`]. After the communicator was handed out, `None`.
    pub fn test(&mut self) -> Result<Option<Comm>> {
        self.parent.shared().rounds.advance_all();
        let outcome = {
            let mut round = lock(&self.round);
            round.advance();
            match round.outcome.take() {
                Some(o) => o,
                None => return Ok(None),
            }
        };
        let block = outcome?;
        Ok(Some(self.parent.derived(
            self.parent.group(),
            block,
            self.hints,
        )))
    }

    /// Waits for the communicator (`MPI_Wait` on the idup request),
    /// advancing every idup in flight meanwhile.
    ///
    /// # Errors
    /// As for [`Comm::dup`].
    pub fn wait(mut self) -> Result<Comm> {
        loop {
            if let Some(c) = self.test()? {
                return Ok(c);
            }
            std::thread::yield_now();
        }
    }
}
