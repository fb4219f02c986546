//! Allgather: recursive doubling (power-of-two sizes), Bruck (any size),
//! ring (large blocks, and the v-variant). A block received in a round
//! lands in a temporary and is copied into place after the round's fence,
//! because the output is lent to that round's send.

use super::{need, Me};
use crate::coll::schedule::{length_error, Builder, Region, INPUT, OUTPUT};
use crate::coll::tune::{AllgatherAlgo, CollTable};
use crate::coll::Counts;
use crate::error::Result;

pub(super) fn allgather(
    b: &mut Builder,
    me: Me,
    table: &CollTable,
    v: Option<Counts>,
) -> Result<()> {
    let n = me.n as usize;
    let total = b.slot_len(OUTPUT);
    let equal = v.is_none();
    let layout = match v {
        Some(counts) => {
            counts.check(me.n, total)?;
            counts
        }
        None => {
            let c = if b.has(INPUT) {
                b.slot_len(INPUT)
            } else {
                total / n
            };
            need(
                b,
                OUTPUT,
                c * n,
                "allgather: the output is not size × the block",
            )?;
            Counts::packed(vec![c; n])
        }
    };
    let r = me.r as usize;
    let mine = Region::new(OUTPUT, layout.displs[r], layout.counts[r]);
    if b.has(INPUT) {
        need(
            b,
            INPUT,
            layout.counts[r],
            "allgather: the input is not this rank's block",
        )?;
        b.copy(Region::whole(INPUT, mine.len), mine);
    }
    if me.n == 1 {
        return Ok(());
    }
    let c = layout.counts[0];
    match table.allgather(c, equal) {
        AllgatherAlgo::RecursiveDoubling => recursive_doubling(b, me, c),
        AllgatherAlgo::Bruck => bruck(b, me, c),
        AllgatherAlgo::Ring => ring(b, me, &layout),
    }
}

fn ring(b: &mut Builder, me: Me, layout: &Counts) -> Result<()> {
    let n = me.n;
    let max = layout.counts.iter().copied().max().unwrap_or(0);
    let tmp = b.temp(max)?;
    let (left, right) = ((me.r + n - 1) % n, (me.r + 1) % n);
    let block = |i: u32| Region::new(OUTPUT, layout.displs[i as usize], layout.counts[i as usize]);
    for s in 0..n - 1 {
        let send = (me.r + n - s) % n;
        let recv = (me.r + n - s - 1) % n;
        let into = Region::whole(tmp, layout.counts[recv as usize]);
        b.recv(left, into);
        b.send(right, block(send));
        b.fence();
        b.copy(into, block(recv));
    }
    Ok(())
}

/// Power-of-two sizes: in the round of `mask`, partners swap the runs of
/// `mask` blocks each has gathered so far.
fn recursive_doubling(b: &mut Builder, me: Me, c: usize) -> Result<()> {
    if !me.n.is_power_of_two() {
        return Err(length_error(
            "recursive-doubling allgather needs a power-of-two size",
        ));
    }
    let tmp = b.temp(c * me.n as usize / 2)?;
    let mut mask = 1;
    while mask < me.n {
        let dst = me.r ^ mask;
        let run = mask as usize * c;
        let my_base = (me.r & !(mask - 1)) as usize * c;
        let their_base = (dst & !(mask - 1)) as usize * c;
        let into = Region::whole(tmp, run);
        b.recv(dst, into);
        b.send(dst, Region::new(OUTPUT, my_base, run));
        b.fence();
        b.copy(into, Region::new(OUTPUT, their_base, run));
        mask <<= 1;
    }
    Ok(())
}

/// Bruck: blocks kept in rank order starting from mine; in the round of
/// `k`, send the first `min(k, p - k)` blocks to `r - k` and append what
/// `r + k` sends; rotate into place at the end.
fn bruck(b: &mut Builder, me: Me, c: usize) -> Result<()> {
    let n = me.n as usize;
    let r = me.r as usize;
    let acc = b.temp(n * c)?;
    let tmp = b.temp(n.div_ceil(2) * c)?;
    b.copy(Region::new(OUTPUT, r * c, c), Region::whole(acc, c));
    let mut k = 1;
    while k < n {
        let count = k.min(n - k);
        let into = Region::whole(tmp, count * c);
        b.recv(((r + k) % n) as u32, into);
        b.send(((r + n - k) % n) as u32, Region::whole(acc, count * c));
        b.fence();
        b.copy(into, Region::new(acc, k * c, count * c));
        k <<= 1;
    }
    // Block j of acc is rank (r + j) % n's.
    b.copy(
        Region::new(acc, 0, (n - r) * c),
        Region::new(OUTPUT, r * c, (n - r) * c),
    );
    b.copy(
        Region::new(acc, (n - r) * c, r * c),
        Region::new(OUTPUT, 0, r * c),
    );
    Ok(())
}
