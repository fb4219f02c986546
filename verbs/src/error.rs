//! Setup errors ([`VerbsError`]). Errors after setup are
//! [`ferry_core::Error`]s, like every device's.

use ferry_core::{BootstrapError, Rank};

/// Why the verbs device could not be set up (or listed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerbsError {
    /// No RDMA device, or none with an active port, or not the one asked for.
    #[error("no usable verbs device: {0}")]
    NoDevice(String),
    /// A verbs call failed.
    #[error("{what}: error code {code}")]
    Os {
        /// The call.
        what: &'static str,
        /// errno or the verb's error code.
        code: i32,
    },
    /// The provider lacks an operation ferry needs.
    #[error("the verbs provider does not implement {0}")]
    Unsupported(&'static str),
    /// A `FERRY_VERBS_*` variable does not parse or is out of range.
    #[error("ferry-verbs setting: {0}")]
    BadVariable(#[from] ferry_core::settings::SettingError),
    /// The bootstrap (PMI) failed during the address exchange.
    #[error("bootstrap failed during the verbs address exchange: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// A peer published an address this rank cannot parse or use.
    #[error("rank {rank} published a bad verbs address: {what}")]
    BadPeerAddress {
        /// The peer.
        rank: Rank,
        /// What was wrong.
        what: String,
    },
    /// `peers` is not a sorted list of job ranks.
    #[error("invalid peer list: {0}")]
    BadPeers(&'static str),
    /// Memory for the eager buffers could not be allocated.
    #[error("out of memory allocating {0} bytes of eager buffers")]
    OutOfMemory(usize),
}

impl From<crate::ffi::FfiError> for VerbsError {
    fn from(e: crate::ffi::FfiError) -> Self {
        match e {
            crate::ffi::FfiError::Missing(what) => VerbsError::Unsupported(what),
            crate::ffi::FfiError::Os { what, code } => VerbsError::Os { what, code },
        }
    }
}

/// A [`VerbsError`] met after setup (making a connection's QP or receive
/// chunk), as the [`ferry_core::Error`] the device reports.
pub(crate) fn into_core(e: VerbsError) -> ferry_core::Error {
    use ferry_core::DeviceError;
    match e {
        VerbsError::Os { what, code } => DeviceError::Os { what, code }.into(),
        VerbsError::Unsupported(what) => DeviceError::Unsupported(what).into(),
        VerbsError::OutOfMemory(_) => DeviceError::Os {
            what: "verbs: allocating a connection's eager buffers",
            code: libc::ENOMEM,
        }
        .into(),
        _ => ferry_core::Error::Internal("verbs: unexpected setup error after setup"),
    }
}
