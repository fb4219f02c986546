//! `wait`: what waiting costs, in the wait mode ferry was started with
//! (`--wait-mode` or `FERRY_WAIT_MODE`; the mode is fixed at `init`, so
//! each mode is one run: `for m in spin passive hybrid; do ...; done`).
//!
//! 1. **CPU while blocked**: rank 0 blocks in `recv` for `--block-secs`
//!    (2 s) of wall time until rank 1 sends; the CPU time rank 0's process
//!    used meanwhile (`getrusage`), as a percentage of one core.
//! 2. **Wake-up latency**, over `--iters` trials (default 1000): rank 0
//!    blocks in `recv`; rank 1 sleeps 1 ms (so rank 0 is asleep, in the
//!    passive and hybrid modes), reads `CLOCK_MONOTONIC` and sends it;
//!    rank 0 reads the clock when `recv` returns. Median, p90, p99, max.
//!
//! The row's size is the message size (8 bytes by default). The last
//! columns are rank 0's wait counters over the trials: sleeps, and what
//! ended them (the device fd, a kick from another thread, the safety-net
//! timeout, which should stay 0).

use std::time::{Duration, Instant};

use ferry::Tag;
use nix::sys::resource::{getrusage, UsageWho};

use crate::cli::Subcommand;
use crate::job::{fe, Bench, Sample};
use crate::report::percentile;

const READY: Tag = 200;
const GO: Tag = 201;

/// The `wait` subcommand.
pub(crate) const WAIT: Subcommand = Subcommand {
    name: "wait",
    about: "CPU % of a rank blocked in recv, and wake-up latency (us) after a send",
    columns: &[
        "cpu_pct",
        "wake_p50_us",
        "wake_p90_us",
        "wake_p99_us",
        "wake_max_us",
        "sleeps",
        "woke_fd",
        "woke_kick",
        "woke_timeout",
    ],
    default_sizes: || vec![8],
    iterations: |_| (1000, 10),
    counts_allocations: false,
    job_warmup: false,
    multi_pair: false,
    measure,
};

fn cpu_time() -> Result<Duration, String> {
    let u = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| format!("getrusage: {e}"))?;
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Ok(Duration::from_micros(
        us(u.user_time()) + us(u.system_time()),
    ))
}

fn monotonic_ns() -> u64 {
    // CLOCK_MONOTONIC is system-wide, so both ranks read the same clock.
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Rank 0's CPU share while blocked for the configured time.
fn cpu_while_blocked(b: &Bench, size: usize) -> Result<Option<f64>, String> {
    let (c, peer) = (&b.comm, b.peer);
    let mut buf = vec![0u8; size.max(8)];
    if b.rank == 1 {
        c.recv::<u8>(&mut [], peer, READY).map_err(fe("ready"))?;
        std::thread::sleep(Duration::from_secs_f64(b.options.block_secs));
        c.send(&buf, peer, GO).map_err(fe("go"))?;
        return Ok(None);
    }
    c.send::<u8>(&[], peer, READY).map_err(fe("ready"))?;
    let (t0, cpu0) = (Instant::now(), cpu_time()?);
    c.recv(&mut buf, peer, GO).map_err(fe("blocked recv"))?;
    let (wall, cpu) = (t0.elapsed(), cpu_time()? - cpu0);
    Ok(Some(100.0 * cpu.as_secs_f64() / wall.as_secs_f64()))
}

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let cpu = cpu_while_blocked(b, size)?;
    let (c, peer) = (&b.comm, b.peer);
    let mut buf = vec![0u8; size.max(8)];
    let mut lat = Vec::with_capacity(iters);
    let mut before = b.world.counters();
    for i in 0..warmup + iters {
        if i == warmup {
            before = b.world.counters();
        }
        if b.rank == 1 {
            c.recv::<u8>(&mut [], peer, READY).map_err(fe("ready"))?;
            std::thread::sleep(Duration::from_millis(1));
            buf[..8].copy_from_slice(&monotonic_ns().to_le_bytes());
            c.send(&buf, peer, GO).map_err(fe("go"))?;
        } else {
            c.send::<u8>(&[], peer, READY).map_err(fe("ready"))?;
            c.recv(&mut buf, peer, GO).map_err(fe("wake recv"))?;
            let now = monotonic_ns();
            let sent = u64::from_le_bytes(buf[..8].try_into().map_err(|_| "short message")?);
            if i >= warmup {
                lat.push(now.saturating_sub(sent) as f64 / 1e3);
            }
        }
    }
    let Some(cpu) = cpu else {
        return Ok(None);
    };
    let after = b.world.counters();
    Ok(Some(vec![
        cpu,
        percentile(&lat, 0.5),
        percentile(&lat, 0.9),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0),
        (after.sleeps - before.sleeps) as f64,
        (after.wakeups_device - before.wakeups_device) as f64,
        (after.wakeups_kick - before.wakeups_kick) as f64,
        (after.wake_timeouts - before.wake_timeouts) as f64,
    ]))
}
