//! Synchronization: `MPI_Win_fence`, `MPI_Win_lock`, `MPI_Win_unlock`,
//! `MPI_Win_lock_all`, `MPI_Win_unlock_all`, `MPI_Win_flush(_all)`,
//! `MPI_Win_flush_local(_all)`, `MPI_Win_sync`, and post/start/complete/
//! wait/test. Each completes the operations its window kept for the
//! targets it covers (`WinObj::settle`) after ferry's side of it.
//!
//! Assertions (`MPI_MODE_*`) are hints ferry does not need: any
//! combination of the defined ones is accepted, anything else is
//! `MPI_ERR_ASSERT`.

use std::ffi::c_int;

use ferry::rma::LockKind;

use crate::abi::class::*;
use crate::comm::group::group_of;
use crate::error::{Fail, Res};
use crate::ffi::args::Out;
use crate::state::rt;

use super::win_of;

/// `MPI_MODE_NOCHECK | NOPRECEDE | NOPUT | NOSTORE | NOSUCCEED`.
const MODES: c_int = 1024 | 2048 | 4096 | 8192 | 16384;
/// `MPI_LOCK_EXCLUSIVE`, `MPI_LOCK_SHARED`.
const LOCK_EXCLUSIVE: c_int = 301;
const LOCK_SHARED: c_int = 302;

fn check_assert(assert: c_int) -> Res {
    if assert & !MODES != 0 {
        return Err(Fail::msg(
            MPI_ERR_ASSERT,
            format!("invalid assertion {assert:#x}"),
        ));
    }
    Ok(())
}

/// `MPI_Win_fence`.
pub(crate) fn win_fence(assert: c_int, win: usize) -> Res {
    check_assert(assert)?;
    let w = win_of(win)?;
    w.win.fence()?;
    w.settle(None)
}

/// `MPI_Win_lock`.
pub(crate) fn win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: usize) -> Res {
    check_assert(assert)?;
    let kind = match lock_type {
        LOCK_EXCLUSIVE => LockKind::Exclusive,
        LOCK_SHARED => LockKind::Shared,
        t => {
            return Err(Fail::msg(
                MPI_ERR_LOCKTYPE,
                format!("invalid lock type {t}"),
            ))
        }
    };
    if rank == crate::abi::MPI_PROC_NULL {
        return Ok(());
    }
    win_of(win)?.win.start_lock(rank, kind)?;
    Ok(())
}

/// `MPI_Win_unlock`.
pub(crate) fn win_unlock(rank: c_int, win: usize) -> Res {
    if rank == crate::abi::MPI_PROC_NULL {
        return Ok(());
    }
    let w = win_of(win)?;
    w.win.end_lock(rank)?;
    w.settle(Some(rank))
}

/// `MPI_Win_lock_all`.
pub(crate) fn win_lock_all(assert: c_int, win: usize) -> Res {
    check_assert(assert)?;
    win_of(win)?.win.start_lock_all()?;
    Ok(())
}

/// `MPI_Win_unlock_all`.
pub(crate) fn win_unlock_all(win: usize) -> Res {
    let w = win_of(win)?;
    w.win.end_lock_all()?;
    w.settle(None)
}

/// `MPI_Win_flush` (and `MPI_Win_flush_local`, which it is stronger
/// than).
pub(crate) fn win_flush(rank: c_int, win: usize) -> Res {
    if rank == crate::abi::MPI_PROC_NULL {
        return Ok(());
    }
    let w = win_of(win)?;
    w.win.flush(rank)?;
    w.settle(Some(rank))
}

/// `MPI_Win_flush_all` (and `MPI_Win_flush_local_all`).
pub(crate) fn win_flush_all(win: usize) -> Res {
    let w = win_of(win)?;
    w.win.flush_all()?;
    w.settle(None)
}

/// `MPI_Win_flush_local`: as `MPI_Win_flush`.
pub(crate) fn win_flush_local(rank: c_int, win: usize) -> Res {
    win_flush(rank, win)
}

/// `MPI_Win_flush_local_all`: as `MPI_Win_flush_all`.
pub(crate) fn win_flush_local_all(win: usize) -> Res {
    win_flush_all(win)
}

/// `MPI_Win_sync`: the window's memory is one copy (the unified model),
/// and ferry's engine writes it under its lock, so there is nothing to
/// make agree; a memory fence orders the program's own loads and stores.
pub(crate) fn win_sync(win: usize) -> Res {
    win_of(win)?;
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// The window ranks of group `group` (every member must be the window's).
fn ranks_of(win_group: &ferry::Group, group: usize) -> Res<Vec<ferry::Rank>> {
    let g = group_of(rt()?, group)?;
    let all: Vec<ferry::Rank> = (0..g.size() as ferry::Rank).collect();
    g.translate_ranks(&all, win_group)?
        .into_iter()
        .map(|r| {
            r.ok_or_else(|| Fail::new(MPI_ERR_GROUP, "a group with a process outside the window"))
        })
        .collect()
}

/// `MPI_Win_post`.
pub(crate) fn win_post(group: usize, assert: c_int, win: usize) -> Res {
    check_assert(assert)?;
    let w = win_of(win)?;
    w.win.post(&ranks_of(&w.group, group)?)?;
    Ok(())
}

/// `MPI_Win_start`.
pub(crate) fn win_start(group: usize, assert: c_int, win: usize) -> Res {
    check_assert(assert)?;
    let w = win_of(win)?;
    w.win.start(&ranks_of(&w.group, group)?)?;
    Ok(())
}

/// `MPI_Win_complete`: the operations kept complete first (their
/// replies come before the targets learn the epoch is over).
pub(crate) fn win_complete(win: usize) -> Res {
    let w = win_of(win)?;
    w.win.complete()?;
    w.settle(None)
}

/// `MPI_Win_wait`.
pub(crate) fn win_wait(win: usize) -> Res {
    win_of(win)?.win.wait()?;
    Ok(())
}

/// `MPI_Win_test`.
pub(crate) fn win_test(win: usize, mut flag: Out<'_, c_int>) -> Res {
    let done = win_of(win)?.win.test()?;
    flag.set(c_int::from(done))
}
