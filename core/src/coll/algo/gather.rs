//! Gather and scatter: binomial trees for equal blocks (MPICH's
//! `MPIR_Gather_intra_binomial`, `MPIR_Scatter_intra_binomial`), linear for
//! the v-variants, whose blocks the intermediate ranks could not size.
//!
//! In the trees, a rank's subtree is a run of consecutive relative ranks,
//! so it moves its subtree's blocks as one message; the root rotates
//! between relative and real order once.

use super::tree::parent;
use super::{need, Me};
use crate::coll::schedule::{length_error, Builder, Region, SlotId, INPUT, OUTPUT};
use crate::coll::Counts;
use crate::error::Result;

/// The number of relative ranks in `rel`'s subtree.
fn subtree(rel: u32, n: u32) -> u32 {
    if rel == 0 {
        n
    } else {
        (rel & rel.wrapping_neg()).min(n - rel)
    }
}

/// Copies blocks between relative order in `rel_slot` and real order in
/// `real_slot` (`to_real`: which way), for blocks of `c` bytes.
fn rotate(
    b: &mut Builder,
    me: Me,
    root: u32,
    c: usize,
    rel_slot: SlotId,
    real_slot: SlotId,
    to_real: bool,
) {
    let n = me.n as usize;
    let root = root as usize;
    // Relative block j is real block (j + root) % n: two contiguous runs.
    let runs = [(0, root, n - root), (n - root, 0, root)];
    for (rel_at, real_at, count) in runs {
        let rel = Region::new(rel_slot, rel_at * c, count * c);
        let real = Region::new(real_slot, real_at * c, count * c);
        if to_real {
            b.copy(rel, real);
        } else {
            b.copy(real, rel);
        }
    }
}

pub(super) fn gather(b: &mut Builder, me: Me, root: u32, v: Option<Counts>) -> Result<()> {
    match v {
        None => binomial_gather(b, me, root),
        Some(counts) => linear_gatherv(b, me, root, &counts),
    }
}

fn binomial_gather(b: &mut Builder, me: Me, root: u32) -> Result<()> {
    let n = me.n;
    let at_root = me.r == root;
    let c = if b.has(INPUT) {
        b.slot_len(INPUT)
    } else if at_root {
        b.slot_len(OUTPUT) / n as usize
    } else {
        return Err(length_error("gather: a non-root needs its input buffer"));
    };
    if at_root {
        need(
            b,
            OUTPUT,
            c * n as usize,
            "gather: the root's output is not size × the block",
        )?;
    }
    let mine = if b.has(INPUT) {
        Region::whole(INPUT, c)
    } else {
        Region::new(OUTPUT, root as usize * c, c)
    };
    let rel = me.rel(root);
    let sub = subtree(rel, n);
    // Relative order is real order when the root is 0: gather in place.
    let acc = if at_root && root == 0 {
        OUTPUT
    } else {
        b.temp(sub as usize * c)?
    };
    b.copy(mine, Region::whole(acc, c));
    let mut mask = 1;
    while mask < n {
        if rel & mask == 0 {
            let child = rel | mask;
            if child < n {
                let count = mask.min(n - child) as usize;
                let at = (child - rel) as usize * c;
                b.recv(me.abs(child, root), Region::new(acc, at, count * c));
                b.fence();
            }
        } else {
            b.send(
                me.abs(rel & !mask, root),
                Region::whole(acc, sub as usize * c),
            );
            b.fence();
            break;
        }
        mask <<= 1;
    }
    if at_root && acc != OUTPUT {
        rotate(b, me, root, c, acc, OUTPUT, true);
    }
    Ok(())
}

fn linear_gatherv(b: &mut Builder, me: Me, root: u32, counts: &Counts) -> Result<()> {
    if me.r != root {
        if !b.has(INPUT) {
            return Err(length_error("gatherv: a non-root needs its input buffer"));
        }
        let len = b.slot_len(INPUT);
        b.send(root, Region::whole(INPUT, len));
        b.fence();
        return Ok(());
    }
    counts.check(me.n, b.slot_len(OUTPUT))?;
    let mut temps = Vec::with_capacity(me.n as usize);
    for peer in 0..me.n {
        let c = counts.counts[peer as usize];
        if peer == me.r {
            continue;
        }
        let t = b.temp(c)?;
        b.recv(peer, Region::whole(t, c));
        temps.push((peer, t, c));
    }
    b.fence();
    for (peer, t, c) in temps {
        b.copy(
            Region::whole(t, c),
            Region::new(OUTPUT, counts.displs[peer as usize], c),
        );
    }
    if b.has(INPUT) {
        let c = counts.counts[me.r as usize];
        need(b, INPUT, c, "gatherv: the root's input is not its count")?;
        b.copy(
            Region::whole(INPUT, c),
            Region::new(OUTPUT, counts.displs[me.r as usize], c),
        );
    }
    Ok(())
}

pub(super) fn scatter(b: &mut Builder, me: Me, root: u32, v: Option<Counts>) -> Result<()> {
    match v {
        None => binomial_scatter(b, me, root),
        Some(counts) => linear_scatterv(b, me, root, &counts),
    }
}

fn binomial_scatter(b: &mut Builder, me: Me, root: u32) -> Result<()> {
    let n = me.n;
    let at_root = me.r == root;
    let c = if at_root {
        if !b.has(INPUT) || b.slot_len(INPUT) % n as usize != 0 {
            return Err(length_error(
                "scatter: the root's input is not size × the block",
            ));
        }
        b.slot_len(INPUT) / n as usize
    } else if b.has(OUTPUT) {
        b.slot_len(OUTPUT)
    } else {
        return Err(length_error("scatter: a non-root needs its output buffer"));
    };
    if b.has(OUTPUT) {
        need(b, OUTPUT, c, "scatter: the output is not one block")?;
    }
    let rel = me.rel(root);
    let sub = subtree(rel, n);
    let (up, mut mask) = parent(rel, n);
    let acc = if at_root && root == 0 {
        INPUT
    } else {
        let t = b.temp(sub as usize * c)?;
        if at_root {
            rotate(b, me, root, c, t, INPUT, false);
        }
        t
    };
    if let Some(p) = up {
        b.recv(me.abs(p, root), Region::whole(acc, sub as usize * c));
        b.fence();
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < n {
            let count = mask.min(n - rel - mask) as usize;
            b.send(
                me.abs(rel + mask, root),
                Region::new(acc, mask as usize * c, count * c),
            );
        }
        mask >>= 1;
    }
    b.fence();
    if b.has(OUTPUT) {
        b.copy(Region::whole(acc, c), Region::whole(OUTPUT, c));
    }
    Ok(())
}

fn linear_scatterv(b: &mut Builder, me: Me, root: u32, counts: &Counts) -> Result<()> {
    if me.r != root {
        if !b.has(OUTPUT) {
            return Err(length_error("scatterv: a non-root needs its output buffer"));
        }
        let len = b.slot_len(OUTPUT);
        b.recv(root, Region::whole(OUTPUT, len));
        b.fence();
        return Ok(());
    }
    if !b.has(INPUT) {
        return Err(length_error("scatterv: the root needs its input buffer"));
    }
    counts.check(me.n, b.slot_len(INPUT))?;
    for peer in (0..me.n).filter(|&p| p != me.r) {
        let i = peer as usize;
        b.send(peer, Region::new(INPUT, counts.displs[i], counts.counts[i]));
    }
    b.fence();
    if b.has(OUTPUT) {
        let i = me.r as usize;
        need(
            b,
            OUTPUT,
            counts.counts[i],
            "scatterv: the root's output is not its count",
        )?;
        b.copy(
            Region::new(INPUT, counts.displs[i], counts.counts[i]),
            Region::whole(OUTPUT, counts.counts[i]),
        );
    }
    Ok(())
}
