//! MPI 4.0's communicators from groups without a parent:
//! `MPI_Comm_create_from_group` and `MPI_Intercomm_create_from_groups`.
//!
//! The standard meant them for sessions; ferry has none, and every group
//! a program can hold is a group of the world's processes, so the world
//! stands in as the parent ferry's construction needs (its spare context
//! carries the agreement, never its program traffic). The string tag
//! becomes a tag by hashing: every member passes the same string, so all
//! agree on it; two different strings whose hashes meet only matter for
//! calls in flight at once over overlapping groups, which MPI asks to
//! tell apart by their strings.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::MPI_INFO_NULL;
use crate::comm::group::group_of;
use crate::env::errors::errh_of;
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::info::Info;
use crate::state::{lock, rt, CommObj, Runtime};

/// The tag a string tag stands for (32-bit FNV-1a, in `0..=TAG_UB`).
fn tag_of(s: &str) -> ferry::Tag {
    let h = s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    (h & ferry::TAG_UB as u32) as ferry::Tag
}

/// Stores a communicator made from groups, with the handler and info the
/// call gave, and writes its handle.
fn store_new(
    rt: &Runtime,
    comm: ferry::Comm,
    errhandler: usize,
    info: usize,
    out: &mut Out<'_, usize>,
) -> Res {
    let errh = errh_of(errhandler)?;
    let info = if info == MPI_INFO_NULL {
        Info::default()
    } else {
        crate::info::calls::read(info)?
    };
    let obj = CommObj::new(comm, "", errh);
    lock(&obj.meta).info = info;
    let h = rt.add_comm(obj)?;
    out.set(h)
}

/// `MPI_Comm_create_from_group`: collective over `group`'s members.
pub(crate) fn comm_create_from_group(
    group: usize,
    stringtag: &str,
    info: usize,
    errhandler: usize,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let g = group_of(rt, group)?;
    // SAFETY: a NUL-terminated string (the caller's promise).
    let tag = tag_of(stringtag);
    if newcomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    if g.rank().is_none() {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            "MPI_Comm_create_from_group called by a process outside the group",
        ));
    }
    let new = rt.world_comm.comm.create_group(&g, tag)?;
    // SAFETY: checked non-null.
    store_new(rt, new, errhandler, info, &mut newcomm)
}

/// `MPI_Intercomm_create_from_groups`: collective over both groups,
/// which are disjoint; each passes its own leader's rank in its group
/// and the other's in the other group.
pub(crate) fn intercomm_create_from_groups(
    local_group: usize,
    local_leader: c_int,
    remote_group: usize,
    remote_leader: c_int,
    stringtag: &str,
    info: usize,
    errhandler: usize,
    mut newintercomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let (local, remote) = (group_of(rt, local_group)?, group_of(rt, remote_group)?);
    // SAFETY: a NUL-terminated string (the caller's promise).
    let tag = tag_of(stringtag);
    if newintercomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    if local.rank().is_none() {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            "MPI_Intercomm_create_from_groups called by a process outside its local group",
        ));
    }
    let new = rt.world_comm.comm.intercomm_from_groups(
        &local,
        local_leader,
        &remote,
        remote_leader,
        tag,
    )?;
    // SAFETY: checked non-null.
    store_new(rt, new, errhandler, info, &mut newintercomm)
}

#[cfg(test)]
mod tests {
    #[test]
    fn string_tags_hash_into_the_tag_range() {
        for s in ["", "a", "org.mpi-forum.test", &"x".repeat(300)] {
            let t = super::tag_of(s);
            assert!((0..=ferry::TAG_UB).contains(&t), "{s}");
            assert_eq!(t, super::tag_of(s));
        }
        assert_ne!(super::tag_of("left"), super::tag_of("right"));
    }
}
