//! Trees and the barrier: dissemination barrier, binomial and
//! scatter + allgather broadcast, binomial reduce.

use super::{need, region, source, split, whole, Me};
use crate::coll::schedule::{Builder, Region, INPUT, OUTPUT};
use crate::coll::tune::{BcastAlgo, CollTable};
use crate::error::Result;
use crate::reduction::Datatype;

/// Dissemination barrier (Hensgen, Finkel and Manber): ceil(log p) rounds;
/// in round k each rank signals `r + 2^k` and waits for `r - 2^k`.
pub(super) fn barrier(b: &mut Builder, me: Me) -> Result<()> {
    if me.n == 1 {
        return Ok(());
    }
    let (rx, tx) = (b.temp(0)?, b.temp(0)?);
    let mut k = 1;
    while k < me.n {
        b.recv((me.r + me.n - k) % me.n, Region::whole(rx, 0));
        b.send((me.r + k) % me.n, Region::whole(tx, 0));
        b.fence();
        k <<= 1;
    }
    Ok(())
}

pub(super) fn bcast(b: &mut Builder, me: Me, table: &CollTable, root: u32) -> Result<()> {
    if !b.has(OUTPUT) {
        return Err(crate::coll::schedule::length_error(
            "bcast needs its buffer",
        ));
    }
    let len = b.slot_len(OUTPUT);
    if me.n == 1 {
        return Ok(());
    }
    match table.bcast(len) {
        BcastAlgo::Binomial => binomial_bcast(b, me, root, Region::whole(OUTPUT, len)),
        BcastAlgo::ScatterAllgather => scatter_allgather(b, me, root, len),
    }
}

/// The parent of relative rank `rel` in a binomial tree, and the mask of
/// its lowest set bit (`n.next_power_of_two()` for the root).
pub(super) fn parent(rel: u32, n: u32) -> (Option<u32>, u32) {
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            return (Some(rel - mask), mask);
        }
        mask <<= 1;
    }
    (None, mask)
}

/// Binomial broadcast of `data` (MPICH's `MPIR_Bcast_intra_binomial`):
/// receive from the parent, then send to each child, largest subtree first.
pub(super) fn binomial_bcast(b: &mut Builder, me: Me, root: u32, data: Region) -> Result<()> {
    let rel = me.rel(root);
    let (up, mut mask) = parent(rel, me.n);
    if let Some(p) = up {
        b.recv(me.abs(p, root), data);
        b.fence();
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < me.n {
            b.send(me.abs(rel + mask, root), data);
        }
        mask >>= 1;
    }
    b.fence();
    Ok(())
}

/// Scatter + allgather broadcast (van de Geijn): the root's buffer is cut in
/// p segments, scattered down a binomial tree, then circulated round a ring,
/// so each byte crosses about twice instead of log p times.
fn scatter_allgather(b: &mut Builder, me: Me, root: u32, len: usize) -> Result<()> {
    let n = me.n;
    let segs = split(len, 1, n);
    let rel = me.rel(root);
    // Relative ranks rel..rel+size(rel) form my subtree; their segments are
    // contiguous in the buffer because segments are indexed relative too.
    let span = |from: u32, count: u32| -> Region {
        let last = (from + count).min(n) - 1;
        let start = segs[from as usize].0;
        let end = segs[last as usize].0 + segs[last as usize].1;
        Region::new(OUTPUT, start, end - start)
    };
    let (up, mut mask) = parent(rel, n);
    if let Some(p) = up {
        b.recv(me.abs(p, root), span(rel, mask));
        b.fence();
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < n {
            b.send(me.abs(rel + mask, root), span(rel + mask, mask));
        }
        mask >>= 1;
    }
    b.fence();
    // Ring allgather of the relative segments: the one received in a round
    // goes to the temporary (the buffer is lent to this round's send), and
    // into place after the fence.
    let max = segs.iter().map(|s| s.1).max().unwrap_or(0);
    let tmp = b.temp(max)?;
    let (left, right) = ((me.r + n - 1) % n, (me.r + 1) % n);
    for s in 0..n - 1 {
        let send = (rel + n - s) % n;
        let recv = (rel + n - s - 1) % n;
        let into = Region::whole(tmp, segs[recv as usize].1);
        b.recv(left, into);
        b.send(right, region(OUTPUT, segs[send as usize]));
        b.fence();
        b.copy(into, region(OUTPUT, segs[recv as usize]));
    }
    Ok(())
}

/// Binomial reduce (MPICH's `MPIR_Reduce_intra_binomial`). Children are
/// higher relative ranks, whose data comes after mine: with root 0 the
/// operands stay in rank order, so a non-commutative op reduces to rank 0
/// and rank 0 passes the result to the root.
/// Checks a reduce's buffers; the vector's length.
pub(super) fn check_reduce(b: &Builder, me: Me, root: u32, dtype: Datatype) -> Result<usize> {
    let at_root = me.r == root;
    let len = if at_root {
        b.slot_len(OUTPUT)
    } else {
        b.slot_len(INPUT)
    };
    if at_root {
        need(b, OUTPUT, len, "reduce: the root's output buffer")?;
        if b.has(INPUT) {
            need(
                b,
                INPUT,
                len,
                "reduce: send and receive buffers differ in size",
            )?;
        }
    } else {
        need(b, INPUT, len, "reduce: a non-root needs its input buffer")?;
    }
    whole(len, dtype)?;
    Ok(len)
}

pub(super) fn reduce(b: &mut Builder, me: Me, root: u32, dtype: Datatype) -> Result<()> {
    let at_root = me.r == root;
    let len = check_reduce(b, me, root, dtype)?;
    let commutative = b.op_commutative();
    let tree_root = if commutative { root } else { 0 };
    // The accumulator: the output at the tree's root if it is the root,
    // a temporary elsewhere (a non-root's input is never written).
    let acc = if me.r == tree_root && at_root {
        OUTPUT
    } else {
        b.temp(len)?
    };
    b.copy(Region::whole(source(b), len), Region::whole(acc, len));
    binomial_reduce(b, me, tree_root, Region::whole(acc, len))?;
    if tree_root != root {
        if me.r == tree_root {
            b.send(root, Region::whole(acc, len));
        } else if at_root {
            b.recv(tree_root, Region::whole(OUTPUT, len));
        }
        b.fence();
    }
    Ok(())
}

/// The tree part of a binomial reduce of `acc` towards `tree_root`: each
/// rank folds in its children's partial results (which come after its own
/// in relative rank order: the right operand), then sends to its parent.
pub(super) fn binomial_reduce(b: &mut Builder, me: Me, tree_root: u32, acc: Region) -> Result<()> {
    if me.n == 1 {
        return Ok(());
    }
    let tmp = Region::whole(b.temp(acc.len)?, acc.len);
    let rel = me.rel(tree_root);
    let mut mask = 1;
    while mask < me.n {
        if rel & mask == 0 {
            let child = rel | mask;
            if child < me.n {
                b.recv(me.abs(child, tree_root), tmp);
                b.fence();
                b.reduce(tmp, acc, false);
            }
        } else {
            b.send(me.abs(rel & !mask, tree_root), acc);
            b.fence();
            break;
        }
        mask <<= 1;
    }
    Ok(())
}
