//! The large-count datatype functions (constructors, size and extent
//! queries, decoding), `Pack_c`/`Unpack_c`/`Pack_size_c` and their
//! external32 forms, `Op_create_c`
//! and `Reduce_local_c`. Errors not tied to a communicator are raised on
//! `MPI_COMM_SELF`, as their int forms raise theirs.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{aint, array, int, large_fn, len, position, ptr};
use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_UNSUPPORTED_OPERATION, MPI_SUCCESS};
use crate::abi::MPI_COMM_SELF;
use crate::error::{Fail, Res};
use crate::ffi::coll::reduction::{PMPI_Op_create, PMPI_Reduce_local};
use crate::ffi::pack::{
    PMPI_Pack, PMPI_Pack_external, PMPI_Pack_external_size, PMPI_Pack_size, PMPI_Unpack,
    PMPI_Unpack_external,
};
use crate::ffi::put;
use crate::ffi::typearray::{PMPI_Type_create_darray, PMPI_Type_create_subarray};
use crate::ffi::typedecode::{PMPI_Type_get_contents, PMPI_Type_get_envelope};
use crate::ffi::types::{
    PMPI_Type_contiguous, PMPI_Type_create_hindexed, PMPI_Type_create_hindexed_block,
    PMPI_Type_create_hvector, PMPI_Type_create_indexed_block, PMPI_Type_create_resized,
    PMPI_Type_create_struct, PMPI_Type_get_extent_x, PMPI_Type_get_true_extent_x,
    PMPI_Type_indexed, PMPI_Type_size_x, PMPI_Type_vector,
};

const SELF: usize = MPI_COMM_SELF;

large_fn! {
    /// `MPI_Type_contiguous_c`.
    MPI_Type_contiguous_c / PMPI_Type_contiguous_c [SELF] (count: i64, oldtype: usize, newtype: *mut usize) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Type_contiguous(n, oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_vector_c`.
    MPI_Type_vector_c / PMPI_Type_vector_c [SELF] (count: i64, blocklength: i64, stride: i64, oldtype: usize, newtype: *mut usize) {
        let (n, b, s) = (int(count)?, int(blocklength)?, int(stride)?);
        // SAFETY: unchanged arguments but the counts; the caller's promises.
        Ok(unsafe { PMPI_Type_vector(n, b, s, oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_hvector_c`.
    MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c [SELF] (count: i64, blocklength: i64, stride: i64, oldtype: usize, newtype: *mut usize) {
        let (n, b, s) = (int(count)?, int(blocklength)?, aint(stride)?);
        // SAFETY: unchanged arguments but the counts; the caller's promises.
        Ok(unsafe { PMPI_Type_create_hvector(n, b, s, oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_indexed_c`.
    MPI_Type_indexed_c / PMPI_Type_indexed_c [SELF] (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, oldtype: usize, newtype: *mut usize) {
        let n = int(count)?;
        // SAFETY: arrays of `count` entries (the caller's promise).
        let (b, d) = unsafe { (array(array_of_blocklengths, len(n), int)?, array(array_of_displacements, len(n), int)?) };
        // SAFETY: converted copies of the arrays, alive for the call.
        Ok(unsafe { PMPI_Type_indexed(n, ptr(&b), ptr(&d), oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_hindexed_c`.
    MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c [SELF] (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, oldtype: usize, newtype: *mut usize) {
        let n = int(count)?;
        // SAFETY: arrays of `count` entries (the caller's promise).
        let (b, d) = unsafe { (array(array_of_blocklengths, len(n), int)?, array(array_of_displacements, len(n), aint)?) };
        // SAFETY: converted copies of the arrays, alive for the call.
        Ok(unsafe { PMPI_Type_create_hindexed(n, ptr(&b), ptr(&d), oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_indexed_block_c`.
    MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c [SELF] (count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: usize, newtype: *mut usize) {
        let (n, b) = (int(count)?, int(blocklength)?);
        // SAFETY: an array of `count` entries (the caller's promise).
        let d = unsafe { array(array_of_displacements, len(n), int)? };
        // SAFETY: a converted copy of the array, alive for the call.
        Ok(unsafe { PMPI_Type_create_indexed_block(n, b, ptr(&d), oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_hindexed_block_c`.
    MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c [SELF] (count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: usize, newtype: *mut usize) {
        let (n, b) = (int(count)?, int(blocklength)?);
        // SAFETY: an array of `count` entries (the caller's promise).
        let d = unsafe { array(array_of_displacements, len(n), aint)? };
        // SAFETY: a converted copy of the array, alive for the call.
        Ok(unsafe { PMPI_Type_create_hindexed_block(n, b, ptr(&d), oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_struct_c`.
    MPI_Type_create_struct_c / PMPI_Type_create_struct_c [SELF] (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, array_of_types: *const usize, newtype: *mut usize) {
        let n = int(count)?;
        // SAFETY: arrays of `count` entries (the caller's promise).
        let (b, d) = unsafe { (array(array_of_blocklengths, len(n), int)?, array(array_of_displacements, len(n), aint)?) };
        // SAFETY: converted copies of the arrays, alive for the call; the
        // types pass unchanged.
        Ok(unsafe { PMPI_Type_create_struct(n, ptr(&b), ptr(&d), array_of_types, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_subarray_c`.
    MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c [SELF] (
        ndims: c_int, array_of_sizes: *const i64, array_of_subsizes: *const i64,
        array_of_starts: *const i64, order: c_int, oldtype: usize, newtype: *mut usize,
    ) {
        let k = len(ndims);
        // SAFETY: arrays of `ndims` entries (the caller's promise).
        let (s, u, t) = unsafe { (array(array_of_sizes, k, int)?, array(array_of_subsizes, k, int)?, array(array_of_starts, k, int)?) };
        // SAFETY: converted copies of the arrays, alive for the call.
        Ok(unsafe { PMPI_Type_create_subarray(ndims, ptr(&s), ptr(&u), ptr(&t), order, oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_darray_c` (only the global sizes are `MPI_Count`).
    MPI_Type_create_darray_c / PMPI_Type_create_darray_c [SELF] (
        size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const i64,
        array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int,
        order: c_int, oldtype: usize, newtype: *mut usize,
    ) {
        // SAFETY: an array of `ndims` entries (the caller's promise).
        let g = unsafe { array(array_of_gsizes, len(ndims), int)? };
        // SAFETY: a converted copy, alive for the call; the rest unchanged.
        Ok(unsafe { PMPI_Type_create_darray(size, rank, ndims, ptr(&g), array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_create_resized_c`.
    MPI_Type_create_resized_c / PMPI_Type_create_resized_c [SELF] (oldtype: usize, lb: i64, extent: i64, newtype: *mut usize) {
        let (l, e) = (aint(lb)?, aint(extent)?);
        // SAFETY: unchanged arguments but the bounds; the caller's promises.
        Ok(unsafe { PMPI_Type_create_resized(oldtype, l, e, newtype) })
    }
}

large_fn! {
    /// `MPI_Type_size_c`: `MPI_Type_size_x`.
    MPI_Type_size_c / PMPI_Type_size_c [SELF] (datatype: usize, size: *mut i64) {
        // SAFETY: the same arguments and types; the caller's promises.
        Ok(unsafe { PMPI_Type_size_x(datatype, size) })
    }
}

large_fn! {
    /// `MPI_Type_get_extent_c`: `MPI_Type_get_extent_x`.
    MPI_Type_get_extent_c / PMPI_Type_get_extent_c [SELF] (datatype: usize, lb: *mut i64, extent: *mut i64) {
        // SAFETY: the same arguments and types; the caller's promises.
        Ok(unsafe { PMPI_Type_get_extent_x(datatype, lb, extent) })
    }
}

large_fn! {
    /// `MPI_Type_get_true_extent_c`: `MPI_Type_get_true_extent_x`.
    MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c [SELF] (datatype: usize, true_lb: *mut i64, true_extent: *mut i64) {
        // SAFETY: the same arguments and types; the caller's promises.
        Ok(unsafe { PMPI_Type_get_true_extent_x(datatype, true_lb, true_extent) })
    }
}

large_fn! {
    /// `MPI_Type_get_envelope_c`: every recipe ferry records is the int
    /// constructor's (a `_c` constructor builds through it), so
    /// `num_large_counts` is 0 and the rest is `MPI_Type_get_envelope`'s.
    MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c [SELF] (
        datatype: usize, num_integers: *mut i64, num_addresses: *mut i64,
        num_large_counts: *mut i64, num_datatypes: *mut i64, combiner: *mut c_int,
    ) {
        let (mut ni, mut na, mut nd) = (0, 0, 0);
        // SAFETY: the caller's `combiner`; the counts are locals.
        let code = unsafe { PMPI_Type_get_envelope(datatype, &mut ni, &mut na, &mut nd, combiner) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-arguments.
            unsafe {
                put(num_integers, i64::from(ni))?;
                put(num_addresses, i64::from(na))?;
                put(num_large_counts, 0)?;
                put(num_datatypes, i64::from(nd))?;
            }
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Type_get_contents_c`: `MPI_Type_get_contents` (no recipe has
    /// large counts, see `MPI_Type_get_envelope_c`; the array is untouched).
    MPI_Type_get_contents_c / PMPI_Type_get_contents_c [SELF] (
        datatype: usize, max_integers: i64, max_addresses: i64, max_large_counts: i64,
        max_datatypes: i64, array_of_integers: *mut c_int, array_of_addresses: *mut isize,
        array_of_large_counts: *mut i64, array_of_datatypes: *mut usize,
    ) {
        let _ = (max_large_counts, array_of_large_counts);
        // An array longer than INT_MAX entries is no shorter than any
        // recipe: the int form only checks that the recipe fits.
        let cap = |n: i64| c_int::try_from(n).unwrap_or(if n < 0 { -1 } else { c_int::MAX });
        // SAFETY: the caller's arrays of the given sizes, at least as long
        // as the clamped ones.
        Ok(unsafe { PMPI_Type_get_contents(datatype, cap(max_integers), cap(max_addresses), cap(max_datatypes), array_of_integers, array_of_addresses, array_of_datatypes) })
    }
}

/// A buffer size clamped to `INT_MAX`: the int forms of pack and unpack
/// only check that the data fit it, and no packed data above `INT_MAX`
/// bytes exist in ferry, so a larger buffer is as good as `INT_MAX` bytes.
fn size(n: i64) -> c_int {
    c_int::try_from(n).unwrap_or(if n < 0 { -1 } else { c_int::MAX })
}

large_fn! {
    /// `MPI_Pack_c`.
    MPI_Pack_c / PMPI_Pack_c [comm] (inbuf: *const c_void, incount: i64, datatype: usize, outbuf: *mut c_void, outsize: i64, position_: *mut i64, comm: usize) {
        let n = int(incount)?;
        // SAFETY: the caller's in/out position.
        let mut pos = unsafe { position(position_)? };
        // SAFETY: unchanged buffers; `pos` is a local.
        let code = unsafe { PMPI_Pack(inbuf, n, datatype, outbuf, size(outsize), &mut pos, comm) };
        if code == MPI_SUCCESS {
            // SAFETY: checked non-null by `position`.
            unsafe { put(position_, i64::from(pos))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Unpack_c`.
    MPI_Unpack_c / PMPI_Unpack_c [comm] (inbuf: *const c_void, insize: i64, position_: *mut i64, outbuf: *mut c_void, outcount: i64, datatype: usize, comm: usize) {
        let n = int(outcount)?;
        // SAFETY: the caller's in/out position.
        let mut pos = unsafe { position(position_)? };
        // SAFETY: unchanged buffers; `pos` is a local.
        let code = unsafe { PMPI_Unpack(inbuf, size(insize), &mut pos, outbuf, n, datatype, comm) };
        if code == MPI_SUCCESS {
            // SAFETY: checked non-null by `position`.
            unsafe { put(position_, i64::from(pos))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Pack_size_c`.
    MPI_Pack_size_c / PMPI_Pack_size_c [comm] (incount: i64, datatype: usize, comm: usize, size: *mut i64) {
        let n = int(incount)?;
        let mut s: c_int = 0;
        // SAFETY: `s` is a local; the rest unchanged.
        let code = unsafe { PMPI_Pack_size(n, datatype, comm, &mut s) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-argument.
            unsafe { put(size, i64::from(s))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Pack_external_c`: `MPI_Count` where the int form has `int`
    /// and `MPI_Aint` (a position past what an `MPI_Aint` holds cannot
    /// name a place in memory).
    MPI_Pack_external_c / PMPI_Pack_external_c [SELF] (datarep: *const c_char, inbuf: *const c_void, incount: i64, datatype: usize, outbuf: *mut c_void, outsize: i64, position_: *mut i64) {
        let n = int(incount)?;
        let mut pos = aint_position(position_)?;
        // SAFETY: unchanged buffers and string; `pos` is a local.
        let code = unsafe { PMPI_Pack_external(datarep, inbuf, n, datatype, outbuf, aint(outsize)?, &mut pos) };
        if code == MPI_SUCCESS {
            // SAFETY: checked non-null by `aint_position`.
            unsafe { put(position_, pos as i64)? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Unpack_external_c`.
    MPI_Unpack_external_c / PMPI_Unpack_external_c [SELF] (datarep: *const c_char, inbuf: *const c_void, insize: i64, position_: *mut i64, outbuf: *mut c_void, outcount: i64, datatype: usize) {
        let n = int(outcount)?;
        let mut pos = aint_position(position_)?;
        // SAFETY: unchanged buffers and string; `pos` is a local.
        let code = unsafe { PMPI_Unpack_external(datarep, inbuf, aint(insize)?, &mut pos, outbuf, n, datatype) };
        if code == MPI_SUCCESS {
            // SAFETY: checked non-null by `aint_position`.
            unsafe { put(position_, pos as i64)? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Pack_external_size_c`.
    MPI_Pack_external_size_c / PMPI_Pack_external_size_c [SELF] (datarep: *const c_char, incount: i64, datatype: usize, size: *mut i64) {
        let n = int(incount)?;
        let mut s: isize = 0;
        // SAFETY: `s` is a local; the string unchanged.
        let code = unsafe { PMPI_Pack_external_size(datarep, n, datatype, &mut s) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-argument.
            unsafe { put(size, s as i64)? };
        }
        Ok(code)
    }
}

/// An external32 position: an `MPI_Count` the caller holds, as the
/// `MPI_Aint` the int form takes.
fn aint_position(p: *const i64) -> Res<isize> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null position pointer"));
    }
    // SAFETY: non-null (checked), valid for a read (the caller's promise).
    aint(unsafe { p.read() })
}

large_fn! {
    /// `MPI_Reduce_local_c`.
    MPI_Reduce_local_c / PMPI_Reduce_local_c [SELF] (inbuf: *const c_void, inoutbuf: *mut c_void, count: i64, datatype: usize, op: usize) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Reduce_local(inbuf, inoutbuf, n, datatype, op) })
    }
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

/// `MPI_User_function_c`.
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut usize);
/// `MPI_User_function`.
type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut usize);

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

large_fn! {
    /// `MPI_Op_create_c`: an op whose function takes `MPI_Count *len`.
    MPI_Op_create_c / PMPI_Op_create_c [SELF] (user_fn: Option<UserFnC>, commute: c_int, op: *mut usize) {
        let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
        let i = slot_of(f)?;
        // SAFETY: the slot's trampoline; the caller's out-argument.
        Ok(unsafe { PMPI_Op_create(Some(TRAMPOLINES[i]), commute, op) })
    }
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
