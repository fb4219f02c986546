//! The one completion path: every completion call (`MPI_Wait`, `MPI_Test`
//! and their `all`, `any` and `some` forms, and `MPI_Request_get_status*`)
//! takes its requests out of their handles as a [`Batch`], completes them
//! through ferry's multiple-completion functions, reports each, and
//! settles the handles.
//!
//! A batch is taken one of two ways, chosen per call:
//! - **in place** (the fast case of the `all` forms, below
//!   `MPI_THREAD_MULTIPLE`, when every entry is plain: null, EMPTY, or a
//!   one-shot operation with no post step, all raw or all ferry requests):
//!   no other thread can reach the table meanwhile, so the operations are
//!   taken out of their entries where they are, completed together, and
//!   the entries removed, each status written straight from its
//!   completion. Raw operations (`State::Raw`, and the direct handles of
//!   `handle.rs`) complete by their engine handles alone
//!   ([`Comm::wait_all_raw`](ferry::Comm::wait_all_raw)).
//! - **lent** (everything else): every object is lent out of the table (its
//!   handle stays reserved), so no table is held while a thread blocks;
//!   each completed object runs its post step ([`finish`]), and is freed or
//!   put back (pending or persistent) when the batch settles.
//!
//! Both give the same statuses, free the same handles and raise the same
//! errors. The vectors a batch needs are per-thread scratch kept between
//! calls, so a steady loop of completion calls allocates nothing here.
//!
//! Requests that completed inside their initiating call
//! ([`State::Ready`]) are complete without asking ferry; those the C layer
//! completes itself (`MPI_Comm_idup`, `MPI_Isendrecv`, generalized
//! requests, buffer flushes) are polled ([`Batch::advance_pending`]).

use std::cell::RefCell;

use ferry::{Completion, RawRequest, Request, Status};

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_COMM_SELF, MPI_COMM_WORLD, MPI_REQUEST_NULL};
use crate::error::{Fail, Res};
use crate::ffi::args::{OutSlice, StatusOut};
use crate::request::handle::{self, bad_request, ReqHandle, Seen};
use crate::request::object::{Report, ReqObj, State};
use crate::request::post::{finish, Post};
use crate::state::{rt, Runtime};

/// Per-thread vectors, reused between calls (no allocation once grown).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Lent: the objects (`None` for `MPI_REQUEST_NULL`).
    objs: Vec<Option<ReqObj>>,
    /// In place, raw: the operations (`NULL` for null and EMPTY handles).
    raws: Vec<RawRequest>,
    /// The ferry operations, in entry order (`Request::NULL` for anything
    /// ferry has nothing to do with).
    pub(crate) reqs: Vec<Request>,
    /// In place: each entry's communicator (errors are raised on it).
    comms: Vec<usize>,
    /// Completions from ferry's `*_all` functions.
    done: Vec<Completion>,
    /// The direct handles met: a second one is busy.
    seen: Seen,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// How a batch's operations were taken (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// In place: raw operations only.
    Raw,
    /// In place: one-shot ferry operations without a post step only.
    Ferry,
    /// Every object lent out of the table.
    Lent,
}

/// Whether a completion call blocks until it can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    Wait,
    Test,
}

/// How a failed operation fails an `all` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Errors {
    /// `MPI_ERR_IN_STATUS` (the `*all` calls; the statuses say which).
    InStatus,
    /// The operation's own error (the single-request calls).
    Own,
}

/// `MPI_ERR_IN_STATUS` on a communicator.
pub(crate) fn in_status(comm: usize) -> Fail {
    Fail::new(MPI_ERR_IN_STATUS, "an operation failed: see the statuses").on(comm)
}

/// Where an `all` call writes its statuses: an array (`None`:
/// `MPI_STATUSES_IGNORE`) or one status argument.
pub(crate) trait Statuses {
    /// Writes entry `i`'s status.
    fn put(&mut self, i: usize, s: MpiStatus);
    /// Writes entry `i`'s status from ferry's (converted only if it is
    /// written: most calls ignore their statuses).
    fn put_ferry(&mut self, i: usize, s: &Status) {
        self.put(i, MpiStatus::from_ferry(s));
    }
    /// Writes entry `i`'s report (one status argument hands an ARecv's
    /// buffer over through it); its result.
    fn put_report(&mut self, i: usize, r: Report) -> Res {
        self.put(i, r.status);
        r.result
    }
}

impl Statuses for Option<OutSlice<'_, MpiStatus>> {
    #[inline]
    fn put(&mut self, i: usize, s: MpiStatus) {
        if let Some(out) = self {
            out.set(i, s);
        }
    }

    #[inline]
    fn put_ferry(&mut self, i: usize, s: &Status) {
        if let Some(out) = self {
            out.set(i, MpiStatus::from_ferry(s));
        }
    }
}

impl Statuses for StatusOut<'_> {
    #[inline]
    fn put(&mut self, _: usize, s: MpiStatus) {
        self.set(s);
    }

    fn put_report(&mut self, _: usize, r: Report) -> Res {
        r.write_status(self)
    }
}

/// The requests of one call, taken out of their handles.
pub(crate) struct Batch<'a> {
    rt: &'static Runtime,
    handles: &'a mut [usize],
    pub(crate) s: &'a mut Scratch,
    taken: Taken,
    /// In place: every operation completed (the settle frees the entries).
    complete: bool,
}

/// Runs `body` over the requests of `handles` taken as a batch (in place
/// if `in_place` allows and every entry is plain), then settles them:
/// handles of freed requests become `MPI_REQUEST_NULL`.
pub(crate) fn with<R>(
    handles: &mut [usize],
    in_place: bool,
    body: impl FnOnce(&mut Batch<'_>) -> Res<R>,
) -> Res<R> {
    let rt = rt()?;
    let scratch = |s: &mut Scratch| {
        let mut batch = Batch::take(rt, handles, s, in_place)?;
        let r = body(&mut batch);
        batch.settle()?;
        r
    };
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => scratch(&mut s),
        // In use (no call path does that today): fresh vectors.
        Err(_) => scratch(&mut Scratch::default()),
    })
}

/// The in-place mode an entry allows (see the module docs); none for one
/// whose operation was already taken out (a handle listed twice: the lent
/// path reports it).
fn in_place_mode(obj: &ReqObj) -> Option<Taken> {
    if !matches!(obj.post, Post::None) || obj.persistent() {
        return None;
    }
    match &obj.state {
        State::Raw(r) if !r.is_null() => Some(Taken::Raw),
        State::Active(r) if !r.is_null() => Some(Taken::Ferry),
        _ => None,
    }
}

impl<'a> Batch<'a> {
    fn take(
        rt: &'static Runtime,
        handles: &'a mut [usize],
        s: &'a mut Scratch,
        in_place: bool,
    ) -> Res<Batch<'a>> {
        s.objs.clear();
        s.raws.clear();
        s.reqs.clear();
        s.comms.clear();
        s.done.clear();
        let taken = match in_place && rt.requests().unlocked() {
            true => take_in_place(rt, handles, s),
            false => None,
        };
        let taken = match taken {
            Some(t) => t,
            None => {
                lend_all(rt, handles, s)?;
                Taken::Lent
            }
        };
        Ok(Batch {
            rt,
            handles,
            s,
            taken,
            complete: false,
        })
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    /// The communicator errors of entry `i` are raised on.
    pub(crate) fn comm(&self, i: usize) -> usize {
        match self.taken {
            Taken::Lent => self
                .s
                .objs
                .get(i)
                .and_then(Option::as_ref)
                .map_or(MPI_COMM_SELF, |o| o.comm),
            _ => self.s.comms.get(i).copied().unwrap_or(MPI_COMM_SELF),
        }
    }

    /// The first entry's communicator that has one (for an error of the
    /// whole call).
    pub(crate) fn first_comm(&self) -> usize {
        (0..self.len())
            .map(|i| self.comm(i))
            .find(|&c| c != MPI_COMM_SELF)
            .unwrap_or(MPI_COMM_SELF)
    }

    /// Entry `i`'s lent object (`None` for null, or in place).
    pub(crate) fn obj(&mut self, i: usize) -> Option<&mut ReqObj> {
        self.s.objs.get_mut(i).and_then(Option::as_mut)
    }

    /// Registers the entries for `MPI_Cancel` from other threads while
    /// this one blocks (`waiting.rs`).
    pub(crate) fn waiting(&self) -> Option<crate::request::waiting::Waiting> {
        crate::request::waiting::enter(
            self.rt,
            self.handles.iter().copied().zip(self.s.reqs.iter()),
        )
    }

    /// Polls every lent entry the C layer completes itself (those done
    /// become ready); true if one is still pending.
    pub(crate) fn advance_pending(&mut self) -> Res<bool> {
        let mut pending = false;
        for o in self.s.objs.iter_mut().flatten() {
            pending |= o.poll_pending()?;
        }
        Ok(pending)
    }

    /// The first lent entry that is complete without ferry.
    pub(crate) fn first_ready(&self) -> Option<usize> {
        self.s
            .objs
            .iter()
            .position(|o| o.as_ref().is_some_and(ReqObj::is_ready))
    }

    /// True if lent entry `i` is complete without ferry.
    pub(crate) fn is_ready(&self, i: usize) -> bool {
        self.s.objs[i].as_ref().is_some_and(ReqObj::is_ready)
    }

    /// Lent entry `i`'s report, given ferry's completion of its operation
    /// (if it had one). Entries ferry did not complete are reported only if
    /// they are null, inactive or ready.
    pub(crate) fn report(&mut self, i: usize, c: Option<Completion>) -> Report {
        let Some(obj) = self.obj(i) else {
            return Report::empty();
        };
        match (&obj.state, c) {
            (State::Active(_), Some(c)) => finish(obj, c),
            _ if obj.is_ready() => obj.complete_ready().unwrap_or_else(Report::empty),
            _ => Report::empty(),
        }
    }

    /// Completes every entry (`Block::Wait`), or tests them: `Some` if all
    /// completed (then every status is written and every one-shot request
    /// freed), with the call's result (`Errors` says how a failed
    /// operation fails it); `None` if not (nothing changed). `Err` if the
    /// call itself failed.
    pub(crate) fn all(
        &mut self,
        block: Block,
        statuses: &mut impl Statuses,
        errors: Errors,
    ) -> Res<Option<Res>> {
        if self.taken == Taken::Lent {
            return self.all_lent(block, statuses, errors);
        }
        let mut failed: Option<(usize, ferry::ferry_core::Error)> = None;
        let mut each = |i: usize, st: &Status| {
            if let (Some(e), None) = (st.error, &failed) {
                failed = Some((i, e));
            }
            statuses.put_ferry(i, st);
        };
        let s = &mut *self.s;
        let world = &self.rt.world_comm.comm;
        let done = match (self.taken, block) {
            // Null and EMPTY entries only (the sends of a window that all
            // completed in their calls): nothing for the engine to do.
            (Taken::Raw, _) if s.raws.iter().all(|r| r.is_null()) => {
                for i in 0..s.raws.len() {
                    each(i, &Status::EMPTY);
                }
                Ok(true)
            }
            (Taken::Raw, Block::Wait) => world
                .wait_all_raw(&mut s.raws, |i, st| each(i, &st))
                .map(|()| true),
            (Taken::Raw, Block::Test) => world.test_all_raw(&mut s.raws, |i, st| each(i, &st)),
            (_, Block::Wait) => ferry::wait_all_into(&mut s.reqs, &mut s.done).map(|()| true),
            (_, Block::Test) => {
                ferry::test_all(&mut s.reqs).map(|done| done.map(|d| s.done = d).is_some())
            }
        };
        for (i, c) in s.done.drain(..).enumerate() {
            each(i, &c.into_status());
        }
        let complete = done.map_err(|e| Fail::from(e).on(self.first_comm()))?;
        self.complete = complete;
        if !complete {
            return Ok(None);
        }
        Ok(Some(match (failed, errors) {
            (None, _) => Ok(()),
            (Some((i, _)), Errors::InStatus) => Err(in_status(self.comm(i))),
            (Some((i, e)), Errors::Own) => Err(Fail::from(e).on(self.comm(i))),
        }))
    }

    /// [`Batch::all`] over lent entries. One entry completes on its own
    /// ([`ReqObj::wait`]: blocking in ferry on a pair's halves, on a
    /// generalized request's completion); more go through ferry's
    /// `wait_all`, after the entries the C layer completes itself.
    fn all_lent(
        &mut self,
        block: Block,
        statuses: &mut impl Statuses,
        errors: Errors,
    ) -> Res<Option<Res>> {
        let first = self.first_comm();
        if self.len() == 1 {
            let h = self.handles[0];
            let s = &mut *self.s;
            let Some(obj) = s.objs[0].as_mut() else {
                statuses.put(0, MpiStatus::EMPTY);
                return Ok(Some(Ok(())));
            };
            obj.put_ferry(std::mem::replace(&mut s.reqs[0], Request::NULL));
            let report = match block {
                Block::Wait => {
                    let _waiting = match &obj.state {
                        State::Active(r) => {
                            crate::request::waiting::enter(self.rt, std::iter::once((h, r)))
                        }
                        _ => None,
                    };
                    obj.wait().map(Some)
                }
                Block::Test => obj.test(),
            };
            s.reqs[0] = obj.take_ferry();
            let Some(report) = report? else {
                return Ok(None);
            };
            let failed = report.result.is_err();
            let r = statuses.put_report(0, report);
            return Ok(Some(match errors {
                Errors::Own => r,
                Errors::InStatus if failed => Err(in_status(self.comm(0))),
                Errors::InStatus => Ok(()),
            }));
        }
        let done = match block {
            Block::Wait => {
                while self.advance_pending()? {
                    std::thread::yield_now();
                }
                let _waiting = self.waiting();
                let s = &mut *self.s;
                ferry::wait_all_into(&mut s.reqs, &mut s.done)
                    .map_err(|e| Fail::from(e).on(first))?;
                std::mem::take(&mut self.s.done)
            }
            Block::Test => {
                if self.advance_pending()? {
                    return Ok(None);
                }
                match ferry::test_all(&mut self.s.reqs).map_err(|e| Fail::from(e).on(first))? {
                    Some(v) => v,
                    None => return Ok(None),
                }
            }
        };
        let mut completions = done;
        let mut failed = None;
        for (i, c) in completions.drain(..).enumerate().take(self.len()) {
            let report = self.report(i, Some(c));
            if report.result.is_err() && failed.is_none() {
                failed = Some(i);
            }
            // (The call's result says which failed: `MPI_ERR_IN_STATUS`.)
            let _ = statuses.put_report(i, report);
        }
        // Keep the (emptied) vector's capacity for the next call.
        if self.s.done.capacity() < completions.capacity() {
            self.s.done = completions;
        }
        Ok(Some(match failed {
            None => Ok(()),
            Some(i) => Err(in_status(self.comm(i))),
        }))
    }

    /// Settles the batch: in place, a complete one's entries are removed
    /// and every other's operations put back; lent, what is still pending
    /// or persistent goes back and what completed is freed. Handles of freed
    /// requests become `MPI_REQUEST_NULL`.
    fn settle(self) -> Res {
        let Batch {
            rt,
            handles,
            s,
            taken,
            complete,
        } = self;
        match (taken, complete) {
            (Taken::Lent, _) => settle_lent(rt, handles, s),
            (_, true) => rt.requests().with(|t| {
                for h in handles.iter_mut() {
                    if let ReqHandle::Table(h) = ReqHandle::of(*h) {
                        drop(t.remove(h));
                    }
                    *h = MPI_REQUEST_NULL;
                }
            }),
            (_, false) => rt.requests().with(|t| put_back_in_place(t, handles, s)),
        }
    }
}

/// Takes the operations out of the entries in place, if every entry is
/// plain and of one mode (the caller checked the thread level). `None`
/// otherwise, nothing taken.
fn take_in_place(rt: &Runtime, handles: &[usize], s: &mut Scratch) -> Option<Taken> {
    let taken = rt.requests().with(|t| {
        // First a look, so that only the mode's own vector is filled.
        let mut mode = None;
        s.seen.begin();
        for &h in handles {
            let m = match ReqHandle::of(h) {
                ReqHandle::Null | ReqHandle::Empty => continue,
                ReqHandle::Direct(r) if s.seen.first_time(r) => Taken::Raw,
                ReqHandle::Direct(_) => return None,
                ReqHandle::Table(h) => t.get(h).ok().and_then(in_place_mode)?,
            };
            if mode.is_some_and(|mode| mode != m) {
                return None;
            }
            mode = Some(m);
        }
        // An array of null and EMPTY handles only: either mode serves.
        let mode = mode.unwrap_or(Taken::Raw);
        for &h in handles {
            let o = match ReqHandle::of(h) {
                ReqHandle::Direct(r) => {
                    // (The look above made the mode `Raw`.)
                    s.comms.push(MPI_COMM_WORLD);
                    s.raws.push(r);
                    continue;
                }
                ReqHandle::Table(h) => t.get_mut(h).ok(),
                ReqHandle::Null | ReqHandle::Empty => None,
            };
            let Some(o) = o else {
                s.comms.push(MPI_COMM_SELF);
                match mode {
                    Taken::Raw => s.raws.push(RawRequest::NULL),
                    _ => s.reqs.push(Request::NULL),
                }
                continue;
            };
            // A handle listed twice is found taken the second time: the
            // lent path reports it.
            if in_place_mode(o) != Some(mode) {
                put_back_in_place(t, handles, s);
                return None;
            }
            s.comms.push(o.comm);
            match &mut o.state {
                State::Raw(r) => s.raws.push(std::mem::replace(r, RawRequest::NULL)),
                _ => s.reqs.push(o.take_ferry()),
            }
        }
        Some(mode)
    });
    taken.ok().flatten()
}

/// Puts back what [`take_in_place`] took, in the table's own borrow. (A
/// direct handle took nothing out of the table: it still names its
/// operation.)
fn put_back_in_place(t: &mut crate::handle::Table<ReqObj>, handles: &[usize], s: &mut Scratch) {
    let raws = s.raws.drain(..).map(Op::Raw);
    let reqs = s.reqs.drain(..).map(Op::Ferry);
    for (&h, op) in handles.iter().zip(raws.chain(reqs)) {
        let ReqHandle::Table(h) = ReqHandle::of(h) else {
            continue;
        };
        if let Ok(o) = t.get_mut(h) {
            match (&mut o.state, op) {
                (State::Raw(r), Op::Raw(raw)) => *r = raw,
                (_, Op::Ferry(req)) => o.put_ferry(req),
                _ => {}
            }
        }
    }
}

/// An operation taken out of an entry in place.
enum Op {
    Raw(RawRequest),
    Ferry(Request),
}

/// Lends every non-null handle's object (an EMPTY one as a ready object);
/// on a bad one, puts the others back.
fn lend_all(rt: &'static Runtime, handles: &[usize], s: &mut Scratch) -> Res {
    let (objs, seen) = (&mut s.objs, &mut s.seen);
    seen.begin();
    rt.requests().with(|t| {
        for (i, &h) in handles.iter().enumerate() {
            let lent = match ReqHandle::of(h) {
                ReqHandle::Null => {
                    objs.push(None);
                    continue;
                }
                // Complete, with no table entry: a ready object here.
                ReqHandle::Empty => {
                    objs.push(Some(ReqObj::ready(MpiStatus::EMPTY, MPI_COMM_SELF)));
                    continue;
                }
                ReqHandle::Direct(r) if seen.first_time(r) => {
                    objs.push(Some(handle::lend_direct(rt, r)));
                    continue;
                }
                ReqHandle::Direct(_) => Err(crate::handle::BadHandle::Busy),
                ReqHandle::Table(h) => t.lend(h),
            };
            match lent {
                Ok(mut o) => {
                    o.promote(rt);
                    objs.push(Some(o));
                }
                Err(b) => {
                    for (&h, o) in handles.iter().zip(objs.drain(..)) {
                        match (ReqHandle::of(h), o) {
                            // (Nothing ran on it: it is still pending.)
                            (ReqHandle::Direct(_), Some(o)) => drop(handle::give_back_direct(o)),
                            (ReqHandle::Table(h), Some(o)) => t.restore(h, o),
                            _ => {}
                        }
                    }
                    // (One request: the single-request calls' own message.)
                    if handles.len() == 1 {
                        return Err(bad_request(b));
                    }
                    return Err(Fail::msg(
                        MPI_ERR_REQUEST,
                        format!("request {i} of the array: {}", bad_request(b).what),
                    ));
                }
            }
        }
        Ok(())
    })??;
    s.reqs.extend(
        s.objs
            .iter_mut()
            .map(|o| o.as_mut().map_or(Request::NULL, ReqObj::take_ferry)),
    );
    Ok(())
}

/// Settles a lent batch (see [`Batch::settle`]).
fn settle_lent(rt: &Runtime, handles: &mut [usize], s: &mut Scratch) -> Res {
    for (o, r) in s.objs.iter_mut().zip(s.reqs.drain(..)) {
        if let Some(o) = o {
            o.put_ferry(r);
        }
    }
    let objs = &mut s.objs;
    let mut direct_failed = Ok(());
    rt.requests().with(|t| {
        for (h, o) in handles.iter_mut().zip(objs.drain(..)) {
            let Some(o) = o else { continue };
            match ReqHandle::of(*h) {
                ReqHandle::Empty if o.inactive() => *h = MPI_REQUEST_NULL,
                ReqHandle::Empty | ReqHandle::Null => {}
                ReqHandle::Direct(_) => match handle::give_back_direct(o) {
                    Ok(true) => *h = MPI_REQUEST_NULL,
                    Ok(false) => {}
                    Err(f) if direct_failed.is_ok() => direct_failed = Err(f),
                    Err(_) => {}
                },
                ReqHandle::Table(th) if o.inactive() && !o.persistent() => {
                    t.release(th);
                    *h = MPI_REQUEST_NULL;
                }
                ReqHandle::Table(th) => t.restore(th, o),
            }
        }
    })?;
    direct_failed
}
