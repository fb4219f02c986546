//! Error handlers and error classes.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use super::{get, mpi_fn, put, put_str, raise};
use crate::abi::class::*;
use crate::abi::*;
use crate::errhandler::{CommErrhFn, Errh, UserErrh};
use crate::error::{self, Fail, Res};
use crate::state::{lock, rt, Runtime};
use crate::usererr;

/// The handler an errhandler handle names.
pub(crate) fn errh_of(rt: &Runtime, handle: usize) -> Res<Errh> {
    if let Some(e) = Errh::predefined(handle) {
        return Ok(e);
    }
    lock(&rt.errhandlers)
        .get(handle)
        .cloned()
        .map_err(|b| Fail::handle(MPI_ERR_ARG, b, "error handler"))
}

mpi_fn! {
    /// `MPI_Comm_set_errhandler`.
    MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler [comm] (comm: usize, errhandler: usize) {
        let rt = rt()?;
        let c = rt.comm(comm)?;
        let errh = errh_of(rt, errhandler)?;
        lock(&c.meta).errh = errh;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_errhandler`: a predefined handle, or a new handle to
    /// the same user handler (free it with `MPI_Errhandler_free`).
    MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler [comm] (comm: usize, errhandler: *mut usize) {
        let rt = rt()?;
        let errh = lock(&rt.comm(comm)?.meta).errh.clone();
        let h = match errh.predefined_handle() {
            Some(h) => h,
            None => lock(&rt.errhandlers)
                .insert(errh)
                .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many error handlers"))?,
        };
        // SAFETY: out-argument.
        unsafe { put(errhandler, h) }
    }
}

mpi_fn! {
    /// `MPI_Comm_create_errhandler`.
    MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        function: Option<CommErrhFn>,
        errhandler: *mut usize,
    ) {
        let rt = rt()?;
        let func = function.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null error handler function"))?;
        let h = lock(&rt.errhandlers)
            .insert(Errh::User(Arc::new(UserErrh { func })))
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many error handlers"))?;
        // SAFETY: out-argument.
        unsafe { put(errhandler, h) }
    }
}

mpi_fn! {
    /// `MPI_Errhandler_free`: the handle becomes `MPI_ERRHANDLER_NULL`;
    /// communicators using the handler keep it. A predefined handle (as
    /// `MPI_Comm_get_errhandler` returns) is accepted and not freed:
    /// predefined objects live until finalize.
    MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut usize) {
        let rt = rt()?;
        // SAFETY: in/out argument.
        let h = unsafe { get(errhandler)? };
        if Errh::predefined(h).is_none() {
            lock(&rt.errhandlers)
                .remove(h)
                .map_err(|b| Fail::handle(MPI_ERR_ARG, b, "error handler"))?;
        }
        // SAFETY: as above.
        unsafe { put(errhandler, MPI_ERRHANDLER_NULL) }
    }
}

/// `MPI_Comm_call_errhandler`: raises `errorcode` on `comm` as an error
/// of a call would; returns what the handler makes the call return
/// (`MPI_SUCCESS` when the handler returns, as the standard says).
///
/// # Safety
/// No pointer arguments; `comm` is only decoded.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_call_errhandler(comm: usize, errorcode: c_int) -> c_int {
    let checked = super::guard("MPI_Comm_call_errhandler", || {
        rt()?.comm(comm).map(|_| ()).map_err(|f| f.on(comm))
    });
    if checked != MPI_SUCCESS {
        return checked;
    }
    let fail = Fail::new(errorcode, "raised by MPI_Comm_call_errhandler").on(comm);
    std::panic::catch_unwind(|| raise("MPI_Comm_call_errhandler", fail))
        .map_or(MPI_ERR_INTERN, |_| MPI_SUCCESS)
}

/// `MPI_Comm_call_errhandler` (interposable name).
///
/// # Safety
/// As for the `PMPI_` form.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(comm: usize, errorcode: c_int) -> c_int {
    // SAFETY: the same function under its profiling name.
    unsafe { PMPI_Comm_call_errhandler(comm, errorcode) }
}

mpi_fn! {
    /// `MPI_Error_class`: every standard code is its own class; a code the
    /// program added has the class it was added to. Callable at any time.
    MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        let class = if error::is_valid_code(errorcode) {
            errorcode
        } else {
            usererr::class_of(errorcode)
                .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("{errorcode} is not an error code")))?
        };
        // SAFETY: out-argument.
        unsafe { put(errorclass, class) }
    }
}

mpi_fn! {
    /// `MPI_Error_string`. Callable at any time.
    MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        let s = error::code_string(errorcode)
            .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("{errorcode} is not an error code")))?;
        // SAFETY: `string` has MPI_MAX_ERROR_STRING bytes (the standard's
        // requirement); `resultlen` is an out-argument.
        unsafe { put_str(string, MPI_MAX_ERROR_STRING, &s, resultlen) }
    }
}

mpi_fn! {
    /// `MPI_Add_error_class`: a new error class (above `MPI_ERR_LASTCODE`;
    /// `MPI_LASTUSEDCODE` follows).
    MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) {
        rt()?;
        let class = usererr::add_class()?;
        // SAFETY: out-argument.
        unsafe { put(errorclass, class) }
    }
}

mpi_fn! {
    /// `MPI_Add_error_code`: a new code of `errorclass`.
    MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) {
        rt()?;
        let code = usererr::add_code(errorclass)?;
        // SAFETY: out-argument.
        unsafe { put(errorcode, code) }
    }
}

mpi_fn! {
    /// `MPI_Add_error_string`: the string `MPI_Error_string` gives for a
    /// code or class the program added.
    MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) {
        rt()?;
        // SAFETY: a NUL-terminated string (the caller's promise).
        let s = unsafe { super::cstr(string)? };
        usererr::set_string(errorcode, s)
    }
}

mpi_fn! {
    /// `MPI_Remove_error_class` (MPI 4.1): once none of its codes is left.
    MPI_Remove_error_class / PMPI_Remove_error_class(errorclass: c_int) {
        rt()?;
        usererr::remove_class(errorclass)
    }
}

mpi_fn! {
    /// `MPI_Remove_error_code` (MPI 4.1).
    MPI_Remove_error_code / PMPI_Remove_error_code(errorcode: c_int) {
        rt()?;
        usererr::remove_code(errorcode)
    }
}

mpi_fn! {
    /// `MPI_Remove_error_string` (MPI 4.1).
    MPI_Remove_error_string / PMPI_Remove_error_string(errorcode: c_int) {
        rt()?;
        usererr::remove_string(errorcode)
    }
}
