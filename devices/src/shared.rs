//! What a world's handles share: [`Shared`], held by the [`World`], every
//! communicator and every request, and its part behind the engine's lock,
//! [`Hub`] and [`Locked`], which the progress thread holds too.
//!
//! It sits on the floor below the communicators and the world (see the crate
//! docs' floors) with the waiter and the progress thread, which it owns and
//! which take its lock: the lock's release rule (`waiter.rs`) reads and
//! writes [`Locked`]'s fields. What only finalize does with it (the drain
//! barrier, the teardown) is in `world.rs`, beside [`World::finalize`].
//!
//! [`World`]: crate::World
//! [`World::finalize`]: crate::World::finalize

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_core::{Engine, Rank};

use crate::config::{Config, WaitMode};
use crate::contexts::pool::{ContextPool, Rounds};
use crate::error::Result;
use crate::progress::Progress;
use crate::raw::cell::EngineCell;
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
    pub(crate) boot: Mutex<Boot>,
    pub(crate) finalized: AtomicBool,
    /// The job ranks on this node, in order (`split_type(Shared)`).
    pub(crate) node_ranks: Vec<Rank>,
    /// The context ids free on this process.
    pub(crate) contexts: ContextPool,
    /// The `idup` agreements in flight (`idup.rs`).
    pub(crate) rounds: Rounds,
    /// The progress thread (`FERRY_ASYNC_PROGRESS`), until shutdown.
    pub(crate) progress: Mutex<Option<Progress>>,
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
            contexts: ContextPool::default(),
            rounds: Rounds::default(),
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
