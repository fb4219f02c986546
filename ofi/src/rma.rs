//! Memory registration for rendezvous: `fi_mr_reg` per operation, no cache
//! in ferry. Measured by the `registration_cost` test (release build, this
//! 2-core machine), one register + deregister costs 0.2 us on
//! `tcp;ofi_rxm` and 0.13-0.24 us on `shm` for 4 KiB to 16 MiB: neither
//! pins memory, so the cost is a table insert, nothing next to a 1 MiB
//! transfer (about 900 us over loopback TCP). Providers that pin (verbs,
//! efa) keep their own registration cache inside libfabric
//! (`FI_MR_CACHE_*`), which is why the device does not add a second one
//! that could hand out a stale registration; on `verbs;ofi_rxm` over
//! Soft-RoCE in the emulated (TCG) VM of `ci/verbs.sh` the same test
//! measures 110-140 us (debug build), figures only relative to that VM.
//!
//! MR modes, as `fi_info` reports them (`verbs;ofi_rxm` demands `LOCAL`,
//! `VIRT_ADDR`, `PROV_KEY` and `ALLOCATED`; no provider of Debian's
//! libfabric 1.17 demands `ENDPOINT`: see the crate docs):
//! - `FI_MR_VIRT_ADDR`: a [`RemoteKey`]'s `addr` is the buffer's virtual
//!   address; otherwise it is 0 (offsets from the region's start).
//! - `FI_MR_PROV_KEY`: the provider picks the key; otherwise the device
//!   requests unique keys from a counter (a key whose registration fails
//!   is reused too).
//! - `FI_MR_ENDPOINT`: the MR is bound to the endpoint and enabled (in
//!   `ffi`).
//! - `FI_MR_LOCAL`: local buffers of `fi_read`/`fi_write` pass the MR's
//!   descriptor (always passed: harmless where not needed), and the eager
//!   send and receive buffers are registered once, when made.
//! - `FI_MR_ALLOCATED`: every [`Buf`] is allocated memory, so nothing to do.
//!   But a provider that pins pages may refuse read-only ones: verbs pins
//!   every region for local writing (rxm asks for it), and the kernel
//!   refuses that for a `static` (`-FI_EFAULT`). A region that is only
//!   read (`RemoteRead`, `LocalRead`) and is refused so is copied into
//!   memory of the device's, which is registered instead; the caller's
//!   buffer comes back untouched at `deregister`. The copy costs one pass
//!   over the bytes, on that path only.
//! - A segmented [`Buf`] has no address range to register: refused (the
//!   engine never asks; it sends those in fragments).

use ferry_core::device::{Access, MemHandle};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, Error, UsageError};

use crate::eager::Bounce;
use crate::ffi::{Fabric, Fail, Mr};
use crate::sys;

/// All the device registers: the engine's regions, and the MRs of its own
/// eager buffers where the provider needs local descriptors (FI_MR_LOCAL).
/// Dropped before the fabric (its domain), after the endpoint closed.
#[derive(Debug)]
pub(crate) struct Registrations {
    regions: Regions,
    /// The MRs of the eager send and receive buffers (FI_MR_LOCAL only),
    /// kept until the device goes.
    bounce_mrs: Vec<Mr>,
    /// The provider demands local descriptors (FI_MR_LOCAL).
    mr_local: bool,
}

impl Registrations {
    /// For a provider with this `mr_mode`; `rma`: whether the engine's
    /// regions are registered at all (FI_RMA).
    pub(crate) fn new(mr_mode: u64, rma: bool) -> Registrations {
        Registrations {
            regions: Regions::new(mr_mode, rma),
            bounce_mrs: Vec::new(),
            mr_local: mr_mode & u64::from(sys::FI_MR_LOCAL) != 0,
        }
    }

    /// Whether the provider demands local descriptors (tests).
    #[cfg(test)]
    pub(crate) fn mr_local(&self) -> bool {
        self.mr_local
    }

    /// Allocates (and registers, under FI_MR_LOCAL) one eager buffer of
    /// `size` bytes for `access`.
    pub(crate) fn new_bounce(
        &mut self,
        fabric: &mut Fabric,
        size: usize,
        access: u64,
    ) -> Result<Bounce, Fail> {
        let mem = vec![0u8; size].into_boxed_slice();
        let mut desc = 0;
        if self.mr_local {
            let key = self.regions.requested_key();
            let mr = fabric.mr_reg(mem.as_ptr(), mem.len(), access, key)?;
            desc = mr.desc as usize;
            self.bounce_mrs.push(mr);
        }
        Ok(Bounce { mem, desc })
    }

    /// Registers an engine's buffer; see [`Regions::register`].
    #[allow(clippy::result_large_err)]
    pub(crate) fn register(
        &mut self,
        fabric: &mut Fabric,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        self.regions.register(fabric, buf, access)
    }

    /// Ends a registration; see [`Regions::deregister`].
    pub(crate) fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.regions.deregister(mem)
    }

    /// The local side of a transfer; see [`Regions::local`].
    #[inline]
    pub(crate) fn local(&mut self, mem: MemHandle, len: usize) -> Result<Local, Error> {
        self.regions.local(mem, len)
    }

    /// Live registrations of the engine's regions.
    pub(crate) fn live(&self) -> usize {
        self.regions.live()
    }

    /// Live registrations that are copies of read-only memory (tests).
    #[cfg(test)]
    pub(crate) fn copies(&self) -> usize {
        self.regions.copies()
    }

    /// MRs of the device's own buffers (tests).
    #[cfg(test)]
    pub(crate) fn bounce_mrs(&self) -> usize {
        self.bounce_mrs.len()
    }
}

#[derive(Debug)]
struct Region {
    buf: Buf,
    /// What is registered instead of `buf` when the provider refused its
    /// read-only pages (see the module docs); dropped after `mr`.
    copy: Option<Buf>,
    /// `None` for an empty buffer (nothing to register).
    mr: Option<Mr>,
    /// The buffer's address (kept as a number: the `Buf` owns the memory).
    addr: usize,
    len: usize,
}

/// The registered regions, by [`MemHandle`] (index and generation).
#[derive(Debug)]
pub(crate) struct Regions {
    slots: Vec<(u32, Option<Region>)>,
    free: Vec<u32>,
    next_key: u64,
    /// Keys of closed registrations, reused first (see `requested_key`).
    free_keys: Vec<u64>,
    prov_key: bool,
    virt_addr: bool,
    /// False when the provider has no FI_RMA: registration then only keeps
    /// the buffer (the engine never calls get/put).
    enabled: bool,
}

/// A local region, ready for `fi_read`/`fi_write`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Local {
    pub(crate) ptr: *mut u8,
    pub(crate) desc: *mut std::ffi::c_void,
}

impl Regions {
    pub(crate) fn new(mr_mode: u64, enabled: bool) -> Regions {
        Regions {
            slots: Vec::new(),
            free: Vec::new(),
            next_key: 1,
            free_keys: Vec::new(),
            prov_key: mr_mode & u64::from(sys::FI_MR_PROV_KEY) != 0,
            virt_addr: mr_mode & u64::from(sys::FI_MR_VIRT_ADDR) != 0,
            enabled,
        }
    }

    /// A key for an MR when the provider does not choose them. Keys of
    /// closed MRs are reused: rxm over tcp keeps some state per key it has
    /// seen, so ever-new keys grow memory by about 1 KiB per rendezvous.
    pub(crate) fn requested_key(&mut self) -> u64 {
        if self.prov_key {
            return 0;
        }
        if let Some(k) = self.free_keys.pop() {
            return k;
        }
        let k = self.next_key;
        self.next_key += 1;
        k
    }

    /// Gives back a key from [`Regions::requested_key`] that ended up
    /// unused (its registration failed).
    fn unused_key(&mut self, key: u64) {
        if !self.prov_key {
            self.free_keys.push(key);
        }
    }

    #[allow(clippy::result_large_err)]
    pub(crate) fn register(
        &mut self,
        fabric: &mut Fabric,
        mut buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let len = buf.len();
        if !buf.is_contiguous() {
            return Err((
                UsageError::Unsupported("ofi: registering a segmented buffer").into(),
                buf,
            ));
        }
        let (mut ptr, bits) = match access {
            // Read by the peer or by our own fi_write: never written here,
            // so a read-only storage loan is fine.
            Access::RemoteRead => (buf.as_slice().as_ptr().cast_mut(), sys::FI_REMOTE_READ),
            Access::LocalRead => (buf.as_slice().as_ptr().cast_mut(), sys::FI_WRITE),
            Access::RemoteWrite | Access::LocalWrite => {
                let s = buf.as_mut_slice();
                if s.len() != len {
                    return Err((
                        UsageError::Unsupported("ofi: registering a read-only buffer for writing")
                            .into(),
                        buf,
                    ));
                }
                let bits = if access == Access::RemoteWrite {
                    sys::FI_REMOTE_WRITE
                } else {
                    sys::FI_READ
                };
                (s.as_mut_ptr(), bits)
            }
        };
        let read_only = matches!(access, Access::RemoteRead | Access::LocalRead);
        let mut copy = None;
        let mr = if self.enabled && len > 0 {
            let key = self.requested_key();
            let first = fabric.mr_reg(ptr, len, u64::from(bits), key);
            let mr = match first {
                Err(f) if read_only && f.code == sys::FI_EFAULT as i32 => {
                    // Read-only pages that the provider pins for writing.
                    let c = match Buf::copy_from(buf.as_slice()) {
                        Ok(c) => c,
                        Err(e) => {
                            self.unused_key(key);
                            return Err((e, buf));
                        }
                    };
                    ptr = c.as_slice().as_ptr().cast_mut();
                    copy = Some(c);
                    fabric.mr_reg(ptr, len, u64::from(bits), key)
                }
                other => other,
            };
            match mr {
                Ok(mr) => Some(mr),
                Err(f) => {
                    self.unused_key(key);
                    return Err((f.into(), buf));
                }
            }
        } else {
            None
        };
        let key = RemoteKey {
            addr: if self.virt_addr { ptr as u64 } else { 0 },
            key: mr.as_ref().map_or(0, |m| m.key),
        };
        let region = Region {
            buf,
            copy,
            mr,
            addr: ptr as usize,
            len,
        };
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        slot.1 = Some(region);
        Ok((MemHandle(u64::from(slot.0) << 32 | u64::from(idx)), key))
    }

    fn slot(&mut self, mem: MemHandle) -> Option<&mut (u32, Option<Region>)> {
        let (gen, idx) = ((mem.0 >> 32) as u32, mem.0 as u32);
        self.slots
            .get_mut(idx as usize)
            .filter(|s| s.0 == gen && s.1.is_some())
    }

    /// Ends a registration (closing its MR) and returns the buffer.
    pub(crate) fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        let slot = self.slot(mem)?;
        let region = slot.1.take()?;
        slot.0 = slot.0.wrapping_add(1);
        self.free.push(mem.0 as u32);
        if let Some(mr) = region.mr {
            let key = mr.key;
            drop(mr);
            self.unused_key(key);
        }
        // The copy (if any) goes only now, after its MR.
        drop(region.copy);
        Some(region.buf)
    }

    /// The local side of a transfer of `len` bytes.
    pub(crate) fn local(&mut self, mem: MemHandle, len: usize) -> Result<Local, Error> {
        let Some((_, Some(r))) = self.slot(mem) else {
            return Err(UsageError::StaleHandle.into());
        };
        if len > r.len {
            return Err(UsageError::LengthMismatch("rdma longer than the local region").into());
        }
        Ok(Local {
            ptr: r.addr as *mut u8,
            desc: r.mr.as_ref().map_or(std::ptr::null_mut(), |m| m.desc),
        })
    }

    /// Live registrations that are copies of read-only memory (tests).
    #[cfg(test)]
    pub(crate) fn copies(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.1.as_ref().is_some_and(|r| r.copy.is_some()))
            .count()
    }

    /// Live registrations (for tests and leak checks).
    pub(crate) fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.1.is_some()).count()
    }
}
