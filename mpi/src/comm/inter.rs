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
use crate::ffi::args::Out;
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
pub(crate) fn comm_test_inter(comm: usize, mut flag: Out<'_, c_int>) -> Res {
    let inter = rt()?.comm(comm)?.comm.is_inter();
    flag.set(c_int::from(inter))
}

/// `MPI_Comm_remote_size`: `MPI_ERR_COMM` on an intracommunicator.
pub(crate) fn comm_remote_size(comm: usize, mut size: Out<'_, c_int>) -> Res {
    let n = remote_group(comm)?.size();
    size.set(c_int::try_from(n).unwrap_or(c_int::MAX))
}

/// `MPI_Comm_remote_group`: `MPI_ERR_COMM` on an intracommunicator.
pub(crate) fn comm_remote_group(comm: usize, mut group: Out<'_, usize>) -> Res {
    let g = remote_group(comm)?;
    crate::comm::group::store(rt()?, g, &mut group)
}

/// `MPI_Intercomm_create`: `peer_comm` and `remote_leader` are read at
/// `local_leader` only. The new communicator has `local_comm`'s error
/// handler.
pub(crate) fn intercomm_create(
    local_comm: usize,
    local_leader: c_int,
    peer_comm: usize,
    remote_leader: c_int,
    tag: c_int,
    mut newintercomm: Out<'_, usize>,
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
    newintercomm.set(h)
}

/// `MPI_Intercomm_merge`: the side passing `high == 0` first. The new
/// communicator has the intercommunicator's error handler.
pub(crate) fn intercomm_merge(
    intercomm: usize,
    high: c_int,
    mut newintracomm: Out<'_, usize>,
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
    newintracomm.set(h)
}
