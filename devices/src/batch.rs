//! [`Comm::batch`]: doorbell batching from the API.
//!
//! Inside the closure the device may hold the sends it accepts and post
//! them together when the closure returns: on verbs, one `ibv_post_send`
//! with a chained work-request list instead of one call per message (one
//! doorbell, and under Soft-RoCE one system call, for up to 32 sends to a
//! peer). Devices that post nothing themselves (shared memory) ignore it.
//! `MPI_Startall` ([`start_all`](crate::start_all)) and the engine's queued
//! work batch on their own.
//!
//! Semantics do not change: a send completes as it would outside the batch
//! (an eager send still returns an EMPTY request), messages to one peer
//! keep their order, and any call that progresses the engine (a wait, a
//! test, a blocking call) first posts what is held, so waiting inside the
//! closure cannot deadlock. With several threads the batch is the world's:
//! another thread's sends may be held until the closure returns or until
//! any thread progresses.

use crate::comm::Comm;
use crate::error::Result;

impl Comm {
    /// Runs `f` with the device batching the sends it starts (see the
    /// module docs): for a window of small messages, where one doorbell per
    /// message bounds the rate.
    ///
    /// ```no_run
    /// # fn main() -> ferry::Result<()> {
    /// let world = ferry::init()?;
    /// let comm = world.world();
    /// let mut window = comm.batch(|| {
    ///     (0..64)
    ///         .map(|i| comm.isend(vec![i as u64], 1, 7))
    ///         .collect::<ferry::Result<Vec<_>>>()
    /// })??;
    /// ferry::wait_all(&mut window)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The world was finalized, or a fatal device error while posting what
    /// the batch held (a post refused for one peer fails that peer only,
    /// as a peer failure). `f`'s own result is returned inside.
    pub fn batch<R>(&self, f: impl FnOnce() -> R) -> Result<R> {
        self.inner.shared.lock()?.engine()?.batch_begin();
        // Closes the batch even if `f` unwinds, so the engine is never left
        // holding sends.
        let open = Open(self);
        let r = f();
        std::mem::forget(open);
        self.close_batch()?;
        Ok(r)
    }

    fn close_batch(&self) -> Result<()> {
        self.inner.shared.lock()?.engine()?.batch_end()?;
        Ok(())
    }
}

struct Open<'a>(&'a Comm);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        // Unwinding: the error, if any, reaches the next call as a peer
        // failure or a torn-down engine.
        let _ = self.0.close_batch();
    }
}
