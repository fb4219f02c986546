//! A collective's schedule: point-to-point steps and local steps over a set
//! of buffer slots, split into rounds by fences (DESIGN §9).
//!
//! A schedule is data: the algorithm builders write it once per call (or
//! once per persistent request), and the engine's executor
//! (`engine/coll.rs`) runs it from its progress, so a collective moves on
//! whenever any call enters the library.
//!
//! # Slots
//! Every byte a schedule touches lives in a slot: the caller's input
//! ([`INPUT`]), the caller's output ([`OUTPUT`]) and temporaries the builder
//! asks for. A send or receive lends a *region* of a slot to the engine as a
//! [`Buf`] (through `Window`, which keeps the slot's own buffer and merely
//! narrows it), so no byte is copied to send part of a buffer and nothing is
//! allocated when a persistent schedule runs again. A slot is lent to one
//! operation at a time; a step that needs a lent slot waits until it comes
//! back, so two sends of one slot in a round simply run one after the other
//! (an eager send comes back inside its call).
//!
//! # Rounds
//! The executor issues steps in order until it reaches a [`Step::Fence`],
//! which waits for everything issued before it. Within a round, builders put
//! receives before sends, so that a rank never blocks on a send while its
//! own receives for the same round are not yet posted.

use crate::buffer::{Buf, ByteStorage};
use crate::envelope::{ContextId, Rank, Tag};
use crate::error::{Error, Result, UsageError};
use crate::reduction::{Datatype, ReduceOp};

/// A slot index.
pub type SlotId = u16;
/// The caller's input buffer (absent for in-place calls).
pub const INPUT: SlotId = 0;
/// The caller's output buffer (the only buffer of an in-place call).
pub const OUTPUT: SlotId = 1;

/// A byte range of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// The slot.
    pub slot: SlotId,
    /// The first byte.
    pub offset: usize,
    /// The number of bytes.
    pub len: usize,
}

impl Region {
    /// `len` bytes of `slot` from `offset`.
    pub const fn new(slot: SlotId, offset: usize, len: usize) -> Region {
        Region { slot, offset, len }
    }

    /// The first `len` bytes of `slot`.
    pub const fn whole(slot: SlotId, len: usize) -> Region {
        Region::new(slot, 0, len)
    }
}

/// One step of a schedule. Peers are job ranks (the builder translated
/// them from communicator ranks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send a region to a peer.
    Send {
        /// The destination's job rank.
        peer: Rank,
        /// What to send.
        data: Region,
    },
    /// Receive exactly `data.len` bytes from a peer into a region. A
    /// message of any other length fails the collective with a typed error
    /// (mismatched counts are detected, never written out of bounds).
    Recv {
        /// The source's job rank.
        peer: Rank,
        /// Where it lands.
        data: Region,
    },
    /// `inout = input ⊕ inout` with the schedule's operation, or
    /// `inout = inout ⊕ input` when `input_first` is false (the order
    /// matters for a non-commutative user op).
    Reduce {
        /// The other operand.
        input: Region,
        /// The operand that receives the result.
        inout: Region,
        /// Whether `input` is the left operand.
        input_first: bool,
    },
    /// Copy bytes (regions of one slot may overlap).
    Copy {
        /// Source.
        from: Region,
        /// Destination, of the same length.
        to: Region,
    },
    /// Wait for every send and receive issued so far.
    Fence,
    /// A node collective through the device's shared memory
    /// ([`NodeCollectives`](crate::device::NodeCollectives)): the schedule's
    /// node operation `op`, on `input` (`None`: in place, in `output`).
    Node {
        /// Index into the schedule's node operations.
        op: u16,
        /// This rank's contribution, unless in place.
        input: Option<Region>,
        /// Where results land (and the contribution, in place).
        output: Region,
    },
}

/// A byte window onto a slot's buffer: what a send or receive is lent.
///
/// It owns the slot's whole buffer and exposes `start..end` of it, so that
/// lending part of a buffer is a move, not a copy; when the engine hands
/// the window back, the slot takes its buffer again.
#[derive(Debug)]
pub(crate) struct Window {
    pub(crate) buf: Buf,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl ByteStorage for Window {
    fn bytes(&self) -> &[u8] {
        let s = self.buf.as_slice();
        let end = self.end.min(s.len());
        &s[self.start.min(end)..end]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        let s = self.buf.as_mut_slice();
        let end = self.end.min(s.len());
        &mut s[self.start.min(end)..end]
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// Where a slot's buffer is.
#[derive(Debug)]
pub(crate) enum SlotState {
    /// Not provided (the input of an in-place call, a non-root's output).
    Absent,
    /// Here, boxed once so that lending and taking back allocate nothing.
    Idle(Box<Window>),
    /// Lent to a send or receive.
    Lent,
}

impl SlotState {
    pub(crate) fn from_buf(buf: Option<Buf>) -> SlotState {
        match buf {
            Some(buf) => {
                let end = buf.len();
                SlotState::Idle(Box::new(Window { buf, start: 0, end }))
            }
            None => SlotState::Absent,
        }
    }

    /// The slot's buffer, if it is here.
    pub(crate) fn take_buf(&mut self) -> Option<Buf> {
        match std::mem::replace(self, SlotState::Absent) {
            SlotState::Idle(w) => Some(w.buf),
            other => {
                *self = other;
                None
            }
        }
    }
}

/// Which collective a schedule performs (for errors and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollKind {
    /// `barrier`.
    Barrier,
    /// `bcast`.
    Bcast,
    /// `reduce`.
    Reduce,
    /// `allreduce`.
    Allreduce,
    /// `gather` and `gatherv`.
    Gather,
    /// `scatter` and `scatterv`.
    Scatter,
    /// `allgather` and `allgatherv`.
    Allgather,
    /// `alltoall` and `alltoallv`.
    Alltoall,
    /// `reduce_scatter` and `reduce_scatter_block`.
    ReduceScatter,
    /// `scan`.
    Scan,
    /// `exscan`.
    Exscan,
    /// The neighborhood collectives (`neighbor_allgather`,
    /// `neighbor_alltoall` and their v-variants).
    Neighbor,
    /// Context-id agreement inside communicator creation.
    Agree,
}

/// A built schedule; see the module docs.
#[derive(Debug)]
pub struct Schedule {
    pub(crate) kind: CollKind,
    pub(crate) steps: Vec<Step>,
    pub(crate) slots: Vec<SlotState>,
    pub(crate) op: Option<(ReduceOp, Datatype)>,
    pub(crate) context: ContextId,
    pub(crate) tag: Tag,
    /// Which tags on `context` are the collectives' (for finding a
    /// disagreeing member's message).
    pub(crate) tags: super::signature::TagSpace,
    /// Scratch for a reduction whose input is the right operand of a
    /// non-commutative op.
    pub(crate) scratch: Vec<u8>,
    /// The team: communicator rank to job rank (`None`: the identity over
    /// `size` ranks), so a member's death fails the collective on every
    /// survivor, whether or not it talks to the dead rank.
    pub(crate) members: Option<std::sync::Arc<[Rank]>>,
    pub(crate) size: u32,
    /// The node operations its `Node` steps run.
    pub(crate) node_ops: Vec<crate::device::NodeOp>,
}

impl Schedule {
    /// Which collective this is.
    pub fn kind(&self) -> CollKind {
        self.kind
    }

    /// The steps (for tests and the proptest of the builders).
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The number of slots.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The first member that has failed, by `failed(job_rank)`.
    pub(crate) fn failed_member(&self, failed: impl Fn(Rank) -> bool) -> Option<Rank> {
        self.members().find(|&r| failed(r))
    }

    /// The members' job ranks, in communicator order.
    pub(crate) fn members(&self) -> impl Iterator<Item = Rank> + '_ {
        let listed = self.members.as_deref().map(|m| m.iter().copied());
        let identity = listed.is_none().then_some(0..self.size as Rank);
        listed
            .into_iter()
            .flatten()
            .chain(identity.into_iter().flatten())
    }

    /// Runs the local steps of a schedule that has no send, receive or
    /// node step (a communicator of one) at once.
    pub(crate) fn is_local(&self) -> bool {
        !self
            .steps
            .iter()
            .any(|s| matches!(s, Step::Send { .. } | Step::Recv { .. } | Step::Node { .. }))
    }
}

/// Writes a [`Schedule`]: the algorithm builders' tool.
#[derive(Debug)]
pub struct Builder {
    sched: Schedule,
    /// Communicator rank to job rank.
    job_ranks: Option<std::sync::Arc<[Rank]>>,
    /// True once the current round has a send (a receive after it would be
    /// posted late: builders keep receives first).
    round_has_send: bool,
}

impl Builder {
    /// A builder for `kind` on `context` with `tag`, holding the caller's
    /// buffers. `job_ranks` maps communicator ranks to job ranks (`None`:
    /// the identity).
    pub(crate) fn new(
        kind: CollKind,
        (context, size): (ContextId, u32),
        tag: Tag,
        job_ranks: Option<std::sync::Arc<[Rank]>>,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Builder {
        Builder {
            sched: Schedule {
                kind,
                steps: Vec::with_capacity(4),
                slots: vec![SlotState::from_buf(input), SlotState::from_buf(output)],
                op: None,
                context,
                tag,
                tags: super::signature::TagSpace::Full,
                scratch: Vec::new(),
                members: job_ranks.clone(),
                size,
                node_ops: Vec::new(),
            },
            job_ranks,
            round_has_send: false,
        }
    }

    /// Marks the schedule's tags as an intercommunicator's
    /// ([`TagSpace::Inter`](super::signature::TagSpace::Inter)).
    pub(crate) fn set_tag_space(&mut self, tags: super::signature::TagSpace) {
        self.sched.tags = tags;
    }

    /// Sets the reduction every `reduce` step applies.
    pub(crate) fn set_op(&mut self, op: ReduceOp, dtype: Datatype) {
        self.sched.op = Some((op, dtype));
    }

    /// Is the schedule's operation commutative (true without one)?
    pub(crate) fn op_commutative(&self) -> bool {
        self.sched
            .op
            .as_ref()
            .is_none_or(|(o, _)| o.is_commutative())
    }

    /// A zeroed temporary slot of `len` bytes.
    ///
    /// # Errors
    /// Out of memory.
    pub(crate) fn temp(&mut self, len: usize) -> Result<SlotId> {
        let id = SlotId::try_from(self.sched.slots.len())
            .map_err(|_| Error::Internal("schedule needs more than 65535 slots"))?;
        self.sched
            .slots
            .push(SlotState::from_buf(Some(Buf::zeroed(len)?)));
        Ok(id)
    }

    fn job(&self, comm_rank: u32) -> Rank {
        match &self.job_ranks {
            Some(map) => map[comm_rank as usize],
            None => comm_rank as Rank,
        }
    }

    /// Send `data` to communicator rank `to`. Empty regions are skipped
    /// only when `skip_empty` would be safe: never (a zero-byte message
    /// still orders the round), so every send is kept.
    pub(crate) fn send(&mut self, to: u32, data: Region) {
        let peer = self.job(to);
        self.round_has_send = true;
        self.sched.steps.push(Step::Send { peer, data });
    }

    /// Receive exactly `data.len` bytes from communicator rank `from`.
    pub(crate) fn recv(&mut self, from: u32, data: Region) {
        debug_assert!(
            !self.round_has_send,
            "a receive after a send in one round is posted late"
        );
        let peer = self.job(from);
        self.sched.steps.push(Step::Recv { peer, data });
    }

    /// `inout = input ⊕ inout` (or `inout ⊕ input` if `!input_first`).
    pub(crate) fn reduce(&mut self, input: Region, inout: Region, input_first: bool) {
        self.sched.steps.push(Step::Reduce {
            input,
            inout,
            input_first,
        });
        let commutative = self
            .sched
            .op
            .as_ref()
            .is_some_and(|(o, _)| o.is_commutative());
        if !input_first && !commutative && self.sched.scratch.len() < input.len {
            self.sched.scratch.resize(input.len, 0);
        }
    }

    /// Copy `from` to `to` (a no-op for equal regions).
    pub(crate) fn copy(&mut self, from: Region, to: Region) {
        if from != to && from.len > 0 {
            self.sched.steps.push(Step::Copy { from, to });
        }
    }

    /// A node collective step (its own round: fenced on both sides).
    ///
    /// # Errors
    /// More than 65535 node operations in one schedule.
    pub(crate) fn node(
        &mut self,
        op: crate::device::NodeOp,
        input: Option<Region>,
        output: Region,
    ) -> Result<()> {
        self.fence();
        let index = u16::try_from(self.sched.node_ops.len())
            .map_err(|_| Error::Internal("schedule needs more than 65535 node steps"))?;
        self.sched.node_ops.push(op);
        self.sched.steps.push(Step::Node {
            op: index,
            input,
            output,
        });
        self.fence();
        Ok(())
    }

    /// Maps the communicator ranks of later steps through `job_ranks`
    /// instead (a sub-team: the node leaders of a hierarchical collective).
    pub(crate) fn set_team(&mut self, job_ranks: std::sync::Arc<[Rank]>) {
        self.job_ranks = Some(job_ranks);
    }

    /// Back to `job_ranks` after [`Builder::set_team`].
    pub(crate) fn restore_team(&mut self, job_ranks: Option<std::sync::Arc<[Rank]>>) {
        self.job_ranks = job_ranks;
    }

    /// The schedule's reduction, for a node step.
    pub(crate) fn op_pair(&self) -> Option<(ReduceOp, Datatype)> {
        self.sched.op.clone()
    }

    /// Ends a round.
    pub(crate) fn fence(&mut self) {
        self.round_has_send = false;
        if !matches!(self.sched.steps.last(), None | Some(Step::Fence)) {
            self.sched.steps.push(Step::Fence);
        }
    }

    /// The length of a slot's buffer (0 if absent).
    pub(crate) fn slot_len(&self, slot: SlotId) -> usize {
        match self.sched.slots.get(slot as usize) {
            Some(SlotState::Idle(w)) => w.buf.len(),
            _ => 0,
        }
    }

    /// Is the slot provided?
    pub(crate) fn has(&self, slot: SlotId) -> bool {
        matches!(
            self.sched.slots.get(slot as usize),
            Some(SlotState::Idle(_))
        )
    }

    /// The finished schedule. Every region is checked against its slot here,
    /// so the executor never indexes out of bounds.
    ///
    /// # Errors
    /// [`Error::Internal`] if a builder wrote a region outside its slot.
    pub(crate) fn finish(mut self) -> Result<Schedule> {
        self.fence();
        // No allocation here: a nonblocking collective builds a schedule
        // per call.
        let slots = &self.sched.slots;
        let len_of = |slot: SlotId| match slots.get(slot as usize) {
            Some(SlotState::Idle(w)) => Some(w.buf.len()),
            Some(_) => Some(0),
            None => None,
        };
        let fits = |r: &Region| {
            len_of(r.slot).is_some_and(|l| r.offset.checked_add(r.len).is_some_and(|e| e <= l))
        };
        for step in &self.sched.steps {
            let ok = match step {
                Step::Send { data, .. } | Step::Recv { data, .. } => fits(data),
                Step::Reduce { input, inout, .. } => {
                    fits(input) && fits(inout) && input.len == inout.len && self.sched.op.is_some()
                }
                Step::Copy { from, to } => fits(from) && fits(to) && from.len == to.len,
                Step::Node { op, input, output } => {
                    input.as_ref().is_none_or(&fits)
                        && fits(output)
                        && self.sched.node_ops.get(*op as usize).is_some()
                }
                Step::Fence => true,
            };
            if !ok {
                tracing::error!(?step, "collective builder wrote a bad step");
                return Err(Error::Internal(
                    "collective schedule step outside its buffers",
                ));
            }
        }
        Ok(self.sched)
    }
}

/// The error for buffers that do not have the sizes the collective needs.
pub(crate) fn length_error(what: &'static str) -> Error {
    UsageError::LengthMismatch(what).into()
}
