//! Communicators: dup, idup, split (with UNDEFINED), split_type, create,
//! compare, hints; traffic on different communicators never matches;
//! context ids agreed under churn and across threads that each own a
//! communicator.

use ferry::{Comm, CommCompare, Op, Rank, SplitType, UNDEFINED};

use super::{Ctx, Failure, Outcome, Verdict};
use crate::ensure;

/// Every member must hold the same context id.
fn same_context_everywhere(c: &Comm) -> Result<(), Failure> {
    let mut ids = vec![0u32; c.size() as usize];
    c.allgather(&[c.context()], &mut ids)?;
    ensure!(
        ids.iter().all(|&i| i == ids[0]),
        "context ids differ: {ids:?}"
    );
    Ok(())
}

/// Same tag, same peers, two communicators: each receive gets its own
/// communicator's message, whatever the order they were sent in.
fn isolated(a: &Comm, b: &Comm) -> Result<(), Failure> {
    let n = a.size() as Rank;
    let (me, right, left) = (a.rank(), (a.rank() + 1) % n, (a.rank() + n - 1) % n);
    let ra = a.irecv(vec![0i32; 1], left, 3)?;
    let rb = b.irecv(vec![0i32; 1], ferry::ANY_SOURCE, ferry::ANY_TAG)?;
    b.send(&[me + 1000], right, 3)?;
    a.send(&[me], right, 3)?;
    let mut reqs = [ra, rb];
    let done = ferry::wait_all(&mut reqs)?;
    let mut it = done.into_iter();
    let ga: Vec<i32> = it
        .next()
        .map(|c| c.into_vec())
        .transpose()?
        .unwrap_or_default();
    let gb = it.next().map(|c| (c.status.source, c.into_vec::<i32>()));
    ensure!(ga == [left], "communicator a got {ga:?}");
    let (src, v) = gb.unwrap_or((-1, Ok(vec![])));
    ensure!(
        src == left && v? == [left + 1000],
        "communicator b: from {src}"
    );
    Ok(())
}

/// The whole communicator conformance body.
///
/// # Errors
/// The first failed check.
pub fn communicators(ctx: &Ctx) -> Outcome {
    let world = &ctx.comm;
    let (n, me) = (ctx.size, ctx.rank);
    let d = world.dup()?;
    ensure!(
        d.compare(world) == CommCompare::Congruent,
        "dup is congruent"
    );
    ensure!(
        d.compare(&d.clone()) == CommCompare::Ident,
        "a clone is the same communicator"
    );
    ensure!(d.context() != world.context(), "dup has its own context");
    same_context_everywhere(&d)?;
    isolated(world, &d)?;

    // idup
    let pending = world.idup()?;
    let i = pending.wait()?;
    same_context_everywhere(&i)?;
    ensure!(i.context() != d.context(), "idup and dup differ");
    isolated(&d, &i)?;

    // split: odd and even ranks, reversed by key; the last rank opts out
    let color = if me == n as Rank - 1 && n > 2 {
        UNDEFINED
    } else {
        me % 2
    };
    let s = world.split(color, -me)?;
    if color == UNDEFINED {
        ensure!(s.is_none(), "UNDEFINED gives no communicator");
    } else {
        let s = s.ok_or_else(|| Failure("split gave nothing".into()))?;
        let members: Vec<Rank> = (0..n as Rank)
            .filter(|&r| r % 2 == color && !(r == n as Rank - 1 && n > 2))
            .rev()
            .collect();
        ensure!(
            s.size() as usize == members.len(),
            "split size {}",
            s.size()
        );
        ensure!(s.job_rank(s.rank())? == me, "split rank maps back to me");
        ensure!(
            s.group().job_ranks() == members,
            "split order by key: {:?}",
            s.group().job_ranks()
        );
        same_context_everywhere(&s)?;
        let mut x = [1i64];
        s.allreduce_in_place(&mut x, &Op::sum())?;
        ensure!(x[0] == members.len() as i64, "allreduce on the split");
        let want = match members.len() as u32 {
            1 if n == 1 => CommCompare::Congruent,
            m if m == n => CommCompare::Similar,
            _ => CommCompare::Unequal,
        };
        ensure!(
            s.compare(world) == want,
            "compare split: {:?}",
            s.compare(world)
        );
    }

    // split_type(Shared): the ranks on this node
    let node = world
        .split_type(SplitType::Shared, 0)?
        .ok_or_else(|| Failure("split_type gave nothing".into()))?;
    same_context_everywhere(&node)?;
    let mut on_node = [1i64];
    node.allreduce_in_place(&mut on_node, &Op::sum())?;
    ensure!(on_node[0] == node.size() as i64, "node communicator");

    // create: everyone but rank 0
    let group = world.group().excl(&[0])?;
    let c = world.create(&group)?;
    ensure!(c.is_some() == (me != 0), "create membership");
    if let Some(c) = &c {
        ensure!(c.rank() == me - 1, "create rank");
        c.barrier()?;
    }

    // hints: inherited by dup, overridable
    let h = world.dup_with_hints(ferry::Hints {
        recv_may_be_empty: true,
    })?;
    ensure!(
        h.hints().recv_may_be_empty && h.dup()?.hints().recv_may_be_empty,
        "hints are inherited"
    );
    ensure!(!world.dup()?.hints().recv_may_be_empty, "hints default off");
    // Its effect: a receive that finds its message here returns
    // REQUEST_EMPTY on the hinted communicator only.
    let plain = world.dup()?;
    let (to, from) = ((me + 1) % n as Rank, (me + n as Rank - 1) % n as Rank);
    h.send(&[7u8], to, 9)?;
    plain.send(&[8u8], to, 9)?;
    for (c, byte, empty) in [(&h, 7u8, true), (&plain, 8u8, false)] {
        while c.iprobe(from, 9)?.is_none() {}
        let mut r = c.irecv(vec![0u8; 1], from, 9)?;
        ensure!(
            r.is_empty() == empty,
            "recv_may_be_empty={empty}: got EMPTY={}",
            r.is_empty()
        );
        let got: Vec<u8> = r.wait()?.into_vec()?;
        ensure!(got == [byte], "hinted receive data");
    }

    cartesian(world)?;
    neighborhoods(world)?;

    // 2000 communicators made and freed in sequence, 1000 more by four
    // threads at once (a quarter of that when the ranks oversubscribe
    // this 2-core machine, where every agreement waits for descheduled
    // ranks).
    let share = if ctx.size <= 4 { 1 } else { 4 };
    churn(world, 2000 * ctx.scale / share)?;
    threads(world, 4, 250 * ctx.scale / share)?;
    Ok(Verdict::Pass)
}

/// A 2-D grid of every rank (periodic in its last dimension), with and
/// without reorder: coordinates, a shift exchange that reaches the
/// neighbours the grid names, a row's subgrid and an allreduce on it.
fn cartesian(world: &Comm) -> Result<(), Failure> {
    let n = world.size() as i32;
    let mut dims = [0, 0];
    ferry::topology::dims_create(n, &mut dims)?;
    for reorder in [false, true] {
        let Some(grid) = world.cart(&dims, &[false, true], reorder)? else {
            return Err(Failure("every rank is in a grid of all of them".into()));
        };
        let me = grid.comm().rank();
        let at = grid.coords();
        ensure!(grid.rank_at(&at)? == me, "coordinates round-trip");
        let (src, dst) = grid.shift(1, 1)?;
        let mut got = [-1i32];
        let mut sent = grid.comm().isend(vec![me], dst, 3)?;
        grid.comm().recv(&mut got, src, 3)?;
        sent.wait()?;
        ensure!(
            got[0] == src,
            "the shift's source sent {} not {src}",
            got[0]
        );
        let row = grid.sub(&[false, true])?;
        ensure!(
            row.comm().size() as i32 == dims[1],
            "a row has dims[1] members"
        );
        ensure!(
            row.coords() == [at[1]],
            "a row member's place is its column"
        );
        let mut sum = [0i32];
        row.comm().allreduce(&[me], &mut sum, &ferry::Op::sum())?;
        let first = at[0] * dims[1];
        ensure!(
            sum[0] == (first..first + dims[1]).sum::<i32>(),
            "a row's ranks sum to {}",
            sum[0]
        );
    }
    Ok(())
}

/// The neighborhood collectives: on a grid periodic in one dimension
/// (blocks pair by direction; past the open edge nothing arrives), in
/// both forms, and on a distributed graph whose edges repeat (the `k`-th
/// message between two members lands in the `k`-th block).
fn neighborhoods(world: &Comm) -> Result<(), Failure> {
    use ferry::topology::Neighborhood;
    let n = world.size() as i32;
    let mut dims = [0, 0];
    ferry::topology::dims_create(n, &mut dims)?;
    let grid = world
        .cart(&dims, &[false, true], false)?
        .ok_or_else(|| Failure("every rank is in the grid".into()))?;
    let me = grid.comm().rank();
    let mut neighbors = Vec::new();
    for dim in 0..2 {
        let (src, dst) = grid.shift(dim, 1)?;
        neighbors.extend([src, dst]);
    }
    // Block j goes toward neighbor j: it arrives in that neighbor's block
    // j ^ 1, and the block from neighbor i is what i sent toward us.
    let send: Vec<i32> = (0..4).map(|j| me * 10 + j).collect();
    let want = |i: usize, unset: i32| match neighbors[i] {
        ferry::PROC_NULL => unset,
        s => s * 10 + (i as i32 ^ 1),
    };
    let mut recv = vec![-1; 4];
    grid.neighbor_alltoall(&send, &mut recv)?;
    ensure!(
        (0..4).all(|i| recv[i] == want(i, -1)),
        "grid alltoall at {me}: {recv:?}, neighbors {neighbors:?}"
    );
    let got: Vec<i32> = grid.ineighbor_alltoall(send.clone())?.wait()?.into_vec()?;
    ensure!(
        (0..4).all(|i| got[i] == want(i, 0)),
        "grid ialltoall at {me}: {got:?}"
    );
    let mut all = vec![-1; 8];
    grid.neighbor_allgather(&[me, -me], &mut all)?;
    for (i, &s) in neighbors.iter().enumerate() {
        let w = if s == ferry::PROC_NULL {
            [-1, -1]
        } else {
            [s, -s]
        };
        ensure!(
            all[2 * i..2 * i + 2] == w,
            "grid allgather at {me}: {all:?}"
        );
    }

    // Twice to the right and once to itself; blocks of 1, 2 and 3.
    let size = world.size() as Rank;
    let (right, left) = ((me + 1) % size, (me + size - 1) % size);
    let graph = world.dist_graph_adjacent(&[left, left, me], &[right, right, me])?;
    let data = [me, me + 100, me + 100, me + 200, me + 200, me + 200];
    let mut recv = vec![-1; 6];
    graph.neighbor_alltoallv(
        (&data, &[1, 2, 3], &[0, 1, 3]),
        (&mut recv, &[1, 2, 3], &[0, 1, 3]),
    )?;
    let want = [left, left + 100, left + 100, me + 200, me + 200, me + 200];
    ensure!(recv == want, "graph alltoallv at {me}: {recv:?}");
    let got: Vec<i32> = graph.ineighbor_allgather(vec![me])?.wait()?.into_vec()?;
    ensure!(got == [left, left, me], "graph iallgather at {me}: {got:?}");
    ensure!(
        world.dist_graph_adjacent(&[size], &[]).is_err(),
        "a neighbor outside the communicator is refused"
    );
    Ok(())
}

/// Many dups and splits, with traffic on each, freed and reused.
fn churn(world: &Comm, rounds: usize) -> Result<(), Failure> {
    let me = world.rank();
    let keep = world.dup()?;
    for i in 0..rounds {
        let c = if i % 3 == 0 {
            world
                .split(me % 2, me)?
                .ok_or_else(|| Failure("split".into()))?
        } else {
            keep.dup()?
        };
        if i % 50 == 0 {
            same_context_everywhere(&c)?;
        }
        let mut x = [i as i64];
        c.allreduce_in_place(&mut x, &Op::sum())?;
        ensure!(
            x[0] == i as i64 * c.size() as i64,
            "traffic on communicator {i}"
        );
    }
    Ok(())
}

/// Threads that each own a communicator and make new ones from it, at
/// the same time (the context agreement's thread rule).
fn threads(world: &Comm, count: usize, rounds: usize) -> Result<(), Failure> {
    let own: Vec<Comm> = (0..count)
        .map(|_| world.dup())
        .collect::<ferry::Result<_>>()?;
    let results: Vec<Result<(), Failure>> = std::thread::scope(|s| {
        let handles: Vec<_> = own
            .iter()
            .enumerate()
            .map(|(t, c)| {
                s.spawn(move || -> Result<(), Failure> {
                    for i in 0..rounds {
                        let d = c.dup()?;
                        let mut x = [(t * 1000 + i) as i64];
                        d.allreduce_in_place(&mut x, &Op::sum())?;
                        ensure!(
                            x[0] == (t * 1000 + i) as i64 * d.size() as i64,
                            "thread {t} round {i}"
                        );
                    }
                    same_context_everywhere(c)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Failure("thread panicked".into())))
            })
            .collect()
    });
    results.into_iter().collect()
}
