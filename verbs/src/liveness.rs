//! Noticing a dead peer that this rank only *waits* for.
//!
//! RC reports a dead peer only to the side that sends to it (the send
//! exhausts its retries). A rank blocked in a receive from a peer that died
//! would never hear of it. So the device sends a **keepalive probe** to every
//! live peer every `FERRY_VERBS_KEEPALIVE_MS` (default 1000; 0 disables): a
//! zero-length RDMA WRITE, which needs no remote buffer, no key (zero-length
//! writes are exempt from the rkey check) and no receive WQE (so it does not
//! touch the credit accounting). A dead peer fails the probe with
//! `IBV_WC_RETRY_EXC_ERR` and is reported like any other failure. At most
//! one probe per peer is in flight.
//!
//! A sleeping rank must wake to send probes, so the device's wait fd is an
//! epoll set of the completion channel and a timerfd; `arm` sets the timer
//! to the next probe time, `disarm` stops and drains it. Detection takes
//! about `interval + timeout × (retry + 1)` (≈ 3 s with the defaults).
//!
//! Only *connected* peers are probed (connections are lazy, `qp.rs`), so
//! the cost is one small packet (and its ACK) per connected peer per
//! interval per rank. A rank that waits for a peer it has never exchanged
//! a packet with has no connection to it and so no probe: it learns of that
//! peer's death from the peer's observer (`observe.rs`).
//!
//! The same timer wakes a sleeper for handshake retransmissions and
//! deadlines (`arm` takes the earliest).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};

use crate::ffi::FfiError;

/// How often progress reads the clock (the check costs a vDSO call).
const CHECK_EVERY: u32 = 64;

/// How often a rank that never sleeps reads the device's asynchronous
/// events.
const EVENTS_EVERY: Duration = Duration::from_millis(10);

/// How often a rank with handshakes in progress checks their timers.
const HANDSHAKE_EVERY: Duration = Duration::from_millis(2);

/// Epoll tags of the members of the wait set.
const CHANNEL_TAG: u64 = 0;
const TIMER_TAG: u64 = 1;
const EVENTS_TAG: u64 = 2;

fn os(what: &'static str) -> impl Fn(rustix::io::Errno) -> FfiError {
    move |e| FfiError::Os {
        what,
        code: e.raw_os_error(),
    }
}

/// The keepalive schedule and the wait fd that includes its timer.
#[derive(Debug)]
pub(crate) struct Liveness {
    epoll: OwnedFd,
    timer: OwnedFd,
    /// `None`: keepalives disabled.
    interval: Option<Duration>,
    /// When probes are next due.
    probes: Schedule,
    timer_armed: bool,
    /// When the device's asynchronous events are next read.
    events: Schedule,
    /// When handshake timers are next checked.
    handshake: Schedule,
}

/// A check made at most every `period`, the clock being read only every
/// [`CHECK_EVERY`] calls (a vDSO call) or at the first call after a
/// wake-up.
#[derive(Debug)]
struct Schedule {
    next: Instant,
    calls: u32,
    /// Read the clock at the next call (set after a wake-up).
    force: bool,
}

impl Schedule {
    fn new(first: Instant) -> Schedule {
        Schedule {
            next: first,
            calls: 0,
            force: false,
        }
    }

    /// Whether the check is due now; schedules the next one if so.
    #[inline]
    fn due(&mut self, period: Duration) -> bool {
        self.calls = self.calls.wrapping_add(1);
        if !std::mem::take(&mut self.force) && self.calls % CHECK_EVERY != 0 {
            return false;
        }
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        self.next = now + period;
        true
    }
}

impl Liveness {
    /// An epoll set of `channel` (the completion channel's fd), `events`
    /// (the device's asynchronous-event fd, so that a port going down wakes
    /// a sleeper) and a timerfd.
    pub(crate) fn new(
        channel: BorrowedFd<'_>,
        events: BorrowedFd<'_>,
        interval: Option<Duration>,
    ) -> Result<Liveness, FfiError> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(os("epoll_create1"))?;
        let timer = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .map_err(os("timerfd_create"))?;
        // The channel and the context outlive this set: the device drops
        // the set first.
        let members = [
            (channel, CHANNEL_TAG),
            (events, EVENTS_TAG),
            (timer.as_fd(), TIMER_TAG),
        ];
        for (fd, tag) in members {
            epoll::add(
                &epoll,
                fd,
                epoll::EventData::new_u64(tag),
                epoll::EventFlags::IN,
            )
            .map_err(os("epoll_ctl"))?;
        }
        Ok(Liveness {
            epoll,
            timer,
            interval,
            probes: Schedule::new(Instant::now() + interval.unwrap_or_default()),
            timer_armed: false,
            events: Schedule::new(Instant::now()),
            handshake: Schedule::new(Instant::now()),
        })
    }

    /// The fd a waiter sleeps on.
    pub(crate) fn fd(&self) -> i32 {
        self.epoll.as_raw_fd()
    }

    /// The fd a waiter sleeps on, borrowed.
    pub(crate) fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }

    /// Whether probes are due now (the clock is read every [`CHECK_EVERY`]
    /// calls, and at the first call after a wake-up); schedules the next
    /// round if so.
    #[inline]
    pub(crate) fn due(&mut self) -> bool {
        self.interval.is_some_and(|i| self.probes.due(i))
    }

    /// Whether to read the device's asynchronous events now: at most every
    /// [`EVENTS_EVERY`], and at the first call after a wake-up, so that a
    /// spinning rank does not pay a system call per few progress calls.
    #[inline]
    pub(crate) fn events_due(&mut self) -> bool {
        self.events.due(EVENTS_EVERY)
    }

    /// Whether to check the handshake timers now (only asked while
    /// handshakes are in progress).
    #[inline]
    pub(crate) fn handshake_due(&mut self) -> bool {
        self.handshake.due(HANDSHAKE_EVERY)
    }

    /// Before sleeping: `Ok(true)` if probes or a handshake timer (`extra`)
    /// are due now (progress instead), else the timer is set to wake the
    /// sleeper when the first of them is.
    pub(crate) fn arm(&mut self, extra: Option<Instant>) -> Result<bool, FfiError> {
        let probes = self.interval.map(|_| self.probes.next);
        let next = match (probes, extra) {
            (Some(p), Some(e)) => p.min(e),
            (p, e) => match p.or(e) {
                Some(n) => n,
                None => return Ok(false),
            },
        };
        let now = Instant::now();
        if now >= next {
            self.probes.force = true;
            self.handshake.force = true;
            return Ok(true);
        }
        let left = next - now;
        self.set(left)?;
        self.timer_armed = true;
        Ok(false)
    }

    /// After waking: stops the timer and drains its expiry count.
    pub(crate) fn disarm(&mut self) {
        // The sleep may have ended for an asynchronous event: read them at
        // once.
        self.events.force = true;
        self.events.next = Instant::now();
        if std::mem::take(&mut self.timer_armed) {
            if let Err(e) = self.set(Duration::ZERO) {
                tracing::warn!(error = %e, "could not stop the verbs keepalive timer");
            }
            // The expiry count, from the non-blocking timerfd; EAGAIN (not
            // expired) is fine.
            let mut count = [0u8; 8];
            let _ = rustix::io::read(&self.timer, &mut count);
            // The sleep may have ended because probes or a handshake timer
            // are due.
            self.probes.force = true;
            self.handshake.force = true;
        }
    }

    /// One-shot timer after `after` (zero stops it).
    fn set(&self, after: Duration) -> Result<(), FfiError> {
        // A zero `it_value` would disarm the timer: wake in 1 ns instead.
        let after = if after.is_zero() {
            Duration::ZERO
        } else {
            after.max(Duration::from_nanos(1))
        };
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: after.as_secs() as i64,
                tv_nsec: i64::from(after.subsec_nanos()),
            },
        };
        timerfd_settime(&self.timer, TimerfdTimerFlags::empty(), &spec)
            .map_err(os("timerfd_settime"))?;
        Ok(())
    }
}
