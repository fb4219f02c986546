//! Registration of the engine's buffers for rendezvous (`register` /
//! `deregister`), with the minimum access rights for each use, and the
//! registration cache.
//!
//! # A cache that cannot hand out a stale key
//! Per-message registration costs an `ibv_reg_mr` + `ibv_dereg_mr` on each
//! side of a rendezvous (~150 µs for 64 KiB on Soft-RoCE under TCG; see
//! `docs/perf/verbs.md`). Caches keyed by address (UCX's rcache, Open MPI's
//! grdma, libfabric's MR cache) pay for that with their best-known bug:
//! memory freed and reused at the same address under a live registration,
//! noticed late or not at all by malloc hooks, memory notifiers or
//! userfaultfd (ucx#4866, libfabric #5909). This cache needs no hook: it
//! reuses a key only where its validity follows from ownership or is
//! checked at the moment of reuse.
//!
//! **Owned buffers** (a `Buf` over a vector or a storage: ARecv buffers the
//! engine allocated, persistent requests' buffers, the `Buf`s a program
//! gives and gets back). The registration is *attached to the `Buf`*
//! ([`ferry_core::Attachment`], `ffi::registered::Attached`) and goes
//! wherever the `Buf` goes. `ferry_core::Buf` ends it before its memory can
//! go: when the `Buf` drops (the attachment is dropped before the memory),
//! and when the memory leaves it (`into_vec`, `into_storage`). No other
//! `Buf` can take it over, so a key describes exactly the memory of the
//! `Buf` it is attached to, for as long as that memory is that `Buf`'s. The
//! next `register` of the same `Buf` with the same access on the same
//! device finds it and reuses it (no `ibv_reg_mr`). Ownership keeps the
//! *memory*; the *pages* behind it must stay too, and one event could
//! change them without freeing anything: a write to a page pinned only for
//! reading (the shared zero page of untouched memory, a page shared with a
//! child after `fork`) is copy-on-write, and the MR would keep the old
//! page. So a cached registration of owned memory is pinned for writing
//! (`LOCAL_WRITE` added: the kernel makes each page the mapping's own at
//! pin time, and pinned pages are neither migrated nor reclaimed), which
//! needs the memory writable through the `Buf`; memory the `Buf` can only
//! read (a shared send block) gets its page frames recorded and checked at
//! each reuse, as lent memory does below, or is registered per use when
//! frames cannot be read. Under `mem::forget` the
//! memory and its registration leak together: still never stale. A `Buf`
//! that outlives the device keeps its memory; the device's `Revoker` ends
//! the attached registrations when the device goes (before its PD), and
//! each attachment's lock orders that against a drop on another thread.
//!
//! **Lent memory** (the blocking `send`/`recv` over borrowed slices, the raw
//! API, the C ABI: ferry sees an address, and the memory is the user's
//! again when the call returns). A key is reused only if the registration
//! can be proven to cover the memory mapped at the address *now*:
//! - `ibv_reg_mr` pins the pages; while the MR lives they are never freed
//!   or reused, so the key reaches those physical pages and nothing else.
//! - At registration the cache records their page frame numbers
//!   (`/proc/self/pagemap`, `pagemap.rs`); at each reuse it reads the frames
//!   mapped at the address again and reuses the key only if every page is
//!   present and the same. Memory freed and reallocated on the same pages
//!   (a `malloc` free list) is the same memory, and the key is right for it;
//!   memory unmapped and mapped again gets other pages (the old ones are
//!   still pinned), the check fails, and the old MR is deregistered and a
//!   new one made. This is UCX's `UCX_RCACHE_CHECK_PFN`, used here as the
//!   only criterion rather than on top of memory hooks.
//! - The loan guarantees the memory stays mapped for the operation, so the
//!   check at `register` holds until `deregister`.
//! - The frame numbers read as zero without `CAP_SYS_ADMIN`; then nothing
//!   can be proven and lent memory is registered per use, as before.
//! - On-demand paging would make the check unnecessary (the HCA follows
//!   the page tables), but rxe has it only from Linux 6.14 (the CI VM runs
//!   6.1) and this device does not ask for it yet; on ConnectX it is the
//!   route to take.
//!
//! **Not cached**: registrations that grant a peer *write* access
//! (`Access::RemoteWrite`, the receiving side of rendezvous-put). A cached
//! key outlives its transfer, and a peer must never keep a way to write
//! into memory the program holds again; those are registered per use and
//! their key dies with the transfer. A `RemoteRead` key does outlive its
//! transfer (the peer could read the buffer until it is freed, as with
//! UCX's cache): the data is the job's own.
//!
//! Both caches share one bound on pinned bytes (`FERRY_VERBS_RCACHE`,
//! [`crate::VerbsOptions::rcache`]; 0 turns caching off, the old
//! behaviour); past it, registrations are per use. The test
//! `a_registration_is_never_stale_after_the_buffer_is_reused` (owned, per
//! use) and those in `tests/rcache.rs` (owned, attached, lent) free and
//! reallocate memory at the same address and check that the old key is
//! never used for the new memory.
//!
//! Handles carry a generation, so a stale `MemHandle` (deregistered, slot
//! reused) is rejected rather than aliasing a newer registration.

use ferry_core::device::{Access, MemHandle};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, Error};

use crate::ffi::{sys, AttachCache, Budget, Pd, RegisteredBuf, Revoker};
use crate::pagemap::Pagemap;
use crate::rcache::LentCache;

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

/// Whether a registration for `access` may outlive its transfer (never one
/// that lets a peer write; see the module docs).
fn cacheable(access: Access) -> bool {
    access != Access::RemoteWrite
}

#[derive(Debug)]
enum Held {
    /// An owned or lent buffer with a registration for this use, or an
    /// owned one with its attached registration.
    Buf(RegisteredBuf),
    /// A lent buffer whose key is in the lent cache at `slot`.
    Lent { buf: Buf, slot: u32 },
}

#[derive(Debug)]
struct Entry {
    held: Held,
    local: Local,
    generation: u32,
}

/// What a `get`/`put` needs of a local registration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Local {
    pub(crate) addr: u64,
    pub(crate) len: usize,
    pub(crate) lkey: u32,
}

/// Registrations reused and made (for tests and the bench's curiosity).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheStats {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

/// The cache's state (see the module docs).
#[derive(Debug)]
struct Cache {
    // Field order is drop order: the lent MRs, then the attached ones still
    // alive; both before the device's PD.
    lent: LentCache,
    revoker: Revoker,
    budget: Budget,
    /// The page-frame check; `None` without `CAP_SYS_ADMIN` (lent memory
    /// is then registered per use, and owned read-only memory too).
    pagemap: Option<Pagemap>,
}

/// The live registrations, and the cache.
#[derive(Debug)]
pub(crate) struct Registry {
    // Live registrations first: a lent one's slot is released into the
    // cache, so the cache goes after.
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    generation: u32,
    cache: Option<Cache>,
    stats: CacheStats,
}

impl Registry {
    /// A registry that caches up to `max_pinned` bytes (0: none).
    pub(crate) fn new(max_pinned: usize) -> Registry {
        let cache = (max_pinned > 0).then(|| {
            let budget = Budget::new(max_pinned);
            Cache {
                lent: LentCache::new(budget.clone()),
                revoker: Revoker::new(),
                budget,
                pagemap: Pagemap::open(),
            }
        });
        if let Some(c) = &cache {
            tracing::debug!(
                max_pinned,
                pagemap = c.pagemap.is_some(),
                "verbs registration cache"
            );
        }
        Registry {
            entries: Vec::new(),
            free: Vec::new(),
            generation: 0,
            cache,
            stats: CacheStats::default(),
        }
    }

    /// Registers `buf`; see the module docs.
    #[allow(clippy::result_large_err)]
    pub(crate) fn register(
        &mut self,
        pd: &Pd,
        mut buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let flags = access_flags(access);
        let cache = self.cache.as_mut().filter(|_| cacheable(access));
        let (held, local, rkey, hit) = match cache {
            Some(Cache {
                lent,
                pagemap: Some(pm),
                ..
            }) if buf.is_lent() => match lent.acquire(pm, pd, &mut buf, flags, writable(access)) {
                Ok(Some(l)) => {
                    let held = Held::Lent { buf, slot: l.slot };
                    (held, l.local, l.rkey, l.hit)
                }
                Ok(None) => per_use(pd, buf, flags, access)?,
                Err(e) => return Err((e.into(), buf)),
            },
            Some(c) if !buf.is_lent() => {
                let attach = AttachCache {
                    revoker: &mut c.revoker,
                    budget: &c.budget,
                    pagemap: c.pagemap.as_mut(),
                };
                let reg = RegisteredBuf::new(pd, buf, flags, writable(access), Some(attach))
                    .map_err(|(e, buf)| (e.into(), buf))?;
                held_buf(reg)
            }
            _ => per_use(pd, buf, flags, access)?,
        };
        if local.len > 0 {
            if hit {
                self.stats.hits += 1;
            } else {
                self.stats.misses += 1;
            }
        }
        Ok(self.insert(held, local, rkey))
    }

    fn insert(&mut self, held: Held, local: Local, rkey: u32) -> (MemHandle, RemoteKey) {
        self.generation = self.generation.wrapping_add(1);
        let entry = Entry {
            held,
            local,
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
        let key = RemoteKey {
            addr: local.addr,
            key: u64::from(rkey),
        };
        (handle, key)
    }

    fn index(&self, mem: MemHandle) -> Option<usize> {
        let index = (mem.0 & 0xffff_ffff) as usize;
        let generation = (mem.0 >> 32) as u32;
        let e = self.entries.get(index)?.as_ref()?;
        (e.generation == generation).then_some(index)
    }

    /// Ends a registration (`ibv_dereg_mr`, or back to the cache), then the
    /// buffer goes back.
    pub(crate) fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        let index = self.index(mem)?;
        let entry = self.entries[index].take()?;
        self.free.push(index as u32);
        match entry.held {
            Held::Buf(reg) => Some(reg.into_buf()),
            Held::Lent { buf, slot } => {
                if let Some(c) = self.cache.as_mut() {
                    c.lent.release(slot);
                }
                Some(buf)
            }
        }
    }

    /// The local side of a transfer.
    pub(crate) fn local(&self, mem: MemHandle) -> Option<Local> {
        Some(self.entries[self.index(mem)?].as_ref()?.local)
    }

    /// Live registrations (for tests).
    pub(crate) fn live(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// Hits and misses so far.
    pub(crate) fn stats(&self) -> CacheStats {
        self.stats
    }

    #[cfg(test)]
    /// Cached registrations: attached to live `Buf`s, and of lent memory
    /// (for tests).
    pub(crate) fn cached(&self) -> (usize, usize) {
        self.cache
            .as_ref()
            .map_or((0, 0), |c| (c.revoker.live(), c.lent.entries()))
    }
}

/// A registration for this use only.
#[allow(clippy::result_large_err)]
fn per_use(
    pd: &Pd,
    buf: Buf,
    flags: u32,
    access: Access,
) -> Result<(Held, Local, u32, bool), (Error, Buf)> {
    let reg = RegisteredBuf::new(pd, buf, flags, writable(access), None)
        .map_err(|(e, buf)| (e.into(), buf))?;
    Ok(held_buf(reg))
}

fn held_buf(reg: RegisteredBuf) -> (Held, Local, u32, bool) {
    let local = Local {
        addr: reg.addr(),
        len: reg.len(),
        lkey: reg.lkey(),
    };
    let (rkey, hit) = (reg.rkey(), reg.hit());
    (Held::Buf(reg), local, rkey, hit)
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
