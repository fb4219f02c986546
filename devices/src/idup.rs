//! `MPI_Comm_idup`: a duplication whose context agreement (`contexts.rs`)
//! runs in nonblocking rounds.
//!
//! A round does not settle when some member had its mask taken by another
//! agreement: two idups in flight, started in different orders on
//! different members (or on one communicator, in the same order), hold
//! each other's masks in their first round. The next round must then start
//! on every member, and the agreement with priority (the lowest parent
//! context) settles first, but only if someone drives it: a program may
//! wait on the other one first. So every idup in flight on a process is a
//! [`Round`] in the pool's registry (`contexts/pool.rs`), and testing or waiting on any of them
//! advances all of them, as a progress engine would.
//!
//! The rounds are point-to-point, never collectives on the parent: a
//! member starts its next round when the program next tests, at a
//! different point on each member of the parent's own nonblocking
//! collectives, which must be issued in the same order everywhere. Each
//! idup has a tag of its own (its number on the parent, agreed because
//! `idup` is collective), on a context no collective and no program
//! message uses: the parent block's last one for an intracommunicator
//! (the world's finalize drain has tag 0 there), the local group's
//! point-to-point one for an intercommunicator. The members' words go to
//! the local leader (member 0), which ANDs them, swaps the result with the
//! remote leader on an intercommunicator's bridge (on a tag above the
//! leaders' blocking exchanges' there), and sends the answer
//! back. Rounds of one idup reuse its tag: messages between two processes
//! on one tag arrive in order, and a round starts only after the last.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use ferry_core::{Rank, Tag};

use crate::comm::{Comm, Hints, CONTEXTS_PER_COMM, IDUP_BRIDGE_TAGS};
use crate::contexts::pool::{InFlight, Key, Part, WORDS};
use crate::error::{ApiError, Result};
use crate::request::Request;

/// The words of a round: the mask, the "every member offered" word, and
/// a fault word (the leader's swap with the other side failed).
const ROUND_WORDS: usize = WORDS + 2;
const FAULT: usize = WORDS + 1;

/// Where one idup's rounds travel; see the module docs.
#[derive(Debug)]
struct Route {
    /// The parent's members (an intercommunicator's local group).
    members: Comm,
    /// An intercommunicator's leaders' channel.
    bridge: Option<Comm>,
    tag: Tag,
}

/// Where this process is in the round in flight.
#[derive(Debug)]
enum Step {
    /// A member other than the leader: its words sent, the answer awaited.
    Member { answer: Request },
    /// The leader gathers the members' words into `words`.
    Gather { words: Vec<u64>, from: Vec<Request> },
    /// The leader swaps its side's words with the other side's leader.
    Swap { words: Vec<u64>, theirs: Request },
}

/// One idup's agreement: its current round, or its outcome.
#[derive(Debug)]
pub(crate) struct Round {
    parent: Comm,
    route: Route,
    /// The round in flight (`None` once settled).
    step: Option<Step>,
    /// Sends that may still be in flight (this idup's own).
    sends: Vec<Request>,
    /// This member offered its real mask in the round in flight.
    offered: bool,
    key: Key,
    /// The agreed block, or the failure, once settled (until taken).
    outcome: Option<Result<u32>>,
    /// The mask and the key are given back.
    settled: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl InFlight for Mutex<Round> {
    fn try_advance(&self) {
        if let Ok(mut round) = self.try_lock() {
            round.advance();
        }
    }
}

/// A complete request's words (`None` while it is pending).
fn words_of(request: &mut Request) -> Option<Result<Vec<u64>>> {
    match request.test() {
        Ok(None) => None,
        Ok(Some(c)) => {
            let status = c.status;
            Some(status.ok().map_err(Into::into).and_then(|_| c.into_vec()))
        }
        Err(e) => Some(Err(e)),
    }
}

impl Round {
    /// Starts a round with this member's `words` (its mask, or zeros).
    fn start(&mut self, mut words: Vec<u64>) -> Result<()> {
        words.resize(ROUND_WORDS, 0);
        let m = &self.route.members;
        let tag = self.route.tag;
        if m.rank() != 0 {
            self.sends.push(m.isend(words, 0, tag)?);
            let answer = m.irecv(vec![0u64; ROUND_WORDS], 0, tag)?;
            self.step = Some(Step::Member { answer });
            return Ok(());
        }
        let from = (1..m.size() as Rank)
            .map(|r| m.irecv(vec![0u64; ROUND_WORDS], r, tag))
            .collect::<Result<Vec<_>>>()?;
        self.step = Some(Step::Gather { words, from });
        Ok(())
    }

    /// Moves the round in flight on as far as its messages allow: to the
    /// next step, the next round, or the outcome.
    fn advance(&mut self) {
        self.sends.retain_mut(|s| !matches!(s.test(), Ok(Some(_))));
        loop {
            let Some(step) = self.step.take() else {
                return;
            };
            match self.step_on(step) {
                Ok(Some(next)) => self.step = Some(next),
                Ok(None) => return,
                Err(e) => return self.settle(Err(e)),
            }
        }
    }

    /// One step: `Some` the next step, to try at once; `None` when it
    /// waits (put back in `self.step`) or the round has ended (the next
    /// one, if any, started in `self.step`).
    fn step_on(&mut self, step: Step) -> Result<Option<Step>> {
        let tag = self.route.tag;
        match step {
            Step::Member { mut answer } => match words_of(&mut answer) {
                None => {
                    self.step = Some(Step::Member { answer });
                    Ok(None)
                }
                Some(words) => {
                    let words = words?;
                    if words.get(FAULT).copied().unwrap_or(1) != 0 {
                        return Err(ApiError::LeaderFailed.into());
                    }
                    self.end_round(&words)?;
                    Ok(None)
                }
            },
            Step::Gather {
                mut words,
                mut from,
            } => {
                while let Some(last) = from.last_mut() {
                    match words_of(last) {
                        None => {
                            self.step = Some(Step::Gather { words, from });
                            return Ok(None);
                        }
                        Some(theirs) => {
                            and_into(&mut words, &theirs?);
                            from.pop();
                        }
                    }
                }
                let Some(bridge) = &self.route.bridge else {
                    return self.tell(words).map(|()| None);
                };
                let tag = IDUP_BRIDGE_TAGS + tag;
                self.sends
                    .push(bridge.isend(words[..=WORDS].to_vec(), 0, tag)?);
                let theirs = bridge.irecv(vec![0u64; WORDS + 1], 0, tag)?;
                Ok(Some(Step::Swap { words, theirs }))
            }
            Step::Swap {
                mut words,
                mut theirs,
            } => match words_of(&mut theirs) {
                None => {
                    self.step = Some(Step::Swap { words, theirs });
                    Ok(None)
                }
                Some(Ok(t)) => {
                    and_into(&mut words[..=WORDS], &t);
                    self.tell(words).map(|()| None)
                }
                Some(Err(e)) => {
                    // The side learns of it, and this leader reports the cause.
                    words[FAULT] = 1;
                    self.tell(words)?;
                    Err(e)
                }
            },
        }
    }

    /// The leader: sends the round's result to the other members and ends
    /// the round itself.
    fn tell(&mut self, words: Vec<u64>) -> Result<()> {
        let m = &self.route.members;
        for r in 1..m.size() as Rank {
            self.sends.push(m.isend(words.clone(), r, self.route.tag)?);
        }
        if words[FAULT] != 0 {
            return Ok(());
        }
        self.end_round(&words)
    }

    /// Concludes a round every member saw the same result of: settled, or
    /// the next round started.
    fn end_round(&mut self, words: &[u64]) -> Result<()> {
        let pool = &self.parent.shared().contexts;
        let agreed = pool.conclude(words, self.offered.then_some(Part::Main), Ok(()));
        self.offered = false;
        match agreed {
            Some(r) => {
                self.settle(r);
                Ok(())
            }
            None => {
                let (words, offered) = pool.offer(self.key, Part::Main);
                self.offered = offered;
                self.start(words)
            }
        }
    }

    fn settle(&mut self, outcome: Result<u32>) {
        self.release();
        self.step = None;
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
            let _ = pool.conclude(&[], Some(Part::Main), Ok(()));
            self.offered = false;
        }
        pool.leave(self.key);
    }
}

/// ANDs `theirs` into `words`, word by word.
fn and_into(words: &mut [u64], theirs: &[u64]) {
    words.iter_mut().zip(theirs).for_each(|(w, t)| *w &= t);
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
        let tag = self.inner.next_idup_tag();
        let route = match self.inter_parts_if_any() {
            Some(parts) => Route {
                members: parts.local.clone(),
                bridge: Some(parts.bridge.clone()),
                tag,
            },
            None => Route {
                members: Comm::scratch(
                    Arc::clone(&self.inner.shared),
                    self.group(),
                    self.context() + CONTEXTS_PER_COMM - 1,
                ),
                bridge: None,
                tag,
            },
        };
        let pool = &self.shared().contexts;
        let key = pool.enter(self.context(), tag);
        let (words, offered) = pool.offer(key, Part::Main);
        let mut round = Round {
            parent: self.clone(),
            route,
            step: None,
            sends: Vec::new(),
            offered,
            key,
            outcome: None,
            settled: false,
        };
        // On failure, dropping the round gives the mask and the key back.
        round.start(words)?;
        let round = Arc::new(Mutex::new(round));
        let weak: Weak<Mutex<Round>> = Arc::downgrade(&round);
        self.shared().rounds.register(weak);
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
        Ok(Some(self.parent.same_groups_on(outcome?, self.hints)))
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
