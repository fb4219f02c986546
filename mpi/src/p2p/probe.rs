//! Probes: `MPI_Probe`, `MPI_Iprobe`, and the matched probes `MPI_Mprobe`
//! and `MPI_Improbe`, whose message handle `p2p::mprobe`'s receives take.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, StatusOut};
use crate::p2p::mprobe::store;
use crate::state::rt;

/// `MPI_Probe`.
pub(crate) fn probe(source: c_int, tag: c_int, comm: usize, mut status: StatusOut<'_>) -> Res {
    let c = rt()?.comm(comm)?;
    let s = c.comm.probe(rank_in(source), tag_in(tag))?;
    status.set(MpiStatus::from_ferry(&s));
    Ok(())
}

/// `MPI_Iprobe`.
pub(crate) fn iprobe(
    source: c_int,
    tag: c_int,
    comm: usize,
    mut flag: Out<'_, c_int>,
    mut status: StatusOut<'_>,
) -> Res {
    let c = rt()?.comm(comm)?;
    if flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag pointer"));
    }
    let found = c.comm.iprobe(rank_in(source), tag_in(tag))?;
    if let Some(s) = &found {
        status.set(MpiStatus::from_ferry(s));
    }
    flag.set(c_int::from(found.is_some()))
}

/// `MPI_Mprobe`.
pub(crate) fn mprobe(
    source: c_int,
    tag: c_int,
    comm: usize,
    mut message: Out<'_, usize>,
    mut status: StatusOut<'_>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if message.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null message pointer"));
    }
    let (m, s) = c.comm.mprobe(rank_in(source), tag_in(tag))?;
    let h = store(rt, m, s, comm)?;
    message.set(h)?;
    status.set(MpiStatus::from_ferry(&s));
    Ok(())
}

/// `MPI_Improbe`.
pub(crate) fn improbe(
    source: c_int,
    tag: c_int,
    comm: usize,
    mut flag: Out<'_, c_int>,
    mut message: Out<'_, usize>,
    mut status: StatusOut<'_>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if message.is_null() || flag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null flag or message pointer"));
    }
    match c.comm.improbe(rank_in(source), tag_in(tag))? {
        Some((m, s)) => {
            let h = store(rt, m, s, comm)?;
            message.set(h)?;
            status.set(MpiStatus::from_ferry(&s));
            flag.set(1)
        }
        None => flag.set(0),
    }
}
