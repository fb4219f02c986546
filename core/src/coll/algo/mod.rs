//! The algorithm builders: each writes one collective's steps for one
//! rank. Ranks here are communicator ranks; the [`Builder`] translates
//! them. Families: trees (`tree.rs`: barrier, bcast, reduce),
//! `allreduce.rs` (with reduce-scatter), `scan.rs`, `gather.rs` (with
//! scatter), `allgather.rs`, `alltoall.rs`, `neighbor.rs`.
//!
//! Every builder checks its buffers' sizes first, so a schedule never
//! indexes outside them; the builder's `finish` checks every region again.

mod allgather;
mod allreduce;
mod alltoall;
mod gather;
mod neighbor;
mod node;
mod scan;
mod tree;

use super::route;
use super::schedule::{length_error, Builder, CollKind, Region, Schedule, SlotId, INPUT, OUTPUT};
use super::{CollTable, Collective, Datatype, NodeTeam, ReduceOp, Team};
use crate::buffer::Buf;
use crate::envelope::Tag;
use crate::error::{Result, UsageError};

/// The common facts every builder needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Me {
    /// Communicator size.
    pub(super) n: u32,
    /// My rank.
    pub(super) r: u32,
}

impl Me {
    /// `r` relative to `root`.
    pub(super) fn rel(self, root: u32) -> u32 {
        (self.r + self.n - root) % self.n
    }

    /// The rank whose rank relative to `root` is `rel`.
    pub(super) fn abs(self, rel: u32, root: u32) -> u32 {
        (rel + root) % self.n
    }
}

pub(super) fn build(
    team: &Team,
    tag: Tag,
    table: &CollTable,
    coll: Collective,
    input: Option<Buf>,
    output: Option<Buf>,
) -> Result<Schedule> {
    if team.size == 0 || team.rank >= team.size {
        return Err(UsageError::InvalidRank {
            rank: team.rank as i32,
            size: team.size,
        }
        .into());
    }
    let me = Me {
        n: team.size,
        r: team.rank,
    };
    let kind = kind_of(&coll);
    let mut b = Builder::new(
        kind,
        (team.context, team.size),
        tag,
        team.job_ranks.clone(),
        input,
        output,
    );
    match coll {
        Collective::Barrier => match node_layout(team, &coll) {
            Some(nt) => node::barrier(&mut b, team, me, nt)?,
            None => tree::barrier(&mut b, me)?,
        },
        Collective::Bcast { root } => {
            let root = check_root(root, me)?;
            if !b.has(OUTPUT) {
                return Err(length_error("bcast needs its buffer"));
            }
            match node_layout(team, &coll) {
                Some(nt) if me.n > 1 => node::bcast(&mut b, team, me, nt, root)?,
                _ => tree::bcast(&mut b, me, table, root)?,
            }
        }
        Collective::Reduce {
            root,
            ref op,
            dtype,
        } => {
            let root = check_root(root, me)?;
            set_op(&mut b, op.clone(), dtype)?;
            let len = tree::check_reduce(&b, me, root, dtype)?;
            match node_layout(team, &coll) {
                Some(nt) => node::reduce(&mut b, team, me, nt, Some(root), len, dtype)?,
                None => tree::reduce(&mut b, me, root, dtype)?,
            }
        }
        Collective::Allreduce { ref op, dtype } => {
            set_op(&mut b, op.clone(), dtype)?;
            let len = allreduce::check(&b, dtype)?;
            match node_layout(team, &coll) {
                Some(nt) if me.n > 1 => node::reduce(&mut b, team, me, nt, None, len, dtype)?,
                _ => allreduce::allreduce(&mut b, me, table, op, dtype)?,
            }
        }
        Collective::ReduceScatter { counts, op, dtype } => {
            set_op(&mut b, op.clone(), dtype)?;
            allreduce::reduce_scatter(&mut b, me, counts, &op, dtype)?;
        }
        Collective::Scan { op, dtype } => {
            set_op(&mut b, op, dtype)?;
            scan::scan(&mut b, me, dtype, false)?;
        }
        Collective::Exscan { op, dtype } => {
            set_op(&mut b, op, dtype)?;
            scan::scan(&mut b, me, dtype, true)?;
        }
        Collective::Gather { root, v } => gather::gather(&mut b, me, check_root(root, me)?, v)?,
        Collective::Scatter { root, v } => {
            gather::scatter(&mut b, me, check_root(root, me)?, v)?;
        }
        Collective::Allgather { v } => allgather::allgather(&mut b, me, table, v)?,
        Collective::Alltoall { v } => alltoall::alltoall(&mut b, me, table, v)?,
        Collective::Neighbor {
            neighbors,
            send,
            recv,
        } => neighbor::exchange(&mut b, me, &neighbors, send.as_ref(), &recv)?,
    }
    b.finish()
}

pub(crate) fn kind_of(coll: &Collective) -> CollKind {
    match coll {
        Collective::Barrier => CollKind::Barrier,
        Collective::Bcast { .. } => CollKind::Bcast,
        Collective::Reduce { .. } => CollKind::Reduce,
        Collective::Allreduce { .. } => CollKind::Allreduce,
        Collective::Gather { .. } => CollKind::Gather,
        Collective::Scatter { .. } => CollKind::Scatter,
        Collective::Allgather { .. } => CollKind::Allgather,
        Collective::Alltoall { .. } => CollKind::Alltoall,
        Collective::ReduceScatter { .. } => CollKind::ReduceScatter,
        Collective::Scan { .. } => CollKind::Scan,
        Collective::Exscan { .. } => CollKind::Exscan,
        Collective::Neighbor { .. } => CollKind::Neighbor,
    }
}

/// The layout, if the node algorithms run `coll` on this team (the
/// routing rule, [`route::path`]).
fn node_layout<'a>(team: &'a Team, coll: &Collective) -> Option<&'a NodeTeam> {
    match route::path(team.node.as_deref(), coll) {
        route::Path::Single(nt) | route::Path::Hierarchical(nt) => Some(nt),
        route::Path::PointToPoint => None,
    }
}

fn check_root(root: u32, me: Me) -> Result<u32> {
    if root < me.n {
        Ok(root)
    } else {
        Err(UsageError::InvalidRank {
            rank: i32::try_from(root).unwrap_or(i32::MAX),
            size: me.n,
        }
        .into())
    }
}

fn set_op(b: &mut Builder, op: ReduceOp, dtype: Datatype) -> Result<()> {
    op.check(dtype)?;
    b.set_op(op, dtype);
    Ok(())
}

/// The slot holding this rank's contribution: the input, or the output for
/// an in-place call.
pub(super) fn source(b: &Builder) -> SlotId {
    if b.has(INPUT) {
        INPUT
    } else {
        OUTPUT
    }
}

/// Checks that `slot` is present with exactly `len` bytes.
pub(super) fn need(b: &Builder, slot: SlotId, len: usize, what: &'static str) -> Result<()> {
    if b.has(slot) && b.slot_len(slot) == len {
        Ok(())
    } else {
        Err(length_error(what))
    }
}

/// Checks that the output is present and the input (if any) has its
/// length, a whole number of elements: the vector's length.
pub(super) fn same_size(b: &Builder, dtype: Datatype, what: &'static str) -> Result<usize> {
    let len = b.slot_len(OUTPUT);
    need(b, OUTPUT, len, what)?;
    if b.has(INPUT) {
        need(b, INPUT, len, what)?;
    }
    whole(len, dtype)?;
    Ok(len)
}

/// Checks that a byte length is a whole number of elements.
pub(super) fn whole(len: usize, dtype: Datatype) -> Result<usize> {
    let size = dtype.size();
    if size == 0 || len % size != 0 {
        return Err(length_error("buffer is not a whole number of elements"));
    }
    Ok(len / size)
}

/// `len` bytes split into `parts` element-aligned segments as `(offset,
/// len)`, the first ones one element longer when it does not divide.
pub(super) fn split(len: usize, elem: usize, parts: u32) -> Vec<(usize, usize)> {
    let parts = parts.max(1) as usize;
    let elems = len / elem.max(1);
    let (base, extra) = (elems / parts, elems % parts);
    let mut at = 0;
    (0..parts)
        .map(|i| {
            let n = (base + usize::from(i < extra)) * elem;
            let seg = (at, n);
            at += n;
            seg
        })
        .collect()
}

/// A region from an `(offset, len)` pair.
pub(super) fn region(slot: SlotId, seg: (usize, usize)) -> Region {
    Region::new(slot, seg.0, seg.1)
}
