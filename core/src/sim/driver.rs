//! The engine-level harness: N [`Engine`]s over one [`Network`], driven
//! deterministically to idle (after quinn's `Pair`).
//!
//! - [`Sim::run_until_idle`] progresses every live rank and advances time
//!   until nothing is in flight and no engine has anything left to do.
//! - [`Sim::wait`] (and [`Sim::with_park`] for the other blocking calls)
//!   runs a real blocking `wait` on one rank. Its [`SimPark`] plays the OS:
//!   while the rank sleeps, time advances and the other ranks progress.
//!   Parking returns when the rank's armed device is woken. It fails with
//!   [`Error::Internal`] if the sleeper could never wake (a deadlock), or if
//!   the rank has a deliverable event but was not woken (a lost wake-up:
//!   the no-lost-wakeup rule is checked on every park).

use std::cell::RefCell;
use std::rc::Rc;

use super::{NetConfig, Network, SimDevice};
use crate::config::Config;
use crate::engine::{Completion, Engine, Park};
use crate::envelope::Rank;
use crate::error::{Error, Result};
use crate::handle::Request;

/// Steps after which the harness declares a livelock.
const STEP_LIMIT: usize = 1_000_000;

/// N ranks, each an engine on a simulated device; see the module docs.
#[derive(Debug)]
pub struct Sim {
    net: Rc<RefCell<Network>>,
    engines: Vec<Engine<SimDevice>>,
    alive: Vec<bool>,
}

impl Sim {
    /// A job of `net.ranks` ranks, every engine configured with `config`.
    ///
    /// # Panics
    /// Never for a valid `NetConfig` (rank numbers come from it).
    pub fn new(net: NetConfig, config: Config) -> Sim {
        let net = Network::new(net);
        let ranks = net.borrow().ranks();
        let engines = Network::devices(&net)
            .into_iter()
            .enumerate()
            .map(|(r, dev)| {
                Engine::new(r as Rank, ranks as u32, dev, config.clone())
                    .expect("rank is within the job by construction")
            })
            .collect();
        Sim {
            net,
            engines,
            alive: vec![true; ranks],
        }
    }

    /// The shared network (for failure injection, stats, payload ids).
    pub fn net(&self) -> &Rc<RefCell<Network>> {
        &self.net
    }

    /// The engine of `rank`.
    pub fn engine(&mut self, rank: Rank) -> &mut Engine<SimDevice> {
        &mut self.engines[rank as usize]
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.engines.len()
    }

    /// Kills `rank`: its engine stops, and the network reports it dead to
    /// the others.
    pub fn kill(&mut self, rank: Rank) {
        self.alive[rank as usize] = false;
        self.net.borrow_mut().kill(rank);
    }

    /// Progresses every live rank once, then advances time by one tick.
    /// Returns the events the engines reported.
    ///
    /// # Errors
    /// A fatal engine error.
    pub fn step(&mut self) -> Result<usize> {
        let mut events = 0;
        for (e, alive) in self.engines.iter_mut().zip(&self.alive) {
            if *alive {
                events += e.progress()?;
            }
        }
        let mut net = self.net.borrow_mut();
        events += std::mem::take(&mut net.node_events);
        net.advance();
        Ok(events)
    }

    /// Steps until the network is idle and a full round of progress does
    /// nothing. Returns the number of steps.
    ///
    /// # Errors
    /// A fatal engine error, or [`Error::Internal`] after a million steps
    /// (a livelock).
    pub fn run_until_idle(&mut self) -> Result<usize> {
        for steps in 0..STEP_LIMIT {
            let events = self.step()?;
            if events == 0 && self.net.borrow().is_idle() {
                return Ok(steps);
            }
        }
        Err(Error::Internal("simulation did not become idle (livelock)"))
    }

    /// Runs `f` on `rank`'s engine with a [`SimPark`] that drives the other
    /// ranks while this one sleeps.
    pub fn with_park<T>(
        &mut self,
        rank: Rank,
        f: impl FnOnce(&mut Engine<SimDevice>, &mut SimPark<'_>) -> T,
    ) -> T {
        let r = rank as usize;
        let (left, rest) = self.engines.split_at_mut(r);
        let (me, right) = rest.split_first_mut().expect("rank within the job");
        let mut park = SimPark {
            rank,
            net: &self.net,
            left,
            right,
            alive: &self.alive,
            parks: 0,
            idles: 0,
        };
        f(me, &mut park)
    }

    /// A blocking `wait` on `rank`.
    ///
    /// # Errors
    /// As for [`Engine::wait`]; a deadlock or lost wake-up is
    /// [`Error::Internal`].
    pub fn wait(&mut self, rank: Rank, request: &mut Request) -> Result<Completion> {
        self.with_park(rank, |e, park| e.wait(request, park))
    }
}

/// The simulated OS wait of one rank; see the module docs.
#[derive(Debug)]
pub struct SimPark<'a> {
    rank: Rank,
    net: &'a Rc<RefCell<Network>>,
    left: &'a mut [Engine<SimDevice>],
    right: &'a mut [Engine<SimDevice>],
    alive: &'a [bool],
    parks: u64,
    idles: u64,
}

impl SimPark<'_> {
    /// How many times the rank actually slept.
    pub fn parks(&self) -> u64 {
        self.parks
    }

    fn progress_others(&mut self) -> Result<usize> {
        let mut events = 0;
        let me = self.rank as usize;
        for (i, e) in self
            .left
            .iter_mut()
            .chain(self.right.iter_mut())
            .enumerate()
        {
            let rank = if i < me { i } else { i + 1 };
            if self.alive[rank] {
                events += e.progress()?;
            }
        }
        Ok(events)
    }
}

impl Park for SimPark<'_> {
    fn park(&mut self, _wait_fd: Option<i32>) -> Result<()> {
        self.parks += 1;
        for _ in 0..STEP_LIMIT {
            {
                let net = self.net.borrow();
                if net.is_woken(self.rank) {
                    return Ok(());
                }
                if net.has_deliverable(self.rank) {
                    return Err(Error::Internal(
                        "lost wake-up: an event is deliverable to a sleeper that was not woken",
                    ));
                }
            }
            let events = self.progress_others()?;
            let idle = self.net.borrow().is_idle();
            if events == 0 && idle {
                return Err(Error::Internal(
                    "simulation deadlock: a rank sleeps and nothing can wake it",
                ));
            }
            self.net.borrow_mut().advance();
        }
        Err(Error::Internal(
            "simulation did not wake the sleeper (livelock)",
        ))
    }

    /// The rank polls (its device pushed back): let the others run and time
    /// pass, so the peer can drain the full link.
    fn idle(&mut self) -> Result<()> {
        self.idles += 1;
        if self.idles > STEP_LIMIT as u64 {
            return Err(Error::Internal(
                "simulation: a rank polls forever (livelock)",
            ));
        }
        self.progress_others()?;
        self.net.borrow_mut().advance();
        Ok(())
    }
}
