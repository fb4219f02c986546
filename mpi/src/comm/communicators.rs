//! Communicators: rank, size, dup (with info, nonblocking), split,
//! split_type, create, create_group, free, compare, names, info.
//!
//! A new communicator inherits its parent's error handler (MPI 4.1 §9.3);
//! a duplicate also gets the attributes the copy callbacks give and the
//! parent's info. ferry's `Hints` carry the one info key that changes
//! behaviour, `mpi_recv_req_may_be_empty`; they are fixed when a
//! communicator is made, so that key is honoured by `MPI_Comm_dup_with_info`
//! and `MPI_Comm_split_type`'s info, and reported (not changed) by
//! `MPI_Comm_set_info` / `MPI_Comm_get_info`.

use std::ffi::c_int;

use ferry::{Comm, Hints, SplitType};

use crate::attr::calls::{copy_all, delete_all};

use crate::abi::class::*;
use crate::abi::*;
use crate::comm::group::group_of;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, TextOut};
use crate::info::Info;
use crate::state::{lock, rt, CommObj, Runtime};

/// The info key of the `REQUEST_EMPTY` proposal.
pub(crate) const RECV_MAY_BE_EMPTY: &str = "mpi_recv_req_may_be_empty";

/// The hints an info object asks for, starting from `base`.
pub(crate) fn hints_of(info: &Info, base: Hints) -> Hints {
    let mut h = base;
    if let Some(v) = info.get(RECV_MAY_BE_EMPTY) {
        h.recv_may_be_empty = v.trim().eq_ignore_ascii_case("true");
    }
    h
}

/// Stores a communicator made from `parent`; its handle.
pub(super) fn store(
    rt: &Runtime,
    parent: &CommObj,
    comm: Comm,
    attrs: Vec<(c_int, usize)>,
    info: Option<Info>,
) -> Res<usize> {
    let obj = CommObj::new(comm, "", lock(&parent.meta).errh.clone());
    {
        let mut m = lock(&obj.meta);
        m.attrs = attrs;
        m.info = info.unwrap_or_default();
    }
    rt.add_comm(obj)
}

/// Stores a communicator made from `parent` with no attributes or info
/// of its own; its handle.
pub(crate) fn store_new(rt: &Runtime, parent: &CommObj, comm: Comm) -> Res<usize> {
    store(rt, parent, comm, Vec::new(), None)
}

/// Stores an optional new communicator (`MPI_COMM_NULL` for `None`) and
/// writes its handle.
fn store_opt(rt: &Runtime, parent: &CommObj, comm: Option<Comm>, out: &mut Out<'_, usize>) -> Res {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    let h = match comm {
        Some(c) => store(rt, parent, c, Vec::new(), None)?,
        None => MPI_COMM_NULL,
    };
    out.set(h)
}

/// `MPI_Comm_rank`.
pub(crate) fn comm_rank(comm: usize, mut rank: Out<'_, c_int>) -> Res {
    let r = rt()?.comm(comm)?.comm.rank();
    rank.set(r)
}

/// `MPI_Comm_size`.
pub(crate) fn comm_size(comm: usize, mut size: Out<'_, c_int>) -> Res {
    let s = rt()?.comm(comm)?.comm.size();
    size.set(c_int::try_from(s).unwrap_or(c_int::MAX))
}

/// `MPI_Comm_dup` and `MPI_Comm_dup_with_info` (`info` `Some`).
fn dup(comm: usize, info: Option<usize>, newcomm: &mut Out<'_, usize>) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(comm)?;
    if newcomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    let info = match info {
        Some(MPI_INFO_NULL) => Info::default(),
        Some(h) => crate::info::calls::read(h)?,
        None => lock(&c.meta).info.clone(),
    };
    let attrs = copy_all(rt, comm, &c)?;
    let new = c.comm.dup_with_hints(hints_of(&info, c.comm.hints()))?;
    let h = store(rt, &c, new, attrs, Some(info))?;
    // A duplicate has its parent's topology (MPI 4.1 §8.4).
    lock(&rt.comm(h)?.meta).topo = lock(&c.meta).topo.clone();
    newcomm.set(h)
}

/// `MPI_Comm_dup`: collective; the copy has the error handler, the
/// info and the copied attributes, not the name.
pub(crate) fn comm_dup(comm: usize, mut newcomm: Out<'_, usize>) -> Res {
    dup(comm, None, &mut newcomm)
}

/// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup` with the given hints
/// (`mpi_recv_req_may_be_empty` among them).
pub(crate) fn comm_dup_with_info(comm: usize, info: usize, mut newcomm: Out<'_, usize>) -> Res {
    dup(comm, Some(info), &mut newcomm)
}

/// `MPI_Comm_split`: collective; `MPI_UNDEFINED` as the color gives
/// `MPI_COMM_NULL`.
pub(crate) fn comm_split(
    comm: usize,
    color: c_int,
    key: c_int,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    if color < 0 && color != MPI_UNDEFINED {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)"),
        ));
    }
    let color = if color == MPI_UNDEFINED {
        ferry::UNDEFINED
    } else {
        color
    };
    let new = c.comm.split(color, key)?;
    store_opt(rt, &c, new, &mut newcomm)
}

/// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes
/// of a node; `MPI_COMM_TYPE_HW_GUIDED` with `mpi_hw_resource_type` =
/// `mpi_shared_memory` likewise (another resource type gives
/// `MPI_COMM_NULL`); `MPI_COMM_TYPE_HW_UNGUIDED` splits by node when
/// the communicator spans several and gives `MPI_COMM_NULL` otherwise
/// (a node is the only level ferry knows); `MPI_UNDEFINED` gives
/// `MPI_COMM_NULL`. `MPI_COMM_TYPE_RESOURCE_GUIDED` is
/// `MPI_ERR_UNSUPPORTED_OPERATION`.
pub(crate) fn comm_split_type(
    comm: usize,
    split_type: c_int,
    key: c_int,
    info: usize,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let info = if info == MPI_INFO_NULL {
        Info::default()
    } else {
        crate::info::calls::read(info)?
    };
    let node = |c: &Comm| c.split_type(SplitType::Shared, key);
    // Every member takes part in the same split (ferry's split_type is
    // a split by node), whatever type it asked for.
    let new = match split_type {
        MPI_UNDEFINED => c.comm.split(ferry::UNDEFINED, key)?,
        MPI_COMM_TYPE_SHARED => node(&c.comm)?,
        MPI_COMM_TYPE_HW_GUIDED => {
            let shared = info.get("mpi_hw_resource_type") == Some("mpi_shared_memory");
            if shared {
                node(&c.comm)?
            } else {
                c.comm.split(ferry::UNDEFINED, key)?
            }
        }
        MPI_COMM_TYPE_HW_UNGUIDED => node(&c.comm)?.filter(|n| n.size() < c.comm.size()),
        MPI_COMM_TYPE_RESOURCE_GUIDED => {
            return Err(Fail::new(
                MPI_ERR_UNSUPPORTED_OPERATION,
                "MPI_COMM_TYPE_RESOURCE_GUIDED is not supported",
            ))
        }
        t => return Err(Fail::msg(MPI_ERR_ARG, format!("invalid split type {t}"))),
    };
    let new = match new {
        Some(n) if hints_of(&info, n.hints()) != n.hints() => {
            Some(n.dup_with_hints(hints_of(&info, n.hints()))?)
        }
        n => n,
    };
    store_opt(rt, &c, new, &mut newcomm)
}

/// `MPI_Comm_create`: collective over `comm`; `MPI_COMM_NULL` where
/// the process is not in `group`.
pub(crate) fn comm_create(comm: usize, group: usize, mut newcomm: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let g = group_of(rt, group)?;
    let new = c.comm.create(&g)?;
    store_opt(rt, &c, new, &mut newcomm)
}

/// `MPI_Comm_create_group`: collective over `group`'s members only
/// (ferry's `create_group`); `tag` tells apart concurrent calls whose
/// groups overlap.
pub(crate) fn comm_create_group(
    comm: usize,
    group: usize,
    tag: c_int,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let g = group_of(rt, group)?;
    if tag < 0 {
        return Err(Fail::msg(MPI_ERR_TAG, format!("invalid tag {tag}")));
    }
    if g.rank().is_none() {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            "MPI_Comm_create_group called by a process outside the group",
        ));
    }
    let new = Some(c.comm.create_group(&g, tag)?);
    store_opt(rt, &c, new, &mut newcomm)
}

/// `MPI_Comm_free`: the attributes' delete callbacks run first; the
/// handle becomes `MPI_COMM_NULL`. Operations in flight on it go on
/// (ferry keeps the communicator while its requests live).
pub(crate) fn comm_free(mut comm: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let h = comm.get()?;
    match h {
        MPI_COMM_WORLD | MPI_COMM_SELF => {
            return Err(Fail::new(
                MPI_ERR_COMM,
                "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
            )
            .on(h))
        }
        MPI_COMM_NULL => return Err(Fail::new(MPI_ERR_COMM, "MPI_COMM_NULL cannot be freed")),
        _ => {}
    }
    let c = rt.comm_arc(h)?;
    delete_all(rt, h, &c).map_err(|f| f.on(h))?;
    // A buffer attached to it is flushed and detached (MPI 4.1).
    crate::state::comm_freed(&c.comm);
    let obj = rt
        .comms
        .with(|t| t.remove(h))?
        .map_err(|b| Fail::handle(MPI_ERR_COMM, b, "communicator"))?;
    drop((obj, c));
    comm.set(MPI_COMM_NULL)
}

/// `MPI_Comm_compare`.
pub(crate) fn comm_compare(comm1: usize, comm2: usize, mut result: Out<'_, c_int>) -> Res {
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
    result.set(r)
}

/// `MPI_Comm_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1`
/// bytes are cut.
pub(crate) fn comm_set_name(comm: usize, comm_name: &str) -> Res {
    let c = rt()?.comm(comm)?;
    let name = comm_name;
    let mut end = name.len().min(MPI_MAX_OBJECT_NAME - 1);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    lock(&c.meta).name = name[..end].to_owned();
    Ok(())
}

/// `MPI_Comm_get_name`: an empty string for an unnamed communicator;
/// `"MPI_COMM_NULL"` for `MPI_COMM_NULL` (MPI 4.1).
pub(crate) fn comm_get_name(
    comm: usize,
    mut comm_name: TextOut<'_>,
    mut resultlen: Out<'_, c_int>,
) -> Res {
    let name = if comm == MPI_COMM_NULL {
        rt()?;
        "MPI_COMM_NULL".to_owned()
    } else {
        let c = rt()?.comm(comm)?;
        let n = lock(&c.meta).name.clone();
        n
    };
    comm_name.set(&name, Some(&mut resultlen))
}

/// `MPI_Comm_set_info`: the hints are kept (and reported by
/// `MPI_Comm_get_info`); `mpi_recv_req_may_be_empty` cannot change on a
/// communicator that exists, so it keeps the value in force.
pub(crate) fn comm_set_info(comm: usize, info: usize) -> Res {
    let c = rt()?.comm(comm)?;
    let i = if info == MPI_INFO_NULL {
        Info::default()
    } else {
        crate::info::calls::read(info)?
    };
    lock(&c.meta).info = i;
    Ok(())
}

/// `MPI_Comm_get_info`: a new info object with the hints set, and
/// `mpi_recv_req_may_be_empty` as it is in force.
pub(crate) fn comm_get_info(comm: usize, mut info_used: Out<'_, usize>) -> Res {
    let c = rt()?.comm(comm)?;
    if info_used.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let mut i = lock(&c.meta).info.clone();
    let empty_ok = c.comm.hints().recv_may_be_empty;
    i.set(RECV_MAY_BE_EMPTY, if empty_ok { "true" } else { "false" })?;
    let h = crate::info::calls::insert(i)?;
    info_used.set(h)
}
