//! `request`: what an operation's request costs. Rank 1 pre-posts a window
//! of receives and tells rank 0 (a 0-byte READY message); rank 0 then
//! times, per operation:
//!
//! - `empty_ns`: a standard `isend` of an eager message; when it returns
//!   REQUEST_EMPTY (`is_empty()`, completed inside the call) its buffer is
//!   taken back at once with the lock-free `wait` of an EMPTY request, so
//!   this is the whole life of the operation. A send the device could not
//!   take at once (back-pressure) returns a real request, which is waited
//!   for after the timed loop; `empty_pct` says how many were EMPTY.
//! - `real_ns`: the same message sent with `issend` (synchronous: always a
//!   real request), then `test` on the window's requests until all are
//!   complete (the receiver's match acknowledgements arrive meanwhile, so
//!   this includes the round trip, amortized over the window);
//!   `tests/op` is the `test` calls per operation.
//!
//! Window: `--window` (default 64, as OSU's windowed benchmarks).
//! Default sizes are eager ones; the figures only mean what they say when
//! the message is eager.

use std::time::{Duration, Instant};

use ferry::{Buf, Request, SendMode, Tag};

use crate::cli::Subcommand;
use crate::job::{fe, Bench, Sample};
use crate::latency::fill;

const DATA: Tag = 500;
const READY: Tag = 501;

/// The `request` subcommand.
pub(crate) const REQUEST: Subcommand = Subcommand {
    name: "request",
    about: "ns per op (window --window): isend returning REQUEST_EMPTY (empty_ns, empty_pct) vs issend + test until done (real_ns, tests/op)",
    columns: &["empty_ns", "real_ns", "empty_pct", "tests/op"],
    default_sizes: || vec![0, 8, 64, 512, 4096],
    iterations: |_| (1000, 100),
    counts_allocations: true,
    job_warmup: true,
    multi_pair: false,
    measure,
};

/// Both ranks: rank 1 posts `window` receives into `bufs` and sends READY;
/// rank 0 waits for READY. Returns rank 1's receive requests in `reqs`.
fn prepost(
    b: &Bench,
    bufs: &mut [Option<Buf>],
    reqs: &mut [Request],
    ready: &mut Option<Buf>,
) -> Result<(), String> {
    let (c, peer) = (&b.comm, b.peer);
    let r_buf = ready.take().ok_or("ready buffer lost")?;
    let mut r = if b.rank == 1 {
        for (slot, req) in bufs.iter_mut().zip(reqs.iter_mut()) {
            let buf = slot.take().ok_or("receive buffer lost")?;
            *req = c.irecv_buf(buf, None, peer, DATA).map_err(fe("irecv"))?;
        }
        c.isend_buf(r_buf, None, peer, READY, SendMode::Standard)
            .map_err(fe("ready isend"))?
    } else {
        c.irecv_buf(r_buf, None, peer, READY)
            .map_err(fe("ready irecv"))?
    };
    *ready = r.wait().map_err(fe("ready wait"))?.into_buf();
    Ok(())
}

/// Puts the completions of `reqs` back into `bufs` (the non-null ones).
fn reap(
    reqs: &mut [Request],
    bufs: &mut [Option<Buf>],
    done: &mut Vec<ferry::Completion>,
) -> Result<(), String> {
    ferry::wait_all_into(reqs, done).map_err(fe("wait_all"))?;
    for (slot, d) in bufs.iter_mut().zip(done.drain(..)) {
        d.status.ok().map_err(|e| format!("window: {e}"))?;
        if let Some(buf) = d.into_buf() {
            *slot = Some(buf);
        }
    }
    Ok(())
}

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let (c, peer) = (&b.comm, b.peer);
    let window = b.options.window;
    let sender = b.rank == 0;
    let mut bufs: Vec<Option<Buf>> = (0..window)
        .map(|_| {
            Some(Buf::from_vec(if sender {
                fill(size, b.rank)
            } else {
                vec![0u8; size]
            }))
        })
        .collect();
    let mut reqs: Vec<Request> = (0..window).map(|_| Request::NULL).collect();
    let mut done = Vec::with_capacity(window);
    let mut ready = Some(Buf::from_vec(Vec::new()));
    let (mut empty_time, mut real_time) = (Duration::ZERO, Duration::ZERO);
    let (mut empties, mut tests) = (0usize, 0usize);
    let mut allocs0 = 0;
    for i in 0..warmup + iters {
        let timed = i >= warmup;
        if i == warmup {
            allocs0 = b.allocs();
        }
        for synchronous in [false, true] {
            prepost(b, &mut bufs, &mut reqs, &mut ready)?;
            if !sender {
                reap(&mut reqs, &mut bufs, &mut done)?;
                continue;
            }
            let mode = if synchronous {
                SendMode::Synchronous
            } else {
                SendMode::Standard
            };
            let t = Instant::now();
            let mut n_tests = 0;
            for (slot, req) in bufs.iter_mut().zip(reqs.iter_mut()) {
                let buf = slot.take().ok_or("send buffer lost")?;
                let mut r = c
                    .isend_buf(buf, None, peer, DATA, mode)
                    .map_err(fe("isend"))?;
                if r.is_empty() {
                    if timed {
                        empties += 1;
                    }
                    *slot = r.wait().map_err(fe("empty wait"))?.into_buf();
                } else {
                    *req = r;
                }
            }
            if synchronous {
                let mut pending = reqs.iter().filter(|r| !r.is_null()).count();
                while pending > 0 {
                    for (slot, req) in bufs.iter_mut().zip(reqs.iter_mut()) {
                        if req.is_null() {
                            continue;
                        }
                        n_tests += 1;
                        if let Some(d) = req.test().map_err(fe("test"))? {
                            d.status.ok().map_err(|e| format!("issend: {e}"))?;
                            *slot = d.into_buf();
                            pending -= 1;
                        }
                    }
                }
            }
            let dt = t.elapsed();
            if timed {
                if synchronous {
                    real_time += dt;
                    tests += n_tests;
                } else {
                    empty_time += dt;
                }
            }
            // Standard sends the device could not take at once.
            reap(&mut reqs, &mut bufs, &mut done)?;
        }
    }
    let allocs = (b.allocs() - allocs0) as f64 / iters as f64;
    if !sender {
        return Ok(None);
    }
    let ops = (iters * window) as f64;
    let mut sample = vec![
        empty_time.as_secs_f64() * 1e9 / ops,
        real_time.as_secs_f64() * 1e9 / ops,
        empties as f64 * 100.0 / ops,
        tests as f64 / ops,
    ];
    if b.allocations.is_some() {
        sample.push(allocs);
    }
    Ok(Some(sample))
}
