//! Making and freeing windows: `MPI_Win_allocate`, `MPI_Win_create` (and
//! their `_c` forms, whose displacement unit is an `MPI_Aint`), and
//! `MPI_Win_free`. Each is collective over the communicator.

use std::ffi::c_int;
use std::sync::Mutex;

use crate::abi::class::*;
use crate::abi::{MPI_INFO_NULL, MPI_WIN_NULL};
use crate::datatype::buf::lend_out;
use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf};
use crate::info::Info;
use crate::state::rt;

use super::{insert, remove, win_of, Meta, Predefined, WinObj};

/// `MPI_WIN_FLAVOR_CREATE`, `MPI_WIN_FLAVOR_ALLOCATE`, `MPI_WIN_UNIFIED`.
const FLAVOR_CREATE: c_int = 311;
const FLAVOR_ALLOCATE: c_int = 312;
const FLAVOR_DYNAMIC: c_int = 313;
const FLAVOR_SHARED: c_int = 314;
const UNIFIED: c_int = 321;

/// A window's size and displacement unit, checked.
fn checked(
    size: isize,
    disp_unit: impl TryInto<c_int> + Copy + std::fmt::Display,
) -> Res<(usize, c_int)> {
    let size = usize::try_from(size)
        .map_err(|_| Fail::msg(MPI_ERR_SIZE, format!("a window of {size} bytes")))?;
    let unit = disp_unit
        .try_into()
        .ok()
        .filter(|&u: &c_int| u > 0)
        .ok_or_else(|| Fail::msg(MPI_ERR_DISP, format!("a displacement unit of {disp_unit}")))?;
    Ok((size, unit))
}

/// The info a window starts with.
fn info_of(info: usize) -> Res<Info> {
    let given = if info == MPI_INFO_NULL {
        Info::default()
    } else {
        crate::info::calls::read(info)?
    };
    super::query::hints(&given)
}

/// Stores ferry's window `win` (`created`: the program's base pointer of
/// a created window) with what MPI keeps beside it, after
/// learning every member's displacement unit (collective).
fn finish(
    win: ferry::rma::Window<u8>,
    created: usize,
    size: usize,
    unit: c_int,
    flavor: c_int,
    info: Info,
) -> Res<usize> {
    let c = win.comm().clone();
    let mut units = vec![0i64; c.size() as usize];
    c.allgather(&[i64::from(unit)], &mut units)?;
    // A dynamic window's base is MPI_BOTTOM: displacements are addresses.
    // A created window's is the program's own pointer, even for no bytes.
    let base = match flavor {
        FLAVOR_DYNAMIC => 0,
        FLAVOR_CREATE => created,
        _ => win.base_addr()?,
    };
    insert(WinObj {
        group: c.group(),
        win,
        attrs: Box::new(Predefined {
            base,
            size: size as isize,
            disp_unit: unit,
            flavor,
            model: UNIFIED,
        }),
        disp_units: units,
        meta: Mutex::new(Meta {
            name: String::new(),
            errh: Errh::Fatal,
            info,
        }),
        pending: Mutex::new(Vec::new()),
        kept: std::sync::atomic::AtomicUsize::new(0),
    })
}

/// `MPI_Win_allocate` and `MPI_Win_allocate_c`: `size` zeroed bytes,
/// aligned for any type, whose address goes to `baseptr`.
pub(crate) fn win_allocate(
    size: isize,
    disp_unit: impl TryInto<c_int> + Copy + std::fmt::Display,
    info: usize,
    comm: usize,
    mut baseptr: Out<'_, usize>,
    mut win: Out<'_, usize>,
) -> Res {
    let (bytes, unit) = checked(size, disp_unit)?;
    if baseptr.is_null() || win.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null base or window pointer"));
    }
    let info = info_of(info)?;
    let c = rt()?.comm(comm)?.comm.clone();
    let w = c.win_allocate_bytes(bytes)?;
    let base = w.base_addr()?;
    let h = finish(w, 0, bytes, unit, FLAVOR_ALLOCATE, info)?;
    baseptr.set(base)?;
    win.set(h)
}

/// `MPI_Win_allocate_shared` and `MPI_Win_allocate_shared_c`: `size`
/// zeroed bytes in a region every member of the node maps
/// (`MPI_Win_shared_query` gives the others' parts); every member must be
/// on this node (`MPI_ERR_RMA_SHARED` otherwise).
pub(crate) fn win_allocate_shared(
    size: isize,
    disp_unit: impl TryInto<c_int> + Copy + std::fmt::Display,
    info: usize,
    comm: usize,
    mut baseptr: Out<'_, usize>,
    mut win: Out<'_, usize>,
) -> Res {
    let (bytes, unit) = checked(size, disp_unit)?;
    if baseptr.is_null() || win.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null base or window pointer"));
    }
    let info = info_of(info)?;
    let c = rt()?.comm(comm)?.comm.clone();
    let w = c.win_allocate_shared(bytes).map_err(|e| match e {
        ferry::Error::Usage(ferry::ferry_core::UsageError::Unsupported(what)) => {
            Fail::new(MPI_ERR_RMA_SHARED, what)
        }
        e => Fail::from(e),
    })?;
    let base = w.base_addr()?;
    let h = finish(w, 0, bytes, unit, FLAVOR_SHARED, info)?;
    baseptr.set(base)?;
    win.set(h)
}

/// `MPI_Win_create` and `MPI_Win_create_c`: the program's `size` bytes
/// at `base`, which stay the program's to read and write (in epochs that
/// allow it) until `MPI_Win_free`.
pub(crate) fn win_create(
    base: RecvBuf,
    size: isize,
    disp_unit: impl TryInto<c_int> + Copy + std::fmt::Display,
    info: usize,
    comm: usize,
    mut win: Out<'_, usize>,
) -> Res {
    let (bytes, unit) = checked(size, disp_unit)?;
    if win.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null window pointer"));
    }
    let info = info_of(info)?;
    let c = rt()?.comm(comm)?.comm.clone();
    // Lent until the window is freed: MPI_Win_create's promise, as a
    // nonblocking call's for its buffer until it completes.
    let memory = lend_out(base, bytes)?;
    let w = c.win_create(memory)?;
    win.set(finish(w, base.addr(), bytes, unit, FLAVOR_CREATE, info)?)
}

/// `MPI_Win_create_dynamic`: a window whose members attach memory later
/// (`MPI_Win_attach`); a target displacement is an address there
/// (`MPI_Get_address`), with a displacement unit of 1.
pub(crate) fn win_create_dynamic(info: usize, comm: usize, mut win: Out<'_, usize>) -> Res {
    if win.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null window pointer"));
    }
    let info = info_of(info)?;
    let c = rt()?.comm(comm)?.comm.clone();
    let w = c.win_create_dynamic()?;
    win.set(finish(w, 0, 0, 1, FLAVOR_DYNAMIC, info)?)
}

/// `MPI_Win_attach`: the program's `size` bytes at `base` join this
/// member's part of a dynamic window, lent until `MPI_Win_detach` (or the
/// window's free).
pub(crate) fn win_attach(win: usize, base: RecvBuf, size: isize) -> Res {
    let w = win_of(win)?;
    let (bytes, _) = checked(size, 1)?;
    let memory = lend_out(base, bytes)?;
    w.win.attach(base.addr() as u64, memory)?;
    Ok(())
}

/// `MPI_Win_detach`: the piece attached at `base` leaves the window.
pub(crate) fn win_detach(win: usize, base: usize) -> Res {
    win_of(win)?.win.detach(base as u64)?;
    Ok(())
}

/// `MPI_Win_free`: completes what is kept, waits for every member
/// (collective), deletes the attributes and the window; the handle
/// becomes `MPI_WIN_NULL`.
pub(crate) fn win_free(mut win: Out<'_, usize>) -> Res {
    let h = win.get()?;
    let w = win_of(h)?;
    w.settle(None).map_err(|f| f.on(h))?;
    super::query::freeing(h)?;
    let w = {
        drop(w);
        remove(h)?
    };
    match std::sync::Arc::try_unwrap(w) {
        Ok(obj) => obj.win.free()?,
        // Another thread holds it (a call in progress on a window being
        // freed, which MPI makes erroneous): it stops serving when that
        // call lets go of it.
        Err(shared) => shared.win.comm().barrier()?,
    }
    win.set(MPI_WIN_NULL)
}
