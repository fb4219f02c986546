//! The completion queue, its channel, and the arm/sleep/disarm protocol.
//!
//! # Waiting without losing a wakeup
//! - [`Completions::arm`]: drain stale channel events, `ibv_req_notify_cq`,
//!   *then* poll once. A completion that arrived before the request is
//!   found by that poll (kept in a stash for the next `progress`, and
//!   `arm` reports `Pending`); one that arrives after it raises an event on
//!   the channel, whose fd ([`Completions::fd`], non-blocking) the engine's
//!   owner sleeps on. There is no window in between.
//! - [`Completions::disarm`]: takes every event from the channel without
//!   blocking and acks them (in batches; the CQ acks the rest before it is
//!   destroyed), so the fd is not readable for events already handled.

use crate::ffi::{sys, wc_array, wc_imm, Channel, Context, Cq, FfiError};

/// What `progress` needs of one work completion (copied out of `ibv_wc`,
/// which is not `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completion {
    pub(crate) wr_id: u64,
    pub(crate) status: u32,
    pub(crate) opcode: u32,
    pub(crate) byte_len: u32,
    pub(crate) imm: u32,
    pub(crate) qp_num: u32,
    /// The sending QP (UD receives only).
    pub(crate) src_qp: u32,
    pub(crate) with_imm: bool,
}

/// Completions polled per call.
pub(crate) const BATCH: usize = 32;

/// The CQ and its channel.
pub(crate) struct Completions {
    // Field order is drop order: the CQ before its channel.
    cq: Cq,
    channel: Channel,
    /// What `progress` polls into, reused (taken while it is handled).
    batch: Vec<Completion>,
    wc: Vec<sys::ibv_wc>,
    /// Completions polled by `arm`, delivered by the next `poll`.
    stash: Vec<Completion>,
    armed: bool,
}

impl std::fmt::Debug for Completions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completions")
            .field("cq", &self.cq)
            .field("fd", &self.channel.fd())
            .field("stashed", &self.stash.len())
            .field("armed", &self.armed)
            .finish_non_exhaustive()
    }
}

impl Completions {
    pub(crate) fn new(ctx: &Context, entries: i32) -> Result<Completions, FfiError> {
        let channel = Channel::new(ctx)?;
        let cq = Cq::new(ctx, entries, &channel)?;
        Ok(Completions {
            cq,
            channel,
            wc: wc_array(BATCH),
            stash: Vec::with_capacity(BATCH),
            armed: false,
            batch: Vec::with_capacity(BATCH),
        })
    }

    /// The CQ (for creating QPs on it).
    pub(crate) fn cq(&self) -> &Cq {
        &self.cq
    }

    /// Grows the CQ to hold at least `needed` entries (doubling, up to
    /// `max`): connections are added lazily, each with its send queue and
    /// its chunk of the SRQ, so the CQ is resized with them rather than
    /// sized for every peer of the job (`qp.rs`).
    ///
    /// # Errors
    /// `needed > max`, or `ibv_resize_cq` failed.
    pub(crate) fn ensure(&mut self, needed: u32, max: u32) -> Result<(), FfiError> {
        let have = self.cq.entries();
        if needed <= have {
            return Ok(());
        }
        if needed > max {
            return Err(FfiError::Os {
                what: "verbs: more connections than the largest CQ holds",
                code: libc::ENOSPC,
            });
        }
        let want = needed.max(have.saturating_mul(2)).min(max);
        self.cq.resize(want as i32)
    }

    /// CQ entries now.
    pub(crate) fn entries(&self) -> u32 {
        self.cq.entries()
    }

    /// The completion channel's fd, borrowed.
    pub(crate) fn channel_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.channel.as_fd()
    }

    /// Polls up to [`BATCH`] completions into `out` (cleared first).
    #[inline]
    pub(crate) fn poll(&mut self, out: &mut Vec<Completion>) -> Result<(), FfiError> {
        out.clear();
        if !self.stash.is_empty() {
            out.append(&mut self.stash);
            return Ok(());
        }
        let n = self.cq.poll(&mut self.wc)?;
        out.extend(self.wc[..n].iter().map(|wc| Completion {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            byte_len: wc.byte_len,
            imm: wc_imm(wc),
            qp_num: wc.qp_num,
            src_qp: wc.src_qp,
            with_imm: wc.wc_flags & sys::ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0,
        }));
        Ok(())
    }

    /// Polls (as [`Completions::poll`]) into the reused batch, which it
    /// returns: hand it back with [`Completions::give_back`].
    #[inline]
    pub(crate) fn poll_batch(&mut self) -> (Vec<Completion>, Result<(), FfiError>) {
        let mut batch = std::mem::take(&mut self.batch);
        let r = self.poll(&mut batch);
        (batch, r)
    }

    /// The batch [`Completions::poll_batch`] returned.
    #[inline]
    pub(crate) fn give_back(&mut self, batch: Vec<Completion>) {
        self.batch = batch;
    }

    /// Requests an event, then re-polls: `Ok(true)` = something is pending
    /// (progress instead of sleeping); see the module docs.
    pub(crate) fn arm(&mut self) -> Result<bool, FfiError> {
        if !self.stash.is_empty() {
            return Ok(true);
        }
        self.drain_events()?;
        self.cq.req_notify()?;
        self.armed = true;
        let mut found = std::mem::take(&mut self.stash);
        self.poll(&mut found)?;
        self.stash = found;
        Ok(!self.stash.is_empty())
    }

    /// Ends the armed state: drains and acks channel events.
    pub(crate) fn disarm(&mut self) {
        if std::mem::take(&mut self.armed) {
            if let Err(e) = self.drain_events() {
                tracing::warn!(error = %e, "draining the verbs completion channel failed");
            }
        }
    }

    fn drain_events(&mut self) -> Result<(), FfiError> {
        while self.channel.try_get_event()? {
            self.cq.event_taken();
        }
        Ok(())
    }
}
