//! Groups, contexts and communicators (MPI 4.1 chapter 7), and process
//! topologies (chapter 8: `MPI_Dims_create`, `MPI_Topo_test`).

#[allow(unsafe_code)]
pub(crate) mod communicators;
pub mod dims;
#[allow(unsafe_code)]
pub(crate) mod fromgroups;
#[allow(unsafe_code)]
pub(crate) mod group;
#[allow(unsafe_code)]
pub(crate) mod idup;
#[allow(unsafe_code)]
pub(crate) mod inter;
#[allow(unsafe_code)]
pub(crate) mod topo;
