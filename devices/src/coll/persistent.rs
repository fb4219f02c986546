//! Persistent collectives (MPI 4.0's `MPI_Barrier_init`,
//! `MPI_Allreduce_init`, ...): the schedule is built once, here; every
//! [`Request::start`] runs it again without rebuilding or allocating. The
//! request owns its vector: fill and read it between runs with
//! [`Request::with_buf_mut`] / [`Request::with_buf`]. The forms are the
//! in-place ones, so one vector is both input and result.

use ferry_core::coll::Collective;
use ferry_core::Rank;

use super::op::Op;
use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;
use crate::typed::{origin_of, vec_into_buf, Element};

impl Comm {
    /// `MPI_Barrier_init`.
    ///
    /// # Errors
    /// The world was finalized.
    pub fn barrier_init(&self) -> Result<Request> {
        self.coll_start(Collective::Barrier, None, None, None, true)
    }

    /// `MPI_Bcast_init` on `buf`.
    ///
    /// # Errors
    /// A bad root; the world was finalized.
    pub fn bcast_init<T: Element>(&self, buf: Vec<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Bcast {
            root: self.coll_root(root)?,
        };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Reduce_init`: the root's vector receives the result in place;
    /// the others' vectors are their input.
    ///
    /// # Errors
    /// As for [`Comm::bcast_init`].
    pub fn reduce_init<T: Element>(&self, buf: Vec<T>, op: &Op<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Reduce {
            root: self.coll_root(root)?,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        let at_root = self.is_root(root);
        self.rooted_init(coll, buf, at_root)
    }

    /// `MPI_Allreduce_init` in place on `buf`.
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn allreduce_init<T: Element>(&self, buf: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Allreduce {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Allgather_init` in place: `buf` is `size` blocks, this
    /// member's filled in at its rank's place.
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn allgather_init<T: Element>(&self, buf: Vec<T>) -> Result<Request> {
        let coll = Collective::Allgather { v: None };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Alltoall_init` in place on `buf` (`size` blocks).
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn alltoall_init<T: Element>(&self, buf: Vec<T>) -> Result<Request> {
        let coll = Collective::Alltoall { v: None };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Gather_init`: the root's `buf` is every member's block (its own
    /// already at its place, in place); the others' `buf` is their block.
    ///
    /// # Errors
    /// As for [`Comm::bcast_init`].
    pub fn gather_init<T: Element>(&self, buf: Vec<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Gather {
            root: self.coll_root(root)?,
            v: None,
        };
        let at_root = self.is_root(root);
        self.rooted_init(coll, buf, at_root)
    }

    /// `MPI_Scatter_init`: the root's `buf` is every member's block (it
    /// keeps its own, in place); the others' `buf` receives their block.
    ///
    /// # Errors
    /// As for [`Comm::bcast_init`].
    pub fn scatter_init<T: Element>(&self, buf: Vec<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Scatter {
            root: self.coll_root(root)?,
            v: None,
        };
        // In place at the root means its buffer is the input.
        let not_root = !self.is_root(root);
        self.rooted_init(coll, buf, not_root)
    }

    /// A persistent rooted collective on one vector: the output where
    /// `output` says, the input otherwise.
    fn rooted_init<T: Element>(
        &self,
        coll: Collective,
        buf: Vec<T>,
        output: bool,
    ) -> Result<Request> {
        let buf = vec_into_buf(buf);
        let (input, out) = if output {
            (None, Some(buf))
        } else {
            (Some(buf), None)
        };
        self.coll_start(coll, input, out, origin_of::<T>(), true)
    }

    /// `MPI_Reduce_scatter_block_init` in place: `buf` holds `size` blocks;
    /// after each run its first block is this member's reduced block.
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn reduce_scatter_block_init<T: Element>(
        &self,
        buf: Vec<T>,
        op: &Op<T>,
    ) -> Result<Request> {
        let coll = Collective::ReduceScatter {
            counts: None,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Exscan_init` in place on `buf` (member 0's is left as it was).
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn exscan_init<T: Element>(&self, buf: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Exscan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, buf, true)
    }

    /// `MPI_Scan_init` in place on `buf`.
    ///
    /// # Errors
    /// As for [`Comm::barrier_init`].
    pub fn scan_init<T: Element>(&self, buf: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Scan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, buf, true)
    }
}
