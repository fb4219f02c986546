//! # ferry-ofi (skeleton: the contract the `ferry` crate builds against)
//!
//! - `OfiOptions::from_env()` reads the device's own `FERRY_*` variables.
//! - `OfiDevice::new(boot, peers, opts)` is collective over **every rank of
//!   the job that has at least one peer on this device**; `peers` is the
//!   sorted list of global ranks this device must reach (it contains this
//!   rank when the whole job runs on this device, so self-traffic goes
//!   through it too). Other ranks are never passed to its methods.
//! - `OfiDevice` implements [`ferry_core::Device`] with global ranks.
//! - `providers()` lists what this machine offers, for `ferry-info`.

use ferry_core::{Bootstrap, Rank};

/// Setup errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfiError {
    /// Not written yet.
    #[error("not implemented yet")]
    NotImplemented,
}

/// Options, from the environment.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OfiOptions {}

impl OfiOptions {
    /// Reads the device's variables.
    ///
    /// # Errors
    /// A malformed variable.
    pub fn from_env() -> Result<Self, OfiError> {
        Ok(Self::default())
    }
}

/// What `providers()` reports, one per entry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// One line describing the entry.
    pub summary: String,
}

/// What this machine offers.
///
/// # Errors
/// The library cannot be queried.
pub fn providers() -> Result<Vec<ProviderInfo>, OfiError> {
    Err(OfiError::NotImplemented)
}

/// The device.
#[derive(Debug)]
pub struct OfiDevice {
    _private: (),
}

impl OfiDevice {
    /// Collective setup; see the crate docs.
    ///
    /// # Errors
    /// See [`OfiError`].
    pub fn new(
        boot: &mut dyn Bootstrap,
        peers: &[Rank],
        opts: OfiOptions,
    ) -> Result<Self, OfiError> {
        let _ = (boot, peers, opts);
        Err(OfiError::NotImplemented)
    }
}

const SKELETON: ferry_core::Error =
    ferry_core::Error::Device(ferry_core::DeviceError::Unsupported("ofi (skeleton)"));

static CAPS: ferry_core::Caps = ferry_core::Caps {
    name: "ofi",
    max_payload: 0,
    rdma_get: false,
    rdma_put: false,
    tag_offload: false,
    wait_fd: false,
};

impl ferry_core::Device for OfiDevice {
    fn caps(&self, _peer: Rank) -> &ferry_core::Caps {
        &CAPS
    }
    fn send(
        &mut self,
        _peer: Rank,
        _header: &[u8],
        _payload: &[u8],
    ) -> Result<ferry_core::device::Sent, ferry_core::Error> {
        Err(SKELETON)
    }
    fn register(
        &mut self,
        _peer: Rank,
        buf: ferry_core::Buf,
        _access: ferry_core::device::Access,
    ) -> Result<
        (ferry_core::device::MemHandle, ferry_core::wire::RemoteKey),
        (ferry_core::Error, ferry_core::Buf),
    > {
        Err((SKELETON, buf))
    }
    fn deregister(&mut self, _mem: ferry_core::device::MemHandle) -> Option<ferry_core::Buf> {
        None
    }
    fn get(
        &mut self,
        _peer: Rank,
        _remote: ferry_core::wire::RemoteKey,
        _local: ferry_core::device::MemHandle,
        _len: usize,
        _token: ferry_core::device::OpToken,
    ) -> Result<ferry_core::device::Sent, ferry_core::Error> {
        Err(SKELETON)
    }
    fn put(
        &mut self,
        _peer: Rank,
        _local: ferry_core::device::MemHandle,
        _remote: ferry_core::wire::RemoteKey,
        _len: usize,
        _token: ferry_core::device::OpToken,
    ) -> Result<ferry_core::device::Sent, ferry_core::Error> {
        Err(SKELETON)
    }
    fn progress<S: ferry_core::device::Sink>(
        &mut self,
        _sink: &mut S,
    ) -> Result<usize, ferry_core::Error> {
        Ok(0)
    }
    fn arm(&mut self) -> Result<ferry_core::device::Armed, ferry_core::Error> {
        Ok(ferry_core::device::Armed::Pending)
    }
    fn disarm(&mut self) {}
    fn wait_fd(&self) -> Option<i32> {
        None
    }
}
