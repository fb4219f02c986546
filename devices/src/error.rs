//! ferry's error type, split by who is at fault (as in `ferry-core`).
//!
//! - [`Error::Usage`], [`Error::Api`], [`Error::Config`]: the caller's fault
//!   (a bad rank or tag, truncation, a typed buffer of the wrong size, a bad
//!   `FERRY_*` value).
//! - [`Error::Peer`]: another process misbehaved or died.
//! - [`Error::Device`]: a device or the OS failed (including the syscalls of
//!   passive waiting).
//! - [`Error::Bootstrap`] and [`Error::Setup`]: the environment: the launcher,
//!   a device that is not compiled in, a job that spans nodes without a
//!   network device, shared-memory setup.
//! - [`Error::Internal`]: a bug in ferry; please report it.
//!
//! Operation errors (truncation, a dead peer) travel in a
//! [`Status`](crate::Status) as `ferry_core::Error`, which is `Copy`;
//! [`Status::ok`](crate::Status::ok) turns one into this type.

use ferry_core::{BootstrapError, DeviceError, PeerError, Rank, UsageError};

/// Any error ferry reports.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller's fault, as the engine sees it (bad rank or tag, stale
    /// handle, truncation, ...).
    #[error("usage error: {0}")]
    Usage(UsageError),
    /// The caller's fault, as the typed API sees it.
    #[error("usage error: {0}")]
    Api(#[from] ApiError),
    /// A `FERRY_*` variable (or a [`Config`](crate::Config) field) is invalid.
    #[error("configuration error: {0}")]
    Config(#[from] ConfigError),
    /// Another process's fault.
    #[error("peer error: {0}")]
    Peer(PeerError),
    /// The device's (or the OS's) fault.
    #[error("device error: {0}")]
    Device(DeviceError),
    /// The launcher (PMI) failed or is unreachable.
    #[error("bootstrap error: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// The job cannot be set up here (missing feature, missing network
    /// device, shared-memory setup failure).
    #[error("setup error: {0}")]
    Setup(#[from] SetupError),
    /// A bug in ferry; please report it.
    #[error("internal error (please report): {0}")]
    Internal(&'static str),
}

/// Who is at fault for an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The caller.
    Usage,
    /// Another process.
    Peer,
    /// A device or the OS.
    Device,
    /// The environment: the launcher, the build's features, the machine.
    Environment,
    /// ferry itself.
    Internal,
}

impl Error {
    /// Who is at fault.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Usage(_) | Error::Api(_) | Error::Config(_) => Fault::Usage,
            Error::Peer(_) => Fault::Peer,
            Error::Device(_) => Fault::Device,
            Error::Bootstrap(_) => Fault::Environment,
            Error::Setup(e) if e.is_environment() => Fault::Environment,
            // The devices' own setup failures (one variant per device built).
            Error::Setup(_) => Fault::Device,
            Error::Internal(_) => Fault::Internal,
        }
    }

    /// True for a truncated receive.
    pub fn is_truncation(&self) -> bool {
        matches!(self, Error::Usage(UsageError::Truncated { .. }))
    }

    pub(crate) fn os(what: &'static str, err: rustix::io::Errno) -> Error {
        Error::Device(DeviceError::Os {
            what,
            code: err.raw_os_error(),
        })
    }
}

impl From<ferry_core::Error> for Error {
    fn from(e: ferry_core::Error) -> Error {
        match e {
            ferry_core::Error::Usage(u) => Error::Usage(u),
            ferry_core::Error::Peer(p) => Error::Peer(p),
            ferry_core::Error::Device(d) => Error::Device(d),
            ferry_core::Error::Internal(what) => Error::Internal(what),
            _ => Error::Internal("an engine error of a kind this ferry does not know"),
        }
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Error {
        Error::Usage(e)
    }
}

/// Usage errors of the typed API.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// A byte count is not a whole number of elements of the requested type.
    #[error("{bytes} bytes are not a whole number of {elem_size}-byte elements")]
    ElementSize {
        /// The bytes available.
        bytes: usize,
        /// The element size asked for.
        elem_size: usize,
    },
    /// A typed view needs an alignment the bytes do not have.
    #[error("buffer is not aligned for {align}-byte-aligned elements")]
    Alignment {
        /// The alignment required.
        align: usize,
    },
    /// The completion carries no buffer (a send's buffer is handed back to
    /// it, a persistent request keeps its own).
    #[error("the completion carries no buffer")]
    NoBuffer,
    /// Requests from two different worlds were passed to one call.
    #[error("requests from different worlds passed to one completion call")]
    MixedWorlds,
    /// A raw request ([`RawRequest`](crate::RawRequest)) was asked of a
    /// communicator whose ranks are not the job's.
    #[error("raw requests need a communicator whose ranks are the job's ranks")]
    RawRanks,
    /// The world was finalized.
    #[error("ferry was finalized")]
    Finalized,
    /// A rank outside the communicator.
    #[error("invalid rank {rank} (communicator size {size})")]
    InvalidRank {
        /// The rank given.
        rank: Rank,
        /// The communicator's size.
        size: u32,
    },
    /// A matched-probe message was already received (or is null).
    #[error("the message was already received")]
    MessageTaken,
    /// Every context id is in use on some member: too many communicators
    /// alive at once (4096 per process).
    #[error("no context id is free on every member: too many communicators alive at once")]
    ContextsExhausted,
    /// A group argument broke MPI's rules (a rank listed twice, a rank outside the group, a range with stride 0 or one that leaves the group).
    #[error("invalid group argument: {0}")]
    InvalidGroup(&'static str),
    /// A process topology's arguments that make none (an extent below 1,
    /// a coordinate outside a non-periodic dimension, a grid larger than
    /// the communicator: `crate::topology`).
    #[error("invalid topology: {0}")]
    InvalidTopology(String),
    /// An operation ferry does not offer on this kind of communicator
    /// (collectives, `split` or `create` on an intercommunicator).
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// The leaders of an intercommunicator's construction failed to
    /// exchange (the leader itself reports why).
    #[error("the intercommunicator's leaders failed to exchange (the leader reports why)")]
    LeaderFailed,
    /// A call broke the thread level's promise (see
    /// [`ThreadLevel`](crate::ThreadLevel)); it did nothing.
    #[error("thread level {}: {misuse}", level.name())]
    ThreadLevel {
        /// The level the world was initialised with.
        level: crate::config::ThreadLevel,
        /// What happened.
        misuse: &'static str,
    },
}

/// An invalid configuration value: the variable (or `Config` field), its
/// value and what was expected. The same type every crate's settings use.
pub use ferry_core::settings::SettingError as ConfigError;

/// Why the job cannot be set up.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The device asked for is not compiled into this build.
    #[error(
        "device {device:?} is not compiled in: rebuild ferry with `--features {feature}` \
         (it needs {needs})"
    )]
    FeatureNotCompiled {
        /// The device asked for.
        device: &'static str,
        /// The cargo feature that enables it.
        feature: &'static str,
        /// The system packages it needs.
        needs: &'static str,
    },
    /// Some peers are on other nodes and no network device is available.
    #[error(
        "{remote} of {size} ranks run on other nodes: a network device is needed, and this \
         build has neither (rebuild ferry with the `ofi` or `verbs` feature), or FERRY_DEVICE \
         asks for shm only"
    )]
    NetworkDeviceNeeded {
        /// Ranks on other nodes.
        remote: usize,
        /// The job size.
        size: u32,
    },
    /// The device asked for cannot serve this job.
    #[error("device {device:?} cannot serve this job: {why}")]
    DeviceUnsuitable {
        /// The device asked for.
        device: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// Shared-memory setup failed.
    #[cfg(feature = "shm")]
    #[error("shared-memory device setup failed: {0}")]
    Shm(#[source] ferry_shm::ShmError),
    /// libfabric device setup failed.
    #[cfg(feature = "ofi")]
    #[error("ofi device setup failed: {0}")]
    Ofi(#[source] ferry_ofi::OfiError),
    /// Verbs device setup failed.
    #[cfg(feature = "verbs")]
    #[error("verbs device setup failed: {0}")]
    Verbs(#[source] ferry_verbs::VerbsError),
    /// Logging could not be set up.
    #[error("FERRY_LOG: {0}")]
    Log(#[source] tracing_subscriber::filter::ParseError),
}

impl SetupError {
    /// The machine, the build or the launch cannot serve the job (as
    /// opposed to a device that failed while setting up).
    fn is_environment(&self) -> bool {
        matches!(
            self,
            SetupError::FeatureNotCompiled { .. }
                | SetupError::NetworkDeviceNeeded { .. }
                | SetupError::DeviceUnsuitable { .. }
                | SetupError::Log(_)
        )
    }
}

/// The result type of the ferry API.
pub type Result<T, E = Error> = std::result::Result<T, E>;
