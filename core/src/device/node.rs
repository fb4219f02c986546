//! Node collectives: barrier, bcast, reduce and allreduce among the ranks
//! of one node through flags and buffers in shared memory, not messages
//! (MPICH's POSIX release/gather, Open MPI's xhc). A device that shares
//! memory with its node's ranks offers them through [`Device::node`].
//! Which calls use them is decided in one place, core's routing
//! ([`plan`](crate::coll::plan)); the engine's schedules run them as one
//! step ([`Step::Node`]), a nonblocking call on a one-node communicator as a
//! request without a schedule (`engine/node_coll.rs`), and the `ferry`
//! crate's blocking collectives poll them directly with the caller's
//! slices.
//!
//! # The contract
//! - A *region* serves one communicator's members on this node, named by an
//!   id the members agree on (its collective context). [`attach`] is
//!   collective over them: the leader creates the region, then (after a
//!   barrier the caller runs) the others open it, then (after another)
//!   [`attached`] lets the leader remove its name.
//! - Every member runs the same operations on a region in the same order
//!   (MPI's rule for collectives). [`reserve`] takes an operation's
//!   sequence numbers in that order, at its start; [`poll`] advances it
//!   without ever blocking and reports when this rank's part is done.
//! - A sleeping member is woken when a flag it waits for changes: a poll
//!   that returns `false` leaves the device knowing what it waits for, and
//!   the device's `arm` reports [`Armed::Pending`] if any of it is already
//!   there, so no wake-up is lost.
//!
//! [`Device::node`]: super::Device::node
//! [`Step::Node`]: crate::coll::Step::Node
//! [`attach`]: NodeCollectives::attach
//! [`attached`]: NodeCollectives::attached
//! [`reserve`]: NodeCollectives::reserve
//! [`poll`]: NodeCollectives::poll
//! [`Armed::Pending`]: super::Armed::Pending

use crate::envelope::Rank;
use crate::error::Error;
use crate::reduction::{Datatype, ReduceOp};

/// Which node operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Every member waits for all.
    Barrier,
    /// The root's buffer to everyone's output.
    Bcast,
    /// Everyone's input reduced into the root's output.
    Reduce,
    /// Everyone's input reduced into everyone's output.
    Allreduce,
}

/// One node operation and where it stands (the device's state machine
/// lives in here, so that a schedule can hold it and run it again).
#[derive(Debug, Clone)]
pub struct NodeOp {
    /// The region.
    pub region: u64,
    /// The operation.
    pub kind: NodeKind,
    /// Bytes of data (0 for a barrier).
    pub len: usize,
    /// The root's index among the region's members (bcast, reduce).
    pub root: u32,
    /// The reduction (reduce, allreduce).
    pub op: Option<(ReduceOp, Datatype)>,
    /// The first sequence number ([`NodeCollectives::reserve`]).
    pub seq: u64,
    /// Chunks done.
    pub chunk: u64,
    /// Where in the current chunk (device-defined).
    pub phase: u8,
}

impl NodeOp {
    /// A node operation on `region`, not yet reserved.
    pub fn new(
        region: u64,
        kind: NodeKind,
        len: usize,
        root: u32,
        op: Option<(ReduceOp, Datatype)>,
    ) -> NodeOp {
        NodeOp {
            region,
            kind,
            len,
            root,
            op,
            seq: 0,
            chunk: 0,
            phase: 0,
        }
    }

    /// Back to the start (a persistent collective runs again).
    pub fn reset(&mut self) {
        self.seq = 0;
        self.chunk = 0;
        self.phase = 0;
    }
}

/// A device's node collectives; see the module docs.
pub trait NodeCollectives {
    /// The job ranks this device shares memory with (this one included).
    fn local_ranks(&self) -> &[Rank];

    /// Creates (`leader`) or opens the region `id` for `members` (job ranks,
    /// in communicator order; this rank among them).
    ///
    /// # Errors
    /// The region could not be made or mapped, or does not match.
    fn attach(&mut self, id: u64, members: &[Rank], leader: bool) -> Result<(), Error>;

    /// Every member has attached: the leader removes the region's name.
    fn attached(&mut self, id: u64);

    /// Unmaps the region (its communicator was freed).
    fn detach(&mut self, id: u64);

    /// Is region `id` attached?
    fn has(&self, id: u64) -> bool;

    /// Takes `op`'s sequence numbers: call in issue order.
    ///
    /// # Errors
    /// No such region.
    fn reserve(&mut self, op: &mut NodeOp) -> Result<(), Error>;

    /// Advances `op`: `input` is this rank's contribution (`None`: it is
    /// in `output`, in place), `output` where results land. `Ok(true)` once
    /// this rank's part is done.
    ///
    /// # Errors
    /// A member died, the region is gone, or the reduction failed.
    fn poll(
        &mut self,
        op: &mut NodeOp,
        input: Option<&[u8]>,
        output: &mut [u8],
    ) -> Result<bool, Error>;
}
