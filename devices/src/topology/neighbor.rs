//! Neighborhood collectives (MPI 4.1 §8.6) on a communicator with a
//! process topology: a Cartesian grid ([`CartComm`]) or a distributed
//! graph ([`DistGraphComm`], from [`Comm::dist_graph_adjacent`]). Each
//! member sends a block to every destination and receives one from every
//! source, in the topology's order; core runs it as one round
//! ([`Collective::Neighbor`]). The methods come with the [`Neighborhood`]
//! trait, blocking on slices and nonblocking on owned vectors.
//!
//! On a grid, a neighbor past a non-periodic edge does not exist: nothing
//! is sent there, and its block of the result is left as it was.

use std::sync::Arc;

use ferry_core::coll::{Collective, Counts, Neighbors, Pairing, NO_NEIGHBOR};
use ferry_core::Rank;

use super::{Cart, CartComm};
use crate::coll::{byte_counts, packed};
use crate::comm::Comm;
use crate::error::{ApiError, Result};
use crate::request::Request;
use crate::typed::{as_bytes, as_bytes_mut, origin_of, vec_into_buf, Element};

/// A communicator whose topology names each member's neighbors, and the
/// neighborhood collectives on it.
pub trait Neighborhood {
    /// The communicator.
    fn comm(&self) -> &Comm;

    /// This member's sources and destinations.
    fn neighbors(&self) -> &Arc<Neighbors>;

    /// How many members this one receives from (`MPI_Dist_graph_neighbors_count`'s
    /// indegree; two per dimension on a grid).
    fn in_degree(&self) -> usize {
        self.neighbors().sources.len()
    }

    /// How many members this one sends to.
    fn out_degree(&self) -> usize {
        self.neighbors().destinations.len()
    }

    /// `MPI_Neighbor_allgather`: `send` to every destination; `recv` holds
    /// one block of `send.len()` per source, in order.
    ///
    /// # Errors
    /// A `recv` of the wrong length; members that disagree; a dead member.
    fn neighbor_allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let recv_counts = packed::<T>(&vec![send.len(); self.in_degree()]);
        let coll = neighbor(self.neighbors(), None, recv_counts);
        self.comm()
            .coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Neighbor_allgatherv`: source `i`'s block is `counts[i]`
    /// elements at `displs[i]` of `recv`.
    ///
    /// # Errors
    /// As for [`Neighborhood::neighbor_allgather`].
    fn neighbor_allgatherv<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let coll = neighbor(self.neighbors(), None, byte_counts::<T>(counts, displs));
        self.comm()
            .coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Neighbor_alltoall`: block `j` of `send` to destination `j`,
    /// block `i` of `recv` from source `i` (equal blocks: `send` is
    /// out-degree blocks, `recv` in-degree blocks).
    ///
    /// # Errors
    /// Buffers that are not a whole number of blocks; as for
    /// [`Neighborhood::neighbor_allgather`].
    fn neighbor_alltoall<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (s, r) = equal_blocks(self, send.len(), recv.len())?;
        let coll = neighbor(self.neighbors(), Some(packed::<T>(&s)), packed::<T>(&r));
        self.comm()
            .coll_borrowed(coll, Some(as_bytes(send)), Some(as_bytes_mut(recv)))
    }

    /// `MPI_Neighbor_alltoallv`: `(buffer, counts, displacements)` each
    /// way, in elements.
    ///
    /// # Errors
    /// As for [`Neighborhood::neighbor_allgather`].
    fn neighbor_alltoallv<T: Element>(
        &self,
        send: (&[T], &[usize], &[usize]),
        recv: (&mut [T], &[usize], &[usize]),
    ) -> Result<()> {
        let coll = neighbor(
            self.neighbors(),
            Some(byte_counts::<T>(send.1, send.2)),
            byte_counts::<T>(recv.1, recv.2),
        );
        self.comm()
            .coll_borrowed(coll, Some(as_bytes(send.0)), Some(as_bytes_mut(recv.0)))
    }

    /// `MPI_Ineighbor_allgather`: the completion's vector holds one block
    /// of `data.len()` per source.
    ///
    /// # Errors
    /// As for [`Neighborhood::neighbor_allgather`].
    fn ineighbor_allgather<T: Element>(&self, data: Vec<T>) -> Result<Request> {
        let r = vec![data.len(); self.in_degree()];
        let coll = neighbor(self.neighbors(), None, packed::<T>(&r));
        start_owned(self.comm(), coll, data, r.iter().sum())
    }

    /// `MPI_Ineighbor_alltoall`: block `j` of `data` to destination `j`;
    /// the completion's block `i` came from source `i`.
    ///
    /// # Errors
    /// As for [`Neighborhood::neighbor_alltoall`].
    fn ineighbor_alltoall<T: Element>(&self, data: Vec<T>) -> Result<Request> {
        let block = match self.out_degree() {
            0 => 0,
            n => data.len() / n,
        };
        let (s, r) = equal_blocks(self, data.len(), block * self.in_degree())?;
        let coll = neighbor(self.neighbors(), Some(packed::<T>(&s)), packed::<T>(&r));
        start_owned(self.comm(), coll, data, r.iter().sum())
    }

    /// `MPI_Ineighbor_alltoallv` with packed blocks: `send_counts[j]`
    /// elements of `data` to destination `j`, `recv_counts[i]` from source
    /// `i`.
    ///
    /// # Errors
    /// As for [`Neighborhood::neighbor_allgather`].
    fn ineighbor_alltoallv<T: Element>(
        &self,
        data: Vec<T>,
        send_counts: &[usize],
        recv_counts: &[usize],
    ) -> Result<Request> {
        let coll = neighbor(
            self.neighbors(),
            Some(packed::<T>(send_counts)),
            packed::<T>(recv_counts),
        );
        start_owned(self.comm(), coll, data, recv_counts.iter().sum())
    }
}

fn neighbor(n: &Arc<Neighbors>, send: Option<Counts>, recv: Counts) -> Collective {
    Collective::Neighbor {
        neighbors: Arc::clone(n),
        send,
        recv,
    }
}

/// Element counts of equal blocks: `send` over the destinations, `recv`
/// over the sources, one block size for both.
fn equal_blocks<N: Neighborhood + ?Sized>(
    n: &N,
    send: usize,
    recv: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let (outs, ins) = (n.out_degree(), n.in_degree());
    let block = match (outs, ins) {
        (0, 0) => 0,
        (0, i) => recv / i,
        (o, _) => send / o,
    };
    if block * outs != send || block * ins != recv {
        return Err(ferry_core::UsageError::LengthMismatch(
            "a neighbor alltoall's buffers are not whole blocks, one per neighbor",
        )
        .into());
    }
    Ok((vec![block; outs], vec![block; ins]))
}

/// Starts a neighborhood collective from an owned vector into a new one
/// of `out` elements.
fn start_owned<T: Element>(
    comm: &Comm,
    coll: Collective,
    data: Vec<T>,
    out: usize,
) -> Result<Request> {
    let output = vec_into_buf(vec![T::zeroed(); out]);
    comm.coll_start(
        coll,
        Some(vec_into_buf(data)),
        Some(output),
        origin_of::<T>(),
        false,
    )
}

impl Cart {
    /// The neighbors of `rank` on the grid in MPI's order, for the
    /// neighborhood collectives: per dimension the source, then the
    /// destination of a shift by +1 ([`NO_NEIGHBOR`] past an open edge).
    pub fn neighbors(&self, rank: Rank) -> Neighbors {
        let mut list = Vec::with_capacity(2 * self.dims().len());
        for dim in 0..self.dims().len() {
            let (src, dst) = self.shift(rank, dim, 1).unwrap_or((-1, -1));
            list.extend([src, dst].map(to_neighbor));
        }
        Neighbors {
            sources: list.clone(),
            destinations: list,
            pairing: Pairing::Cartesian,
        }
    }
}

/// A rank as a neighbor (`PROC_NULL` and anything negative: none).
fn to_neighbor(r: Rank) -> u32 {
    u32::try_from(r).unwrap_or(NO_NEIGHBOR)
}

impl Neighborhood for CartComm {
    fn comm(&self) -> &Comm {
        &self.comm
    }

    fn neighbors(&self) -> &Arc<Neighbors> {
        &self.neighbors
    }
}

/// A communicator with a distributed graph topology
/// ([`Comm::dist_graph_adjacent`]).
#[derive(Debug, Clone)]
pub struct DistGraphComm {
    comm: Comm,
    neighbors: Arc<Neighbors>,
}

impl DistGraphComm {
    /// The communicator (every operation of [`Comm`] works on it).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The members this one receives from, in order.
    pub fn sources(&self) -> Vec<Rank> {
        to_ranks(&self.neighbors.sources)
    }

    /// The members this one sends to, in order.
    pub fn destinations(&self) -> Vec<Rank> {
        to_ranks(&self.neighbors.destinations)
    }
}

fn to_ranks(list: &[u32]) -> Vec<Rank> {
    list.iter().map(|&r| r as Rank).collect()
}

impl Neighborhood for DistGraphComm {
    fn comm(&self) -> &Comm {
        &self.comm
    }

    fn neighbors(&self) -> &Arc<Neighbors> {
        &self.neighbors
    }
}

impl Comm {
    /// `MPI_Dist_graph_create_adjacent` without reordering: a new
    /// communicator of the same members on which this member receives from
    /// `sources` and sends to `destinations`, in that order (an edge may
    /// repeat; the `k`-th message between two members lands in the `k`-th
    /// block). Collective.
    ///
    /// # Errors
    /// [`ApiError::InvalidTopology`] for a neighbor outside the
    /// communicator or an intercommunicator; as for [`Comm::dup`].
    pub fn dist_graph_adjacent(
        &self,
        sources: &[Rank],
        destinations: &[Rank],
    ) -> Result<DistGraphComm> {
        let size = self.size();
        if self.is_inter() {
            return Err(
                ApiError::InvalidTopology("a topology needs an intracommunicator".into()).into(),
            );
        }
        let check = |list: &[Rank]| -> Result<Vec<u32>> {
            list.iter()
                .map(|&r| match u32::try_from(r) {
                    Ok(u) if u < size => Ok(u),
                    _ => Err(ApiError::InvalidTopology(format!(
                        "neighbor {r} on a communicator of {size}"
                    ))
                    .into()),
                })
                .collect()
        };
        let neighbors = Neighbors {
            sources: check(sources)?,
            destinations: check(destinations)?,
            pairing: Pairing::InOrder,
        };
        Ok(DistGraphComm {
            comm: self.dup()?,
            neighbors: Arc::new(neighbors),
        })
    }
}
