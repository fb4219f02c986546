//! The raw layer: operations on borrowed memory, and all of ferry's
//! `unsafe` code.
//!
//! The engine only ever holds owned [`Buf`]s. To let it work on memory the
//! caller merely borrows, this module lends it by address
//! ([`Buf::lent`], read through the private `READ_LOAN` and `WRITE_LOAN`
//! lenders: no allocation per operation). Three things use it:
//! - the `unsafe` raw API ([`Comm::isend_raw`], [`Comm::irecv_raw`], and
//!   their handle-only forms for a library with its own request table,
//!   [`Comm::isend_raw_request`] and [`Comm::irecv_raw_request`], in
//!   `handles.rs`): the caller promises the memory outlives the operation
//!   (zero-overhead callers, the MPI C ABI);
//! - the safe blocking operations on slices ([`Comm::send`], [`Comm::recv`],
//!   [`Message::recv`](crate::Message::recv), ...), which complete their
//!   request before they return;
//! - the safe scoped API ([`Comm::scope`], in `scope.rs`), which completes
//!   every request started in the scope before the scope returns;
//! - collectives on bytes (`coll.rs`): [`Comm::collective`] on borrowed
//!   slices, which it completes before it returns, and [`lent`] and
//!   [`lent_mut`], `unsafe`, whose callers promise the memory outlives the
//!   nonblocking collective they give it to.
//!
//! # Why the safe forms are sound
//! A borrowed buffer is only unsafe to hand out if the engine could still
//! use it after the borrow ends. The blocking forms and the scope never let
//! a request on borrowed memory outlive the borrow: they wait for it (the
//! scope even when its closure panics, and a leaked `ScopedRequest` is still
//! tracked by its scope). If waiting fails with a fatal device error, the
//! engine is torn down (`Shared::poison`): every buffer it holds is dropped
//! and no device will touch them again, and later calls report the error.
//! A send's borrowed buffer is never handed out writable (see
//! `READ_LOAN`), so the caller may keep reading it.
//!
//! One limit, as for any MPI: a remote process that writes into this
//! process's memory by itself (RDMA put; the shm device's CMA path only
//! *reads* peers' memory) cannot be stopped by local teardown.

pub(crate) mod cell;
pub(crate) mod coll;
pub(crate) mod fd;
mod handles;
mod scope;

pub use handles::RawRequest;
pub use scope::{Scope, ScopedRequest};

use std::ptr::NonNull;

use ferry_core::{Buf, Direct, Lender, LentView, Rank, SendMode, Started, Status, Tag};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::p2p::Message;
use crate::request::{Completion, Request};
use crate::shared::Shared;
use crate::typed::{as_bytes, Element};
use crate::waiter::block_on;

/// Reads memory lent for reading (a send buffer): the caller may read it
/// meanwhile, so no `&mut` to it is ever made. Private: only [`lend`] makes
/// `Buf`s with it, which is what makes its slices sound.
static READ_LOAN: Lender = Lender {
    bytes: loan_bytes,
    bytes_mut: |_| {
        // A send buffer: the engine and devices only read it. Handing out an
        // empty slice (rather than aliasing memory the caller may be
        // reading) keeps this sound even if one ever tried to write.
        &mut []
    },
};

/// Reads and writes memory lent for a receive; only [`lend_mut`] makes
/// `Buf`s with it.
static WRITE_LOAN: Lender = Lender {
    bytes: loan_bytes,
    bytes_mut: loan_bytes_mut,
};

/// The lent memory at `view`, as a pointer: the address is a pointer's,
/// cast in [`lend`] or [`lend_mut`] (which exposes its provenance); the
/// dangling pointer stands for no bytes.
fn loan_ptr(view: &LentView<'_>) -> *mut u8 {
    if view.is_empty() {
        return NonNull::dangling().as_ptr();
    }
    view.addr() as *mut u8
}

fn loan_bytes(view: LentView<'_>) -> &[u8] {
    // SAFETY: `lend` and `lend_mut` are the only makers of buffers read
    // through `READ_LOAN` and `WRITE_LOAN`; their callers promised `len`
    // readable bytes at the address, written by nobody else, while the
    // `Buf` lives, and the view borrows that `Buf`.
    unsafe { std::slice::from_raw_parts(loan_ptr(&view), view.len()) }
}

fn loan_bytes_mut(view: LentView<'_>) -> &mut [u8] {
    // SAFETY: `lend_mut` is the only maker of buffers written through
    // `WRITE_LOAN`; its caller gave up every other access to the memory
    // while the `Buf` lives, and `Buf::as_mut_slice` makes the view from a
    // `&mut Buf`, so this is the only live slice of it.
    unsafe { std::slice::from_raw_parts_mut(loan_ptr(&view), view.len()) }
}

fn non_null(ptr: *mut u8, len: usize) -> NonNull<u8> {
    match NonNull::new(ptr) {
        Some(p) if len > 0 => p,
        _ => NonNull::dangling(),
    }
}

/// A `Buf` that reads `len` bytes at `ptr` (no allocation).
///
/// # Safety
/// `ptr` must be valid for reads of `len` bytes, and must not be written by
/// anyone, until the returned `Buf` (and anything the engine made of it) is
/// dropped. A null `ptr` is allowed only with `len == 0`.
unsafe fn lend(ptr: *const u8, len: usize) -> Buf {
    Buf::lent(ptr as usize, len, &READ_LOAN)
}

/// A `Buf` that reads and writes `len` bytes at `ptr` (no allocation).
///
/// # Safety
/// `ptr` must be valid for reads and writes of `len` bytes, and must not be
/// accessed by anything else, until the returned `Buf` is dropped. A null
/// `ptr` is allowed only with `len == 0`.
unsafe fn lend_mut(ptr: *mut u8, len: usize) -> Buf {
    Buf::lent(ptr as usize, len, &WRITE_LOAN)
}

/// A value only ever reached through `&mut self` or `self` (std's unstable
/// `Exclusive`, the `sync_wrapper` crate): `Sync` for any `Send` value,
/// because a shared reference to it gives no access to the value.
pub(crate) struct Exclusive<T>(T);

// SAFETY: `&Exclusive<T>` exposes nothing of the `T` (only `get_mut` and
// `into_inner` reach it, through `&mut self` and `self`), so sharing
// references between threads shares no `T`; moving one needs `T: Send`.
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    pub(crate) const fn new(value: T) -> Self {
        Exclusive(value)
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> std::fmt::Debug for Exclusive<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exclusive { .. }")
    }
}

/// The engine error to tear the engine down with, if `e` is fatal: a start
/// or wait on borrowed memory that failed for any reason other than a
/// usage error (checked before the engine keeps anything) may have left the
/// buffer inside the engine.
fn fatal(e: &Error) -> Option<ferry_core::Error> {
    match e {
        Error::Usage(_) | Error::Api(_) | Error::Config(_) => None,
        Error::Device(d) => Some((*d).into()),
        Error::Peer(p) => Some((*p).into()),
        Error::Internal(w) => Some(ferry_core::Error::Internal(w)),
        _ => Some(ferry_core::Error::Internal(
            "setup error during an operation",
        )),
    }
}

/// Checks the start of an operation on borrowed memory.
fn started(shared: &Shared, r: Result<Request>) -> Result<Request> {
    if let Err(e) = &r {
        if let Some(core) = fatal(e) {
            shared.poison(core);
        }
    }
    r
}

/// Completes a request on borrowed memory before the borrow ends: waits;
/// if waiting fails, polls; if the engine itself fails, tears it down.
/// Either way nothing references the memory when this returns.
fn finish(shared: &Shared, mut req: Request) -> Result<Completion> {
    let err = match req.wait() {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    if req.is_null() || fatal(&err).is_none() {
        return Err(err);
    }
    tracing::warn!(%err, "waiting failed; polling instead");
    loop {
        match req.test() {
            Ok(Some(c)) => return Ok(c),
            Ok(None) => std::thread::yield_now(),
            Err(e) => {
                if let Some(core) = fatal(&e) {
                    shared.poison(core);
                }
                return Err(e);
            }
        }
    }
}

impl Comm {
    /// Starts a send of `len` bytes at `ptr` without copying or owning them.
    ///
    /// # Safety
    /// The memory must be valid for reads, and must not be written, until
    /// the operation has completed: until `wait`/`test` (or a completion
    /// call) returned it. Dropping or leaking the request while it is
    /// pending does not end this obligation: the operation goes on in the
    /// background, so only do that with memory that lives forever. A null
    /// `ptr` is allowed with `len == 0`.
    ///
    /// # Errors
    /// As for [`Comm::isend`].
    pub unsafe fn isend_raw(
        &self,
        ptr: *const u8,
        len: usize,
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<Request> {
        // SAFETY: forwarded to our caller (see # Safety).
        let begun = unsafe { self.isend_ptr(ptr, len, dest, tag, mode)? };
        Ok(Request::started(self, begun, None))
    }

    /// Starts a send of `len` bytes at `ptr`, lending them only if the send
    /// does not complete inside this call.
    ///
    /// # Safety
    /// As for [`Comm::isend_raw`].
    unsafe fn isend_ptr(
        &self,
        ptr: *const u8,
        len: usize,
        dest: Rank,
        tag: Tag,
        mode: SendMode,
    ) -> Result<Started> {
        // SAFETY: forwarded to our caller (see # Safety); the slice is read
        // in this call only.
        let bytes =
            unsafe { std::slice::from_raw_parts(non_null(ptr.cast_mut(), len).as_ptr(), len) };
        self.isend_lent(bytes, dest, tag, mode, || {
            // SAFETY: forwarded to our caller (see # Safety).
            unsafe { lend(ptr, len) }
        })
    }

    /// Starts a send of `bytes`, lending them (`lend`) only if the send
    /// does not complete inside this call.
    fn isend_lent(
        &self,
        bytes: &[u8],
        dest: Rank,
        tag: Tag,
        mode: SendMode,
        lend: impl FnOnce() -> Buf,
    ) -> Result<Started> {
        let c = &self.inner;
        let dest = c.peers.to_job(dest)?;
        Ok(c.shared
            .lock()?
            .engine()?
            .isend_lent(dest, tag, c.context, bytes, mode, lend)?)
    }

    /// Starts a receive into `len` bytes at `ptr`.
    ///
    /// # Safety
    /// The memory must be valid for reads and writes, and must not be
    /// accessed by anything else, until the operation has completed (as for
    /// [`Comm::isend_raw`]). A null `ptr` is allowed with `len == 0`.
    ///
    /// # Errors
    /// As for [`Comm::irecv`].
    pub unsafe fn irecv_raw(
        &self,
        ptr: *mut u8,
        len: usize,
        source: Rank,
        tag: Tag,
    ) -> Result<Request> {
        // SAFETY: forwarded to our caller (see # Safety).
        let buf = unsafe { lend_mut(ptr, len) };
        self.irecv_buf(buf, None, source, tag)
    }

    fn send_slice(&self, bytes: &[u8], dest: Rank, tag: Tag, mode: SendMode) -> Result<()> {
        let shared = self.shared();
        // SAFETY: `bytes` stays borrowed until this function returns, and
        // `started`/`finish` make sure no request holds the loan by then.
        let lend_bytes = || {
            // SAFETY: `bytes` stays borrowed until this function returns, and
            // `started`/`finish` make sure no request holds the loan by then.
            unsafe { lend(bytes.as_ptr(), bytes.len()) }
        };
        let begun = match self.isend_lent(bytes, dest, tag, mode, lend_bytes) {
            // Sent inside the call, the usual case: nothing was lent, and no
            // request is made.
            Ok(b) if b.request.is_empty() => return Ok(()),
            r => r.map(|b| Request::started(self, b, None)),
        };
        let req = started(shared, begun)?;
        finish(shared, req)?.into_status().ok()?;
        Ok(())
    }

    /// Blocking standard send of `data` (`MPI_Send`): returns once `data`
    /// may be reused. No copy beyond what the protocol needs.
    ///
    /// # Errors
    /// As for [`Comm::isend`]; the operation's own error (a dead peer).
    pub fn send<T: Element>(&self, data: &[T], dest: Rank, tag: Tag) -> Result<()> {
        self.send_slice(as_bytes(data), dest, tag, SendMode::Standard)
    }

    /// Blocking synchronous send (`MPI_Ssend`): returns once a receive has
    /// matched it.
    ///
    /// # Errors
    /// As for [`Comm::send`].
    pub fn ssend<T: Element>(&self, data: &[T], dest: Rank, tag: Tag) -> Result<()> {
        self.send_slice(as_bytes(data), dest, tag, SendMode::Synchronous)
    }

    /// Blocking ready-mode send (`MPI_Rsend`).
    ///
    /// # Errors
    /// As for [`Comm::send`].
    pub fn rsend<T: Element>(&self, data: &[T], dest: Rank, tag: Tag) -> Result<()> {
        self.send_slice(as_bytes(data), dest, tag, SendMode::Ready)
    }

    /// Blocking receive into `buf` (`MPI_Recv`). The status's `bytes` (or
    /// [`Status::count`]) says how much arrived.
    ///
    /// # Errors
    /// As for [`Comm::irecv`]; `Truncated` if the message was longer than
    /// `buf` (which then holds its first part).
    pub fn recv<T: Element>(&self, buf: &mut [T], source: Rank, tag: Tag) -> Result<Status> {
        let bytes = crate::typed::as_bytes_mut(buf);
        // SAFETY: `bytes` is mutably borrowed for this call, which returns
        // only once the receive is complete.
        let status = unsafe { self.recv_raw(bytes.as_mut_ptr(), bytes.len(), source, tag)? };
        status.ok()?;
        Ok(status)
    }

    /// Blocking receive into `len` bytes at `ptr`. The operation's own
    /// failure (truncation, a dead peer) is in the returned status's
    /// `error`, beside the rest of the status, as `MPI_Recv` reports it;
    /// `Err` is for an argument error or a fatal one.
    ///
    /// # Safety
    /// The memory must be valid for writes of `len` bytes, and not
    /// accessed by anything else, during the call. A null `ptr` is allowed
    /// with `len == 0`.
    ///
    /// # Errors
    /// As for [`Comm::irecv`].
    pub unsafe fn recv_raw(
        &self,
        ptr: *mut u8,
        len: usize,
        source: Rank,
        tag: Tag,
    ) -> Result<Status> {
        let shared = self.shared();
        let dst: &mut [u8] = match NonNull::new(ptr) {
            // SAFETY: our caller gives us `len` writable bytes at `ptr`, used
            // by nothing else, for the whole call; the slice lives only in it.
            Some(p) => unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) },
            None => &mut [],
        };
        if let Some(status) = self.recv_direct(dst, source, tag)? {
            return Ok(status);
        }
        // SAFETY: forwarded to our caller; `started`/`finish` make sure no
        // request holds the loan when this returns.
        let loan = unsafe { lend_mut(ptr, len) };
        let req = started(shared, self.irecv_buf(loan, None, source, tag))?;
        Ok(finish(shared, req)?.into_status())
    }

    /// The blocking receive without a request (`Engine::recv_direct`):
    /// `None` if it must give way to an ordinary receive.
    fn recv_direct(&self, dst: &mut [u8], source: Rank, tag: Tag) -> Result<Option<Status>> {
        let c = &self.inner;
        let source = c.peers.to_job(source)?;
        // Checked on the first attempt, for all of them.
        let mut want = None;
        let status = block_on(&c.shared, |e| {
            let w = match want {
                Some(w) => w,
                None => match e.direct_recv(source, tag, c.context)? {
                    Some(w) => *want.insert(w),
                    None => return Ok(Some(None)),
                },
            };
            Ok(match e.recv_direct(&w, dst)? {
                Direct::Done(arrival) => Some(Some(arrival)),
                Direct::GiveWay => Some(None),
                Direct::Pending => None,
            })
        })?;
        Ok(status.map(|a| c.status(a.into())))
    }
}

impl Message {
    /// Receives the message into `buf` (`MPI_Mrecv`).
    ///
    /// # Errors
    /// As for [`Comm::recv`].
    pub fn recv<T: Element>(mut self, buf: &mut [T]) -> Result<Status> {
        let comm = Comm {
            inner: std::sync::Arc::clone(&self.comm),
        };
        let shared = comm.shared();
        let mut m = self.take()?;
        let bytes = crate::typed::as_bytes_mut(buf);
        // SAFETY: as in `Comm::recv`.
        let loan = unsafe { lend_mut(bytes.as_mut_ptr(), bytes.len()) };
        let r = match shared.lock()?.engine() {
            Ok(e) => e
                .imrecv(&mut m, loan)
                .map(|s| Request::started(&comm, s, None))
                .map_err(Error::from),
            Err(e) => Err(e),
        };
        let status = finish(shared, started(shared, r)?)?.status;
        status.ok()?;
        Ok(status)
    }
}

impl Comm {
    /// Runs a collective on borrowed memory to completion (the blocking
    /// collectives). The engine gives every lent buffer back when the
    /// collective completes; if a failed collective had to leave a send
    /// holding one (a peer that never took it), the engine is torn down, so
    /// nothing can read or write the memory after this returns.
    pub(crate) fn coll_borrowed(
        &self,
        coll: ferry_core::coll::Collective,
        input: Option<&[u8]>,
        output: Option<&mut [u8]>,
    ) -> Result<()> {
        let mut output = output;
        if self.node_fast(&coll, input, &mut output)? {
            return Ok(());
        }
        let shared = self.shared();
        // SAFETY: `input` stays borrowed until this function returns, and the
        // checks below make sure no request holds the loan by then.
        let input = input.map(|b| unsafe { lend(b.as_ptr(), b.len()) });
        // SAFETY: as for `input`, with `output` mutably borrowed.
        let output = output.map(|b| unsafe { lend_mut(b.as_mut_ptr(), b.len()) });
        let (lent_in, lent_out) = (input.is_some(), output.is_some());
        let req = started(shared, self.coll_start(coll, input, output, None, false))?;
        let empty = req.is_empty();
        let done = finish(shared, req)?;
        if !empty && (done.has_buf() != lent_out || done.has_input() != lent_in) {
            // Only a failed collective leaves a send behind (to a peer that
            // gave up too): tear the engine down rather than let it touch
            // the caller's memory later, and report why it failed.
            let e = done.status.error.unwrap_or(ferry_core::Error::Internal(
                "a collective kept borrowed memory after completing",
            ));
            tracing::error!(error = %e, "a failed collective left borrowed memory with a pending send: engine torn down");
            shared.poison(e);
            return Err(e.into());
        }
        done.status.ok()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ApiError, Fault};

    #[test]
    fn a_send_loan_is_never_writable() {
        let data = [1u8, 2, 3];
        // SAFETY: `data` outlives `buf`, and nothing writes it.
        let mut buf = unsafe { lend(data.as_ptr(), data.len()) };
        assert_eq!(&buf[..], &[1, 2, 3]);
        assert!(buf.is_lent());
        assert!(buf.as_mut_slice().is_empty());
        buf.truncate(2);
        assert_eq!(buf.as_slice(), &[1, 2]);
        assert_eq!(buf.id(), data.as_ptr() as usize);
        drop(buf);
        assert_eq!(data, [1, 2, 3]);
    }

    #[test]
    fn empty_and_null_loans() {
        // SAFETY: a null pointer with length 0 is allowed.
        let buf = unsafe { lend(std::ptr::null(), 0) };
        assert!(buf.is_empty());
        let mut v = [0u32; 4];
        let bytes = crate::typed::as_bytes_mut(&mut v);
        // SAFETY: `v` outlives `buf`, and is not touched meanwhile.
        let mut buf = unsafe { lend_mut(bytes.as_mut_ptr(), bytes.len()) };
        buf[0] = 7;
        drop(buf);
        assert_eq!(v[0], u32::from_ne_bytes([7, 0, 0, 0]));
    }

    #[test]
    fn fatal_is_only_for_non_usage_errors() {
        assert!(fatal(&Error::Api(ApiError::NoBuffer)).is_none());
        let d = Error::Device(ferry_core::DeviceError::Unsupported("x"));
        assert_eq!(d.fault(), Fault::Device);
        assert!(fatal(&d).is_some());
    }
}
