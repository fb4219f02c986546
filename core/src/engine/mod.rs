//! The engine: posting, matching, protocols, progress and completion.
//!
//! An [`Engine`] owns one device (which may itself route per peer) and all
//! request state. It is a plain `&mut self` state machine: the `ferry` crate
//! puts it behind a lock for many threads and does the OS-level sleeping.
//!
//! # Progress and waiting (MPICH's ADI completion design, `MPID_DeviceCheck`)
//! - [`Engine::is_complete`] reads a request's state without progress.
//! - [`Engine::test`] (and the other `test*`) progress once, then check.
//! - [`Engine::device_check`] with [`CheckMode::Blocking`] is
//!   `MPID_DeviceCheck(BLOCKING)`: it progresses; if nothing happened it
//!   arms the device and reports [`Check::WouldBlock`]. The caller that owns
//!   the OS wait (a [`Park`]) then sleeps on [`Engine::wait_fd`].
//! - `wait*` loop: check completion, `device_check(Blocking)`, park on
//!   `WouldBlock`.
//!
//! The **no-lost-wakeup rule**: an engine reports `WouldBlock` only after
//! `progress` found nothing, its outbox is empty (work a device pushed back
//! is retried by polling, never slept on), *and* `arm` found nothing
//! pending; from then on
//! the device guarantees its fd (or wake flag) fires for any new event. So
//! an event that arrives between the last progress and the sleep is either
//! seen by `arm` (no sleep) or wakes the sleeper. The simulation tests
//! (`tests/sim_wait.rs`) check this with events injected at every point of
//! the sequence.
//!
//! # Operation errors versus call errors
//! A call returns `Err` when the call itself is wrong (a stale handle, a bad
//! rank). An operation that fails after it started (truncation, a dead peer)
//! still *completes*: its [`Completion`] carries the error in
//! [`Status::error`] and hands the buffer back, so no buffer is ever lost.

mod blocking;
mod coll;
mod complete;
mod direct;
mod incoming;
mod manage;
mod node_coll;
mod outbox;
mod persistent;
mod post;
mod request;
mod rma;
mod rndv;
mod small_pool;

use std::collections::VecDeque;

use crate::buffer::Buf;
use crate::config::Config;
use crate::device::{Armed, Device};
use crate::envelope::{ContextId, Rank};
use crate::error::{Error, Result, UsageError};
use crate::handle::{Message, Request};
use crate::matching::{PostedQueue, UnexpectedQueue};
use crate::protocol::ProtocolTable;
use crate::slab::Slab;
use crate::status::Status;
use crate::wire::Rts;

pub use coll::CollStarted;
pub use complete::{Any, Outcount, StatusAny, Taker};
pub use direct::{Arrival, Direct, DirectRecv};
pub(crate) use outbox::Out;
pub use request::SendMode;
pub(crate) use request::{Cold, ColdBoxes, Op, Req};

/// What a finished operation hands back.
#[derive(Debug)]
pub struct Completion {
    /// The operation's status (its error, if it failed, is in here).
    pub status: Status,
    /// The buffer the operation held: the send buffer, the filled receive
    /// buffer, or the library-allocated ARecv buffer. `None` for persistent
    /// requests (their buffer stays with the request) and buffer-less ones.
    pub buf: Option<Buf>,
    /// For a matched-probe request: the message it took;
    /// [`Message::NULL`] for every other request. (Not an `Option`: that
    /// would make every completion 8 bytes bigger, past what the compiler
    /// copies without a `memcpy` call.)
    pub message: Message,
    /// For a collective: the caller's input buffer, handed back (`buf` is
    /// its output).
    pub input: Option<Buf>,
}

// Moved out of the request table on every completion: see ferry's
// `Completion` for why 128 bytes.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Completion>() <= 128);

impl Completion {
    pub(crate) fn empty() -> Completion {
        Completion {
            status: Status::EMPTY,
            buf: None,
            message: Message::NULL,
            input: None,
        }
    }
}

/// The result of starting an operation.
#[derive(Debug)]
#[must_use = "the request must be completed, and a returned buffer is the caller's again"]
pub struct Started {
    /// The request, or [`Request::EMPTY`] if the operation already completed.
    pub request: Request,
    /// The buffer, when the operation completed inside the call and the
    /// caller has it back at once (EMPTY requests).
    pub buf: Option<Buf>,
}

/// Blocking or not, for [`Engine::device_check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckMode {
    /// Progress once.
    NonBlocking,
    /// Progress; if nothing happened, arm the device.
    Blocking,
}

/// What [`Engine::device_check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Something happened; request states may have changed.
    Progressed,
    /// Nothing happened (non-blocking mode).
    Idle,
    /// Nothing happened and the device is armed: sleep on `wait_fd`.
    WouldBlock,
}

/// The owner of the OS wait: sleeps until an armed device may have events.
pub trait Park {
    /// Sleeps until `wait_fd` is readable, or some other wake-up (another
    /// thread's completion, a cancel) occurs. Spurious returns are fine.
    ///
    /// # Errors
    /// The wait failed, or (in simulation) can never end: a deadlock.
    fn park(&mut self, wait_fd: Option<i32>) -> Result<()>;

    /// Called instead of [`Park::park`] when the engine must poll rather than
    /// sleep (its device pushed back and will not signal freed resources).
    /// A real waiter may yield the CPU here; the simulator lets the other
    /// ranks run. The default does nothing.
    ///
    /// # Errors
    /// As for [`Park::park`].
    fn idle(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A [`Park`] that returns at once: `wait` busy-polls.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpinPark;

impl Park for SpinPark {
    fn park(&mut self, _wait_fd: Option<i32>) -> Result<()> {
        Ok(())
    }
}

/// Counters readable at run time (MPI_T-style performance variables).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Eager messages sent.
    pub eager_sent: u64,
    /// Rendezvous messages sent, by protocol.
    pub rndv_get_sent: u64,
    /// See `rndv_get_sent`.
    pub rndv_put_sent: u64,
    /// See `rndv_get_sent`.
    pub rndv_frag_sent: u64,
    /// Payload bytes sent eagerly.
    pub eager_bytes: u64,
    /// Payload bytes sent by rendezvous.
    pub rndv_bytes: u64,
    /// Sends that completed inside their initiating call (REQUEST_EMPTY).
    pub empty_returns: u64,
    /// Packets received.
    pub packets_in: u64,
    /// Messages that arrived before a matching receive.
    pub unexpected_arrivals: u64,
    /// Blocking receives done without a request
    /// ([`Engine::recv_direct`]).
    pub direct_receives: u64,
    /// Receives currently posted.
    pub posted_depth: u64,
    /// Messages currently in the unexpected queue.
    pub unexpected_depth: u64,
    /// Queue entries examined while matching.
    pub match_attempts: u64,
    /// Times the device pushed back.
    pub backpressure: u64,
    /// Eager-sized sends that went by rendezvous for lack of credits.
    pub credit_stalls: u64,
    /// Ready-mode messages that found no posted receive.
    pub ready_unmatched: u64,
    /// Protocol violations detected from peers.
    pub protocol_errors: u64,
}

/// Per-peer protocol state.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) table: ProtocolTable,
    /// Sequence number for the next matched packet (eager or RTS) we send.
    pub(crate) send_seq: u32,
    /// Sequence number the next matched packet from this peer must carry.
    pub(crate) recv_seq: u32,
    /// Eager credits we may still use towards this peer.
    pub(crate) credits: u32,
    /// Eager messages from this peer we consumed but have not yet credited.
    pub(crate) to_return: u32,
    /// Set once the peer died or violated the protocol.
    pub(crate) failed: Option<Error>,
}

/// An arrived message nobody has matched yet (or one held by `mprobe`).
#[derive(Debug)]
pub(crate) struct Unexpected {
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    Eager { data: Buf, sync: Option<u64> },
    Rts(Rts),
}

impl Unexpected {
    pub(crate) fn len(&self) -> usize {
        match &self.body {
            Body::Eager { data, .. } => data.len(),
            Body::Rts(r) => r.len as usize,
        }
    }
}

/// Everything but the device, so that the device can report into it
/// (`State` is the [`Sink`](crate::device::Sink)).
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) rank: Rank,
    pub(crate) size: u32,
    pub(crate) config: Config,
    pub(crate) peers: Vec<Peer>,
    pub(crate) requests: Slab<Req>,
    pub(crate) posted: PostedQueue<u64>,
    pub(crate) unexpected: UnexpectedQueue<Unexpected>,
    /// Where small unexpected eager messages are kept.
    pub(crate) small: small_pool::SmallPool,
    /// The boxes of requests' cold protocol states.
    pub(crate) cold: ColdBoxes,
    /// Messages taken by `mprobe`, waiting for `mrecv`.
    pub(crate) messages: Slab<(crate::envelope::Envelope, Unexpected)>,
    /// Probe requests waiting for an arrival.
    pub(crate) probes: Vec<u64>,
    pub(crate) outbox: VecDeque<Out>,
    pub(crate) counters: Counters,
    /// Bumped on every event that can change a request's state.
    pub(crate) events: u64,
    /// Rotating start for `testany` / `get_status_any` fairness.
    pub(crate) fair: usize,
    /// Collective schedules, running or (persistent) waiting for `start`.
    pub(crate) colls: Slab<coll::Running>,
    /// Keys of the running ones.
    pub(crate) colls_active: Vec<u64>,
    /// Node collectives without a schedule (`node_coll.rs`), pending or
    /// finished and not yet taken.
    pub(crate) node_runs: Slab<node_coll::NodeRun>,
    /// Keys of the pending ones.
    pub(crate) node_active: Vec<u64>,
    /// Peers failed so far (a running collective rechecks its members
    /// when this moves).
    pub(crate) peer_failures: u64,
    /// The failed peers, in the order their failures were seen: a
    /// collective reports the first of its members to fail, not a survivor
    /// that gave up because of it.
    pub(crate) failure_order: Vec<Rank>,
    /// Members (job ranks) of the communicators whose point-to-point
    /// context is listed; a context not listed spans the whole job. Only
    /// wildcard receives consult it, when a peer has failed.
    pub(crate) context_members: rustc_hash::FxHashMap<ContextId, std::sync::Arc<[Rank]>>,
    /// Where a segmented send's fragment is gathered before the device
    /// takes it: one fragment, made on the first such send and kept.
    pub(crate) gather: Vec<u8>,
    /// The one-sided windows this rank serves as a target (`rma.rs`).
    pub(crate) windows: rma::Windows,
}

/// See the module docs.
#[derive(Debug)]
pub struct Engine<D: Device> {
    device: D,
    st: State,
    armed: bool,
}

impl<D: Device> Engine<D> {
    /// An engine for `rank` of a job of `size` ranks, over `device`.
    ///
    /// The protocol table for every peer is built here, once, from the
    /// device's caps for that peer and `config`.
    ///
    /// # Errors
    /// [`UsageError::InvalidRank`] if `rank` is not in `0..size`.
    pub fn new(rank: Rank, size: u32, device: D, config: Config) -> Result<Engine<D>> {
        crate::envelope::check_dest(rank, size)?;
        let peers = (0..size as Rank)
            .map(|p| Peer {
                table: ProtocolTable::new(device.caps(p), &config),
                send_seq: 0,
                recv_seq: 0,
                credits: config.eager_credits,
                to_return: 0,
                failed: None,
            })
            .collect();
        Ok(Engine {
            device,
            st: State {
                rank,
                size,
                config,
                peers,
                // Room for an OSU window (64) of requests and queued sends
                // from the start, as the matching queues have: a rank that
                // first has that many in flight in the middle of a run (its
                // peer fell behind) allocates nothing then.
                requests: Slab::with_capacity(crate::matching::SHALLOW),
                posted: PostedQueue::new(),
                unexpected: UnexpectedQueue::new(),
                small: small_pool::SmallPool::default(),
                cold: ColdBoxes::new(),
                messages: Slab::default(),
                probes: Vec::new(),
                outbox: VecDeque::with_capacity(crate::matching::SHALLOW),
                counters: Counters::default(),
                events: 0,
                fair: 0,
                colls: Slab::default(),
                colls_active: Vec::new(),
                node_runs: Slab::default(),
                node_active: Vec::new(),
                peer_failures: 0,
                failure_order: Vec::new(),
                context_members: rustc_hash::FxHashMap::default(),
                gather: Vec::new(),
                windows: rma::Windows::default(),
            },
            armed: false,
        })
    }

    /// This engine's rank.
    pub fn rank(&self) -> Rank {
        self.st.rank
    }

    /// The job size.
    pub fn size(&self) -> u32 {
        self.st.size
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.st.config
    }

    /// The protocol table chosen for `peer`.
    ///
    /// # Errors
    /// [`UsageError::InvalidRank`] for a rank outside the job.
    pub fn protocol_table(&self, peer: Rank) -> Result<&ProtocolTable> {
        crate::envelope::check_dest(peer, self.st.size)?;
        Ok(&self.st.peers[peer as usize].table)
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The device, mutably (for device-specific controls).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// True while the device is armed (after [`Check::WouldBlock`], until the
    /// next progress disarms it). A multi-threaded owner uses it to tell
    /// whether a sleeper still has an armed device to wake it.
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// The fd to sleep on after [`Check::WouldBlock`].
    pub fn wait_fd(&self) -> Option<i32> {
        self.device.wait_fd()
    }

    /// Whether the device has a transfer in flight that moves only while
    /// this rank progresses ([`Device::driving`]): a waiter that may choose
    /// polls rather than sleeps while it holds.
    #[inline]
    pub fn device_driving(&self) -> bool {
        self.device.driving()
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        let mut c = self.st.counters;
        let p = self.st.posted.stats();
        let u = self.st.unexpected.stats();
        c.posted_depth = p.depth as u64;
        c.unexpected_depth = u.depth as u64;
        c.match_attempts = p.entries_examined + u.entries_examined;
        c
    }

    /// Why `peer` was cut off (it died, or violated the protocol), if it was.
    pub fn peer_error(&self, peer: Rank) -> Option<Error> {
        usize::try_from(peer)
            .ok()
            .and_then(|p| self.st.peers.get(p))
            .and_then(|p| p.failed)
    }

    /// A monotone count of events that may have changed request states.
    pub fn events(&self) -> u64 {
        self.st.events
    }

    /// Live requests (for leak checks in tests and at finalize).
    pub fn live_requests(&self) -> usize {
        self.st.requests.len()
    }

    /// Opens a batch: until the matching [`Engine::batch_end`], the device
    /// may hold the sends it accepts and post them together (doorbell
    /// batching; see *Batches* in [`crate::device`]). Sends still complete
    /// as usual, and any progress call posts what is held, so waiting
    /// inside a batch cannot deadlock. Batches nest.
    #[inline]
    pub fn batch_begin(&mut self) {
        self.device.batch_begin();
    }

    /// Closes a batch; the outermost one posts what the device held.
    ///
    /// # Errors
    /// A fatal device failure. A post the device refuses fails only its
    /// peer, reported as a peer failure.
    #[inline]
    pub fn batch_end(&mut self) -> Result<()> {
        self.device.batch_end()
    }

    /// Runs the device's progress once and sends what the protocols queued.
    /// Returns how many events happened. Never blocks.
    ///
    /// # Errors
    /// A fatal device failure.
    pub fn progress(&mut self) -> Result<usize> {
        self.progress_with(|device, st| device.progress(st))
    }

    /// [`Engine::progress`] with the device's arrivals going through
    /// `poll` (the direct receive's own sink, or the engine's state).
    #[inline]
    fn progress_with(
        &mut self,
        poll: impl FnOnce(&mut D, &mut State) -> std::result::Result<usize, Error>,
    ) -> Result<usize> {
        if self.armed {
            self.device.disarm();
            self.armed = false;
        }
        let before = self.st.events;
        // The outbox is empty on almost every call: test that inline.
        if !self.st.outbox.is_empty() {
            outbox::flush(&mut self.device, &mut self.st)?;
        }
        poll(&mut self.device, &mut self.st)?;
        if !self.st.outbox.is_empty() {
            outbox::flush(&mut self.device, &mut self.st)?;
        }
        if !self.st.colls_active.is_empty() {
            self.advance_colls()?;
        }
        if !self.st.node_active.is_empty() {
            self.advance_node_colls()?;
        }
        if !self.st.windows.is_empty() {
            self.advance_windows()?;
            if !self.st.outbox.is_empty() {
                outbox::flush(&mut self.device, &mut self.st)?;
            }
        }
        Ok((self.st.events - before) as usize)
    }

    /// `MPID_DeviceCheck`: see the module docs.
    ///
    /// # Errors
    /// A fatal device failure.
    pub fn device_check(&mut self, mode: CheckMode) -> Result<Check> {
        if self.progress()? > 0 {
            return Ok(Check::Progressed);
        }
        // Work a device pushed back must be retried by polling: devices do not
        // signal freed resources (a ring slot, a credit) through the wait fd.
        if mode == CheckMode::NonBlocking || !self.st.outbox.is_empty() {
            return Ok(Check::Idle);
        }
        match self.device.arm()? {
            Armed::Pending => {
                self.device.disarm();
                self.progress()?;
                Ok(Check::Progressed)
            }
            Armed::Sleep => {
                self.armed = true;
                Ok(Check::WouldBlock)
            }
        }
    }

    /// Progress until `done` says stop, parking when the device would block.
    fn block_until<P: Park>(
        &mut self,
        park: &mut P,
        mut done: impl FnMut(&mut Self) -> Result<bool>,
    ) -> Result<()> {
        loop {
            if done(self)? {
                return Ok(());
            }
            match self.device_check(CheckMode::Blocking)? {
                Check::WouldBlock => park.park(self.device.wait_fd())?,
                Check::Idle => park.idle()?,
                Check::Progressed => {}
            }
        }
    }

    fn check_rank_arg(&self, rank: Rank) -> Result<()> {
        crate::envelope::check_dest(rank, self.st.size)
    }
}

/// Marks `req` complete with `status`, for a caller that holds it already
/// (one slab lookup, not two); the caller counts the event. False if it was
/// detached: the caller removes it.
#[inline]
pub(crate) fn settle(cold: &mut ColdBoxes, req: &mut Req, status: Status) -> bool {
    req.status = status;
    cold.set_inline(&mut req.op, Op::Idle);
    match req.life.finish() {
        Some(life) => {
            req.life = life;
            true
        }
        None => false,
    }
}

impl State {
    /// Marks a request complete. Detached requests are freed here.
    pub(crate) fn complete(&mut self, key: u64, status: Status) {
        self.events += 1;
        let Some(req) = self.requests.get_mut(key) else {
            return;
        };
        if !settle(&mut self.cold, req, status) {
            drop(self.requests.remove(key));
        }
    }

    /// Does the communicator of point-to-point context `context` hold job
    /// rank `rank`?
    pub(crate) fn is_member(&self, context: ContextId, rank: Rank) -> bool {
        is_member(&self.context_members, context, rank)
    }

    /// The first failed member of `context`'s communicator, if any.
    pub(crate) fn failed_member(&self, context: ContextId) -> Option<Rank> {
        if self.peer_failures == 0 {
            return None;
        }
        (0..self.size as Rank)
            .find(|&r| self.peers[r as usize].failed.is_some() && self.is_member(context, r))
    }

    /// Is `rank` a rank of this job?
    pub(crate) fn valid_peer(&self, rank: Rank) -> bool {
        rank >= 0 && (rank as u32) < self.size
    }

    /// A rank of the job that has not been cut off.
    pub(crate) fn valid_live_peer(&self, rank: Rank) -> bool {
        self.valid_peer(rank) && self.peers[rank as usize].failed.is_none()
    }

    pub(crate) fn stale() -> Error {
        UsageError::StaleHandle.into()
    }
}

pub(crate) fn is_member(
    members: &rustc_hash::FxHashMap<ContextId, std::sync::Arc<[Rank]>>,
    context: ContextId,
    rank: Rank,
) -> bool {
    members.get(&context).is_none_or(|m| m.contains(&rank))
}

impl<D: Device> Engine<D> {
    /// Declares the members (job ranks) of the communicator whose
    /// point-to-point context is `context`, so that a member's death fails
    /// its receives from `ANY_SOURCE` and no other communicator's. Without
    /// it a context spans the whole job.
    pub fn set_context_members(&mut self, context: ContextId, members: std::sync::Arc<[Rank]>) {
        self.st.context_members.insert(context, members);
    }

    /// Forgets [`Engine::set_context_members`] (the communicator was freed).
    pub fn clear_context_members(&mut self, context: ContextId) {
        self.st.context_members.remove(&context);
    }
}
