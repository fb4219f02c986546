//! The completion family: `test`/`wait` and their `all`/`any`/`some` forms,
//! and the non-destructive `get_status` forms (MPI 4.1; Williams et al.,
//! "Enabling Non-Destructive Testing of the Statuses of Multiple Requests",
//! EuroMPI'23).
//!
//! Rules, as MPI has them:
//! - [`Request::NULL`] and inactive persistent requests are *inactive*: the
//!   `any`/`some` forms skip them, and when every entry is inactive they
//!   report [`Any::Undefined`] / [`Outcount::Undefined`]. Single-request and
//!   `all` forms treat them as complete with an empty status.
//! - [`Request::EMPTY`] is active and complete, not cancelled, with an empty
//!   status, and is recognised without entering progress.
//! - `test` and `get_status` on one request progress once if it is not
//!   complete yet. The `all` forms do the same when not all are complete.
//!   The `any` and `some` forms always progress once before looking, so an
//!   entry that is always complete (EMPTY, say) cannot starve the others:
//!   a receive that keeps appearing in the list while its message is
//!   available eventually completes (MPI's fairness rule, which that
//!   paper extends to `get_status_some`). `wait*` block through
//!   `device_check(Blocking)`.
//! - `testany`, `waitany` and `get_status_any` start scanning at a rotating
//!   index, so repeated calls over the same list report every complete
//!   request in turn instead of always favouring index 0 (unless
//!   [`Config::any_order`](crate::Config::any_order) asks for the lowest
//!   index, as MPICH and Open MPI report). `get_status_*`
//!   complete nothing and free nothing: a later `test`/`wait` does.

use super::request::{Life, Req};
use super::{Completion, Engine, Op, Park, State};
use crate::buffer::Buf;
use crate::device::Device;
use crate::error::Result;
use crate::handle::Message;
use crate::handle::Request;
use crate::status::Status;

/// Result of the `any` forms.
#[derive(Debug)]
pub enum Any {
    /// Request `index` completed (and was freed, or made inactive).
    Completed {
        /// Its index in the list.
        index: usize,
        /// What it handed back.
        completion: Completion,
    },
    /// Every entry was null or inactive (`MPI_UNDEFINED`).
    Undefined,
}

/// Result of `get_status_any`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusAny {
    /// Request `index` is complete; it stays valid.
    Completed {
        /// Its index in the list.
        index: usize,
        /// Its status.
        status: Status,
    },
    /// Every entry was null or inactive (`MPI_UNDEFINED`).
    Undefined,
}

/// Result of the `some` forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcount {
    /// This many requests completed (possibly 0 for `testsome`).
    Count(usize),
    /// Every entry was null or inactive (`MPI_UNDEFINED`).
    Undefined,
}

/// Where a handle stands, read without progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// Null, or an inactive persistent request.
    Inactive,
    Pending,
    Complete,
}

/// Where [`Engine::take_all_split`] hands completions.
pub trait Taker {
    /// Request `i`, a one-shot point-to-point operation: its status and
    /// its buffer.
    fn plain(&mut self, i: usize, status: Status, buf: Option<Buf>);
    /// Request `i`, anything else (or null, inactive or EMPTY).
    fn other(&mut self, i: usize, completion: Completion);
}

impl State {
    #[inline]
    pub(super) fn standing(&self, request: Request) -> Result<Standing> {
        if request.is_null() {
            return Ok(Standing::Inactive);
        }
        if request.is_empty() {
            return Ok(Standing::Complete);
        }
        let req = self.requests.get(request.0).filter(|r| !r.life.detached());
        let req = req.ok_or_else(State::stale)?;
        Ok(match req.life {
            Life::Inactive => Standing::Inactive,
            Life::Complete | Life::Finished => Standing::Complete,
            Life::Pending | Life::Started | Life::Detached => Standing::Pending,
        })
    }

    /// The status a complete entry reports: inactive ones (NULL, EMPTY,
    /// inactive persistent) report the empty status.
    fn status_of(&self, request: Request) -> Status {
        match self.requests.get(request.0) {
            Some(r) if r.life.active() => r.status,
            _ => Status::EMPTY,
        }
    }

    /// Completes a complete request: frees it (the handle becomes NULL) or,
    /// if persistent, makes it inactive. `None` if it is still pending.
    #[inline]
    pub(super) fn take(&mut self, request: &mut Request) -> Result<Option<Completion>> {
        // The common case first, in one lookup (`take_plain`). The rest is
        // out of line, so that this part inlines into the completion loops.
        if let Some((status, buf)) = self.take_plain(request) {
            return Ok(Some(Completion {
                status,
                buf,
                message: Message::NULL,
                input: None,
            }));
        }
        self.take_other(request)
    }

    /// The usual case of [`State::take`] alone, in parts: a complete
    /// one-shot point-to-point request's status and buffer (it is removed,
    /// and the handle becomes NULL). `None` for anything else, which
    /// [`State::take`] completes. A completion loop that builds its own
    /// value from these moves neither a whole [`Completion`] nor the fields
    /// such a request never has.
    #[inline]
    pub(super) fn take_plain(&mut self, request: &mut Request) -> Option<(Status, Option<Buf>)> {
        let mut done = None;
        self.take_plain_into(request, |status, buf| done = Some((status, buf)));
        done
    }

    /// [`State::take_plain`], handing the status and buffer to `to` while
    /// the request is still in its slot: an inlined `to` moves them once,
    /// from the slot to where they go. True if it took the request.
    #[inline(always)]
    pub(super) fn take_plain_into(
        &mut self,
        request: &mut Request,
        to: impl FnOnce(Status, Option<Buf>),
    ) -> bool {
        if request.is_null() || request.is_empty() {
            return false;
        }
        let taken = self.requests.remove_if(request.0, |req| {
            (req.life == Life::Complete && matches!(req.op, Op::Idle) && req.message.is_none())
                .then(|| to(req.status, req.buf.take()))
        });
        if taken.flatten().is_none() {
            return false;
        }
        *request = Request::NULL;
        true
    }

    /// [`State::take`] of everything but a complete one-shot
    /// point-to-point request without a message.
    #[inline(never)]
    fn take_other(&mut self, request: &mut Request) -> Result<Option<Completion>> {
        match self.standing(*request)? {
            Standing::Pending => return Ok(None),
            Standing::Inactive => return Ok(Some(Completion::empty())),
            Standing::Complete if request.is_empty() => {
                *request = Request::NULL;
                return Ok(Some(Completion::empty()));
            }
            Standing::Complete => {}
        }
        let key = request.0;
        let req = self.requests.get_mut(key).ok_or_else(State::stale)?;
        if let Op::Coll(run) = req.op {
            let persistent = req.life.persistent();
            let status = req.status;
            if persistent {
                req.life = Life::Inactive;
            } else {
                self.requests.remove(key);
                *request = Request::NULL;
            }
            let (buf, input) = self.take_coll(run, persistent);
            return Ok(Some(Completion {
                status,
                buf,
                message: Message::NULL,
                input,
            }));
        }
        if let Op::NodeColl(run) = req.op {
            let status = req.status;
            self.requests.remove(key);
            *request = Request::NULL;
            let (buf, input) = self.take_node_coll(run);
            return Ok(Some(Completion {
                status,
                buf,
                message: Message::NULL,
                input,
            }));
        }
        if req.life.persistent() {
            req.life = Life::Inactive;
            let message = req.message.take().unwrap_or(Message::NULL);
            return Ok(Some(Completion {
                status: req.status,
                buf: None,
                message,
                input: None,
            }));
        }
        let done = self
            .requests
            .remove_with(key, completion_of)
            .ok_or_else(State::stale)?;
        *request = Request::NULL;
        Ok(Some(done))
    }

    /// First complete active entry, scanning from a rotating start (or
    /// from 0: [`Config::any_order`](crate::Config::any_order)).
    /// `Ok(None)` if none is complete; `Err` on a stale handle.
    fn first_complete(&mut self, requests: &[Request]) -> Result<Option<usize>> {
        let n = requests.len();
        if n == 0 {
            return Ok(None);
        }
        let start = match self.config.any_order {
            crate::config::AnyOrder::Rotating => self.fair % n,
            crate::config::AnyOrder::Lowest => 0,
        };
        self.fair = self.fair.wrapping_add(1);
        for i in (start..n).chain(0..start) {
            if self.standing(requests[i])? == Standing::Complete {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Validates every handle (a stale one anywhere is an error, even behind
    /// a pending one), then says whether all are complete.
    fn all_complete(&self, requests: &[Request]) -> Result<bool> {
        let mut all = true;
        for r in requests {
            all &= self.standing(*r)? != Standing::Pending;
        }
        Ok(all)
    }

    /// A waitall loop's cursor: on its first call (`None`) every handle is
    /// validated, and the cursor starts at the first request.
    fn cursor<'c>(
        &self,
        requests: &[Request],
        cursor: &'c mut Option<usize>,
    ) -> Result<&'c mut usize> {
        if cursor.is_none() {
            self.all_complete(requests)?;
        }
        Ok(cursor.get_or_insert(0))
    }

    /// Moves `next` past the requests that are no longer pending; true if
    /// it reached the end. Requests never go back to pending, so a loop
    /// examines each one until it completes, and no more.
    fn advance(&self, requests: &[Request], next: &mut usize) -> Result<bool> {
        while let Some(r) = requests.get(*next) {
            if self.standing(*r)? == Standing::Pending {
                return Ok(false);
            }
            *next += 1;
        }
        Ok(true)
    }

    fn any_active(&self, requests: &[Request]) -> Result<bool> {
        let mut active = false;
        for r in requests {
            active |= self.standing(*r)? != Standing::Inactive;
        }
        Ok(active)
    }
}

impl<D: Device> Engine<D> {
    /// True if the request is complete, read without any progress
    /// (`is_complete` in the MPID design). NULL, EMPTY and inactive
    /// persistent requests count as complete.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`](crate::UsageError::StaleHandle).
    pub fn is_complete(&self, request: &Request) -> Result<bool> {
        Ok(self.st.standing(*request)? != Standing::Pending)
    }

    /// `MPI_Test`: if the request is not already complete, progresses once
    /// and looks again. On completion the request is freed (the handle
    /// becomes NULL) or, if persistent, made inactive.
    ///
    /// # Errors
    /// A stale handle, or a fatal device error.
    pub fn test(&mut self, request: &mut Request) -> Result<Option<Completion>> {
        if !self.test_ready(request)? {
            return Ok(None);
        }
        self.st.take(request)
    }

    /// The first half of [`Engine::test`]: progresses once if the request
    /// is still pending, and says whether it is complete now, without
    /// completing it. A caller that tests in a loop then moves a
    /// [`Completion`] (a few cache lines) only once, when there is one.
    ///
    /// # Errors
    /// As for [`Engine::test`].
    #[inline]
    pub fn test_ready(&mut self, request: &Request) -> Result<bool> {
        if self.st.standing(*request)? != Standing::Pending {
            return Ok(true);
        }
        self.progress()?;
        Ok(self.st.standing(*request)? != Standing::Pending)
    }

    /// `MPI_Wait`: blocks (through `park`) until the request completes.
    ///
    /// # Errors
    /// A stale handle, a fatal device error, or a failed park.
    pub fn wait<P: Park>(&mut self, request: &mut Request, park: &mut P) -> Result<Completion> {
        let mut out = None;
        self.block_until(park, |e| {
            out = e.st.take(request)?;
            Ok(out.is_some())
        })?;
        out.ok_or(crate::Error::Internal("wait ended without a completion"))
    }

    /// `MPI_Testall`: if every request is complete, completes them all into
    /// `out` (one entry per request, in order) and returns true; otherwise
    /// completes none.
    ///
    /// # Errors
    /// A stale handle (checked before anything changes), or a device error.
    pub fn testall(&mut self, requests: &mut [Request], out: &mut Vec<Completion>) -> Result<bool> {
        if !self.st.all_complete(requests)? {
            self.progress()?;
            if !self.st.all_complete(requests)? {
                return Ok(false);
            }
        }
        self.take_all(requests, out)?;
        Ok(true)
    }

    /// [`Engine::testall`] for a loop that calls it until it succeeds (a
    /// waitall): `cursor` starts as `None`; the first call validates every
    /// handle, and each call then examines the requests from the first one
    /// still pending, not all of them (a window of 64 receives costs one
    /// check per round, not 64).
    ///
    /// # Errors
    /// As for [`Engine::testall`].
    pub fn testall_resume(
        &mut self,
        requests: &mut [Request],
        out: &mut Vec<Completion>,
        cursor: &mut Option<usize>,
    ) -> Result<bool> {
        if !self.testall_ready(requests, cursor)? {
            return Ok(false);
        }
        self.take_all(requests, out)?;
        Ok(true)
    }

    /// The first half of [`Engine::testall_resume`]: true once every
    /// request is complete, completing none. Then
    /// [`Engine::take_all_with`] hands the completions over one by one,
    /// without a vector in between.
    ///
    /// # Errors
    /// As for [`Engine::testall`].
    pub fn testall_ready(
        &mut self,
        requests: &[Request],
        cursor: &mut Option<usize>,
    ) -> Result<bool> {
        let next = self.st.cursor(requests, cursor)?;
        if !self.st.advance(requests, next)? {
            self.progress()?;
            if !self.st.advance(requests, next)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn take_all(&mut self, requests: &mut [Request], out: &mut Vec<Completion>) -> Result<()> {
        out.clear();
        self.take_all_with(requests, |_, c| out.push(c))
    }

    /// Completes every request (all complete: [`Engine::testall_ready`]
    /// said so), handing `f` each one's index and completion in order.
    ///
    /// # Errors
    /// A stale handle. Handles before it are completed (and given to `f`)
    /// already; call only after `testall_ready`, which checks them all.
    pub fn take_all_with(
        &mut self,
        requests: &mut [Request],
        mut f: impl FnMut(usize, Completion),
    ) -> Result<()> {
        for (i, r) in requests.iter_mut().enumerate() {
            f(i, self.st.take(r)?.unwrap_or_else(Completion::empty));
        }
        Ok(())
    }

    /// [`Engine::take_all_with`], with the usual completion in parts: a
    /// complete one-shot point-to-point request goes to
    /// [`Taker::plain`] as its status and buffer (see `State::take_plain`),
    /// anything else to [`Taker::other`] as a whole completion.
    ///
    /// # Errors
    /// As for [`Engine::take_all_with`]; a request still pending (call only
    /// after [`Engine::testall_ready`] said all are complete) is an
    /// internal error, with the requests before it taken.
    pub fn take_all_split(&mut self, requests: &mut [Request], to: &mut impl Taker) -> Result<()> {
        if self.take_from(requests, &mut 0, to)? {
            Ok(())
        } else {
            Err(crate::Error::Internal(
                "take_all_split met a pending request",
            ))
        }
    }

    /// One step of a waitall that takes completions as it goes (the loop
    /// under `MPI_Waitall` and `wait_all_into`): `cursor` starts as `None`,
    /// and the first call validates every handle (a stale one anywhere is
    /// an error before anything is taken). Each call then takes the
    /// requests from the cursor on that are complete, in order, into `to`
    /// as [`Engine::take_all_split`] does, progressing once when it meets
    /// one still pending. True once every request is taken. Each request
    /// is looked up once when it is taken, not once to find it complete and
    /// again to take it.
    ///
    /// # Errors
    /// A stale handle (on the first call, before anything is taken), or a
    /// fatal device error (the requests before the cursor were taken).
    pub fn waitall_step(
        &mut self,
        requests: &mut [Request],
        cursor: &mut Option<usize>,
        to: &mut impl Taker,
    ) -> Result<bool> {
        let next = self.st.cursor(requests, cursor)?;
        if self.take_from(requests, next, to)? {
            return Ok(true);
        }
        self.progress()?;
        self.take_from(requests, next, to)
    }

    /// Takes the complete requests from `next` on into `to`, up to the
    /// first pending one; true if none is left.
    #[inline]
    fn take_from(
        &mut self,
        requests: &mut [Request],
        next: &mut usize,
        to: &mut impl Taker,
    ) -> Result<bool> {
        while let Some(r) = requests.get_mut(*next) {
            let i = *next;
            if !self
                .st
                .take_plain_into(r, |status, buf| to.plain(i, status, buf))
            {
                match self.st.take_other(r)? {
                    Some(c) => to.other(i, c),
                    None => return Ok(false),
                }
            }
            *next += 1;
        }
        Ok(true)
    }

    /// [`Engine::test`], handing the completion to `to` as
    /// [`Engine::take_all_split`] does (as request 0). False if the request
    /// is still pending.
    ///
    /// # Errors
    /// As for [`Engine::test`].
    #[inline]
    pub fn test_split(&mut self, request: &mut Request, to: &mut impl Taker) -> Result<bool> {
        if !self.test_ready(request)? {
            return Ok(false);
        }
        self.take_split(request, to)
    }

    /// The second half of [`Engine::test_split`] (after
    /// [`Engine::test_ready`] said the request is complete): completes it
    /// into `to`; false if it is still pending.
    ///
    /// # Errors
    /// A stale handle.
    #[inline]
    pub fn take_split(&mut self, request: &mut Request, to: &mut impl Taker) -> Result<bool> {
        if let Some((status, buf)) = self.st.take_plain(request) {
            to.plain(0, status, buf);
            return Ok(true);
        }
        Ok(match self.st.take(request)? {
            Some(c) => {
                to.other(0, c);
                true
            }
            None => false,
        })
    }

    /// `MPI_Waitall`.
    ///
    /// # Errors
    /// As for [`Engine::testall`], or a failed park.
    pub fn waitall<P: Park>(
        &mut self,
        requests: &mut [Request],
        out: &mut Vec<Completion>,
        park: &mut P,
    ) -> Result<()> {
        self.st.all_complete(requests)?;
        let mut next = 0;
        self.block_until(park, |e| e.st.advance(requests, &mut next))?;
        self.take_all(requests, out)
    }

    /// `MPI_Testany`: `None` if no active request is complete.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn testany(&mut self, requests: &mut [Request]) -> Result<Option<Any>> {
        if !self.st.any_active(requests)? {
            return Ok(Some(Any::Undefined));
        }
        self.progress()?;
        let found = self.st.first_complete(requests)?;
        self.take_any(requests, found)
    }

    fn take_any(&mut self, requests: &mut [Request], found: Option<usize>) -> Result<Option<Any>> {
        let Some(index) = found else { return Ok(None) };
        let completion = self
            .st
            .take(&mut requests[index])?
            .unwrap_or_else(Completion::empty);
        Ok(Some(Any::Completed { index, completion }))
    }

    /// `MPI_Waitany`.
    ///
    /// # Errors
    /// As for [`Engine::testany`], or a failed park.
    pub fn waitany<P: Park>(&mut self, requests: &mut [Request], park: &mut P) -> Result<Any> {
        if !self.st.any_active(requests)? {
            return Ok(Any::Undefined);
        }
        self.progress()?;
        let mut found = None;
        self.block_until(park, |e| {
            found = e.st.first_complete(requests)?;
            Ok(found.is_some())
        })?;
        Ok(self.take_any(requests, found)?.unwrap_or(Any::Undefined))
    }

    /// `MPI_Testsome`: completes every complete active request into `out`
    /// as `(index, completion)`.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn testsome(
        &mut self,
        requests: &mut [Request],
        out: &mut Vec<(usize, Completion)>,
    ) -> Result<Outcount> {
        out.clear();
        if !self.st.any_active(requests)? {
            return Ok(Outcount::Undefined);
        }
        self.progress()?;
        self.take_some(requests, out)
    }

    fn take_some(
        &mut self,
        requests: &mut [Request],
        out: &mut Vec<(usize, Completion)>,
    ) -> Result<Outcount> {
        out.clear();
        for (i, r) in requests.iter_mut().enumerate() {
            if self.st.standing(*r)? == Standing::Complete {
                let c = self.st.take(r)?.unwrap_or_else(Completion::empty);
                out.push((i, c));
            }
        }
        Ok(Outcount::Count(out.len()))
    }

    /// `MPI_Waitsome`.
    ///
    /// # Errors
    /// As for [`Engine::testsome`], or a failed park.
    pub fn waitsome<P: Park>(
        &mut self,
        requests: &mut [Request],
        out: &mut Vec<(usize, Completion)>,
        park: &mut P,
    ) -> Result<Outcount> {
        out.clear();
        if !self.st.any_active(requests)? {
            return Ok(Outcount::Undefined);
        }
        self.progress()?;
        self.block_until(park, |e| Ok(e.st.first_complete(requests)?.is_some()))?;
        self.take_some(requests, out)
    }

    /// `MPI_Request_get_status`: the status if complete, without freeing or
    /// deactivating the request. Progresses once if it is not complete yet.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn get_status(&mut self, request: &Request) -> Result<Option<Status>> {
        if self.st.standing(*request)? == Standing::Pending {
            self.progress()?;
        }
        Ok(match self.st.standing(*request)? {
            Standing::Pending => None,
            Standing::Inactive => Some(Status::EMPTY),
            Standing::Complete => Some(self.st.status_of(*request)),
        })
    }

    /// `MPI_Request_get_status_all`: if every request is complete, their
    /// statuses into `out` (in order) and true. Nothing is freed.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn get_status_all(&mut self, requests: &[Request], out: &mut Vec<Status>) -> Result<bool> {
        out.clear();
        if !self.st.all_complete(requests)? {
            self.progress()?;
            if !self.st.all_complete(requests)? {
                return Ok(false);
            }
        }
        out.extend(requests.iter().map(|r| self.st.status_of(*r)));
        Ok(true)
    }

    /// `MPI_Request_get_status_any`: a complete active request's index and
    /// status (scanning from a rotating start), `None` if none is complete.
    /// Nothing is freed.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn get_status_any(&mut self, requests: &[Request]) -> Result<Option<StatusAny>> {
        if !self.st.any_active(requests)? {
            return Ok(Some(StatusAny::Undefined));
        }
        self.progress()?;
        let found = self.st.first_complete(requests)?;
        Ok(found.map(|index| StatusAny::Completed {
            index,
            status: self.st.status_of(requests[index]),
        }))
    }

    /// `MPI_Request_get_status_some`: `(index, status)` of every complete
    /// active request into `out`. Nothing is freed.
    ///
    /// # Errors
    /// A stale handle, or a device error.
    pub fn get_status_some(
        &mut self,
        requests: &[Request],
        out: &mut Vec<(usize, Status)>,
    ) -> Result<Outcount> {
        out.clear();
        if !self.st.any_active(requests)? {
            return Ok(Outcount::Undefined);
        }
        self.progress()?;
        for (i, r) in requests.iter().enumerate() {
            if self.st.standing(*r)? == Standing::Complete {
                out.push((i, self.st.status_of(*r)));
            }
        }
        Ok(Outcount::Count(out.len()))
    }
}

/// The completion of a one-shot point-to-point request, taken out of it as
/// it is removed.
#[inline]
fn completion_of(req: &mut Req) -> Completion {
    Completion {
        status: req.status,
        buf: req.buf.take(),
        message: req.message.take().unwrap_or(Message::NULL),
        input: None,
    }
}
