//! Datatypes: queries (size, extent, true extent, name) on every type,
//! the constructors of derived types, commit, dup and free, and address
//! arithmetic.

use std::ffi::c_int;
use std::sync::Arc;

use crate::ffi::args::{Out, TextOut};

use crate::abi::class::*;
use crate::abi::{MPI_DATATYPE_NULL, MPI_MAX_OBJECT_NAME};
use crate::datatype::derived::resized;
use crate::datatype::{combiner, count_arg, predefined, Builder, Layout, Recipe, TypeArg};
use crate::error::{Fail, Res};
use crate::state::{rt, Runtime};

/// A block length argument.
fn blocklen(b: i64) -> Res<usize> {
    usize::try_from(b).map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid block length {b}")))
}

/// Displacement `d` in units of `old`'s extent, in bytes.
fn scaled(d: impl Into<i64>, old: &Layout) -> Res<isize> {
    let d = d.into();
    isize::try_from(d)
        .ok()
        .and_then(|d| d.checked_mul(old.extent()))
        .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("displacement {d} overflows")))
}

/// Stores a new derived type made by `recipe` and writes its handle.
pub(super) fn store(
    rt: &Runtime,
    layout: Layout,
    recipe: Recipe,
    mut newtype: Out<'_, usize>,
) -> Res {
    if newtype.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null datatype pointer"));
    }
    let h = rt.add_type(layout, recipe)?;
    newtype.set(h)
}

/// Builds a type from `(displacement, block length)` pieces of `old`.
fn pieces(old: &Layout, it: impl Iterator<Item = Res<(isize, usize)>>) -> Res<Layout> {
    let mut b = Builder::new();
    for p in it {
        let (disp, n) = p?;
        b.push(old, disp, n)?;
    }
    Ok(b.finish(false))
}

/// `MPI_Type_size`: `MPI_UNDEFINED` if it does not fit an `int`.
pub(crate) fn type_size(datatype: usize, mut size: Out<'_, c_int>) -> Res {
    let ty = rt()?.any_type(datatype)?;
    size.set(c_int::try_from(ty.size()).unwrap_or(crate::abi::MPI_UNDEFINED))
}

/// `MPI_Type_match_size`: the Fortran sized type of a class
/// (`MPI_TYPECLASS_INTEGER`, `_REAL`, `_COMPLEX`, `MPIX_TYPECLASS_LOGICAL`)
/// and a size in bytes; usable before `MPI_Init`.
pub(crate) fn type_match_size(typeclass: c_int, size: c_int, mut datatype: Out<'_, usize>) -> Res {
    let t = usize::try_from(size)
        .ok()
        .and_then(|s| super::predefined::match_size(typeclass, s))
        .ok_or_else(|| {
            Fail::msg(
                crate::abi::class::MPI_ERR_ARG,
                format!("no type of class {typeclass} has {size} bytes"),
            )
        })?;
    datatype.set(t)
}

/// An `MPI_Type_create_f90_*` call's arguments: class, precision, range.
type F90Args = (c_int, c_int, c_int);

/// The types `MPI_Type_create_f90_*` made, by their arguments: the same
/// arguments give the same handle, as for a predefined type.
static F90_TYPES: std::sync::Mutex<Vec<(F90Args, usize)>> = std::sync::Mutex::new(Vec::new());

/// True for a handle `MPI_Type_create_f90_*` gave (it may not be freed).
fn is_f90(h: usize) -> bool {
    crate::state::lock(&F90_TYPES).iter().any(|e| e.1 == h)
}

/// The Fortran type of `class` with `p` digits and range `r`: the layout
/// of the smallest sized type that has them (`MPI_REAL8`, ...), decoded
/// as MPI says (combiner `MPI_COMBINER_F90_*`, the arguments as its
/// integers), committed, and one handle per argument set; `MPI_ERR_ARG`
/// if no type has them.
fn f90(class: c_int, p: c_int, r: c_int, mut newtype: Out<'_, usize>) -> Res {
    use super::predefined::{MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_REAL};
    let rt = rt()?;
    let key = (class, p, r);
    if let Some(&(_, h)) = crate::state::lock(&F90_TYPES).iter().find(|e| e.0 == key) {
        return newtype.set(h);
    }
    let sized = super::predefined::f90_type(class, p, r).ok_or_else(|| {
        Fail::msg(
            crate::abi::class::MPI_ERR_ARG,
            format!("no Fortran type of class {class} has precision {p} and range {r}"),
        )
    })?;
    let (combiner, ints) = match class {
        MPI_TYPECLASS_INTEGER => (combiner::F90_INTEGER, vec![r]),
        MPI_TYPECLASS_REAL => (combiner::F90_REAL, vec![p, r]),
        _ => (combiner::F90_COMPLEX, vec![p, r]),
    };
    let layout = match rt.type_arg(sized)? {
        TypeArg::Named(t) => Arc::new(Layout::of(t)),
        TypeArg::Derived(e) => e.layout,
    };
    let entry = crate::datatype::TypeEntry {
        layout,
        committed: true,
        name: String::new(),
        recipe: Arc::new(Recipe::new(combiner, ints, vec![], vec![])),
    };
    let h = rt.insert_type(entry)?;
    crate::state::lock(&F90_TYPES).push((key, h));
    newtype.set(h)
}

/// `MPI_Type_create_f90_integer`: an integer type of at least `r` decimal
/// digits (`MPI_INTEGERn`'s layout, combiner `MPI_COMBINER_F90_INTEGER`).
pub(crate) fn type_create_f90_integer(r: c_int, newtype: Out<'_, usize>) -> Res {
    f90(
        super::predefined::MPI_TYPECLASS_INTEGER,
        crate::abi::MPI_UNDEFINED,
        r,
        newtype,
    )
}

/// `MPI_Type_create_f90_real`: as [`type_create_f90_integer`], an
/// `MPI_REALn` of at least `p` digits and range `r`.
pub(crate) fn type_create_f90_real(p: c_int, r: c_int, newtype: Out<'_, usize>) -> Res {
    f90(super::predefined::MPI_TYPECLASS_REAL, p, r, newtype)
}

/// `MPI_Type_create_f90_complex`: an `MPI_COMPLEXn` of at least `p`
/// digits and range `r` in each part.
pub(crate) fn type_create_f90_complex(p: c_int, r: c_int, newtype: Out<'_, usize>) -> Res {
    f90(super::predefined::MPI_TYPECLASS_COMPLEX, p, r, newtype)
}

/// `MPI_Type_size_x`.
pub(crate) fn type_size_x(datatype: usize, mut size: Out<'_, i64>) -> Res {
    let ty = rt()?.any_type(datatype)?;
    size.set(ty.size() as i64)
}

/// `MPI_Type_get_extent` and `MPI_Type_get_true_extent` (`true_extent`),
/// and their `_x` and `_c` forms: one body, the out-arguments `MPI_Aint`s
/// or `MPI_Count`s.
pub(crate) fn type_extent<T: Copy + TryFrom<isize>>(
    true_extent: bool,
    datatype: usize,
    mut lb: Out<'_, T>,
    mut extent: Out<'_, T>,
) -> Res {
    let ty = rt()?.any_type(datatype)?;
    let (l, e) = if true_extent {
        ty.true_extent()
    } else {
        ty.extent()
    };
    let out = |v: isize| {
        T::try_from(v)
            .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("{v} does not fit the argument")))
    };
    lb.set(out(l)?)?;
    extent.set(out(e)?)
}

/// `MPI_Type_get_name`: a predefined type's standard name (or the name
/// the program gave it); a derived type's name, empty if none;
/// `"MPI_DATATYPE_NULL"` for `MPI_DATATYPE_NULL` (MPI 4.1).
pub(crate) fn type_get_name(
    datatype: usize,
    mut type_name: TextOut<'_>,
    mut resultlen: Out<'_, c_int>,
) -> Res {
    let rt = rt()?;
    let name = match predefined(datatype) {
        None if datatype == MPI_DATATYPE_NULL => "MPI_DATATYPE_NULL".to_owned(),
        Some(p) => rt
            .type_names
            .with(|n| {
                n.iter()
                    .find(|(h, _)| *h == datatype)
                    .map(|(_, s)| s.clone())
            })?
            .unwrap_or_else(|| p.name.to_owned()),
        None => rt
            .types()
            .with(|t| t.get(datatype).map(|e| e.name.clone()))?
            .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))?,
    };
    type_name.set(&name, Some(&mut resultlen))
}

/// `MPI_Type_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1`
/// bytes are cut. Predefined types can be renamed too.
pub(crate) fn type_set_name(datatype: usize, type_name: &str) -> Res {
    let rt = rt()?;
    let name = type_name;
    let mut end = name.len().min(MPI_MAX_OBJECT_NAME - 1);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let name = name[..end].to_owned();
    if predefined(datatype).is_some() {
        return rt
            .type_names
            .with(|n| match n.iter_mut().find(|(h, _)| *h == datatype) {
                Some(e) => e.1 = name,
                None => n.push((datatype, name)),
            });
    }
    rt.types()
        .with(|t| t.get_mut(datatype).map(|e| e.name = name))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
}

/// `MPI_Type_contiguous(_c)`: `count` copies of `oldtype`, one block if
/// it is contiguous; `recipe` has every argument but the datatype.
pub(crate) fn contiguous(
    count: i64,
    oldtype: usize,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let n = count_arg(count)?;
    let l = pieces(&old.layout(), std::iter::once(Ok((0, n))))?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    store(rt, l, recipe, newtype)
}

/// `MPI_Type_contiguous`.
pub(crate) fn type_contiguous(count: c_int, oldtype: usize, newtype: Out<'_, usize>) -> Res {
    let recipe = Recipe::new(combiner::CONTIGUOUS, vec![count], vec![], vec![]);
    contiguous(count.into(), oldtype, recipe, newtype)
}

/// `MPI_Type_vector(_c)` (`unit`: the stride is in extents of `old`) and
/// `MPI_Type_create_hvector(_c)` (bytes); `recipe` has every argument but
/// the datatype.
pub(crate) fn vector(
    count: i64,
    block: i64,
    stride: i64,
    unit: bool,
    oldtype: usize,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let arg = rt.type_arg(oldtype)?;
    let old = arg.layout();
    let (n, b) = (count_arg(count)?, blocklen(block)?);
    let stride = if unit {
        scaled(stride, &old)?
    } else {
        isize::try_from(stride).map_err(|_| Fail::new(MPI_ERR_ARG, "the stride overflows"))?
    };
    let l = pieces(
        &old,
        (0..n).map(|j| {
            (j as isize)
                .checked_mul(stride)
                .map(|d| (d, b))
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "the stride overflows"))
        }),
    )?;
    drop(old);
    let recipe = Recipe {
        types: vec![arg],
        ..recipe
    };
    store(rt, l, recipe, newtype)
}

/// `MPI_Type_vector`.
pub(crate) fn type_vector(
    count: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::new(
        combiner::VECTOR,
        vec![count, blocklength, stride],
        vec![],
        vec![],
    );
    vector(
        count.into(),
        blocklength.into(),
        stride.into(),
        true,
        oldtype,
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_hvector`.
pub(crate) fn type_create_hvector(
    count: c_int,
    blocklength: c_int,
    stride: isize,
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::new(
        combiner::HVECTOR,
        vec![count, blocklength],
        vec![stride],
        vec![],
    );
    vector(
        count.into(),
        blocklength.into(),
        stride as i64,
        false,
        oldtype,
        recipe,
        newtype,
    )
}

/// The indexed constructors: block `j` of `lens(j)` copies of `old` at
/// `disps(j)` (scaled by the extent when `unit`); `recipe` has every
/// argument but the datatype.
///
#[allow(clippy::too_many_arguments)]
pub(crate) fn indexed(
    count: i64,
    oldtype: usize,
    unit: bool,
    lens: impl Fn(usize) -> i64,
    disps: impl Fn(usize) -> i64,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let arg = rt.type_arg(oldtype)?;
    let old = arg.layout();
    let n = count_arg(count)?;
    let l = pieces(
        &old,
        (0..n).map(|j| {
            let d = if unit {
                scaled(disps(j), &old)?
            } else {
                isize::try_from(disps(j))
                    .map_err(|_| Fail::new(MPI_ERR_ARG, "a displacement overflows"))?
            };
            Ok((d, blocklen(lens(j))?))
        }),
    )?;
    drop(old);
    let recipe = Recipe {
        types: vec![arg],
        ..recipe
    };
    store(rt, l, recipe, newtype)
}

/// `MPI_Type_indexed`.
pub(crate) fn type_indexed(
    count: c_int,
    array_of_blocklengths: &[c_int],
    array_of_displacements: &[c_int],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let _n = count_arg(count)?;
    let (lens, disps) = { (array_of_blocklengths, array_of_displacements) };
    let ints = [&[count][..], lens, disps].concat();
    let recipe = Recipe::new(combiner::INDEXED, ints, vec![], vec![]);
    indexed(
        count.into(),
        oldtype,
        true,
        |j| lens[j].into(),
        |j| disps[j].into(),
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_hindexed`.
pub(crate) fn type_create_hindexed(
    count: c_int,
    array_of_blocklengths: &[c_int],
    array_of_displacements: &[isize],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let _n = count_arg(count)?;
    let (lens, disps) = { (array_of_blocklengths, array_of_displacements) };
    let ints = [&[count][..], lens].concat();
    let recipe = Recipe::new(combiner::HINDEXED, ints, disps.to_vec(), vec![]);
    indexed(
        count.into(),
        oldtype,
        false,
        |j| lens[j].into(),
        |j| disps[j] as i64,
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_indexed_block`.
pub(crate) fn type_create_indexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: &[c_int],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let _n = count_arg(count)?;
    let disps = array_of_displacements;
    let ints = [&[count, blocklength][..], disps].concat();
    let recipe = Recipe::new(combiner::INDEXED_BLOCK, ints, vec![], vec![]);
    indexed(
        count.into(),
        oldtype,
        true,
        |_| blocklength.into(),
        |j| disps[j].into(),
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_hindexed_block`.
pub(crate) fn type_create_hindexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: &[isize],
    oldtype: usize,
    newtype: Out<'_, usize>,
) -> Res {
    let _n = count_arg(count)?;
    let disps = array_of_displacements;
    let recipe = Recipe::new(
        combiner::HINDEXED_BLOCK,
        vec![count, blocklength],
        disps.to_vec(),
        vec![],
    );
    indexed(
        count.into(),
        oldtype,
        false,
        |_| blocklength.into(),
        |j| disps[j] as i64,
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_struct(_c)`: member `j` is `lens(j)` copies of
/// `types[j]` at `disps(j)` bytes; the extent is rounded up to the widest
/// member's alignment (unless a member was resized). `recipe` has every
/// argument but the datatypes.
pub(crate) fn structure(
    types: &[usize],
    lens: impl Fn(usize) -> i64,
    disps: impl Fn(usize) -> i64,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let mut b = Builder::new();
    let mut args = Vec::with_capacity(types.len());
    for (j, &t) in types.iter().enumerate() {
        let old = rt.type_arg(t)?;
        let d = isize::try_from(disps(j))
            .map_err(|_| Fail::new(MPI_ERR_ARG, "a displacement overflows"))?;
        b.push(&old.layout(), d, blocklen(lens(j))?)?;
        args.push(old);
    }
    let recipe = Recipe {
        types: args,
        ..recipe
    };
    store(rt, b.finish(true), recipe, newtype)
}

/// `MPI_Type_create_struct`: the extent is rounded up to the widest
/// member's alignment (unless a member was resized).
pub(crate) fn type_create_struct(
    count: c_int,
    array_of_blocklengths: &[c_int],
    array_of_displacements: &[isize],
    array_of_types: &[usize],
    newtype: Out<'_, usize>,
) -> Res {
    let _n = count_arg(count)?;
    let (lens, disps, types) = {
        (
            array_of_blocklengths,
            array_of_displacements,
            array_of_types,
        )
    };
    let ints = [&[count][..], lens].concat();
    let recipe = Recipe::new(combiner::STRUCT, ints, disps.to_vec(), vec![]);
    structure(
        types,
        |j| lens[j].into(),
        |j| disps[j] as i64,
        recipe,
        newtype,
    )
}

/// `MPI_Type_create_resized(_c)`; `recipe` has every argument but the
/// datatype.
pub(crate) fn resize(
    oldtype: usize,
    lb: isize,
    extent: isize,
    recipe: Recipe,
    newtype: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let l = resized(&old.layout(), lb, extent)?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    store(rt, l, recipe, newtype)
}

/// `MPI_Type_create_resized`.
pub(crate) fn type_create_resized(
    oldtype: usize,
    lb: isize,
    extent: isize,
    newtype: Out<'_, usize>,
) -> Res {
    let recipe = Recipe::new(combiner::RESIZED, vec![], vec![lb, extent], vec![]);
    resize(oldtype, lb, extent, recipe, newtype)
}

/// `MPI_Type_dup`: the same layout, committed if the old one is.
pub(crate) fn type_dup(oldtype: usize, mut newtype: Out<'_, usize>) -> Res {
    let rt = rt()?;
    if newtype.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null datatype pointer"));
    }
    let old = rt.type_arg(oldtype)?;
    let (layout, committed) = match &old {
        TypeArg::Named(p) => (Arc::new(Layout::of(p)), true),
        TypeArg::Derived(e) => (Arc::clone(&e.layout), e.committed),
    };
    let recipe = Arc::new(Recipe::new(combiner::DUP, vec![], vec![], vec![old]));
    let entry = crate::datatype::TypeEntry {
        layout,
        committed,
        name: String::new(),
        recipe,
    };
    let h = rt.insert_type(entry)?;
    crate::attr::types::duplicated(oldtype, h)?;
    newtype.set(h)
}

/// `MPI_Type_commit`: a predefined type is always committed.
pub(crate) fn type_commit(datatype: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let h = datatype.get()?;
    if predefined(h).is_some() {
        return Ok(());
    }
    rt.types()
        .with(|t| t.get_mut(h).map(|e| e.committed = true))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
}

/// `MPI_Type_free`: the handle becomes `MPI_DATATYPE_NULL`; operations
/// in flight keep the layout.
pub(crate) fn type_free(mut datatype: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let h = datatype.get()?;
    if predefined(h).is_some() || is_f90(h) {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "a predefined datatype (or one MPI_Type_create_f90_* gave) cannot be freed",
        ));
    }
    rt.any_type(h)?;
    crate::attr::types::freeing(h)?;
    let entry = rt
        .types()
        .with(|t| t.remove(h))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))?;
    drop(entry);
    datatype.set(MPI_DATATYPE_NULL)
}

/// `MPI_Get_address`: the address as an integer.
pub(crate) fn get_address(location: usize, mut address: Out<'_, isize>) -> Res {
    address.set(location as isize)
}

/// `MPI_Aint_add`: `base + disp` as addresses (wrapping, as C's pointer
/// arithmetic on `char *` would).
pub(crate) fn aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff`: `addr1 - addr2`.
pub(crate) fn aint_diff(addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
}

/// `MPI_Type_get_value_index` (MPI 4.1): the predefined value-index
/// pair type for `MPI_MINLOC`/`MPI_MAXLOC` (`MPI_FLOAT_INT`, ...,
/// `MPI_2INT` with `MPI_INT` indices; `MPI_2REAL`,
/// `MPI_2DOUBLE_PRECISION`, `MPI_2INTEGER` with `MPI_INTEGER`), or
/// `MPI_DATATYPE_NULL` when no predefined pair type exists.
pub(crate) fn type_get_value_index(
    value_type: usize,
    index_type: usize,
    mut pair_type: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    rt.any_type(value_type)?;
    rt.any_type(index_type)?;
    let pair = match (value_type, index_type) {
        (0x210, 0x209) => 0x228, // FLOAT, INT: FLOAT_INT
        (0x214, 0x209) => 0x229, // DOUBLE: DOUBLE_INT
        (0x20a, 0x209) => 0x22a, // LONG: LONG_INT
        (0x209, 0x209) => 0x22b, // INT: 2INT
        (0x208, 0x209) => 0x22c, // SHORT: SHORT_INT
        (0x220, 0x209) => 0x22d, // LONG_DOUBLE: LONG_DOUBLE_INT
        (0x21a, 0x219) => 0x230, // REAL, INTEGER: 2REAL
        (0x21c, 0x219) => 0x231, // DOUBLE_PRECISION: 2DOUBLE_PRECISION
        (0x219, 0x219) => 0x232, // INTEGER: 2INTEGER
        _ => MPI_DATATYPE_NULL,
    };
    pair_type.set(pair)
}
