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

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::class::{MPI_ERR_INTERN, MPI_SUCCESS};

use crate::abi::{MPI_COMM_SELF, MPI_COMM_WORLD};
use crate::errhandler::{abort_job, fatal_message, Errh};
use crate::error::{Fail, Res};
use crate::state::{lock, rt_any};

pub(crate) mod args;
pub(crate) mod callbacks;
pub(crate) mod cell;
mod exports;
pub(crate) mod large_user_fn;
pub(crate) mod longdouble;
mod lookup;
pub(crate) mod os;
pub(crate) mod raw;

/// One exported function: `PMPI_X`, which runs the body, and `MPI_X`,
/// which calls `PMPI_X` (so a tool that interposes on `MPI_X` reaches the
/// library through `PMPI_X`). Only the generated shims use it
/// (`exports/`, from `mpi/abi/functions.txt`; see `ferry-mpi-abigen`).
///
/// `=> call` is the body's call, on what the decoders of [`args`] made of
/// the C arguments (every body is safe Rust). It returns [`Res`],
/// run by [`guard`] under `catch_unwind` (no panic crosses into C; one
/// becomes `MPI_ERR_INTERN`; a decoder's failure is the call's) and raised
/// through the error handler of communicator `[on]` (`MPI_COMM_SELF`'s
/// without it). With `fast call;`, that call runs first under the same
/// guard ([`guard_fast`]). A `quiet` function's failure is returned as
/// its class with no handler run ([`guard_quiet`]: the tools interface).
/// A `raw` function's body returns the C value itself, unguarded.
macro_rules! export {
    ($(#[$meta:meta])* $name:ident / $pname:ident $([$on:ident])? ($($arg:ident : $ty:ty),* $(,)?) $(fast $fast:expr;)? => $call:expr) => {
        $crate::ffi::export!(@pair $(#[$meta])* $name / $pname ($($arg: $ty),*) -> std::ffi::c_int {
            $crate::ffi::export!(@guarded stringify!($name), [$($on)?] $(fast $fast;)? => $call)
        });
    };
    ($(#[$meta:meta])* $name:ident / $pname:ident quiet ($($arg:ident : $ty:ty),* $(,)?) => $call:expr) => {
        $crate::ffi::export!(@pair $(#[$meta])* $name / $pname ($($arg: $ty),*) -> std::ffi::c_int {
            $crate::ffi::guard_quiet(move || -> $crate::error::Res {
                // SAFETY: as for a guarded body.
                #[allow(unused_unsafe)]
                unsafe { $call }
            })
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
            // arguments (the MPI standard's), passed to the decoders of
            // `ffi::args`, whose contract they are.
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

/// Runs a body of the tools interface: `MPI_SUCCESS` or the failure's
/// class, returned with no error handler run (MPI 4.1 §15.3.1); a class
/// that is not the tools interface's (a decoder's refusal of a bad
/// pointer) is `MPI_T_ERR_INVALID`, a panic `MPI_ERR_INTERN`.
pub(crate) fn guard_quiet(body: impl FnOnce() -> Res) -> c_int {
    use crate::abi::class::{MPI_T_ERR_CANNOT_INIT, MPI_T_ERR_INVALID};
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(f)) if f.class >= MPI_T_ERR_CANNOT_INIT => f.class,
        Ok(Err(_)) => MPI_T_ERR_INVALID,
        Err(_) => crate::abi::class::MPI_ERR_INTERN,
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
    if let Some(errh) = session_errh(comm).or_else(|| window_errh(comm)) {
        return (errh, rt_any().map(|r| r.rank));
    }
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

/// The handler of session `h`, if `h` is a session's handle (its errors
/// go to its handler, MPI 4.1 §9.3).
fn session_errh(h: usize) -> Option<Errh> {
    let session = crate::handle::is_user(h) && h & 0xff == crate::handle::Kind::Session as usize;
    session
        .then(|| crate::session::errh_of_session(h))
        .flatten()
}

/// The handler of window `h`, if `h` is a window's handle (its errors go
/// to its handler, MPI 4.1 §9.3).
fn window_errh(h: usize) -> Option<Errh> {
    let window = crate::handle::is_user(h) && h & 0xff == crate::handle::Kind::Win as usize;
    window.then(|| crate::rma::errh_of_window(h)).flatten()
}

/// `MPI_Win_call_errhandler`: as [`comm_call_errhandler`], on a window.
pub(crate) fn win_call_errhandler(win: usize, errorcode: c_int) -> c_int {
    let checked = guard("MPI_Win_call_errhandler", || {
        crate::rma::win_of(win).map(drop)
    });
    if checked != MPI_SUCCESS {
        return checked;
    }
    let fail = Fail::new(errorcode, "raised by MPI_Win_call_errhandler").on(win);
    std::panic::catch_unwind(|| raise("MPI_Win_call_errhandler", fail))
        .map_or(MPI_ERR_INTERN, |_| MPI_SUCCESS)
}

/// `MPI_Session_call_errhandler`: as [`comm_call_errhandler`], on a
/// session.
pub(crate) fn session_call_errhandler(session: usize, errorcode: c_int) -> c_int {
    let checked = guard("MPI_Session_call_errhandler", || {
        crate::session::check(session)
    });
    if checked != MPI_SUCCESS {
        return checked;
    }
    let fail = Fail::new(errorcode, "raised by MPI_Session_call_errhandler").on(session);
    std::panic::catch_unwind(|| raise("MPI_Session_call_errhandler", fail))
        .map_or(MPI_ERR_INTERN, |_| MPI_SUCCESS)
}

/// `MPI_Comm_call_errhandler`: raises `errorcode` on `comm` as an error
/// of a call would; returns what the handler makes the call return
/// (`MPI_SUCCESS` when the handler returns, as the standard says).
pub(crate) fn comm_call_errhandler(comm: usize, errorcode: c_int) -> c_int {
    let checked = guard("MPI_Comm_call_errhandler", || {
        crate::state::rt()?
            .comm(comm)
            .map(|_| ())
            .map_err(|f| f.on(comm))
    });
    if checked != MPI_SUCCESS {
        return checked;
    }
    let fail = Fail::new(errorcode, "raised by MPI_Comm_call_errhandler").on(comm);
    std::panic::catch_unwind(|| raise("MPI_Comm_call_errhandler", fail))
        .map_or(MPI_ERR_INTERN, |_| MPI_SUCCESS)
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
            let named = session_errh(comm).is_some()
                || window_errh(comm).is_some()
                || rt_any().is_some_and(|r| r.comm(comm).is_ok());
            let mut handle = if named { comm } else { MPI_COMM_SELF };
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
