//! Measures passive waiting, over shm with 2 ranks:
//!
//! ```text
//! cargo build --release -p ferry --example wait_figures -p ferry-launch --bin ferryrun
//! for m in passive hybrid spin; do
//!   target/release/ferryrun -n 2 target/release/examples/wait_figures $m 1000 [pin]
//! done
//! ```
//!
//! With `pin`, rank r runs on CPU r (so the wake-up crosses CPUs, the usual
//! case on a node with a core per rank); without it the kernel places the
//! ranks, and on a small or busy machine they may share a CPU.
//!
//! 1. **CPU while blocked**: rank 1 blocks in `recv` for 2 s of wall time
//!    (rank 0 sleeps, then sends); the process CPU time it used
//!    (`CLOCK_PROCESS_CPUTIME_ID`) over the wall time.
//! 2. **Wake-up latency**: rank 1 blocks in `recv`; 1 ms later rank 0 reads
//!    `CLOCK_MONOTONIC` and sends it (8 bytes); rank 1 reads the clock when
//!    `recv` returns. Median, p90, p99 and max over N trials.
//!
//! Rank 1 prints one result line; the wait counters show where wake-ups came
//! from (the device fd, never the safety-net timeout).

use std::process::ExitCode;
use std::time::Duration;

use ferry::{Comm, Config, Result, WaitMode};
use rustix::time::{clock_gettime, ClockId};

fn ns(clock: ClockId) -> u64 {
    let t = clock_gettime(clock);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

const READY: i32 = 1;
const GO: i32 = 2;

/// Rank 1's CPU use over a 2-second blocked `recv`.
fn cpu_while_blocked(comm: &Comm) -> Result<Option<(f64, f64)>> {
    let mut word = [0u64; 1];
    if comm.rank() == 0 {
        comm.recv(&mut word, 1, READY)?;
        std::thread::sleep(Duration::from_secs(2));
        comm.send(&[0u64], 1, GO)?;
        return Ok(None);
    }
    comm.send(&[0u64], 0, READY)?;
    let (wall0, cpu0) = (ns(ClockId::Monotonic), ns(ClockId::ProcessCPUTime));
    comm.recv(&mut word, 0, GO)?;
    let (wall, cpu) = (
        ns(ClockId::Monotonic) - wall0,
        ns(ClockId::ProcessCPUTime) - cpu0,
    );
    Ok(Some((wall as f64 / 1e9, 100.0 * cpu as f64 / wall as f64)))
}

/// Wake-up latencies in microseconds, measured by rank 1.
fn wake_latency(comm: &Comm, trials: usize) -> Result<Vec<f64>> {
    let mut lat = Vec::with_capacity(trials);
    let mut word = [0u64; 1];
    for _ in 0..trials {
        if comm.rank() == 0 {
            comm.recv(&mut word, 1, READY)?;
            std::thread::sleep(Duration::from_millis(1));
            comm.send(&[ns(ClockId::Monotonic)], 1, GO)?;
        } else {
            comm.send(&[0u64], 0, READY)?;
            comm.recv(&mut word, 0, GO)?;
            let now = ns(ClockId::Monotonic);
            lat.push(now.saturating_sub(word[0]) as f64 / 1e3);
        }
    }
    Ok(lat)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let mode_name = args.get(1).cloned().unwrap_or_else(|| "passive".into());
    let trials: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(1000);
    let pin = args.get(3).is_some_and(|a| a == "pin");
    let run = || -> Result<()> {
        let mut config = Config::from_env()?;
        config.wait_mode = match mode_name.as_str() {
            "spin" => WaitMode::Spin,
            "hybrid" => WaitMode::Hybrid,
            _ => WaitMode::Passive,
        };
        let world = config.init()?;
        let comm = world.world();
        if pin {
            let mut cpus = rustix::thread::CpuSet::new();
            cpus.set(comm.rank() as usize);
            rustix::thread::sched_setaffinity(None, &cpus)
                .map_err(|_| ferry::Error::Internal("sched_setaffinity failed"))?;
        }
        if comm.size() != 2 {
            return Err(ferry::Error::Internal("wait_figures needs exactly 2 ranks"));
        }
        let cpu = cpu_while_blocked(&comm)?;
        let before = world.counters();
        let mut lat = wake_latency(&comm, trials)?;
        let after = world.counters();
        if let Some((wall, pct)) = cpu {
            lat.sort_by(f64::total_cmp);
            println!(
                "{mode_name:>7}{}: blocked {wall:.2} s, CPU {pct:.2}% | wake-up latency over {} trials: \
                 median {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us | rank 1 sleeps {}, \
                 wake-ups: device fd {}, kick {}, timeout {}",
                if pin { " (pinned)" } else { "" },
                lat.len(),
                percentile(&lat, 0.5),
                percentile(&lat, 0.9),
                percentile(&lat, 0.99),
                percentile(&lat, 1.0),
                after.sleeps - before.sleeps,
                after.wakeups_device - before.wakeups_device,
                after.wakeups_kick - before.wakeups_kick,
                after.wake_timeouts - before.wake_timeouts,
            );
        }
        world.finalize()
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wait_figures: {e}");
            ExitCode::FAILURE
        }
    }
}
