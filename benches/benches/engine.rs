//! Criterion micro-benchmarks of the sans-IO engine: matching, requests and
//! one protocol step, all in memory. CI smoke-runs them with a tiny
//! measurement time (`ci/test.sh`) so they never rot.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ferry_bench::loopback_engine;
use ferry_core::matching::{PostedQueue, UnexpectedQueue};
use ferry_core::{Buf, Config, Envelope, Pattern, SpinPark, Status};

const DEPTHS: [usize; 3] = [1, 1_000, 100_000];

/// Post one exact receive and match one arrival, with `depth` other
/// receives outstanding (distinct tags), with and without wildcards posted.
fn posted_match(c: &mut Criterion) {
    let mut group = c.benchmark_group("posted_match");
    for wildcards in [false, true] {
        for depth in DEPTHS {
            let mut q = PostedQueue::new();
            for tag in 0..depth as i32 {
                q.post(
                    Pattern {
                        context: 0,
                        source: Some(1),
                        tag: Some(tag + 1),
                    },
                    tag as u64,
                );
            }
            if wildcards {
                q.post(
                    Pattern {
                        context: 0,
                        source: None,
                        tag: Some(999_999),
                    },
                    0,
                );
                q.post(
                    Pattern {
                        context: 0,
                        source: Some(2),
                        tag: None,
                    },
                    0,
                );
            }
            let id = BenchmarkId::new(if wildcards { "with_wildcards" } else { "exact" }, depth);
            let hit = Pattern {
                context: 0,
                source: Some(1),
                tag: Some(0),
            };
            let env = Envelope {
                source: 1,
                tag: 0,
                context: 0,
            };
            group.bench_function(id, |b| {
                b.iter(|| {
                    q.post(hit, 7);
                    black_box(q.take_match(black_box(&env)))
                })
            });
        }
    }
    group.finish();
}

/// Insert one unexpected message and match it, with `depth` others queued.
fn unexpected_match(c: &mut Criterion) {
    let mut group = c.benchmark_group("unexpected_match");
    for depth in DEPTHS {
        let mut q = UnexpectedQueue::new();
        for tag in 0..depth as i32 {
            q.push(
                Envelope {
                    source: 1,
                    tag: tag + 1,
                    context: 0,
                },
                (),
            );
        }
        let env = Envelope {
            source: 1,
            tag: 0,
            context: 0,
        };
        let pattern = Pattern {
            context: 0,
            source: Some(1),
            tag: Some(0),
        };
        group.bench_function(BenchmarkId::from_parameter(depth), |b| {
            b.iter(|| {
                q.push(env, ());
                black_box(q.take(black_box(&pattern)))
            })
        });
    }
    group.finish();
}

/// Allocate a request, complete it, test (free) it.
fn request_lifecycle(c: &mut Criterion) {
    let mut engine = loopback_engine(Config::default());
    c.bench_function("request_alloc_complete_free", |b| {
        b.iter(|| {
            let mut r = engine.generic_request();
            engine.complete_generic(&r, Status::EMPTY, None).unwrap();
            black_box(engine.test(&mut r).unwrap())
        })
    });
}

/// One message through the engine and the loopback device: post a receive,
/// send (eager: the send returns EMPTY; rendezvous: RTS, get, FIN), wait.
fn protocol_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("protocol_step");
    for (name, len) in [("eager_8B", 8usize), ("rndv_get_64KiB", 64 * 1024)] {
        let mut engine = loopback_engine(Config::default());
        let mut send_buf = Some(Buf::from_vec(vec![1; len]));
        let mut recv_buf = Some(Buf::zeroed(len).unwrap());
        group.bench_function(name, |b| {
            b.iter(|| {
                let r = engine.irecv(0, 1, 0, recv_buf.take().unwrap()).unwrap();
                let s = engine.isend(0, 1, 0, send_buf.take().unwrap()).unwrap();
                let mut rr = r.request;
                let done = engine.wait(&mut rr, &mut SpinPark).unwrap();
                recv_buf = done.buf;
                send_buf = match s.buf {
                    Some(b) => Some(b),
                    None => engine.wait(&mut { s.request }, &mut SpinPark).unwrap().buf,
                };
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    posted_match,
    unexpected_match,
    request_lifecycle,
    protocol_step
);
criterion_main!(benches);
