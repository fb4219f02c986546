//! Making communicators: `dup`, `split`, `split_type`, `create`,
//! `create_group`, and comparing them (`idup` is in `idup.rs`). Each new communicator's context ids are agreed by
//! the parent's members (`contexts.rs`); it inherits the parent's hints
//! unless given its own.

use std::sync::Arc;

use ferry_core::Rank;

use crate::comm::{Comm, Hints};
use crate::contexts::base_of;
use crate::error::{ApiError, Result};
use crate::group::{Group, GroupCompare};

/// `MPI_UNDEFINED`: the `split` color of a process that wants no new
/// communicator.
pub const UNDEFINED: i32 = -32766;

/// What `split_type` groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitType {
    /// The processes that share this node (`MPI_COMM_TYPE_SHARED`).
    Shared,
}

/// How two communicators relate (`MPI_Comm_compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommCompare {
    /// The same communicator (`MPI_IDENT`).
    Ident,
    /// The same members in the same order, another context (`MPI_CONGRUENT`).
    Congruent,
    /// The same members in another order (`MPI_SIMILAR`).
    Similar,
    /// Otherwise (`MPI_UNEQUAL`).
    Unequal,
}

impl Comm {
    pub(crate) fn derived(&self, group: Group, block: u32, hints: Hints) -> Comm {
        Comm::new(
            Arc::clone(&self.inner.shared),
            group,
            base_of(block),
            Some(block),
            hints,
        )
    }

    /// `MPI_Comm_dup`: the same members with new context ids and the same
    /// hints. Collective.
    ///
    /// # Errors
    /// [`ApiError::ContextsExhausted`]; a failed member; the world was
    /// finalized.
    pub fn dup(&self) -> Result<Comm> {
        self.dup_with_hints(self.hints())
    }

    /// `MPI_Comm_dup_with_info`: as [`Comm::dup`] with other hints.
    ///
    /// # Errors
    /// As for [`Comm::dup`].
    pub fn dup_with_hints(&self, hints: Hints) -> Result<Comm> {
        if self.is_inter() {
            return self.dup_inter(hints);
        }
        let block = self.shared().contexts.agree(self)?;
        Ok(self.derived(self.group(), block, hints))
    }

    /// `MPI_Comm_split`: the members with the same `color` form a new
    /// communicator, ranked by `key` then by rank here. [`UNDEFINED`]
    /// gives `None`. Collective.
    ///
    /// # Errors
    /// A negative color other than [`UNDEFINED`]; as for [`Comm::dup`].
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        if color < 0 && color != UNDEFINED {
            return Err(ApiError::InvalidGroup("a split color must be >= 0 or UNDEFINED").into());
        }
        if self.is_inter() {
            return self.split_inter(color, key);
        }
        let n = self.size() as usize;
        let mut all = vec![0i32; 2 * n];
        self.allgather(&[color, key], &mut all)?;
        let block = self.shared().contexts.agree(self)?;
        if color == UNDEFINED {
            self.shared().contexts.release(block);
            return Ok(None);
        }
        let mut members: Vec<(i32, Rank)> = (0..n)
            .filter(|&r| all[2 * r] == color)
            .map(|r| (all[2 * r + 1], r as Rank))
            .collect();
        members.sort_unstable();
        let ranks: Vec<Rank> = members.iter().map(|&(_, r)| r).collect();
        let group = self.group().incl(&ranks)?;
        Ok(Some(self.derived(group, block, self.hints())))
    }

    /// `MPI_Comm_split_type`: with [`SplitType::Shared`], the members on
    /// this node, ranked by `key` then by rank here. Collective.
    ///
    /// # Errors
    /// As for [`Comm::split`].
    pub fn split_type(&self, kind: SplitType, key: i32) -> Result<Option<Comm>> {
        match kind {
            SplitType::Shared => {
                // The node's lowest job rank names the node for everyone on it.
                let color = self.shared().node_ranks.first().copied().unwrap_or(0);
                self.split(color, key)
            }
        }
    }

    /// `MPI_Comm_create`: a communicator of `group`'s members (a subgroup
    /// of this one, the same on every member); `None` here if this process
    /// is not in it. Collective over this communicator.
    ///
    /// # Errors
    /// A group with a process outside this communicator; as for
    /// [`Comm::dup`].
    pub fn create(&self, group: &Group) -> Result<Option<Comm>> {
        if self.is_inter() {
            return self.create_inter(group);
        }
        let mine = self.group();
        if group.difference(&mine).size() != 0 {
            return Err(
                ApiError::InvalidGroup("the group has processes outside the communicator").into(),
            );
        }
        let block = self.shared().contexts.agree(self)?;
        let me = self.inner.shared.rank;
        let group = Group::from_job_ranks(group.job_ranks(), me)?;
        if group.rank().is_none() {
            self.shared().contexts.release(block);
            return Ok(None);
        }
        Ok(Some(self.derived(group, block, self.hints())))
    }

    /// `MPI_Comm_create_group`: a communicator of `group`'s members (a
    /// subgroup of this one), collective over those members only; `tag`
    /// tells apart concurrent calls on this communicator whose groups
    /// overlap. Call it from members of `group` only.
    ///
    /// # Errors
    /// A group with a process outside this communicator, or a caller
    /// outside the group; an intercommunicator; as for [`Comm::dup`].
    pub fn create_group(&self, group: &Group, tag: ferry_core::Tag) -> Result<Comm> {
        self.intra_only("create_group on an intercommunicator")?;
        if group.difference(&self.group()).size() != 0 {
            return Err(
                ApiError::InvalidGroup("the group has processes outside the communicator").into(),
            );
        }
        let shared = &self.inner.shared;
        let group = Group::from_job_ranks(group.job_ranks(), shared.rank)?;
        if group.rank().is_none() {
            return Err(ApiError::InvalidGroup("called by a process outside the group").into());
        }
        // The agreement's messages go on the third context of this
        // communicator's block, which only this construction uses (the
        // fourth is the world's finalize context).
        let scratch = Comm::scratch(Arc::clone(shared), group.clone(), self.context() + 2);
        let block = shared.contexts.agree_among(self, &scratch, tag)?;
        Ok(self.derived(group, block, self.hints()))
    }

    /// `MPI_Intercomm_create_from_groups` (MPI 4.0), with `self` as the
    /// universe the groups come from (the world): `local` makes its
    /// intracommunicator as [`Comm::create_group`] does, and the leaders
    /// (`local_leader` in `local`, `remote_leader` in `remote`) meet on
    /// `self`'s spare context, never on its program traffic's. Collective
    /// over both groups, which pass the same `tag` (the string tag's).
    ///
    /// # Errors
    /// As for [`Comm::create_group`] and [`Comm::intercomm_create`]; a
    /// remote group with a process outside `self`.
    pub fn intercomm_from_groups(
        &self,
        local: &Group,
        local_leader: Rank,
        remote: &Group,
        remote_leader: Rank,
        tag: ferry_core::Tag,
    ) -> Result<Comm> {
        let remote_job = remote.to_job(remote_leader)?;
        let remote_here = self
            .group()
            .to_group(remote_job)
            .ok_or(ApiError::InvalidGroup(
                "the remote group has processes outside the communicator",
            ))?;
        let local_comm = self.create_group(local, tag)?;
        let meeting = Comm::scratch(
            Arc::clone(&self.inner.shared),
            self.group(),
            self.context() + 2,
        );
        let leads = local_comm.rank() == local_leader;
        local_comm.intercomm_create(local_leader, leads.then_some(&meeting), remote_here, tag)
    }

    /// `MPI_Comm_compare`.
    pub fn compare(&self, other: &Comm) -> CommCompare {
        if Arc::ptr_eq(&self.inner, &other.inner)
            || (Arc::ptr_eq(&self.inner.shared, &other.inner.shared)
                && self.context() == other.context())
        {
            return CommCompare::Ident;
        }
        let remote = match (self.remote_group(), other.remote_group()) {
            (None, None) => GroupCompare::Ident,
            (Some(a), Some(b)) => a.compare(&b),
            // An intercommunicator and an intracommunicator.
            _ => return CommCompare::Unequal,
        };
        let local = self.group().compare(&other.group());
        let both = match (local, remote) {
            (GroupCompare::Unequal, _) | (_, GroupCompare::Unequal) => GroupCompare::Unequal,
            (GroupCompare::Ident, GroupCompare::Ident) => GroupCompare::Ident,
            _ => GroupCompare::Similar,
        };
        match both {
            GroupCompare::Ident => CommCompare::Congruent,
            GroupCompare::Similar => CommCompare::Similar,
            GroupCompare::Unequal => CommCompare::Unequal,
        }
    }
}
