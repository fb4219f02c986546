//! Running collective schedules (DESIGN §9): the executor that turns a
//! [`Schedule`]'s steps into sends, receives and local reductions, driven by
//! the engine's progress.
//!
//! A collective is a request of kind `Coll` whose `Op::Coll` names its
//! running schedule. [`Engine::progress`] advances every active schedule
//! after the device's progress, so a collective moves on in any call into
//! the library (test, wait, a send, a probe), and a rank sleeping in a
//! passive wait is woken by the collective's own traffic like by any other.
//!
//! Failure: the first sub-operation that fails (a dead peer, a message of
//! the wrong length) fails the collective. Its pending receives are
//! cancelled and its pending sends detached, so it completes at once with
//! the error in its status instead of waiting for peers that may never
//! answer. Buffers lent to a detached send are dropped when it ends.
//!
//! Disagreement: a member whose call differs (another root or count) tags
//! its messages with another signature ([`signature`]), so no receive here
//! takes them. A waiting schedule looks for such a message among the
//! unexpected ones whenever new ones arrived; the rank that finds one (or a
//! message of the wrong length) revokes the call on every member.

use super::complete::Standing;
use super::request::{Kind, Op, Req, SendMode, Spec};
use super::{Engine, State};
use crate::buffer::Buf;
use crate::coll::schedule::{Region, Schedule, SlotId, SlotState, Step, Window, INPUT, OUTPUT};
use crate::coll::signature::{self, Stray};
use crate::device::Device;
use crate::envelope::{ANY_TAG, PROC_NULL};
use crate::error::{Error, PeerError, Result, UsageError};
use crate::handle::Request;
use crate::reduction::reduce_into;
use crate::status::Status;

/// Polls of a node step's flags per progress round.
const NODE_LOOKS: u32 = 4;

/// A sub-operation in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    handle: Request,
    slot: SlotId,
    /// For a receive: the exact length expected.
    expect: Option<usize>,
}

/// A schedule and where it stands.
#[derive(Debug)]
pub(crate) struct Running {
    sched: Schedule,
    /// The next step to issue.
    pc: usize,
    pending: Vec<Pending>,
    /// The collective's request key.
    request: u64,
    failed: Option<Error>,
    /// The engine event count when this schedule last looked at its
    /// sub-operations: nothing can have completed if it has not moved.
    seen: u64,
    /// The engine's peer-failure count when this schedule last checked its
    /// members.
    failures_seen: u64,
    /// The engine's unexpected-arrival count when this schedule last looked
    /// for a disagreeing member's message.
    arrivals_seen: u64,
    /// This rank found the members disagreeing and has yet to tell them.
    revoke: bool,
}

/// What starting a collective gives back.
#[derive(Debug)]
#[must_use = "the request must be completed, and returned buffers are the caller's again"]
pub struct CollStarted {
    /// The request, or [`Request::EMPTY`] if the collective completed inside
    /// the call (a communicator of one, for instance).
    pub request: Request,
    /// For an EMPTY request: the output buffer.
    pub output: Option<Buf>,
    /// For an EMPTY request: the input buffer.
    pub input: Option<Buf>,
}

impl<D: Device> Engine<D> {
    /// Starts a collective (the nonblocking form: `ibarrier`, `iallreduce`,
    /// ...). Its request mixes with point-to-point requests in every
    /// completion call; the [`Completion`](super::Completion) hands back the
    /// output buffer in `buf` and the input buffer in `input`.
    ///
    /// # Errors
    /// A fatal device error. (Argument errors were found when the schedule
    /// was built.)
    pub fn start_coll(&mut self, mut sched: Schedule) -> Result<CollStarted> {
        self.reserve_node_ops(&mut sched)?;
        if sched.is_local() {
            let mut run = Running::new(sched, 0);
            self.run_local(&mut run)?;
            let status = run.status();
            if let Some(e) = status.error {
                return Err(e);
            }
            return Ok(CollStarted {
                request: Request::EMPTY,
                output: run.sched.slots[OUTPUT as usize].take_buf(),
                input: run.sched.slots[INPUT as usize].take_buf(),
            });
        }
        let key = self.insert_coll(sched, false);
        self.st.colls_active.push(key);
        self.advance_colls()?;
        Ok(CollStarted {
            request: Request(self.run_request(key)),
            output: None,
            input: None,
        })
    }

    /// A persistent collective (`MPI_Allreduce_init` and the rest, MPI 4.0):
    /// the schedule is built once and run by every [`Engine::start`]. The
    /// request is inactive until started; its buffers stay with it and are
    /// reached with [`Engine::coll_buffers_mut`] while it is inactive.
    pub fn coll_init(&mut self, sched: Schedule) -> Request {
        let key = self.insert_coll(sched, true);
        Request(self.run_request(key))
    }

    /// The input and output buffers of an inactive persistent collective.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`], [`UsageError::WrongRequestKind`] for
    /// another kind of request, [`UsageError::RequestActive`].
    pub fn coll_buffers_mut(
        &mut self,
        request: &Request,
    ) -> Result<(Option<&mut Buf>, Option<&mut Buf>)> {
        let req = self
            .st
            .requests
            .get(request.0)
            .filter(|r| !r.life.detached());
        let req = req.ok_or_else(State::stale)?;
        let Op::Coll(run) = req.op else {
            return Err(UsageError::WrongRequestKind("not a persistent collective").into());
        };
        if !req.life.persistent() {
            return Err(UsageError::WrongRequestKind("not a persistent collective").into());
        }
        if req.life.active() {
            return Err(UsageError::RequestActive.into());
        }
        let run = self.st.colls.get_mut(run).ok_or_else(State::stale)?;
        let (a, b) = run.sched.slots.split_at_mut(1);
        Ok((slot_buf(&mut a[0]), slot_buf(&mut b[0])))
    }

    fn insert_coll(&mut self, sched: Schedule, persistent: bool) -> u64 {
        let spec = Spec {
            peer: PROC_NULL,
            tag: ANY_TAG,
            context: sched.context,
            mode: SendMode::Standard,
        };
        let run_key = self.st.colls.insert(Running::new(sched, 0));
        let mut req = if persistent {
            Req::persistent(Kind::Coll, spec, None)
        } else {
            Req::new(Kind::Coll, spec, None)
        };
        req.op = Op::Coll(run_key);
        let key = self.st.requests.insert(req);
        if let Some(run) = self.st.colls.get_mut(run_key) {
            run.request = key;
        }
        run_key
    }

    fn run_request(&self, run_key: u64) -> u64 {
        self.st.colls.get(run_key).map_or(0, |r| r.request)
    }

    /// `start` of a persistent collective: run its schedule again.
    pub(super) fn start_coll_persistent(&mut self, run_key: u64) -> Result<()> {
        let mut colls = std::mem::take(&mut self.st.colls);
        let reserved = match colls.get_mut(run_key) {
            Some(run) => self.reserve_node_ops(&mut run.sched),
            None => Err(State::stale()),
        };
        self.st.colls = colls;
        reserved?;
        let run = self.st.colls.get_mut(run_key).ok_or_else(State::stale)?;
        run.pc = 0;
        run.failed = None;
        run.seen = u64::MAX;
        run.failures_seen = 0;
        run.arrivals_seen = u64::MAX;
        run.revoke = false;
        self.st.colls_active.push(run_key);
        self.advance_colls()
    }

    /// Advances every active schedule; called from progress.
    pub(super) fn advance_colls(&mut self) -> Result<()> {
        let mut colls = std::mem::take(&mut self.st.colls);
        let mut result = Ok(());
        let mut i = 0;
        while i < self.st.colls_active.len() {
            let key = self.st.colls_active[i];
            let Some(run) = colls.get_mut(key) else {
                self.st.colls_active.swap_remove(i);
                continue;
            };
            match self.advance(run) {
                Ok(true) => {
                    self.st.colls_active.swap_remove(i);
                    if self.finish_coll(run) {
                        colls.remove(key);
                    }
                }
                Ok(false) => i += 1,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.st.colls = colls;
        result
    }

    /// Harvests finished sub-operations and issues what can be issued.
    /// True when the schedule is done (or failed and drained).
    fn advance(&mut self, run: &mut Running) -> Result<bool> {
        // Events from here on (a receive that matches inside `issue`, say)
        // must make the next call look again.
        let now = self.st.events;
        if run.failures_seen != self.st.peer_failures && run.failed.is_none() {
            // A member's death fails the collective on every survivor, not
            // only on those that exchange messages with it: the others
            // would wait for partners that gave up.
            run.failures_seen = self.st.peer_failures;
            let sched = &run.sched;
            let dead = self
                .st
                .failure_order
                .iter()
                .copied()
                .find(|&r| sched.failed_member(|m| m == r).is_some());
            if let Some(rank) = dead {
                run.failed = Some(PeerError::Died { rank }.into());
            }
        }
        if run.seen != now {
            self.harvest(run)?;
        }
        if run.failed.is_none() {
            self.issue(run)?;
        }
        let done = run.pc == run.sched.steps.len() && run.pending.is_empty();
        if !done && run.failed.is_none() {
            self.look_for_strays(run);
        }
        if run.failed.is_some() {
            if run.revoke {
                self.revoke(run)?;
            }
            self.abandon(run)?;
            return Ok(true);
        }
        run.seen = now;
        Ok(done)
    }

    /// Looks among the unexpected messages on the collective context for
    /// one of this call with another signature, or a revoke of it. Only
    /// when new ones arrived: a waiting schedule pays nothing otherwise.
    fn look_for_strays(&mut self, run: &mut Running) {
        let arrivals = self.st.counters.unexpected_arrivals;
        if run.arrivals_seen == arrivals {
            return;
        }
        run.arrivals_seen = arrivals;
        let (mine, space) = (run.sched.tag, run.sched.tags);
        let found = self
            .st
            .unexpected
            .find_on_context(run.sched.context, |env| {
                signature::classify(mine, env.tag, space) != Stray::Unrelated
            });
        let Some(env) = found else {
            return;
        };
        if signature::classify(mine, env.tag, space) == Stray::Revoke {
            run.failed = Some(mismatch(env.source));
        } else {
            tracing::warn!(
                kind = ?run.sched.kind,
                from = env.source,
                "a member runs this collective call with another root, count or operation"
            );
            run.failed = Some(mismatch(self.st.rank));
            run.revoke = true;
        }
    }

    /// Tells every other member that this call failed, so that those
    /// waiting for partners that will never send stop waiting.
    fn revoke(&mut self, run: &mut Running) -> Result<()> {
        run.revoke = false;
        let (tag, context) = (
            signature::revoke_tag(run.sched.tag, run.sched.tags),
            run.sched.context,
        );
        let me = self.st.rank;
        for member in run.sched.members() {
            if member == me {
                continue;
            }
            match self.isend(member, tag, context, Buf::from_vec(Vec::new())) {
                Ok(started) => {
                    let mut handle = started.request;
                    if !handle.is_empty() {
                        self.free(&mut handle)?;
                    }
                }
                // A dead member needs no telling.
                Err(Error::Peer(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn harvest(&mut self, run: &mut Running) -> Result<()> {
        let mut i = 0;
        while i < run.pending.len() {
            let p = run.pending[i];
            if self.st.standing(p.handle)? == Standing::Pending {
                i += 1;
                continue;
            }
            run.pending.swap_remove(i);
            let mut handle = p.handle;
            let done = self
                .st
                .take(&mut handle)?
                .ok_or(Error::Internal("sub-operation"))?;
            if let Some(buf) = done.buf {
                run.give_back(p.slot, buf)?;
            }
            let status = done.status;
            // A length the signature does not cover (a v-collective's
            // counts) can still differ.
            let wrong_length = match (status.error, p.expect) {
                (Some(e), _) => e.is_truncation(),
                (None, Some(n)) => status.bytes != n,
                (None, None) => false,
            };
            if run.failed.is_none() {
                if wrong_length {
                    tracing::warn!(kind = ?run.sched.kind, "collective message of an unexpected length");
                    run.failed = Some(mismatch(self.st.rank));
                    run.revoke = true;
                } else {
                    run.failed = status.error;
                }
            }
        }
        Ok(())
    }

    fn issue(&mut self, run: &mut Running) -> Result<()> {
        while let Some(&step) = run.sched.steps.get(run.pc) {
            match step {
                Step::Fence => {
                    if !run.pending.is_empty() {
                        return Ok(());
                    }
                }
                Step::Send { peer, data } => {
                    let Some(buf) = run.lend(data)? else {
                        return Ok(());
                    };
                    let (ctx, tag) = (run.sched.context, run.sched.tag);
                    let s = self.isend(peer, tag, ctx, buf)?;
                    run.track(s.request, data.slot, None, s.buf)?;
                }
                Step::Recv { peer, data } => {
                    let Some(buf) = run.lend(data)? else {
                        return Ok(());
                    };
                    let (ctx, tag) = (run.sched.context, run.sched.tag);
                    let s = self.irecv(peer, tag, ctx, buf)?;
                    run.track(s.request, data.slot, Some(data.len), s.buf)?;
                }
                Step::Reduce { .. } | Step::Copy { .. } => {
                    if !run.local_step(step)? {
                        return Ok(());
                    }
                }
                Step::Node { op, input, output } => {
                    let Some(node) = self.device.node() else {
                        return Err(Error::Internal(
                            "a node step on a device without node collectives",
                        ));
                    };
                    let sched = &mut run.sched;
                    let node_op = sched
                        .node_ops
                        .get_mut(op as usize)
                        .ok_or(Error::Internal("node step out of range"))?;
                    let (src, dst) = match input {
                        Some(input) if output.len > 0 => {
                            let (src, dst) = two_regions(&mut sched.slots, input, output)?;
                            (Some(src), dst)
                        }
                        // Nothing lands here (a reduce's non-root), whatever
                        // the output slot.
                        Some(input) => (Some(region(&sched.slots, input)?), &mut [][..]),
                        None => (None, region_mut(&mut sched.slots, output)?),
                    };
                    // A few looks at the flags: the other members usually
                    // arrive within a cache-line transfer, far sooner than
                    // the next progress round.
                    let mut polled = Ok(false);
                    for _ in 0..NODE_LOOKS {
                        polled = node.poll(node_op, src, dst);
                        if !matches!(polled, Ok(false)) {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                    match polled {
                        Ok(true) => {}
                        Ok(false) => return Ok(()),
                        // A dead member or a bad reduction fails this
                        // collective, not the engine.
                        Err(e) => {
                            run.failed = Some(e);
                            return Ok(());
                        }
                    }
                }
            }
            run.pc += 1;
        }
        Ok(())
    }

    /// Takes the sequence numbers of a schedule's node operations, in issue
    /// order (at its start, so that every member numbers them alike).
    fn reserve_node_ops(&mut self, sched: &mut Schedule) -> Result<()> {
        if sched.node_ops.is_empty() {
            return Ok(());
        }
        let node = self.device.node().ok_or(Error::Internal(
            "a node step on a device without node collectives",
        ))?;
        for op in &mut sched.node_ops {
            op.reset();
            node.reserve(op)?;
        }
        Ok(())
    }

    /// Runs a schedule without sends or receives to its end.
    fn run_local(&mut self, run: &mut Running) -> Result<()> {
        while let Some(&step) = run.sched.steps.get(run.pc) {
            if !matches!(step, Step::Fence) && !run.local_step(step)? {
                return Err(Error::Internal("local schedule step found a lent slot"));
            }
            run.pc += 1;
        }
        Ok(())
    }

    /// After a failure: cancel what waits on peers, detach the rest.
    fn abandon(&mut self, run: &mut Running) -> Result<()> {
        for p in std::mem::take(&mut run.pending) {
            let mut handle = p.handle;
            self.cancel(&handle)?;
            if self.st.standing(handle)? == Standing::Pending {
                self.free(&mut handle)?;
            } else if let Some(done) = self.st.take(&mut handle)? {
                if let Some(buf) = done.buf {
                    run.give_back(p.slot, buf)?;
                }
            }
        }
        run.pc = run.sched.steps.len();
        Ok(())
    }

    /// Completes the collective's request. True if the running schedule
    /// should be dropped now (its request was freed while pending).
    fn finish_coll(&mut self, run: &mut Running) -> bool {
        self.st.events += 1;
        let status = run.status();
        let Some(req) = self.st.requests.get_mut(run.request) else {
            return true;
        };
        req.status = status;
        match req.life.finish() {
            Some(life) => req.life = life,
            None => {
                self.st.requests.remove(run.request);
                return true;
            }
        }
        false
    }
}

impl State {
    /// The buffers of a finished collective, for `take`; drops the running
    /// schedule unless the request is persistent.
    pub(super) fn take_coll(
        &mut self,
        run_key: u64,
        persistent: bool,
    ) -> (Option<Buf>, Option<Buf>) {
        if persistent {
            return (None, None);
        }
        match self.colls.remove(run_key) {
            Some(mut run) => (
                run.sched.slots[OUTPUT as usize].take_buf(),
                run.sched.slots[INPUT as usize].take_buf(),
            ),
            None => (None, None),
        }
    }

    /// A freed collective request whose schedule is not running.
    pub(super) fn drop_coll(&mut self, run_key: u64) {
        self.colls.remove(run_key);
    }
}

fn slot_buf(s: &mut SlotState) -> Option<&mut Buf> {
    match s {
        SlotState::Idle(w) => Some(&mut w.buf),
        _ => None,
    }
}

fn mismatch(found_by: crate::envelope::Rank) -> Error {
    UsageError::CollectiveMismatch { found_by }.into()
}

impl Running {
    fn new(sched: Schedule, request: u64) -> Running {
        Running {
            sched,
            pc: 0,
            pending: Vec::new(),
            request,
            failed: None,
            seen: u64::MAX,
            failures_seen: 0,
            arrivals_seen: u64::MAX,
            revoke: false,
        }
    }

    fn status(&self) -> Status {
        Status {
            error: self.failed,
            ..Status::EMPTY
        }
    }

    /// Lends `data` as a `Buf`; `None` if its slot is already lent.
    fn lend(&mut self, data: Region) -> Result<Option<Buf>> {
        let slot = self.slot_mut(data.slot)?;
        match std::mem::replace(slot, SlotState::Lent) {
            SlotState::Idle(mut w) => {
                w.start = data.offset;
                w.end = data.offset + data.len;
                Ok(Some(Buf::from_storage(w)))
            }
            SlotState::Lent => Ok(None),
            SlotState::Absent => {
                *slot = SlotState::Absent;
                Err(Error::Internal("schedule used a slot it was not given"))
            }
        }
    }

    fn slot_mut(&mut self, slot: SlotId) -> Result<&mut SlotState> {
        self.sched
            .slots
            .get_mut(slot as usize)
            .ok_or(Error::Internal("schedule slot out of range"))
    }

    /// Takes a lent window back into its slot.
    fn give_back(&mut self, slot: SlotId, buf: Buf) -> Result<()> {
        let storage = buf
            .into_storage()
            .map_err(|_| Error::Internal("a collective's buffer came back in another form"))?;
        let window = storage
            .into_any()
            .downcast::<Window>()
            .map_err(|_| Error::Internal("a collective's buffer came back in another form"))?;
        *self.slot_mut(slot)? = SlotState::Idle(window);
        Ok(())
    }

    /// Records a started sub-operation (or takes its buffer straight back
    /// if it completed inside its call).
    fn track(
        &mut self,
        handle: Request,
        slot: SlotId,
        expect: Option<usize>,
        ready: Option<Buf>,
    ) -> Result<()> {
        if handle.is_empty() {
            let buf = ready.ok_or(Error::Internal("EMPTY sub-operation without its buffer"))?;
            return self.give_back(slot, buf);
        }
        self.pending.push(Pending {
            handle,
            slot,
            expect,
        });
        Ok(())
    }

    /// A reduce or copy; false if a slot it needs is lent.
    fn local_step(&mut self, step: Step) -> Result<bool> {
        let (from, to) = match step {
            Step::Reduce { input, inout, .. } => (input, inout),
            Step::Copy { from, to } => (from, to),
            _ => return Ok(true),
        };
        let slots = &mut self.sched.slots;
        let lent = |s: SlotId| !matches!(slots.get(s as usize), Some(SlotState::Idle(_)));
        if lent(from.slot) || lent(to.slot) {
            return Ok(false);
        }
        let (src, dst) = two_regions(slots, from, to)?;
        match step {
            Step::Copy { .. } => dst.copy_from_slice(src),
            Step::Reduce { input_first, .. } => {
                let (op, dtype) = self
                    .sched
                    .op
                    .as_ref()
                    .ok_or(Error::Internal("reduce step without an op"))?;
                if input_first || op.is_commutative() {
                    reduce_into(op, *dtype, src, dst)?;
                } else {
                    // inout ⊕ input: compute it in the scratch, which
                    // starts as a copy of input, then move it into inout.
                    let scratch = &mut self.sched.scratch[..src.len()];
                    scratch.copy_from_slice(src);
                    reduce_into(op, *dtype, dst, scratch)?;
                    dst.copy_from_slice(scratch);
                }
            }
            _ => {}
        }
        Ok(true)
    }
}

/// The bytes of one region, writable.
fn region_mut(slots: &mut [SlotState], r: Region) -> Result<&mut [u8]> {
    if r.len == 0 {
        // A barrier's output: nothing, whatever the slot.
        return Ok(&mut []);
    }
    match slots.get_mut(r.slot as usize) {
        Some(SlotState::Idle(w)) => w
            .buf
            .as_mut_slice()
            .get_mut(r.offset..r.offset + r.len)
            .ok_or(Error::Internal("collective region leaves its slot")),
        _ => Err(Error::Internal("node step on a lent or absent slot")),
    }
}

/// The bytes of one region.
fn region(slots: &[SlotState], r: Region) -> Result<&[u8]> {
    match slots.get(r.slot as usize) {
        Some(SlotState::Idle(w)) => w
            .buf
            .as_slice()
            .get(r.offset..r.offset + r.len)
            .ok_or(Error::Internal("collective region leaves its slot")),
        _ if r.len == 0 => Ok(&[]),
        _ => Err(Error::Internal("node step on a lent or absent slot")),
    }
}

/// `(source bytes, destination bytes)` of two regions, which may lie in one
/// slot if they do not overlap. (The builder checked the bounds.)
fn two_regions(slots: &mut [SlotState], a: Region, b: Region) -> Result<(&[u8], &mut [u8])> {
    let bad = || Error::Internal("collective regions overlap or leave their slot");
    if a.slot == b.slot {
        let SlotState::Idle(w) = &mut slots[a.slot as usize] else {
            return Err(bad());
        };
        let bytes = w.buf.as_mut_slice();
        let (lo, hi, a_first) = if a.offset <= b.offset {
            (a, b, true)
        } else {
            (b, a, false)
        };
        if lo.offset + lo.len > hi.offset || hi.offset + hi.len > bytes.len() {
            return Err(bad());
        }
        let (left, right) = bytes.split_at_mut(hi.offset);
        let lo_bytes = &mut left[lo.offset..lo.offset + lo.len];
        let hi_bytes = &mut right[..hi.len];
        return Ok(if a_first {
            (lo_bytes, hi_bytes)
        } else {
            (hi_bytes, lo_bytes)
        });
    }
    let (i, j) = (a.slot as usize, b.slot as usize);
    let (sa, sb) = if i < j {
        let (x, y) = slots.split_at_mut(j);
        (&mut x[i], &mut y[0])
    } else {
        let (x, y) = slots.split_at_mut(i);
        (&mut y[0], &mut x[j])
    };
    let (SlotState::Idle(wa), SlotState::Idle(wb)) = (sa, sb) else {
        return Err(bad());
    };
    let src = wa
        .buf
        .as_slice()
        .get(a.offset..a.offset + a.len)
        .ok_or_else(bad)?;
    let dst = wb
        .buf
        .as_mut_slice()
        .get_mut(b.offset..b.offset + b.len)
        .ok_or_else(bad)?;
    Ok((src, dst))
}
