//! The large-count datatype functions: constructors and decoding (the
//! size and extent queries are the `_x` forms' bodies; packing is in
//! `pack_calls`).
//!
//! The constructors run the int constructors' bodies (`types`,
//! `typearray`) on the 64-bit values, with the large-count recipe MPI 4.1
//! §5.1.13 gives a `_c` constructor (`recipe`). Errors not tied to a
//! communicator are raised on `MPI_COMM_SELF`, as their int forms raise
//! theirs.

use std::ffi::c_int;

use crate::datatype::aint;
use crate::datatype::typearray::{darray_of, subarray_of, Darray};
use crate::datatype::typedecode::{contents, envelope, Contents};
use crate::datatype::types::{contiguous, indexed, resize, structure, vector};
use crate::datatype::{combiner, count_arg, Recipe};
use crate::error::Res;
use crate::ffi::args::{Out, OutSlice};

/// `MPI_Type_contiguous_c`: built from the 64-bit count (one block
/// when `oldtype` is contiguous, whatever the count).
pub(crate) fn type_contiguous_c(count: i64, oldtype: usize, newtype: Out<'_, usize>) -> Res {
    let recipe = Recipe::large(combiner::CONTIGUOUS, vec![], vec![count], vec![]);
    contiguous(count, oldtype, recipe, newtype)
}

/// `MPI_Type_vector_c`.
pub(crate) fn type_vector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::large(
        combiner::VECTOR,
        vec![],
        vec![count, blocklength, stride],
        vec![],
    );
    vector(count, blocklength, stride, true, oldtype, recipe, newtype)
}

/// `MPI_Type_create_hvector_c`.
pub(crate) fn type_create_hvector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::large(
        combiner::HVECTOR,
        vec![],
        vec![count, blocklength, stride],
        vec![],
    );
    vector(count, blocklength, stride, false, oldtype, recipe, newtype)
}

/// `MPI_Type_indexed_c` and `MPI_Type_create_hindexed_c` (`unit`: the
/// displacements are in extents of `oldtype`).
fn indexed_c(
    count: i64,
    lens: &[i64],
    disps: &[i64],
    unit: bool,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(count)?;
    let comb = if unit {
        combiner::INDEXED
    } else {
        combiner::HINDEXED
    };
    let recipe = Recipe::large(comb, vec![], [&[count][..], lens, disps].concat(), vec![]);
    indexed(
        count,
        oldtype,
        unit,
        |j| lens[j],
        |j| disps[j],
        recipe,
        newtype,
    )
}

/// `MPI_Type_indexed_c`.
pub(crate) fn type_indexed_c(
    count: i64,
    array_of_blocklengths: &[i64],
    array_of_displacements: &[i64],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    indexed_c(
        count,
        array_of_blocklengths,
        array_of_displacements,
        true,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_hindexed_c`.
pub(crate) fn type_create_hindexed_c(
    count: i64,
    array_of_blocklengths: &[i64],
    array_of_displacements: &[i64],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    indexed_c(
        count,
        array_of_blocklengths,
        array_of_displacements,
        false,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_indexed_block_c` and
/// `MPI_Type_create_hindexed_block_c` (`unit` as for [`indexed_c`]).
fn block_c(
    count: i64,
    blocklength: i64,
    disps: &[i64],
    unit: bool,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(count)?;
    let comb = if unit {
        combiner::INDEXED_BLOCK
    } else {
        combiner::HINDEXED_BLOCK
    };
    let recipe = Recipe::large(
        comb,
        vec![],
        [&[count, blocklength][..], disps].concat(),
        vec![],
    );
    indexed(
        count,
        oldtype,
        unit,
        |_| blocklength,
        |j| disps[j],
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_indexed_block_c`.
pub(crate) fn type_create_indexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: &[i64],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    block_c(
        count,
        blocklength,
        array_of_displacements,
        true,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_hindexed_block_c`.
pub(crate) fn type_create_hindexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: &[i64],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    block_c(
        count,
        blocklength,
        array_of_displacements,
        false,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_struct_c`.
pub(crate) fn type_create_struct_c(
    count: i64,
    array_of_blocklengths: &[i64],
    array_of_displacements: &[i64],
    array_of_types: &[usize],
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(count)?;
    let (lens, disps, types) = {
        (
            array_of_blocklengths,
            array_of_displacements,
            array_of_types,
        )
    };
    let recipe = Recipe::large(
        combiner::STRUCT,
        vec![],
        [&[count][..], lens, disps].concat(),
        vec![],
    );
    structure(types, |j| lens[j], |j| disps[j], recipe, newtype)
}

/// `MPI_Type_create_subarray_c`.
pub(crate) fn type_create_subarray_c(
    ndims: c_int,
    array_of_sizes: &[i64],
    array_of_subsizes: &[i64],
    array_of_starts: &[i64],
    order: c_int,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(ndims)?;
    let (sizes, subsizes, starts) = { (array_of_sizes, array_of_subsizes, array_of_starts) };
    let recipe = Recipe::large(
        combiner::SUBARRAY,
        vec![ndims, order],
        [sizes, subsizes, starts].concat(),
        vec![],
    );
    subarray_of(sizes, subsizes, starts, order, oldtype, recipe, newtype)
}

/// `MPI_Type_create_darray_c` (only the global sizes are `MPI_Count`).
pub(crate) fn type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: &[i64],
    array_of_distribs: &[c_int],
    array_of_dargs: &[c_int],
    array_of_psizes: &[c_int],
    order: c_int,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(ndims)?;
    let (gsizes, distribs, dargs, psizes) = {
        (
            array_of_gsizes,
            array_of_distribs,
            array_of_dargs,
            array_of_psizes,
        )
    };
    let ints = [&[size, rank, ndims][..], distribs, dargs, psizes, &[order]].concat();
    let recipe = Recipe::large(combiner::DARRAY, ints, gsizes.to_vec(), vec![]);
    let a = Darray {
        size,
        rank,
        distribs,
        dargs,
        psizes,
        order,
    };
    darray_of(gsizes, &a, oldtype, recipe, newtype)
}

/// `MPI_Type_create_resized_c`.
pub(crate) fn type_create_resized_c(
    oldtype: usize,
    lb: i64,
    extent: i64,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::large(combiner::RESIZED, vec![], vec![lb, extent], vec![]);
    resize(oldtype, aint(lb)?, aint(extent)?, recipe, newtype)
}

/// `MPI_Type_get_envelope_c`: the recipe's argument counts, large
/// counts included (a type made by a `_c` constructor has them, one
/// made by an int constructor none).
pub(crate) fn type_get_envelope_c(
    datatype: usize,
    mut num_integers: Out<'_, i64>,
    mut num_addresses: Out<'_, i64>,
    mut num_large_counts: Out<'_, i64>,
    mut num_datatypes: Out<'_, i64>,
    mut combiner: Out<'_, c_int>,
) -> Res {
    let ([ni, na, nc, nd], comb) = envelope(datatype)?;
    num_integers.set(ni as i64)?;
    num_addresses.set(na as i64)?;
    num_large_counts.set(nc as i64)?;
    num_datatypes.set(nd as i64)?;
    combiner.set(comb)
}

/// `MPI_Type_get_contents_c`: the recipe's arguments, large counts
/// included (see `MPI_Type_get_contents` for the datatypes).
pub(crate) fn type_get_contents_c(
    datatype: usize,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    array_of_integers: OutSlice<'_, c_int>,
    array_of_addresses: OutSlice<'_, isize>,
    array_of_large_counts: OutSlice<'_, i64>,
    array_of_datatypes: OutSlice<'_, usize>,
) -> Res {
    let mut out = Contents {
        ints: (array_of_integers, max_integers),
        aints: (array_of_addresses, max_addresses),
        counts: (array_of_large_counts, max_large_counts),
        types: (array_of_datatypes, max_datatypes),
    };
    contents(datatype, &mut out)
}
