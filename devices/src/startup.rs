//! `init`: configuration → logging → bootstrap → device per peer → engine →
//! [`World`].
//!
//! - Not launched by a PMI server: a singleton job (rank 0 of 1) over the
//!   loopback device.
//! - Launched by one (`ferryrun`, Hydra): every rank publishes a host id
//!   (hostname and kernel boot id) in the job's key-value space; the ranks
//!   with this rank's host id share a node and talk through shared memory.
//!   A rank on another node needs a network device (ofi or verbs), which this
//!   version does not have yet: a typed error says so.

use ferry_core::loopback::Loopback;
use ferry_core::{Bootstrap, Engine, Rank};

use crate::boot::{Boot, SingletonBoot};
use crate::config::{Config, DeviceChoice};
use crate::error::{Result, SetupError};
use crate::node::NodeDevice;
use crate::pmi::PmiClient;
use crate::world::{Shared, World};

/// Starts ferry from the `FERRY_*` environment variables:
/// `Config::from_env()?.init()`.
///
/// # Errors
/// A bad `FERRY_*` variable ([`Error::Config`](crate::Error::Config)), a
/// device that is not compiled in or cannot serve the job
/// ([`Error::Setup`](crate::Error::Setup)), a launcher failure
/// ([`Error::Bootstrap`](crate::Error::Bootstrap)), or a device setup
/// failure.
pub fn init() -> Result<World> {
    Config::from_env()?.init()
}

pub(crate) fn init_with(config: Config) -> Result<World> {
    check_compiled(config.device)?;
    install_subscriber(&config)?;
    let pmi = crate::boot::from_env()?;
    let span = rank_span(&config, pmi.as_ref().map_or(0, Bootstrap::rank));
    let entered = span.enter();
    let (engine, boot) = match pmi {
        None => (singleton(&config)?, Boot::Singleton),
        Some(mut pmi) => (launched(&config, &mut pmi)?, Boot::Pmi(Some(pmi))),
    };
    tracing::debug!(
        size = engine.size(),
        device = engine.device().name(),
        "ferry initialised"
    );
    drop(entered);
    Ok(World::from_shared(Shared::new(engine, config, boot, span)))
}

/// Asking for a device this build lacks is an error before anything starts.
fn check_compiled(device: DeviceChoice) -> Result<()> {
    let missing = match device {
        DeviceChoice::Shm if !cfg!(feature = "shm") => Some(SetupError::FeatureNotCompiled {
            device: "shm",
            feature: "shm",
            needs: "nothing but Rust",
        }),
        DeviceChoice::Ofi if !cfg!(feature = "ofi") => Some(SetupError::FeatureNotCompiled {
            device: "ofi",
            feature: "ofi",
            needs: "libfabric-dev",
        }),
        DeviceChoice::Verbs if !cfg!(feature = "verbs") => Some(SetupError::FeatureNotCompiled {
            device: "verbs",
            feature: "verbs",
            needs: "libibverbs-dev",
        }),
        DeviceChoice::Ofi => Some(SetupError::NotImplemented("ofi")),
        DeviceChoice::Verbs => Some(SetupError::NotImplemented("verbs")),
        _ => None,
    };
    missing.map_or(Ok(()), |e| Err(e.into()))
}

/// Installs a `tracing` subscriber for `FERRY_LOG`, unless the application
/// installed its own (which then takes precedence: not an error).
fn install_subscriber(config: &Config) -> Result<()> {
    let Some(filter) = &config.log else {
        return Ok(());
    };
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| SetupError::Log(e.to_string()))?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    Ok(())
}

/// The span every log line of this rank is under (entered at setup and
/// whenever a thread holds the engine lock).
fn rank_span(config: &Config, rank: Rank) -> tracing::Span {
    if config.log.is_some() {
        tracing::info_span!("rank", rank)
    } else {
        tracing::Span::none()
    }
}

fn singleton(config: &Config) -> Result<Engine<NodeDevice>> {
    let device = match config.device {
        DeviceChoice::Auto | DeviceChoice::Loopback => NodeDevice::Loopback(Loopback::new(0)),
        DeviceChoice::Shm => shm_device(config, &mut SingletonBoot::new(), &[0])?,
        DeviceChoice::Ofi | DeviceChoice::Verbs => {
            return Err(SetupError::NotImplemented(config.device.name()).into())
        }
    };
    Ok(Engine::new(0, 1, device, config.engine.clone())?)
}

/// This machine's identity: hostname and kernel boot id (two containers
/// with one hostname on different kernels are different nodes; one host
/// name reused after a reboot is a different boot).
pub(crate) fn host_id() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy().into_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{host}/{}", boot.trim())
}

fn host_key(rank: Rank) -> String {
    format!("ferry-host-{rank}")
}

/// The job ranks on this node, in order (this rank included).
fn local_ranks<B: Bootstrap + ?Sized>(boot: &mut B) -> Result<Vec<Rank>> {
    let me = boot.rank();
    let mine = host_id();
    boot.put(&host_key(me), &mine)?;
    boot.barrier()?;
    let mut local = Vec::new();
    for r in 0..boot.size() as Rank {
        if r == me || boot.get(&host_key(r))? == mine {
            local.push(r);
        }
    }
    Ok(local)
}

fn launched(config: &Config, boot: &mut PmiClient) -> Result<Engine<NodeDevice>> {
    let (rank, size) = (boot.rank(), boot.size());
    let local = local_ranks(boot)?;
    let remote = size as usize - local.len();
    tracing::debug!(rank, size, local = local.len(), "ranks grouped by node");
    let device = match config.device {
        DeviceChoice::Loopback if size > 1 => {
            return Err(SetupError::DeviceUnsuitable {
                device: "loopback",
                why: "it reaches only its own rank, and the job has more than one",
            }
            .into())
        }
        DeviceChoice::Loopback => NodeDevice::Loopback(Loopback::new(rank)),
        _ if remote > 0 => return Err(SetupError::NetworkDeviceNeeded { remote, size }.into()),
        DeviceChoice::Auto | DeviceChoice::Shm => shm_device(config, &mut *boot, &local)?,
        DeviceChoice::Ofi | DeviceChoice::Verbs => {
            return Err(SetupError::NotImplemented(config.device.name()).into())
        }
    };
    Ok(Engine::new(rank, size, device, config.engine.clone())?)
}

#[cfg(feature = "shm")]
fn shm_device(config: &Config, boot: &mut dyn Bootstrap, local: &[Rank]) -> Result<NodeDevice> {
    // The device's own variables (FERRY_SHM_CELL_SIZE, FERRY_SHM_CELLS,
    // FERRY_SHM_DIR); FERRY_SHM_CMA as this crate's `Config` says.
    let mut opts = ferry_shm::ShmOptions::from_env().map_err(|e| SetupError::Shm(e.to_string()))?;
    if let Some(cma) = config.shm_cma {
        opts.cma = cma;
    }
    let device =
        ferry_shm::ShmDevice::new(boot, local, opts).map_err(|e| SetupError::Shm(e.to_string()))?;
    Ok(NodeDevice::Shm(device))
}

#[cfg(not(feature = "shm"))]
fn shm_device(_config: &Config, _boot: &mut dyn Bootstrap, _local: &[Rank]) -> Result<NodeDevice> {
    Err(SetupError::FeatureNotCompiled {
        device: "shm",
        feature: "shm",
        needs: "nothing but Rust",
    }
    .into())
}
