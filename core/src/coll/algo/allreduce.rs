//! Allreduce (recursive doubling, Rabenseifner, ring) and reduce-scatter.
//!
//! Sizes that are not a power of two fold first (MPICH's scheme): of the
//! first `2 × rem` ranks, each even one hands its vector to the odd one
//! above it and sits out; the `pof2` ranks left run the power-of-two
//! algorithm under new ranks; the odd ones hand the result back at the end.
//! Folding pairs neighbours, so operands stay in rank order and recursive
//! doubling remains correct for a non-commutative op.

use super::{need, region, source, split, whole, Me};
use crate::coll::schedule::{Builder, Region, SlotId, INPUT, OUTPUT};
use crate::coll::tune::{prev_pof2, AllreduceAlgo, CollTable};
use crate::coll::Counts;
use crate::error::Result;
use crate::reduction::{Datatype, ReduceOp};

pub(super) fn allreduce(
    b: &mut Builder,
    me: Me,
    table: &CollTable,
    op: &ReduceOp,
    dtype: Datatype,
) -> Result<()> {
    let len = check(b, dtype)?;
    let elems = len / dtype.size().max(1);
    if b.has(INPUT) {
        b.copy(Region::whole(INPUT, len), Region::whole(OUTPUT, len));
    }
    if me.n == 1 {
        return Ok(());
    }
    let out = Region::whole(OUTPUT, len);
    match table.allreduce(len, elems, op.is_commutative()) {
        AllreduceAlgo::RecursiveDoubling => recursive_doubling(b, me, out),
        AllreduceAlgo::Rabenseifner => rabenseifner(b, me, out, dtype.size()),
        AllreduceAlgo::Ring => ring(b, me, out, dtype.size()),
    }
}

/// Allreduce of `data` in place among `me`'s team (the heads of a
/// hierarchical allreduce), by the table's usual choice for its size.
pub(super) fn over_region(b: &mut Builder, me: Me, data: Region, dtype: Datatype) -> Result<()> {
    if me.n == 1 {
        return Ok(());
    }
    let elems = data.len / dtype.size().max(1);
    let pof2 = prev_pof2(me.n) as usize;
    if data.len > 2048
        && elems >= pof2.max(me.n as usize)
        && data.slot == OUTPUT
        && data.offset == 0
    {
        rabenseifner(b, me, data, dtype.size())
    } else {
        recursive_doubling(b, me, data)
    }
}

/// Checks an allreduce's buffers; the vector's length.
pub(super) fn check(b: &Builder, dtype: Datatype) -> Result<usize> {
    super::same_size(
        b,
        dtype,
        "allreduce: the output is missing or the input differs in size",
    )
}

/// The real rank of folded rank `new`.
fn real(new: u32, rem: u32) -> u32 {
    if new < rem {
        new * 2 + 1
    } else {
        new + rem
    }
}

/// The fold-in step; my new rank, or `None` if I sit out.
fn fold_in(b: &mut Builder, me: Me, rem: u32, data: Region, tmp: Region) -> Option<u32> {
    if me.r >= 2 * rem {
        return Some(me.r - rem);
    }
    if me.r % 2 == 0 {
        b.send(me.r + 1, data);
        b.fence();
        None
    } else {
        b.recv(me.r - 1, tmp);
        b.fence();
        b.reduce(tmp, data, true);
        Some(me.r / 2)
    }
}

fn fold_out(b: &mut Builder, me: Me, rem: u32, data: Region) {
    if me.r < 2 * rem {
        if me.r % 2 == 1 {
            b.send(me.r - 1, data);
        } else {
            b.recv(me.r + 1, data);
        }
        b.fence();
    }
}

/// log p exchanges of the whole vector; the partner's data is the left
/// operand when the partner is the lower rank.
fn recursive_doubling(b: &mut Builder, me: Me, out: Region) -> Result<()> {
    let pof2 = prev_pof2(me.n);
    let rem = me.n - pof2;
    let tmp = Region::whole(b.temp(out.len)?, out.len);
    if let Some(new) = fold_in(b, me, rem, out, tmp) {
        let mut mask = 1;
        while mask < pof2 {
            let dst = real(new ^ mask, rem);
            b.recv(dst, tmp);
            b.send(dst, out);
            b.fence();
            b.reduce(tmp, out, dst < me.r);
            mask <<= 1;
        }
    }
    fold_out(b, me, rem, out);
    Ok(())
}

/// Rabenseifner: recursive-halving reduce-scatter, then
/// recursive-doubling allgather (MPICH's `MPIR_Allreduce_intra_reduce_scatter_allgather`).
fn rabenseifner(b: &mut Builder, me: Me, out: Region, elem: usize) -> Result<()> {
    let pof2 = prev_pof2(me.n);
    let rem = me.n - pof2;
    let tmp_slot = b.temp(out.len)?;
    let Some(new) = fold_in(b, me, rem, out, Region::whole(tmp_slot, out.len)) else {
        fold_out(b, me, rem, out);
        return Ok(());
    };
    let segs = split(out.len, elem, pof2);
    let span = |from: u32, to: u32| -> (usize, usize) {
        let start = segs[from as usize].0;
        let end = if to == 0 {
            start
        } else {
            segs[to as usize - 1].0 + segs[to as usize - 1].1
        };
        (start, end.saturating_sub(start))
    };
    let (mut send_idx, mut recv_idx, mut last_idx) = (0u32, 0u32, pof2);
    let mut mask = 1;
    while mask < pof2 {
        let newdst = new ^ mask;
        let dst = real(newdst, rem);
        let (s, r) = if new < newdst {
            send_idx = recv_idx + pof2 / (mask * 2);
            (span(send_idx, last_idx), span(recv_idx, send_idx))
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            (span(send_idx, recv_idx), span(recv_idx, last_idx))
        };
        exchange(b, dst, region(OUTPUT, s), region(tmp_slot, r));
        b.reduce(region(tmp_slot, r), region(OUTPUT, r), dst < me.r);
        send_idx = recv_idx;
        mask <<= 1;
        if mask < pof2 {
            last_idx = recv_idx + pof2 / mask;
        }
    }
    mask >>= 1;
    while mask > 0 {
        let newdst = new ^ mask;
        let dst = real(newdst, rem);
        let (s, r) = if new < newdst {
            if mask != pof2 / 2 {
                last_idx += pof2 / (mask * 2);
            }
            recv_idx = send_idx + pof2 / (mask * 2);
            (span(send_idx, recv_idx), span(recv_idx, last_idx))
        } else {
            recv_idx = send_idx - pof2 / (mask * 2);
            (span(send_idx, last_idx), span(recv_idx, send_idx))
        };
        exchange(b, dst, region(OUTPUT, s), region(tmp_slot, r));
        b.copy(region(tmp_slot, r), region(OUTPUT, r));
        if new > newdst {
            send_idx = recv_idx;
        }
        mask >>= 1;
    }
    fold_out(b, me, rem, out);
    Ok(())
}

/// One round: receive `into` from `peer` while sending `data` to it.
fn exchange(b: &mut Builder, peer: u32, data: Region, into: Region) {
    b.recv(peer, into);
    b.send(peer, data);
    b.fence();
}

/// Ring reduce-scatter of `acc` (segments `segs`): after it, rank r holds
/// the reduced segment `r + 1 - shift`.
fn ring_reduce_scatter(
    b: &mut Builder,
    me: Me,
    acc: SlotId,
    tmp: SlotId,
    segs: &[(usize, usize)],
    shift: u32,
) {
    let n = me.n;
    let (left, right) = ((me.r + n - 1) % n, (me.r + 1) % n);
    for s in 0..n - 1 {
        let send = ((me.r + 2 * n - s - shift) % n) as usize;
        let recv = ((me.r + 2 * n - s - shift - 1) % n) as usize;
        let into = Region::whole(tmp, segs[recv].1);
        b.recv(left, into);
        b.send(right, region(acc, segs[send]));
        b.fence();
        b.reduce(into, region(acc, segs[recv]), true);
    }
}

/// Ring allreduce: ring reduce-scatter, then ring allgather.
fn ring(b: &mut Builder, me: Me, out: Region, elem: usize) -> Result<()> {
    let n = me.n;
    let segs = split(out.len, elem, n);
    let tmp = b.temp(segs[0].1)?;
    ring_reduce_scatter(b, me, OUTPUT, tmp, &segs, 0);
    let (left, right) = ((me.r + n - 1) % n, (me.r + 1) % n);
    for s in 0..n - 1 {
        let send = ((me.r + 1 + n - s) % n) as usize;
        let recv = ((me.r + n - s) % n) as usize;
        let into = Region::whole(tmp, segs[recv].1);
        b.recv(left, into);
        b.send(right, region(OUTPUT, segs[send]));
        b.fence();
        b.copy(into, region(OUTPUT, segs[recv]));
    }
    Ok(())
}

/// Reduce-scatter (`counts`) or reduce-scatter-block (`None`). A
/// commutative op runs the ring on a working copy; a non-commutative one
/// reduces to rank 0 in rank order and scatters from there.
pub(super) fn reduce_scatter(
    b: &mut Builder,
    me: Me,
    counts: Option<Vec<usize>>,
    op: &ReduceOp,
    dtype: Datatype,
) -> Result<()> {
    let src = source(b);
    let total = b.slot_len(src);
    let counts = match counts {
        Some(c) => c,
        None => {
            let block = if b.has(INPUT) {
                b.slot_len(OUTPUT)
            } else {
                total / me.n as usize
            };
            vec![block; me.n as usize]
        }
    };
    if counts.len() != me.n as usize {
        return Err(crate::coll::schedule::length_error(
            "reduce_scatter: one count per rank",
        ));
    }
    let layout = Counts::packed(counts);
    let sum: usize = layout.counts.iter().sum();
    need(
        b,
        src,
        sum,
        "reduce_scatter: the input is not the sum of the counts",
    )?;
    let mine = layout.counts[me.r as usize];
    if b.has(INPUT) {
        need(
            b,
            OUTPUT,
            mine,
            "reduce_scatter: the output is not this rank's count",
        )?;
    }
    for &c in &layout.counts {
        whole(c, dtype)?;
    }
    let segs: Vec<(usize, usize)> = layout
        .displs
        .iter()
        .copied()
        .zip(layout.counts.iter().copied())
        .collect();
    let work = b.temp(sum)?;
    b.copy(Region::whole(src, sum), Region::whole(work, sum));
    if me.n > 1 && op.is_commutative() {
        let max = layout.counts.iter().copied().max().unwrap_or(0);
        let tmp = b.temp(max)?;
        ring_reduce_scatter(b, me, work, tmp, &segs, 1);
    } else if me.n > 1 {
        super::tree::binomial_reduce(b, me, 0, Region::whole(work, sum))?;
        if me.r == 0 {
            for peer in 1..me.n {
                b.send(peer, region(work, segs[peer as usize]));
            }
        } else {
            b.recv(0, Region::whole(OUTPUT, mine));
        }
        b.fence();
        if me.r != 0 {
            return Ok(());
        }
    }
    b.copy(
        region(work, segs[me.r as usize]),
        Region::whole(OUTPUT, mine),
    );
    Ok(())
}
