//! Blocking collectives: barrier, bcast, reduce and allreduce (with
//! `MPI_IN_PLACE`) on predefined datatypes and ops.

use std::ffi::{c_int, c_void};

use super::{bytes, bytes_mut, mpi_fn};
use crate::abi::class::*;
use crate::abi::MPI_IN_PLACE;
use crate::datatype;
use crate::error::{Fail, Res};
use crate::reduce::{self, Target};
use crate::state::rt;

fn check_root(root: c_int, size: u32) -> Res {
    if root < 0 || root as u32 >= size {
        return Err(Fail::msg(
            MPI_ERR_ROOT,
            format!("invalid root {root} (communicator size {size})"),
        ));
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Barrier`.
    MPI_Barrier / PMPI_Barrier [comm] (comm: usize) {
        rt()?.comm(comm)?.comm.barrier()?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Bcast`.
    MPI_Bcast / PMPI_Bcast [comm] (buffer: *mut c_void, count: c_int, datatype: usize, root: c_int, comm: usize) {
        let c = rt()?.comm(comm)?;
        let len = datatype::bytes(i64::from(count), datatype::lookup(datatype)?)?;
        check_root(root, c.comm.size())?;
        // SAFETY: the caller's buffer, for the duration of this blocking call.
        let buf = unsafe { bytes_mut(buffer.cast(), len)? };
        c.comm.bcast(buf, root)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Reduce`: `MPI_IN_PLACE` as `sendbuf` at the root; `recvbuf` is
    /// ignored elsewhere.
    MPI_Reduce / PMPI_Reduce [comm] (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: usize, op: usize, root: c_int, comm: usize) {
        let c = rt()?.comm(comm)?;
        let dt = datatype::lookup(datatype)?;
        let len = datatype::bytes(i64::from(count), dt)?;
        check_root(root, c.comm.size())?;
        let in_place = sendbuf as usize == MPI_IN_PLACE;
        let at_root = c.comm.rank() == root;
        if in_place && !at_root {
            return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root of MPI_Reduce"));
        }
        // SAFETY: the caller's buffers, for the duration of this blocking
        // call; MPI forbids them to overlap unless MPI_IN_PLACE is used.
        let send = if in_place { None } else { Some(unsafe { bytes(sendbuf.cast(), len)? }) };
        // SAFETY: as above (the receive buffer matters at the root only).
        let recv = if at_root { Some(unsafe { bytes_mut(recvbuf.cast(), len)? }) } else { None };
        reduce::run(&c.comm, op, dt, Target::Root { root, send, recv })
    }
}

mpi_fn! {
    /// `MPI_Allreduce`: `MPI_IN_PLACE` as `sendbuf` takes the input from
    /// `recvbuf`.
    MPI_Allreduce / PMPI_Allreduce [comm] (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: usize, op: usize, comm: usize) {
        let c = rt()?.comm(comm)?;
        let dt = datatype::lookup(datatype)?;
        let len = datatype::bytes(i64::from(count), dt)?;
        // SAFETY: the caller's buffers, for the duration of this blocking
        // call; MPI forbids them to overlap unless MPI_IN_PLACE is used.
        let send = if sendbuf as usize == MPI_IN_PLACE { None } else { Some(unsafe { bytes(sendbuf.cast(), len)? }) };
        // SAFETY: as above.
        let recv = unsafe { bytes_mut(recvbuf.cast(), len)? };
        reduce::run(&c.comm, op, dt, Target::All { send, recv })
    }
}
