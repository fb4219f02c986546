//! Datatype attributes: `MPI_Type_create_keyval`, `MPI_Type_free_keyval`,
//! `MPI_Type_set_attr`, `MPI_Type_get_attr`, `MPI_Type_delete_attr`. The
//! keys are the communicators' (one numbering, the same callbacks: a
//! callback gets the datatype's handle where a communicator's would get
//! the communicator's); the values are kept here by datatype handle, and
//! `MPI_Type_dup` copies them (the copy callbacks decide) and
//! `MPI_Type_free` deletes them (the delete callbacks run), as for
//! communicators. Callbacks run with no lock of ours held.

use std::ffi::c_int;
use std::sync::Mutex;

use super::calls::{comm_create_keyval, comm_free_keyval, copy_attrs, known, run_delete, settable};
use super::{CopyCb, DeleteCb};
use crate::abi::class::*;
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::state::{lock, rt};

/// An object's attributes, `(keyval, value)` in the order they were set.
type Attrs = Vec<(c_int, usize)>;

/// Each datatype's attributes, by datatype handle.
static TYPE_ATTRS: Mutex<Vec<(usize, Attrs)>> = Mutex::new(Vec::new());

/// The attributes of datatype `h` (none: empty).
fn attrs_of(h: usize) -> Attrs {
    lock(&TYPE_ATTRS)
        .iter()
        .find(|e| e.0 == h)
        .map(|e| e.1.clone())
        .unwrap_or_default()
}

/// Stores `attrs` as datatype `h`'s (none: forgets it).
fn store(h: usize, attrs: Attrs) {
    let mut t = lock(&TYPE_ATTRS);
    t.retain(|e| e.0 != h);
    if !attrs.is_empty() {
        t.push((h, attrs));
    }
}

/// `MPI_Type_create_keyval`: as `MPI_Comm_create_keyval`
/// (`MPI_TYPE_NULL_COPY_FN`, `MPI_TYPE_DUP_FN`, `MPI_TYPE_NULL_DELETE_FN`
/// are the communicator ones' values).
pub(crate) fn type_create_keyval(
    copy_fn: CopyCb,
    delete_fn: DeleteCb,
    type_keyval: Out<'_, c_int>,
    extra_state: usize,
) -> Res {
    comm_create_keyval(copy_fn, delete_fn, type_keyval, extra_state)
}

/// `MPI_Type_free_keyval`.
pub(crate) fn type_free_keyval(type_keyval: Out<'_, c_int>) -> Res {
    comm_free_keyval(type_keyval)
}

/// `MPI_Type_set_attr`: replacing a value runs the delete callback on the
/// old one first.
pub(crate) fn type_set_attr(datatype: usize, type_keyval: c_int, attribute_val: usize) -> Res {
    let rt = rt()?;
    rt.any_type(datatype)?;
    settable(rt, type_keyval)?;
    let mut attrs = attrs_of(datatype);
    if let Some(&(_, old)) = attrs.iter().find(|a| a.0 == type_keyval) {
        run_delete(rt, datatype, type_keyval, old)?;
        attrs = attrs_of(datatype);
    }
    match attrs.iter_mut().find(|a| a.0 == type_keyval) {
        Some(a) => a.1 = attribute_val,
        None => attrs.push((type_keyval, attribute_val)),
    }
    store(datatype, attrs);
    Ok(())
}

/// `MPI_Type_get_attr`.
pub(crate) fn type_get_attr(
    datatype: usize,
    type_keyval: c_int,
    mut attribute_val: Out<'_, usize>,
    mut flag: Out<'_, c_int>,
) -> Res {
    let rt = rt()?;
    rt.any_type(datatype)?;
    known(rt, type_keyval)?;
    if attribute_val.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null attribute or flag pointer"));
    }
    let value = attrs_of(datatype)
        .iter()
        .find(|a| a.0 == type_keyval)
        .map(|a| a.1);
    if let Some(v) = value {
        attribute_val.set(v)?;
    }
    flag.set(c_int::from(value.is_some()))
}

/// `MPI_Type_delete_attr`: runs the delete callback.
pub(crate) fn type_delete_attr(datatype: usize, type_keyval: c_int) -> Res {
    let rt = rt()?;
    rt.any_type(datatype)?;
    known(rt, type_keyval)?;
    let found = attrs_of(datatype)
        .iter()
        .find(|a| a.0 == type_keyval)
        .map(|a| a.1);
    let Some(value) = found else {
        return Err(Fail::msg(
            MPI_ERR_KEYVAL,
            format!("the datatype has no attribute of key {type_keyval}"),
        ));
    };
    run_delete(rt, datatype, type_keyval, value)?;
    let mut attrs = attrs_of(datatype);
    attrs.retain(|a| a.0 != type_keyval);
    store(datatype, attrs);
    Ok(())
}

/// `MPI_Type_dup`'s part: `new` gets `old`'s attributes as their copy
/// callbacks decide.
pub(crate) fn duplicated(old: usize, new: usize) -> Res {
    let attrs = attrs_of(old);
    if attrs.is_empty() {
        return Ok(());
    }
    let copied = copy_attrs(rt()?, old, attrs)?;
    store(new, copied);
    Ok(())
}

/// `MPI_Type_free`'s part: every attribute of `h` deleted, last set first
/// (on a callback's failure the rest stay, and the free fails).
pub(crate) fn freeing(h: usize) -> Res {
    let rt = rt()?;
    loop {
        let Some(&(k, value)) = attrs_of(h).last() else {
            return Ok(());
        };
        run_delete(rt, h, k, value)?;
        let mut attrs = attrs_of(h);
        attrs.retain(|a| a.0 != k);
        store(h, attrs);
    }
}
