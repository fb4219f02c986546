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
//!   FI_MR_PROV_KEY, FI_MR_ALLOCATED and FI_MR_ENDPOINT are honoured: see
//!   *Registration modes* below). Without FI_RMA,
//!   [`Caps`](ferry_core::Caps) says so and the engine uses its fragmented
//!   protocol.
//! - **Progress** is `fi_cq_read` in [`Device::progress`](ferry_core::Device)
//!   (manual-progress providers need nothing else). A refused post
//!   (`-FI_EAGAIN`) reads the CQ before returning `Sent::Busy`, so a caller
//!   retrying a send keeps the provider progressing.
//! - **Waiting**: the CQ is opened with `FI_WAIT_FD`; `arm` is `fi_trywait`;
//!   `wait_fd` is an epoll set holding the CQ's fd and the liveness
//!   sockets. Providers without a wait fd (libfabric 1.17's `shm`) get
//!   `FI_WAIT_NONE`, `caps.wait_fd = false` and `wait_fd() = None`, and
//!   their owner polls. While one of this rank's RMA operations is in
//!   flight under manual progress, `driving` says so: its bytes move only
//!   inside `fi_cq_read`, so a hybrid waiter keeps polling instead of
//!   sleeping through it (a sleeping receiver took 1 MiB streams over
//!   `tcp;ofi_rxm` to 0.73x of polling; see docs/perf/ofi-bandwidth.md).
//! - **Setup** is collective: addresses go through the bootstrap KVS
//!   (`ferry-ofi-addr-{rank}`), then every rank sends a hello to every peer
//!   and waits for theirs (rxm and shm connect lazily, and would refuse a
//!   job's first sends with `-FI_EAGAIN`), and, with RMA, reads 8 bytes
//!   from itself (rxm over tcp allocates about 17 MiB at an endpoint's
//!   first RMA; better at setup than inside the first rendezvous).
//! - **Failure**: CQ error entries fail the affected operation; a dead peer
//!   is reported through `Sink::peer_failed`. Deaths with nothing in flight
//!   are noticed through one idle TCP connection per pair of ranks (the
//!   `liveness` module), which the kernel closes when a process dies. Each
//!   one is authenticated by an HMAC handshake over the job secret
//!   (`ferry_core::auth`; `SECURITY.md`): anything else that connects is
//!   logged and closed.
//!
//! ## Registration modes, and where each is tested
//! What the providers of Debian's libfabric 1.17 demand (`fi_info -v`, and
//! `ferry-info`, which asks with ferry's own hints), on this machine and in
//! the Soft-RoCE VM of `ci/verbs.sh`:
//!
//! | provider | `mr_mode` | tested by |
//! |---|---|---|
//! | `verbs;ofi_rxm` | `LOCAL`, `VIRT_ADDR`, `PROV_KEY`, `ALLOCATED` (4-byte keys) | `ci/verbs.sh`, in the VM: this crate's tests and the conformance suite |
//! | `tcp;ofi_rxm`, `net;ofi_rxm`, `net`, `sockets` | none (requested keys, offsets) | `ci/ofi.sh` (`tcp;ofi_rxm`) |
//! | `shm` | `VIRT_ADDR` | `ci/ofi.sh` |
//! | `verbs;ofi_rxd`, `udp;ofi_rxd` | none | not tested (no FI_WAIT_FD) |
//!
//! **No provider of libfabric 1.17 as Debian builds it that can run here
//! demands FI_MR_ENDPOINT.** Checked: every entry `fi_info -v` lists, on
//! the host and in the VM (verbs, `verbs;ofi_rxm`, `verbs;ofi_rxd`, tcp,
//! `tcp;ofi_rxm`, net, `net;ofi_rxm`, udp, `udp;ofi_rxd`, sockets, shm).
//! The psm2 and psm providers are built in too but list nothing without
//! their hardware, so they were not checked. The FI_MR_ENDPOINT path
//! (`fi_mr_bind` to the endpoint, then `fi_mr_enable`, and the key read
//! after enabling) has therefore never run.
//!
//! `verbs;ofi_rxm` on a small RDMA device needs one setting: rxm opens its
//! completion queue with `(tx + rx) * FI_UNIVERSE_SIZE` entries (256 * 256
//! by default), more than Soft-RoCE's `max_cqe` of 32767, and `fi_enable`
//! fails with `-FI_EINVAL` (the error then says so): set `FI_UNIVERSE_SIZE`
//! to at most 127 there. `FI_VERBS_IFACE` is not needed. The verbs
//! provider finds its devices for FI_EP_MSG (which rxm runs over) by
//! resolving `localhost`, so a machine without `/etc/hosts` offers only
//! `verbs;ofi_rxd`.
//!
//! **A teardown crash inside the provider, and what ferry does about it.**
//! On `verbs;ofi_rxm` in the Soft-RoCE VM a rank sometimes died with
//! SIGSEGV inside libfabric's `fi_close` of the endpoint at teardown
//! (`Fabric::close_ep`, from `World::finalize`), after its job's work was
//! done: 3 of 100 runs of the `communicators` body on 2 ranks, and once in
//! a CI run (2026-11-29). Upstream has the same intermittent crash open as
//! ofiwg/libfabric#11828 (rxm's `rxm_close_conn` flushing a connection's
//! completions inside `fi_close`, still in v2.4.0). So before it closes the
//! endpoint the device now lets its own sends and RMA operations complete
//! (`OfiDevice::quiesce`, at most 200 ms; tens of µs in practice): 0
//! crashes in 90 runs since. That lowers the odds; it cannot prove the
//! provider's bug away.
//!
//! **Threads and libfabric's registration cache.** Providers that pin
//! memory (verbs) keep a registration cache whose monitor may be
//! "memhooks": opening and closing a domain then rewrites the code of
//! `munmap` and friends, and another thread inside one of them at that
//! moment dies with SIGSEGV (ofiwg/libfabric#7569, #10943). A program that
//! opens or closes devices while other threads allocate (ferry's own
//! device tests run every rank as a thread) sets `FI_MR_CACHE_MONITOR` to
//! `userfaultfd` or `disabled`; `ci/verbs.sh` does.
//!
//! ## Environment
//! Read once, by [`OfiOptions::from_env`], in the syntax of
//! `ferry_core::settings`: sizes as `16384`, `16k` or `16KiB`, flags as
//! `0`/`1` (or `off`/`on`, ...), and an empty value is the same as unset.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `FERRY_OFI_PROVIDER` | provider name (`tcp;ofi_rxm`, `shm`, ...) | `FI_PROVIDER`, else libfabric's choice |
//! | `FERRY_OFI_EAGER_SIZE` | largest packet payload (`caps.max_payload`) | under `ofi_rxm`, rxm's buffer size (`FI_OFI_RXM_BUFFER_SIZE`, 16384) less the 64-byte header room, so a packet stays in rxm's eager protocol: 16320; shm: 8192; other providers: 16384 |
//! | `FERRY_OFI_RECV_BUFFERS` | receive buffers kept posted | 64 (shm: its rx queue size, 1024) |
//! | `FERRY_OFI_SEND_BUFFERS` | send buffers (back-pressure beyond) | 64 |
//! | `FERRY_OFI_MAX_PARKED` | receive buffers handed to the engine at once (`into_payload` copies beyond) | 64 |
//! | `FERRY_OFI_RMA` | `0` turns rendezvous by RMA off | `1` |
//! | `FERRY_OFI_LIVENESS` | `0` turns the liveness sockets off | `1` |
//! | `FERRY_OFI_LIVENESS_ADDR` | the IP (or host name) this rank's liveness socket binds, and peers reach it at | the fabric endpoint's IP; loopback for `shm`; else the host's first IPv4 address |
//!
//! `FI_PROVIDER` is libfabric's own variable, honoured when
//! `FERRY_OFI_PROVIDER` is unset.
//!
//! ## Safety
//! All `unsafe` code is in the `ffi` module (the crate is
//! `#![deny(unsafe_code)]` elsewhere): the bindings (`ffi::sys`), the raw
//! libfabric calls behind wrappers that map `-FI_E*` to typed errors, the
//! operation contexts (`ffi::context`), the three places the device hands
//! its memory to the provider (`ffi::post`, which states the bookkeeping
//! that keeps that memory alive until its completion), and the borrowing
//! of libfabric's wait fd (`ffi::fd`). Every `unsafe` block states its
//! invariant.
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

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod buffers;
mod cq;
mod device;
mod eager;
mod error;
mod failure;
#[allow(unsafe_code)]
mod ffi;
mod info;
mod liveness;
mod peers;
mod rma;
mod setup;
#[cfg(test)]
mod tests;
mod transfers;

use ffi::sys;

pub use device::OfiDevice;
pub use error::OfiError;
pub use info::{providers, ProviderInfo};

use ferry_core::settings::{self, Source};

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
    /// The address (an IP or a host name) this rank's liveness socket
    /// binds and peers reach it at; `None`: the fabric endpoint's own IP,
    /// loopback for the node-local `shm` provider, else this host's first
    /// non-loopback IPv4 address. Never the wildcard address.
    pub liveness_addr: Option<String>,
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
            liveness_addr: None,
        }
    }
}

impl OfiOptions {
    /// Reads the device's variables from the environment.
    ///
    /// # Errors
    /// [`OfiError::BadVariable`] for a malformed or out-of-range variable.
    pub fn from_env() -> Result<Self, OfiError> {
        OfiOptions::from_source(&|var: &str| std::env::var(var).ok())
    }

    /// Reads the device's variables from `src`, each in this one place, in
    /// the syntax of [`ferry_core::settings`] (sizes as `8k`, an empty value
    /// as unset).
    ///
    /// # Errors
    /// [`OfiError::BadVariable`] for a malformed or out-of-range variable.
    pub fn from_source(src: &impl Source) -> Result<Self, OfiError> {
        let d = OfiOptions::default();
        let provider = settings::text(src, "FERRY_OFI_PROVIDER")
            .or_else(|| settings::text(src, "FI_PROVIDER"));
        Ok(OfiOptions {
            provider,
            eager_size: settings::size_in(src, "FERRY_OFI_EAGER_SIZE", 0, 1 << 24)?
                .unwrap_or(d.eager_size),
            recv_buffers: settings::number(src, "FERRY_OFI_RECV_BUFFERS", 0, 1 << 16)?
                .unwrap_or(d.recv_buffers),
            send_buffers: settings::number(src, "FERRY_OFI_SEND_BUFFERS", 1, 1 << 16)?
                .unwrap_or(d.send_buffers),
            max_parked: settings::number(src, "FERRY_OFI_MAX_PARKED", 0, 1 << 20)?
                .unwrap_or(d.max_parked),
            rma: settings::flag(src, "FERRY_OFI_RMA")?.unwrap_or(d.rma),
            liveness: settings::flag(src, "FERRY_OFI_LIVENESS")?.unwrap_or(d.liveness),
            liveness_addr: settings::text(src, "FERRY_OFI_LIVENESS_ADDR"),
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

#[cfg(test)]
mod options_tests {
    use super::*;

    #[test]
    fn variables_take_the_shared_syntax() {
        let table = [
            ("FERRY_OFI_EAGER_SIZE", "8k"),
            ("FERRY_OFI_SEND_BUFFERS", "16"),
            ("FERRY_OFI_RMA", "off"),
            ("FERRY_OFI_PROVIDER", ""),
            ("FI_PROVIDER", "shm"),
            ("FERRY_OFI_LIVENESS_ADDR", "10.0.0.1"),
        ];
        let src = |var: &str| {
            table
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        };
        let o = OfiOptions::from_source(&src).unwrap();
        assert_eq!(o.eager_size, 8192);
        assert_eq!(o.send_buffers, 16);
        assert!(!o.rma);
        assert_eq!(o.provider.as_deref(), Some("shm"), "empty is unset");
        assert_eq!(o.liveness_addr.as_deref(), Some("10.0.0.1"));
        assert_eq!(o.max_parked, OfiOptions::default().max_parked);
        let bad = |var: &str| (var == "FERRY_OFI_SEND_BUFFERS").then(|| "0".to_owned());
        let e = OfiOptions::from_source(&bad).unwrap_err();
        let OfiError::BadVariable(s) = &e else {
            panic!("{e}")
        };
        assert_eq!(s.var, "FERRY_OFI_SEND_BUFFERS");
        assert!(
            std::error::Error::source(&e).is_some(),
            "carried as the source"
        );
    }
}
