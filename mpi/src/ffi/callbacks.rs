//! Calls of the program's C callbacks that the standard has the library
//! make: attribute copy and delete functions, and a generalized request's
//! query, free and cancel functions, and user reduction functions
//! (`MPI_Op_create`'s; the large-count ones through the trampolines of
//! `large_user_fn`). (Error handlers are called by `ffi::raise`.)
//!
//! # Contract
//! Each function pointer here came through the boundary as the program's
//! function of the standard's type (decoded by `ffi::args`), and is called
//! with the arguments the standard gives it: handles, the program's own
//! values and extra state back, and pointers to locals that outlive the
//! call. No lock of ours is held while it runs (the callers' rule: a
//! callback may call MPI).

use std::ffi::{c_int, c_void};

use crate::abi::callback::{
    CommCopyAttrFn, CommDeleteAttrFn, GrequestCancelFn, GrequestFreeFn, GrequestQueryFn, UserFn,
};
use crate::abi::MpiStatus;

/// Runs a generalized request's query function: its return code and the
/// status it filled (the empty one to start from).
pub(crate) fn grequest_query(f: GrequestQueryFn, extra: usize) -> (c_int, MpiStatus) {
    let mut status = MpiStatus::EMPTY;
    // SAFETY: the program's `MPI_Grequest_query_function` (the module's
    // contract), with its extra_state and a local status it may fill.
    let rc = unsafe { f(extra as *mut c_void, &mut status) };
    (rc, status)
}

/// Runs a generalized request's free function (once: the caller's rule).
pub(crate) fn grequest_free(f: GrequestFreeFn, extra: usize) -> c_int {
    // SAFETY: the program's `MPI_Grequest_free_function` (the module's
    // contract), with its extra_state.
    unsafe { f(extra as *mut c_void) }
}

/// Runs a generalized request's cancel function.
pub(crate) fn grequest_cancel(f: GrequestCancelFn, extra: usize, complete: bool) -> c_int {
    // SAFETY: the program's `MPI_Grequest_cancel_function` (the module's
    // contract), with its extra_state and whether the request is complete.
    unsafe { f(extra as *mut c_void, c_int::from(complete)) }
}

/// Runs an attribute delete callback: its return code.
pub(crate) fn attr_delete(
    f: CommDeleteAttrFn,
    comm: usize,
    keyval: c_int,
    value: usize,
    extra: usize,
) -> c_int {
    // SAFETY: the program's `MPI_Comm_delete_attr_function` (the module's
    // contract), with the standard's arguments: the values it stored.
    unsafe { f(comm, keyval, value as *mut c_void, extra as *mut c_void) }
}

/// Runs an attribute copy callback: its return code, the new value and
/// whether the duplicate gets it.
pub(crate) fn attr_copy(
    f: CommCopyAttrFn,
    comm: usize,
    keyval: c_int,
    extra: usize,
    value: usize,
) -> (c_int, usize, bool) {
    let mut new_value: usize = 0;
    let mut flag: c_int = 0;
    // SAFETY: the program's `MPI_Comm_copy_attr_function` (the module's
    // contract); `attribute_val_out` is a `void **` to a local, `flag` a
    // local, both live for the call.
    let rc = unsafe {
        f(
            comm,
            keyval,
            extra as *mut c_void,
            value as *mut c_void,
            (&mut new_value as *mut usize).cast(),
            &mut flag,
        )
    };
    (rc, new_value, flag != 0)
}

/// Runs a user reduction function: `inout = input (op) inout` on `len`
/// elements of datatype `dt` whose displacement 0 lies `base` bytes before
/// each slice's start (the function computes its own addresses).
///
/// # Panics
/// If the elements' data (`len` elements of `unit` bytes from `base`
/// on) does not fit either slice: the caller sized them, so this is a bug,
/// caught before the call.
pub(crate) fn user_fn(
    f: UserFn,
    input: &[u8],
    inout: &mut [u8],
    base: isize,
    unit: usize,
    len: c_int,
    dt: usize,
) {
    let need = unit * usize::try_from(len).unwrap_or(0);
    assert!(
        need <= input.len() && need <= inout.len(),
        "a reduction's data overruns its buffers"
    );
    let (mut len, mut dt) = (len, dt);
    let inp = input
        .as_ptr()
        .wrapping_offset(-base)
        .cast_mut()
        .cast::<c_void>();
    let io = inout.as_mut_ptr().wrapping_offset(-base).cast::<c_void>();
    // SAFETY: the program's `MPI_User_function` (the module's contract);
    // the standard lets it read `len` elements of `dt` at `inp` and write
    // them at `io`, whose data lie within `input` and `inout` (displaced
    // by `base`, the datatype's own first displacement; checked above);
    // `len` and `dt` are locals.
    unsafe { f(inp, io, &mut len, &mut dt) };
}
