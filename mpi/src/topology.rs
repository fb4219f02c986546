//! What a process topology is (MPI 4.1 chapter 8): the shape a
//! communicator carries once `MPI_Cart_create`, `MPI_Graph_create` or a
//! distributed graph constructor made it. The calls are in
//! `comm::topo` and `comm::dist_graph`; a communicator's metadata keeps
//! its topology (`state::CommMeta::topo`), which `MPI_Comm_dup` copies.

use std::ffi::c_int;

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
