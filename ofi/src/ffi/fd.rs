//! Raw fds that libfabric owns (the CQ's wait fd), used through rustix.
//!
//! libfabric hands out its wait fd as a plain integer that stays open as
//! long as the CQ. Borrowing it needs `unsafe` (rustix's
//! `BorrowedFd::borrow_raw`); these wrappers keep the borrow inside one
//! call, where the fd is known open.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};

use rustix::event::epoll;

/// Adds libfabric's wait fd `fd` to `set` with `data`, waiting for input.
///
/// # Errors
/// What `epoll_ctl` returns.
pub(crate) fn epoll_add_wait_fd(
    set: impl std::os::fd::AsFd,
    fd: RawFd,
    data: u64,
) -> io::Result<()> {
    // SAFETY: `fd` is the CQ's wait fd, open as long as the CQ, and the
    // borrow ends with this call (epoll keeps no reference to the borrow,
    // only to the open file, which the device removes by dropping the set
    // before the CQ).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    epoll::add(
        set,
        fd,
        epoll::EventData::new_u64(data),
        epoll::EventFlags::IN,
    )?;
    Ok(())
}

/// Whether `fd` (a device's wait fd) becomes readable within `ms`
/// milliseconds (`poll(2)`).
///
/// # Errors
/// What `poll` returns.
#[cfg(test)]
pub(crate) fn poll_readable(fd: RawFd, ms: i32) -> io::Result<bool> {
    // SAFETY: the caller passes a device's wait fd, open while the device
    // lives, which outlives this call; the borrow ends with it.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let t = Timespec {
        tv_sec: i64::from(ms / 1000),
        tv_nsec: i64::from(ms % 1000) * 1_000_000,
    };
    Ok(poll(&mut fds, Some(&t))? > 0)
}
