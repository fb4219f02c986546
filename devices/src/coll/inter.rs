//! Collectives on an intercommunicator (MPI 4.1 §6.2.2): the roots they
//! take and the team their schedules run on (core's `coll::inter`).
//!
//! # Where their messages travel
//! An intercommunicator's four contexts are all taken: the program's
//! point-to-point, the leaders' bridge, and the local group's
//! intracommunicator (its point-to-point, carrying intercommunicator
//! idups' rounds, and its collectives). The collectives go on the bridge's
//! context, in core's [`INTER_TAGS`]: the bridge's own messages are tagged
//! 1 to 4 or from [`IDUP_BRIDGE_TAGS`] up (both checked below at compile
//! time), so no receive of either ever takes the other's messages, and a
//! schedule looking for a disagreeing member's message skips the
//! leaders'. Every other context would mix them with tags of the whole
//! range (the program's, or the local collectives', whose sequence
//! numbers are the local group's own), where a collective could take a
//! message of theirs for a disagreeing call. Both groups number their
//! calls on the intercommunicator alike (every member of both calls them
//! in the same order), so both compute the same tag for one call.

use std::sync::Arc;

use ferry_core::coll::{build_inter, Collective, InterTeam, INTER_IDLE, INTER_ROOT, INTER_TAGS};
use ferry_core::{Buf, Rank, PROC_NULL, ROOT};

use crate::comm::{Comm, IDUP_BRIDGE_TAGS};
use crate::error::{ApiError, Result};
use crate::inter::BRIDGE_TAGS;

const _: () = assert!(*BRIDGE_TAGS.end() < INTER_TAGS.start && IDUP_BRIDGE_TAGS >= INTER_TAGS.end);

impl Comm {
    /// A rooted collective's `root` as the builders take it: a rank of
    /// the communicator on an intracommunicator; on an intercommunicator
    /// [`ROOT`] at the root, [`PROC_NULL`] at the rest of its group, and
    /// the root's rank in the remote group at the other group's members.
    pub(crate) fn coll_root(&self, root: Rank) -> Result<u32> {
        let size = self.peer_size();
        let bad = || ApiError::InvalidRank { rank: root, size }.into();
        if !self.is_inter() {
            return u32::try_from(root).map_err(|_| bad());
        }
        match root {
            ROOT => Ok(INTER_ROOT),
            PROC_NULL => Ok(INTER_IDLE),
            r => u32::try_from(r).ok().filter(|&r| r < size).ok_or_else(bad),
        }
    }

    /// Is this member the root of a rooted collective called with `root`
    /// (this rank on an intracommunicator, [`ROOT`] on an
    /// intercommunicator)?
    pub fn is_root(&self, root: Rank) -> bool {
        if self.is_inter() {
            root == ROOT
        } else {
            self.rank() == root
        }
    }

    /// The number of blocks a gather's root or an allgather receives: one
    /// per member, of the remote group on an intercommunicator.
    pub(crate) fn blocks_in(&self) -> usize {
        self.peer_size() as usize
    }

    /// Builds an intercommunicator's collective schedule with the next
    /// sequence number.
    pub(crate) fn inter_schedule(
        &self,
        coll: Collective,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Result<ferry_core::coll::Schedule> {
        if matches!(coll, Collective::Scan { .. } | Collective::Exscan { .. }) {
            return Err(ApiError::Unsupported("scan and exscan on an intercommunicator").into());
        }
        let c = &self.inner;
        let team = InterTeam {
            context: c.context + 1,
            rank: c.rank as u32,
            local: Arc::from(c.group.job_ranks()),
            remote: Arc::from(c.peers.job_ranks()),
        };
        Ok(build_inter(&team, c.next_tag(), coll, input, output)?)
    }
}
