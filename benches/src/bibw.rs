//! `bibw`: osu_bibw's bidirectional bandwidth. Per iteration each rank
//! posts `--window` (64) receives, starts 64 sends, and waits for all 128
//! (one `wait_all_into`); both directions are in flight at once, and the
//! figure is the bytes moved both ways per second.
//!
//! `mbw-mr`: osu_mbw_mr's multi-pair bandwidth and message rate. With `2n`
//! ranks (`ferryrun -n 4 ferry-bench mbw-mr`: 2 pairs; ferry-bench alone
//! starts 2 ranks, 1 pair), rank `i < n` sends to rank `i + n`, each pair
//! running osu_bw's loop (a window of 64 and an ack); as in OSU, the
//! figures are rank 0's pair rate times the number of pairs.
//!
//! Buffers as in `bw`: the sends of a window share one block of memory,
//! each receive has its own buffer; all are made once per size.
//!
//! Known (ferry, not this loop): in `bibw` some of the peer's messages
//! arrive before the matching receive is posted (both ranks send at
//! once), and an unexpected eager message costs an allocation (the shm
//! device boxes the parked cell, or copies the payload), so `allocs/iter`
//! is not 0 here, unlike `bw`/`mbw-mr`/`latency`. (A window of 64
//! rendezvous messages each way once hung in the passive and hybrid wait
//! modes with CMA; after the waiter's fixes, 24 full runs of each mode with
//! `FERRY_SHM_CMA=1` completed.)

use std::sync::Arc;
use std::time::Instant;

use ferry::{Buf, Request, SendMode, Tag};

use crate::bw::{unidirectional, SharedSend};
use crate::cli::{powers_of_two, Subcommand};
use crate::job::{fe, Bench, Sample, Timed};
use crate::latency::{check_window, fill, LARGE};
use crate::report::median;

const DATA: Tag = 300;

/// The `bibw` subcommand.
pub(crate) const BIBW: Subcommand = Subcommand {
    name: "bibw",
    about: "bidirectional bandwidth in MB/s (both ways at once, window 64 each way), as osu_bibw",
    columns: &["MB/s", "p50_MB/s", "msgs/s"],
    default_sizes: || powers_of_two(1),
    // osu_bibw: 100 iterations + 10 warm-up, 20 + 2 above 8 KiB.
    iterations: |size| if size > LARGE { (20, 2) } else { (100, 10) },
    counts_allocations: true,
    job_warmup: true,
    multi_pair: false,
    measure: measure_bibw,
};

/// The `mbw-mr` subcommand.
pub(crate) const MBW_MR: Subcommand = Subcommand {
    name: "mbw-mr",
    about: "multi-pair bandwidth (MB/s) and message rate (messages/s), window 64, as osu_mbw_mr; 2n ranks = n pairs",
    columns: &["MB/s", "msgs/s", "p50_msgs/s"],
    default_sizes: || powers_of_two(1),
    // osu_mbw_mr: 100 iterations + 10 warm-up, 20 + 2 above 8 KiB.
    iterations: |size| if size > LARGE { (20, 2) } else { (100, 10) },
    counts_allocations: true,
    job_warmup: true,
    multi_pair: true,
    measure: measure_mbw_mr,
};

fn measure_mbw_mr(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let w = unidirectional(b, size, iters, warmup)?;
    if b.rank != 0 {
        return Ok(None);
    }
    let window = b.options.window as f64;
    let pairs = b.pairs as f64;
    let mut sample = vec![
        pairs * size as f64 * window * iters as f64 / w.elapsed / 1e6,
        pairs * window * iters as f64 / w.elapsed,
        pairs * window / median(&w.times),
    ];
    if b.allocations.is_some() {
        sample.push(w.allocs);
    }
    Ok(Some(sample))
}

fn measure_bibw(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let (c, peer, window, validate) = (&b.comm, b.peer, b.options.window, b.options.validate);
    let block = Arc::new(fill(size, b.rank));
    let mut sends: Vec<Option<Buf>> = (0..window)
        .map(|_| Some(Buf::from_storage(Box::new(SharedSend(Arc::clone(&block))))))
        .collect();
    let mut recvs: Vec<Option<Buf>> = (0..window)
        .map(|_| Some(Buf::from_vec(vec![0u8; size])))
        .collect();
    let want = if validate {
        fill(size, peer)
    } else {
        Vec::new()
    };
    // Receives first (0..window), then sends (window..2·window).
    let mut reqs: Vec<Request> = (0..2 * window).map(|_| Request::NULL).collect();
    let mut done = Vec::with_capacity(2 * window);
    let mut times = Vec::with_capacity(iters);
    let mut timed = Timed::new(warmup);
    for i in 0..warmup + iters {
        timed.at(b, i);
        let a = Instant::now();
        let (rreqs, sreqs) = reqs.split_at_mut(window);
        for (slot, req) in recvs.iter_mut().zip(rreqs.iter_mut()) {
            let buf = slot.take().ok_or("receive buffer lost")?;
            *req = c.irecv_buf(buf, None, peer, DATA).map_err(fe("irecv"))?;
        }
        for (slot, req) in sends.iter_mut().zip(sreqs.iter_mut()) {
            let buf = slot.take().ok_or("send buffer lost")?;
            *req = c
                .isend_buf(buf, None, peer, DATA, SendMode::Standard)
                .map_err(fe("isend"))?;
        }
        ferry::wait_all_into(&mut reqs, &mut done).map_err(fe("wait_all"))?;
        for (slot, d) in recvs.iter_mut().chain(sends.iter_mut()).zip(done.drain(..)) {
            d.status.ok().map_err(|e| format!("window: {e}"))?;
            *slot = d.into_buf();
        }
        if i >= warmup {
            times.push(a.elapsed().as_secs_f64());
        }
        if validate {
            check_window(&mut recvs, &want, i)?;
        }
    }
    let (elapsed, allocs) = timed.end(b, iters);
    if b.rank != 0 {
        return Ok(None);
    }
    // Both directions: 2 · window messages per iteration.
    let bytes = (2 * size * window) as f64;
    let mut sample = vec![
        bytes * iters as f64 / elapsed / 1e6,
        bytes / median(&times) / 1e6,
        (2 * window * iters) as f64 / elapsed,
    ];
    if b.allocations.is_some() {
        sample.push(allocs);
    }
    Ok(Some(sample))
}
