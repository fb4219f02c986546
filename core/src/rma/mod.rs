//! One-sided communication (MPI's RMA) carried as messages: what a target
//! does with an origin's requests, independent of any device, so that
//! every device and every datatype has one-sided communication (as
//! MPICH CH4's active-message path gives it).
//!
//! # The protocol
//! A window is a communicator's worth of processes, each exposing a range
//! of bytes, and one context id of its own. An origin sends each operation
//! to its target as one message on that context with tag
//! [`REQUEST_TAG`]: a header ([`wire::Request`]) and the operation's data.
//! The engine keeps a receive for such messages posted on every window it
//! serves and applies each as it arrives, whatever the program is doing
//! inside ferry (or, with the progress thread, while it computes):
//! [`Target::serve`] writes a put, combines an accumulate, and answers a
//! get, a fetching accumulate, a compare-and-swap, a lock, an unlock or a
//! flush with a reply on the tag the origin named, on the same context.
//!
//! Messages between two ranks on one context arrive in the order they
//! were sent, and the target applies each before it reads the next, so a
//! flush's or an unlock's reply tells the origin that every earlier
//! request of its own is applied: that is remote completion. A fence
//! counts instead: every rank knows how many data requests it sent to each
//! target; the targets learn their totals by a collective and progress
//! until they have applied that many ([`Target::applied`]).
//!
//! Accumulates to one target apply whole, one request at a time, so
//! concurrent accumulates are atomic per element (MPI's rule) and those of
//! one origin are ordered.
//!
//! # Locks
//! [`Locks`] is the target's lock: shared holders, or one exclusive
//! holder, granted in request order (a waiting exclusive request holds
//! back later shared ones, so writers do not starve).

pub mod wire;

use std::collections::VecDeque;

use crate::envelope::{Rank, Tag};
use crate::reduction::{reduce_into, ReduceOp};

pub use wire::{Kind, Request};

/// The tag of the requests an origin sends a target; replies use the tags
/// the origins choose among `1..=TAG_UB`.
pub const REQUEST_TAG: Tag = 0;

/// How an accumulate combines the origin's data with the target's.
#[derive(Debug, Clone)]
pub enum AccOp {
    /// The origin's data replaces the target's (MPI_REPLACE).
    Replace,
    /// The target's data stays (MPI_NO_OP: a fetching accumulate that
    /// only reads).
    NoOp,
    /// `target = origin (op) target`, a predefined reduction.
    Reduce(ReduceOp),
}

impl PartialEq for AccOp {
    fn eq(&self, other: &AccOp) -> bool {
        match (self, other) {
            (AccOp::Replace, AccOp::Replace) | (AccOp::NoOp, AccOp::NoOp) => true,
            (AccOp::Reduce(a), AccOp::Reduce(b)) => a.name() == b.name(),
            _ => false,
        }
    }
}

/// What serving one request produced, for the engine to send.
#[derive(Debug, Default, PartialEq)]
pub struct Served {
    /// The reply to the origin: its tag and data.
    pub reply: Option<(Tag, Vec<u8>)>,
    /// Lock requests of other origins granted by this one (an unlock):
    /// each gets an empty reply on its tag.
    pub granted: Vec<(Rank, Tag)>,
}

/// A refused request: why, and the reply the origin is waiting for, if
/// any (it gets one byte more than it can hold, so its receive fails as a
/// truncation rather than waiting forever).
#[derive(Debug, PartialEq)]
pub struct Refused {
    /// What was wrong.
    pub what: &'static str,
    /// The refusal's reply: tag and data.
    pub reply: Option<(Tag, Vec<u8>)>,
}

/// One window's target side: its lock, what it has applied, and the
/// post and complete notices it has had from each rank.
#[derive(Debug, Default)]
pub struct Target {
    locks: Locks,
    applied: u64,
    /// `MPI_Win_post` notices received, by the rank that posted.
    posted: rustc_hash::FxHashMap<Rank, u64>,
    /// `MPI_Win_complete` notices received, by the rank that completed.
    completed: rustc_hash::FxHashMap<Rank, u64>,
}

impl Target {
    /// Data requests served so far (puts, gets, accumulates,
    /// compare-and-swaps; refused ones too), for fences.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The post notices (`complete: false`) or complete notices (`true`)
    /// received from `rank` so far.
    pub fn notices(&self, rank: Rank, complete: bool) -> u64 {
        let m = if complete {
            &self.completed
        } else {
            &self.posted
        };
        m.get(&rank).copied().unwrap_or(0)
    }

    /// Applies the request `msg` from `from` to `memory`, the window's
    /// bytes.
    ///
    /// # Errors
    /// A malformed request, or one whose range lies outside `memory` or
    /// whose op does not apply to its type: nothing is written.
    pub fn serve(
        &mut self,
        from: Rank,
        msg: &[u8],
        memory: &mut dyn WindowMemory,
    ) -> Result<Served, Refused> {
        let (r, data) = Request::decode(msg).map_err(|what| Refused { what, reply: None })?;
        let refuse = |what: &'static str| Refused {
            what,
            reply: (r.reply != 0).then(|| (r.reply, vec![0; reply_len(&r) + 1])),
        };
        let mut served = Served::default();
        if r.kind == Kind::Batch {
            // Each request applies as if it had come alone; none answers.
            for one in Request::batched(data) {
                let one = one.map_err(|what| Refused { what, reply: None })?;
                if let Err(Refused { what, .. }) = self.serve(from, one, memory) {
                    tracing::warn!(from, what, "refused a batched one-sided request");
                }
            }
            return Ok(served);
        }
        if r.scattered {
            self.applied += 1;
            let (ranges, payload) = r.ranges(data);
            return scattered(&r, ranges, payload, memory, &mut served)
                .map(|()| served)
                .map_err(refuse);
        }
        if r.kind.is_data() {
            // Counted applied even if refused: the origin counted it sent,
            // and a fence waits for as many as were sent.
            self.applied += 1;
            if memory.range(r.disp, r.len).is_none() && r.kind != Kind::CompareAndSwap {
                // A range over adjacent pieces (a dynamic window's
                // attachments that follow each other): each in its piece.
                let pieces = memory
                    .split(r.disp, r.len)
                    .ok_or_else(|| refuse("a range outside the window"))?;
                return scattered(&r, pieces.into_iter(), data, memory, &mut served)
                    .map(|()| served)
                    .map_err(refuse);
            }
            let bytes = memory
                .range(r.disp, r.len)
                .ok_or_else(|| refuse("a range outside the window"))?;
            match r.kind {
                Kind::Put => bytes.copy_from_slice(data),
                Kind::Get => served.reply = Some((r.reply, bytes.to_vec())),
                Kind::Accumulate => combine(&r, data, bytes).map_err(refuse)?,
                Kind::GetAccumulate => {
                    let old = bytes.to_vec();
                    combine(&r, data, bytes).map_err(refuse)?;
                    served.reply = Some((r.reply, old));
                }
                _ => {
                    let (compare, swap) = data.split_at(data.len() / 2);
                    if r.dtype.size() != compare.len() {
                        return Err(refuse("a compare-and-swap of more than one element"));
                    }
                    let old = bytes.to_vec();
                    if old == compare {
                        bytes.copy_from_slice(swap);
                    }
                    served.reply = Some((r.reply, old));
                }
            }
            return Ok(served);
        }
        match r.kind {
            Kind::Lock => {
                if !self.locks.request(from, r.reply, r.exclusive) {
                    return Err(refuse("a second lock by the same origin"));
                }
                served.granted = self.locks.grant();
            }
            Kind::Unlock => {
                if !self.locks.release(from) {
                    return Err(refuse("an unlock without a lock"));
                }
                served.reply = Some((r.reply, Vec::new()));
                served.granted = self.locks.grant();
            }
            Kind::Flush => served.reply = Some((r.reply, Vec::new())),
            Kind::Post => *self.posted.entry(from).or_default() += 1,
            Kind::Complete => *self.completed.entry(from).or_default() += 1,
            _ => return Err(refuse("a data request out of place")),
        }
        Ok(served)
    }
}

/// Applies a request over several ranges (a scattered one, see
/// [`wire`], or one whose range spans pieces), `payload` filling them in
/// order: every range is checked before any is written.
fn scattered(
    r: &Request,
    ranges: impl Iterator<Item = (u64, u64)> + Clone,
    payload: &[u8],
    memory: &mut dyn WindowMemory,
    served: &mut Served,
) -> Result<(), &'static str> {
    let size = r.dtype.size().max(1) as u64;
    let elements = matches!(r.kind, Kind::Accumulate | Kind::GetAccumulate);
    if let AccOp::Reduce(op) = &r.op {
        op.check(r.dtype)
            .map_err(|_| "an op its type does not have")?;
    }
    for (disp, len) in ranges.clone() {
        if memory.range(disp, len).is_none() {
            return Err("a range outside the window");
        }
        if elements && len % size != 0 {
            return Err("a partial element");
        }
    }
    let mut reply = match r.kind {
        Kind::Get | Kind::GetAccumulate => Vec::with_capacity(r.len as usize),
        _ => Vec::new(),
    };
    let mut at = 0usize;
    for (disp, len) in ranges {
        let bytes = memory
            .range(disp, len)
            .ok_or("a range outside the window")?;
        let n = bytes.len();
        match r.kind {
            Kind::Get => reply.extend_from_slice(bytes),
            Kind::Put => bytes.copy_from_slice(&payload[at..at + n]),
            Kind::GetAccumulate => {
                reply.extend_from_slice(bytes);
                combine(r, &payload[at..at + n], bytes)?;
            }
            _ => combine(r, &payload[at..at + n], bytes)?,
        }
        at += n;
    }
    if matches!(r.kind, Kind::Get | Kind::GetAccumulate) {
        served.reply = Some((r.reply, reply));
    }
    Ok(())
}

/// A window's memory as a target sees it: byte ranges by displacement.
pub trait WindowMemory {
    /// The `len` bytes at displacement `start`, if the window has all of
    /// them in one piece.
    fn range(&mut self, start: u64, len: u64) -> Option<&mut [u8]>;

    /// The ranges, each in one piece, that `len` bytes at `start` cover
    /// when they run over pieces that follow each other without a gap;
    /// `None` if any byte is outside (a window of one piece has none to
    /// offer).
    fn split(&mut self, _start: u64, _len: u64) -> Option<Vec<(u64, u64)>> {
        None
    }
}

/// A window of one piece: displacements count from its first byte.
impl WindowMemory for [u8] {
    fn range(&mut self, start: u64, len: u64) -> Option<&mut [u8]> {
        let start = usize::try_from(start).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.get_mut(start..end)
    }
}

impl WindowMemory for Vec<u8> {
    fn range(&mut self, start: u64, len: u64) -> Option<&mut [u8]> {
        self.as_mut_slice().range(start, len)
    }
}

/// The length of a request's reply.
fn reply_len(r: &Request) -> usize {
    match r.kind {
        Kind::Get | Kind::GetAccumulate | Kind::CompareAndSwap => r.len as usize,
        _ => 0,
    }
}

/// Combines `data` into `target` by the request's op.
fn combine(r: &Request, data: &[u8], target: &mut [u8]) -> Result<(), &'static str> {
    match &r.op {
        AccOp::Replace => {
            if data.len() % r.dtype.size() != 0 {
                return Err("a partial element");
            }
            target.copy_from_slice(data);
            Ok(())
        }
        AccOp::NoOp => Ok(()),
        AccOp::Reduce(op) => {
            reduce_into(op, r.dtype, data, target).map_err(|_| "an op its type does not have")
        }
    }
}

/// A window's lock at its target (see the module docs).
#[derive(Debug, Default)]
pub struct Locks {
    /// Holders of the shared lock.
    shared: Vec<Rank>,
    /// The holder of the exclusive lock.
    exclusive: Option<Rank>,
    /// Requests not granted yet: origin, reply tag, exclusive.
    waiting: VecDeque<(Rank, Tag, bool)>,
}

impl Locks {
    /// Queues `origin`'s request; false if it holds or awaits one already.
    fn request(&mut self, origin: Rank, reply: Tag, exclusive: bool) -> bool {
        let known = self.exclusive == Some(origin)
            || self.shared.contains(&origin)
            || self.waiting.iter().any(|w| w.0 == origin);
        if known {
            return false;
        }
        self.waiting.push_back((origin, reply, exclusive));
        true
    }

    /// Grants what can be granted, in order: the requests to answer.
    fn grant(&mut self) -> Vec<(Rank, Tag)> {
        let mut granted = Vec::new();
        while let Some(&(origin, reply, exclusive)) = self.waiting.front() {
            let free = self.exclusive.is_none() && (!exclusive || self.shared.is_empty());
            if !free {
                break;
            }
            self.waiting.pop_front();
            if exclusive {
                self.exclusive = Some(origin);
            } else {
                self.shared.push(origin);
            }
            granted.push((origin, reply));
        }
        granted
    }

    /// Releases `origin`'s lock; false if it held none.
    fn release(&mut self, origin: Rank) -> bool {
        if self.exclusive == Some(origin) {
            self.exclusive = None;
            return true;
        }
        match self.shared.iter().position(|&r| r == origin) {
            Some(i) => {
                self.shared.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Forgets a dead origin: its lock is released and its requests
    /// dropped; the requests this grants.
    pub fn forget(&mut self, origin: Rank) -> Vec<(Rank, Tag)> {
        self.release(origin);
        self.waiting.retain(|w| w.0 != origin);
        self.grant()
    }
}

impl Target {
    /// Forgets a dead origin (see [`Locks::forget`]): the lock requests of
    /// others this grants.
    pub fn forget(&mut self, origin: Rank) -> Vec<(Rank, Tag)> {
        self.locks.forget(origin)
    }
}

#[cfg(test)]
mod tests;
