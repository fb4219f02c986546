//! Communicators: a group of processes with their own context ids.
//!
//! Ranks passed to and reported by a [`Comm`] are communicator ranks; the
//! engine works in job ranks. Each communicator translates both ways (its
//! [`Group`]), so a [`Status`] always reports the source as a rank of the
//! communicator the operation was posted on.
//!
//! # Context ids
//! Every communicator owns [`CONTEXTS_PER_COMM`] consecutive context ids:
//! the first carries point-to-point traffic, the second its collectives
//! (so the two never match each other); the others are reserved (`world`
//! uses its last for finalize's drain). `world` owns `0..4`, `self` owns
//! `4..8`; communicators made later (`dup`, `split`, `create`) take blocks
//! from [`FIRST_FREE_CONTEXT`] on, agreed by every member (see
//! `contexts.rs`), and give them back when their last handle drops.
//!
//! Context ids from [`PARTITIONED_CONTEXT`] up are no block's: a
//! communicator's partitioned communication (MPI 4.0's `MPI_Psend_init`)
//! travels on its first context with that bit set
//! ([`Comm::partitioned_channel`]), so it never matches the program's
//! point-to-point messages nor any construction's, whatever their tags.
//!
//! # Intercommunicators
//! An intercommunicator (`inter.rs`) has a local group (its `rank` and
//! `size`) and a remote group, which every point-to-point rank names. Its
//! block's first context carries the program's traffic; the second the
//! leaders' own exchanges (`bridge`); the third and fourth are the local
//! group's intracommunicator (`local`), on which the agreements of `dup`
//! and `merge` run. The groups are disjoint, so the two sides' local
//! intracommunicators share context ids without ever matching each other.
//! Its collectives share the bridge's context, on tags the leaders never
//! use (`coll/inter.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use ferry_core::coll::{CollTable, NodeTeam, Team};
use ferry_core::{ContextId, Rank, Status, ANY_SOURCE, PROC_NULL, TAG_UB};

use crate::error::Result;
use crate::group::Group;
use crate::shared::Shared;

/// Context ids owned by each communicator: point-to-point, collectives,
/// and two reserved.
pub const CONTEXTS_PER_COMM: ContextId = 4;
/// `world`'s first context id.
pub(crate) const WORLD_CONTEXT: ContextId = 0;
/// The last of the world's contexts: finalize's drain barrier, which must
/// never match user traffic.
pub(crate) const FINALIZE_CONTEXT: ContextId = WORLD_CONTEXT + CONTEXTS_PER_COMM - 1;
/// An idup's rounds on an intercommunicator's bridge use this plus its
/// tag, above the tags of the leaders' blocking exchanges there.
pub(crate) const IDUP_BRIDGE_TAGS: i32 = 1 << 29;
/// The bit that sets a communicator's partitioned traffic apart (see the
/// module docs): the pool hands out blocks far below it.
pub const PARTITIONED_CONTEXT: ContextId = 1 << 31;
/// `self`'s first context id.
pub(crate) const SELF_CONTEXT: ContextId = CONTEXTS_PER_COMM;
/// The first context id not taken by `world` and `self`.
pub const FIRST_FREE_CONTEXT: ContextId = 2 * CONTEXTS_PER_COMM;

/// Per-communicator hints (MPI's info keys), inherited by `dup`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// `mpi_recv_req_may_be_empty` (the `REQUEST_EMPTY` proposal): a
    /// receive that finds its message already arrived may complete inside
    /// its call and return `REQUEST_EMPTY` (with its buffer) instead of a
    /// request. Off unless the communicator opts in.
    pub recv_may_be_empty: bool,
}

/// What a communicator's handles share.
#[derive(Debug)]
pub(crate) struct CommInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) group: Group,
    /// What point-to-point ranks name: the remote group of an
    /// intercommunicator, else `group` itself.
    pub(crate) peers: Group,
    /// Set on an intercommunicator.
    pub(crate) inter: Option<Inter>,
    pub(crate) context: ContextId,
    pub(crate) rank: Rank,
    /// Communicator rank to job rank for the collective builders (`None`:
    /// the identity).
    job_ranks: Option<Arc<[Rank]>>,
    pub(crate) table: CollTable,
    /// The next collective's sequence number (its tag): every member
    /// issues collectives in the same order, so they agree on it.
    seq: AtomicU32,
    /// The next `idup`'s number on this communicator (the tag of its
    /// agreement's rounds): `idup` is collective, so every member agrees.
    idups: AtomicU32,
    pub(crate) hints: Hints,
    /// The context block to give back on drop (`None` for world and self).
    block: Option<u32>,
    /// The layout over nodes for node collectives, set up by the first
    /// collective (`None` inside: point-to-point only).
    pub(crate) node: std::sync::OnceLock<Option<Arc<NodeTeam>>>,
    /// Set while the node layout is being set up (its own collectives run
    /// point-to-point).
    pub(crate) node_setup: std::sync::atomic::AtomicBool,
}

/// What makes a communicator an intercommunicator.
#[derive(Debug)]
pub(crate) struct Inter {
    /// `None` on the leaders' bridge itself, which never agrees on
    /// anything.
    pub(crate) parts: Option<InterParts>,
}

/// An intercommunicator's own communicators.
#[derive(Debug)]
pub(crate) struct InterParts {
    /// The local group's intracommunicator (the block's last two contexts).
    pub(crate) local: Comm,
    /// The leaders' channel: the remote group's ranks on the block's
    /// second context, apart from the program's traffic.
    pub(crate) bridge: Comm,
}

impl CommInner {
    /// A status with its source translated to this communicator's ranks
    /// (the remote group's, on an intercommunicator).
    pub(crate) fn status(&self, mut s: Status) -> Status {
        if s.source != PROC_NULL && s.source != ANY_SOURCE {
            s.source = self.peers.to_group(s.source).unwrap_or(PROC_NULL);
        }
        s
    }

    /// The collective context id.
    pub(crate) fn coll_context(&self) -> ContextId {
        self.context + 1
    }

    /// The team the collective builders see.
    pub(crate) fn team(&self) -> Team {
        Team {
            context: self.coll_context(),
            rank: self.rank as u32,
            size: self.group.size(),
            job_ranks: self.job_ranks.clone(),
            node: self.node.get().cloned().flatten(),
        }
    }

    /// The node region's id: the collective context, unique on this
    /// process and agreed by every member.
    pub(crate) fn region(&self) -> u64 {
        u64::from(self.coll_context())
    }

    /// The tag of the next collective.
    pub(crate) fn next_tag(&self) -> i32 {
        (self.seq.fetch_add(1, Ordering::Relaxed) & TAG_UB as u32) as i32
    }

    /// The tag of the next `idup`'s rounds: never 0, the tag of the
    /// world's finalize drain on the context the rounds share with it,
    /// and below [`IDUP_BRIDGE_TAGS`].
    pub(crate) fn next_idup_tag(&self) -> i32 {
        (self.idups.fetch_add(1, Ordering::Relaxed) % (IDUP_BRIDGE_TAGS as u32 - 1)) as i32 + 1
    }
}

impl Drop for CommInner {
    fn drop(&mut self) {
        let attached = self.node.get().is_some_and(Option::is_some);
        // Refused only on a thread the thread level forbids: the context's
        // members and node region then stay behind, as a leaked request does.
        if let Some(e) = self
            .shared
            .lock()
            .as_mut()
            .ok()
            .and_then(|g| g.engine().ok())
        {
            if self.block.is_some() {
                let used = if self.inter.is_some() {
                    CONTEXTS_PER_COMM
                } else {
                    1
                };
                for context in self.context..self.context + used {
                    e.clear_context_members(context);
                }
            }
            if attached {
                if let Some(node) = ferry_core::Device::node(e.device_mut()) {
                    node.detach(self.region());
                }
            }
        }
        if let Some(block) = self.block {
            self.shared.contexts.release(block);
        }
    }
}

/// A communicator: `Send + Sync`, cheap to clone. The last handle dropped
/// frees it (`MPI_Comm_free`) and gives its context ids back.
///
/// Point-to-point operations are methods of `Comm` (see the crate docs for
/// the three buffer styles: owned, scoped, raw), and so are the collectives
/// and the communicator constructors (`dup`, `split`, `create`).
#[derive(Debug, Clone)]
pub struct Comm {
    pub(crate) inner: Arc<CommInner>,
}

impl Comm {
    /// A communicator over `group` (which must hold this process) with the
    /// context block `block` (`None`: one of the fixed ones at `context`).
    pub(crate) fn new(
        shared: Arc<Shared>,
        group: Group,
        context: ContextId,
        block: Option<u32>,
        hints: Hints,
    ) -> Comm {
        Comm::with_peers(shared, group, None, context, block, hints, true)
    }

    /// A communicator over `group` on `context` for a construction's own
    /// point-to-point traffic: it owns no block, and registers no members
    /// with the engine (it receives from named sources only, and its
    /// context may be one a longer-lived communicator registered).
    pub(crate) fn scratch(shared: Arc<Shared>, group: Group, context: ContextId) -> Comm {
        Comm::with_peers(shared, group, None, context, None, Hints::default(), false)
    }

    /// A communicator whose point-to-point ranks name `remote` (an
    /// intercommunicator's parts) or, with `None`, `group`; `register`:
    /// tell the engine its members, for failing wildcard receives when
    /// one dies.
    pub(crate) fn with_peers(
        shared: Arc<Shared>,
        group: Group,
        remote: Option<(Group, Inter)>,
        context: ContextId,
        block: Option<u32>,
        hints: Hints,
        register: bool,
    ) -> Comm {
        let rank = group.rank().unwrap_or(PROC_NULL);
        let job_ranks: Option<Arc<[Rank]>> =
            (!group.is_identity()).then(|| Arc::from(group.job_ranks()));
        let (peers, inter) = match remote {
            Some((peers, inter)) => (peers, Some(inter)),
            None => (group.clone(), None),
        };
        let partial = if !register {
            None
        } else if inter.is_some() {
            Some(Arc::from(peers.job_ranks()))
        } else {
            job_ranks
                .clone()
                .or_else(|| (group.size() != shared.size).then(|| Arc::from(group.job_ranks())))
        };
        if let Some(members) = partial {
            // A member's death must fail this communicator's ANY_SOURCE
            // receives, and only this one's.
            if let Some(e) = shared.lock().as_mut().ok().and_then(|g| g.engine().ok()) {
                e.set_context_members(context, members);
            }
        }
        let table = CollTable::new(group.size(), shared.config.coll);
        Comm {
            inner: Arc::new(CommInner {
                shared,
                group,
                peers,
                inter,
                context,
                rank,
                job_ranks,
                table,
                seq: AtomicU32::new(0),
                idups: AtomicU32::new(0),
                hints,
                block,
                node: std::sync::OnceLock::new(),
                node_setup: std::sync::atomic::AtomicBool::new(false),
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

    /// The communicator's group (`MPI_Comm_group`).
    pub fn group(&self) -> Group {
        self.inner.group.clone()
    }

    /// The communicator's hints.
    pub fn hints(&self) -> Hints {
        self.inner.hints
    }

    /// The job rank of communicator rank `rank`.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`](crate::ApiError::InvalidRank) for a rank
    /// outside the communicator.
    pub fn job_rank(&self, rank: Rank) -> Result<Rank> {
        self.inner.group.to_job(rank)
    }

    /// The number of processes point-to-point ranks name: the remote
    /// group's size on an intercommunicator, else [`Comm::size`].
    pub fn peer_size(&self) -> u32 {
        self.inner.peers.size()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The same processes, ranks and peers on a context of their own
    /// ([`PARTITIONED_CONTEXT`]): what MPI's partitioned communication
    /// travels on, apart from every other message whatever its tag. It owns
    /// no context block (this communicator's frees them) and registers no
    /// members (partitioned receives name their source).
    pub fn partitioned_channel(&self) -> Comm {
        let i = &self.inner;
        let remote = i
            .inter
            .as_ref()
            .map(|_| (i.peers.clone(), Inter { parts: None }));
        Comm::with_peers(
            Arc::clone(&i.shared),
            i.group.clone(),
            remote,
            i.context | PARTITIONED_CONTEXT,
            None,
            i.hints,
            false,
        )
    }
}
