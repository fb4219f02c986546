//! Intercommunicators: `MPI_Intercomm_create`, `MPI_Intercomm_merge`,
//! `MPI_Comm_remote_size`, `MPI_Comm_remote_group` and
//! `MPI_Comm_test_inter`. ferry does the work (`Comm::intercomm_create`);
//! point-to-point on an intercommunicator names remote ranks through
//! ferry's communicator, so the point-to-point calls need nothing here.
//! Collectives, `split` and `create` on one fail with
//! `MPI_ERR_UNSUPPORTED_OPERATION` (ferry's `ApiError::Unsupported`).

use std::ffi::c_int;

use crate::abi::class::*;
use crate::comm::communicators::store;
use crate::error::{Fail, Res};
use crate::ffi::put;
use crate::state::rt;

/// The remote group of `comm`, or `MPI_ERR_COMM` for an intracommunicator.
fn remote_group(comm: usize) -> Res<ferry::Group> {
    rt()?
        .comm(comm)?
        .comm
        .remote_group()
        .ok_or_else(|| Fail::new(MPI_ERR_COMM, "an intracommunicator has no remote group"))
}

/// `MPI_Comm_test_inter`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_test_inter(comm: usize, flag: *mut c_int) -> Res {
    let inter = rt()?.comm(comm)?.comm.is_inter();
    // SAFETY: out-argument.
    unsafe { put(flag, c_int::from(inter)) }
}

/// `MPI_Comm_remote_size`: `MPI_ERR_COMM` on an intracommunicator.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_remote_size(comm: usize, size: *mut c_int) -> Res {
    let n = remote_group(comm)?.size();
    // SAFETY: out-argument.
    unsafe { put(size, c_int::try_from(n).unwrap_or(c_int::MAX)) }
}

/// `MPI_Comm_remote_group`: `MPI_ERR_COMM` on an intracommunicator.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_remote_group(comm: usize, group: *mut usize) -> Res {
    let g = remote_group(comm)?;
    // SAFETY: out-argument.
    unsafe { crate::comm::group::store(rt()?, g, group) }
}

/// `MPI_Intercomm_create`: `peer_comm` and `remote_leader` are read at
/// `local_leader` only. The new communicator has `local_comm`'s error
/// handler.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn intercomm_create(
    local_comm: usize,
    local_leader: c_int,
    peer_comm: usize,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut usize,
) -> Res {
    let rt = rt()?;
    let local = rt.comm_counted(local_comm)?;
    if newintercomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    if tag < 0 {
        return Err(Fail::msg(MPI_ERR_TAG, format!("invalid tag {tag}")));
    }
    let peer = if local.comm.rank() == local_leader {
        Some(rt.comm_counted(peer_comm)?)
    } else {
        None
    };
    let new = local.comm.intercomm_create(
        local_leader,
        peer.as_ref().map(|p| &p.comm),
        remote_leader,
        tag,
    )?;
    let h = store(rt, &local, new, Vec::new(), None)?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(newintercomm, h) }
}

/// `MPI_Intercomm_merge`: the side passing `high == 0` first. The new
/// communicator has the intercommunicator's error handler.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn intercomm_merge(
    intercomm: usize,
    high: c_int,
    newintracomm: *mut usize,
) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(intercomm)?;
    if newintracomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    if !c.comm.is_inter() {
        return Err(Fail::new(
            MPI_ERR_COMM,
            "MPI_Intercomm_merge needs an intercommunicator",
        ));
    }
    let new = c.comm.intercomm_merge(high != 0)?;
    let h = store(rt, &c, new, Vec::new(), None)?;
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(newintracomm, h) }
}
