//! `latency`: osu_latency's ping-pong. Rank 0 sends and then receives,
//! rank 1 receives and then sends back; one-way latency is half the round
//! trip. Reported: OSU's figure (the timed loop's total / 2·iters, with
//! two clock reads in all, as osu_latency), and the median and minimum of
//! the per-round-trip times / 2 from a second loop timed round trip by
//! round trip, which a noisy machine disturbs less.
//!
//! The loop uses the blocking slice API (`Comm::send`, `Comm::recv`), as
//! osu_latency uses `MPI_Send` and `MPI_Recv`, on buffers made once per
//! size: a small send completes inside the call without a request, and a
//! receive with nothing else posted takes the message straight into the
//! slice without one (`Engine::recv_direct`). `arecv` measures the
//! owned-buffer (`Buf`) API's ping-pong beside ARecv.

use std::time::Instant;

use ferry::{Buf, Comm, Rank, Tag};

use crate::cli::{powers_of_two, Subcommand};
use crate::job::{fe, Bench, Sample, Timed};
use crate::report::{median, ALLOCS};

const TAG: Tag = 1;

/// OSU's `LARGE_MESSAGE_SIZE`: sizes above it get the large counts.
pub(crate) const LARGE: usize = 8192;

/// osu_latency's (iterations, warm-up): 10000 + 100, and 1000 + 10 above
/// [`LARGE`]. Every ping-pong subcommand uses them.
pub(crate) fn osu_latency_iterations(size: usize) -> (usize, usize) {
    if size > LARGE {
        (1000, 10)
    } else {
        (10_000, 100)
    }
}

/// Checks every receive buffer of a window against `want`, then poisons it
/// so that the next iteration must overwrite it (bw and bibw).
///
/// # Errors
/// The first message of the window with wrong bytes.
pub(crate) fn check_window(bufs: &mut [Option<Buf>], want: &[u8], i: usize) -> Result<(), String> {
    for (w, slot) in bufs.iter_mut().enumerate() {
        let got = slot.as_mut().ok_or("buffer lost")?.as_mut_slice();
        if got != want {
            return Err(format!(
                "iteration {i}, message {w} of the window: wrong bytes"
            ));
        }
        got.fill(0xEE);
    }
    Ok(())
}

/// The `latency` subcommand.
pub(crate) const LATENCY: Subcommand = Subcommand {
    name: "latency",
    about: "ping-pong one-way latency in us (round trip / 2), as osu_latency",
    columns: &["avg_us", "p50_us", "min_us"],
    default_sizes: || powers_of_two(0),
    iterations: osu_latency_iterations,
    counts_allocations: true,
    job_warmup: true,
    multi_pair: false,
    measure,
};

/// The bytes rank `rank` sends: every byte depends on its offset and the
/// rank; the first 8 carry the iteration number under `--validate`.
pub(crate) fn fill(len: usize, rank: Rank) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(7) ^ (i >> 8) ^ (rank as usize * 0x5b)) as u8)
        .collect()
}

/// Room for `len` bytes starting on a page boundary (see [`page_slice`]).
pub(crate) fn page_aligned(len: usize) -> Vec<u8> {
    vec![0u8; len + PAGE]
}

/// The `len` bytes of `store` (from [`page_aligned`]) that start on a page
/// boundary.
pub(crate) fn page_slice(store: &mut [u8], len: usize) -> &mut [u8] {
    let off = store.as_ptr().align_offset(PAGE).min(PAGE);
    &mut store[off..off + len]
}

const PAGE: usize = 4096;

/// Writes the iteration stamp (validation only).
pub(crate) fn stamp(b: &mut [u8], i: usize) {
    let n = b.len().min(8);
    b[..n].copy_from_slice(&(i as u64).to_le_bytes()[..n]);
}

/// Checks a received buffer against the peer's bytes with stamp `i`, then
/// poisons it so the next iteration cannot pass on stale data.
///
/// # Errors
/// The first wrong byte.
pub(crate) fn check(got: &mut [u8], len: usize, peer: Rank, i: usize) -> Result<(), String> {
    let mut want = fill(len, peer);
    let n = len.min(8);
    want[..n].copy_from_slice(&(i as u64).to_le_bytes()[..n]);
    if got.len() != len {
        return Err(format!(
            "iteration {i}: {} bytes received, {len} sent",
            got.len()
        ));
    }
    if let Some(k) = got.iter().zip(&want).position(|(a, b)| a != b) {
        return Err(format!("iteration {i}: byte {k} of {len} is wrong"));
    }
    got.fill(0xEE);
    Ok(())
}

/// `MPI_Recv`: the whole buffer must be filled.
#[inline]
fn recv(c: &Comm, buf: &mut [u8], peer: Rank) -> Result<(), String> {
    let status = c.recv(buf, peer, TAG).map_err(fe("recv"))?;
    if status.bytes != buf.len() {
        return Err(format!(
            "{} bytes received, {} sent",
            status.bytes,
            buf.len()
        ));
    }
    Ok(())
}

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let (c, peer, validate) = (&b.comm, b.peer, b.options.validate);
    // Page-aligned buffers, as OSU's (and `benches/compare`'s) `posix_memalign`
    // ones: where a buffer starts within its page changes the copies' cost,
    // and would otherwise depend on what the heap held before.
    let (mut sstore, mut rstore) = (page_aligned(size), page_aligned(size));
    let sbuf = page_slice(&mut sstore, size);
    sbuf.copy_from_slice(&fill(size, b.rank));
    let rbuf = page_slice(&mut rstore, size);
    let mut times = Vec::with_capacity(iters);
    let mut round = |i: usize| -> Result<(), String> {
        if validate {
            stamp(sbuf, i);
        }
        if b.rank == 0 {
            c.send(sbuf, peer, TAG).map_err(fe("send"))?;
            recv(c, rbuf, peer)?;
        } else {
            recv(c, rbuf, peer)?;
            c.send(sbuf, peer, TAG).map_err(fe("send"))?;
        }
        if validate {
            check(rbuf, size, peer, i)?;
        }
        Ok(())
    };
    // OSU's figure from OSU's loop: two clock reads in all. (Reading the
    // clock around every round trip would add its own cost, about 25 ns,
    // to every one-way figure.)
    let mut timed = Timed::new(warmup);
    for i in 0..warmup + iters {
        timed.at(b, i);
        round(i)?;
    }
    let (elapsed, allocs) = timed.end(b, iters);
    // Then the same number of round trips timed one by one, for the median
    // and minimum.
    for i in warmup + iters..warmup + 2 * iters {
        let a = Instant::now();
        round(i)?;
        times.push(a.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    if b.rank != 0 {
        return Ok(None);
    }
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let mut sample = vec![elapsed * 1e6 / (2.0 * iters as f64), median(&times), min];
    if b.allocations.is_some() {
        debug_assert_eq!(ALLOCS, "allocs/iter");
        sample.push(allocs);
    }
    Ok(Some(sample))
}
