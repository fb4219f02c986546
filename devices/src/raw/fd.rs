//! The device's wait fd in an epoll set: the one `unsafe` step of the
//! waiter's sleep (`waiter.rs`), here with the rest of the crate's
//! `unsafe` code.

use std::os::fd::{BorrowedFd, OwnedFd};

/// Adds a device's wait fd to an epoll set.
///
/// The fd is only borrowed for the `epoll_ctl` call, made under the world's
/// lock while the engine (which owns the device, which owns the fd) exists.
pub(crate) fn epoll_add_device_fd(epoll: &OwnedFd, fd: i32, data: u64) -> rustix::io::Result<()> {
    if fd < 0 {
        return Err(rustix::io::Errno::BADF);
    }
    // SAFETY: the fd belongs to the live device (see above) and stays open
    // for the duration of this call; epoll keeps no borrow of it afterwards
    // (the kernel drops the registration when the file is closed).
    let device_fd = unsafe { BorrowedFd::borrow_raw(fd) };
    rustix::event::epoll::add(
        epoll,
        device_fd,
        rustix::event::epoll::EventData::new_u64(data),
        rustix::event::epoll::EventFlags::IN,
    )
}
