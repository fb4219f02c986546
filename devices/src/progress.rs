//! The progress thread (`FERRY_ASYNC_PROGRESS=1`): one thread per world,
//! named `ferry-progress`, that advances transfers and collective schedules
//! while the application computes outside the library.
//!
//! Without it the engine moves only inside calls into ferry, so a rank that
//! computes between `iallreduce` and `wait` overlaps nothing: the schedule's
//! rounds all run in the `wait`. The thread is MPICH's
//! `MPIR_CVAR_ASYNC_PROGRESS` in ferry's waiting scheme:
//!
//! 1. Take the lock and progress (`device_check`), then release it.
//! 2. If this progressed, go round again, polling for `FERRY_SPIN_US` after
//!    the last progress (none in passive mode): the next round of a
//!    collective is often microseconds away. Between rounds it pauses for a
//!    few spin-loop hints, so that an application thread woken by the
//!    release can take the lock; not `sched_yield`, which would hand the
//!    core to the application's computing thread for a whole time slice
//!    (milliseconds), the opposite of overlap.
//! 3. Otherwise `device_check(Blocking)`: on `WouldBlock`, register as a
//!    sleeper in the same critical section, release the lock, and sleep in
//!    `epoll_wait` on the device's wait fd and the thread's own eventfd,
//!    which also carries the stop signal. Never with the lock held. A
//!    wake-up that finds nothing to do (an application thread got there
//!    first), or a round that finds another thread has been in the
//!    library since the last, stops the spinning: that thread progresses
//!    too, and a spinner would only compete with it for the lock and a
//!    core.
//!
//! Each release of the lock wakes, by the waiter's rule, the application
//! threads whose requests the thread's progress may have completed.
//!
//! # No lost wake-up
//! The thread has no requests of its own: what it must not miss is work,
//! not completions. It sleeps under the [waiter](crate::waiter)'s rules,
//! in a role of its own (`waiter::Role`). Its invariant, at every release
//! of the lock while it is registered and unkicked:
//!
//! > Either application threads are waiting (the lock's `waiting` count:
//! > threads inside `block_on` past their first attempt), or the thread
//! > sleeps on the device fd (`Progress`), the device is armed, and the
//! > engine has nothing to do without an outside event.
//!
//! - It holds when the thread registers: right after its own
//!   `device_check(Blocking)` reported `WouldBlock` under the same lock (a
//!   progress call found no event, the outbox is empty, collective
//!   schedules, advanced inside progress, are at a fixed point, and the
//!   device armed), as `Standby` (on its eventfd alone) if threads are
//!   waiting, else as `Progress`.
//! - While threads wait, they watch the device for it: each progresses
//!   every round of its wait, or sleeps with the device fd in its set (its
//!   own rules guarantee that an outside event wakes it), and whatever it
//!   progresses is settled at its release. The last one leaves under the
//!   lock (the count drops), and that release restores the second case: a
//!   `Standby` thread is kicked, to come and sleep on the device; for a
//!   `Progress` one the device is re-armed, as below.
//! - With none waiting, any other thread that touches the engine mutably
//!   clears `armed`, and its release calls `device_check(Blocking)` again.
//!   That call progresses first, so whatever the holder left for progress
//!   (a schedule step its completion enabled, a queued send) shows up as
//!   `Progressed`, and the thread is kicked; on `WouldBlock` the invariant
//!   holds again. With the engine gone (finalize, a fatal error) every
//!   sleeper is kicked.
//! - So, with none waiting, work can appear only from outside, through the
//!   armed device, whose wait fd then becomes readable and stays so until
//!   someone progresses (under the lock, and settled); or as a kick. Both
//!   are level-triggered in the thread's epoll set (eventfds and epoll
//!   remember), so the wake-up is not lost even if the thread is between
//!   its release and `epoll_wait`.
//!
//! Who sleeps on the device fd: the waiting application threads while
//! there are any (a waiter that registers while the thread sleeps on the
//! device kicks it over to standby), the thread otherwise. A waiter is
//! thus woken by the device itself, in one hop, exactly as without the
//! option, rather than by the thread after it won the race for the event;
//! and no waiter ever relies on the thread, which only does earlier what
//! they would do. The price is two wake-ups of the thread per wait that
//! sleeps (to standby when it registers, back when it leaves), against one
//! per device event if both slept on the device.
//!
//! # Stopping
//! [`World::finalize`](crate::World::finalize) and the drop of the world's
//! last handle stop the thread and join it before the engine is torn down:
//! a flag, then a kick of its eventfd, which wakes it whether it sleeps,
//! is on its way to sleep, or is busy (it then sees the flag at the top of
//! its loop). The thread holds only the lock's part of the world
//! (`shared::Hub`), so the world's last handle is the application's. A fatal
//! error that tears the engine down (`poison`) kicks the thread, which
//! finds the engine gone and ends; an error from its own progress call has
//! no caller to go to, so the thread tears the engine down with it, and
//! every later call reports it.
//!
//! # Costs
//! Idle, the thread sleeps in the kernel: its only wake-ups are the
//! device's fd, kicks, and the waiter's one-second safety net (0.01 % of a
//! core measured). While it sleeps on the device and no thread waits, each
//! release of the lock by an application thread that touched the engine
//! re-arms the device: a progress round, and for shm marking the rank
//! asleep, so that a peer's next packet costs it a system call to signal
//! this rank. And the thread's wake-ups need a core: when every core is
//! busy with a spinning rank (2 ranks ping-ponging on 2 cores), each one
//! preempts a rank. There, the median small-message latency is unchanged
//! but the mean roughly triples. The option is for codes that overlap, on
//! nodes with a core to spare; it is off by default. A device that cannot
//! be slept on (no wait fd, or pushed-back work, whose freed resources
//! devices do not signal) is polled with pauses growing from 50 µs to
//! 1 ms. The thread's sleeps are not in the waiters' counters, which
//! describe the application's waits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferry_core::{Check, CheckMode};
use rustix::io::Errno;

use crate::config::{Config, WaitMode};
use crate::error::{Error, Result};
use crate::select::node::SleepKind;
use crate::shared::Hub;
use crate::waiter::{Role, Slot, SAFETY_NET};

/// The thread's name (`ps -L`, `top -H`, debuggers).
pub(crate) const THREAD_NAME: &str = "ferry-progress";

/// Spin-loop hints between two rounds under the lock.
const PAUSE_HINTS: u32 = 64;

/// The first pause when the device must be polled.
const MIN_PAUSE: Duration = Duration::from_micros(50);
/// The longest pause when the device must be polled.
const MAX_PAUSE: Duration = Duration::from_millis(1);

/// A running progress thread; stopping or dropping it joins the thread.
#[derive(Debug)]
pub(crate) struct Progress {
    /// Set to stop the thread.
    stop: Arc<AtomicBool>,
    /// The thread's sleep slot: kicking its eventfd wakes it.
    slot: Arc<Slot>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts the thread for the world whose lock is `hub`.
    ///
    /// # Errors
    /// The thread's epoll set or eventfd could not be created, or the
    /// thread could not be spawned.
    pub(crate) fn start(hub: Arc<Hub>, config: &Config) -> Result<Progress> {
        let slot = Arc::new(Slot::new(hub.sleep_kind)?);
        let stop = Arc::new(AtomicBool::new(false));
        let spin = match config.wait_mode {
            WaitMode::Passive => Duration::ZERO,
            WaitMode::Spin | WaitMode::Hybrid => config.spin,
        };
        let thread = {
            let (slot, stop) = (Arc::clone(&slot), Arc::clone(&stop));
            std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || run(&hub, &slot, &stop, spin))
                .map_err(|e| {
                    let errno = Errno::from_io_error(&e).unwrap_or(Errno::AGAIN);
                    Error::os("spawning the progress thread", errno)
                })?
        };
        tracing::debug!(?spin, "progress thread started");
        Ok(Progress {
            stop,
            slot,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it to end.
    pub(crate) fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        // Release: pairs with the Acquire load at the top of the thread's
        // loop. The kick after it makes a sleeping thread go round that loop
        // again (the eventfd stays readable until it does).
        self.stop.store(true, Ordering::Release);
        self.slot.kick();
        if thread.join().is_err() {
            tracing::error!("the progress thread panicked");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The thread's loop; see the module docs.
fn run(hub: &Hub, slot: &Arc<Slot>, stop: &AtomicBool, spin: Duration) {
    let can_sleep = hub.sleep_kind != SleepKind::Poll;
    // Spin until then: set when this thread's own call progressed. Not
    // after a wake-up that finds the work done by an application thread
    // (which is then active in the library, and would have to share the
    // lock and a core with a spinner).
    let mut spin_until: Option<Instant> = None;
    // The lock's touch count after this thread's last round.
    let mut touched = 0;
    let mut pause = Duration::ZERO;
    // Acquire: pairs with the Release in `Progress::halt`.
    while !stop.load(Ordering::Acquire) {
        // The thread exists only under `Multiple`, which never refuses.
        let Ok(mut g) = hub.lock() else { break };
        // Another thread was in the library since this one's last round: it
        // progresses too, and a spinner would only compete with it.
        if g.locked().touches != touched {
            spin_until = None;
        }
        let spinning = spin_until.is_some_and(|t| Instant::now() < t);
        let Ok(engine) = g.engine() else {
            // Finalized or torn down: nothing is left to progress.
            break;
        };
        let mode = if spinning {
            CheckMode::NonBlocking
        } else {
            CheckMode::Blocking
        };
        match engine.device_check(mode) {
            Ok(Check::Progressed) => {
                spin_until = Some(Instant::now() + spin);
                pause = Duration::ZERO;
            }
            Ok(Check::Idle) if spinning => {}
            Ok(Check::WouldBlock) if can_sleep => {
                // While application threads wait, they watch the device.
                let standby = g.locked().waiting > 0;
                let role = if standby {
                    Role::Standby
                } else {
                    Role::Progress
                };
                g.register(slot, role);
                drop(g);
                let woke = if standby {
                    slot.sleep_on_kick(SAFETY_NET)
                } else {
                    slot.sleep(SAFETY_NET)
                };
                if let Ok(mut g) = hub.lock() {
                    g.unregister(slot);
                }
                if let Err(error) = woke {
                    tracing::error!(%error, "progress thread stopped: its sleep failed");
                    break;
                }
                spin_until = None;
                continue;
            }
            Ok(_) => {
                // Pushed-back work, or a device that cannot wake a sleeper.
                drop(g);
                pause = (pause * 2).clamp(MIN_PAUSE, MAX_PAUSE);
                // On the eventfd alone, so that a readable device fd cannot
                // cut the pause short; the stop kick does.
                if let Err(error) = slot.sleep_on_kick(pause) {
                    tracing::error!(%error, "progress thread stopped: its pause failed");
                    break;
                }
                continue;
            }
            Err(error) => {
                drop(g);
                hub.poison(error);
                break;
            }
        }
        touched = g.locked().touches;
        drop(g);
        // A thread woken by this release gets a moment to take the lock (not
        // `sched_yield`: see the module docs).
        for _ in 0..PAUSE_HINTS {
            std::hint::spin_loop();
        }
    }
    tracing::debug!("progress thread ended");
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::config::Config;

    use super::THREAD_NAME;

    /// Progress threads of this process (the library's other unit tests
    /// start none).
    fn progress_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|dir| {
                dir.flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|c| c.trim_end() == THREAD_NAME)
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// A fatal error that tears the engine down ends the thread by itself;
    /// calls then report the error, and finalize joins the ended thread.
    #[test]
    fn poison_ends_the_thread() {
        let world = Config {
            async_progress: true,
            ..Config::default()
        }
        .init()
        .expect("singleton");
        let start = Instant::now();
        // A new thread names itself only once it runs.
        while progress_threads() == 0 {
            assert!(start.elapsed() < Duration::from_secs(5), "no thread");
            std::thread::sleep(Duration::from_millis(1));
        }
        world
            .shared
            .poison(ferry_core::Error::Internal("injected by a test"));
        while progress_threads() > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the progress thread outlived the engine"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let comm = world.world();
        assert!(comm.isend(vec![1u8], 0, 0).is_err());
        world.finalize().expect("finalize after a teardown");
    }
}
