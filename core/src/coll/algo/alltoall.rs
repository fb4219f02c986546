//! Alltoall: pairwise exchange (any block size, and the v-variant) and
//! Bruck (small equal blocks: ceil(log p) rounds of packed blocks).

use super::{need, Me};
use crate::coll::schedule::{length_error, Builder, Region, SlotId, INPUT, OUTPUT};
use crate::coll::tune::{AlltoallAlgo, CollTable};
use crate::coll::Counts;
use crate::error::Result;

pub(super) fn alltoall(
    b: &mut Builder,
    me: Me,
    table: &CollTable,
    v: Option<(Counts, Counts)>,
) -> Result<()> {
    let n = me.n as usize;
    let total = b.slot_len(OUTPUT);
    if !b.has(OUTPUT) {
        return Err(length_error("alltoall needs its output buffer"));
    }
    // In place: the blocks to send are in the output, which receives
    // overwrite; send from a copy.
    let src: SlotId = if b.has(INPUT) {
        INPUT
    } else {
        let t = b.temp(total)?;
        b.copy(Region::whole(OUTPUT, total), Region::whole(t, total));
        t
    };
    let equal = v.is_none();
    let (send, recv) = match v {
        Some((s, r)) => {
            s.check(me.n, b.slot_len(src))?;
            r.check(me.n, total)?;
            (s, r)
        }
        None => {
            if total % n != 0 {
                return Err(length_error("alltoall: the output is not size × the block"));
            }
            need(
                b,
                src,
                total,
                "alltoall: send and receive buffers differ in size",
            )?;
            let layout = Counts::packed(vec![total / n; n]);
            (layout.clone(), layout)
        }
    };
    let c = recv.counts[0];
    match table.alltoall(c, equal) {
        AlltoallAlgo::Bruck if n > 1 => bruck(b, me, src, c),
        _ => pairwise(b, me, src, &send, &recv),
    }
}

fn pairwise(b: &mut Builder, me: Me, src: SlotId, send: &Counts, recv: &Counts) -> Result<()> {
    let n = me.n;
    let r = me.r as usize;
    let block = |slot, l: &Counts, i: usize| Region::new(slot, l.displs[i], l.counts[i]);
    if send.counts[r] != recv.counts[r] {
        return Err(length_error(
            "alltoallv: this rank's send and receive counts to itself differ",
        ));
    }
    b.copy(block(src, send, r), block(OUTPUT, recv, r));
    for s in 1..n {
        let to = ((me.r + s) % n) as usize;
        let from = ((me.r + n - s) % n) as usize;
        b.recv(from as u32, block(OUTPUT, recv, from));
        b.send(to as u32, block(src, send, to));
        b.fence();
    }
    Ok(())
}

/// Bruck's alltoall: rotate so block i is for rank r + i; in the round of
/// `k`, send every block whose index has bit `k` to `r + k` and take the
/// same positions from `r - k`; undo the rotation at the end.
fn bruck(b: &mut Builder, me: Me, src: SlotId, c: usize) -> Result<()> {
    let n = me.n as usize;
    let r = me.r as usize;
    let acc = b.temp(n * c)?;
    b.copy(
        Region::new(src, r * c, (n - r) * c),
        Region::new(acc, 0, (n - r) * c),
    );
    b.copy(
        Region::new(src, 0, r * c),
        Region::new(acc, (n - r) * c, r * c),
    );
    let most = n.div_ceil(2) * c;
    let (pack, unpack) = (b.temp(most)?, b.temp(most)?);
    let mut k = 1;
    while k < n {
        let blocks: Vec<usize> = (0..n).filter(|i| i & k != 0).collect();
        for (j, &i) in blocks.iter().enumerate() {
            b.copy(Region::new(acc, i * c, c), Region::new(pack, j * c, c));
        }
        let len = blocks.len() * c;
        b.recv(((r + n - k) % n) as u32, Region::whole(unpack, len));
        b.send(((r + k) % n) as u32, Region::whole(pack, len));
        b.fence();
        for (j, &i) in blocks.iter().enumerate() {
            b.copy(Region::new(unpack, j * c, c), Region::new(acc, i * c, c));
        }
        k <<= 1;
    }
    for i in 0..n {
        b.copy(
            Region::new(acc, i * c, c),
            Region::new(OUTPUT, ((r + n - i) % n) * c, c),
        );
    }
    Ok(())
}
