//! The neighborhood collectives: one round in which a rank posts a
//! receive per source and a send per destination, then a fence.
//!
//! A slot is lent to one operation at a time (`schedule.rs`), so only one
//! receive can land in the output where it belongs; the others land in
//! temporaries that are copied into place after the fence. Posting every
//! receive before any send is what keeps the round free of deadlock: a
//! rank's sends from its input follow one another (a large one waits for
//! its receiver), and every receiver's receives are already posted. The
//! receive that lands in place is the largest, so at most the smaller
//! blocks are copied.

use super::Me;
use crate::coll::neighbors::{Neighbors, NO_NEIGHBOR};
use crate::coll::schedule::{length_error, Builder, Region, INPUT, OUTPUT};
use crate::coll::Counts;
use crate::error::Result;

pub(super) fn exchange(
    b: &mut Builder,
    me: Me,
    neighbors: &Neighbors,
    send: Option<&Counts>,
    recv: &Counts,
) -> Result<()> {
    neighbors.check(me.n)?;
    let (ins, outs) = (neighbors.sources.len(), neighbors.destinations.len());
    recv.check_blocks(
        ins,
        b.slot_len(OUTPUT),
        "one receive block per source, inside the output",
    )?;
    if ins > 0 && !b.has(OUTPUT) {
        return Err(length_error(
            "a neighborhood collective needs its output buffer",
        ));
    }
    if outs > 0 && !b.has(INPUT) {
        return Err(length_error(
            "a neighborhood collective needs its input buffer",
        ));
    }
    if let Some(send) = send {
        send.check_blocks(
            outs,
            b.slot_len(INPUT),
            "one send block per destination, inside the input",
        )?;
    }

    let live = |j: usize| neighbors.sources[j] != NO_NEIGHBOR;
    let block = |c: &Counts, j: usize| Region::new(OUTPUT, c.displs[j], c.counts[j]);
    let in_place = (0..ins)
        .filter(|&j| live(j))
        .max_by_key(|&j| recv.counts[j]);
    let mut staged = Vec::new();
    for j in neighbors.receive_order().filter(|&j| live(j)) {
        let from = neighbors.sources[j];
        if Some(j) == in_place {
            b.recv(from, block(recv, j));
        } else {
            let t = b.temp(recv.counts[j])?;
            b.recv(from, Region::whole(t, recv.counts[j]));
            staged.push((t, j));
        }
    }
    let whole = b.slot_len(INPUT);
    for (i, &to) in neighbors.destinations.iter().enumerate() {
        if to == NO_NEIGHBOR {
            continue;
        }
        let data = match send {
            Some(s) => Region::new(INPUT, s.displs[i], s.counts[i]),
            None => Region::whole(INPUT, whole),
        };
        b.send(to, data);
    }
    b.fence();
    for (t, j) in staged {
        b.copy(Region::whole(t, recv.counts[j]), block(recv, j));
    }
    Ok(())
}
