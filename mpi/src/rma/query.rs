//! What a window is asked and told besides its data: `MPI_Win_get_group`,
//! its name, info, attributes (the predefined `MPI_WIN_BASE`,
//! `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`,
//! `MPI_WIN_MODEL`, and the program's own keys, which are the
//! communicators': one numbering, as for datatypes) and error handlers.

use std::ffi::c_int;
use std::sync::Arc;

use crate::abi::callback::CommErrhFn;
use crate::abi::class::*;
use crate::abi::{MPI_INFO_NULL, MPI_MAX_OBJECT_NAME};
use crate::attr::types::ObjectAttrs;
use crate::attr::{CopyCb, DeleteCb};
use crate::env::errors::{errh_of, handle_of};
use crate::errhandler::{Errh, UserErrh};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, TextOut};
use crate::info::Info;
use crate::state::{lock, rt};

use super::win_of;

/// `MPI_WIN_FLAVOR_SHARED`.
const FLAVOR_SHARED: c_int = 314;

/// The predefined attribute keys.
const WIN_BASE: c_int = 601;
const WIN_DISP_UNIT: c_int = 602;
const WIN_SIZE: c_int = 603;
const WIN_CREATE_FLAVOR: c_int = 604;
const WIN_MODEL: c_int = 605;

/// Each window's attributes of the program's keys.
static WIN_ATTRS: ObjectAttrs = ObjectAttrs::new();

/// `MPI_Win_get_group`: a new group handle.
pub(crate) fn win_get_group(win: usize, mut group: Out<'_, usize>) -> Res {
    let w = win_of(win)?;
    crate::comm::group::store(rt()?, w.group.clone(), &mut group)
}

/// `MPI_Win_shared_query` and `MPI_Win_shared_query_c`: the address in
/// this process, size and displacement unit of member `rank`'s part: any
/// member's in a shared window (`MPI_PROC_NULL`: the first part that is
/// not empty), this member's own in the others (MPI 4.1), and a size of 0
/// and a null address for what is not reachable.
pub(crate) fn win_shared_query<U: TryFrom<i64> + Default + Copy>(
    win: usize,
    rank: c_int,
    mut size: Out<'_, isize>,
    mut disp_unit: Out<'_, U>,
    mut baseptr: Out<'_, usize>,
) -> Res {
    let w = win_of(win)?;
    let n = w.disp_units.len() as c_int;
    let shared = w.attrs.flavor == FLAVOR_SHARED;
    let found = if rank == crate::abi::MPI_PROC_NULL {
        if shared {
            let mut first = None;
            for r in 0..n {
                if let Some((addr, len)) = w.win.shared_query(r)? {
                    if len > 0 {
                        first = Some((r, addr, len));
                        break;
                    }
                }
            }
            first
        } else {
            None
        }
    } else {
        if !(0..n).contains(&rank) {
            return Err(Fail::msg(MPI_ERR_RANK, format!("invalid rank {rank}")));
        }
        w.win
            .shared_query(rank)?
            .map(|(addr, len)| (rank, addr, len))
    };
    let (unit, addr, len) = match found {
        Some((r, addr, len)) => (w.disp_units[r as usize], addr, len),
        None => (1, 0, 0),
    };
    size.set(len as isize)?;
    disp_unit.set(U::try_from(unit).unwrap_or_default())?;
    baseptr.set(if len == 0 && !shared { 0 } else { addr })
}

/// `MPI_Win_set_name`: cut to `MPI_MAX_OBJECT_NAME - 1` bytes.
pub(crate) fn win_set_name(win: usize, win_name: &str) -> Res {
    let w = win_of(win)?;
    let mut end = win_name.len().min(MPI_MAX_OBJECT_NAME - 1);
    while !win_name.is_char_boundary(end) {
        end -= 1;
    }
    lock(&w.meta).name = win_name[..end].to_owned();
    Ok(())
}

/// `MPI_Win_get_name`: empty for an unnamed window; `"MPI_WIN_NULL"` for
/// `MPI_WIN_NULL` (MPI 4.1).
pub(crate) fn win_get_name(
    win: usize,
    mut win_name: TextOut<'_>,
    mut resultlen: Out<'_, c_int>,
) -> Res {
    let name = if win == crate::abi::MPI_WIN_NULL {
        rt()?;
        "MPI_WIN_NULL".to_owned()
    } else {
        lock(&win_of(win)?.meta).name.clone()
    };
    win_name.set(&name, Some(&mut resultlen))
}

/// The hints a window starts with: what ferry does whatever it is told
/// (accumulates ordered, locks served), as `MPI_Win_get_info` reports
/// them, then the program's own.
pub(crate) fn hints(given: &Info) -> Res<Info> {
    let mut i = Info::default();
    for (key, value) in [
        ("no_locks", "false"),
        ("accumulate_ordering", "rar,raw,war,waw"),
        ("accumulate_ops", "same_op_no_op"),
        ("same_size", "false"),
        ("same_disp_unit", "false"),
        ("alloc_shared_noncontig", "false"),
    ] {
        i.set(key, value)?;
    }
    merge(&mut i, given)?;
    Ok(i)
}

/// Sets every hint of `from` in `into`.
fn merge(into: &mut Info, from: &Info) -> Res {
    for n in 0..from.nkeys() {
        let key = from.nthkey(n as c_int)?;
        if let Some(value) = from.get(key) {
            into.set(key, value)?;
        }
    }
    Ok(())
}

/// `MPI_Win_set_info`: the hints given replace those of the same keys;
/// the others stay. Each is kept and reported back (ferry honours every
/// one by doing the strictest thing: ordered accumulates, locks served).
pub(crate) fn win_set_info(win: usize, info: usize) -> Res {
    let w = win_of(win)?;
    if info == MPI_INFO_NULL {
        return Ok(());
    }
    let given = crate::info::calls::read(info)?;
    let mut meta = lock(&w.meta);
    merge(&mut meta.info, &given)
}

/// `MPI_Win_get_info`: a new info object with the hints in force.
pub(crate) fn win_get_info(win: usize, mut info_used: Out<'_, usize>) -> Res {
    let w = win_of(win)?;
    if info_used.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let i = lock(&w.meta).info.clone();
    info_used.set(crate::info::calls::insert(i)?)
}

/// `MPI_Win_create_keyval`: as `MPI_Comm_create_keyval`.
pub(crate) fn win_create_keyval(
    win_copy_attr_fn: CopyCb,
    win_delete_attr_fn: DeleteCb,
    win_keyval: Out<'_, c_int>,
    extra_state: usize,
) -> Res {
    crate::attr::calls::comm_create_keyval(
        win_copy_attr_fn,
        win_delete_attr_fn,
        win_keyval,
        extra_state,
    )
}

/// `MPI_Win_free_keyval`.
pub(crate) fn win_free_keyval(win_keyval: Out<'_, c_int>) -> Res {
    crate::attr::calls::comm_free_keyval(win_keyval)
}

/// `MPI_Win_set_attr`.
pub(crate) fn win_set_attr(win: usize, win_keyval: c_int, attribute_val: usize) -> Res {
    win_of(win)?;
    if (WIN_BASE..=WIN_MODEL).contains(&win_keyval) {
        return Err(Fail::new(
            MPI_ERR_KEYVAL,
            "a predefined window attribute cannot be set",
        ));
    }
    WIN_ATTRS.set(win, win_keyval, attribute_val)
}

/// `MPI_Win_get_attr`: the predefined keys give the window's base
/// address, and the addresses of its size (`MPI_Aint`), displacement
/// unit, flavor and memory model (`int`s), as MPI's C binding says.
pub(crate) fn win_get_attr(
    win: usize,
    win_keyval: c_int,
    mut attribute_val: Out<'_, usize>,
    mut flag: Out<'_, c_int>,
) -> Res {
    let w = win_of(win)?;
    let a = &*w.attrs;
    let value = match win_keyval {
        WIN_BASE => a.base,
        WIN_SIZE => std::ptr::addr_of!(a.size) as usize,
        WIN_DISP_UNIT => std::ptr::addr_of!(a.disp_unit) as usize,
        WIN_CREATE_FLAVOR => std::ptr::addr_of!(a.flavor) as usize,
        WIN_MODEL => std::ptr::addr_of!(a.model) as usize,
        k => return WIN_ATTRS.get(win, k, attribute_val, flag),
    };
    if attribute_val.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null attribute or flag pointer"));
    }
    // The window lives in the table until freed, so its box does too.
    let _keep = Arc::clone(&w);
    attribute_val.set(value)?;
    flag.set(1)
}

/// `MPI_Win_delete_attr`.
pub(crate) fn win_delete_attr(win: usize, win_keyval: c_int) -> Res {
    win_of(win)?;
    WIN_ATTRS.delete(win, win_keyval, "window")
}

/// `MPI_Win_free`'s part: the program's attributes deleted.
pub(crate) fn freeing(win: usize) -> Res {
    WIN_ATTRS.freeing(win)
}

/// `MPI_Win_create_errhandler`.
pub(crate) fn win_create_errhandler(
    win_errhandler_fn: Option<CommErrhFn>,
    mut errhandler: Out<'_, usize>,
) -> Res {
    let func =
        win_errhandler_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null error handler function"))?;
    errhandler.set(handle_of(Errh::User(Arc::new(UserErrh { func })))?)
}

/// `MPI_Win_set_errhandler`.
pub(crate) fn win_set_errhandler(win: usize, errhandler: usize) -> Res {
    let w = win_of(win)?;
    let errh = errh_of(errhandler)?;
    lock(&w.meta).errh = errh;
    Ok(())
}

/// `MPI_Win_get_errhandler`.
pub(crate) fn win_get_errhandler(win: usize, mut errhandler: Out<'_, usize>) -> Res {
    let errh = lock(&win_of(win)?.meta).errh.clone();
    errhandler.set(handle_of(errh)?)
}
