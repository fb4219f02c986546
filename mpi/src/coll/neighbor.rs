//! The neighborhood collectives (MPI 4.1 §8.6): `MPI_Neighbor_allgather(v)`
//! and `MPI_Neighbor_alltoall(v/w)`, each in its three forms and their
//! `_c` forms ([`collective!`]), on the neighbors the communicator's
//! topology names ([`Topo::neighbors`]). ferry runs them as one round
//! (`ferry::topology`, core's `Collective::Neighbor`); a grid's missing
//! neighbor's block is left as it was.

use std::ffi::c_int;
use std::sync::Arc;

use ferry::ferry_core::coll::Neighbors;

use super::api::{blocks, cbuf, collective, per_member};
use super::spec::{Sent, Spec};
use crate::abi::class::*;
use crate::comm::topo::topo_of;
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::args::{CommArray, RecvBuf, SendBuf};
use crate::state::Runtime;
#[cfg(doc)]
use crate::topology::Topo;

/// This member's neighbors on `comm`'s topology, or `MPI_ERR_TOPOLOGY`.
fn neighbors_of(rt: &Runtime, comm: usize) -> Res<Arc<Neighbors>> {
    let c = rt.comm(comm)?;
    let topo = topo_of(&c).ok_or_else(|| {
        Fail::new(
            MPI_ERR_TOPOLOGY,
            "a neighborhood collective needs a communicator with a topology",
        )
    })?;
    Ok(Arc::new(topo.neighbors(c.comm.rank())))
}

/// `n` blocks of `count` elements, one after the other from `base`.
fn equal_blocks(
    rt: &Runtime,
    base: impl Into<crate::coll::Mem>,
    n: usize,
    count: impl Into<i64>,
    datatype: usize,
) -> Res<Vec<crate::coll::CBuf>> {
    let count = count.into();
    count_arg(count)?;
    let displs: Vec<i64> = (0..n as i64).map(|i| i.saturating_mul(count)).collect();
    blocks(rt, base, &vec![count; n], &displs, &[datatype], false)
}

/// `MPI_IN_PLACE` has no meaning here.
fn not_in_place(p: SendBuf) -> Res {
    if p.is_in_place() {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE is not valid in a neighborhood collective",
        ));
    }
    Ok(())
}

collective! { "`sendbuf` to every destination; a block from every source, in order."
    neighbor_allgather, ineighbor_allgather, neighbor_allgather_init
    large neighbor_allgather_c, ineighbor_allgather_c, neighbor_allgather_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, _c| (|| -> Res<Spec> {
        not_in_place(sendbuf)?;
        let neighbors = neighbors_of(rt, comm)?;
        let send = Sent::Same(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?);
        let recv = equal_blocks(rt, recvbuf, neighbors.sources.len(), recvcount, recvtype)?;
        Ok(Spec::Neighbor { neighbors, send, recv })
    })()
}

collective! { "as `MPI_Neighbor_allgather`, each source's block of its own size and place."
    neighbor_allgatherv, ineighbor_allgatherv, neighbor_allgatherv_init
    large neighbor_allgatherv_c, ineighbor_allgatherv_c, neighbor_allgatherv_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, displs: CommArray<'_, c_int> => CommArray<'_, isize>, recvtype: usize, comm: usize) [comm]
    |rt, _c| (|| -> Res<Spec> {
        not_in_place(sendbuf)?;
        let neighbors = neighbors_of(rt, comm)?;
        let send = Sent::Same(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?);
        let ins = neighbors.sources.len() as u32;
        let (n, d) = (per_member(recvcounts, ins, "count")?, per_member(displs, ins, "displacement")?);
        let recv = blocks(rt, recvbuf, n, d, &[recvtype], false)?;
        Ok(Spec::Neighbor { neighbors, send, recv })
    })()
}

collective! { "block `j` of `sendbuf` to destination `j`; block `i` of `recvbuf` from source `i`."
    neighbor_alltoall, ineighbor_alltoall, neighbor_alltoall_init
    large neighbor_alltoall_c, ineighbor_alltoall_c, neighbor_alltoall_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, _c| (|| -> Res<Spec> {
        not_in_place(sendbuf)?;
        let neighbors = neighbors_of(rt, comm)?;
        let send = equal_blocks(rt, sendbuf, neighbors.destinations.len(), sendcount, sendtype)?;
        let recv = equal_blocks(rt, recvbuf, neighbors.sources.len(), recvcount, recvtype)?;
        Ok(Spec::Neighbor { neighbors, send: Sent::Each(send), recv })
    })()
}

collective! { "as `MPI_Neighbor_alltoall`, each block of its own size and place."
    neighbor_alltoallv, ineighbor_alltoallv, neighbor_alltoallv_init
    large neighbor_alltoallv_c, ineighbor_alltoallv_c, neighbor_alltoallv_init_c
    (sendbuf: SendBuf, sendcounts: CommArray<'_, c_int> => CommArray<'_, i64>, sdispls: CommArray<'_, c_int> => CommArray<'_, isize>, sendtype: usize, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, rdispls: CommArray<'_, c_int> => CommArray<'_, isize>, recvtype: usize, comm: usize) [comm]
    |rt, _c| (|| -> Res<Spec> {
        not_in_place(sendbuf)?;
        let neighbors = neighbors_of(rt, comm)?;
        let (outs, ins) = (neighbors.destinations.len() as u32, neighbors.sources.len() as u32);
        let (n, d) = (per_member(sendcounts, outs, "count")?, per_member(sdispls, outs, "displacement")?);
        let send = blocks(rt, sendbuf, n, d, &[sendtype], false)?;
        let (n, d) = (per_member(recvcounts, ins, "count")?, per_member(rdispls, ins, "displacement")?);
        let recv = blocks(rt, recvbuf, n, d, &[recvtype], false)?;
        Ok(Spec::Neighbor { neighbors, send: Sent::Each(send), recv })
    })()
}

collective! { "as `MPI_Neighbor_alltoallv` with a datatype per block and displacements in bytes."
    neighbor_alltoallw, ineighbor_alltoallw, neighbor_alltoallw_init
    large neighbor_alltoallw_c, ineighbor_alltoallw_c, neighbor_alltoallw_init_c
    (sendbuf: SendBuf, sendcounts: CommArray<'_, c_int> => CommArray<'_, i64>, sdispls: CommArray<'_, isize>, sendtypes: CommArray<'_, usize>, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, rdispls: CommArray<'_, isize>, recvtypes: CommArray<'_, usize>, comm: usize) [comm]
    |rt, _c| (|| -> Res<Spec> {
        not_in_place(sendbuf)?;
        let neighbors = neighbors_of(rt, comm)?;
        let (outs, ins) = (neighbors.destinations.len() as u32, neighbors.sources.len() as u32);
        let (n, d, t) = (per_member(sendcounts, outs, "count")?, per_member(sdispls, outs, "displacement")?, per_member(sendtypes, outs, "datatype")?);
        let send = blocks(rt, sendbuf, n, d, t, true)?;
        let (n, d, t) = (per_member(recvcounts, ins, "count")?, per_member(rdispls, ins, "displacement")?, per_member(recvtypes, ins, "datatype")?);
        let recv = blocks(rt, recvbuf, n, d, t, true)?;
        Ok(Spec::Neighbor { neighbors, send: Sent::Each(send), recv })
    })()
}
