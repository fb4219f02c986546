//! # ferry-ofi: ferry's libfabric device
//!
//! Carries ferry over any libfabric provider with reliable datagram
//! endpoints (`FI_EP_RDM`) and tagged messages: `tcp;ofi_rxm` and `shm`
//! here, `verbs;ofi_rxm`, `efa`, `cxi`, `psm3` on clusters.
//!
//! ## Quick start
//! Build `ferry` with the `ofi` feature (needs libfabric >= 1.17 with its
//! headers, pkg-config and libclang: `apt-get install libfabric-dev
//! pkg-config clang libclang-dev`) and run with `FERRY_DEVICE=ofi`. The
//! provider is `FERRY_OFI_PROVIDER`, else libfabric's `FI_PROVIDER`, else
//! libfabric's first choice. `ferry-info` lists what [`providers`] finds.
//!
//! ## Features
//! - **Eager** packets are tagged messages from a bounded pool of device
//!   send buffers (or `fi_tinject` when they fit the provider's inject
//!   size), received into pre-posted bounce buffers that
//!   `Incoming::into_payload` hands over without a copy (see the `eager`
//!   module's docs for the framing and the buffer policy).
//! - **Rendezvous** by `fi_read`/`fi_write` where the provider offers
//!   FI_RMA (registration per operation; FI_MR_LOCAL, FI_MR_VIRT_ADDR,
//!   FI_MR_PROV_KEY, FI_MR_ALLOCATED and FI_MR_ENDPOINT are honoured).
//!   Without FI_RMA, [`Caps`](ferry_core::Caps) says so and the engine uses
//!   its fragmented protocol.
//! - **Progress** is `fi_cq_read` in [`Device::progress`](ferry_core::Device)
//!   (manual-progress providers need nothing else). A refused post
//!   (`-FI_EAGAIN`) reads the CQ before returning `Sent::Busy`, so a caller
//!   retrying a send keeps the provider progressing.
//! - **Waiting**: the CQ is opened with `FI_WAIT_FD`; `arm` is `fi_trywait`;
//!   `wait_fd` is an epoll set holding the CQ's fd and the liveness
//!   sockets. Providers without a wait fd (libfabric 1.17's `shm`) get
//!   `FI_WAIT_NONE`, `caps.wait_fd = false` and `wait_fd() = None`, and
//!   their owner polls.
//! - **Setup** is collective: addresses go through the bootstrap KVS
//!   (`ferry-ofi-addr-{rank}`), then every rank sends a hello to every peer
//!   and waits for theirs (rxm and shm connect lazily, and would refuse a
//!   job's first sends with `-FI_EAGAIN`), and, with RMA, reads 8 bytes
//!   from itself (rxm over tcp allocates about 17 MiB at an endpoint's
//!   first RMA; better at setup than inside the first rendezvous).
//! - **Failure**: CQ error entries fail the affected operation; a dead peer
//!   is reported through `Sink::peer_failed`. Deaths with nothing in flight
//!   are noticed through one idle TCP connection per pair of ranks (the
//!   `liveness` module), which the kernel closes when a process dies.
//!
//! ## Environment
//! | variable | meaning | default |
//! |---|---|---|
//! | `FERRY_OFI_PROVIDER` | provider name (`tcp;ofi_rxm`, `shm`, ...) | `FI_PROVIDER`, else libfabric's choice |
//! | `FERRY_OFI_EAGER_SIZE` | largest packet payload (`caps.max_payload`) | 16384 (shm: 8192) |
//! | `FERRY_OFI_RECV_BUFFERS` | receive buffers kept posted | 64 (shm: its rx queue size, 1024) |
//! | `FERRY_OFI_SEND_BUFFERS` | send buffers (back-pressure beyond) | 64 |
//! | `FERRY_OFI_RMA` | `0` turns rendezvous by RMA off | `1` |
//! | `FERRY_OFI_LIVENESS` | `0` turns the liveness sockets off | `1` |
//! | `FERRY_OFI_LIVENESS_ADDR` | the IP peers reach this rank's liveness socket at | the host's first IPv4 address |
//!
//! ## Safety
//! All raw libfabric calls are in the `ffi` module, behind wrappers that
//! map `-FI_E*` to typed errors; every `unsafe` block states its invariant.
//! Buffers handed to the provider are owned by the device until their
//! completion is read, and the endpoint is closed before any of them is
//! freed.
//!
//! ## Thread safety
//! [`OfiDevice`] is `Send` (the domain is opened `FI_THREAD_DOMAIN`, and
//! every call takes `&mut self`); buffers it hands out may be dropped on
//! any thread.
//!
//! ## Cleanup
//! Dropping the device closes the endpoint, its registrations, AV, CQ,
//! domain and fabric, in that order. Receive buffers still held by the
//! application stay valid and are freed when dropped.
//!
//! A known wart of Debian's libfabric 1.17: its psm provider loads
//! libinfinipath, which installs a SIGTERM handler that calls `exit()`. A
//! SIGTERM that lands while the process is inside libfabric's first
//! `fi_getinfo` therefore deadlocks in libfabric's destructor (the handler
//! runs with the init lock held), and the process needs SIGKILL; `ferryrun`
//! sends one 2 s after its SIGTERM, so a job killed during start-up ends
//! 2 s later than it would.

mod cq;
mod device;
mod eager;
mod error;
mod failure;
mod ffi;
mod info;
mod liveness;
mod rma;
mod setup;
mod sys;
#[cfg(test)]
mod tests;

pub use device::OfiDevice;
pub use error::OfiError;
pub use info::{providers, ProviderInfo};

/// Options, from the environment (see the crate docs' table).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OfiOptions {
    /// The provider to use; `None`: libfabric's first choice.
    pub provider: Option<String>,
    /// The largest packet payload; 0: the provider's default (see the
    /// crate docs).
    pub eager_size: usize,
    /// Receive buffers kept posted; 0: the provider's default.
    ///
    /// The `shm` provider of libfabric 1.17 stops delivering once more
    /// messages have arrived unexpected (no receive posted) than about twice
    /// the posted receives, so on shm the default keeps a receive posted
    /// for every slot of its receive queue and no message is ever
    /// unexpected there.
    pub recv_buffers: usize,
    /// Send buffers.
    pub send_buffers: usize,
    /// Receive buffers that may be handed to the engine at once (beyond,
    /// `into_payload` copies).
    pub max_parked: usize,
    /// Use FI_RMA for rendezvous when the provider has it.
    pub rma: bool,
    /// Watch peers through liveness sockets.
    pub liveness: bool,
}

impl Default for OfiOptions {
    fn default() -> Self {
        OfiOptions {
            provider: None,
            eager_size: 0,
            recv_buffers: 0,
            send_buffers: 64,
            max_parked: 64,
            rma: true,
            liveness: true,
        }
    }
}

fn env_usize(var: &'static str, default: usize, min: usize, max: usize) -> Result<usize, OfiError> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or(OfiError::BadOption {
                var,
                value: v,
                expected: "a number in range (see ferry-ofi's docs)",
            }),
    }
}

fn env_bool(var: &'static str, default: bool) -> Result<bool, OfiError> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(v) => match v.trim() {
            "1" | "yes" | "true" | "on" => Ok(true),
            "0" | "no" | "false" | "off" => Ok(false),
            _ => Err(OfiError::BadOption {
                var,
                value: v,
                expected: "0 or 1",
            }),
        },
    }
}

impl OfiOptions {
    /// Reads the device's variables.
    ///
    /// # Errors
    /// [`OfiError::BadOption`] for a malformed variable.
    pub fn from_env() -> Result<Self, OfiError> {
        let d = OfiOptions::default();
        let provider = ["FERRY_OFI_PROVIDER", "FI_PROVIDER"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()));
        Ok(OfiOptions {
            provider,
            eager_size: env_usize("FERRY_OFI_EAGER_SIZE", d.eager_size, 0, 1 << 24)?,
            recv_buffers: env_usize("FERRY_OFI_RECV_BUFFERS", d.recv_buffers, 0, 1 << 16)?,
            send_buffers: env_usize("FERRY_OFI_SEND_BUFFERS", d.send_buffers, 1, 1 << 16)?,
            max_parked: env_usize("FERRY_OFI_MAX_PARKED", d.max_parked, 0, 1 << 20)?,
            rma: env_bool("FERRY_OFI_RMA", d.rma)?,
            liveness: env_bool("FERRY_OFI_LIVENESS", d.liveness)?,
        })
    }

    /// Default options for `provider`.
    pub fn with_provider(provider: &str) -> Self {
        OfiOptions {
            provider: Some(provider.to_owned()),
            ..OfiOptions::default()
        }
    }
}
