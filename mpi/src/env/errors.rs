//! Error handlers and error classes.

use std::ffi::c_int;
use std::sync::Arc;

use crate::ffi::args::{Out, TextOut};

use crate::abi::class::*;
use crate::abi::*;
use crate::errhandler::{CommErrhFn, Errh, UserErrh, ERRHANDLERS};
use crate::error::{Fail, Res};
use crate::state::{lock, rt};
use crate::{error, usererr};

/// The handler an errhandler handle names.
pub(crate) fn errh_of(handle: usize) -> Res<Errh> {
    if let Some(e) = Errh::predefined(handle) {
        return Ok(e);
    }
    lock(&ERRHANDLERS)
        .get(handle)
        .cloned()
        .map_err(|b| Fail::handle(MPI_ERR_ARG, b, "error handler"))
}

/// `MPI_Comm_set_errhandler`.
pub(crate) fn comm_set_errhandler(comm: usize, errhandler: usize) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let errh = errh_of(errhandler)?;
    lock(&c.meta).errh = errh;
    Ok(())
}

/// `MPI_Comm_get_errhandler`: a predefined handle, or a new handle to
/// the same user handler (free it with `MPI_Errhandler_free`).
pub(crate) fn comm_get_errhandler(comm: usize, mut errhandler: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let errh = lock(&rt.comm(comm)?.meta).errh.clone();
    errhandler.set(handle_of(errh)?)
}

/// A handle for `errh`: its predefined one, or a new handle to the same
/// user handler (the program frees it with `MPI_Errhandler_free`).
pub(crate) fn handle_of(errh: Errh) -> Res<usize> {
    match errh.predefined_handle() {
        Some(h) => Ok(h),
        None => lock(&ERRHANDLERS)
            .insert(errh)
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many error handlers")),
    }
}

/// `MPI_Comm_create_errhandler`.
pub(crate) fn comm_create_errhandler(
    function: Option<CommErrhFn>,
    mut errhandler: Out<'_, usize>,
) -> Res {
    let func = function.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null error handler function"))?;
    errhandler.set(handle_of(Errh::User(Arc::new(UserErrh { func })))?)
}

/// `MPI_Errhandler_free`: the handle becomes `MPI_ERRHANDLER_NULL`;
/// communicators using the handler keep it. A predefined handle (as
/// `MPI_Comm_get_errhandler` returns) is accepted and not freed:
/// predefined objects live until finalize.
pub(crate) fn errhandler_free(mut errhandler: Out<'_, usize>) -> Res {
    let h = errhandler.get()?;
    if Errh::predefined(h).is_none() {
        lock(&ERRHANDLERS)
            .remove(h)
            .map_err(|b| Fail::handle(MPI_ERR_ARG, b, "error handler"))?;
    }
    errhandler.set(MPI_ERRHANDLER_NULL)
}

/// `MPI_Error_class`: every standard code is its own class; a code the
/// program added has the class it was added to. Callable at any time.
pub(crate) fn error_class(errorcode: c_int, mut errorclass: Out<'_, c_int>) -> Res {
    let class = if error::is_valid_code(errorcode) {
        errorcode
    } else {
        usererr::class_of(errorcode)
            .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("{errorcode} is not an error code")))?
    };
    errorclass.set(class)
}

/// `MPI_Error_string`. Callable at any time.
pub(crate) fn error_string(
    errorcode: c_int,
    mut string: TextOut<'_>,
    mut resultlen: Out<'_, c_int>,
) -> Res {
    let s = error::code_string(errorcode)
        .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("{errorcode} is not an error code")))?;
    string.set(&s, Some(&mut resultlen))
}

/// `MPI_Add_error_class`: a new error class (above `MPI_ERR_LASTCODE`;
/// `MPI_LASTUSEDCODE` follows).
pub(crate) fn add_error_class(mut errorclass: Out<'_, c_int>) -> Res {
    rt()?;
    let class = usererr::add_class()?;
    errorclass.set(class)
}

/// `MPI_Add_error_code`: a new code of `errorclass`.
pub(crate) fn add_error_code(errorclass: c_int, mut errorcode: Out<'_, c_int>) -> Res {
    rt()?;
    let code = usererr::add_code(errorclass)?;
    errorcode.set(code)
}

/// `MPI_Add_error_string`: the string `MPI_Error_string` gives for a
/// code or class the program added.
pub(crate) fn add_error_string(errorcode: c_int, string: &str) -> Res {
    rt()?;
    let s = string;
    usererr::set_string(errorcode, s)
}

/// `MPI_Remove_error_class` (MPI 4.1): once none of its codes is left.
pub(crate) fn remove_error_class(errorclass: c_int) -> Res {
    rt()?;
    usererr::remove_class(errorclass)
}

/// `MPI_Remove_error_code` (MPI 4.1).
pub(crate) fn remove_error_code(errorcode: c_int) -> Res {
    rt()?;
    usererr::remove_code(errorcode)
}

/// `MPI_Remove_error_string` (MPI 4.1).
pub(crate) fn remove_error_string(errorcode: c_int) -> Res {
    rt()?;
    usererr::remove_string(errorcode)
}
