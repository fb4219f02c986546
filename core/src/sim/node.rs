//! Node collectives in the simulation: the same contract as a device's
//! shared-memory regions ([`NodeCollectives`]), kept in the network, so
//! the node and hierarchical schedules can be checked deterministically.
//! A member *deposits* its contribution under the operation's sequence
//! number; a member that needs the others' data completes once their
//! deposits are there (reducing in member order, as the shm device does).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::SimDevice;
use crate::coll::fold_in_order;
use crate::device::{NodeCollectives, NodeKind, NodeOp};
use crate::envelope::Rank;
use crate::error::{Error, PeerError};

/// One operation's state in a region.
#[derive(Debug)]
struct Deposits {
    data: Vec<Option<Vec<u8>>>,
    finished: Vec<bool>,
}

/// A region shared by a node's members.
#[derive(Debug)]
pub(crate) struct SimRegion {
    members: Vec<Rank>,
    ops: BTreeMap<u64, Deposits>,
}

/// One rank's side: the ranks on its node and its attached regions
/// (id → leader, my index, last sequence reserved).
#[derive(Debug)]
pub(crate) struct SimNode {
    local: Vec<Rank>,
    attached: FxHashMap<u64, (Rank, usize, u64)>,
}

impl SimNode {
    pub(super) fn new(local: &[Rank]) -> SimNode {
        SimNode {
            local: local.to_vec(),
            attached: FxHashMap::default(),
        }
    }

    pub(super) fn is_on(&self) -> bool {
        !self.local.is_empty()
    }
}

fn missing() -> Error {
    Error::Internal("sim node collective on an unattached region")
}

impl NodeCollectives for SimDevice {
    fn local_ranks(&self) -> &[Rank] {
        &self.node.local
    }

    fn attach(&mut self, id: u64, members: &[Rank], leader: bool) -> Result<(), Error> {
        let first = *members
            .first()
            .ok_or(Error::Internal("node region without members"))?;
        let me = members
            .iter()
            .position(|&r| r == self.rank())
            .ok_or(Error::Internal("node region without this rank"))?;
        let mut net = self.network().borrow_mut();
        let key = (id, first);
        if leader {
            net.node_regions.insert(
                key,
                SimRegion {
                    members: members.to_vec(),
                    ops: BTreeMap::new(),
                },
            );
        } else if net
            .node_regions
            .get(&key)
            .is_none_or(|r| r.members != members)
        {
            return Err(Error::Internal("sim node region missing or different"));
        }
        drop(net);
        self.node.attached.insert(id, (first, me, 0));
        Ok(())
    }

    fn attached(&mut self, _id: u64) {}

    fn detach(&mut self, id: u64) {
        self.node.attached.remove(&id);
    }

    fn has(&self, id: u64) -> bool {
        self.node.attached.contains_key(&id)
    }

    fn reserve(&mut self, op: &mut NodeOp) -> Result<(), Error> {
        let entry = self.node.attached.get_mut(&op.region).ok_or_else(missing)?;
        entry.2 += 1;
        op.seq = entry.2;
        op.chunk = 0;
        op.phase = 0;
        Ok(())
    }

    fn poll(
        &mut self,
        op: &mut NodeOp,
        input: Option<&[u8]>,
        output: &mut [u8],
    ) -> Result<bool, Error> {
        if op.chunk == 1 {
            return Ok(true);
        }
        let (leader, me, _) = *self.node.attached.get(&op.region).ok_or_else(missing)?;
        let net_rc = std::rc::Rc::clone(self.network());
        let mut net = net_rc.borrow_mut();
        let alive: Vec<bool> = (0..net.ranks()).map(|r| net.is_alive(r as Rank)).collect();
        let region = net
            .node_regions
            .get_mut(&(op.region, leader))
            .ok_or_else(missing)?;
        let m = region.members.len();
        let root = op.root as usize;
        let d = region.ops.entry(op.seq).or_insert_with(|| Deposits {
            data: vec![None; m],
            finished: vec![false; m],
        });
        let mut activity = 0;
        if op.phase == 0 {
            let mine = match op.kind {
                NodeKind::Barrier => Vec::new(),
                NodeKind::Bcast if me != root => Vec::new(),
                _ => input
                    .unwrap_or(&*output)
                    .get(..op.len)
                    .ok_or(Error::Internal("short node buffer"))?
                    .to_vec(),
            };
            d.data[me] = Some(mine);
            op.phase = 1;
            activity += 1;
        }
        let needs: Vec<usize> = match op.kind {
            NodeKind::Barrier | NodeKind::Allreduce => (0..m).collect(),
            NodeKind::Bcast if me != root => vec![root],
            NodeKind::Reduce if me == root => (0..m).collect(),
            _ => Vec::new(),
        };
        if let Some(&i) = needs.iter().find(|&&i| d.data[i].is_none()) {
            let rank = region.members[i];
            net.node_events += activity;
            if !alive.get(rank as usize).copied().unwrap_or(false) {
                return Err(PeerError::Died { rank }.into());
            }
            return Ok(false);
        }
        match (op.kind, &op.op) {
            (NodeKind::Bcast, _) if me != root => {
                let src = d.data[root].as_deref().unwrap_or(&[]);
                let out = output
                    .get_mut(..src.len())
                    .ok_or(Error::Internal("short node output"))?;
                out.copy_from_slice(src);
            }
            (NodeKind::Reduce, Some((rop, dtype))) if me == root => {
                fold(d, rop, *dtype, output, op.len)?
            }
            (NodeKind::Allreduce, Some((rop, dtype))) => fold(d, rop, *dtype, output, op.len)?,
            _ => {}
        }
        d.finished[me] = true;
        if d.finished.iter().all(|&f| f) {
            region.ops.remove(&op.seq);
        }
        op.chunk = 1;
        net.node_events += activity + 1;
        Ok(true)
    }
}

/// `output = x0 ⊕ (x1 ⊕ (… ⊕ x(m−1)))`, the deposits in member order.
fn fold(
    d: &Deposits,
    op: &crate::coll::ReduceOp,
    dtype: crate::coll::Datatype,
    output: &mut [u8],
    len: usize,
) -> Result<(), Error> {
    let out = output
        .get_mut(..len)
        .ok_or(Error::Internal("short node output"))?;
    let operand = |i: usize| d.data[i].as_deref().unwrap_or(&[]);
    fold_in_order(op, dtype, d.data.len(), operand, out)
}
