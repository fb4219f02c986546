//! Device selection: configuration → logging → bootstrap → device per peer
//! → engine → [`World`]. Everything that decides which device reaches which
//! rank lives here:
//!
//! - [`init`] and the grouping of ranks by node (this module);
//! - [`NodeDevice`], the enum of the devices compiled in (`node`);
//! - [`Mixed`](mixed::Mixed), shared memory on the node and a network device
//!   beyond it, in one engine (`mixed`);
//! - one module per device feature, `shm`, `ofi`, `verbs`, that builds the
//!   device from its `FERRY_*` variables; a build without the feature gets
//!   the module's stub from `stub/` (as mio's `shell` backend, MPICH's
//!   `stubnm`), which returns [`SetupError::FeatureNotCompiled`];
//! - `across`: the network device beside shared memory for a job that spans
//!   nodes: `shm_verbs`, `shm_ofi` or `none`, by the features built;
//! - `boot`: the PMI client (PMI-1 or PMI-2, as `ferry_pmi` chooses from
//!   the environment), or a singleton's key-value space.
//!
//! How [`init`] chooses:
//! - Not launched by a PMI server: a singleton job (rank 0 of 1) over the
//!   loopback device.
//! - Launched by one (`ferryrun`, Hydra): every rank publishes a host id
//!   (hostname and kernel boot id) in the job's key-value space; the ranks
//!   with this rank's host id share a node and talk through shared memory.
//!   The device per peer:
//!   - `FERRY_DEVICE=auto` (the default): this node's ranks through shared
//!     memory and, if the job spans nodes, the others through the network
//!     device compiled in (verbs if built with it, else ofi), both in one
//!     engine ([`Mixed`](mixed::Mixed));
//!   - `shm`: every rank through shared memory (one node only);
//!   - `ofi` / `verbs`: every rank, this one included, through that device.
//!
//!   Two testing knobs split one machine into "nodes", so the mixed path
//!   runs without a second machine: `FERRY_HOST_ID` replaces this rank's
//!   host id, and `FERRY_RANKS_PER_NODE=k` puts ranks `k·i … k·i+k-1` on
//!   node `i`.

use ferry_core::loopback::Loopback;
use ferry_core::{settings, Bootstrap, Engine, Rank};
use ferry_pmi::PmiClient;

use crate::config::{Config, DeviceChoice};
use crate::error::{Result, SetupError};
use crate::shared::Shared;
use crate::world::World;
use boot::{Boot, SingletonBoot};
pub use node::NodeDevice;

pub(crate) mod boot;
pub mod mixed;
pub(crate) mod node;

#[cfg_attr(not(feature = "shm"), path = "stub/shm.rs")]
mod shm;

#[cfg_attr(not(feature = "ofi"), path = "stub/ofi.rs")]
mod ofi;

#[cfg_attr(not(feature = "verbs"), path = "stub/verbs.rs")]
mod verbs;

// The network device beside shared memory: verbs if built, else ofi.
#[cfg_attr(all(feature = "shm", feature = "verbs"), path = "across/shm_verbs.rs")]
#[cfg_attr(
    all(feature = "shm", feature = "ofi", not(feature = "verbs")),
    path = "across/shm_ofi.rs"
)]
#[cfg_attr(
    not(all(feature = "shm", any(feature = "ofi", feature = "verbs"))),
    path = "across/none.rs"
)]
mod across;

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

impl Config {
    /// Starts ferry with this configuration; see [`init`].
    ///
    /// # Errors
    /// As for [`init`].
    pub fn init(self) -> Result<World> {
        self.check()?;
        init_with(self)
    }
}

fn init_with(config: Config) -> Result<World> {
    check_compiled(config.device)?;
    install_subscriber(&config)?;
    let pmi = boot::from_env()?;
    let span = rank_span(&config, pmi.as_ref().map_or(0, Bootstrap::rank));
    let entered = span.enter();
    if let Some(pmi) = &pmi {
        tracing::debug!(version = ?pmi.version(), job = pmi.job_id(), "launched by a PMI server");
    }
    let (engine, boot, local_ranks) = match pmi {
        None => (singleton(&config)?, Boot::Singleton, vec![0]),
        Some(mut pmi) => {
            let (engine, local_ranks) = launched(&config, &mut pmi)?;
            (engine, Boot::Pmi(Some(pmi)), local_ranks)
        }
    };
    tracing::debug!(
        size = engine.size(),
        device = engine.device().name(),
        "ferry initialised"
    );
    drop(entered);
    let shared = Shared::new(engine, config, boot, span, local_ranks);
    // Once the world is whole: if the thread cannot start, dropping it
    // tears everything down like any other failed init.
    shared.start_progress()?;
    Ok(World::from_shared(shared))
}

/// Asking for a device this build lacks is an error before anything starts.
fn check_compiled(device: DeviceChoice) -> Result<()> {
    match device {
        DeviceChoice::Shm => shm::compiled(),
        DeviceChoice::Ofi => ofi::compiled(),
        DeviceChoice::Verbs => verbs::compiled(),
        DeviceChoice::Auto | DeviceChoice::Loopback => Ok(()),
    }
}

/// Installs a `tracing` subscriber for `FERRY_LOG`, unless the application
/// installed its own (which then takes precedence: not an error).
fn install_subscriber(config: &Config) -> Result<()> {
    let Some(filter) = &config.log else {
        return Ok(());
    };
    let filter = tracing_subscriber::EnvFilter::try_new(filter).map_err(SetupError::Log)?;
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
        DeviceChoice::Shm => shm::node_device(&mut SingletonBoot::new(), &[0])?,
        DeviceChoice::Ofi | DeviceChoice::Verbs => {
            net_device(config.device, &mut SingletonBoot::new(), &[0])?
        }
    };
    Ok(Engine::new(0, 1, device, config.engine.clone())?)
}

/// This machine's identity: hostname and kernel boot id (two containers
/// with one hostname on different kernels are different nodes; one host
/// name reused after a reboot is a different boot).
pub(crate) fn host_id() -> String {
    if let Some(forced) = settings::text(&env, "FERRY_HOST_ID") {
        return forced;
    }
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy().into_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{host}/{}", boot.trim())
}

/// The process environment, as a settings source.
fn env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// `FERRY_RANKS_PER_NODE`, if set (a testing knob; see the module docs).
fn ranks_per_node() -> Result<Option<u32>> {
    Ok(settings::number(&env, "FERRY_RANKS_PER_NODE", 1, u32::MAX)?)
}

fn host_key(rank: Rank) -> String {
    format!("ferry-host-{rank}")
}

/// The job ranks on this node, in order (this rank included).
fn local_ranks<B: Bootstrap + ?Sized>(boot: &mut B) -> Result<Vec<Rank>> {
    let me = boot.rank();
    let mut mine = host_id();
    if let Some(k) = ranks_per_node()? {
        mine = format!("{mine}/node{}", me as u32 / k);
    }
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

/// The engine, and the job ranks on this node.
fn launched(config: &Config, boot: &mut PmiClient) -> Result<(Engine<NodeDevice>, Vec<Rank>)> {
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
        DeviceChoice::Auto if remote > 0 => across_nodes(&mut *boot, &local)?,
        DeviceChoice::Shm if remote > 0 => {
            return Err(SetupError::NetworkDeviceNeeded { remote, size }.into())
        }
        DeviceChoice::Auto | DeviceChoice::Shm => shm::node_device(&mut *boot, &local)?,
        DeviceChoice::Ofi | DeviceChoice::Verbs => {
            let all: Vec<Rank> = (0..size as Rank).collect();
            net_device(config.device, &mut *boot, &all)?
        }
    };
    Ok((
        Engine::new(rank, size, device, config.engine.clone())?,
        local,
    ))
}

/// The network device asked for, over `peers` (collective over every rank
/// with a peer on it).
fn net_device(
    choice: DeviceChoice,
    boot: &mut dyn Bootstrap,
    peers: &[Rank],
) -> Result<NodeDevice> {
    match choice {
        DeviceChoice::Verbs => verbs::node_device(boot, peers),
        DeviceChoice::Ofi => ofi::node_device(boot, peers),
        DeviceChoice::Auto | DeviceChoice::Shm | DeviceChoice::Loopback => {
            Err(SetupError::DeviceUnsuitable {
                device: choice.name(),
                why: "it is not a network device",
            }
            .into())
        }
    }
}

/// Shared memory for `local`, the network device for everyone else. Every
/// rank of a job that spans nodes has remote peers, so the network setup
/// is collective over the whole job, as its exchange needs.
fn across_nodes(boot: &mut PmiClient, local: &[Rank]) -> Result<NodeDevice> {
    let size = boot.size();
    let on_node: Vec<bool> = (0..size as Rank).map(|r| local.contains(&r)).collect();
    let remote: Vec<Rank> = (0..size as Rank).filter(|r| !local.contains(r)).collect();
    across::device(boot, local, &on_node, &remote)
}
