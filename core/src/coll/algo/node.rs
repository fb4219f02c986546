//! Node and hierarchical algorithms for barrier, bcast, reduce and
//! allreduce (DESIGN §9). On one node they are a single node step through
//! the device's shared memory. Across nodes: the node step gathers to (or
//! releases from) each node's *head*, and the heads run a point-to-point
//! algorithm among themselves over the network device. A node's head is
//! its leader (lowest rank), except on the root's node, where it is the
//! root.
//!
//! Reductions across nodes reorder operands (each node reduces its own
//! ranks first), so a non-commutative op takes the point-to-point
//! algorithms instead: the routing rule (`route.rs`, `path`) says when
//! these apply.

use std::sync::Arc;

use super::{allreduce, tree, Me};
use crate::coll::schedule::{Builder, Region, INPUT, OUTPUT};
use crate::coll::{NodeTeam, Team};
use crate::device::{NodeKind, NodeOp};
use crate::envelope::Rank;
use crate::error::Result;
use crate::reduction::Datatype;

/// Where I sit: my node's members, my index among them, and the heads.
struct Layout<'a> {
    nt: &'a NodeTeam,
    node: usize,
    local: &'a [u32],
}

impl<'a> Layout<'a> {
    fn new(nt: &'a NodeTeam, me: Me) -> Layout<'a> {
        let node = nt.node_of[me.r as usize] as usize;
        let local = &nt.nodes[node][..];
        Layout { nt, node, local }
    }

    /// The head of every node, the root's node headed by the root.
    fn heads(&self, root: Option<u32>) -> Vec<u32> {
        let root_node = root.map(|r| self.nt.node_of[r as usize] as usize);
        self.nt
            .nodes
            .iter()
            .enumerate()
            .map(|(i, m)| match root {
                Some(r) if Some(i) == root_node => r,
                _ => m[0],
            })
            .collect()
    }

    /// My node's head's index among its members.
    fn local_head(&self, heads: &[u32]) -> u32 {
        let h = heads[self.node];
        self.local.iter().position(|&r| r == h).unwrap_or(0) as u32
    }

    /// Adds a node step, unless this rank is alone on its node.
    fn step(
        &self,
        b: &mut Builder,
        op: NodeOp,
        input: Option<Region>,
        output: Region,
    ) -> Result<()> {
        if self.local.len() < 2 {
            // Alone: a bcast leaves the data where it is; a reduce moves
            // its input to the accumulator.
            if let (NodeKind::Reduce | NodeKind::Allreduce, Some(input)) = (op.kind, input) {
                if output.len == input.len {
                    b.copy(input, output);
                }
            }
            return Ok(());
        }
        b.node(op, input, output)
    }

    fn spans(&self) -> bool {
        self.nt.nodes.len() > 1
    }

    fn op(
        &self,
        kind: NodeKind,
        len: usize,
        root: u32,
        op: Option<(crate::coll::ReduceOp, Datatype)>,
    ) -> NodeOp {
        NodeOp::new(self.nt.region, kind, len, root, op)
    }
}

/// Runs `leaders` (the heads' point-to-point phase) over the heads as a
/// team, if this rank is a head; restores the communicator's mapping after.
fn among_heads(
    b: &mut Builder,
    team: &Team,
    me: Me,
    heads: &[u32],
    leaders: impl FnOnce(&mut Builder, Me) -> Result<()>,
) -> Result<()> {
    let Some(pos) = heads.iter().position(|&h| h == me.r) else {
        return Ok(());
    };
    let job = |r: u32| -> Rank { team.job_ranks.as_ref().map_or(r as Rank, |m| m[r as usize]) };
    let map: Arc<[Rank]> = heads.iter().map(|&h| job(h)).collect();
    b.set_team(map);
    let sub = Me {
        n: heads.len() as u32,
        r: pos as u32,
    };
    let result = leaders(b, sub);
    b.restore_team(team.job_ranks.clone());
    result
}

pub(super) fn barrier(b: &mut Builder, team: &Team, me: Me, nt: &NodeTeam) -> Result<()> {
    let l = Layout::new(nt, me);
    // No data: the output slot is never touched (and need not exist).
    let out = Region::whole(OUTPUT, 0);
    l.step(b, l.op(NodeKind::Barrier, 0, 0, None), None, out)?;
    if l.spans() {
        let heads = l.heads(None);
        among_heads(b, team, me, &heads, tree::barrier)?;
        l.step(b, l.op(NodeKind::Barrier, 0, 0, None), None, out)?;
    }
    Ok(())
}

pub(super) fn bcast(b: &mut Builder, team: &Team, me: Me, nt: &NodeTeam, root: u32) -> Result<()> {
    let l = Layout::new(nt, me);
    let len = b.slot_len(OUTPUT);
    let data = Region::whole(OUTPUT, len);
    let heads = l.heads(Some(root));
    if l.spans() {
        let root_pos = heads.iter().position(|&h| h == root).unwrap_or(0) as u32;
        among_heads(b, team, me, &heads, |b, sub| {
            tree::binomial_bcast(b, sub, root_pos, data)
        })?;
    }
    let head = l.local_head(&heads);
    l.step(b, l.op(NodeKind::Bcast, len, head, None), None, data)
}

/// Reduce (to `Some(root)`) or allreduce (`None`); the caller checked the
/// buffers.
pub(super) fn reduce(
    b: &mut Builder,
    team: &Team,
    me: Me,
    nt: &NodeTeam,
    root: Option<u32>,
    len: usize,
    dtype: Datatype,
) -> Result<()> {
    let l = Layout::new(nt, me);
    let op = b.op_pair();
    let heads = l.heads(root);
    let head = l.local_head(&heads);
    let i_am_head = heads[l.node] == me.r;
    let input = b.has(INPUT).then(|| Region::whole(INPUT, len));
    if !l.spans() && root.is_none() {
        return l.step(
            b,
            l.op(NodeKind::Allreduce, len, 0, op),
            input,
            Region::whole(OUTPUT, len),
        );
    }
    // The node's partial result lands in the head's accumulator: the output
    // where the head has one (the root, or any rank of an allreduce).
    let acc = if i_am_head && (root.is_none() || root == Some(me.r)) {
        Region::whole(OUTPUT, len)
    } else if i_am_head {
        Region::whole(b.temp(len)?, len)
    } else {
        Region::whole(b.temp(0)?, 0)
    };
    // In place, my contribution is in the output; it is the node step's
    // input whenever the accumulator is elsewhere.
    let input = match input {
        None if acc.slot != OUTPUT => Some(Region::whole(OUTPUT, len)),
        other => other,
    };
    l.step(b, l.op(NodeKind::Reduce, len, head, op.clone()), input, acc)?;
    if l.spans() {
        match root {
            None => among_heads(b, team, me, &heads, |b, sub| {
                allreduce::over_region(b, sub, acc, dtype)
            })?,
            Some(root) => {
                let root_pos = heads.iter().position(|&h| h == root).unwrap_or(0) as u32;
                among_heads(b, team, me, &heads, |b, sub| {
                    tree::binomial_reduce(b, sub, root_pos, acc)
                })?;
            }
        }
    }
    if root.is_none() {
        l.step(
            b,
            l.op(NodeKind::Bcast, len, head, None),
            None,
            Region::whole(OUTPUT, len),
        )?;
    }
    Ok(())
}
