//! Groups, contexts and communicators (MPI 4.1 chapter 7; `MPI_Comm_idup`
//! in `idup`, a floor up: it makes a request), and process topologies
//! (chapter 8: `topo` for Cartesian grids and graphs, `dist_graph`).

pub(crate) mod communicators;
pub(crate) mod dist_graph;
pub(crate) mod fromgroups;
pub(crate) mod group;
pub(crate) mod idup;
pub(crate) mod inter;
pub(crate) mod topo;
