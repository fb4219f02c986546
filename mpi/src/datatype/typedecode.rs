//! Datatype decoding: `MPI_Type_get_envelope` and `MPI_Type_get_contents`
//! (MPI 4.1 §5.1.13), from the recipe each constructor records
//! (`datatype/recipe.rs`).

use std::ffi::c_int;

use crate::abi::class::*;
use crate::datatype::{combiner, TypeArg};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, OutSlice};
use crate::state::rt;

/// Copies `src` into the C array `dst` of `max` entries.
pub(crate) fn put_all<T: Copy>(dst: &mut OutSlice<'_, T>, max: i64, src: &[T], what: &str) -> Res {
    if src.is_empty() {
        return Ok(());
    }
    if usize::try_from(max).map_or(true, |m| m < src.len()) {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!(
                "max_{what} is {max}, but the datatype has {} (see MPI_Type_get_envelope)",
                src.len()
            ),
        ));
    }
    // `dst` has `max` entries (the table's len), at least `src.len()`.
    for (i, v) in src.iter().enumerate() {
        dst.set(i, *v);
    }
    Ok(())
}

/// An `int` count.
fn int_len(n: usize) -> Res<c_int> {
    c_int::try_from(n)
        .map_err(|_| Fail::new(MPI_ERR_COUNT, "too many constructor arguments for an int"))
}

/// A datatype's envelope: the numbers of integer, address, large-count
/// and datatype arguments, and the combiner.
pub(crate) fn envelope(datatype: usize) -> Res<([usize; 4], c_int)> {
    Ok(match rt()?.type_arg(datatype)? {
        TypeArg::Named(_) => ([0; 4], combiner::NAMED),
        TypeArg::Derived(e) => {
            let r = &e.recipe;
            (
                [r.ints.len(), r.aints.len(), r.counts.len(), r.types.len()],
                r.combiner,
            )
        }
    })
}

/// The caller's arrays for a datatype's contents, each with its size.
pub(crate) struct Contents<'a> {
    pub(crate) ints: (OutSlice<'a, c_int>, i64),
    pub(crate) aints: (OutSlice<'a, isize>, i64),
    pub(crate) counts: (OutSlice<'a, i64>, i64),
    pub(crate) types: (OutSlice<'a, usize>, i64),
}

/// `MPI_Type_get_contents(_c)`: the constructor's arguments into `out`
/// (a derived datatype argument as a new handle, see the int form).
pub(crate) fn contents(datatype: usize, out: &mut Contents<'_>) -> Res {
    let rt = rt()?;
    let e = match rt.type_arg(datatype)? {
        TypeArg::Named(_) => {
            return Err(Fail::new(
                MPI_ERR_TYPE,
                "a predefined datatype has no contents (its combiner is MPI_COMBINER_NAMED)",
            ));
        }
        TypeArg::Derived(e) => e,
    };
    let r = &e.recipe;
    let max_datatypes = out.types.1;
    if usize::try_from(max_datatypes).map_or(true, |m| m < r.types.len()) {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!(
                "max_datatypes is {max_datatypes}, but the datatype has {}",
                r.types.len()
            ),
        ));
    }
    put_all(&mut out.ints.0, out.ints.1, &r.ints, "integers")?;
    put_all(&mut out.aints.0, out.aints.1, &r.aints, "addresses")?;
    put_all(&mut out.counts.0, out.counts.1, &r.counts, "large_counts")?;
    let mut handles = Vec::with_capacity(r.types.len());
    for t in &r.types {
        let h = match t {
            TypeArg::Named(p) => Ok(p.handle),
            TypeArg::Derived(d) => rt.insert_type(d.clone()),
        };
        match h {
            Ok(h) => handles.push(h),
            Err(f) => {
                // Undo the handles already made: the call failed.
                for (h, t) in handles.iter().zip(&r.types) {
                    if matches!(t, TypeArg::Derived(_)) {
                        let _ = rt.types().with(|tb| tb.remove(*h).map(drop));
                    }
                }
                return Err(f);
            }
        }
    }
    put_all(&mut out.types.0, max_datatypes, &handles, "datatypes")
}

/// `MPI_ERR_TYPE` for a type made by a large-count constructor, which only
/// the `_c` forms decode (its large counts have no place in the int
/// forms' arrays).
fn no_large(counts: usize) -> Res {
    if counts > 0 {
        return Err(Fail::new(MPI_ERR_TYPE, "the datatype was made by a large-count constructor (MPI_Type_*_c): decode it with MPI_Type_get_envelope_c and MPI_Type_get_contents_c"));
    }
    Ok(())
}

/// `MPI_Type_get_envelope`: `MPI_COMBINER_NAMED` and no arguments for a
/// predefined datatype; the constructor and its argument counts for a
/// derived one (`MPI_ERR_TYPE` if it has large counts).
pub(crate) fn type_get_envelope(
    datatype: usize,
    mut num_integers: Out<'_, c_int>,
    mut num_addresses: Out<'_, c_int>,
    mut num_datatypes: Out<'_, c_int>,
    mut combiner: Out<'_, c_int>,
) -> Res {
    let ([ni, na, nc, nd], comb) = envelope(datatype)?;
    no_large(nc)?;
    num_integers.set(int_len(ni)?)?;
    num_addresses.set(int_len(na)?)?;
    num_datatypes.set(int_len(nd)?)?;
    combiner.set(comb)
}

/// `MPI_Type_get_contents`: the constructor's arguments. A derived
/// datatype argument comes back as a new handle the program frees
/// (`MPI_Type_free`), a predefined one as itself. A predefined
/// `datatype` has no contents (`MPI_ERR_TYPE`), nor has here one with
/// large counts; arrays shorter than the envelope's counts are
/// `MPI_ERR_ARG`.
pub(crate) fn type_get_contents(
    datatype: usize,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: OutSlice<'_, c_int>,
    array_of_addresses: OutSlice<'_, isize>,
    array_of_datatypes: OutSlice<'_, usize>,
) -> Res {
    no_large(envelope(datatype)?.0[2])?;
    let mut out = Contents {
        ints: (array_of_integers, max_integers.into()),
        aints: (array_of_addresses, max_addresses.into()),
        counts: (OutSlice::empty(), 0),
        types: (array_of_datatypes, max_datatypes.into()),
    };
    contents(datatype, &mut out)
}
