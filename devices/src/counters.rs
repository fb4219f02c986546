//! [`Counters`]: the engine's counters plus the waiters', readable at run
//! time ([`World::counters`](crate::World::counters)) and printed at
//! finalize with `FERRY_PRINT_COUNTERS=1`.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;

use crate::waiter::WaitStats;

/// A snapshot of a world's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// The device carrying the traffic.
    pub device: &'static str,
    /// Messages, bytes, queue depths, match attempts, back-pressure (see
    /// [`ferry_core::Counters`]).
    pub engine: ferry_core::Counters,
    /// Calls that had to wait (`wait*` and the blocking operations that
    /// did not complete at once).
    pub waits: u64,
    /// Rounds of the spin phase (one progress each).
    pub spins: u64,
    /// Rounds of polling where sleeping was impossible (the device pushed
    /// back, or cannot wake a sleeper).
    pub polls: u64,
    /// Times a waiter went to sleep in the kernel.
    pub sleeps: u64,
    /// Spin budgets a hybrid waiter renewed instead of sleeping, because
    /// the device had a transfer in flight that moves only while this
    /// rank progresses (`Device::driving`).
    pub driven: u64,
    /// Sleeps ended by the device's wait fd.
    pub wakeups_device: u64,
    /// Sleeps ended by another thread (a completion it made, a cancel).
    pub wakeups_kick: u64,
    /// Sleeps ended by the safety-net timeout (see
    /// [`waiter`](crate::waiter) docs; should stay near zero).
    pub wake_timeouts: u64,
    /// Kicks sent to sleeping threads.
    pub kicks: u64,
    /// Times a releasing thread re-armed the device for sleepers.
    pub rearms: u64,
}

impl Counters {
    /// `waits`: the waits and spin rounds counted under the lock.
    pub(crate) fn new(
        engine: ferry_core::Counters,
        (waits, spins): (u64, u64),
        w: &WaitStats,
        device: &'static str,
    ) -> Self {
        Counters {
            device,
            engine,
            waits,
            spins,
            polls: w.polls.load(Relaxed),
            sleeps: w.sleeps.load(Relaxed),
            driven: w.driven.load(Relaxed),
            wakeups_device: w.wake_device.load(Relaxed),
            wakeups_kick: w.wake_kick.load(Relaxed),
            wake_timeouts: w.wake_timeout.load(Relaxed),
            kicks: w.kicks.load(Relaxed),
            rearms: w.rearms.load(Relaxed),
        }
    }

    /// Every sleep that ended, whatever ended it.
    pub fn wakeups(&self) -> u64 {
        self.wakeups_device + self.wakeups_kick + self.wake_timeouts
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.engine;
        writeln!(f, "device {}", self.device)?;
        writeln!(
            f,
            "  sent: eager {} ({} B), rndv get {} put {} frag {} ({} B), returned EMPTY {}",
            e.eager_sent,
            e.eager_bytes,
            e.rndv_get_sent,
            e.rndv_put_sent,
            e.rndv_frag_sent,
            e.rndv_bytes,
            e.empty_returns
        )?;
        writeln!(
            f,
            "  received: packets {}, unexpected {}, direct {}, match attempts {}, depth posted {} unexpected {}",
            e.packets_in,
            e.unexpected_arrivals,
            e.direct_receives,
            e.match_attempts,
            e.posted_depth,
            e.unexpected_depth
        )?;
        writeln!(
            f,
            "  flow: back-pressure {}, credit stalls {}, ready unmatched {}, protocol errors {}",
            e.backpressure, e.credit_stalls, e.ready_unmatched, e.protocol_errors
        )?;
        write!(
            f,
            "  waiting: waits {}, spins {}, polls {}, sleeps {}, driven {}, wake-ups device {} kick {} timeout {}, kicks {}, re-arms {}",
            self.waits,
            self.spins,
            self.polls,
            self.sleeps,
            self.driven,
            self.wakeups_device,
            self.wakeups_kick,
            self.wake_timeouts,
            self.kicks,
            self.rearms
        )
    }
}
