//! What a process topology is (MPI 4.1 chapter 8): the shape a
//! communicator carries once `MPI_Cart_create`, `MPI_Graph_create` or a
//! distributed graph constructor made it. The calls are in
//! `comm::topo` and `comm::dist_graph`; a communicator's metadata keeps
//! its topology (`state::CommMeta::topo`), which `MPI_Comm_dup` copies.

use std::ffi::c_int;

use ferry::ferry_core::coll::{Neighbors, Pairing, NO_NEIGHBOR};

/// A communicator's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topo {
    /// A Cartesian grid (ferry's: its arithmetic is there).
    Cart(ferry::topology::Cart),
    /// A graph: node `i`'s neighbours are
    /// `edges[index[i-1]..index[i]]` (`index[-1]` being 0).
    Graph {
        /// Cumulative degrees.
        index: Vec<c_int>,
        /// Neighbours, node after node.
        edges: Vec<c_int>,
    },
    /// A distributed graph: this process's own edges.
    DistGraph {
        /// The ranks with an edge to this one, and their weights.
        sources: Vec<(c_int, c_int)>,
        /// The ranks this one has an edge to, and their weights.
        destinations: Vec<(c_int, c_int)>,
        /// Whether the program gave weights.
        weighted: bool,
    },
}

/// Node `r`'s row of a graph's edges (`None` for a node it does not have).
pub(crate) fn graph_row<'a>(index: &[c_int], edges: &'a [c_int], r: usize) -> Option<&'a [c_int]> {
    let hi = usize::try_from(*index.get(r)?).ok()?;
    let lo = match r {
        0 => 0,
        _ => usize::try_from(index[r - 1]).ok()?,
    };
    edges.get(lo..hi)
}

impl Topo {
    /// This member's neighbors for the neighborhood collectives (MPI 4.1
    /// §8.6): on a grid, per dimension the source and the destination of a
    /// shift by +1; on a graph, its row of edges both ways; on a
    /// distributed graph, its sources and destinations.
    pub(crate) fn neighbors(&self, rank: c_int) -> Neighbors {
        let ranks = |list: &mut dyn Iterator<Item = c_int>| -> Vec<u32> {
            list.map(|r| u32::try_from(r).unwrap_or(NO_NEIGHBOR))
                .collect()
        };
        match self {
            Topo::Cart(cart) => cart.neighbors(rank),
            Topo::Graph { index, edges } => {
                let row = usize::try_from(rank)
                    .ok()
                    .and_then(|r| graph_row(index, edges, r))
                    .unwrap_or_default();
                let list = ranks(&mut row.iter().copied());
                Neighbors {
                    sources: list.clone(),
                    destinations: list,
                    pairing: Pairing::InOrder,
                }
            }
            Topo::DistGraph {
                sources,
                destinations,
                ..
            } => Neighbors {
                sources: ranks(&mut sources.iter().map(|e| e.0)),
                destinations: ranks(&mut destinations.iter().map(|e| e.0)),
                pairing: Pairing::InOrder,
            },
        }
    }
}
