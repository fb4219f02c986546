//! The collective functions: each collective's arguments are parsed into a
//! [`Spec`] once, and [`collective!`] defines its three forms on it:
//! `MPI_X` (blocking), `MPI_IX` (nonblocking, one more `MPI_Request *`) and
//! `MPI_X_init` (persistent, `MPI_Info` and `MPI_Request *` more).
//!
//! Arguments that matter only at the root are only read there (a
//! non-root may pass anything for them, as the standard allows).

use std::ffi::{c_int, c_void};

use ferry::Comm;

use super::reduction::resolve;
use super::spec::{Deferred, Spec};
use super::{in_place, CBuf};
use crate::abi::class::*;
use crate::abi::MPI_INFO_NULL;
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::persist::{create, Kind};
use crate::ffi::req::ReqObj;
use crate::ffi::{mpi_fn, put};
use crate::state::{rt, Runtime};

/// Defines `MPI_X`, `MPI_IX` and `MPI_X_init` (and their `PMPI_`
/// names) from one parser `|rt, c| -> Res<Spec>` over the shared arguments;
/// with `large`, also their `_c` forms from the same parser, each argument
/// written `name: int type => large type` taking its large type there
/// (`MPI_Count` counts, `MPI_Aint` displacements: the parser's helpers take
/// either width, and the spec holds `usize` counts).
macro_rules! collective {
    ($doc:literal $name:ident / $pname:ident, $iname:ident / $piname:ident, $init:ident / $pinit:ident
     large $cname:ident / $pcname:ident, $ciname:ident / $pciname:ident, $cinit:ident / $pcinit:ident
     ($($arg:ident : $ty:ty $(=> $lty:ty)?),* $(,)?) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        collective!(@forms $doc, $name / $pname, $iname / $piname, $init / $pinit
            ($($arg: $ty),*) [$comm] |$rt, $c| $parse);
        collective!(@forms concat!("`", stringify!($name), "` with `MPI_Count` counts (and `MPI_Aint` displacements)."),
            $cname / $pcname, $ciname / $pciname, $cinit / $pcinit
            ($($arg: large_ty!($ty $(=> $lty)?)),*) [$comm] |$rt, $c| $parse);
    };
    ($doc:literal $name:ident / $pname:ident, $iname:ident / $piname:ident, $init:ident / $pinit:ident
     ($($arg:ident : $ty:ty),* $(,)?) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        collective!(@forms $doc, $name / $pname, $iname / $piname, $init / $pinit
            ($($arg: $ty),*) [$comm] |$rt, $c| $parse);
    };
    (@forms $doc:expr, $name:ident / $pname:ident, $iname:ident / $piname:ident, $init:ident / $pinit:ident
     ($($arg:ident : $ty:ty),*) [$comm:ident] |$rt:ident, $c:ident| $parse:expr) => {
        mpi_fn! {
            #[doc = concat!("`", stringify!($name), "`: ", $doc)]
            $name / $pname [$comm] ($($arg: $ty),*) {
                let $rt: &Runtime = rt()?;
                let held = $rt.comm($comm)?;
                let $c: &Comm = &held.comm;
                let spec: Spec = $parse?;
                // SAFETY: the program's buffers, valid for this blocking call.
                unsafe { spec.run($c) }
            }
        }
        mpi_fn! {
            #[doc = concat!("`", stringify!($iname), "`: the nonblocking form; the result is copied out when the request completes.")]
            $iname / $piname [$comm] ($($arg: $ty),*, request: *mut usize) {
                let $rt: &Runtime = rt()?;
                let held = $rt.comm($comm)?;
                let $c: &Comm = &held.comm;
                if request.is_null() {
                    return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
                }
                let spec: Spec = $parse?;
                // SAFETY: MPI's rule for nonblocking collectives' buffers
                // (for the start, and for a result copied out at once).
                let h = unsafe {
                    let (req, post) = spec.start($c)?;
                    crate::ffi::mpix::empty_or_store(ReqObj::active(req, $comm, post))?
                };
                // SAFETY: checked non-null; an out-argument.
                unsafe { put(request, h) }
            }
        }
        mpi_fn! {
            #[doc = concat!("`", stringify!($init), "`: the persistent form (MPI 4.0); each `MPI_Start` runs it anew on the buffers' current contents.")]
            $init / $pinit [$comm] ($($arg: $ty),*, info: usize, request: *mut usize) {
                let $rt: &Runtime = rt()?;
                let held = $rt.comm($comm)?;
                let $c: &Comm = &held.comm;
                if info != MPI_INFO_NULL {
                    crate::ffi::info::check(info)?;
                }
                let spec: Spec = $parse?;
                // SAFETY: out-argument; the buffers are the program's, used
                // at each start.
                unsafe { create($comm, $c.clone(), Kind::Coll(Box::new(Deferred(spec))), request) }
            }
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

/// A buffer argument (the datatype must be committed).
fn cbuf(rt: &Runtime, addr: *const c_void, count: usize, datatype: usize) -> Res<CBuf> {
    Ok(CBuf {
        addr: addr as usize,
        count,
        ty: rt.comm_type(datatype)?,
    })
}

/// `count` elements per member, for `n` members (`c.peer_size()` for a
/// block per rank the call's ranks name: the remote group's on an
/// intercommunicator; `c.size()` for one per local member).
fn times(count: impl Into<i64>, n: u32) -> Res<usize> {
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
fn inter_in_place(c: &Comm, p: *const c_void) -> Res {
    if c.is_inter() && in_place(p) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "MPI_IN_PLACE is not valid on an intercommunicator",
        ));
    }
    Ok(())
}

/// An empty buffer: an intercommunicator root's unused side.
fn none_of(rt: &Runtime, datatype: usize) -> Res<CBuf> {
    cbuf(rt, std::ptr::null(), 0, datatype)
}

/// `MPI_IN_PLACE` where only the root may pass it.
fn not_in_place(p: *const c_void) -> Res {
    if in_place(p) {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE is only valid at the root here",
        ));
    }
    Ok(())
}

/// One entry per member of `n` (see [`times`]): an `int`, or a `_c`
/// form's `MPI_Count` or `MPI_Aint`.
///
/// # Safety
/// `p` is null or valid for `n` entries.
unsafe fn per_member<'a, T>(p: *const T, n: u32, what: &'static str) -> Res<&'a [T]> {
    let n = n as usize;
    if p.is_null() {
        return Err(Fail::msg(MPI_ERR_ARG, format!("a null {what} array")));
    }
    // SAFETY: valid for one int per member (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The blocks of a v-variant: `counts[i]` elements at `base` plus
/// `displs[i]` extents (`bytes`: plus `displs[i]` bytes), of `types[i]`
/// (`int`s, or a `_c` form's `MPI_Count`s and `MPI_Aint`s).
fn blocks<C: Copy + Into<i64>, D: Copy + TryInto<isize>>(
    rt: &Runtime,
    base: *const c_void,
    counts: &[C],
    displs: &[D],
    types: &[usize],
    bytes: bool,
) -> Res<Vec<CBuf>> {
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
        out.push(CBuf {
            addr: (base as usize).wrapping_add_signed(off),
            count: count_arg(n)?,
            ty,
        });
    }
    Ok(out)
}

/// A datatype array of one per rank the call's ranks name.
///
/// # Safety
/// `p` is null or valid for `c.peer_size()` handles.
unsafe fn types<'a>(p: *const usize, c: &Comm) -> Res<&'a [usize]> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null datatype array"));
    }
    // SAFETY: valid for one handle per member (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, c.peer_size() as usize) })
}

collective! { "waits until every member has entered."
    MPI_Barrier / PMPI_Barrier, MPI_Ibarrier / PMPI_Ibarrier, MPI_Barrier_init / PMPI_Barrier_init
    (comm: usize) [comm]
    |_rt, _c| Ok::<Spec, Fail>(Spec::Barrier)
}

collective! { "the root's buffer to every member."
    MPI_Bcast / PMPI_Bcast, MPI_Ibcast / PMPI_Ibcast, MPI_Bcast_init / PMPI_Bcast_init
    large MPI_Bcast_c / PMPI_Bcast_c, MPI_Ibcast_c / PMPI_Ibcast_c, MPI_Bcast_init_c / PMPI_Bcast_init_c
    (buffer: *mut c_void, count: c_int => i64, datatype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        if part == Part::Idle { return Ok(Spec::Idle); }
        Ok(Spec::Bcast { buf: cbuf(rt, buffer, count_arg(count)?, datatype)?, root })
    })
}

collective! { "every member's block into the root's buffer, by rank; `MPI_IN_PLACE` at the root."
    MPI_Gather / PMPI_Gather, MPI_Igather / PMPI_Igather, MPI_Gather_init / PMPI_Gather_init
    large MPI_Gather_c / PMPI_Gather_c, MPI_Igather_c / PMPI_Igather_c, MPI_Gather_init_c / PMPI_Gather_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) { None }
            else if at_root && c.is_inter() { Some(none_of(rt, recvtype)?) }
            else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        let recv = if at_root { Some(cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)?) } else { None };
        Ok(Spec::Gather { send, recv, root })
    })
}

collective! { "blocks of their own sizes and places at the root; `MPI_IN_PLACE` at the root."
    MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv, MPI_Gatherv_init / PMPI_Gatherv_init
    large MPI_Gatherv_c / PMPI_Gatherv_c, MPI_Igatherv_c / PMPI_Igatherv_c, MPI_Gatherv_init_c / PMPI_Gatherv_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const c_int => *const i64, displs: *const c_int => *const isize, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) { None }
            else if at_root && c.is_inter() { Some(none_of(rt, recvtype)?) }
            else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        let recv = if at_root {
            // SAFETY: the root's arrays of one entry per member.
            let (n, d) = unsafe { (per_member(recvcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?) };
            Some(blocks(rt, recvbuf, n, d, &[recvtype], false)?)
        } else {
            None
        };
        Ok(Spec::Gatherv { send, recv, root })
    })
}

collective! { "block `i` of the root's buffer to member `i`; `MPI_IN_PLACE` as the root's `recvbuf`."
    MPI_Scatter / PMPI_Scatter, MPI_Iscatter / PMPI_Iscatter, MPI_Scatter_init / PMPI_Scatter_init
    large MPI_Scatter_c / PMPI_Scatter_c, MPI_Iscatter_c / PMPI_Iscatter_c, MPI_Scatter_init_c / PMPI_Scatter_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(recvbuf)?; }
        inter_in_place(c, recvbuf)?;
        let send = if at_root { Some(cbuf(rt, sendbuf, times(sendcount, c.peer_size())?, sendtype)?) } else { None };
        let recv = if in_place(recvbuf) { None }
            else if at_root && c.is_inter() { Some(none_of(rt, sendtype)?) }
            else { Some(cbuf(rt, recvbuf, count_arg(recvcount)?, recvtype)?) };
        Ok(Spec::Scatter { send, recv, root })
    })
}

collective! { "blocks of their own sizes and places from the root; `MPI_IN_PLACE` as the root's `recvbuf`."
    MPI_Scatterv / PMPI_Scatterv, MPI_Iscatterv / PMPI_Iscatterv, MPI_Scatterv_init / PMPI_Scatterv_init
    large MPI_Scatterv_c / PMPI_Scatterv_c, MPI_Iscatterv_c / PMPI_Iscatterv_c, MPI_Scatterv_init_c / PMPI_Scatterv_init_c
    (sendbuf: *const c_void, sendcounts: *const c_int => *const i64, displs: *const c_int => *const isize, sendtype: usize, recvbuf: *mut c_void, recvcount: c_int => i64, recvtype: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(recvbuf)?; }
        inter_in_place(c, recvbuf)?;
        let send = if at_root {
            // SAFETY: the root's arrays of one entry per member.
            let (n, d) = unsafe { (per_member(sendcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?) };
            Some(blocks(rt, sendbuf, n, d, &[sendtype], false)?)
        } else {
            None
        };
        let recv = if in_place(recvbuf) { None }
            else if at_root && c.is_inter() { Some(none_of(rt, sendtype)?) }
            else { Some(cbuf(rt, recvbuf, count_arg(recvcount)?, recvtype)?) };
        Ok(Spec::Scatterv { send, recv, root })
    })
}

collective! { "every member's block into every member's buffer; `MPI_IN_PLACE`."
    MPI_Allgather / PMPI_Allgather, MPI_Iallgather / PMPI_Iallgather, MPI_Allgather_init / PMPI_Allgather_init
    large MPI_Allgather_c / PMPI_Allgather_c, MPI_Iallgather_c / PMPI_Iallgather_c, MPI_Allgather_init_c / PMPI_Allgather_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) { None } else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        Ok(Spec::Allgather { send, recv: cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)? })
    })()
}

collective! { "blocks of their own sizes and places at every member; `MPI_IN_PLACE`."
    MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv, MPI_Allgatherv_init / PMPI_Allgatherv_init
    large MPI_Allgatherv_c / PMPI_Allgatherv_c, MPI_Iallgatherv_c / PMPI_Iallgatherv_c, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const c_int => *const i64, displs: *const c_int => *const isize, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) { None } else { Some(cbuf(rt, sendbuf, count_arg(sendcount)?, sendtype)?) };
        // SAFETY: arrays of one entry per member.
        let (n, d) = unsafe { (per_member(recvcounts, c.peer_size(), "count")?, per_member(displs, c.peer_size(), "displacement")?) };
        Ok(Spec::Allgatherv { send, recv: blocks(rt, recvbuf, n, d, &[recvtype], false)? })
    })()
}

collective! { "block `j` of member `i` to block `i` of member `j`; `MPI_IN_PLACE`."
    MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall, MPI_Alltoall_init / PMPI_Alltoall_init
    large MPI_Alltoall_c / PMPI_Alltoall_c, MPI_Ialltoall_c / PMPI_Ialltoall_c, MPI_Alltoall_init_c / PMPI_Alltoall_init_c
    (sendbuf: *const c_void, sendcount: c_int => i64, sendtype: usize, recvbuf: *mut c_void, recvcount: c_int => i64, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) { None } else { Some(cbuf(rt, sendbuf, times(sendcount, c.peer_size())?, sendtype)?) };
        Ok(Spec::Alltoall { send, recv: cbuf(rt, recvbuf, times(recvcount, c.peer_size())?, recvtype)? })
    })()
}

collective! { "blocks of their own sizes and places both ways; `MPI_IN_PLACE` (the data then comes from `recvbuf`)."
    MPI_Alltoallv / PMPI_Alltoallv, MPI_Ialltoallv / PMPI_Ialltoallv, MPI_Alltoallv_init / PMPI_Alltoallv_init
    large MPI_Alltoallv_c / PMPI_Alltoallv_c, MPI_Ialltoallv_c / PMPI_Ialltoallv_c, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c
    (sendbuf: *const c_void, sendcounts: *const c_int => *const i64, sdispls: *const c_int => *const isize, sendtype: usize, recvbuf: *mut c_void, recvcounts: *const c_int => *const i64, rdispls: *const c_int => *const isize, recvtype: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: arrays of one entry per member.
            let (n, d) = unsafe { (per_member(sendcounts, c.peer_size(), "count")?, per_member(sdispls, c.peer_size(), "displacement")?) };
            Some(blocks(rt, sendbuf, n, d, &[sendtype], false)?)
        };
        // SAFETY: as above.
        let (n, d) = unsafe { (per_member(recvcounts, c.peer_size(), "count")?, per_member(rdispls, c.peer_size(), "displacement")?) };
        Ok(Spec::Alltoallv { send, recv: blocks(rt, recvbuf, n, d, &[recvtype], false)? })
    })()
}

collective! { "as `MPI_Alltoallv` with a datatype per block and displacements in bytes."
    MPI_Alltoallw / PMPI_Alltoallw, MPI_Ialltoallw / PMPI_Ialltoallw, MPI_Alltoallw_init / PMPI_Alltoallw_init
    large MPI_Alltoallw_c / PMPI_Alltoallw_c, MPI_Ialltoallw_c / PMPI_Ialltoallw_c, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c
    (sendbuf: *const c_void, sendcounts: *const c_int => *const i64, sdispls: *const c_int => *const isize, sendtypes: *const usize, recvbuf: *mut c_void, recvcounts: *const c_int => *const i64, rdispls: *const c_int => *const isize, recvtypes: *const usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: arrays of one entry per member.
            let (n, d, t) = unsafe { (per_member(sendcounts, c.peer_size(), "count")?, per_member(sdispls, c.peer_size(), "displacement")?, types(sendtypes, c)?) };
            Some(blocks(rt, sendbuf, n, d, t, true)?)
        };
        // SAFETY: as above.
        let (n, d, t) = unsafe { (per_member(recvcounts, c.peer_size(), "count")?, per_member(rdispls, c.peer_size(), "displacement")?, types(recvtypes, c)?) };
        Ok(Spec::Alltoallv { send, recv: blocks(rt, recvbuf, n, d, t, true)? })
    })()
}

collective! { "the members' buffers reduced into the root's; `MPI_IN_PLACE` at the root."
    MPI_Reduce / PMPI_Reduce, MPI_Ireduce / PMPI_Ireduce, MPI_Reduce_init / PMPI_Reduce_init
    large MPI_Reduce_c / PMPI_Reduce_c, MPI_Ireduce_c / PMPI_Ireduce_c, MPI_Reduce_init_c / PMPI_Reduce_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int => i64, datatype: usize, op: usize, root: c_int, comm: usize) [comm]
    |rt, c| root_of(root, c).and_then(|(part, root)| {
        let at_root = part == Part::Root;
        if part == Part::Idle { return Ok(Spec::Idle); }
        if !at_root { not_in_place(sendbuf)?; }
        inter_in_place(c, sendbuf)?;
        let n = count_arg(count)?;
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        // An intercommunicator's root contributes nothing.
        let send = if in_place(sendbuf) || (at_root && c.is_inter()) { None } else { Some(cbuf(rt, sendbuf, n, datatype)?) };
        let recv = if at_root { Some(cbuf(rt, recvbuf, n, datatype)?) } else { None };
        Ok(Spec::Reduce { send, recv, red, root })
    })
}

collective! { "the members' buffers reduced into every member's; `MPI_IN_PLACE`."
    MPI_Allreduce / PMPI_Allreduce, MPI_Iallreduce / PMPI_Iallreduce, MPI_Allreduce_init / PMPI_Allreduce_init
    large MPI_Allreduce_c / PMPI_Allreduce_c, MPI_Iallreduce_c / PMPI_Iallreduce_c, MPI_Allreduce_init_c / PMPI_Allreduce_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        inter_in_place(c, sendbuf)?;
        let n = count_arg(count)?;
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        let send = if in_place(sendbuf) { None } else { Some(cbuf(rt, sendbuf, n, datatype)?) };
        Ok(Spec::Allreduce { send, recv: cbuf(rt, recvbuf, n, datatype)?, red })
    })()
}

collective! { "a reduction whose block `i` goes to member `i`; `MPI_IN_PLACE` (input from `recvbuf`)."
    MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init
    large MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        inter_in_place(c, sendbuf)?;
        let src = if in_place(sendbuf) { recvbuf.cast_const() } else { sendbuf };
        let input = cbuf(rt, src, times(recvcount, c.size())?, datatype)?;
        let recv = cbuf(rt, recvbuf, count_arg(recvcount)?, datatype)?;
        Ok(Spec::ReduceScatter { input, recv, counts: Vec::new(), red, block: true })
    })()
}

collective! { "a reduction whose block `i`, `recvcounts[i]` long, goes to member `i`; `MPI_IN_PLACE`."
    MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Ireduce_scatter / PMPI_Ireduce_scatter, MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init
    large MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c, MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int => *const i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, c| (|| -> Res<Spec> {
        let ty = rt.comm_type(datatype)?;
        let red = resolve(rt, op, &ty, datatype)?;
        inter_in_place(c, sendbuf)?;
        // SAFETY: an array of one entry per local member.
        let n = unsafe { per_member(recvcounts, c.size(), "count")? };
        let counts = n.iter().map(|&k| count_arg(k)).collect::<Res<Vec<usize>>>()?;
        let total: usize = counts.iter().sum();
        let src = if in_place(sendbuf) { recvbuf.cast_const() } else { sendbuf };
        let input = cbuf(rt, src, total, datatype)?;
        let recv = cbuf(rt, recvbuf, counts[c.rank() as usize], datatype)?;
        let bytes = counts.iter().map(|k| k * red.unit).collect();
        Ok(Spec::ReduceScatter { input, recv, counts: bytes, red, block: false })
    })()
}

collective! { "member `i` gets the reduction of members `0..=i`; `MPI_IN_PLACE`."
    MPI_Scan / PMPI_Scan, MPI_Iscan / PMPI_Iscan, MPI_Scan_init / PMPI_Scan_init
    large MPI_Scan_c / PMPI_Scan_c, MPI_Iscan_c / PMPI_Iscan_c, MPI_Scan_init_c / PMPI_Scan_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, _c| scan(rt, sendbuf, recvbuf, count, datatype, op, false)
}

collective! { "member `i > 0` gets the reduction of members `0..i` (member 0's buffer is left as it was); `MPI_IN_PLACE`."
    MPI_Exscan / PMPI_Exscan, MPI_Iexscan / PMPI_Iexscan, MPI_Exscan_init / PMPI_Exscan_init
    large MPI_Exscan_c / PMPI_Exscan_c, MPI_Iexscan_c / PMPI_Iexscan_c, MPI_Exscan_init_c / PMPI_Exscan_init_c
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int => i64, datatype: usize, op: usize, comm: usize) [comm]
    |rt, _c| scan(rt, sendbuf, recvbuf, count, datatype, op, true)
}

/// The spec of `MPI_Scan` / `MPI_Exscan`.
fn scan(
    rt: &Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Into<i64>,
    datatype: usize,
    op: usize,
    exclusive: bool,
) -> Res<Spec> {
    let n = count_arg(count)?;
    let ty = rt.comm_type(datatype)?;
    let red = resolve(rt, op, &ty, datatype)?;
    let send = if in_place(sendbuf) {
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
