//! Communicators: a group of processes with their own context id.
//!
//! Ranks passed to and reported by a [`Comm`] are communicator ranks; the
//! engine works in job ranks. Each communicator translates both ways (its
//! [`Group`]), so a [`Status`] always reports the source as a rank of the
//! communicator the operation was posted on.
//!
//! # Context ids
//! Every communicator owns [`CONTEXTS_PER_COMM`] consecutive context ids:
//! the first carries point-to-point traffic, the others are reserved for its
//! collective schedules (none exists yet), so the two never match each other.
//! `world` owns `0..4`, `self` owns `4..8`; communicators made later
//! (`dup`, `split`) take ids from [`FIRST_FREE_CONTEXT`] on.

use std::sync::Arc;

use ferry_core::{ContextId, Rank, Status, ANY_SOURCE, PROC_NULL};

use crate::error::{ApiError, Result};
use crate::world::{Shared, World};

/// Context ids owned by each communicator: one for point-to-point, the rest
/// reserved for collectives.
pub const CONTEXTS_PER_COMM: ContextId = 4;
/// `world`'s first context id.
pub(crate) const WORLD_CONTEXT: ContextId = 0;
/// The last of the world's contexts: finalize's drain barrier, which must
/// never match user traffic.
pub(crate) const FINALIZE_CONTEXT: ContextId = WORLD_CONTEXT + CONTEXTS_PER_COMM - 1;
/// `self`'s first context id.
pub(crate) const SELF_CONTEXT: ContextId = CONTEXTS_PER_COMM;
/// The first context id not taken by `world` and `self`.
pub const FIRST_FREE_CONTEXT: ContextId = 2 * CONTEXTS_PER_COMM;

/// Which job ranks a communicator holds, in communicator-rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Group {
    /// Every job rank, in order: translation is the identity.
    World { size: u32 },
    /// One job rank (`self`).
    Single { job_rank: Rank },
}

impl Group {
    pub(crate) fn size(&self) -> u32 {
        match self {
            Group::World { size } => *size,
            Group::Single { .. } => 1,
        }
    }

    /// The job rank of communicator rank `rank`; `PROC_NULL` and
    /// `ANY_SOURCE` pass through.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for a rank outside the communicator.
    pub(crate) fn to_job(&self, rank: Rank) -> Result<Rank> {
        if rank == PROC_NULL || rank == ANY_SOURCE {
            return Ok(rank);
        }
        let size = self.size();
        if rank < 0 || rank as u32 >= size {
            return Err(ApiError::InvalidRank { rank, size }.into());
        }
        Ok(match self {
            Group::World { .. } => rank,
            Group::Single { job_rank } => *job_rank,
        })
    }

    /// The communicator rank of job rank `rank` (the special ranks pass
    /// through; a rank outside the group, which the context id makes
    /// impossible for a matched message, reports as `PROC_NULL`).
    pub(crate) fn to_comm(&self, rank: Rank) -> Rank {
        if rank == PROC_NULL || rank == ANY_SOURCE {
            return rank;
        }
        match self {
            Group::World { .. } => rank,
            Group::Single { job_rank } if *job_rank == rank => 0,
            Group::Single { .. } => PROC_NULL,
        }
    }
}

/// What a communicator's handles share.
#[derive(Debug)]
pub(crate) struct CommInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) group: Group,
    pub(crate) context: ContextId,
    pub(crate) rank: Rank,
}

impl CommInner {
    /// A status with its source translated to this communicator's ranks.
    pub(crate) fn status(&self, mut s: Status) -> Status {
        s.source = self.group.to_comm(s.source);
        s
    }
}

/// A communicator: `Send + Sync`, cheap to clone.
///
/// Point-to-point operations are methods of `Comm` (see the crate docs for
/// the three buffer styles: owned, scoped, raw).
#[derive(Debug, Clone)]
pub struct Comm {
    pub(crate) inner: Arc<CommInner>,
}

impl Comm {
    pub(crate) fn new(shared: Arc<Shared>, group: Group, context: ContextId, rank: Rank) -> Comm {
        Comm {
            inner: Arc::new(CommInner {
                shared,
                group,
                context,
                rank,
            }),
        }
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> Rank {
        self.inner.rank
    }

    /// The number of processes in the communicator.
    pub fn size(&self) -> u32 {
        self.inner.group.size()
    }

    /// The context id of its point-to-point traffic (the first of the
    /// [`CONTEXTS_PER_COMM`] it owns).
    pub fn context(&self) -> ContextId {
        self.inner.context
    }

    /// The job rank of communicator rank `rank`.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for a rank outside the communicator.
    pub fn job_rank(&self, rank: Rank) -> Result<Rank> {
        self.inner.group.to_job(rank)
    }

    /// The world this communicator belongs to.
    pub fn world(&self) -> World {
        World {
            shared: Arc::clone(&self.inner.shared),
        }
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }
}
