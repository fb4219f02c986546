//! Large-count user reduction functions (`MPI_Op_create_c`) as ferry's
//! int-count ones.
//!
//! ferry's ops call an `MPI_User_function` (`int *len`); an
//! `MPI_User_function_c` takes `MPI_Count *len`. Each distinct large-count
//! function gets a slot and a trampoline of the int type that calls it
//! with its count widened; the trampoline is what `MPI_Op_create` records.
//! Slots are per function, not per op (the same function in several ops,
//! or one created again after `MPI_Op_free`, reuses its slot), so they are
//! never released and a process may use up to `SLOTS` distinct functions.
//!
//! # Contract
//! A slot's function is the program's `MPI_User_function_c` (stored as
//! its address), called as the standard describes it on the buffers
//! ferry's reduction passes (the contract of `callbacks`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::abi::class::MPI_ERR_UNSUPPORTED_OPERATION;
use crate::error::{Fail, Res};

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
pub(crate) fn slot_of(f: UserFnC) -> Result<usize, Fail> {
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

/// The int-count function that calls `f` with its count widened (what
/// `MPI_Op_create` records for `MPI_Op_create_c`'s `f`).
///
/// # Errors
/// `MPI_ERR_UNSUPPORTED_OPERATION` past the slots.
pub(crate) fn trampoline_of(f: UserFnC) -> Res<UserFn> {
    Ok(TRAMPOLINES[slot_of(f)?])
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
