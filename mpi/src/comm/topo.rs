//! `MPI_Dims_create`: the one topology helper that needs no topology
//! (`crate::comm::dims` computes it).

use std::ffi::c_int;

use crate::abi::class::*;
use crate::error::{Fail, Res};

/// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced
/// factorisation, in non-increasing order. Local; callable before
/// `MPI_Init` too.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> Res {
    let n = usize::try_from(ndims).map_err(|_| {
        Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        )
    })?;
    if n == 0 {
        return crate::comm::dims::dims_create(nnodes, &mut []);
    }
    if dims.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null dims array"));
    }
    // SAFETY: non-null and valid for `ndims` ints (the caller's
    // promise), read and written during this call only.
    let dims = unsafe { std::slice::from_raw_parts_mut(dims, n) };
    crate::comm::dims::dims_create(nnodes, dims)
}
