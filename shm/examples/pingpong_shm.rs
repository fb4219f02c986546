//! A 2-process ping-pong over the shared-memory device, through the engine:
//! one-way latency at 8 B, 1 KiB, 64 KiB and 1 MiB, and streaming bandwidth
//! at 1 MiB (OSU `osu_bw` style: a window of messages, then an ack).
//!
//! ferry's API owns buffers, so a window of `w` messages uses `w` distinct
//! buffers on each side (OSU reuses one): with `w` = 64 that is 128 MiB of
//! buffers, more than the L3 cache, and the figure is bounded by memory
//! bandwidth. The program also prints a window of 8 and, for reference, a
//! single-thread `memcpy` over the same buffer sizes.
//!
//! ```sh
//! cargo run --release -p ferry-shm --example pingpong_shm            # CMA rendezvous
//! cargo run --release -p ferry-shm --example pingpong_shm -- --no-cma  # copies through cells
//! ```
//! The program starts itself twice (rank 0 and rank 1) with a file-based
//! test bootstrap, and busy-polls (`Engine::test`) as a latency benchmark
//! should.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::FileBootstrap;
use ferry_core::{Bootstrap, Buf, Config, Engine, Rank, Request};
use ferry_shm::{ShmDevice, ShmOptions};

type Eng = Engine<ShmDevice>;

/// Spins on `Engine::test` (never arms the device: no syscalls).
fn spin(engine: &mut Eng, mut req: Request) -> Option<Buf> {
    if req.is_empty() {
        return None;
    }
    loop {
        if let Some(done) = engine.test(&mut req).unwrap() {
            assert!(done.status.error.is_none(), "{:?}", done.status);
            return done.buf;
        }
    }
}

/// One round trip of `len` bytes; buffers are recycled through the engine.
fn round_trip(engine: &mut Eng, me: Rank, sbuf: Buf, rbuf: Buf) -> (Buf, Buf) {
    let peer = 1 - me;
    if me == 0 {
        let r = engine.irecv(peer, 1, 0, rbuf).unwrap();
        let s = engine.isend(peer, 1, 0, sbuf).unwrap();
        let sbuf = spin(engine, s.request).or(s.buf).unwrap();
        let rbuf = spin(engine, r.request).unwrap();
        (sbuf, rbuf)
    } else {
        let r = engine.irecv(peer, 1, 0, rbuf).unwrap();
        let rbuf = spin(engine, r.request).unwrap();
        let s = engine.isend(peer, 1, 0, sbuf).unwrap();
        let sbuf = spin(engine, s.request).or(s.buf).unwrap();
        (sbuf, rbuf)
    }
}

fn latency(engine: &mut Eng, me: Rank, len: usize, iters: u32) -> f64 {
    let (mut s, mut r) = (Buf::from(vec![7u8; len]), Buf::zeroed(len).unwrap());
    for _ in 0..iters / 10 + 10 {
        (s, r) = round_trip(engine, me, s, r);
    }
    let t = Instant::now();
    for _ in 0..iters {
        (s, r) = round_trip(engine, me, s, r);
    }
    assert!(r.iter().all(|&b| b == 7));
    t.elapsed().as_secs_f64() / f64::from(iters) / 2.0
}

fn bandwidth(engine: &mut Eng, me: Rank, len: usize, window: usize, reps: u32) -> f64 {
    let mut bufs: Vec<Buf> = (0..window).map(|_| Buf::from(vec![3u8; len])).collect();
    let mut ack = Buf::zeroed(1).unwrap();
    let mut run = |engine: &mut Eng| {
        if me == 0 {
            let reqs: Vec<_> = bufs
                .drain(..)
                .map(|b| engine.isend(1, 2, 0, b).unwrap())
                .collect();
            for s in reqs {
                bufs.push(spin(engine, s.request).or(s.buf).unwrap());
            }
            let r = engine.irecv(1, 3, 0, std::mem::take(&mut ack)).unwrap();
            ack = spin(engine, r.request).unwrap();
        } else {
            let reqs: Vec<_> = bufs
                .drain(..)
                .map(|b| engine.irecv(0, 2, 0, b).unwrap())
                .collect();
            for r in reqs {
                bufs.push(spin(engine, r.request).unwrap());
            }
            let s = engine.isend(0, 3, 0, std::mem::take(&mut ack)).unwrap();
            ack = spin(engine, s.request).or(s.buf).unwrap();
        }
    };
    run(engine);
    let t = Instant::now();
    for _ in 0..reps {
        run(engine);
    }
    (len * window) as f64 * f64::from(reps) / t.elapsed().as_secs_f64()
}

/// Single-thread copy rate between two sets of `n` buffers of `len` bytes.
fn memcpy_rate(len: usize, n: usize) -> f64 {
    let src: Vec<Vec<u8>> = (0..n).map(|_| vec![1u8; len]).collect();
    let mut dst: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len]).collect();
    let reps = (256 / n).max(4);
    let t = Instant::now();
    for _ in 0..reps {
        for (d, s) in dst.iter_mut().zip(&src) {
            d.copy_from_slice(s);
        }
    }
    std::hint::black_box(&dst);
    (len * n * reps) as f64 / t.elapsed().as_secs_f64()
}

fn rank_main(mut boot: FileBootstrap) {
    let opts = ShmOptions::from_env().unwrap();
    let dev = ShmDevice::new(&mut boot, &[0, 1], opts).unwrap();
    let me = boot.rank();
    let cma = dev.cma_enabled();
    let mut engine = Engine::new(me, 2, dev, Config::default()).unwrap();
    if me == 0 {
        println!(
            "ferry-shm ping-pong, 2 processes, rendezvous by {}",
            if cma {
                "CMA (process_vm_readv)"
            } else {
                "copies through cells"
            }
        );
        println!("{:>10} {:>16}", "size", "latency (us)");
    }
    for (len, iters) in [
        (8usize, 200_000u32),
        (1024, 100_000),
        (65536, 10_000),
        (1 << 20, 1000),
        (4 << 20, 200),
        (16 << 20, 50),
    ] {
        let lat = latency(&mut engine, me, len, iters);
        if me == 0 {
            println!("{len:>10} {:>16.3}", lat * 1e6);
        }
    }
    for (window, reps) in [(8usize, 150u32), (64, 20)] {
        let bw = bandwidth(&mut engine, me, 1 << 20, window, reps);
        if me == 0 {
            println!(
                "bandwidth at 1 MiB, window {window:>2}: {:6.2} GB/s   (memcpy of {window} x 1 MiB: {:.2} GB/s)",
                bw / 1e9,
                memcpy_rate(1 << 20, window) / 1e9
            );
        }
    }
    boot.barrier().unwrap();
}

fn main() {
    if let Some(boot) = FileBootstrap::from_env() {
        return rank_main(boot);
    }
    let cma = !std::env::args().any(|a| a == "--no-cma");
    let results = common::launch(
        &[],
        2,
        "pingpong",
        &[("FERRY_SHM_CMA", if cma { "1" } else { "0" })],
        Duration::from_secs(600),
    );
    print!("{}", results[0].output);
    assert!(results.iter().all(|r| r.status.success()), "a rank failed");
}
