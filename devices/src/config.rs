//! Configuration: a [`Config`] struct, filled from `FERRY_*` variables by
//! [`Config::from_env`] or built in code.
//!
//! | Variable | Values | Default |
//! |---|---|---|
//! | `FERRY_DEVICE` | `auto`, `shm`, `loopback`, `ofi`, `verbs` | `auto` |
//! | `FERRY_EAGER_LIMIT` | a size (`8192`, `8k`, `8KiB`, `1M`) | the device's (`Caps::eager_preferred`: shm 64 KiB, ofi and verbs 8 KiB) |
//! | `FERRY_RNDV_THRESHOLD` | a size: rendezvous messages at least this large use RDMA/CMA, smaller ones fragments | 0 |
//! | `FERRY_RNDV_MODE` | `auto`, `get`, `put`, `frag`: the large-message protocol (falls back to `frag` where the device lacks RDMA) | `auto` |
//! | `FERRY_WAIT_MODE` | `spin`, `passive`, `hybrid` | `hybrid` |
//! | `FERRY_SPIN_US` | microseconds to spin before sleeping (hybrid), renewed while the device has a transfer in flight that moves only while this rank progresses (`Device::driving`: RMA under libfabric's manual progress); `0` sleeps at once | 50 |
//! | `FERRY_THREAD_LEVEL` | `single`, `funneled`, `serialized`, `multiple` ([`ThreadLevel`]) | `multiple` |
//! | `FERRY_ASYNC_PROGRESS` | a flag: a thread per world progresses while the application computes ([`progress`](crate::progress)) | `0` |
//! | `FERRY_LOG` | a `tracing` filter (`info`, `ferry=debug,warn`) | off |
//! | `FERRY_PRINT_COUNTERS` | a flag (`0`/`1`): print counters at finalize | `0` |
//!
//! Every value has the syntax of [`ferry_core::settings`] (sizes take
//! `64k`, `64KiB` or `65536`; flags `0`/`1`, `true`/`false`, ...), and a
//! variable set to the empty string counts as unset. The devices read
//! their own variables (`FERRY_SHM_*` in `ferry_shm::ShmOptions`,
//! `FERRY_OFI_*`, `FERRY_VERBS_*`), each in one place; the README lists
//! them all.
//!
//! A bad value is a [`ConfigError`] naming the variable; nothing is
//! silently ignored.

use std::time::Duration;

use ferry_core::settings::{self, Source};

use crate::error::{ConfigError, Result};

/// Which device carries the job's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// Shared memory between ranks on one node (loopback for a singleton),
    /// and the network device compiled in for ranks on other nodes.
    #[default]
    Auto,
    /// Shared memory (the `shm` feature).
    Shm,
    /// The in-memory loopback: singleton jobs only.
    Loopback,
    /// libfabric (the `ofi` feature).
    Ofi,
    /// InfiniBand / RoCE verbs (the `verbs` feature).
    Verbs,
}

impl DeviceChoice {
    /// The name used in `FERRY_DEVICE`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceChoice::Auto => "auto",
            DeviceChoice::Shm => "shm",
            DeviceChoice::Loopback => "loopback",
            DeviceChoice::Ofi => "ofi",
            DeviceChoice::Verbs => "verbs",
        }
    }
}

/// How `wait*` waits (`FERRY_WAIT_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitMode {
    /// Poll forever: lowest latency, a full core per waiting thread.
    Spin,
    /// Sleep in the kernel at once.
    Passive,
    /// Poll for [`Config::spin`], then sleep.
    #[default]
    Hybrid,
}

/// Which threads may call ferry (`MPI_Init_thread`'s levels,
/// `FERRY_THREAD_LEVEL`). Below `Multiple`, the engine sits behind no lock:
/// a call that breaks the level's promise fails with
/// [`ApiError::ThreadLevel`](crate::ApiError::ThreadLevel) instead of
/// racing, and a request dropped on a thread that may not call is leaked
/// (its buffer with it) rather than freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum ThreadLevel {
    /// One thread only: the one that called `init` (`MPI_THREAD_SINGLE`;
    /// checked as `Funneled`).
    Single,
    /// Only the thread that called `init` calls ferry
    /// (`MPI_THREAD_FUNNELED`): no lock and no atomic operation per call.
    Funneled,
    /// Any thread, one call at a time (`MPI_THREAD_SERIALIZED`): one atomic
    /// swap per call instead of a lock.
    Serialized,
    /// Any thread, at any time (`MPI_THREAD_MULTIPLE`): the engine's lock.
    #[default]
    Multiple,
}

impl ThreadLevel {
    /// The name used in `FERRY_THREAD_LEVEL`.
    pub fn name(self) -> &'static str {
        match self {
            ThreadLevel::Single => "single",
            ThreadLevel::Funneled => "funneled",
            ThreadLevel::Serialized => "serialized",
            ThreadLevel::Multiple => "multiple",
        }
    }
}

/// Everything `init` needs; see the module docs for the variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The device (`FERRY_DEVICE`).
    pub device: DeviceChoice,
    /// How waiting works (`FERRY_WAIT_MODE`).
    pub wait_mode: WaitMode,
    /// How long hybrid waiting polls before it sleeps (`FERRY_SPIN_US`).
    pub spin: Duration,
    /// A `tracing` filter (`FERRY_LOG`); `None` installs no subscriber.
    pub log: Option<String>,
    /// Print the counters at finalize (`FERRY_PRINT_COUNTERS`).
    pub print_counters: bool,
    /// Which threads may call (`FERRY_THREAD_LEVEL`).
    pub thread_level: ThreadLevel,
    /// Start a progress thread that advances transfers and collectives
    /// while the application computes (`FERRY_ASYNC_PROGRESS`); see
    /// [`progress`](crate::progress) for what it costs. Needs
    /// [`ThreadLevel::Multiple`] (the thread calls the engine beside the
    /// application's).
    pub async_progress: bool,
    /// The engine's settings (`FERRY_EAGER_LIMIT` sets `eager_limit`,
    /// `FERRY_RNDV_THRESHOLD` sets `rdma_threshold`,
    /// `FERRY_RECV_MAY_BE_EMPTY` sets `recv_may_be_empty`, which is the
    /// hint `world` and `self` start with: see [`Hints`](crate::Hints)).
    pub engine: ferry_core::Config,
    /// Forced collective algorithms (`FERRY_COLL_BCAST`,
    /// `FERRY_COLL_ALLREDUCE`, `FERRY_COLL_ALLGATHER`,
    /// `FERRY_COLL_ALLTOALL`); unset, each communicator's table chooses by
    /// size.
    pub coll: ferry_core::coll::CollTuning,
    /// Barrier, bcast, reduce and allreduce through shared memory among a
    /// node's ranks, and hierarchically across nodes (`FERRY_COLL_NODE`,
    /// default on); off, every collective runs point-to-point.
    pub coll_node: bool,
    /// One-sided windows in shared memory when every member is on the
    /// node (`FERRY_RMA_NODE`, default on; any member's 0 turns them off
    /// for the window, whose operations then travel as messages): see
    /// [`rma`](crate::rma).
    pub rma_node: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            device: DeviceChoice::Auto,
            wait_mode: WaitMode::Hybrid,
            spin: Config::DEFAULT_SPIN,
            log: None,
            print_counters: false,
            thread_level: ThreadLevel::Multiple,
            async_progress: false,
            engine: ferry_core::Config::default(),
            coll: ferry_core::coll::CollTuning::default(),
            coll_node: true,
            rma_node: true,
        }
    }
}

impl Config {
    /// The default hybrid spin time.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

    /// Reads the `FERRY_*` variables over the defaults.
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) naming the first bad variable
    /// (a value that is not valid UTF-8 counts as bad).
    pub fn from_env() -> Result<Config> {
        Config::from_lookup(|var| std::env::var_os(var).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Reads the `FERRY_*` variables from `lookup` (a map in tests) over the
    /// defaults.
    ///
    /// # Errors
    /// As for [`Config::from_env`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let src = &lookup;
        let mut c = Config::default();
        if let Some(device) = settings::choice(src, "FERRY_DEVICE", DEVICES)? {
            c.device = device;
        }
        if let Some(n) = settings::size(src, "FERRY_EAGER_LIMIT")? {
            c.engine.eager_limit = Some(n);
        }
        if let Some(n) = settings::size(src, "FERRY_RNDV_THRESHOLD")? {
            c.engine.rdma_threshold = n;
        }
        if let Some(mode) = settings::choice(src, "FERRY_RNDV_MODE", RNDV_MODES)? {
            c.engine.rndv_mode = mode;
        }
        if let Some(mode) = settings::choice(src, "FERRY_WAIT_MODE", WAIT_MODES)? {
            c.wait_mode = mode;
        }
        if let Some(us) = settings::number(src, "FERRY_SPIN_US", 0, u64::MAX)? {
            c.spin = Duration::from_micros(us);
        }
        if let Some(level) = settings::choice(src, "FERRY_THREAD_LEVEL", THREAD_LEVELS)? {
            c.thread_level = level;
        }
        if let Some(on) = settings::flag(src, "FERRY_ASYNC_PROGRESS")? {
            c.async_progress = on;
        }
        c.log = log_filter(src)?;
        if let Some(on) = settings::flag(src, "FERRY_PRINT_COUNTERS")? {
            c.print_counters = on;
        }
        if let Some(on) = settings::flag(src, "FERRY_COLL_NODE")? {
            c.coll_node = on;
        }
        if let Some(on) = settings::flag(src, "FERRY_RMA_NODE")? {
            c.rma_node = on;
        }
        if let Some(on) = settings::flag(src, "FERRY_RECV_MAY_BE_EMPTY")? {
            c.engine.recv_may_be_empty = on;
        }
        for (var, op) in COLL_VARS {
            if let Some(name) = settings::text(src, var) {
                c.coll
                    .set(op, &name.to_ascii_lowercase())
                    .map_err(|valid| ConfigError {
                        var,
                        value: name,
                        expected: format!("one of {valid}"),
                    })?;
            }
        }
        Ok(c)
    }

    /// The combinations no single variable can rule out.
    ///
    /// # Errors
    /// [`Config::async_progress`] below [`ThreadLevel::Multiple`].
    pub fn check(&self) -> Result<()> {
        if self.async_progress && self.thread_level != ThreadLevel::Multiple {
            return Err(ConfigError {
                var: "FERRY_ASYNC_PROGRESS",
                value: "1".into(),
                expected: format!(
                    "off under FERRY_THREAD_LEVEL={}: the progress thread needs `multiple`",
                    self.thread_level.name()
                ),
            }
            .into());
        }
        Ok(())
    }
}

/// The variables that force a collective algorithm, and their operation.
const COLL_VARS: [(&str, &str); 4] = [
    ("FERRY_COLL_BCAST", "bcast"),
    ("FERRY_COLL_ALLREDUCE", "allreduce"),
    ("FERRY_COLL_ALLGATHER", "allgather"),
    ("FERRY_COLL_ALLTOALL", "alltoall"),
];

/// `FERRY_DEVICE`'s values (and their aliases).
const DEVICES: &[(&str, DeviceChoice)] = &[
    ("auto", DeviceChoice::Auto),
    ("shm", DeviceChoice::Shm),
    ("loopback", DeviceChoice::Loopback),
    ("self", DeviceChoice::Loopback),
    ("ofi", DeviceChoice::Ofi),
    ("libfabric", DeviceChoice::Ofi),
    ("verbs", DeviceChoice::Verbs),
    ("ib", DeviceChoice::Verbs),
];

/// `FERRY_THREAD_LEVEL`'s values.
const THREAD_LEVELS: &[(&str, ThreadLevel)] = &[
    ("single", ThreadLevel::Single),
    ("funneled", ThreadLevel::Funneled),
    ("serialized", ThreadLevel::Serialized),
    ("multiple", ThreadLevel::Multiple),
];

/// `FERRY_RNDV_MODE`'s values.
pub(crate) const RNDV_MODES: &[(&str, ferry_core::RndvMode)] = &[
    ("auto", ferry_core::RndvMode::Auto),
    ("get", ferry_core::RndvMode::Get),
    ("put", ferry_core::RndvMode::Put),
    ("frag", ferry_core::RndvMode::Fragmented),
    ("fragmented", ferry_core::RndvMode::Fragmented),
];

/// `FERRY_WAIT_MODE`'s values.
const WAIT_MODES: &[(&str, WaitMode)] = &[
    ("spin", WaitMode::Spin),
    ("poll", WaitMode::Spin),
    ("passive", WaitMode::Passive),
    ("sleep", WaitMode::Passive),
    ("hybrid", WaitMode::Hybrid),
];

/// `FERRY_LOG`, checked now so that a bad filter fails before anything
/// starts.
fn log_filter(src: &impl Source) -> Result<Option<String>> {
    let Some(filter) = settings::text(src, "FERRY_LOG") else {
        return Ok(None);
    };
    match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(_) => Ok(Some(filter)),
        Err(_) => Err(ConfigError {
            var: "FERRY_LOG",
            value: filter,
            expected: "a tracing filter such as `info` or `ferry=debug,warn`".into(),
        }
        .into()),
    }
}
