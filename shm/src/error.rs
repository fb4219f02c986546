//! Setup errors.

use ferry_core::{BootstrapError, DeviceError};

/// Why [`ShmDevice::new`](crate::ShmDevice::new) failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The bootstrap (KVS or barrier) failed.
    #[error("bootstrap failed during shm setup: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A `FERRY_SHM_*` variable does not parse.
    #[error("shm setting: {0}")]
    Setting(#[from] ferry_core::settings::SettingError),
    /// An option is out of range, or the rank list is unusable.
    #[error("invalid shm setup: {0}")]
    Options(String),
    /// The segment another rank created is not one this build can use
    /// (wrong magic, version, layout or size).
    #[error("incompatible shared segment: {0}")]
    Segment(String),
    /// A local peer did not complete its side of the setup.
    #[error("shm setup with a peer failed: {0}")]
    Peer(String),
}

impl ShmError {
    pub(crate) fn os(what: &'static str) -> impl FnOnce(std::io::Error) -> ShmError {
        move |source| ShmError::Os { what, source }
    }
}

impl From<ShmError> for ferry_core::Error {
    /// The closest core error (core errors are `Copy`, so details go to the
    /// log first).
    fn from(e: ShmError) -> ferry_core::Error {
        tracing::error!(error = %e, "shm device setup failed");
        match e {
            ShmError::Os { what, source } => DeviceError::Os {
                what,
                code: source.raw_os_error().unwrap_or(-1),
            }
            .into(),
            ShmError::Bootstrap(_) => DeviceError::Os {
                what: "shm setup: bootstrap failed",
                code: -1,
            }
            .into(),
            ShmError::Options(_) | ShmError::Setting(_) => {
                DeviceError::Unsupported("shm setup: invalid options").into()
            }
            ShmError::Segment(_) => {
                DeviceError::Unsupported("shm setup: incompatible segment").into()
            }
            ShmError::Peer(_) => DeviceError::Os {
                what: "shm setup: a peer failed",
                code: -1,
            }
            .into(),
        }
    }
}
