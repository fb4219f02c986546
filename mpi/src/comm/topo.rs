//! `MPI_Dims_create`: the one topology helper that needs no topology
//! (`crate::comm::dims` computes it).

use std::ffi::c_int;

use crate::abi::class::*;
use crate::error::{Fail, Res};

/// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced
/// factorisation, in non-increasing order. Local; callable before
/// `MPI_Init` too.
pub(crate) fn dims_create(nnodes: c_int, ndims: c_int, dims: &mut [c_int]) -> Res {
    if ndims < 0 {
        return Err(Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    crate::comm::dims::dims_create(nnodes, dims)
}
