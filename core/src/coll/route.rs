//! The one routing decision: which path a collective call takes.
//!
//! [`plan`] is asked once per call, by every form (blocking, nonblocking,
//! persistent), and answers:
//! - [`Route::Node`]: the communicator lives on one node and the call is a
//!   barrier, bcast, reduce or allreduce with consistent buffers: it is one
//!   [`NodeOp`] through the node region. The blocking form polls it with
//!   the caller's slices (no schedule, no allocation); the nonblocking one
//!   is a request without a schedule
//!   ([`Engine::start_collective`](crate::Engine::start_collective)); a
//!   persistent one is a one-step schedule ([`build`](super::build)).
//! - [`Route::Schedule`]: anything else, built by [`build`](super::build),
//!   whose builders ask `path` (the same rule) whether to use the node
//!   region: hierarchically across nodes, or not at all.
//!
//! The answer depends only on what every member knows (the layout, the
//! call, the op), never on this rank's node: every member must take the
//! same path. Argument errors the node path cannot express (a bad root, a
//! length that does not match) route to a schedule, whose builder reports
//! them precisely; an op the datatype does not support is an error here.

use super::schedule::{Builder, Region, Schedule, INPUT, OUTPUT};
use super::{Collective, NodeTeam, Team};
use crate::buffer::Buf;
use crate::device::{NodeKind, NodeOp};
use crate::envelope::Tag;
use crate::error::Result;

/// Where a collective call goes; see the module docs.
#[derive(Debug, Clone)]
pub enum Route {
    /// One node operation on the communicator's node region.
    Node(NodeOp),
    /// A schedule ([`build`](super::build)).
    Schedule,
}

/// How a collective may use the node region, from the layout and the call
/// alone (the buffers are checked later, by [`plan`] or the builders).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Path<'a> {
    /// Every member on one node: a single node operation.
    Single(&'a NodeTeam),
    /// Members on several nodes, some sharing one: node steps, then the
    /// node heads point-to-point, then node steps.
    Hierarchical(&'a NodeTeam),
    /// Point-to-point only.
    PointToPoint,
}

/// The path of `coll` on a communicator with layout `node`; see the module
/// docs.
///
/// Only barrier, bcast, reduce and allreduce have node algorithms. Across
/// nodes a reduction reorders operands (each node reduces its own ranks
/// first), so a non-commutative op goes point-to-point; on one node the
/// node region reduces in rank order, so any op may. A layout where no two
/// members share a node has nothing to gain.
#[inline]
pub(crate) fn path<'a>(node: Option<&'a NodeTeam>, coll: &Collective) -> Path<'a> {
    let Some(nt) = node else {
        return Path::PointToPoint;
    };
    let commutative = match coll {
        Collective::Barrier | Collective::Bcast { .. } => true,
        Collective::Reduce { op, .. } | Collective::Allreduce { op, .. } => op.is_commutative(),
        _ => return Path::PointToPoint,
    };
    if !nt.nodes.iter().any(|m| m.len() >= 2) {
        return Path::PointToPoint;
    }
    match nt.nodes.len() {
        1 => Path::Single(nt),
        _ if commutative => Path::Hierarchical(nt),
        _ => Path::PointToPoint,
    }
}

/// Routes one call: `coll` at communicator rank `rank` of `size`, with
/// layout `node` (`None`: point-to-point only) and this rank's input and
/// output byte lengths (`None`: absent, in place).
///
/// # Errors
/// `OpNotDefined` for an op the datatype does not support, on the node
/// path (a schedule's builder reports it otherwise).
#[inline]
pub fn plan(
    node: Option<&NodeTeam>,
    rank: u32,
    size: u32,
    coll: &Collective,
    input: Option<usize>,
    output: Option<usize>,
) -> Result<Route> {
    let Path::Single(nt) = path(node, coll) else {
        return Ok(Route::Schedule);
    };
    let (kind, root, op) = match coll {
        Collective::Barrier => (NodeKind::Barrier, 0, None),
        Collective::Bcast { root } => (NodeKind::Bcast, *root, None),
        Collective::Reduce { root, op, dtype } => {
            (NodeKind::Reduce, *root, Some((op.clone(), *dtype)))
        }
        Collective::Allreduce { op, dtype } => (NodeKind::Allreduce, 0, Some((op.clone(), *dtype))),
        _ => return Ok(Route::Schedule),
    };
    if root >= size || rank >= size {
        return Ok(Route::Schedule);
    }
    if let Some((op, dtype)) = &op {
        op.check(*dtype)?;
    }
    let is_root = rank == root;
    let out = output.unwrap_or(0);
    let len = match kind {
        NodeKind::Barrier => 0,
        NodeKind::Reduce if !is_root => input.unwrap_or(0),
        _ => out,
    };
    let elem = op.as_ref().map_or(1, |(_, d)| d.size().max(1));
    let bad_input = input.is_some_and(|i| i != len);
    let bad_output = matches!(kind, NodeKind::Bcast | NodeKind::Allreduce) && out != len
        || kind == NodeKind::Reduce && is_root && out != len;
    if bad_input || bad_output || len % elem != 0 {
        return Ok(Route::Schedule);
    }
    Ok(Route::Node(NodeOp::new(nt.region, kind, len, root, op)))
}

/// The one-step schedule of a [`Route::Node`] (a nonblocking or
/// persistent call): `op` on the caller's buffers, whose lengths [`plan`]
/// checked. Its tag is the call's signature, so that a member whose
/// different arguments sent it down a schedule is found out.
pub(crate) fn node_schedule(
    team: &Team,
    tag: Tag,
    coll: &Collective,
    op: NodeOp,
    input: Option<Buf>,
    output: Option<Buf>,
) -> Result<Schedule> {
    let len = op.len;
    // Where results land: nothing for a barrier or a reduce's non-root.
    let out_len = match op.kind {
        NodeKind::Barrier => 0,
        NodeKind::Reduce if op.root != team.rank => 0,
        _ => len,
    };
    let mut b = Builder::new(
        super::algo::kind_of(coll),
        (team.context, team.size),
        tag,
        team.job_ranks.clone(),
        input,
        output,
    );
    let input = b.has(INPUT).then(|| Region::whole(INPUT, len));
    b.node(op, input, Region::whole(OUTPUT, out_len))?;
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::{Datatype, ReduceOp};

    fn layout(nodes: Vec<Vec<u32>>) -> NodeTeam {
        let n = nodes.iter().map(Vec::len).sum();
        let mut node_of = vec![0; n];
        for (k, m) in nodes.iter().enumerate() {
            for &r in m {
                node_of[r as usize] = k as u32;
            }
        }
        NodeTeam {
            region: 7,
            node_of,
            nodes,
        }
    }

    fn sum() -> Collective {
        Collective::Allreduce {
            op: ReduceOp::Sum,
            dtype: Datatype::I32,
        }
    }

    fn node_op(route: Route) -> NodeOp {
        match route {
            Route::Node(op) => op,
            Route::Schedule => panic!("expected the node path"),
        }
    }

    #[test]
    fn one_node_takes_the_node_path() {
        let nt = layout(vec![vec![0, 1, 2]]);
        let op = node_op(plan(Some(&nt), 1, 3, &Collective::Barrier, None, None).unwrap());
        assert_eq!((op.region, op.kind, op.len), (7, NodeKind::Barrier, 0));
        let op = node_op(plan(Some(&nt), 1, 3, &sum(), Some(16), Some(16)).unwrap());
        assert_eq!((op.kind, op.len), (NodeKind::Allreduce, 16));
        let op = node_op(plan(Some(&nt), 1, 3, &sum(), None, Some(8)).unwrap());
        assert_eq!(op.len, 8);
        let bcast = Collective::Bcast { root: 2 };
        let op = node_op(plan(Some(&nt), 0, 3, &bcast, None, Some(5)).unwrap());
        assert_eq!((op.kind, op.root, op.len), (NodeKind::Bcast, 2, 5));
    }

    #[test]
    fn reduce_lengths_depend_on_the_root() {
        let nt = layout(vec![vec![0, 1]]);
        let reduce = Collective::Reduce {
            root: 0,
            op: ReduceOp::Sum,
            dtype: Datatype::I32,
        };
        // A non-root has no output; its input is the length.
        let op = node_op(plan(Some(&nt), 1, 2, &reduce, Some(12), None).unwrap());
        assert_eq!((op.kind, op.len, op.root), (NodeKind::Reduce, 12, 0));
        // The root's output must match its input.
        let r = plan(Some(&nt), 0, 2, &reduce, Some(12), Some(8)).unwrap();
        assert!(matches!(r, Route::Schedule));
        let op = node_op(plan(Some(&nt), 0, 2, &reduce, None, Some(8)).unwrap());
        assert_eq!(op.len, 8);
    }

    #[test]
    fn bad_arguments_go_to_a_schedule_or_fail() {
        let nt = layout(vec![vec![0, 1]]);
        let route = |c: &Collective, i, o| plan(Some(&nt), 0, 2, c, i, o).unwrap();
        // Mismatched lengths, a partial element, a root out of range: the
        // builder reports them.
        assert!(matches!(route(&sum(), Some(8), Some(4)), Route::Schedule));
        assert!(matches!(route(&sum(), None, Some(6)), Route::Schedule));
        let bcast = Collective::Bcast { root: 2 };
        assert!(matches!(route(&bcast, None, Some(4)), Route::Schedule));
        // An op the type lacks is an error on the node path too.
        let band = Collective::Allreduce {
            op: ReduceOp::Band,
            dtype: Datatype::F64,
        };
        assert!(plan(Some(&nt), 0, 2, &band, None, Some(8)).is_err());
    }

    #[test]
    fn other_layouts_and_calls_take_a_schedule() {
        let gather = Collective::Gather { root: 0, v: None };
        let one = layout(vec![vec![0, 1]]);
        assert!(matches!(
            plan(Some(&one), 0, 2, &gather, Some(4), Some(8)).unwrap(),
            Route::Schedule
        ));
        assert!(matches!(
            plan(None, 0, 2, &sum(), None, Some(8)).unwrap(),
            Route::Schedule
        ));
        // Several nodes: a schedule, hierarchical for a commutative op.
        let two = layout(vec![vec![0, 1], vec![2, 3]]);
        assert!(matches!(
            plan(Some(&two), 0, 4, &sum(), None, Some(8)).unwrap(),
            Route::Schedule
        ));
        assert!(matches!(path(Some(&two), &sum()), Path::Hierarchical(_)));
        let user = Collective::Allreduce {
            op: ReduceOp::User(crate::coll::UserOp::new(|_, _| {}, false)),
            dtype: Datatype::I32,
        };
        assert!(matches!(path(Some(&two), &user), Path::PointToPoint));
        assert!(matches!(path(Some(&one), &user), Path::Single(_)));
        // No two members share a node: nothing to gain.
        let apart = layout(vec![vec![0], vec![1]]);
        assert!(matches!(path(Some(&apart), &sum()), Path::PointToPoint));
    }
}
