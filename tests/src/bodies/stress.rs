//! Load and waiting: the unexpected-message flood, four threads per rank,
//! passive waiting, hybrid waiting through a transfer the rank drives.

use std::thread;
use std::time::{Duration, Instant};

use ferry::{Rank, Tag, ANY_SOURCE};

use super::{pattern, same_bytes, Ctx, Failure, Outcome, Verdict};
use crate::ensure;

/// Messages in the blocking flood, over all senders.
const FLOOD: usize = 100_000;
/// Messages in the nonblocking burst, over all senders.
const BURST: usize = 10_000;
const FLOOD_TAG: Tag = 1800;
const BURST_TAG: Tag = 1801;
const DONE_TAG: Tag = 1802;
const NEVER_TAG: Tag = 1803;

/// This process's resident set, in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Rank 0 receives, in per-source order, `per` messages from every other
/// rank carrying their index; returns the deepest unexpected queue seen.
fn drain(ctx: &Ctx, per: usize, tag: Tag) -> Result<u64, Failure> {
    let mut next = vec![0u64; ctx.size as usize];
    let mut buf = [0u8; 8];
    let mut deepest = 0;
    for k in 0..per * (ctx.size as usize - 1) {
        let st = ctx.comm.recv(&mut buf, ANY_SOURCE, tag)?;
        let i = u64::from_le_bytes(buf);
        let src = st.source as usize;
        ensure!(
            st.bytes == 8 && i == next[src],
            "from rank {src}: message {i}, expected {}",
            next[src]
        );
        next[src] += 1;
        if k % 512 == 0 {
            deepest = deepest.max(ctx.world.counters().engine.unexpected_depth);
        }
    }
    Ok(deepest)
}

/// Every rank but 0 floods rank 0, which is busy elsewhere (probing for a
/// tag nobody sends, so it progresses but matches nothing) and then
/// receives everything in order:
/// 1. `FLOOD` blocking sends of 8 bytes: the receiver's unexpected queue
///    never holds more than `credits + 1` messages per sender (the eager
///    credits, then one blocked rendezvous), and its RSS stays flat;
/// 2. `BURST` nonblocking sends, none waited for until the end: at most
///    `credits` of them per sender travel eagerly before the receiver
///    matches anything, so unexpected eager payload is bounded by
///    `credits × eager limit` per sender; the rest wait as rendezvous.
pub fn unexpected_flood(ctx: &Ctx) -> Outcome {
    let c = &ctx.comm;
    let senders = ctx.size as u64 - 1;
    let credits = u64::from(ctx.world.config().engine.eager_credits);
    let flood = FLOOD * ctx.scale;
    let per = flood.div_ceil(senders as usize);
    if ctx.rank == 0 {
        let rss0 = rss_kib();
        let start = Instant::now();
        let mut deepest = 0;
        // At least 300 ms, and until every sender has used up its credits
        // (a slow start on an oversubscribed machine must not turn into a
        // false "no credit stall" on the senders), but not forever.
        let full = senders * credits;
        while start.elapsed() < Duration::from_millis(300)
            || (deepest < full && start.elapsed() < Duration::from_secs(20))
        {
            ensure!(
                c.iprobe(ANY_SOURCE, NEVER_TAG)?.is_none(),
                "a message on an unused tag"
            );
            deepest = deepest.max(ctx.world.counters().engine.unexpected_depth);
        }
        ensure!(
            deepest >= full,
            "after {:?} only {deepest} of the {full} eager messages the credits allow arrived",
            start.elapsed()
        );
        deepest = deepest.max(drain(ctx, per, FLOOD_TAG)?);
        let bound = senders * (credits + 1);
        ensure!(
            deepest <= bound,
            "unexpected queue reached {deepest} messages (bound {bound})"
        );
        let grown = rss_kib().saturating_sub(rss0);
        ensure!(
            grown < 32 << 10,
            "RSS grew by {grown} KiB during the flood of {flood}"
        );
    } else {
        let before = ctx.world.counters().engine;
        for i in 0..per as u64 {
            c.send(&i.to_le_bytes(), 0, FLOOD_TAG)?;
        }
        let after = ctx.world.counters().engine;
        ensure!(
            after.credit_stalls > before.credit_stalls,
            "the receiver matched nothing for 300 ms, yet no send ran out of eager credits"
        );
    }
    ctx.barrier()?;

    let per = (BURST * ctx.scale).div_ceil(senders as usize);
    if ctx.rank == 0 {
        // The DONE messages follow each sender's burst, so once they are
        // matched the whole burst has arrived, unmatched.
        for r in 1..ctx.size as Rank {
            c.recv::<u8>(&mut [], r, DONE_TAG)?;
        }
        let depth = ctx.world.counters().engine.unexpected_depth;
        ensure!(
            depth == per as u64 * senders,
            "{depth} unexpected messages after the burst of {}",
            per as u64 * senders
        );
        drain(ctx, per, BURST_TAG)?;
    } else {
        let before = ctx.world.counters().engine;
        let mut reqs = Vec::with_capacity(per);
        for i in 0..per as u64 {
            reqs.push(c.isend(i.to_le_bytes().to_vec(), 0, BURST_TAG)?);
        }
        let after = ctx.world.counters().engine;
        let eager = after.eager_sent - before.eager_sent;
        ensure!(
            eager <= credits,
            "{eager} eager messages sent to a receiver that matched none (credits {credits})"
        );
        c.send::<u8>(&[], 0, DONE_TAG)?;
        ferry::wait_all(&mut reqs)?;
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

const ROUNDS: usize = 150;

/// Four threads per rank, each exchanging with the same thread of the
/// partner (its own tag) through isend/irecv and every wait style, with
/// eager and rendezvous sizes.
pub fn threads4(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let e = ctx.eager_max(p)?;
        let me = ctx.rank;
        let rounds = ROUNDS * ctx.scale;
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let c = ctx.comm.clone();
                thread::spawn(move || -> Result<(), Failure> {
                    let tag = 1900 + t;
                    for i in 0..rounds {
                        let len = match i {
                            _ if i % 16 == 5 => e + 1 + i,
                            _ if i % 50 == 17 => 100_000,
                            _ => 1 + (i * 7) % 200,
                        };
                        let mut recv = c.irecv(vec![0u8; len], p, tag)?;
                        let mut send = c.isend(pattern(len, me, p, tag, i), p, tag)?;
                        let got = match i % 3 {
                            0 => ferry::wait_all(&mut [recv, send])?.swap_remove(0),
                            1 => {
                                let got = recv.wait()?;
                                send.wait()?;
                                got
                            }
                            _ => {
                                let mut reqs = [send, recv];
                                let mut got = None;
                                while let ferry::Outcome::Completed((j, d)) =
                                    ferry::wait_any(&mut reqs)?
                                {
                                    if j == 1 {
                                        got = Some(d);
                                    }
                                }
                                got.ok_or(Failure("wait_any lost the receive".into()))?
                            }
                        };
                        ensure!(
                            got.status.bytes == len,
                            "thread {t} round {i}: {:?}",
                            got.status
                        );
                        same_bytes(got.bytes(), &pattern(len, p, me, tag, i), "threaded")?;
                    }
                    Ok(())
                })
            })
            .collect();
        for t in threads {
            t.join()
                .map_err(|_| Failure("a thread panicked".into()))??;
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(u) = getrusage(UsageWho::RUSAGE_SELF) else {
        return Duration::ZERO;
    };
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Duration::from_micros(us(u.user_time()) + us(u.system_time()))
}

fn monotonic_ns() -> u64 {
    // CLOCK_MONOTONIC is system-wide, so both ranks read the same clock.
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Passive waiting (the runner configures passive mode): a rank blocked
/// in `recv` for 300 ms sleeps in the kernel (little CPU), is woken by
/// the device's fd when the message comes (not by the safety-net
/// timeout), and promptly. Skipped if the device cannot be slept on
/// (the waiter polled instead); failed if it slept but its fd never fired.
pub fn passive_wait(ctx: &Ctx) -> Outcome {
    let mut verdict = Verdict::Pass;
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        if ctx.leads() {
            c.send(&[0u8], p, 2000)?;
            let before = ctx.world.counters();
            let (t0, cpu0) = (Instant::now(), cpu_time());
            let mut stamp = [0u64];
            c.recv(&mut stamp, p, 2001)?;
            let (woke, wall, cpu) = (monotonic_ns(), t0.elapsed(), cpu_time() - cpu0);
            let after = ctx.world.counters();
            let latency = Duration::from_nanos(woke.saturating_sub(stamp[0]));
            let claims_fd = ctx.world.caps(p)?.wait_fd;
            if after.sleeps == before.sleeps {
                ensure!(
                    after.polls > before.polls,
                    "passive wait neither slept nor polled"
                );
                // A device that claims a wait fd must be slept on.
                ensure!(
                    !claims_fd,
                    "caps disagree with behaviour: the device claims a wait fd but passive waits poll"
                );
                verdict = Verdict::Skip("the device cannot be slept on: passive waits poll".into());
            } else {
                ensure!(
                    after.wake_timeouts == before.wake_timeouts,
                    "woken by the safety-net timeout: the device's wait fd did not fire"
                );
                ensure!(
                    after.wakeups_device > before.wakeups_device,
                    "no wake-up by the device fd"
                );
                let share = cpu.as_secs_f64() / wall.as_secs_f64();
                ensure!(
                    share < 0.25,
                    "{:.0}% of a core while blocked {wall:?}",
                    share * 100.0
                );
                ensure!(
                    latency < Duration::from_millis(200),
                    "woke {latency:?} after the send"
                );
            }
        } else {
            c.recv(&mut [0u8], p, 2000)?;
            thread::sleep(Duration::from_millis(300));
            c.send(&[monotonic_ns()], p, 2001)?;
        }
    }
    ctx.barrier()?;
    Ok(verdict)
}

/// The transfer `hybrid_drives_transfers` receives: milliseconds on every
/// device, far past the 50 us spin budget.
const DRIVEN_LEN: usize = 8 << 20;
const DRIVEN_TAG: Tag = 2100;

/// Hybrid waiting (50 us of spinning, then sleep) through one 8 MiB
/// receive whose envelope is already here. A device whose transfers move
/// only while its rank progresses (libfabric's manual progress: the
/// instantiation expects `drives_transfers`) must keep the waiter polling
/// until the transfer ends: no sleep (a provider that copies at once has
/// nothing to wait for). Any other device must never ask for that (its
/// waiter may sleep until the completion). The bytes are checked either
/// way.
pub fn hybrid_drives_transfers(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let c = &ctx.comm;
        if ctx.leads() {
            let data = pattern(DRIVEN_LEN, ctx.rank, p, DRIVEN_TAG, 0);
            c.send(&data, p, DRIVEN_TAG)?;
        } else {
            // The receive then starts the transfer at once (a read, a
            // clear-to-send, or the fragments already queued).
            c.probe(p, DRIVEN_TAG)?;
            let mut buf = vec![0u8; DRIVEN_LEN];
            let before = ctx.world.counters();
            c.recv(&mut buf, p, DRIVEN_TAG)?;
            let after = ctx.world.counters();
            same_bytes(
                &buf,
                &pattern(DRIVEN_LEN, p, ctx.rank, DRIVEN_TAG, 0),
                "8 MiB",
            )?;
            let driven = after.driven - before.driven;
            let slept = after.sleeps - before.sleeps;
            if ctx.expected("drives_transfers") == Some(true) {
                ensure!(
                    slept == 0,
                    "slept {slept} times through a transfer it drives ({driven} spin budgets renewed)"
                );
            } else {
                ensure!(
                    driven == 0,
                    "the device asked to be driven {driven} times; it moves its data itself"
                );
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}
