//! `MPI_Type_create_subarray` and `MPI_Type_create_darray`: the layouts
//! are `datatype/array.rs`'s; here the C arrays are read and the recipe
//! (`MPI_COMBINER_SUBARRAY` / `DARRAY`, with every integer argument) is
//! recorded.

use std::ffi::c_int;

use crate::datatype::types::{array, store};

use crate::datatype::array::{darray, subarray};
use crate::datatype::{combiner, count_arg, Recipe};
use crate::error::Res;
use crate::state::rt;

/// `MPI_Type_create_subarray(_c)`; `recipe` has every argument but the
/// datatype.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn subarray_of(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: c_int,
    oldtype: usize,
    recipe: Recipe,
    newtype: *mut usize,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let l = subarray(sizes, subsizes, starts, order, &old.layout())?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// The arguments of `MPI_Type_create_darray(_c)` that are `int` in both
/// forms.
pub(crate) struct Darray<'a> {
    pub(crate) size: c_int,
    pub(crate) rank: c_int,
    pub(crate) distribs: &'a [c_int],
    pub(crate) dargs: &'a [c_int],
    pub(crate) psizes: &'a [c_int],
    pub(crate) order: c_int,
}

/// `MPI_Type_create_darray(_c)`; `recipe` has every argument but the
/// datatype.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn darray_of(
    gsizes: &[i64],
    a: &Darray<'_>,
    oldtype: usize,
    recipe: Recipe,
    newtype: *mut usize,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let l = darray(
        a.size,
        a.rank,
        gsizes,
        a.distribs,
        a.dargs,
        a.psizes,
        a.order,
        &old.layout(),
    )?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// Widens an `int` array.
fn wide(v: &[c_int]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

/// `MPI_Type_create_subarray`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_subarray(
    ndims: c_int,
    array_of_sizes: *const c_int,
    array_of_subsizes: *const c_int,
    array_of_starts: *const c_int,
    order: c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(ndims)?;
    // SAFETY: the caller's arrays of `ndims` entries.
    let (sizes, subsizes, starts) = unsafe {
        (
            array(array_of_sizes, n, "size")?,
            array(array_of_subsizes, n, "subsize")?,
            array(array_of_starts, n, "start")?,
        )
    };
    let ints = [&[ndims][..], sizes, subsizes, starts, &[order]].concat();
    let recipe = Recipe::new(combiner::SUBARRAY, ints, vec![], vec![]);
    // SAFETY: out-argument.
    unsafe {
        subarray_of(
            &wide(sizes),
            &wide(subsizes),
            &wide(starts),
            order,
            oldtype,
            recipe,
            newtype,
        )
    }
}

/// `MPI_Type_create_darray`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
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
    let ints = [
        &[size, rank, ndims][..],
        gsizes,
        distribs,
        dargs,
        psizes,
        &[order],
    ]
    .concat();
    let recipe = Recipe::new(combiner::DARRAY, ints, vec![], vec![]);
    let a = Darray {
        size,
        rank,
        distribs,
        dargs,
        psizes,
        order,
    };
    // SAFETY: out-argument.
    unsafe { darray_of(&wide(gsizes), &a, oldtype, recipe, newtype) }
}
