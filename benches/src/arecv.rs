//! `arecv`: osu_latency's ping-pong twice per size. First with ARecv at
//! both receivers: `iarecv` posted before the peer sends, the message
//! taken in a buffer the library allocates (on shm, eager messages are
//! handed over in their cell, without a copy; the buffer is dropped at
//! once, which returns the cell). Then the same loop with a receive
//! pre-posted into the caller's buffer. Both one-way, in µs (round
//! trip / 2), so the handoff can be compared with the pre-posted receive.
//! `allocs/iter` counts the ARecv loop's allocations (per round trip on
//! rank 0).

use ferry::{Buf, Comm, Rank, Request, SendMode, Tag};

use crate::cli::{powers_of_two, Subcommand};
use crate::job::{fe, Bench, Sample, Timed};
use crate::latency::{check, fill, stamp};

const TAG: Tag = 400;

/// The `arecv` subcommand.
pub(crate) const ARECV: Subcommand = Subcommand {
    name: "arecv",
    about: "ping-pong one-way latency in us: arecv (library buffer) vs a pre-posted receive",
    columns: &["arecv_us", "preposted_us"],
    default_sizes: || powers_of_two(0),
    iterations: crate::latency::osu_latency_iterations,
    counts_allocations: true,
    job_warmup: true,
    multi_pair: false,
    measure,
};

/// Sends the buffer in `slot` and waits; the buffer comes back.
fn send(c: &Comm, slot: &mut Option<Buf>, peer: Rank) -> Result<(), String> {
    let buf = slot.take().ok_or("send buffer lost")?;
    let mut r = c
        .isend_buf(buf, None, peer, TAG, SendMode::Standard)
        .map_err(fe("isend"))?;
    *slot = r.wait().map_err(fe("send wait"))?.into_buf();
    Ok(())
}

/// Posts the next receive: an ARecv, or into the buffer in `slot`.
fn post(c: &Comm, arecv: bool, slot: &mut Option<Buf>, peer: Rank) -> Result<Request, String> {
    if arecv {
        c.iarecv(peer, TAG).map_err(fe("iarecv"))
    } else {
        let buf = slot.take().ok_or("receive buffer lost")?;
        c.irecv_buf(buf, None, peer, TAG).map_err(fe("irecv"))
    }
}

/// Completes a receive; a pre-posted buffer goes back into `slot`, an
/// ARecv buffer is checked (under `--validate`) and dropped.
fn finish(
    r: &mut Request,
    arecv: bool,
    slot: &mut Option<Buf>,
    check_as: Option<(usize, Rank, usize)>,
) -> Result<(), String> {
    let done = r.wait().map_err(fe("recv wait"))?;
    done.status.ok().map_err(|e| format!("receive: {e}"))?;
    let mut buf = done.into_buf();
    if let (Some((len, peer, i)), Some(b)) = (check_as, buf.as_mut()) {
        check(b.as_mut_slice(), len, peer, i)?;
    }
    if !arecv {
        *slot = buf;
    }
    Ok(())
}

/// One ping-pong loop; returns (one-way µs, allocations per round trip).
fn pingpong(
    b: &Bench,
    arecv: bool,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<(f64, f64), String> {
    let (c, peer, validate) = (&b.comm, b.peer, b.options.validate);
    let mut sbuf = Some(Buf::from_vec(fill(size, b.rank)));
    let mut rbuf = Some(Buf::from_vec(vec![0u8; size]));
    let mut timed = Timed::new(warmup);
    // The receive for the first iteration, posted before anything is sent.
    let mut r = post(c, arecv, &mut rbuf, peer)?;
    b.sync()?;
    for i in 0..warmup + iters {
        timed.at(b, i);
        if validate {
            if let Some(s) = sbuf.as_mut() {
                stamp(s.as_mut_slice(), i);
            }
        }
        let check_as = validate.then_some((size, peer, i));
        let last = i + 1 == warmup + iters;
        if b.rank == 0 {
            send(c, &mut sbuf, peer)?;
            finish(&mut r, arecv, &mut rbuf, check_as)?;
            if !last {
                r = post(c, arecv, &mut rbuf, peer)?;
            }
        } else {
            finish(&mut r, arecv, &mut rbuf, check_as)?;
            if !last {
                r = post(c, arecv, &mut rbuf, peer)?;
            }
            send(c, &mut sbuf, peer)?;
        }
    }
    let (elapsed, allocs) = timed.end(b, iters);
    Ok((elapsed * 1e6 / (2.0 * iters as f64), allocs))
}

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let (arecv_us, allocs) = pingpong(b, true, size, iters, warmup)?;
    b.sync()?;
    let (preposted_us, _) = pingpong(b, false, size, iters, warmup)?;
    if b.rank != 0 {
        return Ok(None);
    }
    let mut sample = vec![arecv_us, preposted_us];
    if b.allocations.is_some() {
        sample.push(allocs);
    }
    Ok(Some(sample))
}
