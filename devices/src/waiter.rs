//! Passive waiting: `MPID_DeviceCheck(BLOCKING)` for many threads at once.
//!
//! The engine is a `&mut self` state machine behind one mutex (the *lock*).
//! Every `wait*` runs `block_on`:
//!
//! 1. Under the lock, try to finish (`test`, `testall`, ...: one progress and
//!    a look).
//! 2. While spinning (mode `spin`: always; `hybrid`: for `FERRY_SPIN_US`,
//!    and on while the device is `driving` a transfer that moves only
//!    while this rank progresses; `passive`: never) drop the lock and go
//!    round again, yielding the CPU every 16th round so that a peer
//!    sharing the core (an oversubscribed job) is not starved by the
//!    spinner it is about to wake.
//! 3. Otherwise, still under the same lock, `device_check(Blocking)`: it
//!    progresses once more and, if nothing happened, arms the device and
//!    reports `WouldBlock`. Then *register as a sleeper* (take a sleep slot:
//!    a private eventfd plus an epoll set holding that eventfd and the
//!    device's `wait_fd`), drop the lock, and sleep in `epoll_wait`.
//! 4. On waking: take the lock, unregister, drain the eventfd, go to 1.
//!
//! # The no-lost-wake-up rule, with several threads
//! Core's `progress()` *disarms* the device, so a thread that is not
//! sleeping can, by merely testing a request, take away the wake-up a
//! sleeper relies on. And a sleeper's request can be completed by another
//! thread's progress, which the device fd never reports. Both are handled by
//! one rule, applied whenever *any* thread releases the lock (`Guard`'s
//! `Drop`, "settle"):
//!
//! > If unkicked sleepers exist, then: if the engine's event count changed
//! > while the lock was held, kick them (write their eventfds); else if the
//! > device may have been disarmed (any mutable engine access counts), re-arm
//! > it with `device_check(Blocking)`, and kick them if that does not report
//! > `WouldBlock`.
//!
//! This keeps an invariant at every release of the lock: *for every
//! registered, unkicked sleeper, the device is armed and no event has
//! happened since that sleeper last looked at its requests.* A sleeper
//! registers only right after its own `device_check` returned `WouldBlock`
//! in the same critical section (so the invariant holds for it; sleepers
//! registered before it are settled first, since its own attempt may have
//! completed their requests). From then on an event can arrive in two ways:
//! - **From outside** (a peer's packet): the device is armed, so by the
//!   device contract its `wait_fd` becomes readable, and stays readable
//!   (level-triggered) until someone progresses the device, which happens
//!   under the lock and is then settled.
//! - **From inside** (another thread's progress completes a request, a
//!   `cancel`, a self-send on the loopback): under the lock, so its release
//!   settles: the event count changed, the sleepers are kicked.
//!
//! Either way the sleeper's epoll set becomes readable, whether it is
//! already in `epoll_wait` or still on its way there (eventfds and
//! level-triggered epoll remember). Each sleeper has its own eventfd, which
//! only it drains, and only under the lock after unregistering (and only if
//! it was kicked: an unkicked sleeper's eventfd is empty): no thread can
//! swallow another's wake-up. A kicked sleeper is not kicked again until
//! it re-registers, so a busy thread does not write eventfds in a loop.
//!
//! Every sleeper has the device fd in its own set, so a device event wakes
//! them all; the first to take the lock progresses and the others, finding
//! their requests still pending, go back to sleep. (One sleeper per device
//! event would need the device to hand out per-thread fds.)
//!
//! # The progress thread
//! With `FERRY_ASYNC_PROGRESS=1` one more thread takes the lock and sleeps
//! under these rules: [`progress`](crate::progress). It has no requests,
//! so a completion does not concern it; what it needs is that an outside
//! event wakes *someone* who will progress it. It registers with a
//! `Role` other than `Waiter`, and the release rule treats it apart:
//!
//! - While application threads are inside `block_on` past their first
//!   attempt (the lock's `waiting` count), they watch the device: each one
//!   progresses every round, or sleeps with the device fd in its set, until
//!   it leaves, which it does under the lock (the count drops). The thread
//!   then relies on them: the device is not re-armed on its behalf, and it
//!   sleeps on its eventfd alone (`Standby`), so that a device event wakes
//!   the waiters only, as without the option. A waiter that registers
//!   while the thread sleeps on the device (`Progress`) kicks it over to
//!   standby.
//! - When no application thread waits, the release rule's second half
//!   applies to it: a `Progress` sleeper needs the device armed (re-arm it,
//!   kick the thread if that reports anything but `WouldBlock`), and a
//!   `Standby` one is kicked, to come and sleep on the device.
//!
//! The application's waiters keep their own rules unchanged and never rely
//! on the thread.
//!
//! Devices without a wait fd: the loopback gets events only from its own
//! rank's calls (which are made under the lock and settled), so sleeping on
//! the eventfd alone is exact. A device that could get outside events but
//! has no fd is never slept on: its waiters poll.
//!
//! Devices that push back (the engine's outbox is not empty) cannot be slept
//! on either (freed resources are not signalled): `device_check` reports
//! `Idle` and the waiter polls, yielding the CPU between rounds.
//!
//! # The safety-net timeout
//! `epoll_wait` uses a timeout of `SAFETY_NET` (1 s). It is not needed for
//! correctness (the rule above is exact); it bounds how long a device that
//! detects dead peers only by polling (rather than through its fd) leaves a
//! waiter unaware. Every wake-up is counted by cause (device fd, kick,
//! timeout), and the tests check that wake-ups come from the fds.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_core::{Check, CheckMode, Engine};
use rustix::event::{epoll, eventfd, EventfdFlags};

use crate::config::{ThreadLevel, WaitMode};
use crate::error::{ApiError, Error, Result};
use crate::raw::cell::CellGuard;
use crate::select::node::{NodeDevice, SleepKind};
use crate::shared::{Hub, Locked, Shared};

/// The longest single sleep; see the module docs.
pub(crate) const SAFETY_NET: Duration = Duration::from_secs(1);

/// Spin rounds between reads of the clock (hybrid mode).
const CLOCK_EVERY: u32 = 32;

/// Spin rounds between two `sched_yield`s when the node has more ranks than
/// this process may use cores: the rank this one waits for may need the
/// core to run at all, so every round yields (as Open MPI's ranks do when
/// oversubscribed). Every 16th round, before: a neighborhood alltoall of
/// 8 B on 4 ranks sharing 2 cores took 17.7 µs, against 9.4 µs now
/// (`docs/perf/neighbor.md`).
pub(crate) const YIELD_EVERY_OVERSUBSCRIBED: u32 = 1;

/// Whether `node_ranks` ranks must share CPUs: more of them than the
/// machine has CPUs online, or, for a rank that may run on several CPUs,
/// than it may run on. A rank pinned to one CPU was placed there by its
/// launcher (`ferryrun --bind-to core`, Hydra's `-bind-to core`), which
/// gives each rank its own core when there are enough: counting its one CPU
/// against the node's ranks would call every pinned job oversubscribed and
/// make its waits yield every few rounds.
pub(crate) fn oversubscribed(node_ranks: usize) -> bool {
    let allowed = std::thread::available_parallelism().map_or(1, usize::from);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpu_list(s.trim()))
        .unwrap_or(allowed);
    node_ranks > online || (allowed > 1 && node_ranks > allowed)
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`).
fn count_cpu_list(list: &str) -> Option<usize> {
    list.split(',').try_fold(0usize, |n, part| {
        let count = match part.split_once('-') {
            Some((a, b)) => {
                b.parse::<usize>()
                    .ok()?
                    .checked_sub(a.parse::<usize>().ok()?)?
                    + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
        Some(n + count)
    })
}

/// Spin rounds between two `sched_yield`s otherwise. A yield costs a system
/// call (a few hundred ns in a VM) that a ping-pong would see as latency,
/// so it is rare; it stays as a backstop for threads that oversubscribe
/// the cores, which no rank count reveals.
pub(crate) const YIELD_EVERY: u32 = 1024;

/// epoll user data: the sleeper's own eventfd.
const KICK: u64 = 0;
/// epoll user data: the device's wait fd.
const DEVICE: u64 = 1;

/// Wait statistics (relaxed atomics: they are only counted).
#[derive(Debug, Default)]
pub(crate) struct WaitStats {
    pub(crate) polls: AtomicU64,
    pub(crate) sleeps: AtomicU64,
    pub(crate) driven: AtomicU64,
    pub(crate) wake_device: AtomicU64,
    pub(crate) wake_kick: AtomicU64,
    pub(crate) wake_timeout: AtomicU64,
    pub(crate) kicks: AtomicU64,
    pub(crate) rearms: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// One sleeper's wake-up object: an eventfd, and an epoll set holding it
/// and the device's wait fd. Slots are reused; there are as many as the most
/// threads that ever slept at once.
#[derive(Debug)]
pub(crate) struct Slot {
    epoll: OwnedFd,
    kick: OwnedFd,
}

/// How a sleep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woke {
    Device,
    Kick,
    Timeout,
}

impl Slot {
    pub(crate) fn new(kind: SleepKind) -> Result<Slot> {
        let epoll =
            epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| Error::os("epoll_create", e))?;
        let kick = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(|e| Error::os("eventfd", e))?;
        epoll::add(
            &epoll,
            &kick,
            epoll::EventData::new_u64(KICK),
            epoll::EventFlags::IN,
        )
        .map_err(|e| Error::os("epoll_ctl(eventfd)", e))?;
        let fds = match kind {
            SleepKind::Fd(fd) => [Some(fd), None],
            SleepKind::TwoFds(a, b) => [Some(a), Some(b)],
            SleepKind::Internal | SleepKind::Poll => [None, None],
        };
        for fd in fds.into_iter().flatten() {
            crate::raw::fd::epoll_add_device_fd(&epoll, fd, DEVICE)
                .map_err(|e| Error::os("epoll_ctl(device wait fd)", e))?;
        }
        Ok(Slot { epoll, kick })
    }

    /// Wakes the slot's sleeper (or makes its next sleep return at once).
    pub(crate) fn kick(&self) {
        // An eventfd write fails only if the counter would overflow, in which
        // case it is readable anyway.
        let _ = rustix::io::write(&self.kick, &1u64.to_ne_bytes());
    }

    fn drain(&self) {
        let mut b = [0u8; 8];
        // EAGAIN (not kicked) is the normal case.
        let _ = rustix::io::read(&self.kick, &mut b);
    }

    /// Sleeps on the eventfd alone (the progress thread's standby).
    pub(crate) fn sleep_on_kick(&self, timeout: Duration) -> Result<Woke> {
        let ts = rustix::time::Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        let mut fds = [rustix::event::PollFd::new(
            &self.kick,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(0) => Ok(Woke::Timeout),
            // A signal counts as a spurious wake-up, as in `sleep`.
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(Woke::Kick),
            Err(e) => Err(Error::os("poll", e)),
        }
    }

    pub(crate) fn sleep(&self, timeout: Duration) -> Result<Woke> {
        let ts = rustix::time::Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // On the stack: a sleep allocates nothing.
        let mut space = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 3];
        let events = match epoll::wait(self.epoll.as_fd(), &mut space, Some(&ts)) {
            Ok((events, _)) => events,
            // A signal: a spurious wake-up, which the caller tolerates.
            Err(rustix::io::Errno::INTR) => return Ok(Woke::Kick),
            Err(e) => return Err(Error::os("epoll_wait", e)),
        };
        Ok(if events.iter().any(|e| e.data.u64() == KICK) {
            Woke::Kick
        } else if events.is_empty() {
            Woke::Timeout
        } else {
            Woke::Device
        })
    }
}

/// Who a sleeper is (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An application thread in `block_on`: it waits for completions.
    Waiter,
    /// The progress thread, asleep on the device fd: it needs the device
    /// armed.
    Progress,
    /// The progress thread, asleep on its eventfd alone while application
    /// threads wait (and watch the device).
    Standby,
}

/// A registered sleeper.
#[derive(Debug)]
pub(crate) struct Sleeper {
    slot: Arc<Slot>,
    kicked: bool,
    role: Role,
}

/// The lock, held. Dropping it settles (see the module docs).
pub(crate) struct Guard<'a> {
    hub: &'a Hub,
    locked: CellGuard<'a, Locked>,
    /// The engine's event count when the lock was taken (or when the holder
    /// last registered as a sleeper).
    events: u64,
    _span: tracing::span::Entered<'a>,
}

impl std::fmt::Debug for Guard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("events", &self.events)
            .finish()
    }
}

impl Shared {
    /// Takes the lock; see [`Hub::lock`].
    ///
    /// # Errors
    /// [`ApiError::ThreadLevel`]: the call breaks the thread level.
    #[inline(always)]
    pub(crate) fn lock(&self) -> Result<Guard<'_>> {
        self.hub.lock()
    }
}

impl Hub {
    /// Takes the lock (under `Multiple`; below it, the thread level's
    /// cheaper guard: see [`EngineCell`](crate::raw::cell::EngineCell)). A
    /// poisoned mutex (a panic under it, which ferry never causes) is taken
    /// anyway: the engine's state is consistent between calls.
    ///
    /// # Errors
    /// [`ApiError::ThreadLevel`]: the call breaks the thread level.
    #[inline(always)]
    pub(crate) fn lock(&self) -> Result<Guard<'_>> {
        let span = self.span.enter();
        let locked = self.locked.lock()?;
        let events = locked.engine.as_ref().map_or(0, Engine::events);
        Ok(Guard {
            hub: self,
            locked,
            events,
            _span: span,
        })
    }
}

impl Guard<'_> {
    /// The engine, for a call that may progress it (which may disarm the
    /// device: recorded, so that the release re-arms it for sleepers).
    ///
    /// # Errors
    /// [`ApiError::Finalized`] after finalize, or the fatal error that tore
    /// the engine down.
    pub(crate) fn engine(&mut self) -> Result<&mut Engine<NodeDevice>> {
        let l = &mut *self.locked;
        l.armed = false;
        l.touches = l.touches.wrapping_add(1);
        match l.engine.as_mut() {
            Some(engine) => Ok(engine),
            None => Err(match l.poison {
                Some(e) => e.into(),
                None => ApiError::Finalized.into(),
            }),
        }
    }

    /// The engine, for a call that does not progress it.
    ///
    /// # Errors
    /// As for [`Guard::engine`].
    pub(crate) fn engine_ref(&self) -> Result<&Engine<NodeDevice>> {
        match self.locked.engine.as_ref() {
            Some(e) => Ok(e),
            None => Err(self.locked.gone_error()),
        }
    }

    pub(crate) fn locked(&mut self) -> &mut Locked {
        &mut self.locked
    }

    /// The release rule; see the module docs. Inline, for the usual case
    /// of nobody asleep; the rest is out of line.
    #[inline]
    fn settle(&mut self) {
        if self.locked.sleepers.iter().all(|s| s.kicked) {
            return;
        }
        self.settle_sleepers();
    }

    #[cold]
    #[inline(never)]
    fn settle_sleepers(&mut self) {
        let stats = &self.hub.stats;
        let l = &mut *self.locked;
        // With the engine gone, everyone must come and see.
        let mut kick_all = true;
        if let Some(engine) = l.engine.as_mut() {
            kick_all = false;
            if engine.events() != self.events {
                let waiters = l.sleepers.iter_mut().filter(|s| s.role == Role::Waiter);
                kick(waiters, stats);
            }
            // The progress thread relies on waiting application threads
            // while there are any; when none is left, it must come and
            // watch the device itself, or have it armed.
            let covered = l.waiting > 0;
            if !covered {
                let standby = l.sleepers.iter_mut().filter(|s| s.role == Role::Standby);
                kick(standby, stats);
            }
            let rely = |s: &Sleeper| {
                !s.kicked && (s.role == Role::Waiter || (s.role == Role::Progress && !covered))
            };
            if !l.armed && l.sleepers.iter().any(rely) {
                match engine.device_check(CheckMode::Blocking) {
                    Ok(Check::WouldBlock) => {
                        l.armed = true;
                        bump(&stats.rearms);
                    }
                    // Something happened, the device pushes back, or it
                    // failed: let the sleepers look for themselves.
                    _ => kick_all = true,
                }
            }
        }
        if kick_all {
            kick(l.sleepers.iter_mut(), stats);
        }
    }

    /// Called right after this thread's `device_check` reported
    /// `WouldBlock`: settles the sleepers already registered (this thread's
    /// attempt may have completed their requests), then registers this one.
    fn register_sleeper(&mut self) -> Result<Arc<Slot>> {
        let slot = match self.locked.idle_slots.pop() {
            Some(s) => s,
            None => Arc::new(Slot::new(self.hub.sleep_kind)?),
        };
        self.register(&slot, Role::Waiter);
        Ok(slot)
    }

    /// Registers `slot`'s owner as a sleeper: to be called right after its
    /// own `device_check` reported `WouldBlock` in this critical section
    /// (the invariant of the module docs then holds for it).
    pub(crate) fn register(&mut self, slot: &Arc<Slot>, role: Role) {
        self.locked.armed = true;
        self.settle();
        if role == Role::Waiter {
            // The device is the waiters' to watch now: a progress thread
            // asleep on it moves to standby.
            let l = &mut *self.locked;
            let progress = l.sleepers.iter_mut().filter(|s| s.role == Role::Progress);
            kick(progress, &self.hub.stats);
        }
        self.locked.sleepers.push(Sleeper {
            slot: Arc::clone(slot),
            kicked: false,
            role,
        });
        // Nothing happened since this thread looked: the release must not
        // kick it.
        if let Some(e) = self.locked.engine.as_ref() {
            self.events = e.events();
        }
    }

    /// Unregisters `slot`'s sleeper (a no-op if it is not registered).
    pub(crate) fn unregister(&mut self, slot: &Arc<Slot>) {
        let l = &mut *self.locked;
        if let Some(i) = l.sleepers.iter().position(|s| Arc::ptr_eq(&s.slot, slot)) {
            // Kicks are written under the lock and flagged, so an unkicked
            // sleeper's eventfd is known to be empty: no syscall to drain it.
            if l.sleepers.swap_remove(i).kicked {
                slot.drain();
            }
        }
    }

    fn unregister_sleeper(&mut self, slot: &Arc<Slot>) {
        self.unregister(slot);
        self.locked.idle_slots.push(Arc::clone(slot));
    }
}

/// Kicks the unkicked among `sleepers`.
fn kick<'a>(sleepers: impl Iterator<Item = &'a mut Sleeper>, stats: &WaitStats) {
    for s in sleepers.filter(|s| !s.kicked) {
        s.slot.kick();
        s.kicked = true;
        bump(&stats.kicks);
    }
}

impl Drop for Guard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.settle();
    }
}

/// Runs `attempt` until it returns `Some`, waiting as configured between
/// attempts. `attempt` may progress the engine; see the module docs.
///
/// # Errors
/// What `attempt` returns, [`ApiError::Finalized`], or a failed wait syscall.
pub(crate) fn block_on<R>(
    shared: &Shared,
    mut attempt: impl FnMut(&mut Engine<NodeDevice>) -> ferry_core::Result<Option<R>>,
) -> Result<R> {
    let mode = shared.wait_mode;
    // The hybrid spin budget's clock starts CLOCK_EVERY rounds into the
    // spin, and is read only every CLOCK_EVERY rounds after: a clock read
    // costs about as much as a progress round, and a ping-pong wait, which
    // spins a few rounds, should not pay one at all.
    let mut start: Option<Instant> = None;
    let mut spin_over = false;
    let mut rounds = 0u32;
    let mut waited = false;
    // Counted here and published once, under the lock (see `Locked::waits`).
    let mut spun = 0u64;
    // Waiters are counted for the progress thread only (see the module
    // docs); `counted` while this one is.
    let count = shared.config.async_progress;
    let mut counted = false;
    // Below `Multiple` no other thread may enter while this one waits, so a
    // spin round keeps the guard instead of leaving and entering again.
    let keep = shared.hub.locked.level() != ThreadLevel::Multiple;
    let mut held = None;
    let mut until_yield = shared.yield_every;
    let result = loop {
        let mut g = match held.take().map_or_else(|| shared.lock(), Ok) {
            Ok(g) => g,
            Err(e) => break Err(e),
        };
        let engine = match g.engine() {
            Ok(e) => e,
            Err(e) => break Err(e),
        };
        match attempt(engine) {
            Ok(Some(r)) => {
                let l = g.locked();
                if counted {
                    // Leaving, in the release that settles it.
                    l.waiting -= 1;
                    counted = false;
                }
                l.waits += u64::from(waited);
                l.spins += spun;
                (waited, spun) = (false, 0);
                break Ok(r);
            }
            Ok(None) => {}
            Err(e) => break Err(e.into()),
        }
        if !waited {
            waited = true;
            if count {
                g.locked().waiting += 1;
                counted = true;
            }
        }
        let spinning = match mode {
            WaitMode::Spin => true,
            WaitMode::Passive => false,
            WaitMode::Hybrid => {
                if !spin_over && rounds != 0 && rounds % CLOCK_EVERY == 0 {
                    let t0 = *start.get_or_insert_with(Instant::now);
                    spin_over = t0.elapsed() >= shared.spin;
                }
                // A transfer that moves only while this rank progresses
                // (`Device::driving`) earns another spin budget: sleeping
                // would stall it, and its wake-ups cost more than the spin.
                if spin_over && g.engine().is_ok_and(|e| e.device_driving()) {
                    spin_over = false;
                    start = Some(Instant::now());
                    bump(&shared.hub.stats.driven);
                }
                !spin_over
            }
        };
        if spinning {
            spun += 1;
            rounds = rounds.wrapping_add(1);
            until_yield -= 1;
            if until_yield == 0 {
                until_yield = shared.yield_every;
                drop(g);
                // Let a process that shares this core (an oversubscribed
                // job: the peer this one waits for) run.
                std::thread::yield_now();
            } else {
                // A round is itself a few hundred instructions of polling;
                // a `pause` on top (65-140 cycles on current x86) only
                // delays the look that sees the arrival: 8 B latency
                // 0.133 -> 0.126 us without it, 9 alternating pinned
                // pairs. Open MPI, MPICH and UCX spin without one too. It
                // stays where ranks share CPUs, to leave the core to the
                // rank this one waits for.
                if shared.pause {
                    std::hint::spin_loop();
                }
                if keep {
                    held = Some(g);
                }
            }
            continue;
        }
        let check = match g
            .engine()
            .and_then(|e| Ok(e.device_check(CheckMode::Blocking)?))
        {
            Ok(c) => c,
            Err(e) => break Err(e),
        };
        match check {
            Check::WouldBlock if shared.hub.sleep_kind != SleepKind::Poll => {}
            Check::Progressed => continue,
            // Pushed-back work, or a device that cannot wake us: poll.
            _ => {
                drop(g);
                bump(&shared.hub.stats.polls);
                std::thread::yield_now();
                continue;
            }
        }
        let slot = match g.register_sleeper() {
            Ok(s) => s,
            Err(e) => break Err(e),
        };
        drop(g);
        bump(&shared.hub.stats.sleeps);
        let woke = slot.sleep(SAFETY_NET);
        // Only the thread level can refuse this, and a sleeper exists only
        // under `Multiple`, which never refuses.
        if let Ok(mut g) = shared.lock() {
            g.unregister_sleeper(&slot);
        }
        match woke {
            Ok(Woke::Device) => bump(&shared.hub.stats.wake_device),
            Ok(Woke::Kick) => bump(&shared.hub.stats.wake_kick),
            Ok(Woke::Timeout) => bump(&shared.hub.stats.wake_timeout),
            Err(e) => break Err(e),
        }
    };
    if counted || waited || spun > 0 {
        // Left by an error: under the lock all the same, since the release
        // settles the progress thread this one may have been the last to
        // cover.
        // (`counted` implies the progress thread, hence `Multiple`.)
        if let Ok(mut g) = shared.lock() {
            let l = g.locked();
            if counted {
                l.waiting -= 1;
            }
            l.waits += u64::from(waited);
            l.spins += spun;
        }
    }
    result
}

impl Locked {
    pub(crate) fn gone_error(&self) -> Error {
        match self.poison {
            Some(e) => e.into(),
            None => ApiError::Finalized.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::count_cpu_list;

    #[test]
    fn cpu_lists_count_as_the_kernel_writes_them() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }
}
