//! The device interface (ferry's ADI): what a transport must provide.
//!
//! The engine ([`crate::Engine`]) runs every protocol; a device only moves
//! bytes. This page is the whole contract, in the manner of mio's `sys`
//! backends and libfabric's "requirements for core providers". Each clause
//! has one generic check in the device-contract test kit (`testkit`, behind
//! the test-only `__testkit` feature), which `device_contract_tests!`
//! instantiates for every device; the conformance suite in `ferry-tests`
//! checks whole jobs on top.
//!
//! # Peers
//! Peers are job ranks `0..size`, including the local rank itself (a device
//! must deliver packets a rank sends to itself, or the engine must be given a
//! device that routes self-traffic to [`Loopback`](crate::loopback::Loopback)).
//! [`Device::caps`] may differ per peer (a composite device routes same-node
//! peers to shm and others to the network).
//!
//! # Packets: [`Device::send`]
//! A packet is a header (at most [`MAX_HEADER`](crate::wire::MAX_HEADER)
//! bytes, opaque to the device) plus a payload of at most
//! [`Caps::max_payload`] bytes.
//! - **Buffered.** When `send` returns [`Sent::Done`] the device has copied
//!   or transmitted both slices; the caller may reuse them at once. This is
//!   what lets an eager send complete inside its initiating call.
//! - **Back-pressure.** When the device is out of resources (ring full, no
//!   credits, `-FI_EAGAIN`, send queue full) it returns [`Sent::Busy`],
//!   having sent nothing. The engine keeps the operation and retries after a
//!   later `progress` (UCX's `NO_RESOURCE` rule). Busy is never an error.
//! - **Order.** Packets from one rank to one peer are delivered in the order
//!   `send` accepted them, and each exactly once. No order holds across
//!   peers. The engine checks a per-peer sequence number on matched packets
//!   and reports a violation as [`PeerError::Protocol`].
//! - **Framing.** The receiver sees the same header and payload boundaries
//!   ([`Incoming::header`], [`Incoming::payload`]).
//! - **Size limits are the engine's.** The engine never passes `send` a
//!   header longer than [`MAX_HEADER`](crate::wire::MAX_HEADER) nor a payload
//!   longer than the peer's [`Caps::max_payload`]: its protocol table clamps
//!   the eager limit and the fragment size to `max_payload`
//!   ([`ProtocolTable`](crate::protocol::ProtocolTable)), and every header
//!   it builds is encoded into a `[u8; MAX_HEADER]`. A device may rely on
//!   this: the network and shared-memory devices check it only with
//!   `debug_assert!`, not again on the hot path of a release build. A
//!   caller that breaks it gets a panic in a debug build,
//!   and in a release build whatever the device's memory-safety bounds make
//!   of it. (The conformance kit sends packets at both limits, which must
//!   arrive whole; the simulated network still refuses a longer payload, so
//!   that an engine test would catch the engine breaking the clause.)
//!
//! # Memory and RDMA
//! [`Device::register`] takes a [`Buf`] *by value*: the device owns the
//! memory for as long as it is registered and gives it back from
//! [`Device::deregister`]. A device may therefore keep raw pointers into it.
//! Registration returns a [`RemoteKey`] the engine sends to the peer.
//! - [`Device::rdma`] moves `len` bytes between a local registered region
//!   and a peer's, in the direction [`RdmaDir`] names: a get reads the
//!   peer's region into the local one, a put writes the local one into the
//!   peer's. A device implements the one method; [`Device::get`] and
//!   [`Device::put`] are spellings of it. It may return [`Sent::Busy`].
//!   Completion is reported once through [`Sink::rdma_done`] with the
//!   caller's [`OpToken`].
//! - **Visibility.** When `rdma_done` reports a `put` complete, the data is
//!   visible at the target before any packet the initiator sends afterwards
//!   arrives there (so a FIN after the put is safe). A `get`'s data is in the
//!   local region when `rdma_done` reports it.
//! - A device without RDMA (see [`Caps`]) returns
//!   [`DeviceError::Unsupported`] from `rdma` in that direction; the engine never calls
//!   them then (it picks the fragmented protocol).
//!
//! # Progress: [`Device::progress`]
//! Never blocks. Reports arrivals ([`Sink::packet`]), RDMA completions
//! ([`Sink::rdma_done`]) and dead peers ([`Sink::peer_failed`]) to the sink,
//! and returns how many events it reported. The sink never calls back into
//! the device, so a device can hold its internal borrows across the calls.
//! An incoming packet's payload can be copied out ([`Incoming::payload`]) or
//! taken ([`Incoming::into_payload`]): a device should hand over its own
//! buffer (a shm cell, a verbs receive buffer) where it can, so that an
//! unexpected message reaches `arecv` without a copy.
//!
//! # Waiting: [`Device::arm`] and [`Device::wait_fd`]
//! The no-lost-wakeup rule, as for `ucp_worker_arm` and `fi_trywait`:
//! 1. The engine calls `progress` until it reports nothing, then `arm`.
//! 2. `arm` returns [`Armed::Pending`] if an event is already deliverable
//!    (the engine then progresses again instead of sleeping), or
//!    [`Armed::Sleep`].
//! 3. After `Sleep`, any event that becomes deliverable must make
//!    [`Device::wait_fd`] readable (or, for an in-memory device, raise its
//!    wake flag), until [`Device::disarm`] is called.
//!
//! Devices without an fd return `None` from `wait_fd`; the engine's owner then
//! spins. [`Caps::wait_fd`] says which.
//!
//! [`Device::driving`] says that sleeping would stall data in flight: a
//! device whose transfers move only inside `progress` (libfabric's manual
//! progress over TCP sockets) has bytes to move on every call while one of
//! its RMA operations runs, yet reports no event until the whole transfer
//! ends. A waiter that sleeps then is woken for every socket buffer's worth
//! (a context switch, and an inter-processor interrupt in the peer's send
//! path); a waiter that may choose (`hybrid`) keeps polling while it holds.
//!
//! # Batches: [`Device::batch_begin`] and [`Device::batch_end`]
//! Doorbell batching, as `ibv_post_send` with a chained work-request list
//! or libfabric's `FI_MORE`. Between the two calls a device may hold sends
//! it accepted and hand them to the hardware together at `batch_end` (one
//! doorbell, one system call on a software RDMA device, for many packets).
//! - `Sent::Done` keeps its meaning: the caller's slices are free at once
//!   (a device copies what it holds).
//! - Order is kept: a held packet goes out before anything later to the
//!   same peer, including an `rdma`.
//! - Nothing held can wait on itself: `progress`, `arm`, `rdma` and
//!   `batch_end` post what is held first, so a caller that waits inside a
//!   batch still makes progress.
//! - Batches nest; the outermost `batch_end` posts. A held packet the
//!   hardware then refuses fails its peer, reported through the sink as any
//!   other failure.
//!
//! The default is no batching: every `send` goes out at once.
//!
//! # Failure
//! A dead or unreachable peer is reported once through
//! [`Sink::peer_failed`]; the engine fails that peer's requests and keeps
//! the rest of the job running. Afterwards, `send` to that peer may return
//! [`PeerError::Died`]. [`PeerFailures`] keeps this bookkeeping for a
//! device.
//!
//! [`PeerError::Protocol`]: crate::PeerError::Protocol
//! [`PeerError::Died`]: crate::PeerError::Died
//! [`DeviceError::Unsupported`]: crate::DeviceError::Unsupported

mod failures;
pub mod node;
mod rdma;

pub use failures::PeerFailures;
pub use node::{NodeCollectives, NodeKind, NodeOp};
pub use rdma::{RdmaDir, WcStatus};

use crate::buffer::Buf;
use crate::envelope::Rank;
use crate::error::Error;
use crate::wire::RemoteKey;

/// What a device can do for one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    /// The device's name, for logs and `ferry-info`.
    pub name: &'static str,
    /// The largest payload one packet may carry.
    pub max_payload: usize,
    /// The eager limit this device works best with, used unless
    /// [`Config::eager_limit`](crate::Config::eager_limit) says otherwise:
    /// shared memory copies a whole cell faster than it runs a rendezvous
    /// handshake; a network device's receive buffers are sized for less.
    pub eager_preferred: usize,
    /// `get` (rendezvous by receiver-side read) works.
    pub rdma_get: bool,
    /// `put` (rendezvous by sender-side write) works.
    pub rdma_put: bool,
    /// `wait_fd` returns a pollable fd.
    pub wait_fd: bool,
}

/// The outcome of a send, get or put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Sent {
    /// Accepted (for `send`: the bytes are buffered or gone).
    Done,
    /// Out of resources: nothing happened; retry after `progress`.
    Busy,
}

/// What registered memory may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A peer will read it (rendezvous-get source).
    RemoteRead,
    /// A peer will write it (rendezvous-put target).
    RemoteWrite,
    /// This rank's `get` writes it.
    LocalWrite,
    /// This rank's `put` reads it.
    LocalRead,
}

/// What a device knows about one peer's health: alive, or failed with the
/// error the peer's requests get, `reported` once [`Sink::peer_failed`]
/// was called (a failure is reported exactly once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerHealth {
    /// Nothing wrong seen.
    Alive,
    /// Failed: died, unreachable, or sent something invalid.
    Failed {
        /// The error for this peer's operations.
        error: Error,
        /// Whether the sink has been told.
        reported: bool,
    },
}

/// A device's handle to a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemHandle(pub u64);

/// The engine's id for a `get` or `put`, echoed in [`Sink::rdma_done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpToken(pub u64);

/// What [`Device::arm`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Armed {
    /// Nothing pending: the waiter may sleep on `wait_fd`.
    Sleep,
    /// An event is already deliverable: progress instead of sleeping.
    Pending,
}

/// A packet handed to [`Sink::packet`].
pub trait Incoming {
    /// The header bytes, as sent.
    fn header(&self) -> &[u8];
    /// The payload bytes, as sent.
    fn payload(&self) -> &[u8];
    /// Takes the payload as an owned buffer: the device's own buffer where
    /// possible (returned to the device when the `Buf` drops), a copy where
    /// not.
    ///
    /// # Errors
    /// [`UsageError::OutOfMemory`](crate::UsageError::OutOfMemory) if a copy
    /// was needed and failed.
    fn into_payload(self) -> Result<Buf, Error>;

    /// True if [`Incoming::into_payload`] allocates: a copy (an shm fastbox
    /// slot, which must be freed at once) or a box around device memory (an
    /// shm cell). The engine then copies a small payload into a pooled
    /// buffer instead; a payload handed over for free (the simulation's,
    /// the loopback's) stays handed over, so an ARecv takes it as it is.
    fn hand_over_allocates(&self) -> bool {
        false
    }
}

/// Where [`Device::progress`] reports events. Implemented by the engine.
pub trait Sink {
    /// A packet arrived from `from`.
    fn packet<I: Incoming>(&mut self, from: Rank, packet: I);
    /// A `get` or `put` finished (successfully or not).
    fn rdma_done(&mut self, token: OpToken, result: Result<(), Error>);
    /// `peer` died or became unreachable.
    fn peer_failed(&mut self, peer: Rank, error: Error);
    /// True when the sink wants nothing more from this progress call (a
    /// blocking receive that got its message and will return): a device
    /// may stop polling early and leave the rest for the next call. What
    /// it delivers anyway is handled as usual.
    #[inline]
    fn satisfied(&self) -> bool {
        false
    }
}

/// A transport. See the module docs for the contract.
pub trait Device {
    /// Capabilities towards `peer`.
    fn caps(&self, peer: Rank) -> &Caps;

    /// Sends one packet to `peer`.
    ///
    /// # Errors
    /// A device failure, or [`PeerError::Died`](crate::PeerError::Died).
    /// Lack of resources is `Ok(Sent::Busy)`, not an error.
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error>;

    /// Registers `buf` for a transfer with `peer`, taking ownership until
    /// [`Device::deregister`].
    ///
    /// The peer lets a device that routes peers to different transports
    /// (shm on the node, a network beyond it) register with the right one;
    /// the key it returns is only meaningful to that peer.
    ///
    /// # Errors
    /// Gives the buffer back with the reason.
    #[allow(clippy::result_large_err)]
    fn register(
        &mut self,
        peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)>;

    /// Ends a registration and returns its buffer (`None` for an unknown
    /// handle).
    fn deregister(&mut self, mem: MemHandle) -> Option<Buf>;

    /// Moves `len` bytes between the start of `local` and `remote` on
    /// `peer`: [`RdmaDir::Get`] reads the peer's region into `local`,
    /// [`RdmaDir::Put`] writes `local` into the peer's region.
    ///
    /// # Errors
    /// A device failure or an unsupported operation.
    fn rdma(
        &mut self,
        dir: RdmaDir,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error>;

    /// Reads `len` bytes at `remote` on `peer` into the start of `local`:
    /// [`Device::rdma`] with [`RdmaDir::Get`].
    ///
    /// # Errors
    /// As [`Device::rdma`].
    #[inline]
    fn get(
        &mut self,
        peer: Rank,
        remote: RemoteKey,
        local: MemHandle,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        self.rdma(RdmaDir::Get, peer, local, remote, len, token)
    }

    /// Writes the first `len` bytes of `local` to `remote` on `peer`:
    /// [`Device::rdma`] with [`RdmaDir::Put`].
    ///
    /// # Errors
    /// As [`Device::rdma`].
    #[inline]
    fn put(
        &mut self,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        self.rdma(RdmaDir::Put, peer, local, remote, len, token)
    }

    /// Reports events to `sink` without blocking; returns how many.
    ///
    /// # Errors
    /// A fatal device failure.
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error>;

    /// Opens a batch; see *Batches* in the module docs. The default
    /// holds nothing back.
    #[inline]
    fn batch_begin(&mut self) {}

    /// Closes a batch, posting what it held once the outermost one ends.
    ///
    /// # Errors
    /// A fatal device failure (a refused post fails only its peer).
    #[inline]
    fn batch_end(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// Prepares to wake a sleeper; see *Waiting* in the module docs.
    ///
    /// # Errors
    /// A device failure.
    fn arm(&mut self) -> Result<Armed, Error>;

    /// Ends the armed state (called after waking, before progressing).
    fn disarm(&mut self);

    /// The fd that becomes readable when an armed device has events.
    fn wait_fd(&self) -> Option<i32>;

    /// Whether a transfer in flight moves only while this rank progresses;
    /// see *Waiting* in the module docs. The default: no (the hardware, a
    /// peer or the kernel moves the data, and completion wakes the waiter).
    #[inline]
    fn driving(&self) -> bool {
        false
    }

    /// Another device of this rank saw `rank` die (the node device, for a
    /// rank of this node). A device whose peers learn of deaths from each
    /// other (verbs' observer ring) passes the news on, so that ranks on
    /// other nodes that wait for `rank` without ever having talked to it
    /// hear of it too. The default does nothing.
    fn peer_died_elsewhere(&mut self, _rank: Rank) {}

    /// The node collectives, if this device shares memory with its node's
    /// ranks (see [`node`]). The default has none.
    fn node(&mut self) -> Option<&mut dyn NodeCollectives> {
        None
    }
}
