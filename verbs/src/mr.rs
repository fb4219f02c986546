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

use crate::ffi::{sys, Pd, RegisteredBuf};

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
    /// The buffer and its MR (deregistered before the buffer goes).
    reg: RegisteredBuf,
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
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let reg = match RegisteredBuf::new(pd, buf, access_flags(access), writable(access)) {
            Ok(reg) => reg,
            Err((e, buf)) => return Err((e.into(), buf)),
        };
        let (addr, rkey) = (reg.addr(), reg.rkey());
        self.generation = self.generation.wrapping_add(1);
        let entry = Entry {
            reg,
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
                addr,
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
        Some(entry.reg.into_buf())
    }

    /// The local side of a transfer.
    pub(crate) fn local(&self, mem: MemHandle) -> Option<Local> {
        let e = self.entries[self.index(mem)?].as_ref()?;
        Some(Local {
            addr: e.reg.addr(),
            len: e.reg.len(),
            lkey: e.reg.lkey(),
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
