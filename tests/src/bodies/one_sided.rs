//! One-sided communication: a window of `u64`s on every rank, each
//! operation in a fence epoch and under locks, checked against what every
//! rank can compute; atomicity under contention (fetch-and-add counters,
//! a compare-and-swap spin lock around a get/put increment, exclusive
//! locks around a get/put increment); post/start/complete/wait on a
//! ring; misuse as typed errors. All of it twice: on `win_allocate`'s
//! window (a node window when every rank shares the node: loads, stores
//! and locks in shared memory) and on `win_allocate_private`'s (every
//! operation a message). A node window also shows that origins finish
//! their passive-target epochs while the target computes without calling
//! ferry, and takes 100,000 fetch-and-adds from every rank on one counter.

use std::time::{Duration, Instant};

use ferry::rma::{Combine, LockKind, Window};
use ferry::{ferry_core::UsageError, Error, Op, Rank};

use super::{Ctx, Failure, Outcome, Verdict};
use crate::ensure;

fn value(c: ferry::Completion) -> Result<Vec<u64>, Failure> {
    Ok(c.into_vec::<u64>()?)
}

fn is_usage(r: ferry::Result<impl Sized>, want: fn(&UsageError) -> bool) -> bool {
    matches!(r, Err(Error::Usage(u)) if want(&u))
}

/// The body.
///
/// # Errors
/// The first failed check.
pub fn one_sided(ctx: &Ctx) -> Outcome {
    let len = 4 * ctx.size as usize + 10;
    let node = ctx.comm.win_allocate::<u64>(len)?;
    if node.is_node_window() {
        if ctx.size > 1 {
            busy_target(ctx, &node)?;
        }
        contended(ctx, &node)?;
    }
    exercise(ctx, node)?;
    exercise(ctx, ctx.comm.win_allocate_private::<u64>(len)?)
}

/// Rank 0 computes for 2 s without calling ferry; the others run lock
/// epochs of puts, gets and accumulates on it meanwhile, then check that
/// its flag (set when it stops) is still clear.
fn busy_target(ctx: &Ctx, win: &Window<u64>) -> Result<(), Failure> {
    let (n, me) = (ctx.size as usize, ctx.rank as usize);
    let flag = 4 * n + 8;
    ctx.comm.barrier()?;
    if me == 0 {
        let start = Instant::now();
        let mut x = 1u64;
        while start.elapsed() < Duration::from_secs(2) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        win.local(|v| v[flag] = 1)?;
    } else {
        for round in 0..10u64 {
            let epoch = win.lock(0, LockKind::Shared)?;
            for k in 0..100u64 {
                epoch.put(0, me * 4, &[round * 100 + k])?;
            }
            epoch.accumulate(0, me * 4 + 1, &[1], Combine::Op(&Op::sum()))?;
            let mut back = [0u64];
            epoch.get_now(0, me * 4, &mut back)?;
            ensure!(back[0] == round * 100 + 99, "a get after puts: {}", back[0]);
            epoch.unlock()?;
        }
        let mut seen = [9u64];
        let epoch = win.lock(0, LockKind::Shared)?;
        epoch.get_now(0, flag, &mut seen)?;
        epoch.unlock()?;
        ensure!(seen[0] == 0, "the epochs waited for the busy target");
    }
    ctx.comm.barrier()?;
    if me == 0 {
        let sums = win.local(|v| (1..n).map(|o| v[o * 4 + 1]).collect::<Vec<_>>())?;
        ensure!(
            sums.iter().all(|&s| s == 10),
            "accumulated while busy: {sums:?}"
        );
    }
    // Leave the window as `exercise` expects it: zeroed.
    win.local(|v| v.fill(0))?;
    ctx.comm.barrier()?;
    Ok(())
}

/// Every rank fetch-and-adds 1 to one counter on the last rank 100,000
/// times (fewer when oversubscribed); the sum is exact.
fn contended(ctx: &Ctx, win: &Window<u64>) -> Result<(), Failure> {
    let n = ctx.size as usize;
    let host = (n - 1) as Rank;
    let hot = 4 * n + 9;
    let times = if n > 4 { 20_000 } else { 100_000 };
    {
        let all = win.lock_all()?;
        for _ in 0..times {
            all.fetch_and_op_now(host, hot, 1, Combine::Op(&Op::sum()))?;
        }
        all.unlock_all()?;
    }
    ctx.comm.barrier()?;
    if ctx.rank == host {
        let v = win.local(|v| std::mem::take(&mut v[hot]))?;
        ensure!(
            v == (times * n) as u64,
            "contended counter {v}, want {}",
            times * n
        );
    }
    ctx.comm.barrier()?;
    Ok(())
}

/// Every operation and synchronization on `win`.
fn exercise(ctx: &Ctx, win: Window<u64>) -> Outcome {
    let world = &ctx.comm;
    let (n, me) = (ctx.size as usize, ctx.rank as usize);
    let rounds = 20 * ctx.scale.max(1);
    // Blocks of 4 per origin, then: 4 accumulated (sum, max), a
    // fetch-and-add counter, a CAS lock word, a counter it guards, a
    // counter exclusive locks guard.
    let (acc, fadd, lock_word, guarded, excl) = (4 * n, 4 * n + 4, 4 * n + 5, 4 * n + 6, 4 * n + 7);
    ensure!(win.len_of(0)? == 4 * n + 10, "window length");
    ensure!(
        is_usage(win.put(0, 0, &[1]), |u| matches!(u, UsageError::RmaSync(_))),
        "a put before any epoch is RmaSync"
    );

    // Puts, then gets, in fence epochs.
    win.fence()?;
    for t in 0..n {
        let block: Vec<u64> = (0..4).map(|k| (me * 1000 + k) as u64).collect();
        win.put(t as Rank, me * 4, &block)?;
    }
    win.fence()?;
    let mine = win.local(|v| v[..4 * n].to_vec())?;
    for o in 0..n {
        for k in 0..4 {
            ensure!(
                mine[o * 4 + k] == (o * 1000 + k) as u64,
                "put from {o}: {:?}",
                &mine[o * 4..o * 4 + 4]
            );
        }
    }
    let right = (me + 1) % n;
    let mut got = win.get(right as Rank, me * 4, 4)?;
    let mut whole = win.get(right as Rank, 0, 4 * n)?;
    ensure!(
        is_usage(win.get(right as Rank, 4 * n + 8, 3), |u| matches!(
            u,
            UsageError::RmaRange { .. }
        )),
        "a get past the window is RmaRange"
    );
    win.fence()?;
    let got = value(got.wait()?)?;
    ensure!(
        got == [
            me as u64 * 1000,
            me as u64 * 1000 + 1,
            me as u64 * 1000 + 2,
            me as u64 * 1000 + 3
        ],
        "get: {got:?}"
    );
    ensure!(value(whole.wait()?)? == mine, "a whole window's get");

    // Accumulates: every rank adds 1s into rank 0 and takes a max.
    win.accumulate(0, acc, &[1, 1], Combine::Op(&Op::sum()))?;
    win.accumulate(
        0,
        acc + 2,
        &[me as u64, 100 - me as u64],
        Combine::Op(&Op::max()),
    )?;
    ensure!(
        is_usage(
            win.accumulate(
                0,
                acc,
                &[1],
                Combine::Op(&Op::user(|_: &[u64], _: &mut [u64]| {}, true))
            ),
            |u| matches!(u, UsageError::Unsupported(_))
        ),
        "a user op in an accumulate is refused"
    );
    win.fence()?;
    if me == 0 {
        let a = win.local(|v| v[acc..acc + 4].to_vec())?;
        ensure!(
            a == [n as u64, n as u64, n as u64 - 1, 100],
            "accumulated: {a:?}"
        );
    }
    let mut old = win.get_accumulate(0, acc, &[5], Combine::NoOp)?;
    win.fence()?;
    ensure!(
        value(old.wait()?)? == [n as u64],
        "get_accumulate with NoOp"
    );

    // Passive target: fetch-and-add on rank 0 from everyone at once.
    let mut seen = Vec::with_capacity(rounds);
    {
        let all = win.lock_all()?;
        for _ in 0..rounds {
            let mut r = all.fetch_and_op(0, fadd, 1, Combine::Op(&Op::sum()))?;
            seen.push(value(r.wait()?)?[0]);
        }
        all.flush_all()?;
        all.unlock_all()?;
    }
    let mut everyone = vec![0u64; rounds * n];
    world.allgather(&seen, &mut everyone)?;
    everyone.sort_unstable();
    ensure!(
        everyone.iter().enumerate().all(|(i, &v)| v == i as u64),
        "fetch-and-add handed out each value once"
    );

    // A compare-and-swap spin lock on the last rank guards a get/put
    // increment.
    let host = (n - 1) as Rank;
    {
        let all = win.lock_all()?;
        for _ in 0..rounds / 4 + 1 {
            while value(
                all.compare_and_swap(host, lock_word, 0, me as u64 + 1)?
                    .wait()?,
            )?[0]
                != 0
            {}
            let v = value(all.get(host, guarded, 1)?.wait()?)?[0];
            all.put(host, guarded, &[v + 1])?;
            all.flush(host)?;
            let mut release = all.compare_and_swap(host, lock_word, me as u64 + 1, 0)?;
            ensure!(
                value(release.wait()?)? == [me as u64 + 1],
                "the CAS lock was ours"
            );
        }
    }
    // Exclusive locks guard another increment on rank 0.
    for _ in 0..rounds / 4 + 1 {
        let epoch = win.lock(0, LockKind::Exclusive)?;
        let v = value(epoch.get(0, excl, 1)?.wait()?)?[0];
        epoch.put(0, excl, &[v + 1])?;
        epoch.unlock()?;
    }
    ensure!(
        is_usage(win.end_lock(0), |u| matches!(u, UsageError::RmaSync(_))),
        "an unlock without a lock is RmaSync"
    );
    world.barrier()?;
    let per = (rounds / 4 + 1) as u64;
    if me == n - 1 {
        let g = win.local(|v| v[guarded])?;
        ensure!(
            g == per * n as u64,
            "CAS-locked counter {g}, want {}",
            per * n as u64
        );
    }
    if me == 0 {
        let (f, e) = win.local(|v| (v[fadd], v[excl]))?;
        ensure!(f == (rounds * n) as u64, "fetch-and-add counter {f}");
        ensure!(e == per * n as u64, "exclusive-locked counter {e}");
    }
    // Shared locks of one target by everyone at once, guards dropped.
    {
        let epoch = win.lock(0, LockKind::Shared)?;
        let mut r = epoch.get(0, acc, 1)?;
        ensure!(value(r.wait()?)? == [n as u64], "a get under a shared lock");
    }
    // Post/start/complete/wait on a ring: each rank exposes itself to its
    // left neighbour and accesses its right one, twice (test, then wait).
    let left = ((me + n - 1) % n) as Rank;
    for round in 0..2u64 {
        win.post(&[left])?;
        win.start(&[right as Rank])?;
        win.put(right as Rank, excl, &[1000 + me as u64 + round])?;
        let mut r = win.get(right as Rank, me * 4, 1)?;
        win.complete()?;
        ensure!(
            value(r.wait()?)? == [me as u64 * 1000],
            "a get in a start epoch"
        );
        if round == 0 {
            while !win.test()? {}
        } else {
            win.wait()?;
        }
        let v = win.local(|v| v[excl])?;
        ensure!(v == 1000 + left as u64 + round, "post/start put: {v}");
    }
    ensure!(
        is_usage(win.complete(), |u| matches!(u, UsageError::RmaSync(_))),
        "a complete without a start is RmaSync"
    );
    world.barrier()?;
    win.free()?;
    Ok(Verdict::Pass)
}
