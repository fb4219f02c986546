//! Matching semantics: wildcard ordering (MPI's non-overtaking rule),
//! synchronous sends, matched probes across threads.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry::{Comm, Message, Rank, Status, Tag, ANY_SOURCE, ANY_TAG};

use super::{pattern, same_bytes, Ctx, Failure, Outcome, Verdict};
use crate::ensure;

/// A message that says who sent it and its index: `[src u32][i u32]`
/// then a pattern, `len >= 8` bytes in all.
fn numbered(len: usize, src: Rank, to: Rank, tag: Tag, i: usize) -> Vec<u8> {
    let mut v = (src as u32).to_le_bytes().to_vec();
    v.extend((i as u32).to_le_bytes());
    v.extend(pattern(len - 8, src, to, tag, i));
    v
}

/// Parses and checks a [`numbered`] message: `(src, i)`.
fn parse(bytes: &[u8], to: Rank, tag: Tag) -> Result<(Rank, usize), Failure> {
    ensure!(
        bytes.len() >= 8,
        "{} bytes: too short for a numbered message",
        bytes.len()
    );
    let src = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as Rank;
    let i = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
    same_bytes(
        &bytes[8..],
        &pattern(bytes.len() - 8, src, to, tag, i),
        &format!("message {i} from rank {src}"),
    )?;
    Ok((src, i))
}

/// Checks that `(src, i)` is the next message expected from `src`.
fn in_order(
    next: &mut [usize],
    st: &Status,
    src: Rank,
    i: usize,
    what: &str,
) -> Result<(), Failure> {
    ensure!(
        st.source == src,
        "{what}: status source {} but the message says {src}",
        st.source
    );
    let want = next[src as usize];
    ensure!(
        i == want,
        "{what}: message {i} from rank {src} overtook message {want}"
    );
    next[src as usize] += 1;
    Ok(())
}

const K: usize = 120;

/// Every rank but 0 sends to rank 0, which receives with wildcards:
/// 1. ANY_SOURCE + ANY_TAG, blocking, with mixed eager and rendezvous
///    sizes and three tags: per source, messages arrive in send order;
/// 2. ANY_SOURCE with a specific tag, taking tag B before tag A: per source
///    and tag, in order;
/// 3. pre-posted nonblocking ANY_SOURCE + ANY_TAG receives: in posting
///    order, per source, indices increase.
pub fn any_source_order(ctx: &Ctx) -> Outcome {
    let c = &ctx.comm;
    // The eager limit of each sender's link to rank 0: links of a mixed job
    // differ (shm carries a whole cell eagerly, a network device less), and
    // rank 0 sees each link as its sender does.
    let eager: Vec<usize> = if ctx.rank == 0 {
        let mut e = vec![0];
        for p in 1..ctx.size as Rank {
            e.push(ctx.eager_max(p)?);
        }
        e
    } else {
        vec![ctx.eager_max(0)?; ctx.size as usize]
    };
    let len_from = |src: Rank, i: usize| match i {
        _ if i % 20 == 7 => eager[src as usize] + 1 + i,
        _ if i % 50 == 13 => 70_000,
        _ => 8 + i % 40,
    };
    let len_of = |i: usize| len_from(ctx.rank, i);
    let tag_of = |i: usize| 1 + (i % 3) as Tag;
    let k = K * ctx.scale;
    let senders = ctx.size as usize - 1;
    let max_len = (1..ctx.size as Rank)
        .flat_map(|src| (0..k).map(move |i| (src, i)))
        .map(|(src, i)| len_from(src, i))
        .max()
        .unwrap_or(8);

    // 1. ANY_SOURCE + ANY_TAG.
    if ctx.rank == 0 {
        let mut next = vec![0usize; ctx.size as usize];
        let mut buf = vec![0u8; max_len];
        for _ in 0..k * senders {
            let st = c.recv(&mut buf, ANY_SOURCE, ANY_TAG)?;
            let (src, i) = parse(&buf[..st.bytes], 0, st.tag)?;
            in_order(&mut next, &st, src, i, "ANY_SOURCE/ANY_TAG")?;
            ensure!(
                st.tag == tag_of(i) && st.bytes == len_from(src, i),
                "message {i}: {st:?}"
            );
        }
    } else {
        let mut reqs = Vec::new();
        for i in 0..k {
            reqs.push(c.isend(numbered(len_of(i), ctx.rank, 0, tag_of(i), i), 0, tag_of(i))?);
        }
        ferry::wait_all(&mut reqs)?;
    }
    ctx.barrier()?;

    // 2. A specific tag with ANY_SOURCE: all of tag 12 first, then tag 11.
    let (a, b): (Tag, Tag) = (11, 12);
    if ctx.rank == 0 {
        for tag in [b, a] {
            let mut next = vec![0usize; ctx.size as usize];
            let mut buf = vec![0u8; max_len];
            for _ in 0..(k / 2) * senders {
                let st = c.recv(&mut buf, ANY_SOURCE, tag)?;
                let (src, i) = parse(&buf[..st.bytes], 0, tag)?;
                // Index i of tag `tag` is message 2*i + (tag == b) overall.
                in_order(&mut next, &st, src, i, &format!("ANY_SOURCE/tag {tag}"))?;
            }
        }
    } else {
        let mut reqs = Vec::new();
        for i in 0..k {
            let tag = if i % 2 == 0 { a } else { b };
            reqs.push(c.isend(numbered(len_of(i), ctx.rank, 0, tag, i / 2), 0, tag)?);
        }
        ferry::wait_all(&mut reqs)?;
    }
    ctx.barrier()?;

    // 3. Pre-posted wildcards. No barrier while they are posted (they
    // would match its messages): rank 0 releases the senders itself.
    const GO: Tag = 20;
    const PRE: usize = 24;
    if ctx.rank == 0 {
        let mut reqs = Vec::new();
        for _ in 0..PRE * senders {
            reqs.push(c.irecv(vec![0u8; max_len], ANY_SOURCE, ANY_TAG)?);
        }
        for r in 1..ctx.size as Rank {
            c.send::<u8>(&[], r, GO)?;
        }
        let done = ferry::wait_all(&mut reqs)?;
        let mut next = vec![0usize; ctx.size as usize];
        for d in &done {
            let (src, i) = parse(&d.bytes()[..d.status.bytes], 0, d.status.tag)?;
            in_order(
                &mut next,
                &d.status,
                src,
                i,
                "pre-posted ANY_SOURCE/ANY_TAG",
            )?;
        }
    } else {
        c.recv::<u8>(&mut [], 0, GO)?;
        for i in 0..PRE {
            c.send(
                &numbered(len_of(i), ctx.rank, 0, tag_of(i), i),
                0,
                tag_of(i),
            )?;
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// A synchronous send does not complete before its receive is posted:
/// the sender tests it for 30 ms while the receiver waits for a go-ahead
/// that only the sender can give, then lets it post.
pub fn issend_sync(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let e = ctx.eager_max(p)?;
        for (k, len) in [0, 8, e + 1, 1 << 20].into_iter().enumerate() {
            let tag = 900 + 2 * k as Tag;
            if ctx.leads() {
                let mut r = c.issend(pattern(len, ctx.rank, p, tag, 0), p, tag)?;
                ensure!(!r.is_empty(), "issend of {len} B returned REQUEST_EMPTY");
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(30) {
                    ensure!(
                        r.test()?.is_none(),
                        "issend of {len} B completed before the receive was posted"
                    );
                }
                c.send::<u8>(&[], p, tag + 1)?;
                let st = r.wait()?.status;
                ensure!(st.error.is_none(), "issend of {len} B: {st:?}");
            } else {
                c.recv::<u8>(&mut [], p, tag + 1)?;
                let mut buf = vec![0u8; len];
                let st = c.recv(&mut buf, p, tag)?;
                ensure!(st.bytes == len, "{st:?}");
                same_bytes(&buf, &pattern(len, p, ctx.rank, tag, 0), "issend data")?;
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

const STOP: Tag = 999;
const M: usize = 300;

/// A receiving thread: takes messages (and their probe statuses) from
/// `rx` and receives them.
fn mrecv_thread(rx: mpsc::Receiver<(Message, Status)>, me: Rank) -> Result<Vec<usize>, Failure> {
    let mut seen = Vec::new();
    for (m, st) in rx {
        let mut buf = vec![0u8; st.bytes];
        let got = m.recv(&mut buf)?;
        ensure!(
            got.bytes == st.bytes && got.tag == st.tag,
            "mrecv {got:?}, probe said {st:?}"
        );
        seen.push(parse(&buf, me, st.tag)?.1);
    }
    Ok(seen)
}

/// Thread 1 `mprobe`s and hands each message to thread 2 to receive;
/// thread 3 `improbe`s and ARecvs itself. Every message is received by
/// exactly one of them.
fn probers(c: &Comm, p: Rank, me: Rank) -> Result<Vec<usize>, Failure> {
    let (tx, rx) = mpsc::channel();
    let c1 = c.clone();
    let blocking = thread::spawn(move || -> Result<(), Failure> {
        loop {
            let (m, st) = c1.mprobe(p, ANY_TAG)?;
            if st.tag == STOP {
                m.recv::<u8>(&mut [])?;
                return Ok(());
            }
            tx.send((m, st))
                .map_err(|_| Failure("receiver thread gone".into()))?;
        }
    });
    let receiver = thread::spawn(move || mrecv_thread(rx, me));
    let c3 = c.clone();
    let polling = thread::spawn(move || -> Result<Vec<usize>, Failure> {
        let mut seen = Vec::new();
        loop {
            let Some((m, st)) = c3.improbe(p, ANY_TAG)? else {
                thread::yield_now();
                continue;
            };
            let (v, got) = m.arecv::<u8>()?;
            ensure!(
                got.bytes == st.bytes && v.len() == st.bytes,
                "arecv {got:?} of {st:?}"
            );
            if st.tag == STOP {
                return Ok(seen);
            }
            seen.push(parse(&v, me, st.tag)?.1);
        }
    });
    let join = |h: thread::JoinHandle<Result<Vec<usize>, Failure>>| {
        h.join()
            .map_err(|_| Failure("a probing thread panicked".into()))?
    };
    blocking
        .join()
        .map_err(|_| Failure("the mprobe thread panicked".into()))??;
    let mut seen = join(receiver)?;
    seen.extend(join(polling)?);
    Ok(seen)
}

/// Matched probes between threads (see `probers`): `M` messages of mixed
/// sizes, each received exactly once, with the size the probe reported.
pub fn mprobe_threads(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let m = M * ctx.scale;
        let e = ctx.eager_max(p)?;
        let len_of = |i: usize| match i {
            _ if i % 25 == 3 => e + 1 + i,
            _ if i % 60 == 10 => 100_000,
            _ => 8 + i % 100,
        };
        if ctx.leads() {
            let mut reqs = Vec::new();
            for i in 0..m {
                let tag = (i % 5) as Tag;
                reqs.push(c.isend(numbered(len_of(i), ctx.rank, p, tag, i), p, tag)?);
            }
            // One stop for each probing thread, after every data message.
            reqs.push(c.isend(Vec::<u8>::new(), p, STOP)?);
            reqs.push(c.isend(Vec::<u8>::new(), p, STOP)?);
            ferry::wait_all(&mut reqs)?;
        } else {
            let mut seen = probers(c, p, ctx.rank)?;
            seen.sort_unstable();
            ensure!(
                seen.iter().copied().eq(0..m),
                "{} messages received for {m} sent (duplicates or losses)",
                seen.len()
            );
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// A blocking receive takes a message without a request when nothing else
/// is posted (`Engine::recv_direct`), and must then keep MPI's order: a
/// receive posted before it matches first; a rendezvous or synchronous
/// message ahead of a small one, both matching, is received first (the
/// direct path gives way to an ordinary receive); a wildcard receive takes
/// the direct path too; and the direct path is counted.
pub fn blocking_recv_order(ctx: &Ctx) -> Outcome {
    const T: Tag = 1700;
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        let e = ctx.eager_max(p)?;
        let big = 3 * e + 5;
        let me = ctx.rank;
        if ctx.leads() {
            // Case 1: two small messages, an irecv posted before the recv.
            c.send(&numbered(16, me, p, T, 0), p, T)?;
            c.send(&numbered(16, me, p, T, 1), p, T)?;
            // Case 2: rendezvous then small, then small then synchronous.
            c.send(&numbered(big, me, p, T + 1, 0), p, T + 1)?;
            c.send(&numbered(16, me, p, T + 1, 1), p, T + 1)?;
            let mut ss = c.issend(numbered(16, me, p, T + 2, 0), p, T + 2)?;
            c.send(&numbered(16, me, p, T + 2, 1), p, T + 2)?;
            ensure!(ss.wait()?.status.error.is_none(), "the ssend failed");
            // Case 3: sent while the receiver already waits.
            c.recv::<u8>(&mut [], p, T + 3)?;
            thread::sleep(Duration::from_millis(20));
            for i in 0..4 {
                c.send(&numbered(16, me, p, T + 4, i), p, T + 4)?;
            }
        } else {
            let mut got = vec![0u8; big];
            let mut r = c.irecv(vec![0u8; 16], p, T)?;
            let st = c.recv(&mut got, p, T)?;
            ensure!(
                parse(&got[..st.bytes], me, T)? == (p, 1),
                "a blocking recv overtook the irecv posted before it"
            );
            let first = r.wait()?.into_vec::<u8>()?;
            ensure!(
                parse(&first, me, T)? == (p, 0),
                "the irecv got the wrong message"
            );
            for tag in [T + 1, T + 2] {
                for i in 0..2 {
                    let st = c.recv(&mut got, p, tag)?;
                    ensure!(
                        parse(&got[..st.bytes], me, tag)? == (p, i),
                        "tag {tag}: message {i} overtaken"
                    );
                }
            }
            ensure!(
                c.iprobe(p, T + 1)?.is_none() && c.iprobe(p, T + 2)?.is_none(),
                "a message left over after the ordered pairs"
            );
            let before = ctx.world.counters().engine.direct_receives;
            c.send::<u8>(&[], p, T + 3)?;
            for i in 0..4 {
                let source = if i % 2 == 0 { p } else { ANY_SOURCE };
                let st = c.recv(&mut got, source, T + 4)?;
                ensure!(st.source == p, "status source {} for {p}", st.source);
                ensure!(
                    parse(&got[..st.bytes], me, T + 4)? == (p, i),
                    "message {i} of 4 out of order"
                );
            }
            let direct = ctx.world.counters().engine.direct_receives - before;
            ensure!(
                direct >= 4,
                "{direct} of 4 receives with nothing posted took the direct path"
            );
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}
