//! [`Peers`]: what the device knows per job rank: its address, the packet
//! sequence numbers each way, its health, and whether its setup hello
//! arrived.

use ferry_core::device::PeerFailures;
use ferry_core::{DeviceError, Error, Rank, UsageError};

use crate::ffi::Addr;
use crate::sys;

/// Per-rank state, indexed by job rank.
#[derive(Debug)]
pub(crate) struct Peers {
    /// AV address by job rank (`FI_ADDR_UNSPEC` for ranks not on this device).
    addrs: Vec<Addr>,
    /// The sequence number of the next packet to each rank.
    seq_out: Vec<u16>,
    /// The sequence number of the next packet due from each rank.
    seq_in: Vec<u16>,
    /// Each rank's health, and the failures not yet reported.
    failures: PeerFailures,
    /// Ranks whose setup hello arrived.
    hellos: Vec<bool>,
}

impl Peers {
    /// A job of `size` ranks, none of them on this device yet.
    pub(crate) fn new(size: usize) -> Peers {
        Peers {
            addrs: vec![sys::FI_ADDR_UNSPEC; size],
            seq_out: vec![0; size],
            seq_in: vec![0; size],
            failures: PeerFailures::new(size),
            hellos: vec![false; size],
        }
    }

    /// The AV address of `rank` as stored (`FI_ADDR_UNSPEC` when it is not
    /// on this device); setup only.
    pub(crate) fn stored_addr(&self, rank: Rank) -> Addr {
        self.addrs[rank as usize]
    }

    /// Sets the AV address of `rank` (setup only).
    pub(crate) fn set_addr(&mut self, rank: Rank, addr: Addr) {
        self.addrs[rank as usize] = addr;
    }

    /// The address to send to `peer`: an error for a rank outside the job,
    /// one not on this device, or one that failed.
    #[inline]
    pub(crate) fn addr(&self, peer: Rank) -> Result<Addr, Error> {
        let Some(&a) = usize::try_from(peer).ok().and_then(|p| self.addrs.get(p)) else {
            return Err(UsageError::InvalidRank {
                rank: peer,
                size: self.addrs.len() as u32,
            }
            .into());
        };
        if a == sys::FI_ADDR_UNSPEC {
            return Err(DeviceError::Unsupported("ofi: peer is not on this device").into());
        }
        if let Some(error) = self.failures.error(peer as usize) {
            return Err(error);
        }
        Ok(a)
    }

    /// Whether `rank` is a rank of the job on this device (an arrival's
    /// sender is checked so).
    #[inline]
    pub(crate) fn is_known(&self, rank: Rank) -> bool {
        self.addrs
            .get(rank as usize)
            .is_some_and(|&a| a != sys::FI_ADDR_UNSPEC)
    }

    /// The sequence number the next packet to `peer` carries (`peer` was
    /// checked by [`Peers::addr`]).
    #[inline]
    pub(crate) fn seq_out(&self, peer: Rank) -> u16 {
        self.seq_out[peer as usize]
    }

    /// A packet to `peer` was accepted: the next one carries the next number.
    #[inline]
    pub(crate) fn sent(&mut self, peer: Rank) {
        let s = &mut self.seq_out[peer as usize];
        *s = s.wrapping_add(1);
    }

    /// The sequence number due next from `from` (a known rank).
    #[inline]
    pub(crate) fn seq_in(&self, from: Rank) -> u16 {
        self.seq_in[from as usize]
    }

    /// The packet due from `from` was delivered.
    #[inline]
    pub(crate) fn delivered(&mut self, from: Rank) {
        let s = &mut self.seq_in[from as usize];
        *s = s.wrapping_add(1);
    }

    /// The hello of `from` (a known rank) arrived.
    pub(crate) fn hello_from(&mut self, from: Rank) {
        self.hellos[from as usize] = true;
    }

    /// Whether the hello of `rank` arrived.
    pub(crate) fn has_hello(&self, rank: Rank) -> bool {
        self.hellos[rank as usize]
    }

    /// Marks `peer` failed (reported once, by [`Peers::take_unreported`]).
    pub(crate) fn fail(&mut self, peer: Rank, error: Error) {
        if let Ok(p) = usize::try_from(peer) {
            self.failures.fail(p, error);
        }
    }

    /// The error of a failed `peer`, `None` while it is alive.
    pub(crate) fn error(&self, peer: Rank) -> Option<Error> {
        self.failures.error(peer as usize)
    }

    /// Whether nothing is known to be wrong with `peer`.
    #[inline]
    pub(crate) fn is_alive(&self, peer: Rank) -> bool {
        self.failures.is_alive(peer as usize)
    }

    /// Whether a failure waits to be reported.
    #[inline]
    pub(crate) fn has_unreported(&self) -> bool {
        self.failures.has_unreported()
    }

    /// The next failure to report, marked reported.
    pub(crate) fn take_unreported(&mut self) -> Option<(Rank, Error)> {
        self.failures
            .take_unreported()
            .map(|(p, error)| (p as Rank, error))
    }

    /// The sequence numbers due from each rank (diagnostics).
    #[cfg(test)]
    pub(crate) fn seq_in_all(&self) -> &[u16] {
        &self.seq_in
    }
}
