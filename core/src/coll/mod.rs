//! Collective operations as sans-IO schedules (DESIGN §9).
//!
//! A collective call is turned into a [`Schedule`] by [`build`]: rounds of
//! sends and receives on the communicator's collective context, plus local
//! reductions and copies. The engine runs it from its progress and
//! completes a request of the same kind as point-to-point ones. The
//! `ferry` crate hands the engine the call's description and buffers in one
//! call, [`Engine::start_collective`](crate::Engine::start_collective) (or
//! [`Engine::collective_init`](crate::Engine::collective_init) for a
//! persistent one that [`Engine::start`](crate::Engine::start) runs again),
//! which routes, builds and starts it; [`Engine::start_coll`] and
//! [`Engine::coll_init`] take a schedule built elsewhere (an
//! intercommunicator's, [`build_inter`]).
//!
//! [`Engine::start_coll`]: crate::Engine::start_coll
//! [`Engine::coll_init`]: crate::Engine::coll_init
//!
//! Counts here are in bytes; the `ferry` crate multiplies element counts by
//! the element size. Each call's messages carry the call's `tag` (its
//! sequence number on the communicator, plus a hash of its kind, root and
//! count, `signature.rs`), so two collectives outstanding on one communicator
//! never take each other's messages, ranks that disagree on a call find out,
//! and the collective context keeps them apart from user traffic.
//!
//! Which path a call takes is decided once, here: [`plan`] ([`route`])
//! answers [`Route::Node`] (one node operation through shared memory, on a
//! communicator that lives on one node) or [`Route::Schedule`]; the
//! builders' node and hierarchical algorithms follow the same rule. Within
//! a schedule, point-to-point algorithms are chosen by a [`CollTable`]
//! built once per communicator ([`tune`]); the builders are in `algo/`,
//! one family per file, and an
//! intercommunicator's in [`inter`]. The reductions' element types, ops and
//! kernels are a floor below, in [`reduction`](crate::reduction) (re-exported
//! here).

mod algo;
pub mod inter;
pub mod neighbors;
pub mod route;
pub mod schedule;
pub(crate) mod signature;
pub mod tune;

use std::sync::Arc;

/// The element types, ops and kernels, at their former path: they live in
/// [`reduction`](crate::reduction), a floor below.
pub use crate::reduction as reduce;
pub use crate::reduction::{fold_in_order, reduce_into, Datatype, ReduceOp, UserOp};
pub use inter::{build_inter, InterTeam, INTER_IDLE, INTER_ROOT};
pub use neighbors::{Neighbors, Pairing, NO_NEIGHBOR};
pub use route::{plan, Route};
pub use schedule::{CollKind, Region, Schedule, SlotId, Step, INPUT, OUTPUT};
pub use signature::{TagSpace, INTER_TAGS};
pub use tune::{CollTable, CollTuning};

use crate::buffer::Buf;
use crate::envelope::{ContextId, Rank, Tag};
use crate::error::{Result, UsageError};

/// A communicator as the builders see it.
#[derive(Debug, Clone)]
pub struct Team {
    /// The collective context id.
    pub context: ContextId,
    /// This process's rank in the communicator.
    pub rank: u32,
    /// The communicator's size.
    pub size: u32,
    /// Communicator rank to job rank (`None`: the identity).
    pub job_ranks: Option<Arc<[Rank]>>,
    /// How the members sit on nodes, when this rank's node runs node
    /// collectives for the communicator (`None`: point-to-point only).
    pub node: Option<Arc<NodeTeam>>,
}

impl Team {
    /// [`plan`] for this team, from the call's buffers.
    ///
    /// # Errors
    /// As for [`plan`].
    pub fn plan(
        &self,
        coll: &Collective,
        input: Option<&Buf>,
        output: Option<&Buf>,
    ) -> Result<Route> {
        let (i, o) = (input.map(Buf::len), output.map(Buf::len));
        plan(self.node.as_deref(), self.rank, self.size, coll, i, o)
    }
}

/// A communicator's layout over nodes, for the node and hierarchical
/// algorithms (DESIGN §9: node level through shared memory, then the node
/// leaders over the network device, then node level again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTeam {
    /// The node region of this rank's node
    /// ([`NodeCollectives`](crate::device::NodeCollectives)).
    pub region: u64,
    /// For every communicator rank, the index of its node.
    pub node_of: Vec<u32>,
    /// For every node, its members' communicator ranks in order (the first
    /// is the node's leader).
    pub nodes: Vec<Vec<u32>>,
}

/// A collective call and its byte counts. Buffers are passed separately:
/// see each variant for what `input` and `output` must hold (`None` where
/// MPI would take `MPI_IN_PLACE` or ignore the argument).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Collective {
    /// No buffers.
    Barrier,
    /// `output` on every rank: the root's data, overwritten elsewhere.
    Bcast {
        /// The root.
        root: u32,
    },
    /// `input`: this rank's data (`None` in place at the root, whose data
    /// is then in `output`); `output`: the result, at the root only.
    Reduce {
        /// The root.
        root: u32,
        /// The operation.
        op: ReduceOp,
        /// The element type.
        dtype: Datatype,
    },
    /// `input` (or `None` in place); `output`: the result everywhere.
    Allreduce {
        /// The operation.
        op: ReduceOp,
        /// The element type.
        dtype: Datatype,
    },
    /// `input`: this rank's block (`None` in place at the root, whose block
    /// already sits in `output`); `output` at the root: every block, by
    /// rank, at `displs` (all equal counts when `counts` is `None`).
    Gather {
        /// The root.
        root: u32,
        /// Per-rank byte counts and displacements (gatherv), or `None`.
        v: Option<Counts>,
    },
    /// `input` at the root: every block; `output`: this rank's block
    /// (`None` in place at the root, which keeps its block in `input`).
    Scatter {
        /// The root.
        root: u32,
        /// Per-rank byte counts and displacements (scatterv), or `None`.
        v: Option<Counts>,
    },
    /// `input`: this rank's block (`None` in place: it is already in
    /// `output` at this rank's place); `output`: every block.
    Allgather {
        /// Per-rank counts and displacements (allgatherv), or `None`.
        v: Option<Counts>,
    },
    /// `input`: one block per destination (`None` in place: `output` holds
    /// them and is overwritten); `output`: one block per source.
    Alltoall {
        /// Per-rank send and receive counts (alltoallv), or `None`.
        v: Option<(Counts, Counts)>,
    },
    /// `input`: the full vector (`None` in place: `output` holds it);
    /// `output`: this rank's block of the reduced vector (in place: at the
    /// start of `output`). Block sizes: `counts`, or equal.
    ReduceScatter {
        /// Per-rank byte counts (reduce_scatter), or `None` (the block
        /// variant, `output`'s length each).
        counts: Option<Vec<usize>>,
        /// The operation.
        op: ReduceOp,
        /// The element type.
        dtype: Datatype,
    },
    /// `input` (or `None` in place); `output`: the reduction over ranks
    /// `0..=rank`.
    Scan {
        /// The operation.
        op: ReduceOp,
        /// The element type.
        dtype: Datatype,
    },
    /// As [`Collective::Scan`] over ranks `0..rank`; rank 0's `output` is
    /// left as it was.
    Exscan {
        /// The operation.
        op: ReduceOp,
        /// The element type.
        dtype: Datatype,
    },
    /// A neighborhood collective on a process topology (MPI 4.1 §8.6):
    /// `input` holds the blocks sent, one per destination at `send`, or,
    /// with `send` `None`, one block (all of `input`) sent to every
    /// destination (the allgather); `output` receives one block per
    /// source at `recv`. Blocks of [`NO_NEIGHBOR`] are left as they were.
    Neighbor {
        /// Who this rank receives from and sends to.
        neighbors: Arc<Neighbors>,
        /// Byte counts and places of the blocks sent (alltoall), or `None`
        /// (allgather).
        send: Option<Counts>,
        /// Byte counts and places of the blocks received.
        recv: Counts,
    },
}

/// Per-rank byte counts and displacements of a v-collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Bytes per rank.
    pub counts: Vec<usize>,
    /// Byte offset of each rank's block.
    pub displs: Vec<usize>,
}

impl Counts {
    /// Blocks laid end to end.
    pub fn packed(counts: Vec<usize>) -> Counts {
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0;
        for &c in &counts {
            displs.push(at);
            at += c;
        }
        Counts { counts, displs }
    }

    fn check(&self, size: u32, buf_len: usize) -> Result<()> {
        self.check_blocks(
            size as usize,
            buf_len,
            "one count and displacement per rank",
        )
    }

    /// Checks there are `n` blocks and each lies inside `buf_len` bytes.
    fn check_blocks(&self, n: usize, buf_len: usize, what: &'static str) -> Result<()> {
        if self.counts.len() != n || self.displs.len() != n {
            return Err(UsageError::LengthMismatch(what).into());
        }
        for (&c, &d) in self.counts.iter().zip(&self.displs) {
            if d.checked_add(c).is_none_or(|end| end > buf_len) {
                return Err(UsageError::LengthMismatch(
                    "a block's displacement and count leave its buffer",
                )
                .into());
            }
        }
        Ok(())
    }
}

/// Builds the schedule of one collective call, routed by [`plan`] (a
/// [`Route::Node`] is a one-step schedule); `tag` is the call's sequence
/// number on the communicator (only its low bits are kept).
///
/// # Errors
/// [`UsageError::InvalidRank`] for a root outside the communicator,
/// [`UsageError::LengthMismatch`] for buffers of the wrong size (or a
/// missing one), `OpNotDefined` for an op the datatype does not support,
/// out of memory for temporaries.
pub fn build(
    team: &Team,
    tag: Tag,
    table: &CollTable,
    coll: Collective,
    input: Option<Buf>,
    output: Option<Buf>,
) -> Result<Schedule> {
    match team.plan(&coll, input.as_ref(), output.as_ref())? {
        Route::Node(op) => {
            let tag = signature_tag(team, tag, &coll, input.as_ref(), output.as_ref());
            route::node_schedule(team, tag, &coll, op, input, output)
        }
        Route::Schedule => build_routed(team, tag, table, coll, input, output),
    }
}

/// [`build`] of a call [`plan`] routed to [`Route::Schedule`].
pub(crate) fn build_routed(
    team: &Team,
    tag: Tag,
    table: &CollTable,
    coll: Collective,
    input: Option<Buf>,
    output: Option<Buf>,
) -> Result<Schedule> {
    let tag = signature_tag(team, tag, &coll, input.as_ref(), output.as_ref());
    algo::build(team, tag, table, coll, input, output)
}

/// The call's tag: its sequence number and signature.
fn signature_tag(
    team: &Team,
    tag: Tag,
    coll: &Collective,
    input: Option<&Buf>,
    output: Option<&Buf>,
) -> Tag {
    let (i, o) = (input.map(Buf::len), output.map(Buf::len));
    signature::Signature::of(coll, team.size, i, o).tag(tag)
}
