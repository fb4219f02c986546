//! Setup errors ([`OfiError`]). Data-path failures are
//! [`ferry_core::Error`]s (see `ffi::Fail`).

use crate::ffi::Fail;

/// Why the device could not be set up (or providers not listed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfiError {
    /// A libfabric call failed.
    #[error("libfabric: {what} failed: {message} (FI_E code {code})")]
    Lib {
        /// The call.
        what: &'static str,
        /// The positive `FI_E*` code.
        code: i32,
        /// libfabric's text for it.
        message: String,
    },
    /// No provider matched what was asked for.
    #[error(
        "no libfabric provider {} offers FI_EP_RDM with tagged messages; fi_getinfo offers: {}",
        .wanted.as_deref().map(|w| format!("named {w:?}")).unwrap_or_default(),
        if .offers.is_empty() { "nothing".to_owned() } else { .offers.join(", ") }
    )]
    NoProvider {
        /// The provider asked for (`FERRY_OFI_PROVIDER` or `FI_PROVIDER`).
        wanted: Option<String>,
        /// What `fi_getinfo` offers on this machine (`provider (fabric/domain)`).
        offers: Vec<String>,
    },
    /// A `FERRY_OFI_*` variable does not parse or is out of range.
    #[error("ferry-ofi setting: {0}")]
    BadVariable(#[from] ferry_core::settings::SettingError),
    /// An option is unusable with the provider chosen.
    #[error("{var}={value:?}: expected {expected}")]
    BadOption {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What would have been valid.
        expected: &'static str,
    },
    /// The bootstrap (address exchange) failed.
    #[error("ofi address exchange: {0}")]
    Bootstrap(#[from] ferry_core::BootstrapError),
    /// Posting the receive buffers at setup failed.
    #[error("ofi setup: posting the receive buffers failed: {0}")]
    PostReceives(#[source] ferry_core::Error),
    /// A peer published something unusable.
    #[error("ofi setup: rank {rank} published a bad address: {what}")]
    BadPeer {
        /// The peer.
        rank: ferry_core::Rank,
        /// What was wrong.
        what: &'static str,
    },
    /// The connection handshake with the peers failed.
    #[error("ofi setup handshake: {0}")]
    Handshake(String),
    /// The liveness sockets could not be set up.
    #[error("ofi liveness sockets: {0}")]
    Io(#[from] std::io::Error),
}

impl From<Fail> for OfiError {
    fn from(f: Fail) -> Self {
        OfiError::Lib {
            what: f.what,
            code: f.code,
            message: crate::ffi::strerror(f.code),
        }
    }
}
