//! Point-to-point across the protocol ranges: blocking and nonblocking,
//! the protocol each size takes (checked against the counters), RDMA get,
//! the fragmented copy, truncation.

use ferry::ferry_core::protocol::Protocol;
use ferry::{Completion, ProtocolTable, Rank, Request, Tag, ANY_SOURCE};

use super::{pattern, poll_until, same_bytes, Ctx, Failure, Outcome, Verdict};
use crate::ensure;

const GUARD: u8 = 0xA5;
const MIB: usize = 1 << 20;

/// 0, 1, eager limit ±1, 64 KiB and 1 MiB + 1, without duplicates.
fn sizes(ctx: &Ctx, peer: Rank) -> Result<Vec<usize>, Failure> {
    let e = ctx.eager_max(peer)?;
    let mut s = vec![0, 1, e.saturating_sub(1), e, e + 1, 64 << 10, MIB + 1];
    s.sort_unstable();
    s.dedup();
    Ok(s)
}

/// Checks a receive's status and bytes.
fn check_recv(
    c: &Completion,
    from: Rank,
    tag: Tag,
    want: &[u8],
    what: &str,
) -> Result<(), Failure> {
    let s = &c.status;
    ensure!(s.error.is_none(), "{what}: {:?}", s.error);
    ensure!(
        s.source == from && s.tag == tag && s.bytes == want.len(),
        "{what}: status {s:?}, expected source {from} tag {tag} bytes {}",
        want.len()
    );
    same_bytes(&c.bytes()[..s.bytes], want, what)
}

/// Blocking send/recv and ssend across every size, with a guard region
/// after the message and ANY_SOURCE on the synchronous round; then typed
/// elements.
pub fn p2p_blocking(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        for (k, &len) in sizes(ctx, p)?.iter().enumerate() {
            let tag = k as Tag;
            for sync in [false, true] {
                let round = usize::from(sync);
                let out = pattern(len, ctx.rank, p, tag, round);
                let mut buf = vec![GUARD; len + 64];
                let source = if sync { ANY_SOURCE } else { p };
                let send = || match sync {
                    false => c.send(&out, p, tag),
                    true => c.ssend(&out, p, tag),
                };
                let st = if ctx.leads() {
                    send()?;
                    c.recv(&mut buf, source, tag)?
                } else {
                    let st = c.recv(&mut buf, source, tag)?;
                    send()?;
                    st
                };
                let what = format!("{len} B, sync {sync}");
                ensure!(
                    st.source == p && st.tag == tag && st.bytes == len,
                    "{what}: {st:?}"
                );
                same_bytes(&buf[..len], &pattern(len, p, ctx.rank, tag, round), &what)?;
                ensure!(
                    buf[len..].iter().all(|&b| b == GUARD),
                    "{what}: bytes written past the message"
                );
            }
        }
        // Typed elements: u64 and f64, eager and rendezvous.
        for n in [3usize, ctx.eager_max(p)? / 8 + 5, 40_000] {
            let words: Vec<u64> = (0..n as u64)
                .map(|i| (i * 0x9e37_79b9) ^ ctx.rank as u64)
                .collect();
            let floats: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 + ctx.rank as f64).collect();
            let mut w = vec![0u64; n];
            let mut f = vec![0f64; n];
            if ctx.leads() {
                c.send(&words, p, 50)?;
                c.send(&floats, p, 51)?;
                c.recv(&mut w, p, 50)?;
                c.recv(&mut f, p, 51)?;
            } else {
                let st = c.recv(&mut w, p, 50)?;
                ensure!(st.count(8) == Some(n), "u64 count {:?} of {n}", st.count(8));
                c.recv(&mut f, p, 51)?;
                c.send(&words, p, 50)?;
                c.send(&floats, p, 51)?;
            }
            let want: Vec<u64> = (0..n as u64)
                .map(|i| (i * 0x9e37_79b9) ^ p as u64)
                .collect();
            ensure!(w == want, "u64 x {n} differ");
            ensure!(
                f.iter()
                    .enumerate()
                    .all(|(i, &x)| x == i as f64 * 0.5 + p as f64),
                "f64 x {n} differ"
            );
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Nonblocking with owned vectors: every size at once with the receives
/// posted first (expected path, `wait_all`), then with the messages sent
/// before the receives exist (unexpected eager and RTS, `test_all` loop).
pub fn p2p_nonblocking(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let sizes = sizes(ctx, p)?;
        let n = sizes.len();
        for unexpected in [false, true] {
            let base: Tag = if unexpected { 200 } else { 100 };
            let post_recvs = || -> Result<Vec<Request>, Failure> {
                let mut v = Vec::new();
                for (k, &len) in sizes.iter().enumerate() {
                    v.push(c.irecv(vec![GUARD; len], p, base + k as Tag)?);
                }
                Ok(v)
            };
            let mut reqs = if unexpected {
                Vec::new()
            } else {
                post_recvs()?
            };
            for (k, &len) in sizes.iter().enumerate() {
                let tag = base + k as Tag;
                reqs.push(c.isend(pattern(len, ctx.rank, p, tag, 0), p, tag)?);
            }
            let done = if unexpected {
                // The partner's sync follows its sends on the same path, so
                // when it is here, so are its eager messages and RTSs.
                c.send::<u8>(&[], p, base + 99)?;
                c.recv::<u8>(&mut [], p, base + 99)?;
                let mut all = post_recvs()?;
                all.append(&mut reqs);
                let limit = std::time::Duration::from_secs(60);
                poll_until(limit, "test_all", || Ok(ferry::test_all(&mut all)?))?
            } else {
                ferry::wait_all(&mut reqs)?
            };
            // Receives were posted (or appended) first either way.
            let (recvs, sends) = (&done[..n], &done[n..]);
            for (k, &len) in sizes.iter().enumerate() {
                let tag = base + k as Tag;
                let what = format!("irecv {len} B, unexpected {unexpected}");
                check_recv(&recvs[k], p, tag, &pattern(len, p, ctx.rank, tag, 0), &what)?;
                ensure!(
                    sends[k].status.error.is_none(),
                    "isend {len} B: {:?}",
                    sends[k].status
                );
            }
            // A send hands its own vector back, untouched.
            for (k, s) in done.into_iter().skip(n).enumerate() {
                let tag = base + k as Tag;
                let back = s.into_vec::<u8>()?;
                same_bytes(
                    &back,
                    &pattern(sizes[k], ctx.rank, p, tag, 0),
                    "returned send vector",
                )?;
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

fn protocol_ran(before: &ferry_core::Counters, after: &ferry_core::Counters) -> Vec<Protocol> {
    let mut ran = Vec::new();
    for (b, a, p) in [
        (before.eager_sent, after.eager_sent, Protocol::Eager),
        (before.rndv_get_sent, after.rndv_get_sent, Protocol::RndvGet),
        (before.rndv_put_sent, after.rndv_put_sent, Protocol::RndvPut),
        (
            before.rndv_frag_sent,
            after.rndv_frag_sent,
            Protocol::Fragmented,
        ),
    ] {
        ran.extend(std::iter::repeat_n(p, (a - b) as usize));
    }
    ran
}

/// One message each way per size; the sender checks with its counters
/// that the protocol its table promises is the one that ran.
fn exchange_checked(
    ctx: &Ctx,
    p: Rank,
    table: &ProtocolTable,
    sizes: &[usize],
    base: Tag,
) -> Outcome {
    let c = &ctx.comm;
    for (k, &len) in sizes.iter().enumerate() {
        let tag = base + k as Tag;
        for turn in [true, false] {
            if ctx.leads() == turn {
                let data = pattern(len, ctx.rank, p, tag, 0);
                let before = ctx.world.counters().engine;
                c.send(&data[..], p, tag)?;
                let ran = protocol_ran(&before, &ctx.world.counters().engine);
                let want = table.select(len, true);
                ensure!(
                    ran == [want],
                    "{len} B to rank {p}: the protocol table ({table:?}) promises {want:?}, \
                     the counters show {ran:?} ran: the device's caps disagree with its behaviour"
                );
            } else {
                let mut buf = vec![GUARD; len];
                let st = c.recv(&mut buf, p, tag)?;
                ensure!(st.bytes == len, "{len} B: {st:?}");
                same_bytes(
                    &buf,
                    &pattern(len, p, ctx.rank, tag, 0),
                    &format!("{len} B"),
                )?;
            }
        }
    }
    Ok(Verdict::Pass)
}

/// Capabilities against behaviour: the instantiation's `expect` list
/// against the protocol table, and the table against the counters at
/// every threshold.
pub fn protocol_selection(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let table = ctx.world.protocol_table(p)?;
        for (cap, proto) in [
            ("rdma_get", Protocol::RndvGet),
            ("rdma_put", Protocol::RndvPut),
        ] {
            if let Some(want) = ctx.expected(cap) {
                ensure!(
                    (table.rdma == proto) == want,
                    "the instantiation expects {cap}={want}, the device's table is {table:?}"
                );
            }
        }
        let e = table.eager_max;
        let mut sizes = vec![0, e, e + 1, MIB + 1];
        if table.rdma_min > e + 1 {
            sizes.extend([table.rdma_min - 1, table.rdma_min]);
        }
        sizes.sort_unstable();
        sizes.dedup();
        exchange_checked(ctx, p, &table, &sizes, 300)?;
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Rendezvous by RDMA get (CMA on shm): sizes from the RDMA threshold up,
/// unaligned source and destination, eight transfers in flight received
/// in reverse order. Skipped when the device reports no `rdma_get`.
pub fn rdma_get(ctx: &Ctx) -> Outcome {
    let mut verdict = Verdict::Pass;
    if let Some(p) = ctx.partner() {
        let table = ctx.world.protocol_table(p)?;
        if table.rdma != Protocol::RndvGet {
            verdict = Verdict::Skip(format!(
                "the device reports no rdma_get towards rank {p} (protocol table {table:?})"
            ));
        } else {
            let low = table.rdma_min.max(table.eager_max + 1);
            exchange_checked(ctx, p, &table, &[low, MIB + 1, 3 * MIB + 7], 400)?;
            unaligned_and_concurrent(ctx, p, low.max(MIB), 8, |b, a| {
                (
                    a.rndv_get_sent - b.rndv_get_sent,
                    a.rndv_frag_sent - b.rndv_frag_sent,
                )
            })?;
        }
    }
    ctx.barrier()?;
    Ok(verdict)
}

/// The fragmented (pipelined copy) protocol, opened below 1 MiB on every
/// device by the runner's configuration (`bodies::configure`): sizes
/// around the fragment size, both directions, interleaved transfers.
pub fn fragmented(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let table = ctx.world.protocol_table(p)?;
        let f = table.fragment;
        let e = table.eager_max;
        let top = if table.rdma == Protocol::Fragmented {
            usize::MAX
        } else {
            table.rdma_min
        };
        let sizes: Vec<usize> = [e + 1, f - 1, f, f + 1, 5 * f + 3]
            .into_iter()
            .filter(|&s| s > e && s < top)
            .collect();
        ensure!(!sizes.is_empty(), "no fragmented range: table {table:?}");
        exchange_checked(ctx, p, &table, &sizes, 500)?;
        let len = *sizes.last().expect("not empty");
        interleaved(ctx, p, len)?;
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// Two fragmented transfers in flight at once, received in the opposite
/// order to the sends.
fn interleaved(ctx: &Ctx, p: Rank, len: usize) -> Result<(), Failure> {
    let c = &ctx.comm;
    if ctx.leads() {
        let mut reqs = [
            c.isend(pattern(len, ctx.rank, p, 600, 0), p, 600)?,
            c.isend(pattern(len + 1, ctx.rank, p, 601, 0), p, 601)?,
        ];
        ferry::wait_all(&mut reqs)?;
    } else {
        let mut reqs = [
            c.irecv(vec![0u8; len + 1], p, 601)?,
            c.irecv(vec![0u8; len], p, 600)?,
        ];
        let done = ferry::wait_all(&mut reqs)?;
        check_recv(
            &done[0],
            p,
            601,
            &pattern(len + 1, p, ctx.rank, 601, 0),
            "second",
        )?;
        check_recv(
            &done[1],
            p,
            600,
            &pattern(len, p, ctx.rank, 600, 0),
            "first",
        )?;
    }
    Ok(())
}

/// Unaligned borrowed buffers, then `n` transfers of `big` bytes in flight;
/// `count(before, after)` gives (transfers by the expected protocol,
/// transfers by the fragmented one).
fn unaligned_and_concurrent(
    ctx: &Ctx,
    p: Rank,
    big: usize,
    n: usize,
    count: impl Fn(&ferry_core::Counters, &ferry_core::Counters) -> (u64, u64),
) -> Result<(), Failure> {
    let c = &ctx.comm;
    let len = big + 3;
    let before = ctx.world.counters().engine;
    if ctx.leads() {
        let data = pattern(len + 3, ctx.rank, p, 700, 0);
        c.send(&data[3..], p, 700)?;
        let mut reqs = Vec::new();
        for i in 0..n {
            let tag = 710 + i as Tag;
            reqs.push(c.isend(pattern(big, ctx.rank, p, tag, 0), p, tag)?);
        }
        ferry::wait_all(&mut reqs)?;
        let (rdma, frag) = count(&before, &ctx.world.counters().engine);
        ensure!(
            rdma == n as u64 + 1 && frag == 0,
            "{} rendezvous sends: {rdma} by RDMA, {frag} fragmented",
            n + 1
        );
    } else {
        let mut buf = vec![GUARD; len + 5 + 64];
        c.recv(&mut buf[5..5 + len], p, 700)?;
        let want = pattern(len + 3, p, ctx.rank, 700, 0);
        same_bytes(&buf[5..5 + len], &want[3..], "unaligned")?;
        ensure!(
            buf[..5].iter().chain(&buf[5 + len..]).all(|&b| b == GUARD),
            "guard bytes overwritten"
        );
        let mut reqs = Vec::new();
        for i in (0..n).rev() {
            reqs.push(c.irecv(vec![0u8; big], p, 710 + i as Tag)?);
        }
        let done = ferry::wait_all(&mut reqs)?;
        for (j, d) in done.iter().enumerate() {
            let tag = 710 + (n - 1 - j) as Tag;
            check_recv(d, p, tag, &pattern(big, p, ctx.rank, tag, 0), "concurrent")?;
        }
    }
    Ok(())
}

/// Messages longer than the receive buffer, eager and rendezvous: the
/// receive reports truncation and holds the message's first part, nothing
/// is written past the buffer, the sender completes without error, and
/// the pair keeps working.
pub fn truncation(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let e = ctx.eager_max(p)?;
        let cases = [
            (100, 10),
            (e, e / 2),
            (e + 100, e / 2),
            (MIB, 64 << 10),
            (MIB, 0),
            (200, 0),
        ];
        for (k, &(len, cap)) in cases.iter().enumerate() {
            let tag = 800 + 2 * k as Tag;
            let what = format!("{len} B into {cap}");
            if ctx.leads() {
                c.send(&pattern(len, ctx.rank, p, tag, 0), p, tag)?;
                let mut r = c.isend(pattern(len, ctx.rank, p, tag + 1, 0), p, tag + 1)?;
                let st = r.wait()?.status;
                ensure!(st.error.is_none(), "{what}: the sender saw {st:?}");
                continue;
            }
            let want = pattern(len, p, ctx.rank, tag, 0);
            let mut big = vec![GUARD; cap + 4096];
            match c.recv(&mut big[..cap], p, tag) {
                Err(e) if e.is_truncation() => {}
                other => return Err(Failure(format!("{what}: blocking recv gave {other:?}"))),
            }
            same_bytes(&big[..cap], &want[..cap], &what)?;
            ensure!(
                big[cap..].iter().all(|&b| b == GUARD),
                "{what}: bytes written past the buffer"
            );
            let done = c.irecv(vec![GUARD; cap], p, tag + 1)?.wait()?;
            let st = done.status;
            ensure!(
                matches!(st.error, Some(ferry_core::Error::Usage(ferry_core::UsageError::Truncated {
                    message, capacity })) if message == len && capacity == cap),
                "{what}: nonblocking status {st:?}"
            );
            ensure!(
                st.bytes == cap,
                "{what}: status.bytes {} (buffer {cap})",
                st.bytes
            );
            let back = done.into_vec::<u8>()?;
            same_bytes(&back, &pattern(len, p, ctx.rank, tag + 1, 0)[..cap], &what)?;
        }
        // The pair still works, both ways.
        let mut buf = [0u8; 16];
        if ctx.leads() {
            c.send(&[7u8; 16], p, 899)?;
            c.recv(&mut buf, p, 899)?;
        } else {
            c.recv(&mut buf, p, 899)?;
            c.send(&[7u8; 16], p, 899)?;
        }
        ensure!(buf == [7u8; 16], "message after truncation: {buf:?}");
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}
