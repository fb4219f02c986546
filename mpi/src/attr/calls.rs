//! Communicator attributes: `MPI_Comm_create_keyval`,
//! `MPI_Comm_free_keyval`, `MPI_Comm_set_attr`, `MPI_Comm_get_attr`,
//! `MPI_Comm_delete_attr`, and the copy / delete callbacks that
//! `MPI_Comm_dup`, `MPI_Comm_idup`, `MPI_Comm_free` and `MPI_Finalize` (for
//! `MPI_COMM_SELF`) run.
//!
//! Callbacks are program code that may call MPI (even on the same
//! communicator), so they run with no table and no communicator lock held:
//! the attributes are read out first, the callbacks run, and the result is
//! stored after. A callback that returns an error fails the call with its
//! code, as the standard says.

use std::ffi::{c_int, c_void};

use crate::ffi::{get, put};

use crate::abi::class::*;
use crate::abi::*;
use crate::attr::{index, keyval_of, Keyval, DUP_FN, FIRST, NULL_FN};
use crate::error::{Fail, Res};
use crate::state::{lock, rt, CommObj, Runtime};

/// `MPI_Comm_copy_attr_function`.
type CopyFn =
    unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

/// The keyval `k`'s callbacks.
fn key(rt: &Runtime, k: c_int) -> Res<Keyval> {
    rt.keyvals.with(|t| index(k, t).map(|i| t[i]))?
}

/// A callback's failure: its code is the call's error.
fn callback_failed(code: c_int, what: &'static str) -> Fail {
    let class = if crate::error::is_valid_code(code) || crate::usererr::class_of(code).is_some() {
        code
    } else {
        MPI_ERR_OTHER
    };
    Fail::new(class, what)
}

/// Runs keyval `k`'s delete callback on `value` (of communicator `comm`).
fn run_delete(rt: &Runtime, comm: usize, k: c_int, value: usize) -> Res {
    let kv = key(rt, k)?;
    if kv.delete == NULL_FN {
        return Ok(());
    }
    // SAFETY: `delete` is the non-null, non-predefined address the program
    // passed as an `MPI_Comm_delete_attr_function *`; the ABI passes
    // handles and pointers as we do here.
    let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
    // SAFETY: calling the program's callback with the arguments the
    // standard gives it; no lock of ours is held.
    let rc = unsafe { f(comm, k, value as *mut c_void, kv.extra as *mut c_void) };
    if rc != MPI_SUCCESS {
        return Err(callback_failed(rc, "an attribute delete callback failed"));
    }
    Ok(())
}

/// The attributes a duplicate of `old` (handle `comm`) gets: each key's
/// copy callback decides.
pub(crate) fn copy_all(rt: &Runtime, comm: usize, old: &CommObj) -> Res<Vec<(c_int, usize)>> {
    let attrs = lock(&old.meta).attrs.clone();
    let mut out = Vec::new();
    for (k, value) in attrs {
        let kv = key(rt, k)?;
        match kv.copy {
            NULL_FN => {}
            DUP_FN => out.push((k, value)),
            addr => {
                // SAFETY: as in `run_delete`, for an
                // `MPI_Comm_copy_attr_function *`.
                let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(addr) };
                let mut new_value: usize = 0;
                let mut flag: c_int = 0;
                // SAFETY: the program's callback with the standard's
                // arguments; `attribute_val_out` is a `void **` to a local.
                let rc = unsafe {
                    f(
                        comm,
                        k,
                        kv.extra as *mut c_void,
                        value as *mut c_void,
                        (&mut new_value as *mut usize).cast(),
                        &mut flag,
                    )
                };
                if rc != MPI_SUCCESS {
                    return Err(callback_failed(rc, "an attribute copy callback failed"));
                }
                if flag != 0 {
                    out.push((k, new_value));
                }
            }
        }
    }
    Ok(out)
}

/// Deletes every attribute of `obj` (handle `comm`), last set first,
/// running the delete callbacks. On a callback's failure the attributes
/// not yet deleted stay.
pub(crate) fn delete_all(rt: &Runtime, comm: usize, obj: &CommObj) -> Res {
    loop {
        let last = lock(&obj.meta).attrs.last().copied();
        let Some((k, value)) = last else {
            return Ok(());
        };
        run_delete(rt, comm, k, value)?;
        lock(&obj.meta).attrs.retain(|&(kk, _)| kk != k);
    }
}

/// `MPI_Comm_create_keyval`: `MPI_COMM_NULL_COPY_FN`,
/// `MPI_COMM_DUP_FN` and `MPI_COMM_NULL_DELETE_FN` are accepted.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_create_keyval(
    copy_fn: usize,
    delete_fn: usize,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Res {
    let rt = rt()?;
    if comm_keyval.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null keyval pointer"));
    }
    let kv = Keyval {
        copy: copy_fn,
        delete: delete_fn,
        extra: extra_state as usize,
        freed: false,
    };
    let k = rt.keyvals.with(|t| {
        t.push(kv);
        keyval_of(t.len() - 1)
    })??;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(comm_keyval, k) }
}

/// `MPI_Comm_free_keyval`: the key becomes `MPI_KEYVAL_INVALID`;
/// attributes already set keep it until deleted.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_free_keyval(comm_keyval: *mut c_int) -> Res {
    let rt = rt()?;
    // SAFETY: in/out argument.
    let k = unsafe { get(comm_keyval.cast_const())? };
    if k < FIRST {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("{k} is a predefined or invalid key and cannot be freed"),
        ));
    }
    rt.keyvals.with(|t| {
        let i = index(k, t)?;
        if t[i].freed {
            return Err(Fail::msg(
                MPI_ERR_KEYVAL,
                format!("attribute key {k} was already freed"),
            ));
        }
        t[i].freed = true;
        Ok(())
    })??;
    // SAFETY: as above.
    unsafe { put(comm_keyval, MPI_KEYVAL_INVALID) }
}

/// `MPI_Comm_set_attr`: replacing a value runs the delete callback on
/// the old one first.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_set_attr(
    comm: usize,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(comm)?;
    if comm_keyval < FIRST {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("{comm_keyval} is a predefined or invalid key: it cannot be set"),
        ));
    }
    if key(rt, comm_keyval)?.freed {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("attribute key {comm_keyval} was freed"),
        ));
    }
    let old = lock(&c.meta)
        .attrs
        .iter()
        .find(|a| a.0 == comm_keyval)
        .map(|a| a.1);
    if let Some(old) = old {
        run_delete(rt, comm, comm_keyval, old)?;
    }
    let mut m = lock(&c.meta);
    match m.attrs.iter_mut().find(|a| a.0 == comm_keyval) {
        Some(a) => a.1 = attribute_val as usize,
        None => m.attrs.push((comm_keyval, attribute_val as usize)),
    }
    Ok(())
}

/// `MPI_Comm_get_attr`: the predefined keys (`MPI_TAG_UB`, `MPI_HOST`,
/// `MPI_IO`, `MPI_WTIME_IS_GLOBAL`, `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`,
/// `MPI_LASTUSEDCODE`: pointers to values that live as long as the
/// process) and the program's own.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_get_attr(
    comm: usize,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if attribute_val.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null attribute or flag pointer"));
    }
    let a = &rt.attrs;
    let predefined: Option<*const c_int> = match keyval {
        MPI_TAG_UB => Some(&a.tag_ub),
        MPI_HOST => Some(&a.host),
        MPI_IO => Some(&a.io),
        MPI_WTIME_IS_GLOBAL => Some(&a.wtime_is_global),
        MPI_UNIVERSE_SIZE => Some(&a.universe_size),
        MPI_APPNUM => Some(&a.appnum),
        // Atomic: MPI_Add_error_class moves it.
        MPI_LASTUSEDCODE => Some(crate::usererr::LAST_USED.as_ptr().cast_const()),
        _ => None,
    };
    let value = match predefined {
        Some(v) => Some(v as usize),
        None => {
            key(rt, keyval)?;
            lock(&c.meta)
                .attrs
                .iter()
                .find(|a| a.0 == keyval)
                .map(|a| a.1)
        }
    };
    // SAFETY: `attribute_val` is really a `void **` out-argument (the
    // standard's binding); `flag` is an out-argument; both non-null.
    unsafe {
        if let Some(v) = value {
            put(attribute_val.cast::<usize>(), v)?;
        }
        put(flag, c_int::from(value.is_some()))
    }
}

/// `MPI_Comm_delete_attr`: runs the delete callback.
pub(crate) fn comm_delete_attr(comm: usize, comm_keyval: c_int) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(comm)?;
    let found = lock(&c.meta)
        .attrs
        .iter()
        .find(|a| a.0 == comm_keyval)
        .map(|a| a.1);
    let Some(value) = found else {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("the communicator has no attribute of key {comm_keyval}"),
        ));
    };
    run_delete(rt, comm, comm_keyval, value)?;
    lock(&c.meta).attrs.retain(|a| a.0 != comm_keyval);
    Ok(())
}
