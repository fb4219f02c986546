//! # ferry-verbs: ferry's InfiniBand / RoCE device
//!
//! A [`ferry_core::Device`] over libibverbs (bindings: `rdma-sys`): one RC
//! queue pair per peer, connected lazily on first use over a UD handshake
//! (one UD QP per rank at init), a shared receive queue of registered eager buffers
//! with credit-based flow control, inline sends for tiny packets, RDMA READ
//! / WRITE for rendezvous, and a completion channel for passive waiting.
//!
//! # Quick start
//! `ferry` builds this device when compiled with feature `verbs` and run
//! with `FERRY_DEVICE=verbs`; `FERRY_VERBS_DEVICE=mlx5_0` picks the device
//! (default: the first with an active port; see [`VerbsOptions`]).
//! `ferry-info` lists the ports ([`devices`]). Directly:
//!
//! ```no_run
//! # fn demo(boot: &mut dyn ferry_core::Bootstrap) -> Result<(), ferry_verbs::VerbsError> {
//! let peers: Vec<ferry_core::Rank> = (0..boot.size() as ferry_core::Rank).collect();
//! let dev = ferry_verbs::VerbsDevice::new(boot, &peers, ferry_verbs::VerbsOptions::from_env()?)?;
//! # let _ = dev; Ok(()) }
//! ```
//!
//! # Contract
//! - [`VerbsDevice::new`] is collective over every rank that has a peer on
//!   the device (one KVS put, one barrier, one get per peer); `peers` is
//!   the sorted list of job ranks to reach, this rank included when
//!   self-traffic goes through the device (a loopback QP pair carries it).
//! - No RC QP is made at init: the first send, get or put towards a peer
//!   starts a UD handshake and returns `Busy` until it completes (the
//!   engine keeps the operation queued, in order); the peer must progress
//!   to answer. A peer that does not answer within `FERRY_VERBS_CONNECT_MS`
//!   (10 min) fails with `PeerError::Died`. The bound is long because a
//!   live peer computing without calling into ferry cannot answer, and
//!   failing it would be wrong; a peer that really died is reported much
//!   sooner, by the observer ring's keepalives (`observe.rs`). See `qp.rs`.
//! - Peers are global job ranks.
//!
//! # Design (one module per concept)
//! - `ffi`: every raw call, checked; the ops-table verbs never panic;
//!   `ffi::slab` (registered slots and the ARecv handover buffer),
//!   `ffi::registered` (an engine buffer with its MR, attached or not),
//!   `ffi::post` (the safe
//!   ways to post work requests).
//! - `context`: device / port / GID selection, [`devices`].
//! - `qp`: the connection protocol (docs) and the QP state transitions;
//!   `handshake`: the UD endpoint; `connect`: the per-peer handshake state
//!   machine (lazy connections).
//! - `srq`: eager receive buffers and the ARecv handover.
//! - `credits`, `imm`: flow control and the 32-bit immediate framing.
//! - `mr`: registration, and a registration cache that cannot hand out a
//!   stale key (see there): registrations attached to the owned `Buf`s they
//!   register, and, for lent memory, `rcache` (reuse proven by the page
//!   frames in `pagemap`).
//! - `rdma`: `get` / `put`, split into chunks of at most `max_msg_sz`.
//! - `signal`: selective signalling of small inline sends; `doorbell`
//!   (with `ffi::chain`): doorbell batching, sends held during a batch
//!   (`Device::batch_begin`) and posted as one work-request list.
//! - `cq`: polling and the arm/sleep/disarm protocol.
//! - `liveness`: keepalive probes, so a rank that only waits for a dead
//!   peer learns of its death too (`observe`: the observer ring and down
//!   notices, for peers it never connected to); the wait set (CQ channel, timer, and the
//!   asynchronous-event fd, `ffi::events`).
//! - `device`, `setup`: the [`ferry_core::Device`] implementation;
//!   `failure`: peer failures (failed completions, asynchronous events).
//!
//! # Features
//! None. Building needs libibverbs-dev, librdmacm-dev, clang (libclang) and
//! pkg-config (rdma-sys runs bindgen); running needs an RDMA device
//! (a ConnectX HCA, or Soft-RoCE: `rdma link add rxe0 type rxe netdev eth0`)
//! and enough locked memory (`ulimit -l`).
//!
//! # Safety
//! All `unsafe` code is in the `ffi` module (the crate is
//! `#![deny(unsafe_code)]` elsewhere): the raw calls, the registered slabs
//! and the buffers lent from them (`ffi::slab`), registration of engine
//! buffers (`ffi::registered`) and posting (`ffi::post`); each block states
//! the invariant it relies on. The rule throughout: memory is registered
//! only while something this crate owns keeps it alive (an MR is always
//! deregistered before its memory goes: the device's own buffers, and the
//! `Buf`s a registration is attached to, which end it when they drop), and
//! a buffer is touched by the CPU only while no work request uses it. The
//! one registration that may outlive the memory it was made for is a
//! cached key of *lent* memory: the MR pins its pages, so they never go
//! while it lives, and the key is reused only for those same pages (see
//! `mr.rs`).
//!
//! # Thread safety
//! [`VerbsDevice`] is `Send`, not `Sync`: the engine drives it through
//! `&mut`. ARecv buffers it hands out are `Send` and may be dropped on any
//! thread.
//!
//! # Errors
//! Setup fails with [`VerbsError`]. Afterwards a failed work completion is
//! a [`ferry_core::DeviceError::Completion`] on the affected operation, and
//! the peer whose QP failed is reported once through
//! [`ferry_core::device::Sink::peer_failed`] (`PeerError::Died` for
//! retry-exceeded, `TransferFailed` otherwise); other peers keep working.
//! The device's asynchronous events (`ibv_get_async_event`, read every
//! 10 ms while progress is called and whenever they wake a sleeper: the
//! event fd is in the wait set) fail the peers they cut off with
//! [`ferry_core::DeviceError::Event`]: the port going down or the device
//! failing fails every peer, a queue pair failing fails its peer.
//!
//! # Cleanup
//! Dropping the device destroys QPs, memory regions, SRQ, CQ, channel, PD
//! and context, in that order. Nothing outlives the process.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod connect;
mod context;
mod cq;
mod credits;
mod device;
mod doorbell;
mod error;
mod failure;
#[allow(unsafe_code)]
mod ffi;
/// The immediate framing (in `ferry-verbs-wire`, so it is fuzzed without
/// libibverbs).
use ferry_verbs_wire::imm;
mod handshake;
mod limits;
mod liveness;
mod mr;
mod observe;
mod options;
mod pagemap;
mod peers;
mod qp;
mod rcache;
mod rdma;
mod sends;
mod setup;
mod signal;
mod srq;

#[cfg(test)]
mod tests;

/// The engine may move its device between threads (behind a mutex): keep
/// the device `Send`.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<VerbsDevice>();
};

pub use context::{devices, PortInfo};
pub use device::{Footprint, VerbsDevice};

/// Bytes this rank keeps per peer it has not connected to: its `Peer`
/// slot, its published address and its address-handle slot (for sizing
/// large jobs; see `qp.rs`).
pub fn peer_state_bytes() -> (usize, usize, usize) {
    (
        std::mem::size_of::<peers::Peer>(),
        std::mem::size_of::<ferry_verbs_wire::connect::UdAddr>(),
        std::mem::size_of::<Option<ffi::Ah>>(),
    )
}
pub use error::VerbsError;
pub use options::VerbsOptions;
