//! Rendezvous by cross-memory attach (CMA): registrations, remote keys, and
//! `get`/`put` as `process_vm_readv`/`process_vm_writev` from/to the peer.
//!
//! # Keys
//! [`Device::register`](ferry_core::Device::register) keeps the `Buf` (its
//! bytes never move while it lives, see `ferry_core::buffer`) and, for
//! remote access, **publishes** it in a slot of this rank's registration
//! table in the segment: address, length, access, and a 48-bit random
//! secret written last (Release). The [`RemoteKey`] is
//! `{addr, key: slot << 48 | secret}`. A peer's `get`/`put` checks the key
//! against that slot (secret, access, address, length) before it touches
//! the memory, so a forged or stale key fails with the status codes the
//! loopback device uses (mirroring `ibv_wc_status`) instead of reading or
//! writing whatever the address happens to hold. When all
//! [`REG_SLOTS`](crate::layout::REG_SLOTS) are in use, a registration is
//! unpublished (slot `0xFFFF`) and peers only bounds-check it locally.
//!
//! # Copies
//! A copy runs in chunks of [`CHUNK`] bytes: the first inside the `get`/`put`
//! call, the rest one per `progress`, so a huge transfer cannot stall the
//! progress loop. Completion is reported through `Sink::rdma_done` on the
//! next `progress`. The copy is synchronous in the kernel, so a finished put
//! is visible at the target before any later packet (the FIN) is enqueued.

use std::collections::VecDeque;
use std::sync::atomic::fence;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use ferry_core::device::{Access, MemHandle, OpToken, RdmaDir, Sink, WcStatus};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, DeviceError, Error, PeerError, Rank};

use crate::ffi::Segment;
use crate::layout::REG_SLOTS;
use crate::os::{self, CmaError};

/// Bytes copied per step.
pub(crate) const CHUNK: usize = 2 * 1024 * 1024;
const SECRET_MASK: u64 = (1 << 48) - 1;
const UNPUBLISHED: u64 = 0xFFFF;

fn completion(what: &'static str, status: WcStatus) -> Error {
    status.error(what)
}

#[derive(Debug)]
struct Region {
    buf: Buf,
    access: Access,
    gen: u32,
    slot: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Op {
    token: OpToken,
    peer: u32,
    rank: Rank,
    pid: u32,
    remote: u64,
    local: MemHandle,
    len: usize,
    done: usize,
    dir: RdmaDir,
}

/// Registrations and copies in flight.
#[derive(Debug)]
pub(crate) struct Rdma {
    me: u32,
    regions: Vec<Option<Region>>,
    gens: Vec<u32>,
    free_handles: Vec<u32>,
    free_slots: Vec<usize>,
    secret_state: u64,
    ops: VecDeque<Op>,
    done: VecDeque<(OpToken, Result<(), Error>)>,
}

fn access_code(a: Access) -> u64 {
    match a {
        Access::RemoteRead => 1,
        Access::RemoteWrite => 2,
        Access::LocalWrite => 3,
        Access::LocalRead => 4,
    }
}

impl Rdma {
    pub(crate) fn new(me: u32, seed: u64) -> Rdma {
        Rdma {
            me,
            regions: Vec::new(),
            gens: Vec::new(),
            free_handles: Vec::new(),
            free_slots: (0..REG_SLOTS).rev().collect(),
            secret_state: seed,
            ops: VecDeque::new(),
            done: VecDeque::new(),
        }
    }

    /// True if a copy is running or a completion waits to be reported.
    pub(crate) fn has_work(&self) -> bool {
        !self.ops.is_empty() || !self.done.is_empty()
    }

    fn next_secret(&mut self) -> u64 {
        // SplitMix64 over a random seed: unpredictable to other processes,
        // never 0 (0 marks a free slot).
        self.secret_state = self.secret_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.secret_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) & SECRET_MASK) | 1
    }

    pub(crate) fn register(
        &mut self,
        seg: &Segment,
        buf: Buf,
        access: Access,
    ) -> (MemHandle, RemoteKey) {
        let addr = buf.id() as u64;
        let len = buf.len() as u64;
        let secret = self.next_secret();
        let remote = matches!(access, Access::RemoteRead | Access::RemoteWrite);
        let slot = if remote { self.free_slots.pop() } else { None };
        if let (Some(s), Some(block)) = (slot, seg.rank(self.me)) {
            let reg = &block.regs[s];
            // Release fence: orders the clear of the slot's previous secret
            // (in `deregister`) before the field stores below, so a checker
            // that reads one of them also sees the old secret gone (pairs
            // with the Acquire fence in `check_remote`; a seqlock, after
            // Boehm, "Can seqlocks get along with programming language
            // memory models?", 2012).
            fence(Release);
            // Relaxed: published by the Release store of the secret below.
            reg.addr.store(addr, Relaxed);
            reg.len.store(len, Relaxed);
            reg.access.store(access_code(access), Relaxed);
            // Release: publishes addr/len/access; pairs with the Acquire
            // load of the secret in `check_remote`.
            reg.secret.store(secret, Release);
        } else if remote {
            tracing::debug!("shm registration table full; key is unpublished");
        }
        let idx = match self.free_handles.pop() {
            Some(i) => i,
            None => {
                self.regions.push(None);
                self.gens.push(0);
                (self.regions.len() - 1) as u32
            }
        };
        let gen = self.gens[idx as usize];
        self.regions[idx as usize] = Some(Region {
            buf,
            access,
            gen,
            slot,
        });
        let handle = MemHandle(u64::from(gen) << 32 | u64::from(idx));
        let key = RemoteKey {
            addr,
            key: slot.map_or(UNPUBLISHED, |s| s as u64) << 48 | secret,
        };
        (handle, key)
    }

    fn region(&self, h: MemHandle) -> Option<&Region> {
        let idx = (h.0 & 0xFFFF_FFFF) as usize;
        self.regions
            .get(idx)?
            .as_ref()
            .filter(|r| u64::from(r.gen) == h.0 >> 32)
    }

    fn region_mut(&mut self, h: MemHandle) -> Option<&mut Region> {
        let idx = (h.0 & 0xFFFF_FFFF) as usize;
        self.regions
            .get_mut(idx)?
            .as_mut()
            .filter(|r| u64::from(r.gen) == h.0 >> 32)
    }

    pub(crate) fn deregister(&mut self, seg: &Segment, h: MemHandle) -> Option<Buf> {
        self.region(h)?;
        let idx = (h.0 & 0xFFFF_FFFF) as usize;
        let region = self.regions[idx].take()?;
        self.gens[idx] = self.gens[idx].wrapping_add(1);
        self.free_handles.push(idx as u32);
        if let (Some(s), Some(block)) = (region.slot, seg.rank(self.me)) {
            // Release: the slot's next user rewrites the fields only after
            // this clear and its own Release fence; see `register`.
            block.regs[s].secret.store(0, Release);
            self.free_slots.push(s);
        }
        Some(region.buf)
    }

    /// Checks a peer's key against its published slot.
    fn check_remote(
        seg: &Segment,
        peer: u32,
        key: RemoteKey,
        len: usize,
        access: Access,
    ) -> Result<(), Error> {
        let slot = key.key >> 48;
        let secret = key.key & SECRET_MASK;
        if slot == UNPUBLISHED {
            return Ok(());
        }
        let denied = || {
            completion(
                "cma: remote key names no registration",
                WcStatus::RemAccessErr,
            )
        };
        let block = seg.rank(peer).ok_or_else(denied)?;
        let reg = block.regs.get(slot as usize).ok_or_else(denied)?;
        // Acquire: pairs with the Release store of the secret in `register`.
        if secret == 0 || reg.secret.load(Acquire) != secret {
            return Err(denied());
        }
        let (addr, reg_len, acc) = (
            reg.addr.load(Relaxed),
            reg.len.load(Relaxed),
            reg.access.load(Relaxed),
        );
        // Acquire fence, then re-check that the slot was not recycled while
        // we read it: pairs with the Release fence in `register` (if a field
        // read saw a newer registration's value, this load sees the secret
        // that registration cleared or replaced).
        fence(Acquire);
        if reg.secret.load(Relaxed) != secret {
            return Err(denied());
        }
        if acc != access_code(access) || addr != key.addr {
            return Err(completion(
                "cma: remote region lacks the access",
                WcStatus::RemAccessErr,
            ));
        }
        if len as u64 > reg_len {
            return Err(completion(
                "cma: length exceeds the remote region",
                WcStatus::RemInvReqErr,
            ));
        }
        Ok(())
    }

    /// Starts a copy between `local` and the peer's `remote` (a
    /// [`RdmaDir::Put`] copies local to remote). Failures of the operation itself go to `rdma_done`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &mut self,
        seg: &Segment,
        (peer, rank, pid): (u32, Rank, u32),
        remote: RemoteKey,
        local: MemHandle,
        len: usize,
        token: OpToken,
        dir: RdmaDir,
    ) {
        let (local_access, remote_access) = (dir.local_access(), dir.remote_access());
        let checked = match self.region(local) {
            None => Err(completion(
                "cma: local handle names no registration",
                WcStatus::LocProtErr,
            )),
            Some(r) if r.access != local_access => Err(completion(
                "cma: local region lacks the access",
                WcStatus::LocProtErr,
            )),
            Some(r) if len > r.buf.len() => Err(completion(
                "cma: length exceeds the local region",
                WcStatus::LocLenErr,
            )),
            Some(_) => Self::check_remote(seg, peer, remote, len, remote_access),
        };
        if let Err(e) = checked {
            self.done.push_back((token, Err(e)));
            return;
        }
        let op = Op {
            token,
            peer,
            rank,
            pid,
            remote: remote.addr,
            local,
            len,
            done: 0,
            dir,
        };
        self.step(op);
    }

    /// Copies one chunk; queues the op again or its completion.
    fn step(&mut self, mut op: Op) {
        let n = CHUNK.min(op.len - op.done);
        let result = match self.region_mut(op.local) {
            None => Err(completion(
                "cma: local region deregistered during the copy",
                WcStatus::LocProtErr,
            )),
            Some(r) => {
                let range = op.done..op.done + n;
                let remote = op.remote.checked_add(op.done as u64);
                // A put only reads its local region, which may be a read-only
                // loan of the user's send buffer: never ask it for `&mut`.
                if op.dir == RdmaDir::Put {
                    match (r.buf.as_slice().get(range), remote) {
                        (Some(local), Some(remote)) => os::cma_write(op.pid, local, remote),
                        _ => Err(CmaError::Fault),
                    }
                } else {
                    match (r.buf.as_mut_slice().get_mut(range), remote) {
                        (Some(local), Some(remote)) => os::cma_read(op.pid, local, remote),
                        _ => Err(CmaError::Fault),
                    }
                }
                .map_err(|e| cma_failure(e, op.rank))
            }
        };
        match result {
            Ok(()) if op.done + n < op.len => {
                op.done += n;
                self.ops.push_back(op);
            }
            Ok(()) => self.done.push_back((op.token, Ok(()))),
            Err(e) => self.done.push_back((op.token, Err(e))),
        }
    }

    /// Advances every running copy by one chunk and reports completions.
    pub(crate) fn progress<S: Sink>(&mut self, sink: &mut S) -> usize {
        for _ in 0..self.ops.len() {
            if let Some(op) = self.ops.pop_front() {
                self.step(op);
            }
        }
        let mut events = 0;
        while let Some((token, result)) = self.done.pop_front() {
            sink.rdma_done(token, result);
            events += 1;
        }
        events
    }

    /// Fails the running copies from a dead peer at once.
    pub(crate) fn peer_died(&mut self, peer: u32, rank: Rank) {
        let mut i = 0;
        while i < self.ops.len() {
            if self.ops[i].peer == peer {
                if let Some(op) = self.ops.remove(i) {
                    self.done
                        .push_back((op.token, Err(PeerError::Died { rank }.into())));
                }
            } else {
                i += 1;
            }
        }
    }

    /// Runs a copy of `len` bytes synchronously (the setup probe).
    pub(crate) fn probe(pid: u32, local: &mut [u8], remote: u64) -> Result<(), CmaError> {
        os::cma_read(pid, local, remote)
    }
}

/// The error a failed CMA copy reports.
fn cma_failure(e: CmaError, rank: Rank) -> Error {
    match e {
        CmaError::NoProcess => PeerError::Died { rank }.into(),
        CmaError::Fault => completion(
            "cma: address range not mapped in the peer",
            WcStatus::RemAccessErr,
        ),
        CmaError::Denied => DeviceError::Os {
            what: "process_vm_readv/writev refused (EPERM)",
            code: libc::EPERM,
        }
        .into(),
        CmaError::Other(code) => DeviceError::Os {
            what: "process_vm_readv/writev",
            code,
        }
        .into(),
    }
}
