//! Collectives, every operation in every form (blocking, nonblocking,
//! persistent, in place), against results computed locally; many
//! outstanding at once, mixed with point-to-point requests in `wait_any`,
//! `test_some` and `get_status_some`. Works on any number of ranks.

use ferry::{Comm, Op, Rank, Request, TwoInt};

use super::{Ctx, Failure, Outcome, Verdict};
use crate::ensure;

/// Rank `r`'s contribution: `len` values that differ by rank, call and
/// position.
fn data(r: Rank, len: usize, salt: i64) -> Vec<i64> {
    (0..len as i64)
        .map(|i| i * 7 + r as i64 * 1_000_003 + salt * 31 + 1)
        .collect()
}

fn sum_upto(upto: u32, len: usize, salt: i64) -> Vec<i64> {
    let mut acc = vec![0i64; len];
    for r in 0..upto as Rank {
        for (a, x) in acc.iter_mut().zip(data(r, len, salt)) {
            *a = a.wrapping_add(x);
        }
    }
    acc
}

/// Affine maps `x → a·x + b` composed left to right: associative and not
/// commutative, so any reordering of operands shows.
fn affine() -> Op<[i64; 2]> {
    Op::user(
        |input: &[[i64; 2]], inout: &mut [[i64; 2]]| {
            for (i, o) in input.iter().zip(inout.iter_mut()) {
                *o = [
                    i[0].wrapping_mul(o[0]),
                    i[1].wrapping_mul(o[0]).wrapping_add(o[1]),
                ];
            }
        },
        false,
    )
}

fn affine_data(r: Rank, len: usize) -> Vec<[i64; 2]> {
    (0..len as i64)
        .map(|i| [r as i64 + 2 + i, i - r as i64])
        .collect()
}

fn affine_upto(upto: u32, len: usize) -> Vec<[i64; 2]> {
    let mut acc = affine_data(0, len);
    for r in 1..upto as Rank {
        for (a, x) in acc.iter_mut().zip(affine_data(r, len)) {
            *a = [
                a[0].wrapping_mul(x[0]),
                a[1].wrapping_mul(x[0]).wrapping_add(x[1]),
            ];
        }
    }
    acc
}

fn blocking(c: &Comm, sizes: &[usize]) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let nu = n as usize;
    c.barrier()?;
    for &len in sizes {
        for root in 0..n as Rank {
            let mut buf = if me == root {
                data(root, len, 1)
            } else {
                vec![0; len]
            };
            c.bcast(&mut buf, root)?;
            ensure!(buf == data(root, len, 1), "bcast of {len} from {root}");

            let mut out = vec![0i64; len];
            let recv = (me == root).then_some(&mut out[..]);
            c.reduce(&data(me, len, 2), recv, &Op::sum(), root)?;
            if me == root {
                ensure!(out == sum_upto(n, len, 2), "reduce of {len} to {root}");
                let mut own = data(me, len, 3);
                c.reduce_in_place(&mut own, &Op::sum(), root)?;
                ensure!(own == sum_upto(n, len, 3), "reduce in place to {root}");
            } else {
                c.reduce(&data(me, len, 3), None, &Op::sum(), root)?;
            }

            let all: Vec<i64> = (0..n as Rank).flat_map(|r| data(r, len, 4)).collect();
            let mut g = vec![0i64; len * nu];
            c.gather(&data(me, len, 4), (me == root).then_some(&mut g[..]), root)?;
            if me == root {
                ensure!(g == all, "gather of {len} to {root}");
            }
            let mut s = vec![0i64; len];
            c.scatter((me == root).then_some(&all[..]), &mut s, root)?;
            ensure!(s == data(me, len, 4), "scatter of {len} from {root}");
            // MPI_IN_PLACE at the root: its block already sits in (gather)
            // or stays in (scatter) the full buffer.
            if me == root {
                let mut gi = vec![0i64; len * nu];
                gi[me as usize * len..][..len].copy_from_slice(&data(me, len, 4));
                c.gather_in_place(&mut gi, root)?;
                ensure!(gi == all, "gather in place of {len} to {root}");
                c.scatter_in_place(&all, root)?;
            } else {
                c.gather(&data(me, len, 4), None, root)?;
                let mut si = vec![0i64; len];
                c.scatter(None, &mut si, root)?;
                ensure!(
                    si == data(me, len, 4),
                    "scatter in place of {len} from {root}"
                );
            }
        }
        let mut out = vec![0i64; len];
        c.allreduce(&data(me, len, 5), &mut out, &Op::sum())?;
        ensure!(out == sum_upto(n, len, 5), "allreduce of {len}");
        let mut inplace = data(me, len, 6);
        c.allreduce_in_place(&mut inplace, &Op::sum())?;
        ensure!(
            inplace == sum_upto(n, len, 6),
            "allreduce in place of {len}"
        );

        let all: Vec<i64> = (0..n as Rank).flat_map(|r| data(r, len, 7)).collect();
        let mut ag = vec![0i64; len * nu];
        c.allgather(&data(me, len, 7), &mut ag)?;
        ensure!(ag == all, "allgather of {len}");
        let mut agi = vec![0i64; len * nu];
        agi[me as usize * len..][..len].copy_from_slice(&data(me, len, 7));
        c.allgather_in_place(&mut agi)?;
        ensure!(agi == all, "allgather in place of {len}");

        // alltoall: my block for d is data(me * 1000 + d)
        let send: Vec<i64> = (0..n as Rank)
            .flat_map(|d| data(me * 1000 + d, len, 8))
            .collect();
        let want: Vec<i64> = (0..n as Rank)
            .flat_map(|s| data(s * 1000 + me, len, 8))
            .collect();
        let mut got = vec![0i64; len * nu];
        c.alltoall(&send, &mut got)?;
        ensure!(got == want, "alltoall of {len}");
        let mut inplace = send.clone();
        c.alltoall_in_place(&mut inplace)?;
        ensure!(inplace == want, "alltoall in place of {len}");

        let mut rs = vec![0i64; len];
        c.reduce_scatter_block(&data(me, len * nu, 9), &mut rs, &Op::sum())?;
        let full = sum_upto(n, len * nu, 9);
        ensure!(
            rs[..] == full[me as usize * len..][..len],
            "reduce_scatter_block of {len}"
        );
        let mut sc = vec![0i64; len];
        c.scan(&data(me, len, 10), &mut sc, &Op::sum())?;
        ensure!(sc == sum_upto(me as u32 + 1, len, 10), "scan of {len}");
        let mut ex = vec![-1i64; len];
        c.exscan(&data(me, len, 11), &mut ex, &Op::sum())?;
        let want = if me == 0 {
            vec![-1; len]
        } else {
            sum_upto(me as u32, len, 11)
        };
        ensure!(ex == want, "exscan of {len}");
    }
    vector_variants(c)?;
    other_ops(c)
}

fn vector_variants(c: &Comm) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let counts: Vec<usize> = (0..n as usize).map(|r| r % 3 + 1).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c + 1;
            Some(d)
        })
        .collect();
    let span = displs.last().unwrap_or(&0) + counts.last().unwrap_or(&0);
    let mine = data(me, counts[me as usize], 12);
    let root = (n / 2) as Rank;
    let mut g = vec![0i64; span];
    let recv = (me == root).then_some((&mut g[..], &counts[..], &displs[..]));
    c.gatherv(&mine, recv, root)?;
    if me == root {
        for r in 0..n as usize {
            ensure!(
                g[displs[r]..][..counts[r]] == data(r as Rank, counts[r], 12)[..],
                "gatherv block {r}"
            );
        }
    }
    let mut s = vec![0i64; counts[me as usize]];
    let send = (me == root).then_some((&g[..], &counts[..], &displs[..]));
    c.scatterv(send, &mut s, root)?;
    // The root scatters back what it gathered.
    ensure!(s == mine, "scatterv");
    let mut ag = vec![0i64; span];
    c.allgatherv(&mine, &mut ag, &counts, &displs)?;
    for r in 0..n as usize {
        ensure!(
            ag[displs[r]..][..counts[r]] == data(r as Rank, counts[r], 12)[..],
            "allgatherv block {r}"
        );
    }
    // alltoallv: (s + d) % 3 elements from s to d
    let cnt = |s: u32, d: u32| ((s + d) % 3) as usize;
    let sc: Vec<usize> = (0..n).map(|d| cnt(me as u32, d)).collect();
    let rc: Vec<usize> = (0..n).map(|s| cnt(s, me as u32)).collect();
    let sd: Vec<usize> = sc
        .iter()
        .scan(0, |a, &c| {
            let d = *a;
            *a += c;
            Some(d)
        })
        .collect();
    let rd: Vec<usize> = rc
        .iter()
        .scan(0, |a, &c| {
            let d = *a;
            *a += c;
            Some(d)
        })
        .collect();
    let send: Vec<i64> = (0..n)
        .flat_map(|d| data(me * 1000 + d as Rank, cnt(me as u32, d), 13))
        .collect();
    let mut recv = vec![0i64; rc.iter().sum()];
    c.alltoallv((&send, &sc, &sd), (&mut recv, &rc, &rd))?;
    let want: Vec<i64> = (0..n)
        .flat_map(|s| data(s as Rank * 1000 + me, cnt(s, me as u32), 13))
        .collect();
    ensure!(recv == want, "alltoallv");
    let mut rs = vec![0i64; counts[me as usize]];
    let total: usize = counts.iter().sum();
    c.reduce_scatter(&data(me, total, 14), &mut rs, &counts, &Op::sum())?;
    let full = sum_upto(n, total, 14);
    let at: usize = counts[..me as usize].iter().sum();
    ensure!(
        rs[..] == full[at..][..counts[me as usize]],
        "reduce_scatter"
    );
    Ok(())
}

fn other_ops(c: &Comm) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let mut x = [me as f64 + 0.5, -(me as f64)];
    c.allreduce_in_place(&mut x, &Op::max())?;
    ensure!(x == [n as f64 - 0.5, 0.0], "max of f64: {x:?}");
    let mut bits = [1u64 << me.min(63)];
    c.allreduce_in_place(&mut bits, &Op::bor())?;
    let want = (0..n.min(64)).fold(0u64, |a, r| a | 1 << r);
    ensure!(bits[0] == want, "bor: {:#x}", bits[0]);
    let mut land = [i32::from(me != 1)];
    c.allreduce_in_place(&mut land, &Op::land())?;
    ensure!(land[0] == i32::from(n < 2), "land");
    let mut loc = [TwoInt::new((me - 1).abs(), me)];
    c.allreduce_in_place(&mut loc, &Op::min_loc())?;
    let want = if n >= 2 { (0, 1) } else { (1, 0) };
    ensure!(
        (loc[0].value, loc[0].index) == want,
        "min_loc: {:?}",
        loc[0]
    );
    for len in [1, 5] {
        let mut a = affine_data(me, len);
        c.allreduce_in_place(&mut a, &affine())?;
        ensure!(
            a == affine_upto(n, len),
            "non-commutative allreduce of {len}"
        );
        let mut s = vec![[0i64; 2]; len];
        c.scan(&affine_data(me, len), &mut s, &affine())?;
        ensure!(s == affine_upto(me as u32 + 1, len), "non-commutative scan");
        let root = (n - 1) as Rank;
        let mut out = vec![[0i64; 2]; len];
        c.reduce(
            &affine_data(me, len),
            (me == root).then_some(&mut out[..]),
            &affine(),
            root,
        )?;
        if me == root {
            ensure!(
                out == affine_upto(n, len),
                "non-commutative reduce to {root}"
            );
        }
    }
    Ok(())
}

/// Many nonblocking collectives and point-to-point requests in flight at
/// once, completed through `get_status_some`, `test_some` and `wait_any`.
fn nonblocking_mixed(c: &Comm, len: usize) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let nu = n as usize;
    let right = (me + 1) % n as Rank;
    let left = (me + n as Rank - 1) % n as Rank;
    let mut reqs: Vec<Request> = vec![
        c.irecv(vec![0i64; len], left, 5)?,
        c.iallreduce(data(me, len, 20), &Op::sum())?,
        c.ibcast(
            if me == 0 {
                data(0, len, 21)
            } else {
                vec![0; len]
            },
            0,
        )?,
        c.iallgather(data(me, len, 22))?,
        c.ibarrier()?,
        c.ialltoall(
            (0..n as Rank)
                .flat_map(|d| data(me * 1000 + d, len, 23))
                .collect(),
        )?,
        c.iallreduce(data(me, len, 24), &Op::sum())?,
        c.iscan(data(me, len, 25), &Op::sum())?,
        c.ireduce(data(me, len, 26), &Op::sum(), n as Rank - 1)?,
        c.igather(data(me, len, 27), 0)?,
        c.isend(data(me * 7, len, 5), right, 5)?,
    ];
    let mut results: Vec<Option<Vec<i64>>> = vec![None; reqs.len()];
    // get_status_some reports without completing; then test_some and
    // wait_any complete the rest.
    if let ferry::Outcome::Completed(done) = ferry::get_status_some(&reqs)? {
        for (i, status) in done {
            ensure!(status.error.is_none(), "request {i}: {:?}", status.error);
            ensure!(!reqs[i].is_null(), "get_status_some completed request {i}");
        }
    }
    if let ferry::Outcome::Completed(done) = ferry::test_some(&mut reqs)? {
        for (i, comp) in done {
            results[i] = Some(comp.into_vec().unwrap_or_default());
        }
    }
    while let ferry::Outcome::Completed((i, comp)) = ferry::wait_any(&mut reqs)? {
        ensure!(
            comp.status.error.is_none(),
            "request {i}: {:?}",
            comp.status.error
        );
        results[i] = Some(comp.into_vec().unwrap_or_default());
    }
    let get = |i: usize| results[i].clone().unwrap_or_default();
    ensure!(get(0) == data(left * 7, len, 5), "ring receive");
    ensure!(get(1) == sum_upto(n, len, 20), "iallreduce");
    ensure!(get(2) == data(0, len, 21), "ibcast");
    ensure!(
        get(3)
            == (0..n as Rank)
                .flat_map(|r| data(r, len, 22))
                .collect::<Vec<_>>(),
        "iallgather"
    );
    ensure!(
        get(5)
            == (0..n as Rank)
                .flat_map(|s| data(s * 1000 + me, len, 23))
                .collect::<Vec<_>>(),
        "ialltoall"
    );
    ensure!(get(6) == sum_upto(n, len, 24), "second iallreduce");
    ensure!(get(7) == sum_upto(me as u32 + 1, len, 25), "iscan");
    if me == n as Rank - 1 {
        ensure!(get(8) == sum_upto(n, len, 26), "ireduce at the root");
    } else {
        ensure!(
            get(8) == data(me, len, 26),
            "ireduce gives a non-root its vector back"
        );
    }
    if me == 0 {
        ensure!(get(9).len() == len * nu, "igather at the root");
        ensure!(
            get(9)
                == (0..n as Rank)
                    .flat_map(|r| data(r, len, 27))
                    .collect::<Vec<_>>(),
            "igather"
        );
    }
    Ok(())
}

fn persistent(c: &Comm, len: usize) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let mut ar = c.allreduce_init(vec![0i64; len], &Op::sum())?;
    let mut bar = c.barrier_init()?;
    let mut bc = c.bcast_init(vec![0i64; len], 0)?;
    for round in 0..5 {
        ar.with_buf_mut(|b: &mut [i64]| b.copy_from_slice(&data(me, len, round)))?;
        if me == 0 {
            bc.with_buf_mut(|b: &mut [i64]| b.copy_from_slice(&data(0, len, 100 + round)))?;
        }
        let mut all = [ar, bar, bc];
        ferry::start_all(&mut all)?;
        let done = ferry::wait_all(&mut all)?;
        for d in &done {
            ensure!(
                d.status.error.is_none(),
                "persistent round {round}: {:?}",
                d.status.error
            );
        }
        [ar, bar, bc] = all;
        ensure!(
            !ar.is_null() && !bar.is_null(),
            "persistent requests stay valid"
        );
        let got = ar.with_buf(|b: &[i64]| b.to_vec())?;
        ensure!(
            got == sum_upto(n, len, round),
            "persistent allreduce round {round}"
        );
        let got = bc.with_buf(|b: &[i64]| b.to_vec())?;
        ensure!(
            got == data(0, len, 100 + round),
            "persistent bcast round {round}"
        );
    }
    Ok(())
}

/// A typed error for members that disagree on a call.
fn disagreed<T>(r: &ferry::Result<T>) -> bool {
    use ferry_core::UsageError::{CollectiveMismatch, LengthMismatch};
    matches!(
        r,
        Err(ferry::Error::Usage(
            CollectiveMismatch { .. } | LengthMismatch(_)
        ))
    )
}

/// Members that disagree on a call's count or root: every member still
/// waiting in the call gets a typed error, none hangs, and nothing is
/// written from a disagreeing member's message. A member that finished its
/// part before anyone could tell (a broadcast's root) may complete.
fn mismatch(ctx: &Ctx) -> Result<(), Failure> {
    let (c, me, n) = (&ctx.comm, ctx.rank, ctx.size);
    if n < 2 {
        return Ok(());
    }
    let last = (n - 1) as Rank;
    // A broadcast whose root sends 8 elements to members expecting 16.
    let d = c.dup()?;
    let mut buf = if me == 0 {
        data(0, 8, 0)
    } else {
        vec![-1i64; 16]
    };
    let r = d.bcast(&mut buf, 0);
    if me == 0 {
        ensure!(r.is_ok() || disagreed(&r), "bcast root: {r:?}");
    } else {
        ensure!(disagreed(&r), "bcast, counts differ: {r:?}");
        ensure!(
            buf.iter().all(|&x| x == -1),
            "nothing is written from a message of another length"
        );
    }
    drop(d);
    c.barrier()?;
    // An allreduce where the last member's count differs: nobody can
    // finish, so every member fails.
    let d = c.dup()?;
    let len = if me == last { 2 } else { 1 };
    let mut out = vec![-1i64; len];
    let r = d.allreduce(&vec![1i64; len], &mut out, &Op::sum());
    ensure!(disagreed(&r), "allreduce, counts differ: {r:?}");
    drop(d);
    c.barrier()?;
    // A broadcast where the last member names another root: it waits for
    // a forward from rank 1 that never comes, and must not hang.
    if n >= 3 {
        let d = c.dup()?;
        let root = if me == last { 1 } else { 0 };
        let mut buf = if me == 0 { data(0, 4, 0) } else { vec![0; 4] };
        let r = d.bcast(&mut buf, root);
        if me == last {
            ensure!(disagreed(&r), "bcast, roots differ: {r:?}");
        } else {
            ensure!(r.is_ok() || disagreed(&r), "bcast, roots differ: {r:?}");
        }
        drop(d);
        c.barrier()?;
    }
    // The communicator still works.
    let mut sum = [0i64];
    c.allreduce(&[1i64], &mut sum, &Op::sum())?;
    ensure!(sum[0] == i64::from(n), "allreduce after the mismatches");
    Ok(())
}

/// The other persistent forms, run twice each, and `iscatterv`.
fn persistent_more(c: &Comm, len: usize) -> Result<(), Failure> {
    let (n, me) = (c.size(), c.rank());
    let nu = n as usize;
    let root = (n - 1) as Rank;
    let all: Vec<i64> = (0..n as Rank).flat_map(|r| data(r, len, 40)).collect();
    let mine = |salt| data(me, len, salt);
    let mut g = if me == root {
        let mut v = vec![0i64; len * nu];
        v[me as usize * len..][..len].copy_from_slice(&mine(40));
        c.gather_init(v, root)?
    } else {
        c.gather_init(mine(40), root)?
    };
    let mut sc = c.scatter_init(
        if me == root {
            all.clone()
        } else {
            vec![0; len]
        },
        root,
    )?;
    let mut rs = c.reduce_scatter_block_init(data(me, len * nu, 41), &Op::sum())?;
    let mut ex = c.exscan_init(mine(42), &Op::sum())?;
    for round in 0..2 {
        rs.with_buf_mut(|b: &mut [i64]| b.copy_from_slice(&data(me, len * nu, 41)))?;
        ex.with_buf_mut(|b: &mut [i64]| b.copy_from_slice(&mine(42)))?;
        let mut reqs = [g, sc, rs, ex];
        ferry::start_all(&mut reqs)?;
        for d in ferry::wait_all(&mut reqs)? {
            ensure!(
                d.status.error.is_none(),
                "persistent round {round}: {:?}",
                d.status.error
            );
        }
        [g, sc, rs, ex] = reqs;
        if me == root {
            ensure!(
                g.with_buf(|b: &[i64]| b.to_vec())? == all,
                "gather_init round {round}"
            );
        }
        let want = if me == root { all.clone() } else { mine(40) };
        ensure!(
            sc.with_buf(|b: &[i64]| b.to_vec())? == want,
            "scatter_init round {round}"
        );
        let full = sum_upto(n, len * nu, 41);
        let got = rs.with_buf(|b: &[i64]| b[..len].to_vec())?;
        ensure!(
            got[..] == full[me as usize * len..][..len],
            "reduce_scatter_block_init round {round}"
        );
        let want = if me == 0 {
            mine(42)
        } else {
            sum_upto(me as u32, len, 42)
        };
        ensure!(
            ex.with_buf(|b: &[i64]| b.to_vec())? == want,
            "exscan_init round {round}"
        );
    }
    let counts: Vec<usize> = (0..nu).map(|r| r % 3 + 1).collect();
    let packed: Vec<i64> = (0..n as Rank)
        .flat_map(|r| data(r, counts[r as usize], 43))
        .collect();
    let mut r = c.iscatterv(
        (me == root).then_some(packed),
        &counts,
        counts[me as usize],
        root,
    )?;
    let got: Vec<i64> = r.wait()?.into_vec()?;
    ensure!(got == data(me, counts[me as usize], 43), "iscatterv");
    Ok(())
}

/// The whole collective conformance body.
///
/// # Errors
/// The first failed check.
pub fn collectives(ctx: &Ctx) -> Outcome {
    let c = &ctx.comm;
    // 1 element; a few hundred (eager); 32 Ki elements = 256 KiB
    // (rendezvous on every device).
    blocking(c, &[1, 300, 32 << 10])?;
    for len in [1, 300, 32 << 10] {
        nonblocking_mixed(c, len)?;
        persistent(c, len)?;
        persistent_more(c, len)?;
    }
    mismatch(ctx)?;
    // Empty request: a communicator of one completes inside the call.
    let me_only = ctx.world.self_comm();
    let r = me_only.iallreduce(vec![1i64, 2], &Op::sum())?;
    ensure!(
        r.is_empty(),
        "a collective on a communicator of one returns REQUEST_EMPTY"
    );
    let mut r = r;
    ensure!(
        r.wait()?.into_vec::<i64>()? == vec![1, 2],
        "EMPTY hands the result back"
    );
    Ok(Verdict::Pass)
}
