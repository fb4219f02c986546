//! Collectives on a communicator (DESIGN §9), in three forms:
//! - **blocking** (`barrier`, `allreduce`, ...; `blocking.rs`) on borrowed
//!   slices, lent to the engine without a copy for the length of the call;
//! - **nonblocking** (`ibarrier`, `iallreduce`, ...; `nonblocking.rs`) on
//!   owned vectors, returning the same [`Request`] as point-to-point, so
//!   they mix with sends, receives, ARecv and persistent requests in every
//!   completion call; the completion hands back the result vector;
//! - **persistent** (`barrier_init`, `allreduce_init`, ...; MPI 4.0;
//!   `persistent.rs`): the schedule is built once and run by every
//!   [`Request::start`]; the request keeps its vector, reached between runs
//!   with [`Request::with_buf`] / [`Request::with_buf_mut`].
//!
//! Every form hands core the call's description and buffers: core routes
//! it (node operation or schedule, `ferry_core::coll::plan`) and starts it
//! in one call (`Engine::start_collective`, `Engine::collective_init`);
//! only a blocking call routed to a node operation is polled here, with the
//! caller's slices (`node.rs`).
//!
//! Counts are in elements. A collective that completed inside its call (on
//! a communicator of one) returns `REQUEST_EMPTY`. Every member must call
//! the same collectives in the same order (MPI's rule); the engine tells
//! concurrent collectives apart by that order.
//!
//! On an intercommunicator (`inter.rs`) they take MPI's intercommunicator
//! meanings: a rooted one's root passes [`ROOT`](crate::ROOT), the rest of
//! its group [`PROC_NULL`](crate::PROC_NULL), the other group the root's
//! remote rank; results come from the other group, and blocks and counts
//! are per remote rank (a reduce-scatter's counts per local one). Scan and
//! exscan are refused with [`ApiError::Unsupported`](crate::ApiError).
//! The in-place forms whose vector is both a contribution and the other
//! group's blocks (`allgather_in_place`, `allgather_init`,
//! `reduce_scatter_block_init`) have no meaning there and fail with a
//! length error; the other persistent forms work.

mod blocking;
mod inter;
mod node;
mod nonblocking;
pub(crate) mod op;
mod persistent;

use crate::typed::Origin;

use ferry_core::coll::{Collective, Counts};
use ferry_core::Buf;

use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;

impl Comm {
    /// Starts one collective (persistent: builds it and returns the
    /// inactive request): core routes, builds and starts it in one call
    /// ([`Engine::start_collective`](ferry_core::Engine::start_collective)).
    pub(crate) fn coll_start(
        &self,
        coll: Collective,
        input: Option<Buf>,
        output: Option<Buf>,
        origin: Origin,
        persistent: bool,
    ) -> Result<Request> {
        let c = &self.inner;
        if self.is_inter() {
            let sched = self.inter_schedule(coll, input, output)?;
            let mut g = c.shared.lock()?;
            let engine = g.engine()?;
            if persistent {
                let handle = engine.coll_init(sched);
                return Ok(Request::new(self, handle, origin));
            }
            let started = engine.start_coll(sched)?;
            drop(g);
            return Ok(Request::coll_started(self, started, origin));
        }
        // No node set-up here: it synchronizes the members, which a
        // nonblocking or persistent collective's start must not (a
        // blocking collective sets it up first, in `node_fast`). Every
        // member calls collectives in the same order, so all see the same
        // layout, set up or not, at each one.
        let tag = c.next_tag();
        let team = c.team();
        let mut g = c.shared.lock()?;
        let engine = g.engine()?;
        if persistent {
            let handle = engine.collective_init(&team, &c.table, tag, coll, input, output)?;
            return Ok(Request::new(self, handle, origin));
        }
        let started = engine.start_collective(&team, &c.table, tag, coll, input, output)?;
        drop(g);
        Ok(Request::coll_started(self, started, origin))
    }
}

impl Comm {
    /// Starts a collective from an owned input vector into `output` (a
    /// buffer the library allocated, or `None` where this rank gets no
    /// result and its input comes back).
    pub(crate) fn coll_owned<T: crate::typed::Element>(
        &self,
        coll: Collective,
        data: Vec<T>,
        output: Option<Buf>,
    ) -> Result<Request> {
        let buf = crate::typed::vec_into_buf(data);
        self.coll_start(
            coll,
            Some(buf),
            output,
            crate::typed::origin_of::<T>(),
            false,
        )
    }

    /// Starts (or, `persistent`, builds) a collective on one owned vector,
    /// in place: its input and its result.
    pub(crate) fn coll_in_place<T: crate::typed::Element>(
        &self,
        coll: Collective,
        data: Vec<T>,
        persistent: bool,
    ) -> Result<Request> {
        let buf = crate::typed::vec_into_buf(data);
        self.coll_start(
            coll,
            None,
            Some(buf),
            crate::typed::origin_of::<T>(),
            persistent,
        )
    }
}

/// Element counts and displacements to byte ones.
pub(crate) fn byte_counts<T>(counts: &[usize], displs: &[usize]) -> Counts {
    let size = std::mem::size_of::<T>();
    Counts {
        counts: counts.iter().map(|c| c.saturating_mul(size)).collect(),
        displs: displs.iter().map(|d| d.saturating_mul(size)).collect(),
    }
}

/// Packed element counts to byte ones.
pub(crate) fn packed<T>(counts: &[usize]) -> Counts {
    let size = std::mem::size_of::<T>();
    Counts::packed(counts.iter().map(|c| c.saturating_mul(size)).collect())
}
