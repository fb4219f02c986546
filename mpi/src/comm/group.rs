//! Groups: `MPI_Comm_group`, `MPI_Group_size`, `rank`,
//! `translate_ranks`, `compare`, `union`, `intersection`, `difference`,
//! `incl`, `excl`, `range_incl`, `range_excl`, `free`, and
//! `MPI_GROUP_EMPTY`. A group is ferry's `Group` (an `Arc` inside) in the
//! group table; a new group with no members is `MPI_GROUP_EMPTY`.

use std::ffi::c_int;

use ferry::{Group, GroupCompare};

use crate::ffi::{get, put};

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
/// # Safety
/// `out` is null or valid for a write.
pub(crate) unsafe fn store(rt: &Runtime, g: Group, out: *mut usize) -> Res {
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
    // SAFETY: checked non-null; an out-argument.
    unsafe { put(out, h) }
}

/// A C array of `n` ints.
///
/// # Safety
/// `p` is null or valid for reads of `n` ints.
unsafe fn ints<'a>(p: *const c_int, n: c_int) -> Res<&'a [c_int]> {
    let n = usize::try_from(n).map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid count {n}")))?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null rank array"));
    }
    // SAFETY: non-null, valid for `n` ints (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
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
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn comm_group(comm: usize, group: *mut usize) -> Res {
    let rt = rt()?;
    let g = rt.comm(comm)?.comm.group();
    // SAFETY: out-argument.
    unsafe { store(rt, g, group) }
}

/// `MPI_Group_size`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_size(group: usize, size: *mut c_int) -> Res {
    let g = group_of(rt()?, group)?;
    // SAFETY: out-argument.
    unsafe { put(size, g.size() as c_int) }
}

/// `MPI_Group_rank`: `MPI_UNDEFINED` if this process is not a member.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_rank(group: usize, rank: *mut c_int) -> Res {
    let g = group_of(rt()?, group)?;
    // SAFETY: out-argument.
    unsafe { put(rank, g.rank().unwrap_or(MPI_UNDEFINED)) }
}

/// `MPI_Group_translate_ranks`: `MPI_UNDEFINED` for a process not in
/// `group2`, `MPI_PROC_NULL` for `MPI_PROC_NULL`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_translate_ranks(
    group1: usize,
    n: c_int,
    ranks1: *const c_int,
    group2: usize,
    ranks2: *mut c_int,
) -> Res {
    let rt = rt()?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    // SAFETY: the caller's array of `n` ranks.
    let ranks = unsafe { ints(ranks1, n)? };
    let ferry_ranks: Vec<c_int> = ranks
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
    if !out.is_empty() && ranks2.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null output rank array"));
    }
    for (i, (r, t)) in ranks.iter().zip(out).enumerate() {
        let v = match t {
            _ if *r == MPI_PROC_NULL => MPI_PROC_NULL,
            Some(t) => t,
            None => MPI_UNDEFINED,
        };
        // SAFETY: the caller's output array of `n` ranks.
        unsafe { ranks2.add(i).write(v) };
    }
    Ok(())
}

/// `MPI_Group_compare`: `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_compare(group1: usize, group2: usize, result: *mut c_int) -> Res {
    let rt = rt()?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    let r = match a.compare(&b) {
        GroupCompare::Ident => MPI_IDENT,
        GroupCompare::Similar => MPI_SIMILAR,
        _ => MPI_UNEQUAL,
    };
    // SAFETY: out-argument.
    unsafe { put(result, r) }
}

/// The body of the two-group set operations.
///
/// # Safety
/// `out` is an out-argument.
unsafe fn set_op(
    group1: usize,
    group2: usize,
    out: *mut usize,
    op: fn(&Group, &Group) -> Group,
) -> Res {
    let rt = rt()?;
    let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
    // SAFETY: forwarded.
    unsafe { store(rt, op(&a, &b), out) }
}

/// `MPI_Group_union`: `group1`'s members, then `group2`'s others.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_union(group1: usize, group2: usize, newgroup: *mut usize) -> Res {
    // SAFETY: out-argument.
    unsafe { set_op(group1, group2, newgroup, Group::union) }
}

/// `MPI_Group_intersection`: in `group1`'s order.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_intersection(group1: usize, group2: usize, newgroup: *mut usize) -> Res {
    // SAFETY: out-argument.
    unsafe { set_op(group1, group2, newgroup, Group::intersection) }
}

/// `MPI_Group_difference`: in `group1`'s order.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_difference(group1: usize, group2: usize, newgroup: *mut usize) -> Res {
    // SAFETY: out-argument.
    unsafe { set_op(group1, group2, newgroup, Group::difference) }
}

/// `MPI_Group_incl`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_incl(
    group: usize,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut usize,
) -> Res {
    let rt = rt()?;
    let g = group_of(rt, group)?;
    // SAFETY: the caller's array of `n` ranks.
    let r = unsafe { ints(ranks, n)? };
    let new = g.incl(r).map_err(group_error)?;
    // SAFETY: out-argument.
    unsafe { store(rt, new, newgroup) }
}

/// `MPI_Group_excl`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_excl(
    group: usize,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut usize,
) -> Res {
    let rt = rt()?;
    let g = group_of(rt, group)?;
    // SAFETY: the caller's array of `n` ranks.
    let r = unsafe { ints(ranks, n)? };
    let new = g.excl(r).map_err(group_error)?;
    // SAFETY: out-argument.
    unsafe { store(rt, new, newgroup) }
}

/// The `int ranges[][3]` argument as triples.
///
/// # Safety
/// `p` is null or valid for `n` triples.
unsafe fn ranges(p: *const [c_int; 3], n: c_int) -> Res<Vec<(c_int, c_int, c_int)>> {
    // SAFETY: `n` triples are `3 n` ints (the caller's promise).
    let flat = unsafe {
        ints(
            p.cast(),
            n.checked_mul(3)
                .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("invalid count {n}")))?,
        )?
    };
    Ok(flat.chunks_exact(3).map(|t| (t[0], t[1], t[2])).collect())
}

/// `MPI_Group_range_incl`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_range_incl(
    group: usize,
    n: c_int,
    ranges_: *const [c_int; 3],
    newgroup: *mut usize,
) -> Res {
    let rt = rt()?;
    let g = group_of(rt, group)?;
    // SAFETY: the caller's array of `n` triples.
    let r = unsafe { ranges(ranges_, n)? };
    let new = g.range_incl(&r).map_err(group_error)?;
    // SAFETY: out-argument.
    unsafe { store(rt, new, newgroup) }
}

/// `MPI_Group_range_excl`.
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_range_excl(
    group: usize,
    n: c_int,
    ranges_: *const [c_int; 3],
    newgroup: *mut usize,
) -> Res {
    let rt = rt()?;
    let g = group_of(rt, group)?;
    // SAFETY: the caller's array of `n` triples.
    let r = unsafe { ranges(ranges_, n)? };
    let new = g.range_excl(&r).map_err(group_error)?;
    // SAFETY: out-argument.
    unsafe { store(rt, new, newgroup) }
}

/// `MPI_Group_free`: the handle becomes `MPI_GROUP_NULL`
/// (`MPI_GROUP_EMPTY` may be freed too, and stays valid).
///
/// # Safety
/// The C caller's pointers, valid as the MPI standard says for this function.
pub(crate) unsafe fn group_free(group: *mut usize) -> Res {
    let rt = rt()?;
    // SAFETY: in/out argument.
    let h = unsafe { get(group.cast_const())? };
    match h {
        MPI_GROUP_EMPTY => {}
        MPI_GROUP_NULL => return Err(Fail::new(MPI_ERR_GROUP, "MPI_GROUP_NULL cannot be freed")),
        h => {
            rt.groups
                .with(|t| t.remove(h))?
                .map_err(|b| Fail::handle(MPI_ERR_GROUP, b, "group"))?;
        }
    }
    // SAFETY: as above.
    unsafe { put(group, MPI_GROUP_NULL) }
}
