//! Intercommunicators (`MPI_Intercomm_create`, `MPI_Intercomm_merge`): two
//! disjoint groups, each member's point-to-point ranks naming the other
//! group's members. Collectives, `split` and `create` on one are refused
//! with [`ApiError::Unsupported`]; point-to-point, probes, persistent
//! requests, `dup`, `compare` and `merge` work.
//!
//! Each construction is collective over both groups: the members of each
//! side agree among themselves (on their local intracommunicator) and the
//! two leaders, local rank 0 of each side unless the caller names others,
//! carry the agreement across. A context block is taken only when it is
//! free on every member of both sides (the local masks ANDed, then the two
//! sides' results ANDed by the leaders; `contexts.rs`).

use std::sync::Arc;

use ferry_core::{Rank, Tag};

use crate::comm::{Comm, Hints, Inter, InterParts};
use crate::contexts::base_of;
use crate::error::{ApiError, Result};
use crate::group::Group;

/// The leaders' tags on the bridge; the bridge carries nothing else.
const MASK_TAG: Tag = 1;
const HIGH_TAG: Tag = 2;

impl Comm {
    /// True for an intercommunicator (`MPI_Comm_test_inter`).
    pub fn is_inter(&self) -> bool {
        self.inner.inter.is_some()
    }

    /// The remote group of an intercommunicator (`MPI_Comm_remote_group`;
    /// its size is `MPI_Comm_remote_size`); `None` for an intracommunicator.
    pub fn remote_group(&self) -> Option<Group> {
        self.inner.inter.as_ref().map(|_| self.inner.peers.clone())
    }

    /// `Err(Unsupported(what))` on an intercommunicator.
    pub(crate) fn intra_only(&self, what: &'static str) -> Result<()> {
        match self.inner.inter {
            None => Ok(()),
            Some(_) => Err(ApiError::Unsupported(what).into()),
        }
    }

    /// `MPI_Intercomm_create`: an intercommunicator between this
    /// communicator's members and another group's, whose leader is
    /// `remote_leader` in `peer`. Collective over this communicator and
    /// the remote side's; `peer` (which may be `None` elsewhere) and
    /// `remote_leader` matter only at `local_leader`, and `tag` tells the leaders' messages on `peer`
    /// apart from the program's (MPI's rule: the program must not receive
    /// them with a wildcard meanwhile).
    ///
    /// # Errors
    /// A bad leader rank; groups that overlap (every member of both sides
    /// fails alike); [`ApiError::ContextsExhausted`]; a failed exchange
    /// ([`ApiError::LeaderFailed`] on the members other than the leader).
    pub fn intercomm_create(
        &self,
        local_leader: Rank,
        peer: Option<&Comm>,
        remote_leader: Rank,
        tag: Tag,
    ) -> Result<Comm> {
        self.intra_only("an intercommunicator as the local communicator")?;
        self.inner.group.to_job(local_leader)?;
        // The leaders swap their groups (as job ranks), then tell their
        // sides: a fault flag and the length first.
        let mut remote: Vec<Rank> = Vec::new();
        let mut head = [0u64; 2];
        if self.rank() == local_leader {
            let swapped = peer
                .ok_or_else(|| {
                    ApiError::InvalidGroup("the local leader needs a peer communicator").into()
                })
                .and_then(|p| swap_group(p, remote_leader, tag, &self.inner.group));
            match swapped {
                Ok(r) => {
                    head[1] = r.len() as u64;
                    remote = r;
                }
                Err(e) => {
                    head[0] = 1;
                    self.bcast(&mut head, local_leader)?;
                    return Err(e);
                }
            }
        }
        self.bcast(&mut head, local_leader)?;
        if head[0] != 0 {
            return Err(ApiError::LeaderFailed.into());
        }
        remote.resize(head[1] as usize, 0);
        self.bcast(&mut remote, local_leader)?;
        let remote = Group::from_job_ranks(remote, self.inner.shared.rank)?;
        if remote.rank().is_some() || self.inner.group.intersection(&remote).size() != 0 {
            return Err(ApiError::InvalidGroup(
                "the local and remote groups of an intercommunicator overlap",
            )
            .into());
        }
        let block = self
            .shared()
            .contexts
            .agree_across(self, local_leader, |mask| match peer {
                Some(p) => swap(p, remote_leader, tag, mask),
                None => Err(ApiError::LeaderFailed.into()),
            })?;
        Ok(self.inter_from(self.group(), remote, block, self.hints()))
    }

    /// `MPI_Intercomm_merge`: an intracommunicator of both groups, the
    /// side whose members pass `high == false` first (if both sides pass
    /// the same, the side whose leader has the lower job rank). Collective
    /// over both sides; every member of a side passes the same `high`.
    ///
    /// # Errors
    /// An intracommunicator; as for [`Comm::dup`].
    pub fn intercomm_merge(&self, high: bool) -> Result<Comm> {
        let parts = self.inter_parts()?;
        let local = &parts.local;
        // The leaders swap their flag and job rank; each tells its side
        // (a fault flag, the remote flag, the remote leader, its own).
        let mine = [u64::from(high), self.inner.shared.rank as u64];
        let mut word = [0u64; 4];
        if local.rank() == 0 {
            match swap(&parts.bridge, 0, HIGH_TAG, &mine) {
                Ok(theirs) => word[1..3].copy_from_slice(&theirs),
                Err(e) => {
                    word[0] = 1;
                    local.bcast(&mut word, 0)?;
                    return Err(e);
                }
            }
            word[3] = mine[1];
        }
        local.bcast(&mut word, 0)?;
        if word[0] != 0 {
            return Err(ApiError::LeaderFailed.into());
        }
        let their_high = word[1] != 0;
        let local_first = if high == their_high {
            word[3] < word[2]
        } else {
            !high
        };
        let (mine, theirs) = (self.group(), self.inner.peers.clone());
        let (first, second) = if local_first {
            (mine, theirs)
        } else {
            (theirs, mine)
        };
        let members: Vec<Rank> = first
            .job_ranks()
            .into_iter()
            .chain(second.job_ranks())
            .collect();
        let block = self.agree_inter(parts)?;
        let group = Group::from_job_ranks(members, self.inner.shared.rank)?;
        Ok(Comm::new(
            Arc::clone(&self.inner.shared),
            group,
            base_of(block),
            Some(block),
            self.hints(),
        ))
    }

    /// `MPI_Comm_dup` of an intercommunicator: the same groups on a new
    /// block, agreed by both sides.
    pub(crate) fn dup_inter(&self, hints: Hints) -> Result<Comm> {
        let block = self.agree_inter(self.inter_parts()?)?;
        Ok(self.inter_from(self.group(), self.inner.peers.clone(), block, hints))
    }

    fn inter_parts(&self) -> Result<&InterParts> {
        self.inner
            .inter
            .as_ref()
            .and_then(|i| i.parts.as_ref())
            .ok_or_else(|| {
                ApiError::InvalidGroup("an intracommunicator where an intercommunicator is needed")
                    .into()
            })
    }

    /// A block free on every member of both sides.
    fn agree_inter(&self, parts: &InterParts) -> Result<u32> {
        let bridge = &parts.bridge;
        self.shared()
            .contexts
            .agree_across(&parts.local, 0, |mask| swap(bridge, 0, MASK_TAG, mask))
    }

    /// The intercommunicator of `local` and `remote` on `block`: the
    /// program's traffic on its first context, the leaders' bridge on the
    /// second, the local intracommunicator on the last two.
    fn inter_from(&self, local: Group, remote: Group, block: u32, hints: Hints) -> Comm {
        let shared = &self.inner.shared;
        let base = base_of(block);
        let local_comm = Comm::new(Arc::clone(shared), local.clone(), base + 2, None, hints);
        let bridge = Comm::with_peers(
            Arc::clone(shared),
            local.clone(),
            Some((remote.clone(), Inter { parts: None })),
            base + 1,
            None,
            hints,
        );
        let parts = InterParts {
            local: local_comm,
            bridge,
        };
        Comm::with_peers(
            Arc::clone(shared),
            local,
            Some((remote, Inter { parts: Some(parts) })),
            base,
            Some(block),
            hints,
        )
    }
}

/// Sends `mine` to `peer_rank` of `via` and receives as many elements from
/// it: the two leaders' exchange, safe in either order (the send does not
/// wait for the receive).
fn swap<T: crate::typed::Element>(
    via: &Comm,
    peer_rank: Rank,
    tag: Tag,
    mine: &[T],
) -> Result<Vec<T>> {
    let mut send = via.isend(mine.to_vec(), peer_rank, tag)?;
    let mut theirs = mine.to_vec();
    via.recv(&mut theirs, peer_rank, tag)?;
    send.wait()?;
    Ok(theirs)
}

/// The leaders' swap of their groups, as job ranks (the length first).
fn swap_group(peer: &Comm, remote_leader: Rank, tag: Tag, group: &Group) -> Result<Vec<Rank>> {
    let mine = group.job_ranks();
    let len = swap(peer, remote_leader, tag, &[mine.len() as u64])?;
    let mut send = peer.isend(mine, remote_leader, tag)?;
    let mut theirs = vec![0 as Rank; len[0] as usize];
    peer.recv(&mut theirs, remote_leader, tag)?;
    send.wait()?;
    Ok(theirs)
}
