//! The large-count datatype functions (constructors, size and extent
//! queries, decoding), `Pack_c`/`Unpack_c`/`Pack_size_c` and their
//! external32 forms, `Op_create_c` and `Reduce_local_c`.
//!
//! The constructors run the int constructors' bodies (`ffi/types.rs`,
//! `ffi/typearray.rs`) on the 64-bit values, with the large-count recipe
//! MPI 4.1 §5.1.13 gives a `_c` constructor (`datatype/recipe.rs`); pack
//! and unpack share their int forms' bodies (`ffi/pack.rs`) with 64-bit
//! counts, positions and sizes. Errors not tied to a communicator are
//! raised on `MPI_COMM_SELF`, as their int forms raise theirs.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_UNSUPPORTED_OPERATION};
use crate::coll::reduction::{op_create, reduce_local_wide};
use crate::datatype::{combiner, count_arg, Recipe};
use crate::error::{Fail, Res};
use crate::p2p::large::aint;

use crate::datatype::pack_calls::{
    pack_external_size_wide, pack_external_wide, pack_size_wide, pack_wide, position,
    unpack_external_wide, unpack_wide,
};

use crate::datatype::typearray::{darray_of, subarray_of, Darray};
use crate::datatype::typedecode::{contents, envelope, Contents};
use crate::datatype::types::{contiguous, indexed, resize, structure, vector};
use crate::ffi::put;

/// `n` entries of the program's `MPI_Count`/`MPI_Aint` array, as counts.
///
/// # Safety
/// `p` is null or valid for reads of `n` entries.
unsafe fn counts<'a, T>(p: *const T, n: usize, what: &'static str) -> Res<&'a [T]> {
    // SAFETY: forwarded.
    unsafe { crate::datatype::types::array(p, n, what) }
}

/// `MPI_Type_contiguous_c`: built from the 64-bit count (one block
/// when `oldtype` is contiguous, whatever the count).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_contiguous_c(count: i64, oldtype: usize, newtype: *mut usize) -> Res {
    let recipe = Recipe::large(combiner::CONTIGUOUS, vec![], vec![count], vec![]);
    // SAFETY: out-argument.
    unsafe { contiguous(count, oldtype, recipe, newtype) }
}

/// `MPI_Type_vector_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_vector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::large(
        combiner::VECTOR,
        vec![],
        vec![count, blocklength, stride],
        vec![],
    );
    // SAFETY: out-argument.
    unsafe { vector(count, blocklength, stride, true, oldtype, recipe, newtype) }
}

/// `MPI_Type_create_hvector_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hvector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::large(
        combiner::HVECTOR,
        vec![],
        vec![count, blocklength, stride],
        vec![],
    );
    // SAFETY: out-argument.
    unsafe { vector(count, blocklength, stride, false, oldtype, recipe, newtype) }
}

/// `MPI_Type_indexed_c` and `MPI_Type_create_hindexed_c` (`unit`: the
/// displacements are in extents of `oldtype`).
///
/// # Safety
/// The arrays are null or valid for `count` entries; `newtype` is an
/// out-argument.
unsafe fn indexed_c(
    count: i64,
    lens: *const i64,
    disps: *const i64,
    unit: bool,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's arrays of `count` entries.
    let (lens, disps) = unsafe {
        (
            counts(lens, n, "block length")?,
            counts(disps, n, "displacement")?,
        )
    };
    let comb = if unit {
        combiner::INDEXED
    } else {
        combiner::HINDEXED
    };
    let recipe = Recipe::large(comb, vec![], [&[count][..], lens, disps].concat(), vec![]);
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_indexed_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_indexed_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    // SAFETY: the caller's arrays and out-argument.
    unsafe {
        indexed_c(
            count,
            array_of_blocklengths,
            array_of_displacements,
            true,
            oldtype,
            newtype,
        )
    }
}

/// `MPI_Type_create_hindexed_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hindexed_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    // SAFETY: the caller's arrays and out-argument.
    unsafe {
        indexed_c(
            count,
            array_of_blocklengths,
            array_of_displacements,
            false,
            oldtype,
            newtype,
        )
    }
}

/// `MPI_Type_create_indexed_block_c` and
/// `MPI_Type_create_hindexed_block_c` (`unit` as for [`indexed_c`]).
///
/// # Safety
/// `disps` is null or valid for `count` entries; `newtype` is an
/// out-argument.
unsafe fn block_c(
    count: i64,
    blocklength: i64,
    disps: *const i64,
    unit: bool,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's array of `count` entries.
    let disps = unsafe { counts(disps, n, "displacement")? };
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
    // SAFETY: out-argument.
    unsafe {
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
}

/// `MPI_Type_create_indexed_block_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_indexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: *const i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    // SAFETY: the caller's array and out-argument.
    unsafe {
        block_c(
            count,
            blocklength,
            array_of_displacements,
            true,
            oldtype,
            newtype,
        )
    }
}

/// `MPI_Type_create_hindexed_block_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_hindexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: *const i64,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    // SAFETY: the caller's array and out-argument.
    unsafe {
        block_c(
            count,
            blocklength,
            array_of_displacements,
            false,
            oldtype,
            newtype,
        )
    }
}

/// `MPI_Type_create_struct_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_struct_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    array_of_types: *const usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(count)?;
    // SAFETY: the caller's arrays of `count` entries.
    let (lens, disps, types) = unsafe {
        (
            counts(array_of_blocklengths, n, "block length")?,
            counts(array_of_displacements, n, "displacement")?,
            counts(array_of_types, n, "datatype")?,
        )
    };
    let recipe = Recipe::large(
        combiner::STRUCT,
        vec![],
        [&[count][..], lens, disps].concat(),
        vec![],
    );
    // SAFETY: out-argument.
    unsafe { structure(types, |j| lens[j], |j| disps[j], recipe, newtype) }
}

/// `MPI_Type_create_subarray_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_subarray_c(
    ndims: c_int,
    array_of_sizes: *const i64,
    array_of_subsizes: *const i64,
    array_of_starts: *const i64,
    order: c_int,
    oldtype: usize,
    newtype: *mut usize,
) -> Res {
    let n = count_arg(ndims)?;
    // SAFETY: the caller's arrays of `ndims` entries.
    let (sizes, subsizes, starts) = unsafe {
        (
            counts(array_of_sizes, n, "size")?,
            counts(array_of_subsizes, n, "subsize")?,
            counts(array_of_starts, n, "start")?,
        )
    };
    let recipe = Recipe::large(
        combiner::SUBARRAY,
        vec![ndims, order],
        [sizes, subsizes, starts].concat(),
        vec![],
    );
    // SAFETY: out-argument.
    unsafe { subarray_of(sizes, subsizes, starts, order, oldtype, recipe, newtype) }
}

/// `MPI_Type_create_darray_c` (only the global sizes are `MPI_Count`).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const i64,
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
            counts(array_of_gsizes, n, "global size")?,
            counts(array_of_distribs, n, "distribution")?,
            counts(array_of_dargs, n, "distribution argument")?,
            counts(array_of_psizes, n, "process grid size")?,
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
    // SAFETY: out-argument.
    unsafe { darray_of(gsizes, &a, oldtype, recipe, newtype) }
}

/// `MPI_Type_create_resized_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_create_resized_c(
    oldtype: usize,
    lb: i64,
    extent: i64,
    newtype: *mut usize,
) -> Res {
    let recipe = Recipe::large(combiner::RESIZED, vec![], vec![lb, extent], vec![]);
    // SAFETY: out-argument.
    unsafe { resize(oldtype, aint(lb)?, aint(extent)?, recipe, newtype) }
}

/// `MPI_Type_get_envelope_c`: the recipe's argument counts, large
/// counts included (a type made by a `_c` constructor has them, one
/// made by an int constructor none).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_envelope_c(
    datatype: usize,
    num_integers: *mut i64,
    num_addresses: *mut i64,
    num_large_counts: *mut i64,
    num_datatypes: *mut i64,
    combiner: *mut c_int,
) -> Res {
    let ([ni, na, nc, nd], comb) = envelope(datatype)?;
    // SAFETY: out-arguments (vectors' lengths fit an i64).
    unsafe {
        put(num_integers, ni as i64)?;
        put(num_addresses, na as i64)?;
        put(num_large_counts, nc as i64)?;
        put(num_datatypes, nd as i64)?;
        put(combiner, comb)
    }
}

/// `MPI_Type_get_contents_c`: the recipe's arguments, large counts
/// included (see `MPI_Type_get_contents` for the datatypes).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn type_get_contents_c(
    datatype: usize,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut isize,
    array_of_large_counts: *mut i64,
    array_of_datatypes: *mut usize,
) -> Res {
    let out = Contents {
        ints: (array_of_integers, max_integers),
        aints: (array_of_addresses, max_addresses),
        counts: (array_of_large_counts, max_large_counts),
        types: (array_of_datatypes, max_datatypes),
    };
    // SAFETY: the caller's arrays of max_* entries.
    unsafe { contents(datatype, &out) }
}

/// Reads an in/out `MPI_Count` position.
///
/// # Safety
/// `p` is null or valid for a read.
unsafe fn read_pos(p: *const i64) -> Res<i64> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null position pointer"));
    }
    // SAFETY: non-null (checked), valid for a read (the caller's promise).
    Ok(unsafe { p.read() })
}

/// `MPI_Pack_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_c(
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position_: *mut i64,
    comm: usize,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, outsize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { pack_wide(inbuf, n, datatype, outbuf, pos, size, comm)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Unpack_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack_c(
    inbuf: *const c_void,
    insize: i64,
    position_: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
    comm: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, insize)?;
    // SAFETY: the caller's buffers.
    let end = unsafe { unpack_wide(inbuf, pos, size, outbuf, n, datatype, comm)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Pack_size_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_size_c(
    incount: i64,
    datatype: usize,
    comm: usize,
    size: *mut i64,
) -> Res {
    let len = pack_size_wide(incount, datatype, comm)?;
    // SAFETY: out-argument (a size is at most isize::MAX).
    unsafe { put(size, len as i64) }
}

/// `MPI_Pack_external_c`: `MPI_Count` where the int form has `int`
/// and `MPI_Aint`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position_: *mut i64,
) -> Res {
    let n = count_arg(incount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, outsize)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { pack_external_wide(datarep, inbuf, n, datatype, outbuf, pos, size)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Unpack_external_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position_: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
) -> Res {
    let n = count_arg(outcount)?;
    // SAFETY: the caller's in/out position.
    let (pos, size) = position(unsafe { read_pos(position_)? }, insize)?;
    // SAFETY: the caller's string and buffers.
    let end = unsafe { unpack_external_wide(datarep, inbuf, pos, size, outbuf, n, datatype)? };
    // SAFETY: checked non-null by `read_pos`.
    unsafe { put(position_, end as i64) }
}

/// `MPI_Pack_external_size_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn pack_external_size_c(
    datarep: *const c_char,
    incount: i64,
    datatype: usize,
    size: *mut i64,
) -> Res {
    // SAFETY: the caller's string.
    let len = unsafe { pack_external_size_wide(datarep, count_arg(incount)?, datatype)? };
    // SAFETY: out-argument (a size is at most isize::MAX).
    unsafe { put(size, len as i64) }
}

/// `MPI_Reduce_local_c`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: i64,
    datatype: usize,
    op: usize,
) -> Res {
    // SAFETY: the program's buffers of `count` elements, for the call.
    unsafe { reduce_local_wide(inbuf, inoutbuf, count, datatype, op) }
}

// ---- Op_create_c: large-count user functions.
//
// ferry's ops call an `MPI_User_function` (`int *len`); an
// `MPI_User_function_c` takes `MPI_Count *len`. Each distinct large-count
// function gets a slot and a trampoline of the int type that calls it
// with its count widened; the trampoline is what `MPI_Op_create` records.
// Slots are per function, not per op (the same function in several ops,
// or one created again after `MPI_Op_free`, reuses its slot), so they are
// never released and a process may use up to `SLOTS` distinct functions.

use crate::abi::callback::{UserFn, UserFnC};

/// The functions of the slots (0: free), written once under `CLAIMED`.
static FUNCS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// The functions with a slot, in slot order.
static CLAIMED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Calls slot `i`'s function with the count widened.
///
/// # Safety
/// As for the program's `MPI_User_function_c`; slot `i` is set.
unsafe fn call_slot(i: usize, a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut usize) {
    // Acquire: pairs with the Release store in `slot_of`, which published
    // the function before its trampoline was handed to `MPI_Op_create`.
    let f = FUNCS[i].load(Ordering::Acquire);
    if f == 0 || len.is_null() {
        return;
    }
    // SAFETY: a non-zero slot holds a `UserFnC` the program passed to
    // `MPI_Op_create_c` (stored as its address by `slot_of`).
    let f: UserFnC = unsafe { std::mem::transmute::<usize, UserFnC>(f) };
    // SAFETY: `len` is ferry's local count (non-null, checked).
    let mut n = i64::from(unsafe { len.read() });
    // SAFETY: the program's function, on the buffers and datatype ferry
    // passes its ops; `n` is a local.
    unsafe { f(a, b, &mut n, dt) };
}

macro_rules! trampolines {
    ($($i:literal)*) => {
        const SLOTS: usize = [$($i),*].len();
        /// The trampoline of each slot.
        static TRAMPOLINES: [UserFn; SLOTS] = [$({
            unsafe extern "C" fn t(a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut usize) {
                // SAFETY: ferry calls it as an `MPI_User_function` of an op
                // made by `MPI_Op_create_c`, whose slot is set.
                unsafe { call_slot($i, a, b, len, dt) }
            }
            t
        }),*];
    };
}
trampolines!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
             32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

/// The slot of function `f`, claimed if new.
fn slot_of(f: UserFnC) -> Result<usize, Fail> {
    let addr = f as usize;
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = claimed.iter().position(|&a| a == addr) {
        return Ok(i);
    }
    let i = claimed.len();
    if i == SLOTS {
        return Err(Fail::msg(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("more than {SLOTS} distinct large-count user functions (MPI_Op_create_c)"),
        ));
    }
    // Release: publishes the function before its trampoline can run; pairs
    // with the Acquire in `call_slot`.
    FUNCS[i].store(addr, Ordering::Release);
    claimed.push(addr);
    Ok(i)
}

/// `MPI_Op_create_c`: an op whose function takes `MPI_Count *len`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn op_create_c(user_fn: Option<UserFnC>, commute: c_int, op: *mut usize) -> Res {
    let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
    let i = slot_of(f)?;
    // SAFETY: the slot's trampoline; the caller's out-argument.
    unsafe { op_create(Some(TRAMPOLINES[i]), commute, op) }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn double_in(a: *mut c_void, b: *mut c_void, len: *mut i64, _: *mut usize) {
        // SAFETY: called below on two i32 arrays of `*len` entries.
        unsafe {
            for i in 0..*len as usize {
                *b.cast::<i32>().add(i) += 2 * *a.cast::<i32>().add(i);
            }
        }
    }

    #[test]
    fn a_function_keeps_its_slot_and_its_trampoline_widens_the_count() {
        let i = slot_of(double_in).unwrap();
        assert_eq!(slot_of(double_in).unwrap(), i);
        let mut a = [1i32, 2, 3];
        let mut b = [10i32, 10, 10];
        let (mut n, mut dt): (c_int, usize) = (3, 0);
        // SAFETY: the slot's trampoline on local arrays of `n` ints.
        unsafe {
            TRAMPOLINES[i](
                a.as_mut_ptr().cast(),
                b.as_mut_ptr().cast(),
                &mut n,
                &mut dt,
            );
        }
        assert_eq!(b, [12, 14, 16]);
    }
}
