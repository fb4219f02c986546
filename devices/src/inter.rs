//! Intercommunicators (`MPI_Intercomm_create`, `MPI_Intercomm_merge`): two
//! disjoint groups, each member's point-to-point ranks naming the other
//! group's members. Point-to-point, probes, persistent requests, `dup`,
//! `split`, `create`, `compare`, `merge` and the collectives
//! (`coll/inter.rs`; all but scan and exscan, which MPI leaves undefined
//! here) work.
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

/// The leaders' tags on the bridge: these, the idups' swaps from
/// `IDUP_BRIDGE_TAGS` up, and the intercommunicator's collectives
/// (`coll/inter.rs`) between.
pub(crate) const BRIDGE_TAGS: std::ops::RangeInclusive<Tag> = MASK_TAG..=CREATE_TAG;
const MASK_TAG: Tag = 1;
const HIGH_TAG: Tag = 2;
const SPLIT_TAG: Tag = 3;
const CREATE_TAG: Tag = 4;

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
    /// `remote_leader` matter only at `local_leader`, and `tag` tells the
    /// leaders' messages on `peer` apart from the program's (MPI's rule:
    /// the program must not receive them with a wildcard meanwhile).
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
        // The leaders swap their groups (as job ranks), then tell their sides.
        let remote = lead_and_tell(self, local_leader, || {
            let peer = peer.ok_or(ApiError::InvalidGroup(
                "the local leader needs a peer communicator",
            ))?;
            swap_list(peer, remote_leader, tag, self.inner.group.job_ranks())
        })?;
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
        // the remote flag, the remote leader and its own.
        let me = self.inner.shared.rank as u64;
        let word = lead_and_tell(local, 0, || {
            let theirs = swap(&parts.bridge, 0, HIGH_TAG, &[u64::from(high), me])?;
            Ok(vec![theirs[0], theirs[1], me])
        })?;
        let their_high = word[0] != 0;
        let local_first = if high == their_high {
            word[2] < word[1]
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

    /// `MPI_Comm_split` of an intercommunicator (MPI 2.2): the members of
    /// each side with the same `color` form the local group, ranked by
    /// `key` then by rank, of a new intercommunicator whose remote group is
    /// the other side's members of that color. `None` for
    /// [`UNDEFINED`](crate::UNDEFINED) or a color the other side lacks.
    /// Collective over both sides.
    pub(crate) fn split_inter(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        let parts = self.inter_parts()?;
        let local = &parts.local;
        let mut mine = vec![0i32; 2 * local.size() as usize];
        local.allgather(&[color, key], &mut mine)?;
        let theirs = lead_and_tell(local, 0, || {
            swap_list(&parts.bridge, 0, SPLIT_TAG, mine.clone())
        })?;
        let block = self.agree_inter(parts)?;
        let pool = &self.shared().contexts;
        if color == crate::UNDEFINED {
            pool.release(block);
            return Ok(None);
        }
        let (lranks, rranks) = (of_color(&mine, color), of_color(&theirs, color));
        if rranks.is_empty() {
            pool.release(block);
            return Ok(None);
        }
        let (lgroup, rgroup) = (self.group().incl(&lranks)?, self.inner.peers.incl(&rranks)?);
        Ok(Some(self.inter_from(lgroup, rgroup, block, self.hints())))
    }

    /// `MPI_Comm_create` on an intercommunicator (MPI 2.2): each side
    /// passes a subgroup of its local group (the same on all its members);
    /// the members of it get an intercommunicator whose remote group is
    /// the other side's. `None` outside the group, or if either group is
    /// empty. Collective over both sides.
    pub(crate) fn create_inter(&self, group: &Group) -> Result<Option<Comm>> {
        let parts = self.inter_parts()?;
        if group.difference(&self.group()).size() != 0 {
            return Err(
                ApiError::InvalidGroup("the group has processes outside the local group").into(),
            );
        }
        let theirs = lead_and_tell(&parts.local, 0, || {
            swap_list(&parts.bridge, 0, CREATE_TAG, group.job_ranks())
        })?;
        let block = self.agree_inter(parts)?;
        let me = self.inner.shared.rank;
        let local = Group::from_job_ranks(group.job_ranks(), me)?;
        let remote = Group::from_job_ranks(theirs, me)?;
        if local.rank().is_none() || remote.size() == 0 {
            self.shared().contexts.release(block);
            return Ok(None);
        }
        Ok(Some(self.inter_from(local, remote, block, self.hints())))
    }

    /// `MPI_Comm_dup` of an intercommunicator: the same groups on a new
    /// block, agreed by both sides.
    pub(crate) fn dup_inter(&self, hints: Hints) -> Result<Comm> {
        let block = self.agree_inter(self.inter_parts()?)?;
        Ok(self.inter_from(self.group(), self.inner.peers.clone(), block, hints))
    }

    /// An intercommunicator's parts (`None` on an intracommunicator).
    pub(crate) fn inter_parts_if_any(&self) -> Option<&InterParts> {
        self.inner.inter.as_ref().and_then(|i| i.parts.as_ref())
    }

    /// A communicator of the same groups (both, on an intercommunicator)
    /// on `block`: what a dup makes once its block is agreed.
    pub(crate) fn same_groups_on(&self, block: u32, hints: Hints) -> Comm {
        if self.is_inter() {
            self.inter_from(self.group(), self.inner.peers.clone(), block, hints)
        } else {
            self.derived(self.group(), block, hints)
        }
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
            true,
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
            true,
        )
    }
}

/// The ranks of a side's `(color, key)` list with `color`, by key then rank.
fn of_color(list: &[i32], color: i32) -> Vec<Rank> {
    let mut members: Vec<(i32, Rank)> = list
        .chunks_exact(2)
        .enumerate()
        .filter(|(_, ck)| ck[0] == color)
        .map(|(r, ck)| (ck[1], r as Rank))
        .collect();
    members.sort_unstable();
    members.into_iter().map(|(_, r)| r).collect()
}

/// Sends `mine` to `peer_rank` of `via` and receives `theirs` from it:
/// the two leaders' exchange, safe in either order (the send does not wait
/// for the receive).
fn exchange<T: crate::typed::Element>(
    via: &Comm,
    peer_rank: Rank,
    tag: Tag,
    mine: Vec<T>,
    theirs: &mut [T],
) -> Result<()> {
    let mut send = via.isend(mine, peer_rank, tag)?;
    via.recv(theirs, peer_rank, tag)?;
    send.wait()?;
    Ok(())
}

/// [`exchange`] of as many elements as `mine` has.
fn swap<T: crate::typed::Element>(
    via: &Comm,
    peer_rank: Rank,
    tag: Tag,
    mine: &[T],
) -> Result<Vec<T>> {
    let mut theirs = mine.to_vec();
    exchange(via, peer_rank, tag, mine.to_vec(), &mut theirs)?;
    Ok(theirs)
}

/// [`exchange`] of lists whose lengths may differ (the lengths first).
fn swap_list<T: crate::typed::Element + Default>(
    via: &Comm,
    peer_rank: Rank,
    tag: Tag,
    mine: Vec<T>,
) -> Result<Vec<T>> {
    let len = swap(via, peer_rank, tag, &[mine.len() as u64])?;
    let mut theirs = vec![T::default(); len[0] as usize];
    exchange(via, peer_rank, tag, mine, &mut theirs)?;
    Ok(theirs)
}

/// Runs `swap` at `local`'s `leader` and hands its list to every member
/// of `local` (the leader's failure too, as [`ApiError::LeaderFailed`]).
fn lead_and_tell<T: crate::typed::Element + Default>(
    local: &Comm,
    leader: Rank,
    swap: impl FnOnce() -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    // A fault flag and the length, then the list.
    let mut head = [0u64; 2];
    let mut list = Vec::new();
    if local.rank() == leader {
        match swap() {
            Ok(l) => {
                head[1] = l.len() as u64;
                list = l;
            }
            Err(e) => {
                head[0] = 1;
                local.bcast(&mut head, leader)?;
                return Err(e);
            }
        }
    }
    local.bcast(&mut head, leader)?;
    if head[0] != 0 {
        return Err(ApiError::LeaderFailed.into());
    }
    list.resize(head[1] as usize, T::default());
    local.bcast(&mut list, leader)?;
    Ok(list)
}
