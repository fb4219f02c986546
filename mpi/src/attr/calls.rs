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

use std::ffi::c_int;

use crate::ffi::args::Out;
use crate::ffi::callbacks;

use crate::abi::class::*;
use crate::abi::*;
use crate::attr::{index, keyval_of, CopyCb, DeleteCb, Keyval, FIRST};
use crate::error::{Fail, Res};
use crate::state::{lock, rt, CommObj, Runtime};

/// The keyval `k`'s callbacks.
fn key(rt: &Runtime, k: c_int) -> Res<Keyval> {
    rt.keyvals().with(|t| index(k, t).map(|i| t[i]))?
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

/// Runs keyval `k`'s delete callback on `value` (of the object `comm`
/// names: a communicator, or a datatype for `types.rs`).
pub(super) fn run_delete(rt: &Runtime, comm: usize, k: c_int, value: usize) -> Res {
    let kv = key(rt, k)?;
    let DeleteCb::Program(f) = kv.delete else {
        return Ok(());
    };
    // No lock of ours is held.
    let rc = callbacks::attr_delete(f, comm, k, value, kv.extra);
    if rc != MPI_SUCCESS {
        return Err(callback_failed(rc, "an attribute delete callback failed"));
    }
    Ok(())
}

/// The attributes a duplicate of `old` (handle `comm`) gets: each key's
/// copy callback decides.
pub(crate) fn copy_all(rt: &Runtime, comm: usize, old: &CommObj) -> Res<Vec<(c_int, usize)>> {
    let attrs = lock(&old.meta).attrs.clone();
    copy_attrs(rt, comm, attrs)
}

/// The attributes a copy of an object gets from `attrs` (the object's,
/// `handle` naming it to the copy callbacks): each key's callback decides.
pub(super) fn copy_attrs(
    rt: &Runtime,
    comm: usize,
    attrs: Vec<(c_int, usize)>,
) -> Res<Vec<(c_int, usize)>> {
    let mut out = Vec::new();
    for (k, value) in attrs {
        let kv = key(rt, k)?;
        match kv.copy {
            CopyCb::Null => {}
            CopyCb::Dup => out.push((k, value)),
            CopyCb::Program(f) => {
                let (rc, new_value, keep) = callbacks::attr_copy(f, comm, k, kv.extra, value);
                if rc != MPI_SUCCESS {
                    return Err(callback_failed(rc, "an attribute copy callback failed"));
                }
                if keep {
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
pub(crate) fn comm_create_keyval(
    copy_fn: CopyCb,
    delete_fn: DeleteCb,
    mut comm_keyval: Out<'_, c_int>,
    extra_state: usize,
) -> Res {
    let rt = rt()?;
    if comm_keyval.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null keyval pointer"));
    }
    let kv = Keyval {
        copy: copy_fn,
        delete: delete_fn,
        extra: extra_state,
        freed: false,
    };
    let k = rt.keyvals().with(|t| {
        t.push(kv);
        keyval_of(t.len() - 1)
    })??;
    comm_keyval.set(k)
}

/// `MPI_Comm_free_keyval`: the key becomes `MPI_KEYVAL_INVALID`;
/// attributes already set keep it until deleted.
pub(crate) fn comm_free_keyval(mut comm_keyval: Out<'_, c_int>) -> Res {
    let rt = rt()?;
    let k = comm_keyval.get()?;
    if k < FIRST {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("{k} is a predefined or invalid key and cannot be freed"),
        ));
    }
    rt.keyvals().with(|t| {
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
    comm_keyval.set(MPI_KEYVAL_INVALID)
}

/// `MPI_Comm_set_attr`: replacing a value runs the delete callback on
/// the old one first.
pub(crate) fn comm_set_attr(comm: usize, comm_keyval: c_int, attribute_val: usize) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(comm)?;
    settable(rt, comm_keyval)?;
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
        Some(a) => a.1 = attribute_val,
        None => m.attrs.push((comm_keyval, attribute_val)),
    }
    Ok(())
}

/// Checks `k` is a key the program made (freed or not): `MPI_ERR_KEYVAL`
/// for any other value.
pub(super) fn known(rt: &Runtime, k: c_int) -> Res {
    key(rt, k).map(|_| ())
}

/// Checks `k` is a live key of the program's (one an attribute can be set
/// with).
pub(super) fn settable(rt: &Runtime, k: c_int) -> Res {
    if k < FIRST {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("{k} is a predefined or invalid key: it cannot be set"),
        ));
    }
    if key(rt, k)?.freed {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("attribute key {k} was freed"),
        ));
    }
    Ok(())
}

/// `MPI_Comm_get_attr`: the predefined keys (`MPI_TAG_UB`, `MPI_HOST`,
/// `MPI_IO`, `MPI_WTIME_IS_GLOBAL`, `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`,
/// `MPI_LASTUSEDCODE`: pointers to values that live as long as the
/// process) and the program's own.
pub(crate) fn comm_get_attr(
    comm: usize,
    keyval: c_int,
    mut attribute_val: Out<'_, usize>,
    mut flag: Out<'_, c_int>,
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
    // `attribute_val` is really a `void **` (the table's ptrout).
    if let Some(v) = value {
        attribute_val.set(v)?;
    }
    flag.set(c_int::from(value.is_some()))
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
