//! The rank program of the attack tests (`tests/security.rs`): rank 1
//! sleeps in a blocking receive for `SECS` seconds (passive waiting, no
//! spinning) while rank 0 waits before sending, and reports the CPU time
//! its process used meanwhile (`getrusage`); then every rank meets the
//! others in a barrier and an exchange, and prints
//! `sleeper rank R of N: ok`.
//!
//! Usage: `ferry-tests-sleeper SECS`. A failure is printed to stderr and
//! the rank exits 1.

use std::process::ExitCode;
use std::time::{Duration, Instant};

fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(u) = getrusage(UsageWho::RUSAGE_SELF) else {
        return Duration::ZERO;
    };
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Duration::from_micros(us(u.user_time()) + us(u.system_time()))
}

fn run(secs: f64) -> Result<(), ferry::Error> {
    let mut config = ferry::Config::from_env()?;
    config.wait_mode = ferry::WaitMode::Passive;
    config.spin = Duration::ZERO;
    let world = config.init()?;
    let c = world.world();
    let (rank, size) = (world.rank(), world.size());
    if size >= 2 {
        if rank == 0 {
            std::thread::sleep(Duration::from_secs_f64(secs));
            c.send(&[7u64], 1, 1)?;
        } else if rank == 1 {
            let (t0, cpu0) = (Instant::now(), cpu_time());
            let mut got = [0u64];
            c.recv(&mut got, 0, 1)?;
            let (wall, cpu) = (t0.elapsed(), cpu_time() - cpu0);
            println!(
                "sleeper rank 1: cpu {:.3} ms over {:.3} ms ({:.2} %)",
                cpu.as_secs_f64() * 1e3,
                wall.as_secs_f64() * 1e3,
                100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
            );
        }
    }
    c.barrier()?;
    // Everyone still reaches everyone.
    for peer in 0..size as ferry::Rank {
        if peer != rank {
            c.send(&[rank as u64], peer, 2)?;
        }
    }
    for peer in 0..size as ferry::Rank {
        if peer != rank {
            let mut got = [0u64];
            c.recv(&mut got, peer, 2)?;
            if got[0] != peer as u64 {
                return Err(ferry::Error::Internal("a peer's message was wrong"));
            }
        }
    }
    // A collective end: no rank leaves while another still reads from it.
    world.finalize()?;
    println!("sleeper rank {rank} of {size}: ok");
    Ok(())
}

fn main() -> ExitCode {
    let secs = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    match run(secs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sleeper: {e}");
            ExitCode::FAILURE
        }
    }
}
