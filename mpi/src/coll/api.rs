//! The collective functions: each collective's arguments are parsed into a
//! [`Spec`] once, and [`collective!`] defines its three forms on it:
//! `MPI_X` (blocking), `MPI_IX` (nonblocking, one more `MPI_Request *`) and
//! `MPI_X_init` (persistent, `MPI_Info` and `MPI_Request *` more).
//!
//! Arguments that matter only at the root are only read there (a
//! non-root may pass anything for them, as the standard allows).

use std::ffi::c_int;

use ferry::Comm;

use crate::abi::class::*;
use crate::coll::reduction::resolve;
use crate::coll::spec::Spec;
use crate::coll::{CBuf, Mem};
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::args::{CommArray, RecvBuf, SendBuf};
use crate::state::Runtime;

/// Defines the bodies of `MPI_X`, `MPI_IX` and `MPI_X_init` from one
/// parser `|rt, c| -> Res<Spec>` over the shared arguments; with `large`,
/// also their `_c` forms from the same parser, each argument written
/// `name: int type => large type` taking its large type there (`MPI_Count`
/// counts, `MPI_Aint` displacements: the parser's helpers take either
/// width, and the spec holds `usize` counts). The exported functions are
/// generated (`mpi/abi/functions.txt`).
macro_rules! collective {
    ($doc:literal $name:ident, $iname:ident, $init:ident
     large $cname:ident, $ciname:ident, $cinit:ident
     ($($arg:ident : $ty:ty $(=> $lty:ty)?),* $(,)?) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        $crate::coll::api::collective!(@forms $doc, $name, $iname, $init ($($arg: $ty),*) [$comm] |$rt, $c| $parse);
        $crate::coll::api::collective!(@forms concat!("`MPI_", stringify!($name), "` with `MPI_Count` counts (and `MPI_Aint` displacements)."),
            $cname, $ciname, $cinit ($($arg: $crate::coll::api::large_ty!($ty $(=> $lty)?)),*) [$comm] |$rt, $c| $parse);
    };
    ($doc:literal $name:ident, $iname:ident, $init:ident
     ($($arg:ident : $ty:ty),* $(,)?) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        $crate::coll::api::collective!(@forms $doc, $name, $iname, $init ($($arg: $ty),*) [$comm] |$rt, $c| $parse);
    };
    (@forms $doc:expr, $name:ident, $iname:ident, $init:ident
     ($($arg:ident : $ty:ty),*) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        #[doc = concat!("`MPI_", stringify!($name), "`: ", $doc)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $name($($arg: $ty),*) -> $crate::error::Res {
            let $rt: &$crate::state::Runtime = $crate::state::rt()?;
            let held = $rt.comm($comm)?;
            let $c: &ferry::Comm = &held.comm;
            let spec: $crate::coll::spec::Spec = $parse?;
            spec.run($c)
        }

        #[doc = concat!("`MPI_", stringify!($iname), "`: the nonblocking form; the result is copied out when the request completes.")]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $iname($($arg: $ty),*, mut request: $crate::ffi::args::Out<'_, usize>) -> $crate::error::Res {
            let $rt: &$crate::state::Runtime = $crate::state::rt()?;
            let held = $rt.comm($comm)?;
            let $c: &ferry::Comm = &held.comm;
            $crate::p2p::messages::check_request(&request)?;
            let spec: $crate::coll::spec::Spec = $parse?;
            let (req, post) = spec.start($c)?;
            let h = $crate::request::handle::store($crate::request::object::ReqObj::active(req, $comm, post))?;
            request.set(h)
        }

        #[doc = concat!("`MPI_", stringify!($init), "`: the persistent form (MPI 4.0); each `MPI_Start` runs it anew on the buffers' current contents.")]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $init($($arg: $ty),*, info: usize, request: $crate::ffi::args::Out<'_, usize>) -> $crate::error::Res {
            let $rt: &$crate::state::Runtime = $crate::state::rt()?;
            let held = $rt.comm($comm)?;
            let $c: &ferry::Comm = &held.comm;
            if info != $crate::abi::MPI_INFO_NULL {
                $crate::info::calls::check(info)?;
            }
            let spec: $crate::coll::spec::Spec = $parse?;
            $crate::p2p::persist::create($comm, $c.clone(), $crate::p2p::persist::Kind::Coll(Box::new($crate::coll::spec::Deferred(spec))), request)
        }
    };
}

/// An argument's type in the `_c` forms: its large type if it has one.
macro_rules! large_ty {
    ($ty:ty) => {
        $ty
    };
    ($ty:ty => $lty:ty) => {
        $lty
    };
}
pub(crate) use {collective, large_ty};

/// A buffer argument (the datatype must be committed).
pub(super) fn cbuf(rt: &Runtime, buf: impl Into<Mem>, count: usize, datatype: usize) -> Res<CBuf> {
    Ok(CBuf::new(buf, count, rt.comm_type(datatype)?))
}

/// `count` elements per member, for `n` members (`c.peer_size()` for a
/// block per rank the call's ranks name: the remote group's on an
/// intercommunicator; `c.size()` for one per local member).
pub(super) fn times(count: impl Into<i64>, n: u32) -> Res<usize> {
    count_arg(count)?.checked_mul(n as usize).ok_or_else(|| {
        Fail::new(
            MPI_ERR_COUNT,
            "the count times the communicator size overflows",
        )
    })
}

/// What a member does in a rooted collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Root,
    /// Sends to or receives from the root.
    Leaf,
    /// On an intercommunicator, the root's group's other members
    /// (`MPI_PROC_NULL`): they take no part.
    Idle,
}

/// Checks a root argument: this member's part, and the root as ferry
/// takes it (on an intercommunicator `MPI_ROOT` and `MPI_PROC_NULL` in the
/// root's group, the root's remote rank in the other).
fn root_of(root: c_int, c: &Comm) -> Res<(Part, i32)> {
    if c.is_inter() {
        return match root {
            crate::abi::MPI_ROOT => Ok((Part::Root, ferry::ROOT)),
            crate::abi::MPI_PROC_NULL => Ok((Part::Idle, ferry::PROC_NULL)),
            r if r >= 0 && (r as u32) < c.peer_size() => Ok((Part::Leaf, r)),
            r => Err(Fail::msg(
                MPI_ERR_ROOT,
                format!("invalid root {r} (remote group size {})", c.peer_size()),
            )),
        };
    }
    if root < 0 || root as u32 >= c.size() {
        return Err(Fail::msg(
            MPI_ERR_ROOT,
            format!("invalid root {root} (communicator size {})", c.size()),
        ));
    }
    let part = if root == c.rank() {
        Part::Root
    } else {
        Part::Leaf
    };
    Ok((part, root))
}

/// `MPI_IN_PLACE` on an intercommunicator, which MPI leaves erroneous.
fn inter_in_place(c: &Comm, p: SendBuf) -> Res {
    if c.is_inter() && p.is_in_place() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "MPI_IN_PLACE is not valid on an intercommunicator",
        ));
    }
    Ok(())
}

/// An empty buffer: an intercommunicator root's unused side.
fn none_of(rt: &Runtime, datatype: usize) -> Res<CBuf> {
    cbuf(rt, RecvBuf::NONE, 0, datatype)
}

/// `MPI_IN_PLACE` where only the root may pass it.
fn not_in_place(p: SendBuf) -> Res {
    if p.is_in_place() {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE is only valid at the root here",
        ));
    }
    Ok(())
}

/// One entry per member of `n` (see [`times`]): an `int`, or a `_c`
/// form's `MPI_Count` or `MPI_Aint`.
pub(super) fn per_member<'a, T>(p: CommArray<'a, T>, n: u32, what: &'static str) -> Res<&'a [T]> {
    p.entries(n as usize, what)
}

/// The blocks of a v-variant: `counts[i]` elements at `base` plus
/// `displs[i]` extents (`bytes`: plus `displs[i]` bytes), of `types[i]`
/// (`int`s, or a `_c` form's `MPI_Count`s and `MPI_Aint`s).
pub(super) fn blocks<C: Copy + Into<i64>, D: Copy + TryInto<isize>>(
    rt: &Runtime,
    base: impl Into<Mem>,
    counts: &[C],
    displs: &[D],
    types: &[usize],
    bytes: bool,
) -> Res<Vec<CBuf>> {
    let base = base.into();
    let mut out = Vec::with_capacity(counts.len());
    for (i, (&n, &d)) in counts.iter().zip(displs).enumerate() {
        let t = types[if types.len() == 1 { 0 } else { i }];
        let ty = rt.comm_type(t)?;
        let unit = if bytes { 1 } else { ty.extent().1 };
        let off = d
            .try_into()
            .ok()
            .and_then(|d: isize| d.checked_mul(unit))
            .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a displacement overflows"))?;
        out.push(CBuf::new(base.offset(off), count_arg(n)?, ty));
    }
    Ok(out)
}

/// A datatype array of one per rank the call's ranks name.
fn types<'a>(p: CommArray<'a, usize>, c: &Comm) -> Res<&'a [usize]> {
    p.entries(c.peer_size() as usize, "datatype")
}

collective! { "waits until every member has entered."
    barrier, ibarrier, barrier_init
    (comm: usize) [comm]
    |_rt, _c| Ok::<Spec, Fail>(Spec::Barrier)
}

collective! { "the root's buffer to every member."
    bcast, ibcast, bcast_init
    large bcast_c, ibcast_c, bcast_init_c
    (buffer: RecvBuf, count: c_int => i64, datatype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        if part == Part::Idle { return Ok(Spec::Idle); }
        Ok(Spec::Bcast { buf: cbuf(rt, buffer, count_arg(count)?, datatype)?, root })
    })
}

collective! { "every member's block into the root's buffer, by rank; `MPI_IN_PLACE` at the root."
    gather, igather, gather_init
    large gather_c, igather_c, gather_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() { None }
            else if at_root && c.is_inter() { Some(none_of(rt, recvtype)?) }
            else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        let recv = if at_root { Some(cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)?) } else { None };
        Ok(Spec::Gather { send, recv, root })
    })
}

collective! { "blocks of their own sizes and places at the root; `MPI_IN_PLACE` at the root."
    gatherv, igatherv, gatherv_init
    large gatherv_c, igatherv_c, gatherv_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, displs: CommArray<'_, c_int> => CommArray<'_, isize>, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() { None }
            else if at_root && c.is_inter() { Some(none_of(rt, recvtype)?) }
            else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        let recv = if at_root {
            let (n, d) = (per_member(recvcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?);
            Some(blocks(rt, recvbuf, n, d, &[recvtype], false)?)
        } else {
            None
        };
        Ok(Spec::Gatherv { send, recv, root })
    })
}

collective! { "block `i` of the root's buffer to member `i`; `MPI_IN_PLACE` as the root's `recvbuf`."
    scatter, iscatter, scatter_init
    large scatter_c, iscatter_c, scatter_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(recvbuf.input())?; }
        inter_in_place(c, recvbuf.input())?;
        let send = if at_root { Some(cbuf(rt, sendbuf, times(sendcount, c.peer_size())?, sendtype)?) } else { None };
        let recv = if recvbuf.input().is_in_place() { None }
            else if at_root && c.is_inter() { Some(none_of(rt, sendtype)?) }
            else { Some(cbuf(rt, recvbuf, count_arg(recvcount)?, recvtype)?) };
        Ok(Spec::Scatter { send, recv, root })
    })
}

collective! { "blocks of their own sizes and places from the root; `MPI_IN_PLACE` as the root's `recvbuf`."
    scatterv, iscatterv, scatterv_init
    large scatterv_c, iscatterv_c, scatterv_init_c
    (sendbuf: SendBuf, sendcounts: CommArray<'_, c_int> => CommArray<'_, i64>, displs: CommArray<'_, c_int> => CommArray<'_, isize>, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(recvbuf.input())?; }
        inter_in_place(c, recvbuf.input())?;
        let send = if at_root {
            let (n, d) = (per_member(sendcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?);
            Some(blocks(rt, sendbuf, n, d, &[sendtype], false)?)
        } else {
            None
        };
        let recv = if recvbuf.input().is_in_place() { None }
            else if at_root && c.is_inter() { Some(none_of(rt, sendtype)?) }
            else { Some(cbuf(rt, recvbuf, count_arg(recvcount)?, recvtype)?) };
        Ok(Spec::Scatterv { send, recv, root })
    })
}

collective! { "every member's block into every member's buffer; `MPI_IN_PLACE`."
    allgather, iallgather, allgather_init
    large allgather_c, iallgather_c, allgather_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() { None } else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        Ok(Spec::Allgather { send, recv: cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)? })
    })()
}

collective! { "blocks of their own sizes and places at every member; `MPI_IN_PLACE`."
    allgatherv, iallgatherv, allgatherv_init
    large allgatherv_c, iallgatherv_c, allgatherv_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, displs: CommArray<'_, c_int> => CommArray<'_, isize>, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() { None } else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        let (n, d) = (per_member(recvcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?);
        Ok(Spec::Allgatherv { send, recv: blocks(rt, recvbuf, n, d, &[recvtype], false)? })
    })()
}

collective! { "block `j` of member `i` to block `i` of member `j`; `MPI_IN_PLACE`."
    alltoall, ialltoall, alltoall_init
    large alltoall_c, ialltoall_c, alltoall_init_c
    (sendbuf: SendBuf, sendcount: c_int => i64, sendtype: usize, recvbuf: RecvBuf, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() { None } else { Some(cbuf(rt, sendbuf, times(sendcount, c.peer_size())?, sendtype)?) };
        Ok(Spec::Alltoall { send, recv: cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)? })
    })()
}

collective! { "blocks of their own sizes and places both ways; `MPI_IN_PLACE` (the data then comes from `recvbuf`)."
    alltoallv, ialltoallv, alltoallv_init
    large alltoallv_c, ialltoallv_c, alltoallv_init_c
    (sendbuf: SendBuf, sendcounts: CommArray<'_, c_int> => CommArray<'_, i64>, sdispls: CommArray<'_, c_int> => CommArray<'_, isize>, sendtype: usize, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, rdispls: CommArray<'_, c_int> => CommArray<'_, isize>, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() {
            None
        } else {
            let (n, d) = (per_member(sendcounts, c.peer_size(), "count")?, per_member(sdispls, c.peer_size(), "displacement")?);
            Some(blocks(rt, sendbuf, n, d, &[sendtype], false)?)
        };
        let (n, d) = (per_member(recvcounts, c.peer_size(), "count")?, per_member(rdispls, c.peer_size(), "displacement")?);
        Ok(Spec::Alltoallv { send, recv: blocks(rt, recvbuf, n, d, &[recvtype], false)? })
    })()
}

collective! { "as `MPI_Alltoallv` with a datatype per block and displacements in bytes."
    alltoallw, ialltoallw, alltoallw_init
    large alltoallw_c, ialltoallw_c, alltoallw_init_c
    (sendbuf: SendBuf, sendcounts: CommArray<'_, c_int> => CommArray<'_, i64>, sdispls: CommArray<'_, c_int> => CommArray<'_, isize>, sendtypes: CommArray<'_, usize>, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, rdispls: CommArray<'_, c_int> => CommArray<'_, isize>, recvtypes: CommArray<'_, usize>, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if sendbuf.is_in_place() {
            None
        } else {
            let (n, d, t) = (per_member(sendcounts, c.peer_size(), "count")?, per_member(sdispls, c.peer_size(), "displacement")?, types(sendtypes, c)?);
            Some(blocks(rt, sendbuf, n, d, t, true)?)
        };
        let (n, d, t) = (per_member(recvcounts, c.peer_size(), "count")?, per_member(rdispls, c.peer_size(), "displacement")?, types(recvtypes, c)?);
        Ok(Spec::Alltoallv { send, recv: blocks(rt, recvbuf, n, d, t, true)? })
    })()
}

collective! { "the members' buffers reduced into the root's; `MPI_IN_PLACE` at the root."
    reduce, ireduce, reduce_init
    large reduce_c, ireduce_c, reduce_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, count: c_int => i64, datatype: usize, op: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let n = count_arg(count)?;
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        // An intercommunicator's root contributes nothing.
        let send = if sendbuf.is_in_place() || (at_root && c.is_inter()) { None } else { Some(cbuf(rt, sendbuf, n, datatype)?) };
        let recv = if at_root { Some(cbuf(rt, recvbuf, n, datatype)?) } else { None };
        Ok(Spec::Reduce { send, recv, red, root })
    })
}

collective! { "the members' buffers reduced into every member's; `MPI_IN_PLACE`."
    allreduce, iallreduce, allreduce_init
    large allreduce_c, iallreduce_c, allreduce_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let n = count_arg(count)?;
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        let send = if sendbuf.is_in_place() { None } else { Some(cbuf(rt, sendbuf, n, datatype)?) };
        Ok(Spec::Allreduce { send, recv: cbuf(rt, recvbuf, n, datatype)?, red })
    })()
}

collective! { "a reduction whose block `i` goes to member `i`; `MPI_IN_PLACE` (input from `recvbuf`)."
    reduce_scatter_block, ireduce_scatter_block, reduce_scatter_block_init
    large reduce_scatter_block_c, ireduce_scatter_block_c, reduce_scatter_block_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, recvcount: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        inter_in_place(c, sendbuf)?;
        let src = if sendbuf.is_in_place() { recvbuf.input() } else { sendbuf };
        let input = cbuf(rt, src, times(recvcount, c.size())?, datatype)?;
        let recv = cbuf(rt, recvbuf, count_arg(recvcount)?, datatype)?;
        Ok(Spec::ReduceScatter { input, recv, counts: Vec::new(), red, block: true })
    })()
}

collective! { "a reduction whose block `i`, `recvcounts[i]` long, goes to member `i`; `MPI_IN_PLACE`."
    reduce_scatter, ireduce_scatter, reduce_scatter_init
    large reduce_scatter_c, ireduce_scatter_c, reduce_scatter_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, recvcounts: CommArray<'_, c_int> => CommArray<'_, i64>, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        inter_in_place(c, sendbuf)?;
        let n = per_member(recvcounts, c.size(), "count")?;
        let counts = n.iter().map(|&k| count_arg(k)).collect::<Res<Vec<usize>>>()?;
        let total: usize = counts.iter().sum();
        let src = if sendbuf.is_in_place() { recvbuf.input() } else { sendbuf };
        let input = cbuf(rt, src, total, datatype)?;
        let recv = cbuf(rt, recvbuf, counts[c.rank() as usize], datatype)?;
        let bytes = counts.iter().map(|k| k * red.unit).collect();
        Ok(Spec::ReduceScatter { input, recv, counts: bytes, red, block: false })
    })()
}

collective! { "member `i` gets the reduction of members `0..=i`; `MPI_IN_PLACE`."
    scan, iscan, scan_init
    large scan_c, iscan_c, scan_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, _c| scan_spec(rt, sendbuf, recvbuf, count, datatype, op, false)
}

collective! { "member `i > 0` gets the reduction of members `0..i` (member 0's buffer is left as it was); `MPI_IN_PLACE`."
    exscan, iexscan, exscan_init
    large exscan_c, iexscan_c, exscan_init_c
    (sendbuf: SendBuf, recvbuf: RecvBuf, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, _c| scan_spec(rt, sendbuf, recvbuf, count, datatype, op, true)
}

/// The spec of `MPI_Scan` / `MPI_Exscan`.
fn scan_spec(
    rt: &Runtime,
    sendbuf: SendBuf,
    recvbuf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    op: usize,
    exclusive: bool,
) -> Res<Spec> {
    let n = count_arg(count)?;
    let ty = rt.comm_type(datatype)?;
    let red = resolve(rt, op, &ty, datatype)?;
    let send = if sendbuf.is_in_place() {
        None
    } else {
        Some(cbuf(rt, sendbuf, n, datatype)?)
    };
    Ok(Spec::Scan {
        send,
        recv: cbuf(rt, recvbuf, n, datatype)?,
        red,
        exclusive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_member_take_either_width() {
        assert_eq!(times(3 as c_int, 4).unwrap(), 12);
        assert_eq!(times(1i64 << 40, 4).unwrap(), 1 << 42);
        assert_eq!(times(-1i64, 2).unwrap_err().class, MPI_ERR_COUNT);
        assert_eq!(times(i64::MAX, 4).unwrap_err().class, MPI_ERR_COUNT);
    }
}
