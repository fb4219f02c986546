//! The target side of one-sided communication in the engine: every window
//! this rank serves keeps a receive for requests posted on its context,
//! and each progress applies what arrived ([`crate::rma`] has the
//! protocol). So a target applies puts, accumulates and lock requests
//! whenever its engine progresses, for any caller: a thread waiting on
//! anything, the progress thread, the window's own calls.

use rustc_hash::FxHashMap;

use super::complete::Standing;
use super::request::Kind;
use super::Engine;
use crate::buffer::Buf;
use crate::device::Device;
use crate::envelope::{ContextId, Rank, Tag, ANY_SOURCE};
use crate::error::{Error, Result, UsageError};
use crate::handle::Request;
use crate::rma::{Refused, Served, Target, REQUEST_TAG};

/// A window this rank serves.
#[derive(Debug)]
pub(crate) struct ServedWindow {
    /// The window's bytes.
    memory: Buf,
    target: Target,
    /// The receive for the next request.
    standing: Request,
    /// Why the window stopped serving (a failed receive: a member died).
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
    pub fn win_serve(&mut self, context: ContextId, memory: Buf) -> Result<()> {
        if self.st.windows.contains_key(&context) {
            return Err(
                UsageError::WrongRequestKind("a window is served on this context already").into(),
            );
        }
        if !memory.is_contiguous() {
            return Err(UsageError::Unsupported("a window over scattered memory").into());
        }
        let standing = self.post_standing(context)?;
        self.st.windows.insert(
            context,
            ServedWindow {
                memory,
                target: Target::default(),
                standing,
                failed: None,
            },
        );
        Ok(())
    }

    /// Stops serving the window on `context` and hands its memory back.
    /// Requests that arrive later stay unexpected (a window is freed
    /// collectively, after every rank's last epoch).
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] if no window is served on `context`.
    pub fn win_retire(&mut self, context: ContextId) -> Result<Buf> {
        let mut w = self
            .st
            .windows
            .remove(&context)
            .ok_or(UsageError::StaleHandle)?;
        if !w.standing.is_null() {
            self.cancel(&w.standing)?;
            self.free(&mut w.standing)?;
        }
        Ok(w.memory)
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
    /// meanwhile).
    ///
    /// # Errors
    /// [`UsageError::StaleHandle`] if no window is served there.
    pub fn win_memory(&mut self, context: ContextId) -> Result<&mut [u8]> {
        let w = self
            .st
            .windows
            .get_mut(&context)
            .ok_or(UsageError::StaleHandle)?;
        Ok(w.memory.as_mut_slice())
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
        while w.failed.is_none() && self.st.standing(w.standing)? == Standing::Complete {
            let done = self
                .st
                .take(&mut w.standing)?
                .ok_or(Error::Internal("a window's receive"))?;
            if let Some(e) = done.status.error {
                // A member died (the receive takes any source): the window
                // stops serving; its calls report why.
                w.failed = Some(e);
                return Ok(());
            }
            let from = done.status.source;
            let msg = done
                .buf
                .ok_or(Error::Internal("a window request without data"))?;
            match w
                .target
                .serve(from, msg.as_slice(), w.memory.as_mut_slice())
            {
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
            w.standing = self.post_standing(context)?;
        }
        Ok(())
    }

    /// The receive for a window's next request (always a request: never
    /// completed inside the call, whatever the configuration).
    fn post_standing(&mut self, context: ContextId) -> Result<Request> {
        Ok(self
            .post_recv(Kind::ARecv, ANY_SOURCE, REQUEST_TAG, context, None, false)?
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
