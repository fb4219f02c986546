//! Windows whose members share a node, in shared memory: every member
//! maps one region (see `shared.rs` for how it is made), so an origin
//! puts and gets with loads and stores, accumulates with CPU atomics, and
//! locks with atomic words in the region. The target's CPU is never
//! needed: a passive-target epoch completes while the target computes.
//!
//! # The region
//! Each member's part of the window, in rank order, each on a 64-byte
//! line, then one control block per member (64-byte aligned):
//!
//! ```text
//! +0    exclusive holder: 0, or the holder's window rank + 1   (u32)
//! +64   one shared-holder slot per member: 0 or 1               (u8 each)
//! +S    64 stripe locks for accumulates (u32 each: 0, or holder + 1)
//! ```
//!
//! # Locks
//! A shared lock sets the origin's slot, then checks the exclusive word;
//! if it is taken, it clears the slot and waits. An exclusive lock takes
//! the word (a compare-and-swap), then waits until every slot but its own
//! is clear. Both sides store before they load, sequentially consistent,
//! so one of two racing lockers always sees the other (Dekker's
//! argument). A waiter progresses its engine now and then, and a holder
//! whose process died is forgotten (its word and slot cleared).
//!
//! # Operations
//! Put and get are copies. Accumulates, fetch-and-op and
//! compare-and-swap take the stripe locks that cover their range (each
//! lock a word that covers every 64th run of 4 KiB of a member's part,
//! taken in increasing order), then combine with the plain op: atomic
//! with each other at the cost of one compare-and-swap and one store per
//! stripe (a loop of CPU atomics per element would cost more from a few
//! elements on, and could not take every type).
//! Operations in a fence or post/start epoch hold the target's shared
//! lock while they run: that excludes only the target's own
//! [`Window::local`], which takes its exclusive lock.

use std::sync::atomic::{fence, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferry_core::coll::{reduce_into, Datatype};
use ferry_core::rma::AccOp;
use ferry_core::{Rank, UsageError};
use ferry_shm::window::Region;

use super::{Access, Origin, Window};
use crate::error::Result;
use crate::typed::Element;

/// The offset of the shared-holder slots in a control block.
const SLOTS: usize = 64;
/// Stripe locks per member, each covering every 64th run of
/// `1 << STRIPE_SHIFT` bytes of its part.
const STRIPES: usize = 64;
const STRIPE_SHIFT: u32 = 12;
/// Spins before a waiter yields; rounds between its engine visits.
const SPINS: u32 = 64;
const VISIT_EVERY: u32 = 64;
/// Rounds after which a waiter sleeps between attempts.
const SLEEP_AFTER: u32 = 20_000;
/// Flushes and unlocks between two checks that the target lives.
const CHECK_EVERY: u32 = 256;

/// A node window's region and where everything lies in it.
#[derive(Debug)]
pub(super) struct Direct {
    region: Arc<Region>,
    /// Each member's part: offset in the region, length.
    parts: Vec<(usize, usize)>,
    /// The first control block's offset, and each block's length.
    control: usize,
    stride: usize,
}

/// Where a node window's parts and control blocks go in its region.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) parts: Vec<(usize, usize)>,
    pub(super) control: usize,
    pub(super) stride: usize,
    /// The region's length.
    pub(super) len: usize,
}

impl Plan {
    /// The plan for members exposing `sizes` bytes each; `None` if it
    /// overflows.
    pub(super) fn of(sizes: &[u64]) -> Option<Plan> {
        let mut parts = Vec::with_capacity(sizes.len());
        let mut at = 0usize;
        for &s in sizes {
            let len = usize::try_from(s).ok()?;
            parts.push((at, len));
            at = at.checked_add(len)?.checked_next_multiple_of(64)?;
        }
        let stripes = (SLOTS + sizes.len()).next_multiple_of(64);
        let stride = stripes + STRIPES * 4;
        let len = at.checked_add(stride.checked_mul(sizes.len())?)?;
        Some(Plan {
            parts,
            control: at,
            stride,
            len,
        })
    }
}

impl Direct {
    pub(super) fn new(region: Arc<Region>, plan: Plan) -> Direct {
        Direct {
            region,
            parts: plan.parts,
            control: plan.control,
            stride: plan.stride,
        }
    }

    /// Member `rank`'s part: its address in this process (0 for an empty
    /// part, as MPI's `MPI_Win_shared_query` gives `NULL`) and its length.
    pub(super) fn part(&self, rank: usize) -> Option<(usize, usize)> {
        self.parts.get(rank).map(|&(off, len)| match len {
            0 => (0, 0),
            _ => (self.region.addr() + off, len),
        })
    }

    /// The region offset of `len` bytes at byte `disp` of `target`'s part
    /// (the origin checked the range against the sizes it knows).
    fn at(&self, target: usize, disp: u64, len: usize) -> Result<usize> {
        let (off, size) = self.parts[target];
        usize::try_from(disp)
            .ok()
            .filter(|&d| d.checked_add(len).is_some_and(|end| end <= size))
            .map(|d| off + d)
            .ok_or_else(|| {
                UsageError::RmaRange {
                    end: disp.saturating_add(len as u64),
                    size: size as u64,
                }
                .into()
            })
    }

    fn block(&self, target: usize) -> usize {
        self.control + target * self.stride
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // The plan puts every word inside the region, 4-byte aligned.
        self.region
            .atomic_u32(offset)
            .unwrap_or_else(|| unreachable!("a control word outside the region"))
    }

    fn exclusive(&self, target: usize) -> &AtomicU32 {
        self.word(self.block(target))
    }

    fn slot(&self, target: usize, holder: usize) -> &AtomicU8 {
        self.region
            .atomic_u8(self.block(target) + SLOTS + holder)
            .unwrap_or_else(|| unreachable!("a lock slot outside the region"))
    }

    fn stripe(&self, target: usize, k: usize) -> &AtomicU32 {
        let first = (SLOTS + self.parts.len()).next_multiple_of(64);
        self.word(self.block(target) + first + 4 * k)
    }

    /// One attempt at a shared lock of `target`: `Err(holder)` while
    /// another member holds it exclusively.
    fn try_shared(&self, target: usize, me: usize) -> std::result::Result<(), usize> {
        let slot = self.slot(target, me);
        slot.store(1, Ordering::SeqCst);
        match self.exclusive(target).load(Ordering::SeqCst) {
            0 => Ok(()),
            h if h as usize == me + 1 => Ok(()),
            h => {
                slot.store(0, Ordering::SeqCst);
                Err(h as usize - 1)
            }
        }
    }

    fn release_shared(&self, target: usize, me: usize) {
        self.slot(target, me).store(0, Ordering::Release);
    }

    /// One attempt at the exclusive word: true if this member holds it
    /// already; `Err(holder)` while another does.
    fn try_claim(&self, target: usize, me: usize) -> std::result::Result<bool, usize> {
        let mine = me as u32 + 1;
        match self
            .exclusive(target)
            .compare_exchange(0, mine, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => Ok(false),
            Err(h) if h == mine => Ok(true),
            Err(h) => Err(h as usize - 1),
        }
    }

    /// `Err(holder)` while a member other than `me` holds a shared lock.
    fn readers_gone(&self, target: usize, me: usize) -> std::result::Result<(), usize> {
        for r in (0..self.parts.len()).filter(|&r| r != me) {
            if self.slot(target, r).load(Ordering::SeqCst) != 0 {
                return Err(r);
            }
        }
        Ok(())
    }

    fn release_exclusive(&self, target: usize) {
        self.exclusive(target).store(0, Ordering::Release);
    }

    /// Clears every lock a dead member held.
    fn forget(&self, dead: usize) {
        let theirs = dead as u32 + 1;
        for t in 0..self.parts.len() {
            self.slot(t, dead).store(0, Ordering::SeqCst);
            let _ =
                self.exclusive(t)
                    .compare_exchange(theirs, 0, Ordering::SeqCst, Ordering::SeqCst);
            for k in 0..STRIPES {
                let _ = self.stripe(t, k).compare_exchange(
                    theirs,
                    0,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
            }
        }
    }

    /// The stripes covering `len` bytes at `disp` of a part, as a mask.
    fn stripes(disp: u64, len: usize) -> u64 {
        let first = disp >> STRIPE_SHIFT;
        let last = (disp + len.max(1) as u64 - 1) >> STRIPE_SHIFT;
        if last - first >= STRIPES as u64 - 1 {
            return u64::MAX;
        }
        (first..=last).fold(0, |m, s| m | 1 << (s % STRIPES as u64))
    }
}

impl<T: Element> Window<T> {
    /// The node window's region, if this window is one.
    pub(super) fn direct(&self) -> Option<&Direct> {
        self.direct.as_ref()
    }

    /// Runs `attempt` until it succeeds: it returns `Err(holder)` while
    /// member `holder` holds what it waits for. Spins, then yields, then
    /// sleeps; progresses the engine now and then (this process may be
    /// what the holder waits for), and forgets a holder that died.
    fn wait_for(
        &self,
        d: &Direct,
        mut attempt: impl FnMut() -> std::result::Result<(), usize>,
    ) -> Result<()> {
        let mut rounds = 0u32;
        loop {
            let Err(holder) = attempt() else {
                return Ok(());
            };
            rounds = rounds.saturating_add(1);
            if rounds < SPINS {
                std::hint::spin_loop();
                continue;
            }
            if rounds % VISIT_EVERY == 0 && self.visit(holder as Rank)? {
                tracing::warn!(
                    rank = holder,
                    "a window's lock holder died: its locks are forgotten"
                );
                d.forget(holder);
            }
            if rounds < SLEEP_AFTER {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Progresses the engine; true if member `rank` has died.
    fn visit(&self, rank: Rank) -> Result<bool> {
        let job = self.comm.job_rank(rank)?;
        let mut g = self.comm.inner.shared.lock()?;
        let e = g.engine()?;
        e.progress()?;
        Ok(e.peer_error(job).is_some())
    }

    /// Every [`CHECK_EVERY`]th call: a dead `target` as an error.
    pub(super) fn direct_check(&self, o: &mut Origin, target: Rank) -> Result<()> {
        o.checks = o.checks.wrapping_add(1);
        if o.checks % CHECK_EVERY != 0 {
            return Ok(());
        }
        if self.visit(target)? {
            let rank = self.comm.job_rank(target)?;
            return Err(ferry_core::Error::from(ferry_core::PeerError::Died { rank }).into());
        }
        Ok(())
    }

    /// `target`'s lock, shared or exclusive.
    pub(super) fn direct_lock(&self, d: &Direct, target: Rank, exclusive: bool) -> Result<()> {
        let (t, me) = (target as usize, self.comm.rank() as usize);
        if !exclusive {
            return self.wait_for(d, || d.try_shared(t, me));
        }
        self.wait_for(d, || d.try_claim(t, me).map(drop))?;
        if let Err(e) = self.wait_for(d, || d.readers_gone(t, me)) {
            d.release_exclusive(t);
            return Err(e);
        }
        Ok(())
    }

    /// Releases `target`'s lock.
    pub(super) fn direct_unlock(&self, d: &Direct, target: Rank, exclusive: bool) {
        let t = target as usize;
        if exclusive {
            d.release_exclusive(t);
        } else {
            d.release_shared(t, self.comm.rank() as usize);
        }
    }

    /// Runs `f` under this member's own exclusive lock (for
    /// [`Window::local`]): no other member's operation runs meanwhile.
    pub(super) fn direct_local<R>(&self, d: &Direct, f: impl FnOnce() -> R) -> Result<R> {
        let me = self.comm.rank() as usize;
        let mut held = false;
        self.wait_for(d, || d.try_claim(me, me).map(|h| held = h))?;
        let done = self.wait_for(d, || d.readers_gone(me, me)).map(|()| f());
        if !held {
            d.release_exclusive(me);
        }
        done
    }

    /// Runs `f` on `target` with the access the origin's epoch gives: its
    /// lock when it holds one, else (a fence or post/start epoch) the
    /// target's shared lock for the operation's length.
    fn with_access<R>(
        &self,
        o: &Origin,
        d: &Direct,
        target: Rank,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        if matches!(o.access, Access::All | Access::Locks(_)) {
            return f();
        }
        let (t, me) = (target as usize, self.comm.rank() as usize);
        self.wait_for(d, || d.try_shared(t, me))?;
        let r = f();
        d.release_shared(t, me);
        r
    }

    /// A put by stores.
    pub(super) fn direct_put(
        &self,
        o: &Origin,
        d: &Direct,
        target: Rank,
        disp: u64,
        data: &[u8],
    ) -> Result<()> {
        let at = d.at(target as usize, disp, data.len())?;
        self.with_access(o, d, target, || {
            d.region.write(at, data);
            Ok(())
        })
    }

    /// A get by loads, into `out`.
    pub(super) fn direct_get(
        &self,
        o: &Origin,
        d: &Direct,
        target: Rank,
        disp: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let at = d.at(target as usize, disp, out.len())?;
        self.with_access(o, d, target, || {
            d.region.read(at, out);
            Ok(())
        })
    }

    /// An accumulate (with `result`: a get-accumulate, which receives the
    /// ranges as they were) over `ranges` of `target`'s part, `data`
    /// filling them in order: under the stripe locks of the span they
    /// cover, so the whole operation is atomic (a pair type's pieces
    /// too).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn direct_accumulate(
        &self,
        o: &Origin,
        d: &Direct,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
        op: &AccOp,
        dtype: Datatype,
        mut result: Option<&mut [u8]>,
    ) -> Result<()> {
        let first = ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let end = ranges
            .iter()
            .map(|r| r.0.saturating_add(r.1))
            .max()
            .unwrap_or(0);
        let span = usize::try_from(end - first).unwrap_or(usize::MAX);
        let at = d.at(target as usize, first, span)?;
        self.with_access(o, d, target, || {
            self.locked(d, target as usize, first, at, span, |bytes| {
                let mut from = 0usize;
                for &(disp, len) in ranges {
                    let (off, len) = ((disp - first) as usize, len as usize);
                    let here = &mut bytes[off..off + len];
                    if let Some(r) = result.as_deref_mut() {
                        r[from..from + len].copy_from_slice(here);
                    }
                    combine(op, dtype, &data[from..from + len], here)?;
                    from += len;
                }
                Ok(())
            })
        })
    }

    /// A compare-and-swap of one element; `out` receives what it held.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn direct_compare_and_swap(
        &self,
        o: &Origin,
        d: &Direct,
        target: Rank,
        disp: u64,
        compare: &[u8],
        swap: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let size = compare.len();
        let at = d.at(target as usize, disp, size)?;
        self.with_access(o, d, target, || {
            self.locked(d, target as usize, disp, at, size, |elem| {
                out.copy_from_slice(elem);
                if *elem == *compare {
                    elem.copy_from_slice(swap);
                }
                Ok(())
            })
        })
    }

    /// Runs `f` on `len` bytes at region offset `at` (byte `disp` of
    /// `target`'s part) under the stripe locks that cover them.
    fn locked(
        &self,
        d: &Direct,
        target: usize,
        disp: u64,
        at: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let mine = self.comm.rank() as u32 + 1;
        let mask = Direct::stripes(disp, len);
        // In increasing order, so two origins never wait for each other.
        let mut taken = 0u64;
        let mut got = Ok(());
        for k in bits(mask) {
            let stripe = d.stripe(target, k);
            // Uncontended, the first try takes it.
            let free = stripe
                .compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            if !free {
                got = self.wait_for(d, || {
                    stripe
                        .compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed)
                        .map(drop)
                        .map_err(|h| h as usize - 1)
                });
                if got.is_err() {
                    break;
                }
            }
            taken |= 1 << k;
        }
        let r = got.and_then(|()| {
            d.region
                .with_bytes(at, len, f)
                .unwrap_or_else(|| unreachable!("a checked range outside the region"))
        });
        for k in bits(taken) {
            d.stripe(target, k).store(0, Ordering::Release);
        }
        r
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            k
        })
    })
}

/// Combines `data` into `target` by `op` (as the core's protocol does).
fn combine(op: &AccOp, dtype: Datatype, data: &[u8], target: &mut [u8]) -> Result<()> {
    match op {
        AccOp::Replace => target.copy_from_slice(data),
        AccOp::NoOp => {}
        AccOp::Reduce(r) => reduce_into(r, dtype, data, target)?,
    }
    Ok(())
}

/// Orders this member's stores before what follows (a flush, an unlock,
/// a fence: the operations are complete once they are in the region, and
/// whatever tells another process so, a message or a lock word, is
/// released after them). A release fence: no instruction on x86.
pub(super) fn settle() {
    fence(Ordering::Release);
}
