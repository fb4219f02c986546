//! Process sets (MPI 4.0 sessions, §11.3): the named groups a process can
//! ask for without a communicator. ferry's [`World`] is the Rust API's
//! session: each names the same sets, and a communicator over a set's
//! group comes from [`Comm::create_group`] on the world, collective over
//! that group only.
//!
//! [`Comm::create_group`]: crate::Comm::create_group

use crate::error::{ApiError, Result};
use crate::group::Group;
use crate::world::World;

/// Every process of the job.
pub const PSET_WORLD: &str = "mpi://WORLD";
/// This process alone.
pub const PSET_SELF: &str = "mpi://SELF";
/// The processes on this process's node (they share memory).
pub const PSET_SHARED: &str = "mpi://shared";

/// The process sets, in the order sessions list them.
pub const PSETS: [&str; 3] = [PSET_WORLD, PSET_SELF, PSET_SHARED];

impl World {
    /// The group of process set `name` (one of [`PSETS`]; the `mpi://`
    /// names compare without regard to case). Local: no communication.
    ///
    /// # Errors
    /// [`ApiError::InvalidGroup`] for a name that is no process set.
    pub fn pset_group(&self, name: &str) -> Result<Group> {
        let me = self.rank();
        let is = |set: &str| name.eq_ignore_ascii_case(set);
        if is(PSET_WORLD) {
            Ok(self.world().group())
        } else if is(PSET_SELF) {
            Group::from_job_ranks(vec![me], me)
        } else if is(PSET_SHARED) {
            let node = &self.shared.node_ranks;
            let ranks = if node.contains(&me) {
                node.clone()
            } else {
                vec![me]
            };
            Group::from_job_ranks(ranks, me)
        } else {
            Err(ApiError::InvalidGroup("no process set of that name").into())
        }
    }
}
