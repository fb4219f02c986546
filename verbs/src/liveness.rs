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
//! Cost: one small packet (and its ACK) per peer per interval per rank;
//! fine for the job sizes this device connects at init (see `qp.rs`).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::ffi::FfiError;

/// How often progress reads the clock (the check costs a vDSO call).
const CHECK_EVERY: u32 = 64;

fn os(what: &'static str) -> FfiError {
    FfiError::Os {
        what,
        code: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
    }
}

/// The keepalive schedule and the wait fd that includes its timer.
#[derive(Debug)]
pub(crate) struct Liveness {
    epoll: OwnedFd,
    timer: OwnedFd,
    /// `None`: keepalives disabled.
    interval: Option<Duration>,
    next: Instant,
    calls: u32,
    /// Read the clock at the next `due` (set after a wake-up).
    force: bool,
    timer_armed: bool,
}

impl Liveness {
    /// An epoll set of `channel_fd` (the completion channel) and a timerfd.
    pub(crate) fn new(channel_fd: i32, interval: Option<Duration>) -> Result<Liveness, FfiError> {
        // SAFETY: plain syscall; the result is checked and owned below.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(os("epoll_create1"));
        }
        // SAFETY: `ep` is a fresh fd that nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(ep) };
        // SAFETY: plain syscall; the result is checked and owned below.
        let t = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if t < 0 {
            return Err(os("timerfd_create"));
        }
        // SAFETY: `t` is a fresh fd that nothing else owns.
        let timer = unsafe { OwnedFd::from_raw_fd(t) };
        for fd in [channel_fd, timer.as_raw_fd()] {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: both fds are open (the channel outlives this set: the
            // device drops the set first); `ev` is a valid event.
            if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
                return Err(os("epoll_ctl"));
            }
        }
        Ok(Liveness {
            epoll,
            timer,
            interval,
            next: Instant::now() + interval.unwrap_or_default(),
            calls: 0,
            force: false,
            timer_armed: false,
        })
    }

    /// The fd a waiter sleeps on.
    pub(crate) fn fd(&self) -> i32 {
        self.epoll.as_raw_fd()
    }

    /// Whether probes are due now (the clock is read every [`CHECK_EVERY`]
    /// calls, and at the first call after a wake-up); schedules the next
    /// round if so.
    #[inline]
    pub(crate) fn due(&mut self) -> bool {
        let Some(interval) = self.interval else {
            return false;
        };
        self.calls = self.calls.wrapping_add(1);
        if !std::mem::take(&mut self.force) && self.calls % CHECK_EVERY != 0 {
            return false;
        }
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        self.next = now + interval;
        true
    }

    /// Before sleeping: `Ok(true)` if probes are due now (progress
    /// instead), else the timer is set to wake the sleeper when they are.
    pub(crate) fn arm(&mut self) -> Result<bool, FfiError> {
        if self.interval.is_none() {
            return Ok(false);
        }
        let now = Instant::now();
        if now >= self.next {
            self.force = true;
            return Ok(true);
        }
        let left = self.next - now;
        self.set(left)?;
        self.timer_armed = true;
        Ok(false)
    }

    /// After waking: stops the timer and drains its expiry count.
    pub(crate) fn disarm(&mut self) {
        if std::mem::take(&mut self.timer_armed) {
            if let Err(e) = self.set(Duration::ZERO) {
                tracing::warn!(error = %e, "could not stop the verbs keepalive timer");
            }
            let mut n = 0u64;
            // SAFETY: reads 8 bytes into `n` from the non-blocking timerfd;
            // EAGAIN (not expired) is fine.
            let _ = unsafe { libc::read(self.timer.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
            // The sleep may have ended because probes are due.
            self.force = true;
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
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(after.subsec_nanos() as i32),
            },
        };
        // SAFETY: a valid timerfd and timer spec; the old value is not asked.
        let rc = unsafe {
            libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut())
        };
        if rc < 0 {
            return Err(os("timerfd_settime"));
        }
        Ok(())
    }
}
