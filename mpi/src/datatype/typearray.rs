//! `MPI_Type_create_subarray` and `MPI_Type_create_darray`: the layouts
//! are `datatype/array.rs`'s; here the C arrays are read and the recipe
//! (`MPI_COMBINER_SUBARRAY` / `DARRAY`, with every integer argument) is
//! recorded.

use std::ffi::c_int;

use crate::datatype::types::store;

use crate::datatype::array::{darray, subarray};
use crate::datatype::{combiner, count_arg, Recipe};
use crate::error::Res;
use crate::ffi::args::Out;
use crate::state::rt;

/// `MPI_Type_create_subarray(_c)`; `recipe` has every argument but the
/// datatype.
pub(crate) fn subarray_of(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: c_int,
    oldtype: usize,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let l = subarray(sizes, subsizes, starts, order, &old.layout())?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    store(rt, l, recipe, newtype)
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
pub(crate) fn darray_of(
    gsizes: &[i64],
    a: &Darray<'_>,
    oldtype: usize,
    recipe: Recipe,
    newtype: Out<'_, usize>,
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
    store(rt, l, recipe, newtype)
}

/// Widens an `int` array.
fn wide(v: &[c_int]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

/// `MPI_Type_create_subarray`.
pub(crate) fn type_create_subarray(
    ndims: c_int,
    array_of_sizes: &[c_int],
    array_of_subsizes: &[c_int],
    array_of_starts: &[c_int],
    order: c_int,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    count_arg(ndims)?;
    let (sizes, subsizes, starts) = { (array_of_sizes, array_of_subsizes, array_of_starts) };
    let ints = [&[ndims][..], sizes, subsizes, starts, &[order]].concat();
    let recipe = Recipe::new(combiner::SUBARRAY, ints, vec![], vec![]);
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

/// `MPI_Type_create_darray`.
pub(crate) fn type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: &[c_int],
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
    darray_of(&wide(gsizes), &a, oldtype, recipe, newtype)
}
