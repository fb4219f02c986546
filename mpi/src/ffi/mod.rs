//! The C boundary: every exported `MPI_*` / `PMPI_*` function, and all of
//! this crate's `unsafe` code.
//!
//! Each function is one row of `mpi/abi/functions.txt`, from which
//! `ferry-mpi-abigen` writes its shim (`exports/`, through [`export!`]) and
//! its prototype in `mpi.h`; the shim calls the function's body, an
//! ordinary Rust function in the module of its chapter. `PMPI_X` runs the
//! body under [`guard`] (`catch_unwind`: no panic crosses into C; one
//! becomes `MPI_ERR_INTERN`), and an error goes through the communicator's
//! error handler. `MPI_X` calls `PMPI_X`, so a tool that interposes on
//! `MPI_X` reaches the library through `PMPI_X`.
//!
//! Handles cross as `usize` (the ABI's handles are pointers to incomplete
//! structs; on every LP64 target a pointer and a `usize` are passed alike).

// The exported functions are `pub` for the linker (`#[no_mangle]`), not
// for Rust callers: nothing outside reaches them through the module path.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_INTERN, MPI_SUCCESS};

use crate::abi::{MpiStatus, MPI_COMM_SELF, MPI_COMM_WORLD};
use crate::errhandler::{abort_job, fatal_message, Errh};
use crate::error::{Fail, Res};
use crate::state::{lock, rt_any};

pub(crate) mod args;
pub(crate) mod callbacks;
mod cell;
mod exports;
pub(crate) mod longdouble;
pub(crate) mod os;
pub(crate) mod segments;

pub(crate) use cell::mark_main_thread;
pub use cell::LevelCell;

/// One exported function: `PMPI_X`, which runs the body, and `MPI_X`,
/// which calls `PMPI_X` (so a tool that interposes on `MPI_X` reaches the
/// library through `PMPI_X`). Only the generated shims use it
/// (`exports/`, from `mpi/abi/functions.txt`; see `ferry-mpi-abigen`).
///
/// `=> call` is the body's call: on the arguments as they came (an
/// `unsafe` body), or, in a `[checked]` section of the table, on what the
/// decoders of [`args`] made of them (a safe body). It returns [`Res`],
/// run by [`guard`] under `catch_unwind` (no panic crosses into C; one
/// becomes `MPI_ERR_INTERN`; a decoder's failure is the call's) and raised
/// through the error handler of communicator `[on]` (`MPI_COMM_SELF`'s
/// without it). With `fast call;`, that call runs first under the same
/// guard ([`guard_fast`]). A `raw` function's body returns the C value
/// itself, unguarded.
macro_rules! export {
    ($(#[$meta:meta])* $name:ident / $pname:ident $([$on:ident])? ($($arg:ident : $ty:ty),* $(,)?) $(fast $fast:expr;)? => $call:expr) => {
        $crate::ffi::export!(@pair $(#[$meta])* $name / $pname ($($arg: $ty),*) -> std::ffi::c_int {
            $crate::ffi::export!(@guarded stringify!($name), [$($on)?] $(fast $fast;)? => $call)
        });
    };
    ($(#[$meta:meta])* $name:ident / $pname:ident raw ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty => $call:expr) => {
        $crate::ffi::export!(@pair $(#[$meta])* $name / $pname ($($arg: $ty),*) -> $ret {
            // SAFETY: the C caller's promises for this function's
            // arguments, passed on unchanged.
            #[allow(unused_unsafe)]
            unsafe { $call }
        });
    };
    (@guarded $fname:expr, [$($on:ident)?] => $call:expr) => {
        $crate::ffi::guard($fname, move || -> $crate::error::Res {
            // SAFETY: the C caller's promises for this function's pointer
            // arguments (the MPI standard's): passed on unchanged to an
            // `unsafe` body, or to the decoders of `ffi::args`, whose
            // contract they are.
            #[allow(unused_unsafe)]
            let r: $crate::error::Res = unsafe { $call };
            $(let r = r.map_err(|f| f.on($on));)?
            r
        })
    };
    (@guarded $fname:expr, [$($on:ident)?] fast $fast:expr; => $call:expr) => {
        $crate::ffi::guard_fast(
            $fname,
            move || -> Option<$crate::error::Res> {
                // SAFETY: as for the body, below.
                #[allow(unused_unsafe)]
                let r: Option<$crate::error::Res> = unsafe { $fast };
                $(let r = r.map(|r| r.map_err(|f| f.on($on)));)?
                r
            },
            move || $crate::ffi::export!(@guarded $fname, [$($on)?] => $call),
        )
    };
    (@pair $(#[$meta:meta])* $name:ident / $pname:ident ($($arg:ident : $ty:ty),*) -> $ret:ty $call:block) => {
        $(#[$meta])*
        ///
        /// # Safety
        /// Every pointer argument must be valid for the accesses the MPI
        /// standard describes for this function, or null where it allows.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret $call

        #[doc = concat!("`", stringify!($name), "`: the interposable name of `", stringify!($pname), "`.")]
        ///
        /// # Safety
        /// As for the `PMPI_` form.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the same function under its profiling name; the
            // caller's promises carry over unchanged.
            unsafe { $pname($($arg),*) }
        }
    };
}
pub(crate) use export;

/// Runs a body: `MPI_SUCCESS`, or the error through its handler. A panic
/// is caught and raised as `MPI_ERR_INTERN`.
#[inline]
pub(crate) fn guard(call: &'static str, body: impl FnOnce() -> Res) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let r = body();
        // Requests the program freed with a post step pending finish here
        // (one relaxed load when there are none).
        crate::request::orphan::poll();
        r
    }));
    match outcome {
        Ok(Ok(())) => MPI_SUCCESS,
        outcome => settle(call, outcome),
    }
}

/// [`guard`] for a function with a fast path: `fast` runs first, under the
/// same guard; `None` (its case does not apply) runs `general`, the
/// function's guarded body, instead. The fast path pays one guard, not
/// two, and none of the general body's set-up.
#[inline(always)]
pub(crate) fn guard_fast(
    call: &'static str,
    fast: impl FnOnce() -> Option<Res>,
    general: impl FnOnce() -> c_int,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let r = fast()?;
        crate::request::orphan::poll();
        Some(r)
    }));
    match outcome {
        Ok(Some(Ok(()))) => MPI_SUCCESS,
        Ok(None) => out_of_line(general),
        Ok(Some(r)) => settle(call, Ok(r)),
        Err(panic) => settle(call, Err(panic)),
    }
}

/// Runs `f` as a call of its own: the general body, inlined, made every
/// call of its function pay its stack frame and saved registers.
#[inline(never)]
fn out_of_line(f: impl FnOnce() -> c_int) -> c_int {
    f()
}

/// The code of a guarded body's failure or panic, raised through the
/// handler in force (out of line: the calls that succeed never come here).
#[cold]
#[inline(never)]
fn settle(call: &'static str, outcome: std::thread::Result<Res>) -> c_int {
    let fail = match outcome {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(f)) => f,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            Fail::msg(
                MPI_ERR_INTERN,
                format!("internal error (please report): {what}"),
            )
        }
    };
    // Raising runs the program's handler; a panic in our part of it must
    // not unwind into C either.
    catch_unwind(AssertUnwindSafe(|| raise(call, fail))).unwrap_or(MPI_ERR_INTERN)
}

/// The handler in force for errors on communicator `comm`: its own, or
/// before `MPI_Init` / for a handle that names no communicator,
/// `MPI_COMM_SELF`'s (the default, `MPI_ERRORS_ARE_FATAL`, before init).
fn handler_of(comm: usize) -> (Errh, Option<i32>) {
    let Some(rt) = rt_any() else {
        return (Errh::Fatal, None);
    };
    let errh = match comm {
        MPI_COMM_WORLD => lock(&rt.world_comm.meta).errh.clone(),
        h => match rt
            .comms
            .with(|t| t.get(h).map(|c| lock(&c.meta).errh.clone()))
        {
            Ok(Ok(e)) => e,
            _ => lock(&rt.self_comm.meta).errh.clone(),
        },
    };
    (errh, Some(rt.rank))
}

/// Raises `fail` on its communicator; the code the call returns.
pub(crate) fn raise(call: &str, fail: Fail) -> c_int {
    let comm = fail.comm();
    let (errh, rank) = handler_of(comm);
    match errh {
        Errh::Return => fail.class,
        Errh::Fatal | Errh::Abort => {
            eprintln!("{}", fatal_message(rank, call, &fail));
            abort_job(fail.class)
        }
        Errh::User(u) => {
            let mut handle = if rt_any().is_some_and(|r| r.comm(comm).is_ok()) {
                comm
            } else {
                MPI_COMM_SELF
            };
            let mut code = fail.class;
            // SAFETY: `func` is the C function the program registered with
            // MPI_Comm_create_errhandler, of the standard's type
            // `void (MPI_Comm *, int *, ...)`; both pointers are to locals
            // that outlive the call.
            unsafe { (u.func)(&mut handle, &mut code) };
            fail.class
        }
    }
}

// ---- Pointer helpers. Each is `unsafe`: the caller vouches that a non-null
// pointer is valid; nulls are reported, never dereferenced.

/// Writes `v` through the out-argument `p`.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
///
/// # Errors
/// `MPI_ERR_ARG` for null.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) -> Res {
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for an output argument",
        ));
    }
    // SAFETY: non-null, and valid for a write (the caller's promise).
    unsafe { p.write(v) };
    Ok(())
}

/// Reads the in-argument `p`.
///
/// # Safety
/// `p` is null or valid for a read of `T`.
///
/// # Errors
/// `MPI_ERR_ARG` for null.
pub(crate) unsafe fn get<T: Copy>(p: *const T) -> Res<T> {
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for an argument",
        ));
    }
    // SAFETY: non-null, and valid for a read (the caller's promise).
    Ok(unsafe { p.read() })
}

/// Writes a status unless `p` is `MPI_STATUS_IGNORE` (null).
///
/// # Safety
/// `p` is null or valid for a write of an `MPI_Status`.
pub(crate) unsafe fn put_status(p: *mut MpiStatus, s: MpiStatus) {
    if !p.is_null() {
        // SAFETY: non-null, and valid for a write (the caller's promise).
        unsafe { p.write(s) };
    }
}

/// A NUL-terminated C string argument.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid and
/// unchanged for `'a`.
///
/// # Errors
/// `MPI_ERR_ARG` for null or a string that is not UTF-8.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Res<&'a str> {
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for a string",
        ));
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Fail::new(MPI_ERR_ARG, "a string argument is not valid UTF-8"))
}

/// Copies `s` (cut to `cap - 1` bytes) and a NUL into `buf`, and its length
/// into `len` if not null.
///
/// # Safety
/// `buf` is null or valid for writes of `cap` bytes; `len` is null or
/// valid for a write of an `int`.
///
/// # Errors
/// `MPI_ERR_ARG` for a null `buf`.
pub(crate) unsafe fn put_str(buf: *mut c_char, cap: usize, s: &str, len: *mut c_int) -> Res {
    if buf.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for a string buffer",
        ));
    }
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `buf` is valid for `cap` bytes and `n < cap`, so `n` bytes
    // and the NUL fit; `s` cannot overlap memory the program gave us.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
    }
    if !len.is_null() {
        // SAFETY: non-null, valid for a write (the caller's promise).
        unsafe { len.write(c_int::try_from(n).unwrap_or(c_int::MAX)) };
    }
    Ok(())
}

/// The bytes of a send buffer.
///
/// # Safety
/// `p` is null or valid for reads of `len` bytes that nobody writes for
/// `'a`.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
pub(crate) unsafe fn bytes<'a>(p: *const u8, len: usize) -> Res<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "a null buffer with a non-zero count",
        ));
    }
    // SAFETY: non-null, valid for `len` bytes, unaliased by writers for
    // 'a (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The bytes of a receive buffer.
///
/// # Safety
/// `p` is null or valid for reads and writes of `len` bytes that nothing
/// else accesses for `'a`.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
pub(crate) unsafe fn bytes_mut<'a>(p: *mut u8, len: usize) -> Res<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "a null buffer with a non-zero count",
        ));
    }
    // SAFETY: non-null, valid for `len` bytes, and not accessed by anything
    // else for 'a (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}
