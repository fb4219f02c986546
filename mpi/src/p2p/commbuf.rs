//! MPI 4.1's buffer calls beyond attach and detach: flushing the
//! process's buffer (`MPI_Buffer_flush`, `MPI_Buffer_iflush`) and buffers
//! attached to one communicator or session (`MPI_Comm_attach_buffer`,
//! `MPI_Comm_detach_buffer`, `MPI_Comm_flush_buffer`,
//! `MPI_Comm_iflush_buffer`, and the same four `MPI_Session_` calls). A
//! communicator's buffer serves the buffered sends on it before the
//! process's, a session's after it (`bsend.rs` places them); freeing the
//! communicator flushes and detaches its buffer.
//!
//! A flush waits until every message buffered so far is sent; the buffer
//! stays attached. The nonblocking forms return a request
//! (a [`Polled`] one, `State::Polled`) that the completion calls poll until the messages
//! buffered before the call are sent (later ones do not hold it back).

use std::ffi::c_int;

use ferry::Comm;

use crate::p2p::bsend::{mark, Attached, Owner, OWNED_BUFS};

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_COMM_SELF};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf};
use crate::request::object::{Polled, ReqObj, State};
use crate::request::post::Post;
use crate::state::{lock, rt};

/// A nonblocking flush: whose buffer, and the [`mark`] at the call.
#[derive(Debug)]
pub(crate) enum Flush {
    /// The process's (`MPI_Buffer_iflush`).
    Process(u64),
    /// A communicator's or a session's (`MPI_Comm_iflush_buffer`,
    /// `MPI_Session_iflush_buffer`).
    Owned(Owner, u64),
}

impl Polled for Flush {
    /// Complete once the messages buffered before the call are sent (or
    /// the buffer was detached, which waited for them).
    fn poll(&mut self) -> Res<Option<MpiStatus>> {
        let done = match *self {
            Flush::Process(mark) => rt()?
                .bsend()
                .with(|slot| slot.as_mut().is_none_or(|a| a.flushed(mark)))?,
            Flush::Owned(k, mark) => lock(&OWNED_BUFS)
                .iter_mut()
                .find(|(c, _)| *c == k)
                .is_none_or(|(_, a)| a.flushed(mark)),
        };
        Ok(done.then_some(MpiStatus::EMPTY))
    }
}

/// Stores a nonblocking flush's request and writes its handle.
fn flush_request(flush: Flush, comm: usize, mut request: Out<'_, usize>) -> Res {
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let obj = ReqObj {
        state: State::Polled(Box::new(flush)),
        comm,
        post: Post::None,
        persist: None,
    };
    let h = rt()?.add_request(obj)?;
    request.set(h)
}

/// Flushes and detaches the buffer of a communicator being freed (an
/// `on_comm_free` hook, registered with the first communicator buffer).
pub(crate) fn freed(c: &Comm) {
    detach_from(Owner::Comm(c.context()));
}

/// `MPI_Buffer_flush`: waits until the messages buffered in the
/// process's buffer are sent (nothing to do with none attached).
pub(crate) fn buffer_flush() -> Res {
    rt()?.bsend().with(|slot| {
        if let Some(a) = slot.as_mut() {
            a.flush();
        }
    })
}

/// `MPI_Buffer_iflush`: a request complete once the messages in the
/// process's buffer are sent.
pub(crate) fn buffer_iflush(request: Out<'_, usize>) -> Res {
    rt()?;
    let mark = mark();
    flush_request(Flush::Process(mark), MPI_COMM_SELF, request)
}

/// A size out-argument: an `int` (`INT_MAX` if larger) or an `MPI_Count`.
pub(crate) trait SizeArg: Copy {
    /// `len` as this type.
    fn of_len(len: usize) -> Self;
}

impl SizeArg for c_int {
    fn of_len(len: usize) -> c_int {
        c_int::try_from(len).unwrap_or(c_int::MAX)
    }
}

impl SizeArg for i64 {
    fn of_len(len: usize) -> i64 {
        i64::try_from(len).unwrap_or(i64::MAX)
    }
}

/// `MPI_Buffer_attach(_c)`: the process's buffer of `size` bytes;
/// `MPI_BUFFER_AUTOMATIC` lets each buffered message take memory of its
/// own.
pub(crate) fn buffer_attach(buffer: RecvBuf, size: impl Into<i64>) -> Res {
    crate::p2p::bsend::attach(buffer, size.into())
}

/// `MPI_Buffer_detach(_c)`: waits until the buffered messages are sent;
/// gives back the buffer's address (`MPI_BUFFER_AUTOMATIC` if that was
/// attached) and size. With no buffer attached: a null address, size 0.
pub(crate) fn buffer_detach<S: SizeArg>(
    mut buffer_addr: Out<'_, usize>,
    mut size: Out<'_, S>,
) -> Res {
    let (addr, len) = crate::p2p::bsend::detach(rt()?)?.unwrap_or((0, 0));
    buffer_addr.set(addr)?;
    size.set(S::of_len(len))
}

/// Attaches `owner`'s buffer of `size` bytes.
fn attach_to(owner: Owner, buffer: RecvBuf, size: i64) -> Res {
    let a = Attached::new(buffer, size)?;
    crate::p2p::bsend::detach_at_finalize();
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| crate::state::on_comm_free(freed));
    let mut bufs = lock(&OWNED_BUFS);
    if bufs.iter().any(|(k, _)| *k == owner) {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "a buffer is already attached here (detach it first)",
        ));
    }
    bufs.push((owner, a));
    Ok(())
}

/// Detaches `owner`'s buffer once its messages are sent: the address and
/// size, `(0, 0)` with none attached.
fn detach_from(owner: Owner) -> (usize, usize) {
    let taken = {
        let mut bufs = lock(&OWNED_BUFS);
        bufs.iter()
            .position(|(k, _)| *k == owner)
            .map(|i| bufs.swap_remove(i).1)
    };
    match taken {
        Some(mut a) => {
            a.flush();
            a.region()
        }
        None => (0, 0),
    }
}

/// Waits until the messages in `owner`'s buffer are sent. Other threads'
/// buffered sends on any communicator wait meanwhile.
fn flush_of(owner: Owner) {
    if let Some((_, a)) = lock(&OWNED_BUFS).iter_mut().find(|(k, _)| *k == owner) {
        a.flush();
    }
}

/// `MPI_Comm_attach_buffer(_c)`: a buffer (or `MPI_BUFFER_AUTOMATIC`)
/// for the buffered sends on `comm`.
pub(crate) fn comm_attach_buffer(comm: usize, buffer: RecvBuf, size: impl Into<i64>) -> Res {
    let key = rt()?.comm(comm)?.comm.context();
    attach_to(Owner::Comm(key), buffer, size.into())
}

/// `MPI_Comm_detach_buffer(_c)`: waits until its messages are sent; gives
/// back the address (`MPI_BUFFER_AUTOMATIC` if that was attached) and
/// size (`INT_MAX` if larger, for the `int` form). With none attached: a
/// null address, size 0.
pub(crate) fn comm_detach_buffer<S: SizeArg>(
    comm: usize,
    buffer_addr: Out<'_, usize>,
    size: Out<'_, S>,
) -> Res {
    let key = rt()?.comm(comm)?.comm.context();
    give_back(detach_from(Owner::Comm(key)), buffer_addr, size)
}

/// A detached buffer's address and size, written out.
fn give_back<S: SizeArg>(
    (addr, len): (usize, usize),
    mut buffer_addr: Out<'_, usize>,
    mut size: Out<'_, S>,
) -> Res {
    buffer_addr.set(addr)?;
    size.set(S::of_len(len))
}

/// `MPI_Comm_flush_buffer`: waits until the messages buffered in
/// `comm`'s buffer are sent (nothing to do with none attached).
pub(crate) fn comm_flush_buffer(comm: usize) -> Res {
    flush_of(Owner::Comm(rt()?.comm(comm)?.comm.context()));
    Ok(())
}

/// `MPI_Comm_iflush_buffer`: a request complete once the messages in
/// `comm`'s buffer are sent.
pub(crate) fn comm_iflush_buffer(comm: usize, request: Out<'_, usize>) -> Res {
    let key = rt()?.comm(comm)?.comm.context();
    flush_request(Flush::Owned(Owner::Comm(key), mark()), comm, request)
}

/// `MPI_Session_attach_buffer(_c)`: a buffer for the buffered sends on
/// communicators without one of their own, when no process buffer is
/// attached (see `bsend.rs`).
pub(crate) fn session_attach_buffer(session: usize, buffer: RecvBuf, size: impl Into<i64>) -> Res {
    crate::session::check(session)?;
    attach_to(Owner::Session(session), buffer, size.into())
}

/// `MPI_Session_detach_buffer(_c)`: as [`comm_detach_buffer`].
pub(crate) fn session_detach_buffer<S: SizeArg>(
    session: usize,
    buffer_addr: Out<'_, usize>,
    size: Out<'_, S>,
) -> Res {
    crate::session::check(session)?;
    give_back(detach_from(Owner::Session(session)), buffer_addr, size)
}

/// `MPI_Session_flush_buffer`.
pub(crate) fn session_flush_buffer(session: usize) -> Res {
    crate::session::check(session)?;
    flush_of(Owner::Session(session));
    Ok(())
}

/// `MPI_Session_iflush_buffer`.
pub(crate) fn session_iflush_buffer(session: usize, request: Out<'_, usize>) -> Res {
    crate::session::check(session)?;
    flush_request(
        Flush::Owned(Owner::Session(session), mark()),
        MPI_COMM_SELF,
        request,
    )
}
