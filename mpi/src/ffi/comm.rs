//! Communicators: rank, size, dup, split, free, compare, names.

use std::ffi::{c_char, c_int};

use super::{cstr, get, mpi_fn, put, put_str};
use crate::abi::class::*;
use crate::abi::*;
use crate::error::Fail;
use crate::state::{lock, rt, CommObj};

mpi_fn! {
    /// `MPI_Comm_rank`.
    MPI_Comm_rank / PMPI_Comm_rank [comm] (comm: usize, rank: *mut c_int) {
        let r = rt()?.comm(comm)?.comm.rank();
        // SAFETY: out-argument.
        unsafe { put(rank, r) }
    }
}

mpi_fn! {
    /// `MPI_Comm_size`.
    MPI_Comm_size / PMPI_Comm_size [comm] (comm: usize, size: *mut c_int) {
        let s = rt()?.comm(comm)?.comm.size();
        // SAFETY: out-argument.
        unsafe { put(size, c_int::try_from(s).unwrap_or(c_int::MAX)) }
    }
}

mpi_fn! {
    /// `MPI_Comm_dup`: collective; the copy has the error handler, not the
    /// name.
    MPI_Comm_dup / PMPI_Comm_dup [comm] (comm: usize, newcomm: *mut usize) {
        let rt = rt()?;
        let c = rt.comm(comm)?;
        let dup = c.comm.dup()?;
        let errh = lock(&c.meta).errh.clone();
        let h = rt.add_comm(CommObj::new(dup, "", errh))?;
        // SAFETY: out-argument.
        unsafe { put(newcomm, h) }
    }
}

mpi_fn! {
    /// `MPI_Comm_split`: collective; `MPI_UNDEFINED` as the color gives
    /// `MPI_COMM_NULL`. The new communicator inherits the error handler.
    MPI_Comm_split / PMPI_Comm_split [comm] (comm: usize, color: c_int, key: c_int, newcomm: *mut usize) {
        let rt = rt()?;
        let c = rt.comm(comm)?;
        if color < 0 && color != MPI_UNDEFINED {
            return Err(Fail::msg(MPI_ERR_ARG, format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)")));
        }
        let color = if color == MPI_UNDEFINED { ferry::UNDEFINED } else { color };
        let h = match c.comm.split(color, key)? {
            Some(new) => {
                let errh = lock(&c.meta).errh.clone();
                rt.add_comm(CommObj::new(new, "", errh))?
            }
            None => MPI_COMM_NULL,
        };
        // SAFETY: out-argument.
        unsafe { put(newcomm, h) }
    }
}

mpi_fn! {
    /// `MPI_Comm_free`: the handle becomes `MPI_COMM_NULL`. Operations in
    /// flight on it go on (ferry keeps the communicator while its requests
    /// live).
    MPI_Comm_free / PMPI_Comm_free(comm: *mut usize) {
        let rt = rt()?;
        // SAFETY: in/out argument.
        let h = unsafe { get(comm)? };
        match h {
            MPI_COMM_WORLD | MPI_COMM_SELF => {
                return Err(Fail::new(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed").on(h))
            }
            MPI_COMM_NULL => return Err(Fail::new(MPI_ERR_COMM, "MPI_COMM_NULL cannot be freed")),
            _ => {}
        }
        let obj = rt.comms
            .with(|t| t.remove(h))?
            .map_err(|b| Fail::handle(MPI_ERR_COMM, b, "communicator"))?;
        drop(obj);
        // SAFETY: as above.
        unsafe { put(comm, MPI_COMM_NULL) }
    }
}

mpi_fn! {
    /// `MPI_Comm_compare`.
    MPI_Comm_compare / PMPI_Comm_compare(comm1: usize, comm2: usize, result: *mut c_int) {
        let rt = rt()?;
        let a = rt.comm(comm1).map_err(|f| f.on(comm1))?;
        let b = rt.comm(comm2).map_err(|f| f.on(comm2))?;
        let r = match a.comm.compare(&b.comm) {
            ferry::CommCompare::Ident => MPI_IDENT,
            ferry::CommCompare::Congruent => MPI_CONGRUENT,
            ferry::CommCompare::Similar => MPI_SIMILAR,
            _ => MPI_UNEQUAL,
        };
        // The same handle is MPI_IDENT whatever ferry says of two views.
        let r = if comm1 == comm2 { MPI_IDENT } else { r };
        // SAFETY: out-argument.
        unsafe { put(result, r) }
    }
}

mpi_fn! {
    /// `MPI_Comm_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1`
    /// bytes are cut.
    MPI_Comm_set_name / PMPI_Comm_set_name [comm] (comm: usize, comm_name: *const c_char) {
        let c = rt()?.comm(comm)?;
        // SAFETY: a NUL-terminated string argument.
        let name = unsafe { cstr(comm_name)? };
        let mut end = name.len().min(MPI_MAX_OBJECT_NAME - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        lock(&c.meta).name = name[..end].to_owned();
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_name`: an empty string for an unnamed communicator.
    MPI_Comm_get_name / PMPI_Comm_get_name [comm] (comm: usize, comm_name: *mut c_char, resultlen: *mut c_int) {
        let c = rt()?.comm(comm)?;
        let name = lock(&c.meta).name.clone();
        // SAFETY: `comm_name` has MPI_MAX_OBJECT_NAME bytes (the standard's
        // requirement); `resultlen` is an out-argument.
        unsafe { put_str(comm_name, MPI_MAX_OBJECT_NAME, &name, resultlen) }
    }
}

mpi_fn! {
    /// `MPI_Comm_test_inter`: ferry has intracommunicators only.
    MPI_Comm_test_inter / PMPI_Comm_test_inter [comm] (comm: usize, flag: *mut c_int) {
        rt()?.comm(comm)?;
        // SAFETY: out-argument.
        unsafe { put(flag, 0) }
    }
}
