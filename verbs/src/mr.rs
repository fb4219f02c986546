//! Registration of the engine's buffers for rendezvous (`register` /
//! `deregister`), with the minimum access rights for each use.
//!
//! # No registration cache, by design
//! Every `register` calls `ibv_reg_mr` on the `Buf` it is given and every
//! `deregister` calls `ibv_dereg_mr` *before* it hands the `Buf` back. The
//! device owns the `Buf` for the whole time the memory is registered, so the
//! memory cannot be freed or reused while a key for it exists: a key can
//! never be stale. A cache keyed by address (what MPI libraries do for user
//! pointers, with malloc hooks or userfaultfd to notice frees) would be
//! exactly the thing that goes stale when memory is freed and the address
//! reused; ferry's engine hands over owned buffers instead, so it does not
//! need one. The cost is one `reg_mr` + `dereg_mr` per rendezvous message
//! on each side (the device test prints it: ~150 µs for 64 KiB on Soft-RoCE
//! in the emulated CI VM, a few µs on a modern kernel with a real HCA;
//! small against the transfer of a large message, visible at 64 KiB; the
//! same trade UCX makes with `UCX_RCACHE_ENABLE=n`; see
//! `docs/perf/verbs.md`). The test
//! `a_registration_is_never_stale_after_the_buffer_is_reused` checks that a
//! new buffer at a reused address gets a fresh key and that the old key no
//! longer grants access.
//!
//! Handles carry a generation, so a stale `MemHandle` (deregistered, slot
//! reused) is rejected rather than aliasing a newer registration.

use ferry_core::device::{Access, MemHandle};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, Error};

use crate::ffi::{sys, Mr, Pd};

/// The access flags `ibv_reg_mr` gets for each use: nothing more than the
/// use needs (REMOTE_WRITE requires LOCAL_WRITE by the verbs rules).
pub(crate) fn access_flags(access: Access) -> u32 {
    use sys::ibv_access_flags as F;
    match access {
        Access::RemoteRead => F::IBV_ACCESS_REMOTE_READ.0,
        Access::RemoteWrite => F::IBV_ACCESS_LOCAL_WRITE.0 | F::IBV_ACCESS_REMOTE_WRITE.0,
        Access::LocalWrite => F::IBV_ACCESS_LOCAL_WRITE.0,
        Access::LocalRead => 0,
    }
}

fn writable(access: Access) -> bool {
    matches!(access, Access::RemoteWrite | Access::LocalWrite)
}

#[derive(Debug)]
struct Entry {
    // Field order is drop order: deregister, then release the buffer.
    /// `None` for an empty buffer (nothing to register).
    mr: Option<Mr>,
    buf: Buf,
    addr: u64,
    len: usize,
    generation: u32,
}

/// What a `get`/`put` needs of a local registration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Local {
    pub(crate) addr: u64,
    pub(crate) len: usize,
    pub(crate) lkey: u32,
}

/// The live registrations.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    generation: u32,
}

impl Registry {
    /// Registers `buf`; see the module docs.
    #[allow(clippy::result_large_err)]
    pub(crate) fn register(
        &mut self,
        pd: &Pd,
        mut buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let (ptr, len) = if writable(access) {
            let s = buf.as_mut_slice();
            (s.as_mut_ptr(), s.len())
        } else {
            let s = buf.as_slice();
            // Never written through: the region has no write access.
            (s.as_ptr().cast_mut(), s.len())
        };
        let mr = if len == 0 {
            None
        } else {
            // SAFETY: `ptr..ptr+len` is the buffer's memory, which does not
            // move while the `Buf` lives (buffer.rs, "Address stability"),
            // and the entry keeps the `Buf` until the MR is dropped. Write
            // access is only asked for memory taken with `as_mut_slice`.
            match unsafe { pd.reg_mr(ptr, len, access_flags(access)) } {
                Ok(mr) => Some(mr),
                Err(e) => return Err((e.into(), buf)),
            }
        };
        let rkey = mr.as_ref().map_or(0, Mr::rkey);
        self.generation = self.generation.wrapping_add(1);
        let entry = Entry {
            mr,
            buf,
            addr: ptr as u64,
            len,
            generation: self.generation,
        };
        let index = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = Some(entry);
                i
            }
            None => {
                self.entries.push(Some(entry));
                (self.entries.len() - 1) as u32
            }
        };
        let handle = MemHandle(u64::from(self.generation) << 32 | u64::from(index));
        Ok((
            handle,
            RemoteKey {
                addr: ptr as u64,
                key: u64::from(rkey),
            },
        ))
    }

    fn index(&self, mem: MemHandle) -> Option<usize> {
        let index = (mem.0 & 0xffff_ffff) as usize;
        let generation = (mem.0 >> 32) as u32;
        let e = self.entries.get(index)?.as_ref()?;
        (e.generation == generation).then_some(index)
    }

    /// Ends a registration: `ibv_dereg_mr`, then the buffer goes back.
    pub(crate) fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        let index = self.index(mem)?;
        let entry = self.entries[index].take()?;
        self.free.push(index as u32);
        let Entry { mr, buf, .. } = entry;
        drop(mr);
        Some(buf)
    }

    /// The local side of a transfer.
    pub(crate) fn local(&self, mem: MemHandle) -> Option<Local> {
        let e = self.entries[self.index(mem)?].as_ref()?;
        Some(Local {
            addr: e.addr,
            len: e.len,
            lkey: e.mr.as_ref().map_or(0, Mr::lkey),
        })
    }

    /// Live registrations (for tests).
    pub(crate) fn live(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sys::ibv_access_flags as F;

    #[test]
    fn access_flags_are_minimal() {
        assert_eq!(
            access_flags(Access::RemoteRead),
            F::IBV_ACCESS_REMOTE_READ.0
        );
        assert_eq!(
            access_flags(Access::RemoteWrite),
            F::IBV_ACCESS_LOCAL_WRITE.0 | F::IBV_ACCESS_REMOTE_WRITE.0
        );
        assert_eq!(
            access_flags(Access::LocalWrite),
            F::IBV_ACCESS_LOCAL_WRITE.0
        );
        assert_eq!(access_flags(Access::LocalRead), 0);
    }
}
