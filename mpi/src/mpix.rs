//! ferry's own semantics as MPIX extensions (declared and documented in
//! `mpi.h`):
//! - `MPIX_Arecv` / `MPIX_Iarecv`: a receive of a message of unknown size
//!   into a buffer the library allocates (ferry's ARecv, handed over
//!   without a copy where the device allows); `MPIX_Status_get_buffer`
//!   takes it from the status, `MPI_Free_mem` releases it.
//! - `MPIX_REQUEST_EMPTY`: the request handle of an operation that
//!   completed inside its initiating call (every send; a receive only on a
//!   communicator whose info sets `mpi_recv_req_may_be_empty`); no table
//!   entry is made for it, and every completion call takes it as complete
//!   with the empty status.
//! - `MPIX_Set_wait_mode` / `MPIX_Get_wait_mode`: ferry's wait mode
//!   (spinning, passive sleeping, or spinning then sleeping), chosen
//!   before `MPI_Init`.
//!
//! A handed-over buffer is kept in a registry under its address until
//! `MPI_Free_mem` drops it (anything else `MPI_Free_mem` gets is
//! `MPI_Alloc_mem`'s `malloc`). The status carries the address in its two
//! last private ints.

use std::ffi::c_int;

use ferry::WaitMode;

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::request::object::ReqObj;
use crate::request::post::Post;
use crate::state::{rt, rt_any};

/// `MPIX_WAIT_SPIN`, `MPIX_WAIT_PASSIVE`, `MPIX_WAIT_HYBRID`.
const WAIT_MODES: [(c_int, WaitMode); 3] = [
    (0, WaitMode::Spin),
    (1, WaitMode::Passive),
    (2, WaitMode::Hybrid),
];

/// `MPIX_Iarecv`.
pub(crate) fn iarecv(source: c_int, tag: c_int, comm: usize, mut request: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let req = c.comm.iarecv(rank_in(source), tag_in(tag))?;
    let h = rt.add_request(ReqObj::active(req, comm, Post::Arecv))?;
    request.set(h)
}

/// `MPIX_Arecv`: the status (which must not be `MPI_STATUS_IGNORE`)
/// carries the buffer.
pub(crate) fn arecv(source: c_int, tag: c_int, comm: usize, mut status: Out<'_, MpiStatus>) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if status.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "MPIX_Arecv hands its buffer over through the status: MPI_STATUS_IGNORE cannot take it",
        ));
    }
    let req = c.comm.iarecv(rank_in(source), tag_in(tag))?;
    let report = ReqObj::active(req, comm, Post::Arecv).wait()?;
    report.write_to(&mut status)
}

/// `MPIX_Status_get_buffer`: the buffer an ARecv handed over (null for
/// an empty message or a status of another operation). The program
/// owns it: `MPI_Free_mem` releases it.
pub(crate) fn status_get_buffer(status: MpiStatus, mut buf: Out<'_, usize>) -> Res {
    let ptr = (status.internal[3] as u32 as usize) | ((status.internal[4] as u32 as usize) << 32);
    // `buf` is really a `void **` (the table's ptrout).
    buf.set(ptr)
}

/// `MPIX_Set_wait_mode`: `MPIX_WAIT_SPIN`, `MPIX_WAIT_PASSIVE` (sleep
/// in the kernel while waiting: no core burnt) or `MPIX_WAIT_HYBRID`
/// (spin, then sleep; ferry's default), for the world `MPI_Init`
/// makes; it overrides `FERRY_WAIT_MODE`. Only before `MPI_Init`.
pub(crate) fn set_wait_mode(mode: c_int) -> Res {
    if rt_any().is_some() {
        return Err(Fail::new(
            MPI_ERR_OTHER,
            "MPIX_Set_wait_mode must be called before MPI_Init",
        ));
    }
    let m = WAIT_MODES
        .iter()
        .find(|(v, _)| *v == mode)
        .map(|(_, m)| *m)
        .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("invalid wait mode {mode}")))?;
    crate::state::choose_wait_mode(m);
    Ok(())
}

/// `MPIX_Get_wait_mode`: the mode in force (after `MPI_Init`), or the
/// one `MPI_Init` will use.
pub(crate) fn get_wait_mode(mut mode: Out<'_, c_int>) -> Res {
    let m = match rt_any() {
        Some(rt) => rt.wait_mode,
        None => match crate::state::chosen_wait_mode() {
            Some(m) => m,
            None => ferry::Config::from_env()
                .map(|c| c.wait_mode)
                .map_err(Fail::from)?,
        },
    };
    let v = WAIT_MODES
        .iter()
        .find(|(_, w)| *w == m)
        .map_or(2, |(v, _)| *v);
    mode.set(v)
}
