//! Predefined datatypes: size, extent, true extent and name.

use std::ffi::{c_char, c_int};

use super::{mpi_fn, put, put_str};
use crate::abi::MPI_MAX_OBJECT_NAME;
use crate::datatype::lookup;

mpi_fn! {
    /// `MPI_Type_size`.
    MPI_Type_size / PMPI_Type_size(datatype: usize, size: *mut c_int) {
        let dt = lookup(datatype)?;
        // SAFETY: out-argument.
        unsafe { put(size, dt.size as c_int) }
    }
}

mpi_fn! {
    /// `MPI_Type_size_x`.
    MPI_Type_size_x / PMPI_Type_size_x(datatype: usize, size: *mut i64) {
        let dt = lookup(datatype)?;
        // SAFETY: out-argument.
        unsafe { put(size, dt.size as i64) }
    }
}

mpi_fn! {
    /// `MPI_Type_get_extent`: lower bound 0, extent = size for every
    /// predefined type (the pair types' size includes C's padding).
    MPI_Type_get_extent / PMPI_Type_get_extent(datatype: usize, lb: *mut isize, extent: *mut isize) {
        let dt = lookup(datatype)?;
        // SAFETY: out-arguments.
        unsafe {
            put(lb, 0)?;
            put(extent, dt.size as isize)
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_extent_x`.
    MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: usize, lb: *mut i64, extent: *mut i64) {
        let dt = lookup(datatype)?;
        // SAFETY: out-arguments.
        unsafe {
            put(lb, 0)?;
            put(extent, dt.size as i64)
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_true_extent`: as the extent for predefined types.
    MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: usize, true_lb: *mut isize, true_extent: *mut isize) {
        let dt = lookup(datatype)?;
        // SAFETY: out-arguments.
        unsafe {
            put(true_lb, 0)?;
            put(true_extent, dt.size as isize)
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_true_extent_x`.
    MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: usize, true_lb: *mut i64, true_extent: *mut i64) {
        let dt = lookup(datatype)?;
        // SAFETY: out-arguments.
        unsafe {
            put(true_lb, 0)?;
            put(true_extent, dt.size as i64)
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_name`: the standard name of a predefined type.
    MPI_Type_get_name / PMPI_Type_get_name(datatype: usize, type_name: *mut c_char, resultlen: *mut c_int) {
        let dt = lookup(datatype)?;
        // SAFETY: `type_name` has MPI_MAX_OBJECT_NAME bytes (the standard's
        // requirement); `resultlen` is an out-argument.
        unsafe { put_str(type_name, MPI_MAX_OBJECT_NAME, dt.name, resultlen) }
    }
}
