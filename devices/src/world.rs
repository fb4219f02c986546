//! [`World`]: one process's handle on the job, and what finalize does with
//! what its handles share ([`Shared`], in `shared.rs`): the drain barrier,
//! the teardown, the counters at exit.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use ferry_core::protocol::ProtocolTable;
use ferry_core::{Buf, Rank};

use crate::comm::{Comm, FINALIZE_CONTEXT};
use crate::config::Config;
use crate::counters::Counters;
use crate::error::{ApiError, Result};
use crate::group::Group;
use crate::select::boot::Boot;
use crate::shared::Shared;

/// Finalize's work on what the handles share: with the world, a floor above
/// [`Shared`]'s own module, because it runs the drain barrier on a
/// communicator's context.
impl Shared {
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

impl Comm {
    /// The world this communicator belongs to.
    pub fn world(&self) -> World {
        World {
            shared: Arc::clone(&self.inner.shared),
        }
    }
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
