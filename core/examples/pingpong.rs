//! A 2-rank ping-pong through ferry's engine over the in-memory simulated
//! network (zero delay). It measures the engine's own cost per message —
//! matching, protocol state machines, request handling — with no real
//! transport underneath. The shm device (issue 3) brings the real run.
//!
//! `cargo run --release -p ferry-core --example pingpong [iterations]`

use std::time::Instant;

use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{Buf, Config, Request, Result};

fn round_trips(sim: &mut Sim, size: usize, iters: usize) -> Result<f64> {
    let mut ping = Some(Buf::from_vec(vec![7u8; size]));
    let mut pong = Some(Buf::zeroed(size)?);
    let start = Instant::now();
    for _ in 0..iters {
        let recv1 = sim
            .engine(1)
            .irecv(0, 1, 0, pong.take().unwrap_or_default())?;
        let send0 = sim
            .engine(0)
            .isend(1, 1, 0, ping.take().unwrap_or_default())?;
        let got = sim.wait(1, &mut { recv1.request })?;
        let back = got.buf.unwrap_or_default();
        let ping_back = reclaim(sim, 0, send0)?;
        let recv0 = sim.engine(0).irecv(1, 2, 0, ping_back)?;
        let send1 = sim.engine(1).isend(0, 2, 0, back)?;
        ping = sim.wait(0, &mut { recv0.request })?.buf;
        pong = Some(reclaim(sim, 1, send1)?);
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / (2.0 * iters as f64))
}

/// The send buffer back: at once for an EMPTY send, else from its wait.
fn reclaim(sim: &mut Sim, rank: i32, started: ferry_core::Started) -> Result<Buf> {
    if let Some(buf) = started.buf {
        return Ok(buf);
    }
    let mut request: Request = started.request;
    Ok(sim.wait(rank, &mut request)?.buf.unwrap_or_default())
}

fn main() -> Result<()> {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    // The simulated network's own eager preference applies.
    let config = Config::default();
    let eager = NetConfig::DEFAULT_CAPS
        .eager_preferred
        .min(NetConfig::DEFAULT_CAPS.max_payload);
    println!("# ferry engine ping-pong, 2 ranks over the simulated network (no transport)");
    println!("# eager up to {eager} B, rendezvous-get above");
    println!("# {:>9} {:>14} {:>10}", "size", "one-way (us)", "protocol");
    for size in [0usize, 8, 64, 1024, 8192, 65536, 1 << 20] {
        let mut sim = Sim::new(NetConfig::new(2).with_delay(0, 0), config.clone());
        let n = if size >= 65536 { iters / 20 } else { iters }.max(10);
        round_trips(&mut sim, size, n / 10)?;
        let us = round_trips(&mut sim, size, n)?;
        let proto = if size <= eager { "eager" } else { "rndv-get" };
        println!("{size:>11} {us:>14.3} {proto:>10}");
    }
    Ok(())
}
