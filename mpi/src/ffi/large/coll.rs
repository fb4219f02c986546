//! The large-count collectives: every collective's blocking, `I` and
//! `_init` form with `MPI_Count` counts and, for the v-variants and
//! `Alltoallw`, `MPI_Aint` displacements.
//!
//! The v-variants' arrays are converted into temporaries that live for
//! the call only: the int forms parse them into their spec at the call
//! (`coll/api.rs` builds the blocks, `coll/spec.rs` keeps them), so a
//! request never points into them. Arrays the int form reads only at the
//! root, or not at all with `MPI_IN_PLACE`, are read only there too (a
//! non-root may pass anything for them), and passed on as null elsewhere.

use std::ffi::{c_int, c_void};

use super::{array, int, large_fn, ptr};
use crate::abi::{MPI_PROC_NULL, MPI_ROOT};
use crate::error::Res;
use crate::ffi::coll::api::*;
use crate::ffi::coll::in_place;
use crate::state::rt;

/// How many entries a per-member array of `comm` has (one per remote
/// member on an intercommunicator), and whether this process is `root`
/// of a rooted collective (on an intercommunicator, the one that passes
/// `MPI_ROOT`).
///
/// # Errors
/// As the int form's: `MPI_ERR_COMM` for a bad handle, before `MPI_Init`.
fn shape(comm: usize, root: c_int) -> Res<(usize, bool)> {
    let held = rt()?.comm(comm)?;
    let c = &held.comm;
    let is_root = if c.is_inter() {
        root == MPI_ROOT
    } else {
        c.rank() as c_int == root
    };
    Ok((c.peer_size() as usize, is_root))
}

/// The size of `comm`'s own group: `Reduce_scatter`'s counts, one per
/// member that receives a block, are this group's on either kind.
fn local_size(comm: usize) -> Res<usize> {
    Ok(rt()?.comm(comm)?.comm.size() as usize)
}

/// An `MPI_Aint` displacement as the int form's `int`.
fn disp(d: isize) -> Res<c_int> {
    int(d as i64)
}

/// Counts and displacements of one entry per member, converted; `None`
/// (null for the int form) where `read` is false.
///
/// # Safety
/// With `read`, `counts` and `displs` are null or valid for `n` entries.
#[allow(clippy::type_complexity)]
unsafe fn per_member(
    read: bool,
    n: usize,
    counts: *const i64,
    displs: *const isize,
) -> Res<(Option<Vec<c_int>>, Option<Vec<c_int>>)> {
    if !read {
        return Ok((None, None));
    }
    // SAFETY: valid for `n` entries (the caller's promise).
    unsafe { Ok((array(counts, n, int)?, array(displs, n, disp)?)) }
}

/// Defines a collective's three `_c` forms over its int forms: `$conv`
/// converts the arguments into the locals `$v`, and `$call` are the int
/// form's shared arguments (the `I` form adds the request, `_init` the
/// info and the request).
macro_rules! coll_c {
    ($name:ident / $pname:ident => $int:ident, $iname:ident / $piname:ident => $iint:ident,
     $init:ident / $pinit:ident => $initint:ident
     ($($arg:ident : $ty:ty),* $(,)?) [$comm:ident] |$($v:ident),*| $conv:block ($($call:expr),* $(,)?)) => {
        large_fn! {
            #[doc = concat!("`", stringify!($name), "`: `", stringify!($int), "` with `MPI_Count` counts.")]
            $name / $pname [$comm] ($($arg: $ty),*) {
                let ($($v,)*) = $conv;
                // SAFETY: converted counts and arrays alive for the call; the
                // other arguments unchanged (the caller's promises).
                Ok(unsafe { $int($($call),*) })
            }
        }
        large_fn! {
            #[doc = concat!("`", stringify!($iname), "`: `", stringify!($iint), "` with `MPI_Count` counts.")]
            $iname / $piname [$comm] ($($arg: $ty),*, request: *mut usize) {
                let ($($v,)*) = $conv;
                // SAFETY: as for the blocking form; the int form copies the
                // arrays at the call, the request keeps no pointer to them.
                Ok(unsafe { $iint($($call),*, request) })
            }
        }
        large_fn! {
            #[doc = concat!("`", stringify!($init), "`: `", stringify!($initint), "` with `MPI_Count` counts.")]
            $init / $pinit [$comm] ($($arg: $ty),*, info: usize, request: *mut usize) {
                let ($($v,)*) = $conv;
                // SAFETY: as for the `I` form.
                Ok(unsafe { $initint($($call),*, info, request) })
            }
        }
    };
}

coll_c! {
    MPI_Bcast_c / PMPI_Bcast_c => PMPI_Bcast, MPI_Ibcast_c / PMPI_Ibcast_c => PMPI_Ibcast,
    MPI_Bcast_init_c / PMPI_Bcast_init_c => PMPI_Bcast_init
    (buffer: *mut c_void, count: i64, datatype: usize, root: c_int, comm: usize) [comm]
    |n| { (int(count)?,) }
    (buffer, n, datatype, root, comm)
}

coll_c! {
    MPI_Gather_c / PMPI_Gather_c => PMPI_Gather, MPI_Igather_c / PMPI_Igather_c => PMPI_Igather,
    MPI_Gather_init_c / PMPI_Gather_init_c => PMPI_Gather_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |s, r| { (int(sendcount)?, int(recvcount)?) }
    (sendbuf, s, sendtype, recvbuf, r, recvtype, root, comm)
}

coll_c! {
    MPI_Gatherv_c / PMPI_Gatherv_c => PMPI_Gatherv, MPI_Igatherv_c / PMPI_Igatherv_c => PMPI_Igatherv,
    MPI_Gatherv_init_c / PMPI_Gatherv_init_c => PMPI_Gatherv_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const isize, recvtype: usize, root: c_int, comm: usize) [comm]
    |s, rc, rd| {
        let (n, is_root) = shape(comm, root)?;
        // SAFETY: the root's arrays of one entry per member.
        let (rc, rd) = unsafe { per_member(is_root, n, recvcounts, displs)? };
        (int(sendcount)?, rc, rd)
    }
    (sendbuf, s, sendtype, recvbuf, ptr(&rc), ptr(&rd), recvtype, root, comm)
}

coll_c! {
    MPI_Scatter_c / PMPI_Scatter_c => PMPI_Scatter, MPI_Iscatter_c / PMPI_Iscatter_c => PMPI_Iscatter,
    MPI_Scatter_init_c / PMPI_Scatter_init_c => PMPI_Scatter_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |s, r| { (int(sendcount)?, int(recvcount)?) }
    (sendbuf, s, sendtype, recvbuf, r, recvtype, root, comm)
}

coll_c! {
    MPI_Scatterv_c / PMPI_Scatterv_c => PMPI_Scatterv, MPI_Iscatterv_c / PMPI_Iscatterv_c => PMPI_Iscatterv,
    MPI_Scatterv_init_c / PMPI_Scatterv_init_c => PMPI_Scatterv_init
    (sendbuf: *const c_void, sendcounts: *const i64, displs: *const isize, sendtype: usize, recvbuf: *mut c_void, recvcount: i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |sc, sd, r| {
        let (n, is_root) = shape(comm, root)?;
        // SAFETY: the root's arrays of one entry per member.
        let (sc, sd) = unsafe { per_member(is_root, n, sendcounts, displs)? };
        (sc, sd, int(recvcount)?)
    }
    (sendbuf, ptr(&sc), ptr(&sd), sendtype, recvbuf, r, recvtype, root, comm)
}

coll_c! {
    MPI_Allgather_c / PMPI_Allgather_c => PMPI_Allgather, MPI_Iallgather_c / PMPI_Iallgather_c => PMPI_Iallgather,
    MPI_Allgather_init_c / PMPI_Allgather_init_c => PMPI_Allgather_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64, recvtype: usize, comm: usize) [comm]
    |s, r| { (int(sendcount)?, int(recvcount)?) }
    (sendbuf, s, sendtype, recvbuf, r, recvtype, comm)
}

coll_c! {
    MPI_Allgatherv_c / PMPI_Allgatherv_c => PMPI_Allgatherv, MPI_Iallgatherv_c / PMPI_Iallgatherv_c => PMPI_Iallgatherv,
    MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c => PMPI_Allgatherv_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const isize, recvtype: usize, comm: usize) [comm]
    |s, rc, rd| {
        let (n, _) = shape(comm, MPI_PROC_NULL)?;
        // SAFETY: arrays of one entry per member.
        let (rc, rd) = unsafe { per_member(true, n, recvcounts, displs)? };
        (int(sendcount)?, rc, rd)
    }
    (sendbuf, s, sendtype, recvbuf, ptr(&rc), ptr(&rd), recvtype, comm)
}

coll_c! {
    MPI_Alltoall_c / PMPI_Alltoall_c => PMPI_Alltoall, MPI_Ialltoall_c / PMPI_Ialltoall_c => PMPI_Ialltoall,
    MPI_Alltoall_init_c / PMPI_Alltoall_init_c => PMPI_Alltoall_init
    (sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64, recvtype: usize, comm: usize) [comm]
    |s, r| { (int(sendcount)?, int(recvcount)?) }
    (sendbuf, s, sendtype, recvbuf, r, recvtype, comm)
}

coll_c! {
    MPI_Alltoallv_c / PMPI_Alltoallv_c => PMPI_Alltoallv, MPI_Ialltoallv_c / PMPI_Ialltoallv_c => PMPI_Ialltoallv,
    MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c => PMPI_Alltoallv_init
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtype: usize, comm: usize) [comm]
    |sc, sd, rc, rd| {
        let (n, _) = shape(comm, MPI_PROC_NULL)?;
        // SAFETY: arrays of one entry per member (the send ones unread in
        // place, as the int form ignores them).
        unsafe {
            let (sc, sd) = per_member(!in_place(sendbuf), n, sendcounts, sdispls)?;
            let (rc, rd) = per_member(true, n, recvcounts, rdispls)?;
            (sc, sd, rc, rd)
        }
    }
    (sendbuf, ptr(&sc), ptr(&sd), sendtype, recvbuf, ptr(&rc), ptr(&rd), recvtype, comm)
}

coll_c! {
    MPI_Alltoallw_c / PMPI_Alltoallw_c => PMPI_Alltoallw, MPI_Ialltoallw_c / PMPI_Ialltoallw_c => PMPI_Ialltoallw,
    MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c => PMPI_Alltoallw_init
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtypes: *const usize, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtypes: *const usize, comm: usize) [comm]
    |sc, sd, rc, rd| {
        let (n, _) = shape(comm, MPI_PROC_NULL)?;
        // SAFETY: as for `MPI_Alltoallv_c`; the type arrays pass unchanged.
        unsafe {
            let (sc, sd) = per_member(!in_place(sendbuf), n, sendcounts, sdispls)?;
            let (rc, rd) = per_member(true, n, recvcounts, rdispls)?;
            (sc, sd, rc, rd)
        }
    }
    (sendbuf, ptr(&sc), ptr(&sd), sendtypes, recvbuf, ptr(&rc), ptr(&rd), recvtypes, comm)
}

coll_c! {
    MPI_Reduce_c / PMPI_Reduce_c => PMPI_Reduce, MPI_Ireduce_c / PMPI_Ireduce_c => PMPI_Ireduce,
    MPI_Reduce_init_c / PMPI_Reduce_init_c => PMPI_Reduce_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, root: c_int, comm: usize) [comm]
    |n| { (int(count)?,) }
    (sendbuf, recvbuf, n, datatype, op, root, comm)
}

coll_c! {
    MPI_Allreduce_c / PMPI_Allreduce_c => PMPI_Allreduce, MPI_Iallreduce_c / PMPI_Iallreduce_c => PMPI_Iallreduce,
    MPI_Allreduce_init_c / PMPI_Allreduce_init_c => PMPI_Allreduce_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize) [comm]
    |n| { (int(count)?,) }
    (sendbuf, recvbuf, n, datatype, op, comm)
}

coll_c! {
    MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c => PMPI_Reduce_scatter_block,
    MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c => PMPI_Ireduce_scatter_block,
    MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c => PMPI_Reduce_scatter_block_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: i64, datatype: usize, op: usize, comm: usize) [comm]
    |n| { (int(recvcount)?,) }
    (sendbuf, recvbuf, n, datatype, op, comm)
}

coll_c! {
    MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c => PMPI_Reduce_scatter,
    MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c => PMPI_Ireduce_scatter,
    MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c => PMPI_Reduce_scatter_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const i64, datatype: usize, op: usize, comm: usize) [comm]
    |rc| {
        let n = local_size(comm)?;
        // SAFETY: an array of one entry per member.
        (unsafe { array(recvcounts, n, int)? },)
    }
    (sendbuf, recvbuf, ptr(&rc), datatype, op, comm)
}

coll_c! {
    MPI_Scan_c / PMPI_Scan_c => PMPI_Scan, MPI_Iscan_c / PMPI_Iscan_c => PMPI_Iscan,
    MPI_Scan_init_c / PMPI_Scan_init_c => PMPI_Scan_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize) [comm]
    |n| { (int(count)?,) }
    (sendbuf, recvbuf, n, datatype, op, comm)
}

coll_c! {
    MPI_Exscan_c / PMPI_Exscan_c => PMPI_Exscan, MPI_Iexscan_c / PMPI_Iexscan_c => PMPI_Iexscan,
    MPI_Exscan_init_c / PMPI_Exscan_init_c => PMPI_Exscan_init
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize) [comm]
    |n| { (int(count)?,) }
    (sendbuf, recvbuf, n, datatype, op, comm)
}
