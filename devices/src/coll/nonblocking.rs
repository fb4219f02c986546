//! The nonblocking collectives, on owned vectors (see the module docs of
//! `coll`). Each returns a [`Request`]; its completion's
//! [`into_vec`](crate::Completion::into_vec) gives the result: the vector
//! passed in, reduced or filled in place where the shapes allow, or one the
//! library allocated (a gather's root, an allgather); a member without a
//! result (a reduce's non-root) gets its own vector back.

use ferry_core::coll::Collective;
use ferry_core::Rank;

use super::op::Op;
use super::packed;
use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;
use crate::typed::{origin_of, vec_into_buf, Element};

fn zeroed<T: Element>(n: usize) -> ferry_core::Buf {
    vec_into_buf(vec![T::zeroed(); n])
}

impl Comm {
    /// `MPI_Ibarrier`.
    ///
    /// # Errors
    /// A fatal device error, or the world was finalized.
    pub fn ibarrier(&self) -> Result<Request> {
        self.coll_start(Collective::Barrier, None, None, None, false)
    }

    /// `MPI_Ibcast`: the root's `buf` into every member's, in place.
    ///
    /// # Errors
    /// A bad root; as for [`Comm::ibarrier`].
    pub fn ibcast<T: Element>(&self, buf: Vec<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Bcast {
            root: self.coll_root(root)?,
        };
        self.coll_in_place(coll, buf, false)
    }

    /// `MPI_Ireduce`: the root's completion holds the result (in its own
    /// vector); the others get theirs back unchanged.
    ///
    /// # Errors
    /// As for [`Comm::ibcast`].
    pub fn ireduce<T: Element>(&self, data: Vec<T>, op: &Op<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Reduce {
            root: self.coll_root(root)?,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        let buf = vec_into_buf(data);
        let (input, output) = if self.is_root(root) {
            (None, Some(buf))
        } else {
            (Some(buf), None)
        };
        self.coll_start(coll, input, output, origin_of::<T>(), false)
    }

    /// `MPI_Iallreduce`, in place: the completion holds `data` reduced over
    /// every member.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn iallreduce<T: Element>(&self, data: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Allreduce {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, data, false)
    }

    /// `MPI_Igather`: the root's completion holds every member's block, by
    /// rank; the others get their vector back.
    ///
    /// # Errors
    /// As for [`Comm::ibcast`].
    pub fn igather<T: Element>(&self, data: Vec<T>, root: Rank) -> Result<Request> {
        let coll = Collective::Gather {
            root: self.coll_root(root)?,
            v: None,
        };
        let out = (self.is_root(root)).then(|| zeroed::<T>(data.len() * self.blocks_in()));
        self.coll_owned(coll, data, out)
    }

    /// `MPI_Igatherv`: `counts` (elements per member) matter at the root
    /// only; blocks are packed in rank order.
    ///
    /// # Errors
    /// As for [`Comm::ibcast`].
    pub fn igatherv<T: Element>(
        &self,
        data: Vec<T>,
        counts: &[usize],
        root: Rank,
    ) -> Result<Request> {
        let v = packed::<T>(counts);
        let out = (self.is_root(root)).then(|| zeroed::<T>(counts.iter().sum()));
        let coll = Collective::Gather {
            root: self.coll_root(root)?,
            v: Some(v),
        };
        self.coll_owned(coll, data, out)
    }

    /// `MPI_Iscatter`: block `i` of the root's `data` (`size × count`; the
    /// others pass `None`) to member `i`, whose completion holds `count`
    /// elements.
    ///
    /// # Errors
    /// As for [`Comm::ibcast`].
    pub fn iscatter<T: Element>(
        &self,
        data: Option<Vec<T>>,
        count: usize,
        root: Rank,
    ) -> Result<Request> {
        self.iscatter_any(data, None, count, root)
    }

    /// `MPI_Iscatterv` with packed blocks: at the root, `data` holds
    /// `counts[i]` elements for member `i` (the others pass `None`); each
    /// member's completion holds `count` elements (its own count).
    ///
    /// # Errors
    /// As for [`Comm::ibcast`].
    pub fn iscatterv<T: Element>(
        &self,
        data: Option<Vec<T>>,
        counts: &[usize],
        count: usize,
        root: Rank,
    ) -> Result<Request> {
        self.iscatter_any(data, Some(packed::<T>(counts)), count, root)
    }

    /// `iscatter` (`v`: `None`) and `iscatterv`.
    fn iscatter_any<T: Element>(
        &self,
        data: Option<Vec<T>>,
        v: Option<ferry_core::coll::Counts>,
        count: usize,
        root: Rank,
    ) -> Result<Request> {
        let coll = Collective::Scatter {
            root: self.coll_root(root)?,
            v,
        };
        let input = data.filter(|_| self.is_root(root)).map(vec_into_buf);
        self.coll_start(
            coll,
            input,
            Some(zeroed::<T>(count)),
            origin_of::<T>(),
            false,
        )
    }

    /// `MPI_Iallgather`: the completion holds every member's `data`, by
    /// rank.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn iallgather<T: Element>(&self, data: Vec<T>) -> Result<Request> {
        let out = zeroed::<T>(data.len() * self.blocks_in());
        let coll = Collective::Allgather { v: None };
        self.coll_owned(coll, data, Some(out))
    }

    /// `MPI_Iallgatherv`: `counts` (elements per member, the same on every
    /// member); blocks are packed in rank order.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn iallgatherv<T: Element>(&self, data: Vec<T>, counts: &[usize]) -> Result<Request> {
        let out = zeroed::<T>(counts.iter().sum());
        let coll = Collective::Allgather {
            v: Some(packed::<T>(counts)),
        };
        self.coll_owned(coll, data, Some(out))
    }

    /// `MPI_Ialltoall`, in place: block `j` of `data` goes to member `j`,
    /// and the completion's block `i` came from member `i`.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn ialltoall<T: Element>(&self, data: Vec<T>) -> Result<Request> {
        let coll = Collective::Alltoall { v: None };
        self.coll_in_place(coll, data, false)
    }

    /// `MPI_Ialltoallv` with packed blocks: `send_counts[j]` elements of
    /// `data` to member `j`, `recv_counts[i]` from member `i`.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn ialltoallv<T: Element>(
        &self,
        data: Vec<T>,
        send_counts: &[usize],
        recv_counts: &[usize],
    ) -> Result<Request> {
        let out = zeroed::<T>(recv_counts.iter().sum());
        let v = (packed::<T>(send_counts), packed::<T>(recv_counts));
        let coll = Collective::Alltoall { v: Some(v) };
        self.coll_owned(coll, data, Some(out))
    }

    /// `MPI_Ireduce_scatter_block`: `data` (`size × block`) reduced over the
    /// members; the completion holds this member's block.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn ireduce_scatter_block<T: Element>(&self, data: Vec<T>, op: &Op<T>) -> Result<Request> {
        let out = zeroed::<T>(data.len() / self.size().max(1) as usize);
        let coll = Collective::ReduceScatter {
            counts: None,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_owned(coll, data, Some(out))
    }

    /// `MPI_Ireduce_scatter`: as [`Comm::ireduce_scatter_block`] with
    /// member `i`'s block `counts[i]` elements long.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn ireduce_scatter<T: Element>(
        &self,
        data: Vec<T>,
        counts: &[usize],
        op: &Op<T>,
    ) -> Result<Request> {
        let mine = usize::try_from(self.rank())
            .ok()
            .and_then(|r| counts.get(r))
            .copied()
            .unwrap_or(0);
        let coll = Collective::ReduceScatter {
            counts: Some(packed::<T>(counts).counts),
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_owned(coll, data, Some(zeroed::<T>(mine)))
    }

    /// `MPI_Iscan`, in place.
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn iscan<T: Element>(&self, data: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Scan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, data, false)
    }

    /// `MPI_Iexscan`, in place (member 0's vector comes back unchanged).
    ///
    /// # Errors
    /// As for [`Comm::ibarrier`].
    pub fn iexscan<T: Element>(&self, data: Vec<T>, op: &Op<T>) -> Result<Request> {
        let coll = Collective::Exscan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_in_place(coll, data, false)
    }
}
