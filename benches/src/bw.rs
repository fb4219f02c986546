//! `bw`: osu_bw's windowed unidirectional bandwidth. Per iteration rank 0
//! starts `--window` (64) sends, waits for all, and receives a 4-byte ack;
//! rank 1 starts 64 receives, waits for all, and sends the ack.
//!
//! Buffers: osu_bw sends all 64 messages from one buffer and receives all
//! 64 into one buffer. With owned buffers a receive needs its own memory,
//! so rank 1 has 64 receive buffers (made once per size, reused); rank 0's
//! 64 send buffers share one block of memory ([`SharedSend`]), as in OSU.
//! The receive side's footprint is therefore 64 × size where OSU's is 1 ×
//! size, which matters once 64 × size outgrows the caches (from about
//! 64 KiB here).

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use ferry::{Buf, ByteStorage, Request, SendMode, Tag};

use crate::cli::{powers_of_two, Subcommand};
use crate::job::{fe, Bench, Sample, Timed};
use crate::latency::{check_window, fill, LARGE};
use crate::report::median;

const DATA: Tag = 100;
const ACK: Tag = 101;

/// The `bw` subcommand.
pub(crate) const BW: Subcommand = Subcommand {
    name: "bw",
    about: "windowed unidirectional bandwidth in MB/s (window 64 + ack), as osu_bw",
    columns: &["MB/s", "p50_MB/s", "msgs/s"],
    default_sizes: || powers_of_two(1),
    // osu_bw: 100 iterations + 10 warm-up, 20 + 2 above 8 KiB.
    iterations: |size| if size > LARGE { (20, 2) } else { (100, 10) },
    counts_allocations: true,
    job_warmup: true,
    multi_pair: false,
    measure,
};

/// Read-only storage shared by several send buffers: one block of memory
/// behind all the window's sends, as osu_bw uses. A send never writes its
/// buffer, so `bytes_mut` hands out nothing (as ferry's own borrowed send
/// buffers do).
#[derive(Debug)]
pub(crate) struct SharedSend(pub(crate) Arc<Vec<u8>>);

impl ByteStorage for SharedSend {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut []
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// The figures of one unidirectional windowed run, on both ranks.
pub(crate) struct Window {
    /// Wall time of the timed loop, in seconds.
    pub(crate) elapsed: f64,
    /// Each timed iteration's wall time, in seconds.
    pub(crate) times: Vec<f64>,
    /// Heap allocations per timed iteration on this rank.
    pub(crate) allocs: f64,
}

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let w = unidirectional(b, size, iters, warmup)?;
    if b.rank != 0 {
        return Ok(None);
    }
    let window = b.options.window;
    let bytes = (size * window) as f64;
    let mut sample = vec![
        bytes * iters as f64 / w.elapsed / 1e6,
        bytes / median(&w.times) / 1e6,
        (window * iters) as f64 / w.elapsed,
    ];
    if b.allocations.is_some() {
        sample.push(w.allocs);
    }
    Ok(Some(sample))
}

/// osu_bw's loop (also osu_mbw_mr's, for one pair): rank 0 sends a window
/// and waits for an ack, rank 1 receives the window and acks.
pub(crate) fn unidirectional(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Window, String> {
    let (c, peer, window, validate) = (&b.comm, b.peer, b.options.window, b.options.validate);
    let batch = b.options.batch;
    let sender = b.is_sender();
    let mut bufs: Vec<Option<Buf>> = if sender {
        let block = Arc::new(fill(size, b.rank));
        (0..window)
            .map(|_| Some(Buf::from_storage(Box::new(SharedSend(Arc::clone(&block))))))
            .collect()
    } else {
        (0..window)
            .map(|_| Some(Buf::from_vec(vec![0u8; size])))
            .collect()
    };
    let mut reqs: Vec<Request> = (0..window).map(|_| Request::NULL).collect();
    let mut done = Vec::with_capacity(window);
    let mut ack = Some(Buf::from_vec(vec![0u8; 4]));
    let mut times = Vec::with_capacity(iters);
    let mut timed = Timed::new(warmup);
    for i in 0..warmup + iters {
        timed.at(b, i);
        let a = Instant::now();
        let mut post_window = || -> Result<(), String> {
            for (slot, req) in bufs.iter_mut().zip(reqs.iter_mut()) {
                let buf = slot.take().ok_or("buffer lost")?;
                *req = if sender {
                    c.isend_buf(buf, None, peer, DATA, SendMode::Standard)
                        .map_err(fe("isend"))?
                } else {
                    c.irecv_buf(buf, None, peer, DATA).map_err(fe("irecv"))?
                };
            }
            Ok(())
        };
        if batch && sender {
            c.batch(post_window).map_err(fe("batch"))??;
        } else {
            post_window()?;
        }
        ferry::wait_all_into(&mut reqs, &mut done).map_err(fe("wait_all"))?;
        for (slot, d) in bufs.iter_mut().zip(done.drain(..)) {
            d.status.ok().map_err(|e| format!("window: {e}"))?;
            *slot = d.into_buf();
        }
        let a_buf = ack.take().ok_or("ack buffer lost")?;
        let mut r = if sender {
            c.irecv_buf(a_buf, None, peer, ACK)
                .map_err(fe("ack irecv"))?
        } else {
            c.isend_buf(a_buf, None, peer, ACK, SendMode::Standard)
                .map_err(fe("ack isend"))?
        };
        ack = r.wait().map_err(fe("ack wait"))?.into_buf();
        if i >= warmup {
            times.push(a.elapsed().as_secs_f64());
        }
        if validate && !sender {
            check_window(&mut bufs, &fill(size, peer), i)?;
        }
    }
    let (elapsed, allocs) = timed.end(b, iters);
    Ok(Window {
        elapsed,
        times,
        allocs,
    })
}
