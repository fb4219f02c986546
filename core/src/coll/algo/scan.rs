//! Inclusive and exclusive scan by recursive doubling (MPICH's
//! `MPIR_Scan_intra_recursive_doubling` and its exscan sibling): each rank
//! keeps the running total of the block of ranks it has heard from and
//! folds in what lower ranks send as the left operand.

use super::{source, Me};
use crate::coll::schedule::{Builder, Region, INPUT, OUTPUT};
use crate::error::Result;
use crate::reduction::Datatype;

pub(super) fn scan(b: &mut Builder, me: Me, dtype: Datatype, exclusive: bool) -> Result<()> {
    let len = super::same_size(
        b,
        dtype,
        "scan: the output is missing or the input differs in size",
    )?;
    let out = Region::whole(OUTPUT, len);
    let partial = Region::whole(b.temp(len)?, len);
    b.copy(Region::whole(source(b), len), partial);
    if !exclusive && b.has(INPUT) {
        b.copy(Region::whole(INPUT, len), out);
    }
    let tmp = Region::whole(b.temp(len)?, len);
    let mut output_set = !exclusive;
    let mut mask = 1;
    while mask < me.n {
        let dst = me.r ^ mask;
        if dst < me.n {
            b.recv(dst, tmp);
            b.send(dst, partial);
            b.fence();
            if dst < me.r {
                if output_set {
                    b.reduce(tmp, out, true);
                } else {
                    b.copy(tmp, out);
                    output_set = true;
                }
                b.reduce(tmp, partial, true);
            } else {
                b.reduce(tmp, partial, false);
            }
        }
        mask <<= 1;
    }
    Ok(())
}
