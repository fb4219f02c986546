//! The vocabulary the devices share for RDMA: which way an operation copies
//! ([`RdmaDir`]) and the work-completion status a failed one reports
//! ([`WcStatus`]).

use crate::device::Access;
use crate::error::{DeviceError, Error};

/// Which way an RDMA operation copies: [`Device::get`](super::Device::get)
/// or [`Device::put`](super::Device::put).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RdmaDir {
    /// Read a peer's region into a local one.
    Get,
    /// Write a local region into a peer's.
    Put,
}

impl RdmaDir {
    /// The access the local region needs (`LocalWrite` for a get's target,
    /// `LocalRead` for a put's source).
    pub const fn local_access(self) -> Access {
        match self {
            RdmaDir::Get => Access::LocalWrite,
            RdmaDir::Put => Access::LocalRead,
        }
    }

    /// The access the peer's region needs.
    pub const fn remote_access(self) -> Access {
        match self {
            RdmaDir::Get => Access::RemoteRead,
            RdmaDir::Put => Access::RemoteWrite,
        }
    }

    /// `"rdma get"` or `"rdma put"`, for errors and logs.
    pub const fn name(self) -> &'static str {
        match self {
            RdmaDir::Get => "rdma get",
            RdmaDir::Put => "rdma put",
        }
    }
}

impl super::Caps {
    /// Whether `dir` works ([`rdma_get`](super::Caps::rdma_get) or
    /// [`rdma_put`](super::Caps::rdma_put)).
    pub const fn rdma(&self, dir: RdmaDir) -> bool {
        match dir {
            RdmaDir::Get => self.rdma_get,
            RdmaDir::Put => self.rdma_put,
        }
    }
}

/// Work-completion codes for RDMA failures found by a device's own checks.
/// They mirror `ibv_wc_status`, so a test or a log reads the same for the
/// in-memory devices and shm as for verbs; they travel as the `status` of
/// [`DeviceError::Completion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcStatus {
    /// `IBV_WC_LOC_LEN_ERR`: the length runs past the local region.
    LocLenErr,
    /// `IBV_WC_LOC_PROT_ERR`: the local handle is unknown or lacks the access.
    LocProtErr,
    /// `IBV_WC_REM_INV_REQ_ERR`: the length runs past the remote region.
    RemInvReqErr,
    /// `IBV_WC_REM_ACCESS_ERR`: the remote key is unknown, wrong, stale, or
    /// lacks the access.
    RemAccessErr,
}

impl WcStatus {
    /// The `ibv_wc_status` value.
    pub const fn code(self) -> i32 {
        match self {
            WcStatus::LocLenErr => 1,
            WcStatus::LocProtErr => 4,
            WcStatus::RemInvReqErr => 9,
            WcStatus::RemAccessErr => 10,
        }
    }

    /// The [`DeviceError::Completion`] an operation fails with.
    pub fn error(self, what: &'static str) -> Error {
        DeviceError::Completion {
            what,
            status: self.code(),
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_ibv_wc_status() {
        assert_eq!(WcStatus::LocLenErr.code(), 1);
        assert_eq!(WcStatus::LocProtErr.code(), 4);
        assert_eq!(WcStatus::RemInvReqErr.code(), 9);
        assert_eq!(WcStatus::RemAccessErr.code(), 10);
        assert_eq!(
            WcStatus::RemAccessErr.error("x"),
            Error::Device(DeviceError::Completion {
                what: "x",
                status: 10
            })
        );
        assert_eq!(RdmaDir::Get.local_access(), Access::LocalWrite);
        assert_eq!(RdmaDir::Put.remote_access(), Access::RemoteWrite);
        assert_eq!(RdmaDir::Put.name(), "rdma put");
        let caps = super::super::Caps {
            name: "t",
            max_payload: 1,
            eager_preferred: 8192,
            rdma_get: true,
            rdma_put: false,
            wait_fd: false,
        };
        assert!(caps.rdma(RdmaDir::Get) && !caps.rdma(RdmaDir::Put));
    }
}
