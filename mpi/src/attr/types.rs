//! Datatype attributes: `MPI_Type_create_keyval`, `MPI_Type_free_keyval`,
//! `MPI_Type_set_attr`, `MPI_Type_get_attr`, `MPI_Type_delete_attr`. The
//! keys are the communicators' (one numbering, the same callbacks: a
//! callback gets the datatype's handle where a communicator's would get
//! the communicator's); the values are kept in an [`ObjectAttrs`] by
//! datatype handle, and `MPI_Type_dup` copies them (the copy callbacks
//! decide) and `MPI_Type_free` deletes them (the delete callbacks run), as
//! for communicators. Callbacks run with no lock of ours held. Windows
//! keep theirs the same way (`rma::query`).

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

/// The attributes of one kind of object (datatypes, windows), by handle.
#[derive(Debug)]
pub(crate) struct ObjectAttrs(Mutex<Vec<(usize, Attrs)>>);

/// Each datatype's attributes.
static TYPE_ATTRS: ObjectAttrs = ObjectAttrs::new();

impl ObjectAttrs {
    pub(crate) const fn new() -> ObjectAttrs {
        ObjectAttrs(Mutex::new(Vec::new()))
    }

    /// The attributes of object `h` (none: empty).
    fn of(&self, h: usize) -> Attrs {
        lock(&self.0)
            .iter()
            .find(|e| e.0 == h)
            .map(|e| e.1.clone())
            .unwrap_or_default()
    }

    /// Stores `attrs` as object `h`'s (none: forgets it).
    fn store(&self, h: usize, attrs: Attrs) {
        let mut t = lock(&self.0);
        t.retain(|e| e.0 != h);
        if !attrs.is_empty() {
            t.push((h, attrs));
        }
    }

    /// `MPI_X_set_attr` on object `h` (checked by the caller): replacing
    /// a value runs the delete callback on the old one first.
    pub(crate) fn set(&self, h: usize, keyval: c_int, value: usize) -> Res {
        let rt = rt()?;
        settable(rt, keyval)?;
        let mut attrs = self.of(h);
        if let Some(&(_, old)) = attrs.iter().find(|a| a.0 == keyval) {
            run_delete(rt, h, keyval, old)?;
            attrs = self.of(h);
        }
        match attrs.iter_mut().find(|a| a.0 == keyval) {
            Some(a) => a.1 = value,
            None => attrs.push((keyval, value)),
        }
        self.store(h, attrs);
        Ok(())
    }

    /// `MPI_X_get_attr` of a program's key on object `h`.
    pub(crate) fn get(
        &self,
        h: usize,
        keyval: c_int,
        mut value: Out<'_, usize>,
        mut flag: Out<'_, c_int>,
    ) -> Res {
        known(rt()?, keyval)?;
        if value.is_null() || flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "a null attribute or flag pointer"));
        }
        let found = self.of(h).iter().find(|a| a.0 == keyval).map(|a| a.1);
        if let Some(v) = found {
            value.set(v)?;
        }
        flag.set(c_int::from(found.is_some()))
    }

    /// `MPI_X_delete_attr`: runs the delete callback.
    pub(crate) fn delete(&self, h: usize, keyval: c_int, what: &str) -> Res {
        let rt = rt()?;
        known(rt, keyval)?;
        let found = self.of(h).iter().find(|a| a.0 == keyval).map(|a| a.1);
        let Some(value) = found else {
            return Err(Fail::msg(
                MPI_ERR_KEYVAL,
                format!("the {what} has no attribute of key {keyval}"),
            ));
        };
        run_delete(rt, h, keyval, value)?;
        let mut attrs = self.of(h);
        attrs.retain(|a| a.0 != keyval);
        self.store(h, attrs);
        Ok(())
    }

    /// A duplicate's part: `new` gets `old`'s attributes as their copy
    /// callbacks decide.
    pub(crate) fn duplicated(&self, old: usize, new: usize) -> Res {
        let attrs = self.of(old);
        if attrs.is_empty() {
            return Ok(());
        }
        let copied = copy_attrs(rt()?, old, attrs)?;
        self.store(new, copied);
        Ok(())
    }

    /// A free's part: every attribute of `h` deleted, last set first (on
    /// a callback's failure the rest stay, and the free fails).
    pub(crate) fn freeing(&self, h: usize) -> Res {
        let rt = rt()?;
        loop {
            let Some(&(k, value)) = self.of(h).last() else {
                return Ok(());
            };
            run_delete(rt, h, k, value)?;
            let mut attrs = self.of(h);
            attrs.retain(|a| a.0 != k);
            self.store(h, attrs);
        }
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
    rt()?.any_type(datatype)?;
    TYPE_ATTRS.set(datatype, type_keyval, attribute_val)
}

/// `MPI_Type_get_attr`.
pub(crate) fn type_get_attr(
    datatype: usize,
    type_keyval: c_int,
    attribute_val: Out<'_, usize>,
    flag: Out<'_, c_int>,
) -> Res {
    rt()?.any_type(datatype)?;
    TYPE_ATTRS.get(datatype, type_keyval, attribute_val, flag)
}

/// `MPI_Type_delete_attr`: runs the delete callback.
pub(crate) fn type_delete_attr(datatype: usize, type_keyval: c_int) -> Res {
    rt()?.any_type(datatype)?;
    TYPE_ATTRS.delete(datatype, type_keyval, "datatype")
}

/// `MPI_Type_dup`'s part: `new` gets `old`'s attributes as their copy
/// callbacks decide.
pub(crate) fn duplicated(old: usize, new: usize) -> Res {
    TYPE_ATTRS.duplicated(old, new)
}

/// `MPI_Type_free`'s part: every attribute of `h` deleted.
pub(crate) fn freeing(h: usize) -> Res {
    TYPE_ATTRS.freeing(h)
}
