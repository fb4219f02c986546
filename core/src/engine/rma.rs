//! The target side of one-sided communication in the engine: every window
//! this rank serves keeps a receive posted for each origin's next request
//! on its context, and each progress applies what arrived ([`crate::rma`]
//! has the protocol). So a target applies puts, accumulates and lock
//! requests whenever its engine progresses, for any caller: a thread
//! waiting on anything, the progress thread, the window's own calls.
//!
//! One receive per origin rather than one from any source: a dead origin
//! fails only its own (a receive from any source would fail for good on
//! the first death), and the target forgets it (its lock is released, so
//! the others are granted theirs) and serves the rest. The receives are
//! looked at only after an event, so an idle engine pays one comparison.

use rustc_hash::FxHashMap;

use super::complete::Standing;
use super::request::Kind;
use super::Engine;
use crate::buffer::Buf;
use crate::device::Device;
use crate::envelope::{ContextId, Rank, Tag};
use crate::error::{Error, Result, UsageError};
use crate::handle::Request;
use crate::rma::{Refused, Served, Target, WindowMemory, REQUEST_TAG};

/// A window's memory: one buffer (displacements count from its first
/// byte), or a dynamic window's attached pieces (displacements are their
/// addresses).
#[derive(Debug)]
enum Memory {
    One(Buf),
    Pieces(Vec<(u64, Buf)>),
}

impl WindowMemory for Memory {
    fn range(&mut self, start: u64, len: u64) -> Option<&mut [u8]> {
        match self {
            Memory::One(b) => b.as_mut_slice().range(start, len),
            Memory::Pieces(p) => p.iter_mut().find_map(|(at, b)| {
                let off = start.checked_sub(*at)?;
                b.as_mut_slice().range(off, len)
            }),
        }
    }

    fn split(&mut self, start: u64, len: u64) -> Option<Vec<(u64, u64)>> {
        let Memory::Pieces(p) = self else {
            return None;
        };
        let end = start.checked_add(len)?;
        let mut out = Vec::new();
        let mut at = start;
        while at < end {
            // The piece holding `at`; the next must start where it ends.
            let (base, piece) = p
                .iter()
                .find(|(b, piece)| *b <= at && at < b + piece.len() as u64)?;
            let stop = (base + piece.len() as u64).min(end);
            out.push((at, stop - at));
            at = stop;
        }
        Some(out)
    }
}

/// A window this rank serves.
#[derive(Debug)]
pub(crate) struct ServedWindow {
    /// The window's bytes.
    memory: Memory,
    target: Target,
    /// Each origin (a job rank) and the receive for its next request
    /// (`NULL` once the origin is gone).
    standing: Vec<(Rank, Request)>,
    /// The engine's event count when the receives were last looked at.
    seen: u64,
    /// Why the window stopped serving (a failure of this rank's own).
    failed: Option<Error>,
}

/// The windows served, by context.
pub(crate) type Windows = FxHashMap<ContextId, ServedWindow>;

impl<D: Device> Engine<D> {
    /// Serves the window on `context` as a target, over `memory` (a
    /// contiguous buffer: the window's bytes, displacement 0 first).
    ///
    /// # Errors
    /// A window already served on `context`; a segmented buffer; a failure
    /// to post its receive.
    pub fn win_serve(&mut self, context: ContextId, memory: Buf, origins: &[Rank]) -> Result<()> {
        if self.st.windows.contains_key(&context) {
            return Err(
                UsageError::WrongRequestKind("a window is served on this context already").into(),
            );
        }
        if !memory.is_contiguous() {
            return Err(UsageError::Unsupported("a window over scattered memory").into());
        }
        self.serve_memory(context, Memory::One(memory), origins)
    }

    /// Serves a dynamic window on `context`: no memory until
    /// [`Engine::win_attach`] attaches some; a request's displacement is
    /// an address in an attached piece.
    ///
    /// # Errors
    /// As for [`Engine::win_serve`].
    pub fn win_serve_dynamic(&mut self, context: ContextId, origins: &[Rank]) -> Result<()> {
        if self.st.windows.contains_key(&context) {
            return Err(
                UsageError::WrongRequestKind("a window is served on this context already").into(),
            );
        }
        self.serve_memory(context, Memory::Pieces(Vec::new()), origins)
    }

    /// Serves `memory` on `context` for `origins` (job ranks: the
    /// window's members).
    fn serve_memory(&mut self, context: ContextId, memory: Memory, origins: &[Rank]) -> Result<()> {
        let mut standing = Vec::with_capacity(origins.len());
        for &origin in origins {
            if !self.st.valid_peer(origin) {
                return Err(UsageError::InvalidRank {
                    rank: origin,
                    size: self.st.size,
                }
                .into());
            }
            let r = match self.post_standing(context, origin) {
                Ok(r) => r,
                // Dead already: nothing will come from it.
                Err(Error::Peer(_)) => Request::NULL,
                Err(e) => return Err(e),
            };
            standing.push((origin, r));
        }
        self.st.windows.insert(
            context,
            ServedWindow {
                memory,
                target: Target::default(),
                standing,
                seen: u64::MAX,
                failed: None,
            },
        );
        Ok(())
    }

    /// Attaches `memory`, whose first byte is at address `addr`, to the
    /// dynamic window on `context`.
    ///
    /// # Errors
    /// No dynamic window there; a segmented buffer; a piece that overlaps
    /// one attached already.
    pub fn win_attach(&mut self, context: ContextId, addr: u64, memory: Buf) -> Result<()> {
        let w = self
            .st
            .windows
            .get_mut(&context)
            .ok_or(UsageError::StaleHandle)?;
        let Memory::Pieces(pieces) = &mut w.memory else {
            return Err(
                UsageError::WrongRequestKind("attach on a window that is not dynamic").into(),
            );
        };
        if !memory.is_contiguous() {
            return Err(UsageError::Unsupported("a window over scattered memory").into());
        }
        let end = addr.saturating_add(memory.len() as u64);
        if pieces
            .iter()
            .any(|(at, b)| addr < at + b.len() as u64 && *at < end)
        {
            return Err(UsageError::RmaSync("memory attached twice").into());
        }
        pieces.push((addr, memory));
        Ok(())
    }

    /// Detaches the piece attached at address `addr` from the dynamic
    /// window on `context`, handing it back.
    ///
    /// # Errors
    /// No dynamic window there, or no piece at `addr`.
    pub fn win_detach(&mut self, context: ContextId, addr: u64) -> Result<Buf> {
        let w = self
            .st
            .windows
            .get_mut(&context)
            .ok_or(UsageError::StaleHandle)?;
        let Memory::Pieces(pieces) = &mut w.memory else {
            return Err(
                UsageError::WrongRequestKind("detach on a window that is not dynamic").into(),
            );
        };
        let i = pieces
            .iter()
            .position(|p| p.0 == addr)
            .ok_or(UsageError::RmaSync("detach of memory not attached"))?;
        Ok(pieces.swap_remove(i).1)
    }

    /// Stops serving the window on `context` and hands its memory back
    /// (a dynamic window's pieces still attached). Requests that arrive
    /// later stay unexpected (a window is freed collectively, after every
    /// rank's last epoch).
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] if no window is served on `context`.
    pub fn win_retire(&mut self, context: ContextId) -> Result<Vec<Buf>> {
        let mut w = self
            .st
            .windows
            .remove(&context)
            .ok_or(UsageError::StaleHandle)?;
        for (_, r) in &mut w.standing {
            if !r.is_null() {
                self.cancel(r)?;
                self.free(r)?;
            }
        }
        Ok(match w.memory {
            Memory::One(b) => vec![b],
            Memory::Pieces(p) => p.into_iter().map(|(_, b)| b).collect(),
        })
    }

    /// Data requests the window on `context` has applied so far (for
    /// fences), or why it stopped serving.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] if no window is served there; the
    /// failure that stopped it.
    pub fn win_applied(&self, context: ContextId) -> Result<u64> {
        let w = self
            .st
            .windows
            .get(&context)
            .ok_or(UsageError::StaleHandle)?;
        match w.failed {
            Some(e) => Err(e),
            None => Ok(w.target.applied()),
        }
    }

    /// The post notices (`complete: false`) or complete notices (`true`)
    /// the window on `context` has had from `rank` (for `MPI_Win_start`
    /// and `MPI_Win_wait`), or why it stopped serving.
    ///
    /// # Errors
    /// As for [`Engine::win_applied`].
    pub fn win_notices(&self, context: ContextId, rank: Rank, complete: bool) -> Result<u64> {
        let w = self
            .st
            .windows
            .get(&context)
            .ok_or(UsageError::StaleHandle)?;
        match w.failed {
            Some(e) => Err(e),
            None => Ok(w.target.notices(rank, complete)),
        }
    }

    /// The bytes of the window served on `context`, for the program's own
    /// loads and stores (under the engine's lock: no request applies
    /// meanwhile); empty for a dynamic window.
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] if no window is served there.
    pub fn win_memory(&mut self, context: ContextId) -> Result<&mut [u8]> {
        let w = self
            .st
            .windows
            .get_mut(&context)
            .ok_or(UsageError::StaleHandle)?;
        Ok(match &mut w.memory {
            Memory::One(b) => b.as_mut_slice(),
            Memory::Pieces(_) => &mut [],
        })
    }

    /// Applies every request that has arrived, on every window served.
    pub(super) fn advance_windows(&mut self) -> Result<()> {
        let mut windows = std::mem::take(&mut self.st.windows);
        let mut result = Ok(());
        for (&context, w) in windows.iter_mut() {
            if let Err(e) = self.advance_window(context, w) {
                result = Err(e);
                break;
            }
        }
        // A window served from inside (none can be) would be lost here.
        debug_assert!(self.st.windows.is_empty());
        self.st.windows = windows;
        result
    }

    fn advance_window(&mut self, context: ContextId, w: &mut ServedWindow) -> Result<()> {
        if w.failed.is_some() || w.seen == self.st.events {
            return Ok(());
        }
        // Events that serving makes (a reply, a matched receive) count
        // after this: the next call looks again.
        w.seen = self.st.events;
        for i in 0..w.standing.len() {
            let origin = w.standing[i].0;
            while !w.standing[i].1.is_null()
                && self.st.standing(w.standing[i].1)? == Standing::Complete
            {
                let done = self
                    .st
                    .take(&mut w.standing[i].1)?
                    .ok_or(Error::Internal("a window's receive"))?;
                if done.status.error.is_some() {
                    // The origin died: forget it, so that the lock it held
                    // or waited for goes to the others.
                    w.standing[i].1 = Request::NULL;
                    for (o, tag) in w.target.forget(origin) {
                        self.reply(o, tag, context, Vec::new())?;
                    }
                    break;
                }
                let msg = done
                    .buf
                    .ok_or(Error::Internal("a window request without data"))?;
                self.serve_one(context, w, origin, msg.as_slice())?;
                w.standing[i].1 = match self.post_standing(context, origin) {
                    Ok(r) => r,
                    Err(Error::Peer(_)) => Request::NULL,
                    Err(e) => return Err(e),
                };
            }
        }
        Ok(())
    }

    /// Applies one request and sends what it answers.
    fn serve_one(
        &mut self,
        context: ContextId,
        w: &mut ServedWindow,
        from: Rank,
        msg: &[u8],
    ) -> Result<()> {
        match w.target.serve(from, msg, &mut w.memory) {
            Ok(Served { reply, granted }) => {
                if let Some((tag, data)) = reply {
                    self.reply(from, tag, context, data)?;
                }
                for (origin, tag) in granted {
                    self.reply(origin, tag, context, Vec::new())?;
                }
            }
            Err(Refused { what, reply }) => {
                tracing::warn!(from, context, what, "refused a one-sided request");
                if let Some((tag, data)) = reply {
                    self.reply(from, tag, context, data)?;
                }
            }
        }
        Ok(())
    }

    /// The receive for `origin`'s next request on a window (always a
    /// request: never completed inside the call, whatever the
    /// configuration).
    fn post_standing(&mut self, context: ContextId, origin: Rank) -> Result<Request> {
        Ok(self
            .post_recv(Kind::ARecv, origin, REQUEST_TAG, context, None, false)?
            .request)
    }

    /// Sends a reply and lets it complete on its own. A dead origin needs
    /// none.
    fn reply(&mut self, to: Rank, tag: Tag, context: ContextId, data: Vec<u8>) -> Result<()> {
        match self.isend(to, tag, context, Buf::from_vec(data)) {
            Ok(started) => {
                let mut handle = started.request;
                if !handle.is_empty() {
                    self.free(&mut handle)?;
                }
                Ok(())
            }
            Err(Error::Peer(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
