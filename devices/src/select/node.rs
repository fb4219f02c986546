//! [`NodeDevice`]: the devices compiled into this build, as one enum.
//!
//! The engine is monomorphized over `NodeDevice`; each [`Device`] method is
//! a `match` over the variants (crossbeam-channel's flavors, MPICH's
//! `NETMOD_INLINE`): no `dyn` dispatch on the hot path. The device is chosen
//! once, at init.

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, RdmaDir, Sent, Sink};
use ferry_core::loopback::Loopback;
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, Error, Rank};

use super::mixed::Mixed;

/// How a waiter can sleep on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SleepKind {
    /// On this fd (and the waiter's eventfd).
    Fd(i32),
    /// On both of these fds: a node device and a network device.
    TwoFds(i32, i32),
    /// On the waiter's eventfd alone: the device gets no events from outside
    /// this process's calls (the loopback).
    Internal,
    /// Not at all: events may arrive with nothing to wake a sleeper; poll.
    Poll,
}

/// How a waiter sleeps on each kind of device: on its wait fd by default.
pub(crate) trait SleepOn: Device {
    fn sleep_kind(&self) -> SleepKind {
        self.wait_fd().map_or(SleepKind::Poll, SleepKind::Fd)
    }
}

impl SleepOn for Loopback {
    fn sleep_kind(&self) -> SleepKind {
        SleepKind::Internal
    }
}

impl<L: Device, N: Device> SleepOn for Mixed<L, N> {
    fn sleep_kind(&self) -> SleepKind {
        self.wait_fds()
            .map_or(SleepKind::Poll, |(a, b)| SleepKind::TwoFds(a, b))
    }
}

/// The device an engine drives; see the module docs.
#[derive(Debug)]
#[non_exhaustive]
// One per process, stored in place in the engine: boxing the large variant
// would add an indirection to every call on the hot path.
#[allow(clippy::large_enum_variant)]
pub enum NodeDevice {
    /// A singleton job: every packet goes to this rank itself.
    Loopback(Loopback),
    /// Ranks on one node, through shared memory.
    #[cfg(feature = "shm")]
    Shm(ferry_shm::ShmDevice),
    /// Every rank through libfabric.
    #[cfg(feature = "ofi")]
    Ofi(ferry_ofi::OfiDevice),
    /// Every rank through InfiniBand / RoCE verbs.
    #[cfg(feature = "verbs")]
    Verbs(ferry_verbs::VerbsDevice),
    /// This node's ranks through shared memory, the others through
    /// libfabric.
    #[cfg(all(feature = "shm", feature = "ofi"))]
    ShmOfi(Mixed<ferry_shm::ShmDevice, ferry_ofi::OfiDevice>),
    /// This node's ranks through shared memory, the others through verbs.
    #[cfg(all(feature = "shm", feature = "verbs"))]
    ShmVerbs(Mixed<ferry_shm::ShmDevice, ferry_verbs::VerbsDevice>),
}

/// Dispatches a method call to the variant.
macro_rules! each {
    ($self:expr, $d:ident => $e:expr) => {
        match $self {
            NodeDevice::Loopback($d) => $e,
            #[cfg(feature = "shm")]
            NodeDevice::Shm($d) => $e,
            #[cfg(feature = "ofi")]
            NodeDevice::Ofi($d) => $e,
            #[cfg(feature = "verbs")]
            NodeDevice::Verbs($d) => $e,
            #[cfg(all(feature = "shm", feature = "ofi"))]
            NodeDevice::ShmOfi($d) => $e,
            #[cfg(all(feature = "shm", feature = "verbs"))]
            NodeDevice::ShmVerbs($d) => $e,
        }
    };
}

impl NodeDevice {
    /// The device's name (`loopback`, `shm`, `ofi`, `verbs`, `shm+ofi`,
    /// `shm+verbs`).
    pub fn name(&self) -> &'static str {
        match self {
            NodeDevice::Loopback(_) => "loopback",
            #[cfg(feature = "shm")]
            NodeDevice::Shm(_) => "shm",
            #[cfg(feature = "ofi")]
            NodeDevice::Ofi(_) => "ofi",
            #[cfg(feature = "verbs")]
            NodeDevice::Verbs(_) => "verbs",
            #[cfg(all(feature = "shm", feature = "ofi"))]
            NodeDevice::ShmOfi(_) => "shm+ofi",
            #[cfg(all(feature = "shm", feature = "verbs"))]
            NodeDevice::ShmVerbs(_) => "shm+verbs",
        }
    }

    /// The device that carries traffic to job rank `peer` (`loopback`,
    /// `shm`, `ofi` or `verbs`): one half of a mixed device, or the device
    /// itself. The caller checks that `peer` is in the job; a mixed device
    /// answers `None` for one that is not.
    #[cfg_attr(not(any(feature = "ofi", feature = "verbs")), allow(unused_variables))]
    pub fn peer_device(&self, peer: Rank) -> Option<&'static str> {
        match self {
            #[cfg(all(feature = "shm", feature = "ofi"))]
            NodeDevice::ShmOfi(m) => m.is_on_node(peer).map(|on| if on { "shm" } else { "ofi" }),
            #[cfg(all(feature = "shm", feature = "verbs"))]
            NodeDevice::ShmVerbs(m) => m
                .is_on_node(peer)
                .map(|on| if on { "shm" } else { "verbs" }),
            _ => Some(self.name()),
        }
    }

    pub(crate) fn sleep_kind(&self) -> SleepKind {
        each!(self, d => SleepOn::sleep_kind(d))
    }

    /// The shared-memory segment's name, when shared memory carries some
    /// of the traffic: every file of this job's node (the node-collective
    /// regions too) starts with it.
    pub fn shm_segment(&self) -> Option<&str> {
        match self {
            #[cfg(feature = "shm")]
            NodeDevice::Shm(d) => Some(d.segment_name()),
            #[cfg(all(feature = "shm", feature = "ofi"))]
            NodeDevice::ShmOfi(m) => Some(m.node_device().segment_name()),
            #[cfg(all(feature = "shm", feature = "verbs"))]
            NodeDevice::ShmVerbs(m) => Some(m.node_device().segment_name()),
            _ => None,
        }
    }
}

impl Device for NodeDevice {
    #[inline]
    fn caps(&self, peer: Rank) -> &Caps {
        each!(self, d => d.caps(peer))
    }

    #[inline]
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        each!(self, d => d.send(peer, header, payload))
    }

    #[inline]
    fn register(
        &mut self,
        peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        each!(self, d => d.register(peer, buf, access))
    }

    #[inline]
    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        each!(self, d => d.deregister(mem))
    }

    #[inline]
    fn rdma(
        &mut self,
        dir: RdmaDir,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        each!(self, d => d.rdma(dir, peer, local, remote, len, token))
    }

    #[inline]
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        each!(self, d => d.progress(sink))
    }

    #[inline]
    fn batch_begin(&mut self) {
        each!(self, d => d.batch_begin())
    }

    #[inline]
    fn batch_end(&mut self) -> Result<(), Error> {
        each!(self, d => d.batch_end())
    }

    #[inline]
    fn arm(&mut self) -> Result<Armed, Error> {
        each!(self, d => d.arm())
    }

    #[inline]
    fn disarm(&mut self) {
        each!(self, d => d.disarm())
    }

    #[inline]
    fn wait_fd(&self) -> Option<i32> {
        each!(self, d => d.wait_fd())
    }

    #[inline]
    fn driving(&self) -> bool {
        each!(self, d => d.driving())
    }

    fn peer_died_elsewhere(&mut self, rank: Rank) {
        each!(self, d => d.peer_died_elsewhere(rank))
    }

    fn node(&mut self) -> Option<&mut dyn ferry_core::device::NodeCollectives> {
        each!(self, d => d.node())
    }
}
