//! Criterion benchmarks of the shm device's cell queue between two
//! threads: rank 0 and rank 1 of an in-process shm job
//! ([`ferry_bench::inproc::shm_pair`]), each an engine on its own thread,
//! so one message is a cell taken from the sender's pool, a push on the
//! receiver's MPSC queue, a pop, the copy out and the cell's return.
//! (The queue itself is private to `ferry-shm`; this is the smallest
//! public path through it.)
//!
//! - `shm_queue/stream/8`: rank 0 sends `iters` 8-byte messages back to
//!   back, rank 1 receives them (then a 0-byte "done"): time per message.
//! - `shm_queue/pingpong/8`: rank 0 sends, rank 1 echoes: time per round
//!   trip (two pushes and two pops).

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ferry_bench::inproc::shm_pair;
use ferry_core::{Buf, Config, SpinPark};
use ferry_shm::ShmOptions;

const SIZE: usize = 8;
const DATA: i32 = 1;
const DONE: i32 = 2;

#[derive(Clone, Copy)]
enum Cmd {
    Stream(u64),
    PingPong(u64),
    Stop,
}

fn shm_queue(c: &mut Criterion) {
    let (mut e0, mut e1) = shm_pair(ShmOptions::default(), Config::default());
    let (tx, rx) = mpsc::channel::<Cmd>();
    let peer = thread::spawn(move || {
        let mut rbuf = Some(Buf::zeroed(SIZE).expect("buffer"));
        let mut sbuf = Some(Buf::zeroed(SIZE).expect("buffer"));
        while let Ok(cmd) = rx.recv() {
            let (n, echo) = match cmd {
                Cmd::Stream(n) => (n, false),
                Cmd::PingPong(n) => (n, true),
                Cmd::Stop => break,
            };
            for _ in 0..n {
                let b = rbuf.take().expect("receive buffer");
                rbuf = e1.recv(0, DATA, 0, b, &mut SpinPark).expect("recv").buf;
                if echo {
                    let b = sbuf.take().expect("send buffer");
                    sbuf = e1.send(0, DATA, 0, b, &mut SpinPark).expect("send").buf;
                }
            }
            if !echo {
                e1.send(0, DONE, 0, Buf::new(), &mut SpinPark)
                    .expect("done");
            }
        }
    });
    let mut group = c.benchmark_group("shm_queue");
    let mut sbuf = Some(Buf::from_vec(vec![7u8; SIZE]));
    let mut rbuf = Some(Buf::zeroed(SIZE).expect("buffer"));
    group.bench_function(BenchmarkId::new("stream", SIZE), |b| {
        b.iter_custom(|iters| {
            tx.send(Cmd::Stream(iters)).expect("peer thread");
            let t = Instant::now();
            for _ in 0..iters {
                let buf = sbuf.take().expect("send buffer");
                sbuf = e0.send(1, DATA, 0, buf, &mut SpinPark).expect("send").buf;
            }
            e0.recv(1, DONE, 0, Buf::new(), &mut SpinPark)
                .expect("done");
            t.elapsed()
        })
    });
    group.bench_function(BenchmarkId::new("pingpong", SIZE), |b| {
        b.iter_custom(|iters| {
            tx.send(Cmd::PingPong(iters)).expect("peer thread");
            let t = Instant::now();
            for _ in 0..iters {
                let buf = sbuf.take().expect("send buffer");
                sbuf = e0.send(1, DATA, 0, buf, &mut SpinPark).expect("send").buf;
                let buf = rbuf.take().expect("receive buffer");
                rbuf = e0.recv(1, DATA, 0, buf, &mut SpinPark).expect("recv").buf;
            }
            t.elapsed().max(Duration::from_nanos(1))
        })
    });
    group.finish();
    tx.send(Cmd::Stop).expect("peer thread");
    peer.join().expect("peer thread");
}

criterion_group!(benches, shm_queue);
criterion_main!(benches);
