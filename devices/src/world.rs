//! [`World`]: one process's handle on the job, and what it shares with every
//! communicator and request (the engine behind its lock, the waiters, the
//! bootstrap, the progress thread).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_core::protocol::ProtocolTable;
use ferry_core::{Buf, Engine, Rank};

use crate::comm::{Comm, FINALIZE_CONTEXT};
use crate::config::{Config, WaitMode};
use crate::counters::Counters;
use crate::error::{ApiError, Result};
use crate::group::Group;
use crate::progress::Progress;
use crate::raw::EngineCell;
use crate::select::boot::Boot;
use crate::select::node::{NodeDevice, SleepKind};
use crate::waiter::{Sleeper, Slot, WaitStats};

/// What the lock protects.
#[derive(Debug)]
pub(crate) struct Locked {
    /// `None` once finalized (or torn down after a fatal device error).
    pub(crate) engine: Option<Engine<NodeDevice>>,
    /// The fatal error that tore the engine down, if that is why it is gone.
    pub(crate) poison: Option<ferry_core::Error>,
    /// The device is armed: no progress since the last `WouldBlock`.
    pub(crate) armed: bool,
    /// Mutable engine accesses so far (wrapping): the progress thread
    /// stops spinning when another thread has been in the library.
    pub(crate) touches: u64,
    /// Application threads inside a wait past its first attempt (counted
    /// only with the progress thread, which relies on them meanwhile).
    pub(crate) waiting: usize,
    /// Waits that did not complete on their first attempt, and their spin
    /// rounds: counted under the lock, where a waiter is anyway, because an
    /// atomic add per blocking call costs more than the rest of its
    /// bookkeeping.
    pub(crate) waits: u64,
    /// See `waits`.
    pub(crate) spins: u64,
    pub(crate) sleepers: Vec<Sleeper>,
    pub(crate) idle_slots: Vec<Arc<Slot>>,
}

/// The engine's lock and what every thread that takes it needs: how
/// sleepers sleep, their statistics, the rank's span.
///
/// It is the part of [`Shared`] the progress thread holds: holding `Shared`
/// itself would keep the world alive, so the last application handle's drop
/// (which stops the thread) would never come.
#[derive(Debug)]
pub(crate) struct Hub {
    pub(crate) locked: EngineCell<Locked>,
    pub(crate) sleep_kind: SleepKind,
    pub(crate) stats: WaitStats,
    pub(crate) span: tracing::Span,
}

/// Shared by a world's handles; see the module docs.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) hub: Arc<Hub>,
    pub(crate) rank: Rank,
    pub(crate) size: u32,
    pub(crate) wait_mode: WaitMode,
    pub(crate) spin: Duration,
    /// Spin rounds between `sched_yield`s (see the waiter).
    pub(crate) yield_every: u32,
    /// Whether a spin round ends with a `pause` (see the waiter): only
    /// when ranks share CPUs.
    pub(crate) pause: bool,
    pub(crate) config: Config,
    pub(crate) device_name: &'static str,
    boot: Mutex<Boot>,
    finalized: AtomicBool,
    /// The job ranks on this node, in order (`split_type(Shared)`).
    pub(crate) node_ranks: Vec<Rank>,
    /// The context ids free on this process.
    pub(crate) contexts: crate::contexts::ContextPool,
    /// The `idup` agreements in flight (`idup.rs`).
    pub(crate) rounds: crate::idup::Rounds,
    /// The progress thread (`FERRY_ASYNC_PROGRESS`), until shutdown.
    progress: Mutex<Option<Progress>>,
}

impl Shared {
    pub(crate) fn new(
        engine: Engine<NodeDevice>,
        config: Config,
        boot: Boot,
        span: tracing::Span,
        node_ranks: Vec<Rank>,
    ) -> Shared {
        let shared_cpus = crate::waiter::oversubscribed(node_ranks.len());
        let yield_every = if shared_cpus {
            crate::waiter::YIELD_EVERY_OVERSUBSCRIBED
        } else {
            crate::waiter::YIELD_EVERY
        };
        let sleep_kind = engine.device().sleep_kind();
        let device_name = engine.device().name();
        // The first sleep of a rank takes a slot made here, and the
        // sleepers' list has room for it and a progress thread: so a wait
        // that first goes to sleep in the middle of a run (a rank that
        // falls behind) allocates nothing then. More come on demand; a
        // slot that cannot be made now (out of descriptors) is left for
        // that first sleep to make, and report.
        let idle_slots = match config.wait_mode {
            WaitMode::Spin => Vec::new(),
            _ => Slot::new(sleep_kind)
                .ok()
                .map(Arc::new)
                .into_iter()
                .collect(),
        };
        Shared {
            rank: engine.rank(),
            size: engine.size(),
            hub: Arc::new(Hub {
                locked: EngineCell::new(
                    config.thread_level,
                    Locked {
                        engine: Some(engine),
                        poison: None,
                        armed: false,
                        touches: 0,
                        waiting: 0,
                        waits: 0,
                        spins: 0,
                        sleepers: Vec::with_capacity(4),
                        idle_slots,
                    },
                ),
                sleep_kind,
                stats: WaitStats::default(),
                span,
            }),
            wait_mode: config.wait_mode,
            spin: config.spin,
            yield_every,
            pause: shared_cpus,
            config,
            device_name,
            boot: Mutex::new(boot),
            finalized: AtomicBool::new(false),
            node_ranks,
            contexts: crate::contexts::ContextPool::default(),
            rounds: crate::idup::Rounds::default(),
            progress: Mutex::new(None),
        }
    }

    /// Starts the progress thread if the configuration asks for it
    /// (`FERRY_ASYNC_PROGRESS`).
    ///
    /// # Errors
    /// The thread or its wake-up objects could not be created.
    pub(crate) fn start_progress(&self) -> Result<()> {
        if self.config.async_progress {
            let progress = Progress::start(Arc::clone(&self.hub), &self.config)?;
            *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = Some(progress);
        }
        Ok(())
    }

    /// Tears the engine down after a fatal device error; see [`Hub::poison`].
    pub(crate) fn poison(&self, error: ferry_core::Error) {
        self.hub.poison(error);
    }

    fn counters(&self) -> Counters {
        let (engine, waits) = match self.lock() {
            Ok(mut g) => {
                let engine = g.engine_ref().map(|e| e.counters()).unwrap_or_default();
                let l = g.locked();
                (engine, (l.waits, l.spins))
            }
            Err(_) => Default::default(),
        };
        Counters::new(engine, waits, &self.hub.stats, self.device_name)
    }

    /// A barrier through the engine, with progress, on the world's reserved
    /// finalize context: every rank sends an empty message to every other
    /// and receives one from each. Sends queue behind the outbox (FIFO), so
    /// a rank's barrier sends complete only once everything it queued
    /// before has left; and every rank progresses until all have arrived,
    /// so pushed-back work (whose resources return only when the peer
    /// consumes) drains on both sides.
    fn drain_barrier(&self) -> Result<()> {
        let size = self.size;
        if size < 2 {
            return Ok(());
        }
        let mut requests = Vec::with_capacity(2 * (size as usize - 1));
        {
            let mut g = self.lock()?;
            let engine = g.engine()?;
            for peer in (0..size as Rank).filter(|&p| p != self.rank) {
                let recv = engine.irecv(peer, 0, FINALIZE_CONTEXT, Buf::new())?;
                requests.push(recv.request);
                let send = engine.isend(peer, 0, FINALIZE_CONTEXT, Buf::new())?;
                requests.push(send.request);
            }
        }
        let mut out = Vec::new();
        let mut cursor = None;
        crate::waiter::block_on(self, |e| {
            Ok(e.testall_resume(&mut requests, &mut out, &mut cursor)?
                .then_some(()))
        })?;
        if let Some(err) = out.iter().find_map(|c| c.status.error) {
            return Err(err.into());
        }
        Ok(())
    }

    /// Finalize's work; also the safe minimum run by `Drop`.
    fn shut_down(&self, orderly: bool) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Err(ApiError::Finalized.into());
        }
        // From here on only the application's threads drive the engine, as
        // without the option; the thread is gone before the engine is.
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(progress) = progress {
            progress.stop();
        }
        if self.config.print_counters {
            // One write, so that ranks sharing a terminal do not interleave.
            let text = format!("ferry rank {}: {}\n", self.rank, self.counters());
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        }
        // Before the launcher's barrier (which makes no progress), finish
        // this rank's part of every transfer: a FIN, CTS or credit that the
        // device pushed back may still sit in the outbox while the peer
        // waits for it.
        let mut result = if orderly {
            self.drain_barrier()
        } else {
            Ok(())
        };
        let mut boot = self.boot.lock().unwrap_or_else(|e| e.into_inner());
        if let Boot::Pmi(Some(pmi)) = &mut *boot {
            if orderly && result.is_ok() {
                // Every rank is done sending to this one before any device
                // goes away (MPI_Finalize is collective).
                result = ferry_core::Bootstrap::barrier(pmi).map_err(Into::into);
            }
        }
        // Refused on a thread the thread level forbids: the engine then goes
        // with `Shared`'s fields (a drop, without this warning).
        let engine = self.lock().ok().and_then(|mut g| {
            let l = g.locked();
            if let Some(e) = &l.engine {
                if e.live_requests() > 0 {
                    tracing::warn!(
                        live = e.live_requests(),
                        "finalize with requests still live: their buffers are dropped"
                    );
                }
            }
            l.engine.take()
        });
        // The device is torn down here, outside the lock.
        drop(engine);
        if let Boot::Pmi(pmi) = &mut *boot {
            if let Some(pmi) = pmi.take() {
                result = result.and(pmi.finalize().map_err(Into::into));
            }
        }
        result
    }
}

impl Hub {
    /// Tears the engine down after a fatal device error, so that no buffer
    /// it holds is used again (see *Safety* in the crate docs). The release
    /// of the lock wakes every sleeper, the progress thread included, to
    /// find it gone.
    pub(crate) fn poison(&self, error: ferry_core::Error) {
        // Reached from a call that held the lock, so never refused.
        let Ok(mut g) = self.lock() else { return };
        let l = g.locked();
        if l.engine.take().is_some() {
            tracing::error!(%error, "fatal device error: engine torn down");
            l.poison = Some(error);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if !self.finalized.load(Ordering::Acquire) {
            // The safe minimum: counters if asked, device teardown, and the
            // PMI finalize message (no barrier: other ranks may be gone).
            let _ = self.shut_down(false);
        }
    }
}

/// One process's handle on the job: cheap to clone (an `Arc`), `Send` and
/// `Sync`. Get communicators from it.
#[derive(Debug, Clone)]
pub struct World {
    pub(crate) shared: Arc<Shared>,
}

impl World {
    pub(crate) fn from_shared(shared: Shared) -> World {
        World {
            shared: Arc::new(shared),
        }
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> Rank {
        self.shared.rank
    }

    /// The number of processes in the job.
    pub fn size(&self) -> u32 {
        self.shared.size
    }

    /// The communicator of every process (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Comm {
        Comm::new(
            Arc::clone(&self.shared),
            Group::world(self.shared.size, self.shared.rank),
            crate::comm::WORLD_CONTEXT,
            None,
            self.default_hints(),
        )
    }

    /// The communicator of this process alone (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> Comm {
        let me = self.shared.rank;
        Comm::new(
            Arc::clone(&self.shared),
            Group::from_job_ranks(vec![me], me).unwrap_or_else(|_| Group::empty()),
            crate::comm::SELF_CONTEXT,
            None,
            self.default_hints(),
        )
    }

    /// The hints `world` and `self` start with: the configuration's
    /// (`FERRY_RECV_MAY_BE_EMPTY`).
    fn default_hints(&self) -> crate::comm::Hints {
        crate::comm::Hints {
            recv_may_be_empty: self.shared.config.engine.recv_may_be_empty,
        }
    }

    /// The name of this node's shared-memory segment (`None` without
    /// shared memory): every file the job makes in `FERRY_SHM_DIR` starts
    /// with it, so a test can check that none is left behind.
    ///
    /// # Errors
    /// [`ApiError::Finalized`].
    pub fn shm_segment(&self) -> Result<Option<String>> {
        let g = self.shared.lock()?;
        Ok(g.engine_ref()?.device().shm_segment().map(str::to_owned))
    }

    /// The thread level in force (`MPI_Query_thread`): what was asked for
    /// in [`Config::thread_level`], which ferry always provides.
    pub fn thread_level(&self) -> crate::ThreadLevel {
        self.shared.hub.locked.level()
    }

    /// True on the thread that called `init` (`MPI_Is_thread_main`): the
    /// only one that may call under `Single` and `Funneled`.
    pub fn is_thread_main(&self) -> bool {
        self.shared.hub.locked.is_owner_thread()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The device carrying this process's traffic (`loopback`, `shm`).
    pub fn device_name(&self) -> &'static str {
        self.shared.device_name
    }

    /// The protocol thresholds chosen for traffic to job rank `peer`.
    ///
    /// # Errors
    /// A rank outside the job, or [`ApiError::Finalized`].
    pub fn protocol_table(&self, peer: Rank) -> Result<ProtocolTable> {
        Ok(*self.shared.lock()?.engine_ref()?.protocol_table(peer)?)
    }

    /// The device that carries traffic to job rank `peer`: `shm` or the
    /// network device's name (`ofi`, `verbs`) in a job that spans nodes,
    /// else [`World::device_name`].
    ///
    /// # Errors
    /// A rank outside the job, or [`ApiError::Finalized`].
    pub fn peer_device(&self, peer: Rank) -> Result<&'static str> {
        let guard = self.shared.lock()?;
        let engine = guard.engine_ref()?;
        // Validates the rank (a typed error, never an out-of-range panic).
        engine.protocol_table(peer)?;
        Ok(engine
            .device()
            .peer_device(peer)
            .ok_or(ferry_core::Error::Internal(
                "a device's routes do not cover the job",
            ))?)
    }

    /// What the device serving job rank `peer` claims it can do (RDMA get and
    /// put, a wait fd, its payload limit). The conformance suite holds each
    /// device to these claims.
    ///
    /// # Errors
    /// A rank outside the job, or [`ApiError::Finalized`].
    pub fn caps(&self, peer: Rank) -> Result<ferry_core::Caps> {
        use ferry_core::Device as _;
        let guard = self.shared.lock()?;
        let engine = guard.engine_ref()?;
        // Validates the rank (a typed error, never an out-of-range panic).
        engine.protocol_table(peer)?;
        Ok(engine.device().caps(peer).clone())
    }

    /// A snapshot of the counters: the engine's, and the waiters'.
    pub fn counters(&self) -> Counters {
        self.shared.counters()
    }

    /// Ends this process's part in the job: a barrier with every other rank
    /// (when launched by PMI), device teardown, PMI finalize. Counters are
    /// printed first if `FERRY_PRINT_COUNTERS=1`. Requests still live are
    /// dropped with their buffers; calls on any handle of this world then
    /// return [`ApiError::Finalized`].
    ///
    /// Dropping the last handle of a world without calling `finalize` does
    /// the same minus the barrier.
    ///
    /// # Errors
    /// [`ApiError::Finalized`] if already finalized; a bootstrap error from
    /// the barrier or PMI finalize (teardown happens regardless).
    pub fn finalize(self) -> Result<()> {
        self.shared.shut_down(true)
    }
}
