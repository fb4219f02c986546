//! Synchronization: fences (active target) and locks (passive target),
//! with guards that end an epoch when dropped.
//!
//! A fence is a collective: each rank tells every target how many data
//! requests it sent (a reduce-scatter of the counts), progresses until
//! its own window has applied as many as target it, and meets the others
//! in a barrier, after which the next epoch's requests may come. A lock,
//! an unlock and a flush are a request to the target and its reply: the
//! reply of an unlock or a flush comes after every earlier request of
//! this origin is applied (see [`ferry_core::rma`]).

use std::ops::Deref;

use ferry_core::rma::{Kind, Request as Wire};
use ferry_core::{Rank, UsageError};

use super::{Access, Origin, Window};
use crate::coll::op::Op;
use crate::error::{Error, Result};
use crate::request::Request;
use crate::typed::Element;
use crate::waiter::block_on;

/// A lock's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// Shared (`MPI_LOCK_SHARED`): other shared holders may hold it too.
    Shared,
    /// Exclusive (`MPI_LOCK_EXCLUSIVE`): no other holder.
    Exclusive,
}

impl<T: Element> Window<T> {
    /// `MPI_Win_fence`: ends the fence epoch (every request of every
    /// member that targets this rank is applied when it returns) and opens
    /// the next. Collective.
    ///
    /// # Errors
    /// A lock held; as for [`crate::Comm::reduce_scatter_block`] and
    /// [`crate::Comm::barrier`]; a member's death.
    pub fn fence(&self) -> Result<()> {
        let mut o = self.origin()?;
        if holds_locks(&o) || matches!(o.access, Access::Group(_)) || o.exposed.is_some() {
            return Err(
                UsageError::RmaSync("a fence while a lock or a post/start epoch is open").into(),
            );
        }
        // A node window's operations are complete in their calls.
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            super::direct::settle();
            self.comm.barrier()?;
            o.access = Access::Fence;
            return Ok(());
        }
        self.flush_batches(&mut o)?;
        let n = o.sent.len();
        let sent = std::mem::replace(&mut o.sent, vec![0; n]);
        let mut mine = [0u64];
        self.comm
            .reduce_scatter_block(&sent, &mut mine, &Op::sum())?;
        o.expected += mine[0];
        let (expected, context) = (o.expected, self.comm.context());
        block_on(&self.comm.inner.shared, |e| {
            e.progress()?;
            Ok((e.win_applied(context)? >= expected).then_some(()))
        })?;
        self.comm.barrier()?;
        o.access = Access::Fence;
        Ok(())
    }

    /// Runs `f` in a fence epoch: a fence, `f`, a fence. Collective.
    ///
    /// # Errors
    /// As for [`Window::fence`].
    pub fn fence_epoch<R>(&self, f: impl FnOnce(&Window<T>) -> R) -> Result<R> {
        self.fence()?;
        let r = f(self);
        self.fence()?;
        Ok(r)
    }

    /// `MPI_Win_lock`: locks `target`'s window; the guard's drop unlocks
    /// it (or [`LockEpoch::unlock`], which reports errors). Operations on
    /// `target` may go through the guard or the window.
    ///
    /// # Errors
    /// A lock of `target` held already, a `lock_all` epoch, a bad rank, a
    /// dead target.
    pub fn lock(&self, target: Rank, kind: LockKind) -> Result<LockEpoch<'_, T>> {
        self.start_lock(target, kind)?;
        Ok(LockEpoch {
            win: self,
            target,
            open: true,
        })
    }

    /// `MPI_Win_lock` without a guard, for callers that keep epochs
    /// themselves (the C layer): [`Window::end_lock`] ends it.
    ///
    /// # Errors
    /// As for [`Window::lock`].
    pub fn start_lock(&self, target: Rank, kind: LockKind) -> Result<()> {
        let mut o = self.origin()?;
        self.size_of(target)?;
        let n = o.sent.len();
        match &o.access {
            Access::All => {
                return Err(UsageError::RmaSync("a lock inside a lock_all epoch").into());
            }
            Access::Locks(l) if l[target as usize].is_some() => {
                return Err(UsageError::RmaSync("a second lock of the same target").into());
            }
            Access::Locks(_) => {}
            // A fence epoch ends at a lock (MPI would have the fence say
            // so with MPI_MODE_NOSUCCEED).
            Access::Group(_) => {
                return Err(UsageError::RmaSync("a lock inside a start/complete epoch").into());
            }
            Access::Closed | Access::Fence => {
                // The table of the last lock epoch, reused: a lock epoch
                // allocates nothing in steady state.
                let mut held = std::mem::take(&mut o.spare_locks);
                held.clear();
                held.resize(n, None);
                o.access = Access::Locks(held);
            }
        }
        let exclusive = kind == LockKind::Exclusive;
        let granted = self.lock_one(&mut o, target, exclusive);
        if let Err(e) = granted {
            close_if_unlocked(&mut o);
            return Err(e);
        }
        if let Access::Locks(l) = &mut o.access {
            l[target as usize] = Some(kind);
        }
        Ok(())
    }

    /// Takes `target`'s lock (its word on a node window, else by a
    /// request).
    fn lock_one(&self, o: &mut Origin, target: Rank, exclusive: bool) -> Result<()> {
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            return self.direct_lock(d, target, exclusive);
        }
        let mut wire = Wire::new(Kind::Lock, 0, 0);
        wire.exclusive = exclusive;
        // The origin's lock is held while waiting: nothing of this window
        // may reach the target before the grant.
        answered(self.ask(o, target, wire)?)
    }

    /// Releases `target`'s lock once every operation on it is complete
    /// (a store on a node window, else a request).
    fn unlock_one(&self, o: &mut Origin, target: Rank, exclusive: bool) -> Result<()> {
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            super::direct::settle();
            self.direct_unlock(d, target, exclusive);
            return self.direct_check(o, target);
        }
        let _ = exclusive;
        answered(self.ask(o, target, Wire::new(Kind::Unlock, 0, 0))?)
    }

    /// Completes every operation on `target` so far.
    fn flush_one(&self, o: &mut Origin, target: Rank) -> Result<()> {
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            super::direct::settle();
            return self.direct_check(o, target);
        }
        answered(self.ask(o, target, Wire::new(Kind::Flush, 0, 0))?)
    }

    /// `MPI_Win_unlock`: every operation on `target` since the lock is
    /// complete there, and the lock is released.
    ///
    /// # Errors
    /// No lock of `target` held; a dead target.
    pub fn end_lock(&self, target: Rank) -> Result<()> {
        let mut o = self.origin()?;
        let held = match &o.access {
            Access::Locks(l) => l.get(target as usize).copied().flatten(),
            _ => None,
        };
        let Some(kind) = held else {
            return Err(UsageError::RmaSync("an unlock of a target not locked").into());
        };
        let r = self.unlock_one(&mut o, target, kind == LockKind::Exclusive);
        if let Access::Locks(l) = &mut o.access {
            l[target as usize] = None;
        }
        close_if_unlocked(&mut o);
        r
    }

    /// `MPI_Win_lock_all`: a shared lock of every member, asked of all at
    /// once.
    ///
    /// # Errors
    /// Another lock held; a dead member.
    pub fn lock_all(&self) -> Result<Epoch<'_, T>> {
        self.start_lock_all()?;
        Ok(Epoch {
            win: self,
            open: true,
        })
    }

    /// `MPI_Win_lock_all` without a guard ([`Window::end_lock_all`] ends
    /// it).
    ///
    /// # Errors
    /// As for [`Window::lock_all`].
    pub fn start_lock_all(&self) -> Result<()> {
        let mut o = self.origin()?;
        if matches!(o.access, Access::All) || holds_locks(&o) {
            return Err(UsageError::RmaSync("lock_all while a lock is held").into());
        }
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            for t in 0..o.sent.len() as Rank {
                if let Err(e) = self.direct_lock(d, t, false) {
                    (0..t).for_each(|u| self.direct_unlock(d, u, false));
                    return Err(e);
                }
            }
            o.access = Access::All;
            return Ok(());
        }
        self.ask_all(&mut o, || Wire::new(Kind::Lock, 0, 0))?;
        o.access = Access::All;
        Ok(())
    }

    /// `MPI_Win_unlock_all`.
    ///
    /// # Errors
    /// No `lock_all` epoch; a dead member.
    pub fn end_lock_all(&self) -> Result<()> {
        let mut o = self.origin()?;
        if o.access != Access::All {
            return Err(UsageError::RmaSync("unlock_all without lock_all").into());
        }
        o.access = Access::Closed;
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            let mut first = Ok(());
            for t in 0..o.sent.len() as Rank {
                let r = self.unlock_one(&mut o, t, false);
                first = first.and(r);
            }
            return first;
        }
        self.ask_all(&mut o, || Wire::new(Kind::Unlock, 0, 0))
    }

    /// `MPI_Win_flush` (and `MPI_Win_flush_local`, which it is stronger
    /// than): every operation on `target` so far is complete there.
    ///
    /// # Errors
    /// No lock epoch on `target`; a dead target.
    pub fn flush(&self, target: Rank) -> Result<()> {
        let mut o = self.origin()?;
        let open = match &o.access {
            Access::All => true,
            Access::Locks(l) => l.get(target as usize).is_some_and(Option::is_some),
            _ => false,
        };
        if !open {
            return Err(UsageError::RmaSync("a flush outside a lock epoch on its target").into());
        }
        self.flush_one(&mut o, target)
    }

    /// `MPI_Win_flush_all`: [`Window::flush`] of every target locked.
    ///
    /// # Errors
    /// No lock epoch; a dead target.
    pub fn flush_all(&self) -> Result<()> {
        let mut o = self.origin()?;
        let targets: Vec<Rank> = match &o.access {
            Access::All => (0..o.sent.len() as Rank).collect(),
            Access::Locks(l) => (0..l.len() as Rank)
                .filter(|&t| l[t as usize].is_some())
                .collect(),
            _ => return Err(UsageError::RmaSync("flush_all outside a lock epoch").into()),
        };
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            super::direct::settle();
            return Ok(());
        }
        let mut replies = Vec::with_capacity(targets.len());
        for t in targets {
            replies.push(self.ask(&mut o, t, Wire::new(Kind::Flush, 0, 0))?);
        }
        wait_all(replies)
    }

    /// Sends `wire` to `target` with a reply tag; the reply's request.
    fn ask(&self, o: &mut Origin, target: Rank, mut wire: Wire) -> Result<Request> {
        wire.reply = o.reply_tag();
        let reply = self.comm.irecv(Vec::<u8>::new(), target, wire.reply)?;
        if let Err(e) = self.issue(o, target, &wire, &[]) {
            let _ = reply.cancel();
            return Err(e);
        }
        Ok(reply)
    }

    /// Sends `wire()` to every member at once and waits for every reply.
    fn ask_all(&self, o: &mut Origin, wire: impl Fn() -> Wire) -> Result<()> {
        let mut replies = Vec::with_capacity(o.sent.len());
        for t in 0..o.sent.len() as Rank {
            replies.push(self.ask(o, t, wire())?);
        }
        wait_all(replies)
    }
}

impl<T: Element> Window<T> {
    /// `MPI_Win_post`: opens an exposure epoch to the origins `group`
    /// (ranks of the window): each learns it may start.
    ///
    /// # Errors
    /// An exposure epoch open already; a bad or repeated rank; a dead
    /// origin.
    pub fn post(&self, group: &[Rank]) -> Result<()> {
        let mut o = self.origin()?;
        if o.exposed.is_some() {
            return Err(UsageError::RmaSync("a post while an exposure epoch is open").into());
        }
        self.distinct(group)?;
        for &origin in group {
            drop(self.issue(&mut o, origin, &Wire::new(Kind::Post, 0, 0), &[])?);
        }
        o.exposed = Some(group.to_vec());
        Ok(())
    }

    /// `MPI_Win_start`: opens an access epoch to the targets `group`,
    /// once each has posted.
    ///
    /// # Errors
    /// Another access epoch open; a bad or repeated rank; a dead target.
    pub fn start(&self, group: &[Rank]) -> Result<()> {
        let mut o = self.origin()?;
        if holds_locks(&o) || matches!(o.access, Access::Group(_)) {
            return Err(UsageError::RmaSync("a start while another access epoch is open").into());
        }
        self.distinct(group)?;
        let context = self.comm.context();
        for &t in group {
            let want = o.posts_used[t as usize] + 1;
            let job_t = t;
            block_on(&self.comm.inner.shared, |e| {
                e.progress()?;
                Ok((e.win_notices(context, self.job_rank(job_t)?, false)? >= want).then_some(()))
            })?;
            o.posts_used[t as usize] = want;
        }
        o.access = Access::Group(group.to_vec());
        Ok(())
    }

    /// `MPI_Win_complete`: ends the start epoch; each target learns that
    /// every operation this origin made on it is applied.
    ///
    /// # Errors
    /// No start epoch; a dead target.
    pub fn complete(&self) -> Result<()> {
        let mut o = self.origin()?;
        let Access::Group(group) = std::mem::replace(&mut o.access, Access::Closed) else {
            return Err(UsageError::RmaSync("a complete without a start").into());
        };
        for t in group {
            drop(self.issue(&mut o, t, &Wire::new(Kind::Complete, 0, 0), &[])?);
        }
        Ok(())
    }

    /// `MPI_Win_wait`: ends the exposure epoch once every origin of the
    /// post has completed (their operations are applied here).
    ///
    /// # Errors
    /// No exposure epoch; a dead origin.
    pub fn wait(&self) -> Result<()> {
        let mut o = self.origin()?;
        let group = o
            .exposed
            .clone()
            .ok_or(UsageError::RmaSync("a wait without a post"))?;
        let context = self.comm.context();
        block_on(&self.comm.inner.shared, |e| {
            e.progress()?;
            Ok(self.all_completed(e, context, &o, &group)?.then_some(()))
        })?;
        for r in group {
            o.completes_used[r as usize] += 1;
        }
        o.exposed = None;
        Ok(())
    }

    /// `MPI_Win_test`: [`Window::wait`] if every origin has completed
    /// (true), else nothing (false).
    ///
    /// # Errors
    /// As for [`Window::wait`].
    pub fn test(&self) -> Result<bool> {
        let done = {
            let o = self.origin()?;
            let group = o
                .exposed
                .clone()
                .ok_or(UsageError::RmaSync("a test without a post"))?;
            let mut g = self.comm.inner.shared.lock()?;
            let e = g.engine()?;
            e.progress()?;
            self.all_completed(e, self.comm.context(), &o, &group)?
        };
        if done {
            self.wait()?;
        }
        Ok(done)
    }

    fn all_completed(
        &self,
        e: &ferry_core::Engine<crate::select::node::NodeDevice>,
        context: ferry_core::ContextId,
        o: &Origin,
        group: &[Rank],
    ) -> ferry_core::Result<bool> {
        for &r in group {
            let seen = e.win_notices(context, self.job_rank(r)?, true)?;
            if seen <= o.completes_used[r as usize] {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The job rank of window rank `r` (notices are kept by job rank).
    fn job_rank(&self, r: Rank) -> ferry_core::Result<Rank> {
        self.comm.job_rank(r).map_err(|_| {
            UsageError::InvalidRank {
                rank: r,
                size: self.comm.size(),
            }
            .into()
        })
    }

    /// Checks that `group` holds distinct ranks of the window.
    fn distinct(&self, group: &[Rank]) -> Result<()> {
        let mut seen = vec![false; self.sizes.len()];
        for &r in group {
            self.size_of(r)?;
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(UsageError::InvalidRank {
                    rank: r,
                    size: self.comm.size(),
                }
                .into());
            }
        }
        Ok(())
    }
}

/// Ends a lock epoch that holds no lock any more, keeping its table.
fn close_if_unlocked(o: &mut Origin) {
    if matches!(&o.access, Access::Locks(l) if l.iter().all(Option::is_none)) {
        if let Access::Locks(l) = std::mem::replace(&mut o.access, Access::Closed) {
            o.spare_locks = l;
        }
    }
}

fn holds_locks(o: &Origin) -> bool {
    match &o.access {
        Access::All => true,
        Access::Locks(l) => l.iter().any(Option::is_some),
        _ => false,
    }
}

fn wait_all(replies: Vec<Request>) -> Result<()> {
    let mut first = Ok(());
    for r in replies {
        let done = answered(r);
        if first.is_ok() {
            first = done;
        }
    }
    first
}

/// Waits for a reply: an error if its receive failed (a dead target) or
/// the target refused the request.
fn answered(mut reply: Request) -> Result<()> {
    let done = reply.wait().map_err(refused)?;
    match done.status.error {
        Some(e) => Err(refused(e.into())),
        None => Ok(()),
    }
}

/// A refused request's reply is one byte too long: a truncation.
pub(super) fn refused(e: Error) -> Error {
    match e {
        Error::Usage(UsageError::Truncated { .. }) => UsageError::RmaRefused.into(),
        e => e,
    }
}

/// A lock of one target ([`Window::lock`]): the window's operations
/// through it (it derefs to the window); dropping it unlocks.
#[derive(Debug)]
pub struct LockEpoch<'w, T: Element> {
    win: &'w Window<T>,
    target: Rank,
    open: bool,
}

impl<T: Element> LockEpoch<'_, T> {
    /// The target locked.
    pub fn target(&self) -> Rank {
        self.target
    }

    /// [`Window::flush`] of the target.
    ///
    /// # Errors
    /// As for [`Window::flush`].
    pub fn flush(&self) -> Result<()> {
        self.win.flush(self.target)
    }

    /// Unlocks, reporting errors (a drop logs them).
    ///
    /// # Errors
    /// As for [`Window::end_lock`].
    pub fn unlock(mut self) -> Result<()> {
        self.open = false;
        self.win.end_lock(self.target)
    }
}

impl<T: Element> Deref for LockEpoch<'_, T> {
    type Target = Window<T>;
    fn deref(&self) -> &Window<T> {
        self.win
    }
}

impl<T: Element> Drop for LockEpoch<'_, T> {
    fn drop(&mut self) {
        if self.open {
            if let Err(e) = self.win.end_lock(self.target) {
                tracing::warn!(target = self.target, error = %e, "a window's unlock failed");
            }
        }
    }
}

/// A shared lock of every member ([`Window::lock_all`]): derefs to the
/// window; dropping it unlocks all.
#[derive(Debug)]
pub struct Epoch<'w, T: Element> {
    win: &'w Window<T>,
    open: bool,
}

impl<T: Element> Epoch<'_, T> {
    /// Unlocks every member, reporting errors (a drop logs them).
    ///
    /// # Errors
    /// As for [`Window::end_lock_all`].
    pub fn unlock_all(mut self) -> Result<()> {
        self.open = false;
        self.win.end_lock_all()
    }
}

impl<T: Element> Deref for Epoch<'_, T> {
    type Target = Window<T>;
    fn deref(&self) -> &Window<T> {
        self.win
    }
}

impl<T: Element> Drop for Epoch<'_, T> {
    fn drop(&mut self) {
        if self.open {
            if let Err(e) = self.win.end_lock_all() {
                tracing::warn!(error = %e, "a window's unlock_all failed");
            }
        }
    }
}
