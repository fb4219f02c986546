//! `MPI_Type_create_subarray` and `MPI_Type_create_darray`: the layouts
//! are `datatype/array.rs`'s; here the C arrays are read and the recipe
//! (`MPI_COMBINER_SUBARRAY` / `DARRAY`, with every integer argument) is
//! recorded.

use std::ffi::c_int;

use super::mpi_fn;
use super::types::{array, store};
use crate::datatype::array::{darray, subarray};
use crate::datatype::{combiner, count_arg, Recipe};
use crate::state::rt;

mpi_fn! {
    /// `MPI_Type_create_subarray`.
    MPI_Type_create_subarray / PMPI_Type_create_subarray(
        ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int,
        array_of_starts: *const c_int, order: c_int, oldtype: usize, newtype: *mut usize,
    ) {
        let rt = rt()?;
        let n = count_arg(ndims)?;
        // SAFETY: the caller's arrays of `ndims` entries.
        let (sizes, subsizes, starts) = unsafe {
            (array(array_of_sizes, n, "size")?, array(array_of_subsizes, n, "subsize")?, array(array_of_starts, n, "start")?)
        };
        let old = rt.type_arg(oldtype)?;
        let l = subarray(sizes, subsizes, starts, order, &old.layout())?;
        let ints = [&[ndims][..], sizes, subsizes, starts, &[order]].concat();
        let recipe = Recipe::new(combiner::SUBARRAY, ints, vec![], vec![old]);
        // SAFETY: out-argument.
        unsafe { store(rt, l, recipe, newtype) }
    }
}

mpi_fn! {
    /// `MPI_Type_create_darray`.
    MPI_Type_create_darray / PMPI_Type_create_darray(
        size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int,
        array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int,
        order: c_int, oldtype: usize, newtype: *mut usize,
    ) {
        let rt = rt()?;
        let n = count_arg(ndims)?;
        // SAFETY: the caller's arrays of `ndims` entries.
        let (gsizes, distribs, dargs, psizes) = unsafe {
            (
                array(array_of_gsizes, n, "global size")?,
                array(array_of_distribs, n, "distribution")?,
                array(array_of_dargs, n, "distribution argument")?,
                array(array_of_psizes, n, "process grid size")?,
            )
        };
        let old = rt.type_arg(oldtype)?;
        let l = darray(size, rank, gsizes, distribs, dargs, psizes, order, &old.layout())?;
        let ints = [&[size, rank, ndims][..], gsizes, distribs, dargs, psizes, &[order]].concat();
        let recipe = Recipe::new(combiner::DARRAY, ints, vec![], vec![old]);
        // SAFETY: out-argument.
        unsafe { store(rt, l, recipe, newtype) }
    }
}
