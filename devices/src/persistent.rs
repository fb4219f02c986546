//! Persistent requests (`MPI_Send_init`, `MPI_Recv_init`, `MPI_Start`,
//! `MPI_Startall`).
//!
//! A persistent request owns its buffer for its whole life. It is created
//! inactive; [`Request::start`] activates it and completing it (`wait`,
//! `test`, `wait_all`, ...) makes it inactive again. While inactive its
//! buffer is reachable through [`Request::with_buf`],
//! [`Request::with_buf_mut`] and [`Request::replace_buf`]; while active the
//! engine has it and those return `RequestActive`.

use ferry_core::{Rank, SendMode, Tag};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::request::Request;
use crate::typed::{buf_into_vec, origin_of, vec_into_buf, view_mut, Element};

impl Comm {
    /// A persistent standard-mode send of `data` to `dest`.
    ///
    /// # Errors
    /// A bad rank or tag, a message over the size limit, or the world was
    /// finalized.
    pub fn send_init<T: Element>(&self, data: Vec<T>, dest: Rank, tag: Tag) -> Result<Request> {
        self.send_init_mode(data, dest, tag, SendMode::Standard)
    }

    /// A persistent send in any mode (`MPI_Ssend_init`, `MPI_Rsend_init`).
    ///
    /// # Errors
    /// As for [`Comm::send_init`].
    pub fn send_init_mode<T: Element>(
        &self,
        data: Vec<T>,
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<Request> {
        let c = &self.inner;
        let dest = c.peers.to_job(dest)?;
        let handle =
            c.shared
                .lock()?
                .engine()?
                .send_init(dest, tag, c.context, vec_into_buf(data), mode)?;
        Ok(Request::new(self, handle, origin_of::<T>()))
    }

    /// A persistent receive into `buf`.
    ///
    /// # Errors
    /// As for [`Comm::send_init`].
    pub fn recv_init<T: Element>(&self, buf: Vec<T>, source: Rank, tag: Tag) -> Result<Request> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        let handle =
            c.shared
                .lock()?
                .engine()?
                .recv_init(source, tag, c.context, vec_into_buf(buf))?;
        Ok(Request::new(self, handle, origin_of::<T>()))
    }
}

impl Request {
    /// Starts an inactive persistent request (`MPI_Start`).
    ///
    /// # Errors
    /// `WrongRequestKind` for a request that is not persistent (or is
    /// null), `RequestActive` if it is already active.
    pub fn start(&mut self) -> Result<()> {
        let Some(comm) = &self.comm else {
            return Err(ferry_core::UsageError::WrongRequestKind(
                "start needs a persistent request",
            )
            .into());
        };
        comm.shared.lock()?.engine()?.start(&self.handle)?;
        Ok(())
    }

    /// Runs `f` on the inactive persistent request's buffer, as `&[T]`.
    /// `f` runs under the world's lock: it must not call into ferry.
    ///
    /// # Errors
    /// `RequestActive`, `WrongRequestKind`, or a buffer that is not a whole
    /// number of aligned `T`s.
    pub fn with_buf<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        self.with_buf_inner(|bytes| Ok(f(view_mut::<T>(bytes)?)))
    }

    /// Runs `f` on the inactive persistent request's buffer, as
    /// `&mut [T]` (to fill a send buffer, or read a receive buffer, between
    /// starts). `f` runs under the world's lock: it must not call into ferry.
    ///
    /// # Errors
    /// As for [`Request::with_buf`].
    pub fn with_buf_mut<T: Element, R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        self.with_buf_inner(|bytes| Ok(f(view_mut::<T>(bytes)?)))
    }

    fn with_buf_inner<R>(&self, f: impl FnOnce(&mut [u8]) -> Result<R>) -> Result<R> {
        let comm =
            self.comm
                .as_ref()
                .ok_or(Error::Usage(ferry_core::UsageError::WrongRequestKind(
                    "not a persistent request",
                )))?;
        let mut g = comm.shared.lock()?;
        let buf = g.engine()?.persistent_buf_mut(&self.handle)?;
        f(buf.as_mut_slice())
    }

    /// Swaps the inactive persistent request's buffer for `buf` and returns
    /// the old one (without a copy if it was a `Vec<T>`).
    ///
    /// # Errors
    /// As for [`Request::with_buf`]; a send's new buffer must not exceed the
    /// message size limit.
    pub fn replace_buf<T: Element>(&mut self, buf: Vec<T>) -> Result<Vec<T>> {
        let comm =
            self.comm
                .as_ref()
                .ok_or(Error::Usage(ferry_core::UsageError::WrongRequestKind(
                    "not a persistent request",
                )))?;
        let new = vec_into_buf(buf);
        let old = {
            let mut g = comm.shared.lock()?;
            let e = g.engine()?;
            let max = e.config().max_message;
            if new.len() > max {
                return Err(ferry_core::UsageError::MessageTooLarge {
                    len: new.len(),
                    max,
                }
                .into());
            }
            std::mem::replace(e.persistent_buf_mut(&self.handle)?, new)
        };
        let origin = std::mem::replace(&mut self.origin, origin_of::<T>());
        buf_into_vec(old, origin)
    }
}

/// Starts several persistent requests (`MPI_Startall`); all are checked
/// before any starts.
///
/// # Errors
/// As for [`Request::start`]; [`ApiError::MixedWorlds`](crate::ApiError::MixedWorlds).
pub fn start_all(requests: &mut [Request]) -> Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    let Some(shared) = crate::completion::common_world(requests)? else {
        return Err(
            ferry_core::UsageError::WrongRequestKind("start needs a persistent request").into(),
        );
    };
    let handles: Vec<ferry_core::Request> = requests.iter().map(|r| r.handle).collect();
    shared.lock()?.engine()?.startall(&handles)?;
    Ok(())
}
