//! Datatypes: queries (size, extent, true extent, name) on every type,
//! the constructors of derived types, commit, dup and free, and address
//! arithmetic.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use crate::ffi::{cstr, get, put, put_str};

use crate::abi::class::*;
use crate::abi::{MPI_DATATYPE_NULL, MPI_MAX_OBJECT_NAME};
use crate::datatype::derived::resized;
use crate::datatype::{combiner, count_arg, predefined, Builder, Layout, Recipe, TypeArg};
use crate::error::{Fail, Res};
use crate::state::{rt, Runtime};

/// A C array argument of `n` entries.
///
/// # Safety
/// `p` is null or valid for reads of `n` values.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize, what: &'static str) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::msg(MPI_ERR_ARG, format!("a null {what} array")));
    }
    // SAFETY: non-null, valid for `n` values (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

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
///
/// # Safety
/// `newtype` is null or valid for a write.
pub(super) unsafe fn store(
    rt: &Runtime,
    layout: Layout,
    recipe: Recipe,
    newtype: *mut usize,
) -> Res {
    if newtype.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null datatype pointer"));
    }
    let h = rt.add_type(layout, recipe)?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(newtype, h) }
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
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_size(datatype: usize, size: *mut c_int) -> Res {
    let ty = rt()?.any_type(datatype)?;
    // SAFETY: out-argument.
    unsafe {
        put(
            size,
            c_int::try_from(ty.size()).unwrap_or(crate::abi::MPI_UNDEFINED),
        )
    }
}

/// `MPI_Type_size_x`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_size_x(datatype: usize, size: *mut i64) -> Res {
    let ty = rt()?.any_type(datatype)?;
    // SAFETY: out-argument.
    unsafe { put(size, ty.size() as i64) }
}

/// `MPI_Type_get_extent`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_extent(datatype: usize, lb: *mut isize, extent: *mut isize) -> Res {
    let (l, e) = rt()?.any_type(datatype)?.extent();
    // SAFETY: out-arguments.
    unsafe {
        put(lb, l)?;
        put(extent, e)
    }
}

/// `MPI_Type_get_extent_x`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_extent_x(datatype: usize, lb: *mut i64, extent: *mut i64) -> Res {
    let (l, e) = rt()?.any_type(datatype)?.extent();
    // SAFETY: out-arguments.
    unsafe {
        put(lb, l as i64)?;
        put(extent, e as i64)
    }
}

/// `MPI_Type_get_true_extent`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_true_extent(
    datatype: usize,
    true_lb: *mut isize,
    true_extent: *mut isize,
) -> Res {
    let (l, e) = rt()?.any_type(datatype)?.true_extent();
    // SAFETY: out-arguments.
    unsafe {
        put(true_lb, l)?;
        put(true_extent, e)
    }
}

/// `MPI_Type_get_true_extent_x`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_true_extent_x(
    datatype: usize,
    true_lb: *mut i64,
    true_extent: *mut i64,
) -> Res {
    let (l, e) = rt()?.any_type(datatype)?.true_extent();
    // SAFETY: out-arguments.
    unsafe {
        put(true_lb, l as i64)?;
        put(true_extent, e as i64)
    }
}

/// `MPI_Type_get_name`: a predefined type's standard name (or the name
/// the program gave it); a derived type's name, empty if none;
/// `"MPI_DATATYPE_NULL"` for `MPI_DATATYPE_NULL` (MPI 4.1).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_name(
    datatype: usize,
    type_name: *mut c_char,
    resultlen: *mut c_int,
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
            .types
            .with(|t| t.get(datatype).map(|e| e.name.clone()))?
            .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))?,
    };
    // SAFETY: `type_name` has MPI_MAX_OBJECT_NAME bytes (the standard's
    // requirement); `resultlen` is an out-argument.
    unsafe { put_str(type_name, MPI_MAX_OBJECT_NAME, &name, resultlen) }
}

/// `MPI_Type_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1`
/// bytes are cut. Predefined types can be renamed too.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_set_name(datatype: usize, type_name: *const c_char) -> Res {
    let rt = rt()?;
    // SAFETY: a NUL-terminated string argument.
    let name = unsafe { cstr(type_name)? };
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
    rt.types
        .with(|t| t.get_mut(datatype).map(|e| e.name = name))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
}

/// `MPI_Type_contiguous(_c)`: `count` copies of `oldtype`, one block if
/// it is contiguous; `recipe` has every argument but the datatype.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn contiguous(
    count: i64,
    oldtype: usize,
    recipe: Recipe,
    newtype: *mut usize,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let n = count_arg(count)?;
    let l = pieces(&old.layout(), std::iter::once(Ok((0, n))))?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// `MPI_Type_contiguous`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_contiguous(count: c_int, oldtype: usize, newtype: *mut usize) -> Res {
    let recipe = Recipe::new(combiner::CONTIGUOUS, vec![count], vec![], vec![]);
    // SAFETY: out-argument.
    unsafe { contiguous(count.into(), oldtype, recipe, newtype) }
}

/// `MPI_Type_vector(_c)` (`unit`: the stride is in extents of `old`) and
/// `MPI_Type_create_hvector(_c)` (bytes); `recipe` has every argument but
/// the datatype.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn vector(
    count: i64,
    block: i64,
    stride: i64,
    unit: bool,
    oldtype: usize,
    recipe: Recipe,
    newtype: *mut usize,
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
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// `MPI_Type_vector`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_vector(
    count: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::new(
        combiner::VECTOR,
        vec![count, blocklength, stride],
        vec![],
        vec![],
    );
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_hvector`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hvector(
    count: c_int,
    blocklength: c_int,
    stride: isize,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::new(
        combiner::HVECTOR,
        vec![count, blocklength],
        vec![stride],
        vec![],
    );
    // SAFETY: out-argument.
    unsafe {
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
}

/// The indexed constructors: block `j` of `lens(j)` copies of `old` at
/// `disps(j)` (scaled by the extent when `unit`); `recipe` has every
/// argument but the datatype.
///
/// # Safety
/// `newtype` is an out-argument.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn indexed(
    count: i64,
    oldtype: usize,
    unit: bool,
    lens: impl Fn(usize) -> i64,
    disps: impl Fn(usize) -> i64,
    recipe: Recipe,
    newtype: *mut usize,
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
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// `MPI_Type_indexed`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_indexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's arrays of `count` entries.
    let (lens, disps) = unsafe {
        (
            array(array_of_blocklengths, n, "block length")?,
            array(array_of_displacements, n, "displacement")?,
        )
    };
    let ints = [&[count][..], lens, disps].concat();
    let recipe = Recipe::new(combiner::INDEXED, ints, vec![], vec![]);
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_hindexed`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hindexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const isize,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's arrays of `count` entries.
    let (lens, disps) = unsafe {
        (
            array(array_of_blocklengths, n, "block length")?,
            array(array_of_displacements, n, "displacement")?,
        )
    };
    let ints = [&[count][..], lens].concat();
    let recipe = Recipe::new(combiner::HINDEXED, ints, disps.to_vec(), vec![]);
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_indexed_block`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_indexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's array of `count` entries.
    let disps = unsafe { array(array_of_displacements, n, "displacement")? };
    let ints = [&[count, blocklength][..], disps].concat();
    let recipe = Recipe::new(combiner::INDEXED_BLOCK, ints, vec![], vec![]);
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_hindexed_block`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hindexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const isize,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's array of `count` entries.
    let disps = unsafe { array(array_of_displacements, n, "displacement")? };
    let recipe = Recipe::new(
        combiner::HINDEXED_BLOCK,
        vec![count, blocklength],
        disps.to_vec(),
        vec![],
    );
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_struct(_c)`: member `j` is `lens(j)` copies of
/// `types[j]` at `disps(j)` bytes; the extent is rounded up to the widest
/// member's alignment (unless a member was resized). `recipe` has every
/// argument but the datatypes.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn structure(
    types: &[usize],
    lens: impl Fn(usize) -> i64,
    disps: impl Fn(usize) -> i64,
    recipe: Recipe,
    newtype: *mut usize,
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
    // SAFETY: forwarded.
    unsafe { store(rt, b.finish(true), recipe, newtype) }
}

/// `MPI_Type_create_struct`: the extent is rounded up to the widest
/// member's alignment (unless a member was resized).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_struct(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const isize,
    array_of_types: *const usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's arrays of `count` entries.
    let (lens, disps, types) = unsafe {
        (
            array(array_of_blocklengths, n, "block length")?,
            array(array_of_displacements, n, "displacement")?,
            array(array_of_types, n, "datatype")?,
        )
    };
    let ints = [&[count][..], lens].concat();
    let recipe = Recipe::new(combiner::STRUCT, ints, disps.to_vec(), vec![]);
    // SAFETY: out-argument.
    unsafe {
        structure(
            types,
            |j| lens[j].into(),
            |j| disps[j] as i64,
            recipe,
            newtype,
        )
    }
}

/// `MPI_Type_create_resized(_c)`; `recipe` has every argument but the
/// datatype.
///
/// # Safety
/// `newtype` is an out-argument.
pub(crate) unsafe fn resize(
    oldtype: usize,
    lb: isize,
    extent: isize,
    recipe: Recipe,
    newtype: *mut usize,
) -> Res {
    let rt = rt()?;
    let old = rt.type_arg(oldtype)?;
    let l = resized(&old.layout(), lb, extent)?;
    let recipe = Recipe {
        types: vec![old],
        ..recipe
    };
    // SAFETY: forwarded.
    unsafe { store(rt, l, recipe, newtype) }
}

/// `MPI_Type_create_resized`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_resized(
    oldtype: usize,
    lb: isize,
    extent: isize,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::new(combiner::RESIZED, vec![], vec![lb, extent], vec![]);
    // SAFETY: out-argument.
    unsafe { resize(oldtype, lb, extent, recipe, newtype) }
}

/// `MPI_Type_dup`: the same layout, committed if the old one is.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_dup(oldtype: usize, newtype: *mut usize) -> Res {
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
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(newtype, h) }
}

/// `MPI_Type_commit`: a predefined type is always committed.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_commit(datatype: *mut usize) -> Res {
    let rt = rt()?;
    // SAFETY: in-argument (the standard passes a pointer).
    let h = unsafe { get(datatype)? };
    if predefined(h).is_some() {
        return Ok(());
    }
    rt.types
        .with(|t| t.get_mut(h).map(|e| e.committed = true))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
}

/// `MPI_Type_free`: the handle becomes `MPI_DATATYPE_NULL`; operations
/// in flight keep the layout.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_free(datatype: *mut usize) -> Res {
    let rt = rt()?;
    // SAFETY: in/out argument.
    let h = unsafe { get(datatype)? };
    if predefined(h).is_some() {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "a predefined datatype cannot be freed",
        ));
    }
    let entry = rt
        .types
        .with(|t| t.remove(h))?
        .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))?;
    drop(entry);
    // SAFETY: as above.
    unsafe { put(datatype, MPI_DATATYPE_NULL) }
}

/// `MPI_Get_address`: the address as an integer.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn get_address(location: *const c_void, address: *mut isize) -> Res {
    // SAFETY: out-argument.
    unsafe { put(address, location as isize) }
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
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_value_index(
    value_type: usize,
    index_type: usize,
    pair_type: *mut usize,
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
    // SAFETY: out-argument.
    unsafe { put(pair_type, pair) }
}
