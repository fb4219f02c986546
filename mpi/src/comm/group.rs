//! Groups: `MPI_Comm_group`, `MPI_Group_size`, `rank`,
//! `translate_ranks`, `compare`, `union`, `intersection`, `difference`,
//! `incl`, `excl`, `range_incl`, `range_excl`, `free`, and
//! `MPI_GROUP_EMPTY`. A group is ferry's `Group` (an `Arc` inside) in the
//! group table; a new group with no members is `MPI_GROUP_EMPTY`.

use std::ffi::c_int;

use ferry::{Group, GroupCompare};

use crate::ffi::args::{Out, OutSlice};

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::state::{rt, Runtime};

/// The group `handle` names.
///
/// # Errors
/// `MPI_ERR_GROUP` for `MPI_GROUP_NULL`, a freed or a foreign handle.
pub(crate) fn group_of(rt: &Runtime, handle: usize) -> Res<Group> {
    match handle {
        MPI_GROUP_EMPTY => Ok(Group::empty()),
        MPI_GROUP_NULL => Err(Fail::new(MPI_ERR_GROUP, "MPI_GROUP_NULL passed as a group")),
        h => rt
            .groups
            .with(|t| t.get(h).cloned())?
            .map_err(|b| Fail::handle(MPI_ERR_GROUP, b, "group")),
    }
}

/// Stores `g` (an empty one as `MPI_GROUP_EMPTY`) and writes its handle.
///
/// # Errors
/// `MPI_ERR_ARG` for a null `out`; `MPI_ERR_INTERN` for a full table.
pub(crate) fn store(rt: &Runtime, g: Group, out: &mut Out<'_, usize>) -> Res {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null group pointer"));
    }
    let h = if g.size() == 0 {
        MPI_GROUP_EMPTY
    } else {
        rt.groups
            .with(|t| t.insert(g))?
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many groups"))?
    };
    out.set(h)
}

/// A rank count argument.
fn count(n: c_int) -> Res {
    if n < 0 {
        return Err(Fail::msg(MPI_ERR_ARG, format!("invalid count {n}")));
    }
    Ok(())
}

/// Ferry's group errors (a rank outside the group, a rank listed twice)
/// are `MPI_ERR_RANK` / `MPI_ERR_ARG` as the standard has them.
fn group_error(e: ferry::Error) -> Fail {
    let mut f = Fail::from(e);
    if f.class == MPI_ERR_GROUP {
        f.class = MPI_ERR_ARG;
    }
    f
}

/// `MPI_Comm_group`.
pub(crate) fn comm_group(comm: usize, mut group: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let g = rt.comm(comm)?.comm.group();
    store(rt, g, &mut group)
}

/// `MPI_Group_size`.
pub(crate) fn group_size(group: usize, mut size: Out<'_, c_int>) -> Res {
    let g = group_of(rt()?, group)?;
    size.set(g.size() as c_int)
}

/// `MPI_Group_rank`: `MPI_UNDEFINED` if this process is not a member.
pub(crate) fn group_rank(group: usize, mut rank: Out<'_, c_int>) -> Res {
    let g = group_of(rt()?, group)?;
    rank.set(g.rank().unwrap_or(MPI_UNDEFINED))
}

/// `MPI_Group_translate_ranks`: `MPI_UNDEFINED` for a process not in
/// `group2`, `MPI_PROC_NULL` for `MPI_PROC_NULL`.
pub(crate) fn group_translate_ranks(
    group1: usize,
    n: c_int,
    ranks1: &[c_int],
    group2: usize,
    mut ranks2: OutSlice<'_, c_int>,
) -> Res {
    let rt = rt()?;
    count(n)?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    let ferry_ranks: Vec<c_int> = ranks1
        .iter()
        .map(|&r| {
            if r == MPI_PROC_NULL {
                ferry::PROC_NULL
            } else {
                r
            }
        })
        .collect();
    let out = a.translate_ranks(&ferry_ranks, &b).map_err(|e| {
        let mut f = Fail::from(e);
        f.class = MPI_ERR_RANK;
        f
    })?;
    for (i, (r, t)) in ranks1.iter().zip(out).enumerate() {
        let v = match t {
            _ if *r == MPI_PROC_NULL => MPI_PROC_NULL,
            Some(t) => t,
            None => MPI_UNDEFINED,
        };
        ranks2.set(i, v);
    }
    Ok(())
}

/// `MPI_Group_compare`: `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
pub(crate) fn group_compare(group1: usize, group2: usize, mut result: Out<'_, c_int>) -> Res {
    let rt = rt()?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    let r = match a.compare(&b) {
        GroupCompare::Ident => MPI_IDENT,
        GroupCompare::Similar => MPI_SIMILAR,
        _ => MPI_UNEQUAL,
    };
    result.set(r)
}

/// The body of the two-group set operations.
fn set_op(
    group1: usize,
    group2: usize,
    mut out: Out<'_, usize>,
    op: fn(&Group, &Group) -> Group,
) -> Res {
    let rt = rt()?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    store(rt, op(&a, &b), &mut out)
}

/// `MPI_Group_union`: `group1`'s members, then `group2`'s others.
pub(crate) fn group_union(group1: usize, group2: usize, newgroup: Out<'_, usize>) -> Res {
    set_op(group1, group2, newgroup, Group::union)
}

/// `MPI_Group_intersection`: in `group1`'s order.
pub(crate) fn group_intersection(group1: usize, group2: usize, newgroup: Out<'_, usize>) -> Res {
    set_op(group1, group2, newgroup, Group::intersection)
}

/// `MPI_Group_difference`: in `group1`'s order.
pub(crate) fn group_difference(group1: usize, group2: usize, newgroup: Out<'_, usize>) -> Res {
    set_op(group1, group2, newgroup, Group::difference)
}

/// `MPI_Group_incl`.
pub(crate) fn group_incl(
    group: usize,
    n: c_int,
    ranks: &[c_int],
    mut newgroup: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    count(n)?;
    let new = group_of(rt, group)?.incl(ranks).map_err(group_error)?;
    store(rt, new, &mut newgroup)
}

/// `MPI_Group_excl`.
pub(crate) fn group_excl(
    group: usize,
    n: c_int,
    ranks: &[c_int],
    mut newgroup: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    count(n)?;
    let new = group_of(rt, group)?.excl(ranks).map_err(group_error)?;
    store(rt, new, &mut newgroup)
}

/// The `int ranges[][3]` argument as triples.
fn triples(ranges: &[[c_int; 3]]) -> Vec<(c_int, c_int, c_int)> {
    ranges.iter().map(|t| (t[0], t[1], t[2])).collect()
}

/// `MPI_Group_range_incl`.
pub(crate) fn group_range_incl(
    group: usize,
    n: c_int,
    ranges: &[[c_int; 3]],
    mut newgroup: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    count(n)?;
    let new = group_of(rt, group)?
        .range_incl(&triples(ranges))
        .map_err(group_error)?;
    store(rt, new, &mut newgroup)
}

/// `MPI_Group_range_excl`.
pub(crate) fn group_range_excl(
    group: usize,
    n: c_int,
    ranges: &[[c_int; 3]],
    mut newgroup: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    count(n)?;
    let new = group_of(rt, group)?
        .range_excl(&triples(ranges))
        .map_err(group_error)?;
    store(rt, new, &mut newgroup)
}

/// `MPI_Group_free`: the handle becomes `MPI_GROUP_NULL`
/// (`MPI_GROUP_EMPTY` may be freed too, and stays valid).
pub(crate) fn group_free(mut group: Out<'_, usize>) -> Res {
    let rt = rt()?;
    match group.get()? {
        MPI_GROUP_EMPTY => {}
        MPI_GROUP_NULL => return Err(Fail::new(MPI_ERR_GROUP, "MPI_GROUP_NULL cannot be freed")),
        h => {
            rt.groups
                .with(|t| t.remove(h))?
                .map_err(|b| Fail::handle(MPI_ERR_GROUP, b, "group"))?;
        }
    }
    group.set(MPI_GROUP_NULL)
}
