//! The device's asynchronous events (`ibv_get_async_event`): a port going
//! down, a QP or the device failing. `device.rs` turns them into peer
//! failures.

use super::{errno, sys, Context, FfiError, Result};

/// An asynchronous event of the device (`ibv_get_async_event`), already
/// acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AsyncEvent {
    /// `IBV_EVENT_PORT_ERR`: the port went down.
    PortDown(u8),
    /// `IBV_EVENT_PORT_ACTIVE`: the port came (back) up.
    PortActive(u8),
    /// `IBV_EVENT_QP_FATAL`, `QP_REQ_ERR` or `QP_ACCESS_ERR`: the QP
    /// numbered `qpn` is in the error state.
    QpFailed { qpn: u32, event: u32 },
    /// `IBV_EVENT_DEVICE_FATAL`, or the CQ or SRQ failed: nothing works
    /// any more.
    Fatal(u32),
    /// Anything else (informational: LID or GID change, SRQ limit, ...).
    Other(u32),
}

impl AsyncEvent {
    /// The event's name, for errors and logs.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            AsyncEvent::PortDown(_) => "verbs: port went down",
            AsyncEvent::PortActive(_) => "verbs: port became active",
            AsyncEvent::QpFailed { .. } => "verbs: queue pair failed",
            AsyncEvent::Fatal(_) => "verbs: device failed",
            AsyncEvent::Other(_) => "verbs: device event",
        }
    }
}

impl Context {
    /// Makes the asynchronous-event fd non-blocking and returns it (for a
    /// waiter's epoll set).
    pub(crate) fn async_fd(&self) -> Result<std::os::fd::BorrowedFd<'_>> {
        // SAFETY: a live context; `async_fd` is plain data set at open.
        let raw = unsafe { (*self.raw()).async_fd };
        // SAFETY: the context's async fd stays open until the context is
        // closed, and the borrow cannot outlive `&self`.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(raw) };
        let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| FfiError::Os {
            what: "fcntl(async_fd)",
            code: e.raw_os_error(),
        })?;
        rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK).map_err(|e| {
            FfiError::Os {
                what: "fcntl(async_fd)",
                code: e.raw_os_error(),
            }
        })?;
        Ok(fd)
    }

    /// Takes and acknowledges one pending asynchronous event without
    /// blocking (the fd was made non-blocking by [`Context::async_fd`]).
    pub(crate) fn try_async_event(&self) -> Result<Option<AsyncEvent>> {
        let mut ev = std::mem::MaybeUninit::<sys::ibv_async_event>::zeroed();
        // SAFETY: a live context; `ev` is a valid out-pointer.
        let rc = unsafe { sys::ibv_get_async_event(self.raw(), ev.as_mut_ptr()) };
        if rc != 0 {
            return match errno() {
                libc::EAGAIN => Ok(None),
                code => Err(FfiError::Os {
                    what: "ibv_get_async_event",
                    code,
                }),
            };
        }
        let ev = ev.as_mut_ptr();
        // SAFETY: filled by the successful call. The type is read as the
        // raw u32 the kernel wrote: a value the bindings' enum does not
        // name must not be read as that enum.
        let kind = unsafe { std::ptr::addr_of!((*ev).event_type).cast::<u32>().read() };
        use sys::ibv_event_type as T;
        let is = |t: T| kind == t as u32;
        let event = if is(T::IBV_EVENT_PORT_ERR) || is(T::IBV_EVENT_PORT_ACTIVE) {
            // SAFETY: port events carry the port number in the union.
            let port = unsafe { (*ev).element.port_num } as u8;
            if is(T::IBV_EVENT_PORT_ERR) {
                AsyncEvent::PortDown(port)
            } else {
                AsyncEvent::PortActive(port)
            }
        } else if is(T::IBV_EVENT_QP_FATAL)
            || is(T::IBV_EVENT_QP_REQ_ERR)
            || is(T::IBV_EVENT_QP_ACCESS_ERR)
        {
            // SAFETY: QP events carry the (live, this context's) QP.
            let qpn = unsafe { (*(*ev).element.qp).qp_num };
            AsyncEvent::QpFailed { qpn, event: kind }
        } else if is(T::IBV_EVENT_DEVICE_FATAL)
            || is(T::IBV_EVENT_CQ_ERR)
            || is(T::IBV_EVENT_SRQ_ERR)
        {
            AsyncEvent::Fatal(kind)
        } else {
            AsyncEvent::Other(kind)
        };
        // SAFETY: acknowledges the event just taken, once (the QP or CQ it
        // names cannot be destroyed until it is).
        unsafe { sys::ibv_ack_async_event(ev) };
        Ok(Some(event))
    }
}
