//! The blocking collectives, on borrowed slices (see the module docs of
//! `coll`). `*_in_place` forms are MPI_IN_PLACE's meaning.

use ferry_core::coll::Collective;
use ferry_core::Rank;

use super::op::Op;
use super::{byte_counts, packed};
use crate::comm::Comm;
use crate::error::Result;
use crate::typed::{as_bytes, as_bytes_mut, Element};

impl Comm {
    /// `MPI_Barrier`: returns once every member has entered.
    ///
    /// # Errors
    /// A dead member, a fatal device error, or the world was finalized.
    pub fn barrier(&self) -> Result<()> {
        self.coll_borrowed(Collective::Barrier, None, None)
    }

    /// `MPI_Bcast`: the root's `buf` into every member's `buf`.
    ///
    /// # Errors
    /// A bad root; buffers whose lengths differ between members (a typed
    /// error where the protocol sees it); as for [`Comm::barrier`].
    pub fn bcast<T: Element>(&self, buf: &mut [T], root: Rank) -> Result<()> {
        let root = self.coll_root(root)?;
        self.coll_borrowed(Collective::Bcast { root }, None, Some(as_bytes_mut(buf)))
    }

    /// `MPI_Reduce`: `send` of every member reduced with `op` into the
    /// root's `recv` (`None` elsewhere).
    ///
    /// # Errors
    /// As for [`Comm::bcast`]; a missing or mis-sized `recv` at the root.
    pub fn reduce<T: Element>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &Op<T>,
        root: Rank,
    ) -> Result<()> {
        let coll = Collective::Reduce {
            root: self.coll_root(root)?,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        let recv = if self.is_root(root) { recv } else { None };
        self.coll_borrowed(coll, Some(as_bytes(send)), recv.map(as_bytes_mut))
    }

    /// `MPI_Reduce` with `MPI_IN_PLACE` at the root: `buf` holds the
    /// root's contribution and receives the result. Other members call
    /// [`Comm::reduce`].
    ///
    /// # Errors
    /// As for [`Comm::reduce`].
    pub fn reduce_in_place<T: Element>(&self, buf: &mut [T], op: &Op<T>, root: Rank) -> Result<()> {
        let coll = Collective::Reduce {
            root: self.coll_root(root)?,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, None, Some(as_bytes_mut(buf)))
    }

    /// `MPI_Allreduce`: every member's `send` reduced with `op` into every
    /// member's `recv`.
    ///
    /// # Errors
    /// `send` and `recv` of different lengths; as for [`Comm::bcast`].
    pub fn allreduce<T: Element>(&self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let coll = Collective::Allreduce {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Allreduce` with `MPI_IN_PLACE`.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn allreduce_in_place<T: Element>(&self, buf: &mut [T], op: &Op<T>) -> Result<()> {
        let coll = Collective::Allreduce {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, None, Some(as_bytes_mut(buf)))
    }

    /// `MPI_Gather`: every member's `send` into the root's `recv`, by rank
    /// (`recv` is `size × send.len()`; `None` elsewhere).
    ///
    /// # Errors
    /// As for [`Comm::reduce`].
    pub fn gather<T: Element>(&self, send: &[T], recv: Option<&mut [T]>, root: Rank) -> Result<()> {
        let coll = Collective::Gather {
            root: self.coll_root(root)?,
            v: None,
        };
        let recv = if self.is_root(root) { recv } else { None };
        self.coll_borrowed(coll, Some(as_bytes(send)), recv.map(as_bytes_mut))
    }

    /// `MPI_Gather` with `MPI_IN_PLACE` at the root: its block is already
    /// in `recv` at its rank's place.
    ///
    /// # Errors
    /// As for [`Comm::gather`].
    pub fn gather_in_place<T: Element>(&self, recv: &mut [T], root: Rank) -> Result<()> {
        let coll = Collective::Gather {
            root: self.coll_root(root)?,
            v: None,
        };
        self.coll_borrowed(coll, None, Some(as_bytes_mut(recv)))
    }

    /// `MPI_Gatherv`: at the root, `recv` is `(buffer, counts, displs)` in
    /// elements; each member's `send` must be its count long.
    ///
    /// # Errors
    /// As for [`Comm::gather`]; counts or displacements that leave the
    /// buffer.
    pub fn gatherv<T: Element>(
        &self,
        send: &[T],
        recv: Option<(&mut [T], &[usize], &[usize])>,
        root: Rank,
    ) -> Result<()> {
        let root_u = self.coll_root(root)?;
        let (out, v) = match recv.filter(|_| self.is_root(root)) {
            Some((buf, counts, displs)) => {
                (Some(as_bytes_mut(buf)), byte_counts::<T>(counts, displs))
            }
            None => (None, packed::<T>(&[])),
        };
        let coll = Collective::Gather {
            root: root_u,
            v: Some(v),
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), out)
    }

    /// `MPI_Scatter`: block `i` of the root's `send` (`size × recv.len()`,
    /// `None` elsewhere) into member `i`'s `recv`.
    ///
    /// # Errors
    /// As for [`Comm::reduce`].
    pub fn scatter<T: Element>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
        root: Rank,
    ) -> Result<()> {
        let coll = Collective::Scatter {
            root: self.coll_root(root)?,
            v: None,
        };
        let send = if self.is_root(root) { send } else { None };
        self.coll_borrowed(coll, send.map(as_bytes), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Scatter` with `MPI_IN_PLACE` at the root: it keeps its own
    /// block in `send`.
    ///
    /// # Errors
    /// As for [`Comm::scatter`].
    pub fn scatter_in_place<T: Element>(&self, send: &[T], root: Rank) -> Result<()> {
        let coll = Collective::Scatter {
            root: self.coll_root(root)?,
            v: None,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), None)
    }

    /// `MPI_Scatterv`: at the root, `send` is `(buffer, counts, displs)` in
    /// elements; each member's `recv` must be its count long.
    ///
    /// # Errors
    /// As for [`Comm::gatherv`].
    pub fn scatterv<T: Element>(
        &self,
        send: Option<(&[T], &[usize], &[usize])>,
        recv: &mut [T],
        root: Rank,
    ) -> Result<()> {
        let root_u = self.coll_root(root)?;
        let (input, v) = match send.filter(|_| self.is_root(root)) {
            Some((buf, counts, displs)) => (Some(as_bytes(buf)), byte_counts::<T>(counts, displs)),
            None => (None, packed::<T>(&[])),
        };
        let coll = Collective::Scatter {
            root: root_u,
            v: Some(v),
        };
        self.coll_borrowed(coll, input, Some(as_bytes_mut(recv)))
    }

    /// `MPI_Allgather`: every member's `send` into every member's `recv`
    /// (`size × send.len()`), by rank.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let coll = Collective::Allgather { v: None };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Allgather` with `MPI_IN_PLACE`: each member's block is already
    /// in `recv` at its rank's place.
    ///
    /// # Errors
    /// As for [`Comm::allgather`].
    pub fn allgather_in_place<T: Element>(&self, recv: &mut [T]) -> Result<()> {
        self.coll_borrowed(
            Collective::Allgather { v: None },
            None,
            Some(as_bytes_mut(recv)),
        )
    }

    /// `MPI_Allgatherv` (`counts`, `displs` in elements, the same on every
    /// member).
    ///
    /// # Errors
    /// As for [`Comm::gatherv`].
    pub fn allgatherv<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let coll = Collective::Allgather {
            v: Some(byte_counts::<T>(counts, displs)),
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Alltoall`: block `j` of member `i`'s `send` into block `i` of
    /// member `j`'s `recv`.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn alltoall<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let coll = Collective::Alltoall { v: None };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Alltoall` with `MPI_IN_PLACE`.
    ///
    /// # Errors
    /// As for [`Comm::alltoall`].
    pub fn alltoall_in_place<T: Element>(&self, buf: &mut [T]) -> Result<()> {
        self.coll_borrowed(
            Collective::Alltoall { v: None },
            None,
            Some(as_bytes_mut(buf)),
        )
    }

    /// `MPI_Alltoallv` (counts and displacements in elements).
    ///
    /// # Errors
    /// As for [`Comm::gatherv`].
    pub fn alltoallv<T: Element>(
        &self,
        send: (&[T], &[usize], &[usize]),
        recv: (&mut [T], &[usize], &[usize]),
    ) -> Result<()> {
        let v = (
            byte_counts::<T>(send.1, send.2),
            byte_counts::<T>(recv.1, recv.2),
        );
        let coll = Collective::Alltoall { v: Some(v) };
        self.coll_borrowed(coll, Some(as_bytes(send.0)), Some(as_bytes_mut(recv.0)))
    }

    /// `MPI_Reduce_scatter_block`: `send` (`size × recv.len()`) reduced
    /// element-wise over the members; member `i` gets block `i`.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn reduce_scatter_block<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        let coll = Collective::ReduceScatter {
            counts: None,
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Reduce_scatter`: as [`Comm::reduce_scatter_block`] with block
    /// `i` of `counts[i]` elements.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn reduce_scatter<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op<T>,
    ) -> Result<()> {
        let coll = Collective::ReduceScatter {
            counts: Some(packed::<T>(counts).counts),
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Scan`: member `i` gets the reduction of members `0..=i`.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn scan<T: Element>(&self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let coll = Collective::Scan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Exscan`: member `i > 0` gets the reduction of members `0..i`;
    /// member 0's `recv` is left as it was.
    ///
    /// # Errors
    /// As for [`Comm::allreduce`].
    pub fn exscan<T: Element>(&self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let coll = Collective::Exscan {
            op: op.op.clone(),
            dtype: op.dtype,
        };
        self.coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }
}
