//! The completion family: ARecv mixed with ordinary requests in
//! `wait_any`/`test_some`, the non-destructive `get_status_*`,
//! REQUEST_EMPTY, cancel, persistent requests.

use std::thread;
use std::time::{Duration, Instant};

use ferry::{Outcome as Done, Rank, Request, Tag, ANY_SOURCE};

use super::{pattern, poll_until, same_bytes, Ctx, Failure, Outcome, Verdict};
use crate::ensure;

const LIMIT: Duration = Duration::from_secs(60);

/// What the receiver expects at one index of its request array.
struct Want {
    tag: Tag,
    len: usize,
}

/// The receiver's requests: ARecvs of unexpected eager messages (already
/// arrived), of an unexpected RTS, of a rendezvous message sent later, of
/// an empty message; ordinary receives in between; all completed through
/// `wait_any` (round 0) or a `test_some` loop (round 1).
fn arecv_receiver(ctx: &Ctx, p: Rank, e: usize, round: Tag) -> Result<(), Failure> {
    let c = &ctx.comm;
    let base = 1000 + 100 * round;
    c.recv::<u8>(&mut [], p, base + 99)?; // the early messages are here
    let wants = [
        Want { tag: base, len: 10 },
        Want {
            tag: base + 1,
            len: e,
        },
        Want {
            tag: base + 2,
            len: 3 << 20,
        },
        Want {
            tag: base + 3,
            len: 300,
        },
        Want {
            tag: base + 4,
            len: e + 1,
        },
        Want {
            tag: base + 5,
            len: 0,
        },
        Want {
            tag: base + 6,
            len: 5000,
        },
    ];
    let mut reqs = vec![
        c.iarecv(p, base)?,
        c.iarecv(ANY_SOURCE, base + 1)?,
        c.iarecv(p, base + 2)?,
        c.irecv(vec![0u8; 300], p, base + 3)?,
        c.iarecv(p, base + 4)?,
        c.iarecv(p, base + 5)?,
        c.irecv(vec![0u8; 5000], ANY_SOURCE, base + 6)?,
    ];
    c.send::<u8>(&[], p, base + 98)?; // now send the rest
    let mut left = wants.len();
    let mut seen = vec![false; wants.len()];
    let start = Instant::now();
    while left > 0 {
        let batch = if round == 0 {
            match ferry::wait_any(&mut reqs)? {
                Done::Completed(one) => vec![one],
                Done::Undefined => break,
            }
        } else {
            match ferry::test_some(&mut reqs)? {
                Done::Completed(some) => some,
                Done::Undefined => break,
            }
        };
        ensure!(
            start.elapsed() < LIMIT,
            "{left} requests still pending after {LIMIT:?}"
        );
        for (i, done) in batch {
            let w = &wants[i];
            ensure!(!seen[i], "request {i} completed twice");
            seen[i] = true;
            left -= 1;
            let st = done.status;
            ensure!(
                st.error.is_none() && st.source == p && st.tag == w.tag && st.bytes == w.len,
                "request {i}: {st:?}, expected tag {} len {}",
                w.tag,
                w.len
            );
            let v: Vec<u8> = done.into_vec()?;
            same_bytes(
                &v[..w.len],
                &pattern(w.len, p, ctx.rank, w.tag, 0),
                &format!("request {i}"),
            )?;
        }
    }
    ensure!(
        left == 0 && reqs.iter().all(Request::is_null),
        "{left} requests never completed"
    );
    Ok(())
}

fn arecv_sender(ctx: &Ctx, p: Rank, e: usize, round: Tag) -> Result<(), Failure> {
    let c = &ctx.comm;
    let base = 1000 + 100 * round;
    let send = |tag: Tag, len: usize| c.isend(pattern(len, ctx.rank, p, tag, 0), p, tag);
    // Before the receiver posts anything: two eager, one RTS.
    let mut reqs = vec![
        send(base, 10)?,
        send(base + 1, e)?,
        send(base + 2, 3 << 20)?,
    ];
    c.send::<u8>(&[], p, base + 99)?;
    c.recv::<u8>(&mut [], p, base + 98)?;
    for (tag, len) in [
        (base + 3, 300),
        (base + 4, e + 1),
        (base + 5, 0),
        (base + 6, 5000),
    ] {
        reqs.push(send(tag, len)?);
    }
    ferry::wait_all(&mut reqs)?;
    Ok(())
}

/// ARecv of unexpected and rendezvous messages, mixed with ordinary
/// receives, completed through `wait_any` and then `test_some`.
pub fn arecv_mixed(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let e = ctx.eager_max(p)?;
        for round in 0..2 {
            if ctx.leads() {
                arecv_sender(ctx, p, e, round)?;
            } else {
                arecv_receiver(ctx, p, e, round)?;
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// `get_status_some/any/all` complete nothing and free nothing: the same
/// completions are reported again, the requests stay live, and the data is
/// still there when `test_some` completes them.
pub fn get_status_some(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        const LEN: [usize; 4] = [16, 40_000, 0, 1 << 20];
        let tag = |i: usize| 1200 + i as Tag;
        if ctx.leads() {
            let send = |i: usize| c.send(&pattern(LEN[i], ctx.rank, p, tag(i), 0), p, tag(i));
            send(0)?;
            send(2)?;
            c.recv::<u8>(&mut [], p, 1299)?;
            send(1)?;
            send(3)?;
        } else {
            let mut reqs: Vec<Request> = (0..4)
                .map(|i| c.irecv(vec![0u8; LEN[i]], p, tag(i)))
                .collect::<Result<_, _>>()?;
            let indices = |o: Done<Vec<(usize, ferry::Status)>>| -> Vec<usize> {
                let mut v: Vec<usize> = o
                    .completed()
                    .unwrap_or_default()
                    .iter()
                    .map(|x| x.0)
                    .collect();
                v.sort_unstable();
                v
            };
            let first = poll_until(LIMIT, "get_status_some", || {
                let got = indices(ferry::get_status_some(&reqs)?);
                Ok((got.len() == 2).then_some(got))
            })?;
            ensure!(
                first == [0, 2],
                "get_status_some reported {first:?}, expected [0, 2]"
            );
            for _ in 0..3 {
                let again = indices(ferry::get_status_some(&reqs)?);
                ensure!(
                    again == first,
                    "a second get_status_some reported {again:?}"
                );
            }
            ensure!(
                !reqs.iter().any(Request::is_null),
                "get_status_some freed a request"
            );
            ensure!(
                ferry::get_status_all(&reqs)?.is_none(),
                "get_status_all: all complete?"
            );
            match ferry::get_status_any(&reqs)? {
                Some(Done::Completed((i, st))) => {
                    ensure!(i == 0 || i == 2, "get_status_any chose {i}");
                    ensure!(
                        st.bytes == LEN[i] && st.tag == tag(i),
                        "get_status_any: {st:?}"
                    );
                }
                other => return Err(Failure(format!("get_status_any gave {other:?}"))),
            }
            ensure!(
                reqs[1].get_status()?.is_none(),
                "request 1 reported complete"
            );
            ensure!(
                reqs[0].get_status()?.is_some_and(|s| s.bytes == 16),
                "request 0 status"
            );
            // Now complete them for real: the data is intact.
            let done = poll_until(LIMIT, "test_some", || {
                Ok(ferry::test_some(&mut reqs)?
                    .completed()
                    .filter(|d| !d.is_empty()))
            })?;
            let mut got: Vec<usize> = done.iter().map(|d| d.0).collect();
            got.sort_unstable();
            ensure!(got == [0, 2], "test_some completed {got:?}");
            for (i, d) in done {
                same_bytes(
                    &d.bytes()[..d.status.bytes],
                    &pattern(LEN[i], p, ctx.rank, tag(i), 0),
                    "data",
                )?;
            }
            ensure!(
                reqs[0].is_null() && reqs[2].is_null(),
                "completed requests not null"
            );
            c.send::<u8>(&[], p, 1299)?;
            let done = ferry::wait_all(&mut reqs)?;
            for i in [1, 3] {
                same_bytes(
                    done[i].bytes(),
                    &pattern(LEN[i], p, ctx.rank, tag(i), 0),
                    "late data",
                )?;
            }
            ensure!(
                ferry::get_status_all(&reqs)?.is_some(),
                "all null: get_status_all"
            );
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Small sends complete inside `isend` (REQUEST_EMPTY, seen without a
/// lock), hand their vector back, and are counted; rendezvous sends are
/// never EMPTY.
pub fn request_empty(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let e = ctx.eager_max(p)?;
        // A connection-oriented device may connect on first use (verbs:
        // lazy RC connections, whose first send waits for the handshake):
        // one exchange first, so that the sends below find the steady state
        // "after a quiet period" means.
        if ctx.leads() {
            c.send::<u8>(&[], p, 1296)?;
            c.recv::<u8>(&mut [], p, 1297)?;
        } else {
            c.recv::<u8>(&mut [], p, 1296)?;
            c.send::<u8>(&[], p, 1297)?;
        }
        if ctx.leads() {
            let before = ctx.world.counters().engine.empty_returns;
            for (i, len) in [0usize, 1, 8, e].into_iter().enumerate() {
                let tag = 1300 + i as Tag;
                let data = pattern(len, ctx.rank, p, tag, 0);
                let mut r = c.isend(data.clone(), p, tag)?;
                ensure!(
                    r.is_empty(),
                    "an isend of {len} B after a quiet period is not EMPTY"
                );
                let back: Vec<u8> = r.wait()?.into_vec()?;
                ensure!(back == data, "the EMPTY request gave back other bytes");
            }
            let after = ctx.world.counters().engine.empty_returns;
            ensure!(
                after >= before + 4,
                "counters: {} EMPTY returns for 4",
                after - before
            );
            let mut r = c.isend(pattern(e + 1, ctx.rank, p, 1310, 0), p, 1310)?;
            ensure!(!r.is_empty(), "a rendezvous isend returned EMPTY");
            r.wait()?;
        } else {
            for (i, len) in [0usize, 1, 8, e, e + 1].into_iter().enumerate() {
                let tag = if i == 4 { 1310 } else { 1300 + i as Tag };
                let mut buf = vec![0u8; len];
                c.recv(&mut buf, p, tag)?;
                same_bytes(&buf, &pattern(len, p, ctx.rank, tag, 0), "EMPTY-sent data")?;
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Cancel of a pending receive (it completes cancelled and consumes no
/// message), of one another thread waits for (the waiter wakes), and of a
/// receive that already matched (nothing happens).
pub fn cancel_recv(ctx: &Ctx) -> Outcome {
    let c = &ctx.comm;
    // A receive nobody sends to, from each rank.
    let mut r = c.irecv(vec![0u8; 64], ANY_SOURCE, 1400)?;
    r.cancel()?;
    let done = r.wait()?;
    ensure!(
        done.status.cancelled && done.status.error.is_none(),
        "{:?}",
        done.status
    );
    ensure!(
        done.into_vec::<u8>()?.len() == 64,
        "the buffer did not come back"
    );

    // Another thread waits; this one cancels.
    let r = c.irecv(vec![0u8; 64], ctx.rank, 1401)?;
    let canceller = r.canceller();
    let waiter = thread::spawn(move || {
        let mut r = r;
        let t = Instant::now();
        r.wait().map(|d| (d.status, t.elapsed()))
    });
    thread::sleep(Duration::from_millis(50));
    canceller.cancel()?;
    let (st, waited) = waiter
        .join()
        .map_err(|_| Failure("waiter panicked".into()))??;
    ensure!(st.cancelled, "the waiting thread got {st:?}");
    ensure!(
        waited < Duration::from_secs(5),
        "the waiter woke {waited:?} after waiting began"
    );

    if let Some(p) = ctx.partner() {
        let tag = 1402;
        if ctx.leads() {
            c.recv::<u8>(&mut [], p, 1403)?;
            c.send(&pattern(32, ctx.rank, p, tag, 0), p, tag)?;
            c.send(&pattern(32, ctx.rank, p, tag, 1), p, tag)?;
        } else {
            // Cancelled before the message exists: the message is left for
            // the next receive.
            let mut r = c.irecv(vec![0u8; 32], p, tag)?;
            r.cancel()?;
            ensure!(r.wait()?.status.cancelled, "pending receive not cancelled");
            c.send::<u8>(&[], p, 1403)?;
            let mut first = [0u8; 32];
            c.recv(&mut first, p, tag)?;
            same_bytes(
                &first,
                &pattern(32, p, ctx.rank, tag, 0),
                "message after cancel",
            )?;
            // Matched already: cancel does nothing, the data is intact.
            let mut r = c.irecv(vec![0u8; 32], p, tag)?;
            poll_until(LIMIT, "second message", || Ok(r.get_status()?))?;
            r.cancel()?;
            let d = r.wait()?;
            ensure!(
                !d.status.cancelled && d.status.bytes == 32,
                "{:?}",
                d.status
            );
            same_bytes(
                d.bytes(),
                &pattern(32, p, ctx.rank, tag, 1),
                "matched-then-cancelled",
            )?;
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Persistent send and receive over several rounds, eager and
/// rendezvous, refilling the send buffer between rounds; then the
/// synchronous mode and the usage errors (start while active).
pub fn persistent(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let e = ctx.eager_max(p)?;
        for (k, len) in [64usize, e + 1, 256 << 10].into_iter().enumerate() {
            let tag = 1500 + k as Tag;
            let mut send = c.send_init(vec![0u8; len], p, tag)?;
            let mut recv = c.recv_init(vec![0u8; len], p, tag)?;
            for round in 0..6 {
                send.with_buf_mut(|b: &mut [u8]| {
                    b.copy_from_slice(&pattern(len, ctx.rank, p, tag, round))
                })?;
                let mut both = [recv, send];
                ferry::start_all(&mut both)?;
                if round == 0 {
                    ensure!(
                        matches!(
                            both[0].start(),
                            Err(ferry::Error::Usage(ferry_core::UsageError::RequestActive))
                        ),
                        "starting an active request did not fail with RequestActive"
                    );
                }
                let done = ferry::wait_all(&mut both)?;
                ensure!(
                    done[0].status.bytes == len && done[0].status.source == p,
                    "{:?}",
                    done[0].status
                );
                [recv, send] = both;
                ensure!(
                    !recv.is_null() && !send.is_null(),
                    "a persistent request went null"
                );
                let want = pattern(len, p, ctx.rank, tag, round);
                recv.with_buf(|b: &[u8]| same_bytes(b, &want, &format!("{len} B round {round}")))??;
            }
        }
        // Synchronous persistent send, ARecv-free receive, two rounds.
        let mut send = c.send_init_mode(vec![1u32; 100], p, 1510, ferry::SendMode::Synchronous)?;
        let mut recv = c.recv_init(vec![0u32; 100], p, 1510)?;
        for _ in 0..2 {
            recv.start()?;
            send.start()?;
            let mut both = [send, recv];
            ferry::wait_all(&mut both)?;
            [send, recv] = both;
            recv.with_buf(|b: &[u32]| b.iter().all(|&x| x == 1))?
                .then_some(())
                .ok_or(Failure("synchronous persistent data".into()))?;
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// `Comm::batch`: a window of sends of every protocol (empty, inline-size,
/// eager-limit, rendezvous) to the partner and to itself, started inside
/// one batch, arrives complete and in order; a blocking exchange inside the
/// batch completes (what the batch holds goes out when the caller waits,
/// so waiting inside a batch cannot deadlock); batches nest.
pub fn batched(ctx: &Ctx) -> Outcome {
    let Some(p) = ctx.partner() else {
        ctx.barrier()?;
        return Ok(Verdict::Pass);
    };
    let c = &ctx.comm;
    let e = ctx.eager_max(p)?;
    let lens: Vec<usize> = (0..70).map(|i| [0, 8, 100, e, 24, e + 1][i % 6]).collect();
    const TAG: Tag = 1600;
    // Inside the batch: the window to the partner, a self-send, then a
    // blocking exchange with the partner.
    let (mut sends, mut self_recv) = c.batch(|| -> Result<_, Failure> {
        let mut sends = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            sends.push(c.isend(pattern(len, ctx.rank, p, TAG, i), p, TAG)?);
        }
        let self_recv = c.irecv(vec![0u8; 8], ctx.rank, TAG + 1)?;
        let nested = c.batch(|| c.isend(vec![7u8; 8], ctx.rank, TAG + 1))??;
        sends.push(nested);
        let mut got = [0u8; 4];
        if ctx.leads() {
            c.send(&[1u8; 4], p, TAG + 2)?;
            c.recv(&mut got, p, TAG + 3)?;
        } else {
            c.recv(&mut got, p, TAG + 2)?;
            c.send(&[2u8; 4], p, TAG + 3)?;
        }
        ensure!(got.iter().all(|&b| b != 0), "the exchange inside a batch");
        Ok((sends, self_recv))
    })??;
    for (i, &len) in lens.iter().enumerate() {
        let mut buf = vec![0u8; len];
        let st = c.recv(&mut buf, p, TAG)?;
        ensure!(st.bytes == len, "batched message {i}: {} bytes", st.bytes);
        same_bytes(
            &buf,
            &pattern(len, p, ctx.rank, TAG, i),
            &format!("batched message {i}"),
        )?;
    }
    ferry::wait_all(&mut sends)?;
    let mine: Vec<u8> = self_recv.wait()?.into_vec()?;
    ensure!(mine == [7u8; 8], "the self-send of a nested batch");
    ctx.barrier()?;
    Ok(Verdict::Pass)
}
