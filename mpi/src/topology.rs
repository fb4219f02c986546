//! What a process topology is (MPI 4.1 chapter 8): the shape a
//! communicator carries once `MPI_Cart_create`, `MPI_Graph_create` or a
//! distributed graph constructor made it. The calls are in
//! `comm::topo` and `comm::dist_graph`; a communicator's metadata keeps
//! its topology (`state::CommMeta::topo`), which `MPI_Comm_dup` copies.

use std::ffi::c_int;

/// A communicator's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topo {
    /// A Cartesian grid, row-major: rank `r` has the coordinates of `r`
    /// in a grid of `dims` (the last dimension varies fastest).
    Cart {
        /// Extent of each dimension.
        dims: Vec<c_int>,
        /// Whether each dimension wraps around.
        periods: Vec<bool>,
    },
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

impl Topo {
    /// The coordinates of `rank` in a grid of `dims`.
    pub fn coords(dims: &[c_int], rank: c_int) -> Vec<c_int> {
        let mut out = vec![0; dims.len()];
        let mut r = rank;
        for (i, &d) in dims.iter().enumerate().rev() {
            let d = d.max(1);
            out[i] = r % d;
            r /= d;
        }
        out
    }

    /// The rank at `coords` in a grid of `dims` (coordinates in range).
    pub fn rank_at(dims: &[c_int], coords: &[c_int]) -> c_int {
        dims.iter().zip(coords).fold(0, |acc, (&d, &c)| acc * d + c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_row_major_and_round_trip() {
        let dims = [2, 3, 4];
        assert_eq!(Topo::coords(&dims, 0), vec![0, 0, 0]);
        assert_eq!(Topo::coords(&dims, 5), vec![0, 1, 1]);
        assert_eq!(Topo::coords(&dims, 23), vec![1, 2, 3]);
        for r in 0..24 {
            assert_eq!(Topo::rank_at(&dims, &Topo::coords(&dims, r)), r);
        }
        assert_eq!(Topo::coords(&[], 0), Vec::<c_int>::new());
        assert_eq!(Topo::rank_at(&[], &[]), 0);
    }
}
