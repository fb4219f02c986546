//! Configuration: a [`Config`] struct, filled from `FERRY_*` variables by
//! [`Config::from_env`] or built in code.
//!
//! | Variable | Values | Default |
//! |---|---|---|
//! | `FERRY_DEVICE` | `auto`, `shm`, `loopback`, `ofi`, `verbs` | `auto` |
//! | `FERRY_EAGER_LIMIT` | bytes (`8192`, `8k`, `1M`) | 8 KiB |
//! | `FERRY_RNDV_THRESHOLD` | bytes: rendezvous messages at least this large use RDMA/CMA, smaller ones fragments | 0 |
//! | `FERRY_RNDV_MODE` | `auto`, `get`, `put`, `frag`: the large-message protocol (falls back to `frag` where the device lacks RDMA) | `auto` |
//! | `FERRY_WAIT_MODE` | `spin`, `passive`, `hybrid` | `hybrid` |
//! | `FERRY_SPIN_US` | microseconds to spin before sleeping (hybrid); `0` sleeps at once | 50 |
//! | `FERRY_LOG` | a `tracing` filter (`info`, `ferry=debug,warn`) | off |
//! | `FERRY_SHM_CMA` | `0` / `1`: allow the single-copy CMA path | device default |
//! | `FERRY_PRINT_COUNTERS` | `0` / `1`: print counters at finalize | `0` |
//!
//! A bad value is a [`ConfigError`] naming the variable; nothing is
//! silently ignored.

use std::time::Duration;

use crate::error::{ConfigError, Result};

/// Which device carries the job's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// Shared memory between ranks on one node (loopback for a singleton);
    /// a network device for other nodes once one exists.
    #[default]
    Auto,
    /// Shared memory (the `shm` feature).
    Shm,
    /// The in-memory loopback: singleton jobs only.
    Loopback,
    /// libfabric (the `ofi` feature; a later issue).
    Ofi,
    /// InfiniBand verbs (the `verbs` feature; a later issue).
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
    /// Allow the shm device's CMA single-copy path (`FERRY_SHM_CMA`);
    /// `None` (unset) times CMA against a memcpy at setup and uses CMA
    /// where the kernel permits it and it is the faster of the two.
    pub shm_cma: Option<bool>,
    /// Print the counters at finalize (`FERRY_PRINT_COUNTERS`).
    pub print_counters: bool,
    /// The engine's settings (`FERRY_EAGER_LIMIT` sets `eager_limit`,
    /// `FERRY_RNDV_THRESHOLD` sets `rdma_threshold`).
    pub engine: ferry_core::Config,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            device: DeviceChoice::Auto,
            wait_mode: WaitMode::Hybrid,
            spin: Config::DEFAULT_SPIN,
            log: None,
            shm_cma: None,
            print_counters: false,
            engine: ferry_core::Config::default(),
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
        let mut c = Config::default();
        let get = |var: &str| lookup(var).map(|v| v.trim().to_owned());
        if let Some(v) = get("FERRY_DEVICE") {
            c.device = parse_device(&v)?;
        }
        if let Some(v) = get("FERRY_EAGER_LIMIT") {
            c.engine.eager_limit = parse_size("FERRY_EAGER_LIMIT", &v)?;
        }
        if let Some(v) = get("FERRY_RNDV_THRESHOLD") {
            c.engine.rdma_threshold = parse_size("FERRY_RNDV_THRESHOLD", &v)?;
        }
        if let Some(v) = get("FERRY_RNDV_MODE") {
            c.engine.rndv_mode = parse_rndv_mode(&v)?;
        }
        if let Some(v) = get("FERRY_WAIT_MODE") {
            c.wait_mode = parse_wait_mode(&v)?;
        }
        if let Some(v) = get("FERRY_SPIN_US") {
            let us = v.parse::<u64>().map_err(|_| ConfigError {
                var: "FERRY_SPIN_US",
                value: v.clone(),
                expected: "a whole number of microseconds (0 sleeps at once)",
            })?;
            c.spin = Duration::from_micros(us);
        }
        if let Some(v) = get("FERRY_LOG") {
            if !v.is_empty() {
                tracing_subscriber::EnvFilter::try_new(&v).map_err(|_| ConfigError {
                    var: "FERRY_LOG",
                    value: v.clone(),
                    expected: "a tracing filter such as `info` or `ferry=debug,warn`",
                })?;
                c.log = Some(v);
            }
        }
        if let Some(v) = get("FERRY_SHM_CMA") {
            c.shm_cma = Some(parse_bool("FERRY_SHM_CMA", &v)?);
        }
        if let Some(v) = get("FERRY_PRINT_COUNTERS") {
            c.print_counters = parse_bool("FERRY_PRINT_COUNTERS", &v)?;
        }
        Ok(c)
    }

    /// Starts ferry with this configuration; see [`crate::init`].
    ///
    /// # Errors
    /// As for [`crate::init`].
    pub fn init(self) -> Result<crate::World> {
        crate::startup::init_with(self)
    }
}

fn parse_rndv_mode(v: &str) -> Result<ferry_core::RndvMode> {
    use ferry_core::RndvMode;
    Ok(match v.to_ascii_lowercase().as_str() {
        "auto" | "" => RndvMode::Auto,
        "get" => RndvMode::Get,
        "put" => RndvMode::Put,
        "frag" | "fragmented" => RndvMode::Fragmented,
        _ => {
            return Err(ConfigError {
                var: "FERRY_RNDV_MODE",
                value: v.to_owned(),
                expected: "auto, get, put or frag",
            }
            .into())
        }
    })
}

fn parse_device(v: &str) -> Result<DeviceChoice> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "auto" | "" => DeviceChoice::Auto,
        "shm" => DeviceChoice::Shm,
        "loopback" | "self" => DeviceChoice::Loopback,
        "ofi" | "libfabric" => DeviceChoice::Ofi,
        "verbs" | "ib" => DeviceChoice::Verbs,
        _ => {
            return Err(ConfigError {
                var: "FERRY_DEVICE",
                value: v.to_owned(),
                expected: "one of auto, shm, loopback, ofi, verbs",
            }
            .into())
        }
    })
}

fn parse_wait_mode(v: &str) -> Result<WaitMode> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "spin" | "poll" => WaitMode::Spin,
        "passive" | "sleep" => WaitMode::Passive,
        "hybrid" => WaitMode::Hybrid,
        _ => {
            return Err(ConfigError {
                var: "FERRY_WAIT_MODE",
                value: v.to_owned(),
                expected: "one of spin, passive, hybrid",
            }
            .into())
        }
    })
}

fn parse_bool(var: &'static str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError {
            var,
            value: v.to_owned(),
            expected: "0 or 1",
        }
        .into()),
    }
}

/// A byte size: digits with an optional `k`/`m`/`g` suffix (powers of 1024,
/// `KiB` and `kb` spellings accepted).
fn parse_size(var: &'static str, v: &str) -> Result<usize> {
    let bad = || ConfigError {
        var,
        value: v.to_owned(),
        expected: "a byte count such as 8192, 64k or 1M",
    };
    let lower = v.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, suffix) = lower.split_at(digits_end);
    let n: usize = digits.parse().map_err(|_| bad())?;
    let shift = match suffix.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(bad().into()),
    };
    n.checked_mul(1usize << shift).ok_or_else(|| bad().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("X", "8192").unwrap(), 8192);
        assert_eq!(parse_size("X", "64k").unwrap(), 65536);
        assert_eq!(parse_size("X", "1MiB").unwrap(), 1 << 20);
        assert!(parse_size("X", "-1").is_err());
        assert!(parse_size("X", "12q").is_err());
        assert!(parse_size("X", "99999999999999999999g").is_err());
    }
}
