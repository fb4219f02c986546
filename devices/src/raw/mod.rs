//! The raw layer: operations on borrowed memory, and all of ferry's
//! `unsafe` code.
//!
//! The engine only ever holds owned [`Buf`]s. To let it work on memory the
//! caller merely borrows, this module wraps a raw pointer in a
//! [`ByteStorage`] (`RawStorage`). Three things use it:
//! - the `unsafe` raw API ([`Comm::isend_raw`], [`Comm::irecv_raw`]): the
//!   caller promises the memory outlives the operation (zero-overhead
//!   callers, a future C ABI);
//! - the safe blocking operations on slices ([`Comm::send`], [`Comm::recv`],
//!   [`Message::recv`](crate::Message::recv), ...), which complete their
//!   request before they return;
//! - the safe scoped API ([`Comm::scope`], in `scope.rs`), which completes
//!   every request started in the scope before the scope returns.
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
//! `RawStorage::bytes_mut`), so the caller may keep reading it.
//!
//! One limit, as for any MPI: a remote process that writes into this
//! process's memory by itself (RDMA put; the shm device's CMA path only
//! *reads* peers' memory) cannot be stopped by local teardown.

mod cell;
mod scope;

pub(crate) use cell::{CellGuard, EngineCell};
pub use scope::{Scope, ScopedRequest};

use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use ferry_core::{Buf, ByteStorage, Rank, SendMode, Status, Tag};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::p2p::Message;
use crate::request::{Completion, Request};
use crate::typed::{as_bytes, Element};
use crate::world::Shared;

/// Memory the creator lends to the engine; see the module docs.
struct RawStorage {
    ptr: NonNull<u8>,
    len: usize,
    /// False for send buffers: the caller may read them meanwhile, so no
    /// `&mut` to them is ever made.
    writable: bool,
}

// SAFETY: a RawStorage is a loan of plain bytes with no thread affinity; its
// creator guarantees (see `lend` / `lend_mut`) that the memory stays valid,
// and is not written by anyone else, until the storage is dropped.
unsafe impl Send for RawStorage {}

impl ByteStorage for RawStorage {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for reads of `len` bytes and not written by
        // anyone else while this storage lives (the creator's promise); the
        // dangling pointer used for `len == 0` is valid for empty slices.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        if !self.writable {
            // A send buffer: the engine and devices only read it. Handing out
            // an empty slice (rather than aliasing memory the caller may be
            // reading) keeps this sound even if one ever tried to write.
            return &mut [];
        }
        // SAFETY: a writable loan comes from `lend_mut`, whose caller gave up
        // every other access to the memory while this storage lives, and
        // `&mut self` makes this the only live slice made from it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

fn non_null(ptr: *mut u8, len: usize) -> NonNull<u8> {
    match NonNull::new(ptr) {
        Some(p) if len > 0 => p,
        _ => NonNull::dangling(),
    }
}

/// A `Buf` that reads `len` bytes at `ptr`.
///
/// # Safety
/// `ptr` must be valid for reads of `len` bytes, and must not be written by
/// anyone, until the returned `Buf` (and anything the engine made of it) is
/// dropped. A null `ptr` is allowed only with `len == 0`.
unsafe fn lend(ptr: *const u8, len: usize) -> Buf {
    Buf::from_storage(loan_record(RawStorage {
        ptr: non_null(ptr.cast_mut(), len),
        len,
        writable: false,
    }))
}

/// Loan records kept per thread for reuse (see [`loan_record`]).
const LOAN_RECORDS_KEPT: usize = 64;

thread_local! {
    // The boxes are the point (a `Buf`'s storage is a `Box<dyn ...>`):
    // keeping them is what spares the allocation.
    #[allow(clippy::vec_box)]
    /// Boxes of finished loans, so that a steady raw send/receive loop
    /// allocates nothing: a loan must be a boxed `ByteStorage` (a `Buf`'s
    /// storage), and a fresh box per operation would be an allocation per
    /// message on the C ABI's path.
    static LOAN_RECORDS: std::cell::RefCell<Vec<Box<RawStorage>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// `storage`, boxed in a recycled record when one is free.
fn loan_record(storage: RawStorage) -> Box<RawStorage> {
    let spare = LOAN_RECORDS.with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()));
    match spare {
        Some(mut record) => {
            *record = storage;
            record
        }
        None => Box::new(storage),
    }
}

/// Takes back the record of a finished loan (any other buffer is just
/// dropped): the memory it pointed at is the caller's again, and the
/// record serves the next loan.
pub(crate) fn recycle(buf: Buf) {
    let Ok(storage) = buf.into_storage() else {
        return;
    };
    let Ok(record) = storage.into_any().downcast::<RawStorage>() else {
        return;
    };
    LOAN_RECORDS.with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            if p.len() < LOAN_RECORDS_KEPT {
                p.push(record);
            }
        }
    });
}

/// A `Buf` that reads and writes `len` bytes at `ptr`.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `len` bytes, and must not be
/// accessed by anything else, until the returned `Buf` is dropped. A null
/// `ptr` is allowed only with `len == 0`.
unsafe fn lend_mut(ptr: *mut u8, len: usize) -> Buf {
    Buf::from_storage(loan_record(RawStorage {
        ptr: non_null(ptr, len),
        len,
        writable: true,
    }))
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

/// Adds a device's wait fd to an epoll set.
///
/// The fd is only borrowed for the `epoll_ctl` call, made under the world's
/// lock while the engine (which owns the device, which owns the fd) exists.
pub(crate) fn epoll_add_device_fd(epoll: &OwnedFd, fd: i32, data: u64) -> rustix::io::Result<()> {
    if fd < 0 {
        return Err(rustix::io::Errno::BADF);
    }
    // SAFETY: the fd belongs to the live device (see above) and stays open
    // for the duration of this call; epoll keeps no borrow of it afterwards
    // (the kernel drops the registration when the file is closed).
    let device_fd = unsafe { BorrowedFd::borrow_raw(fd) };
    rustix::event::epoll::add(
        epoll,
        device_fd,
        rustix::event::epoll::EventData::new_u64(data),
        rustix::event::epoll::EventFlags::IN,
    )
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
        let buf = unsafe { lend(ptr, len) };
        self.isend_buf(buf, None, dest, tag, mode)
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
        let buf = unsafe { lend(bytes.as_ptr(), bytes.len()) };
        let req = started(shared, self.isend_buf(buf, None, dest, tag, mode))?;
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
        let shared = self.shared();
        let bytes = crate::typed::as_bytes_mut(buf);
        // SAFETY: `buf` stays mutably borrowed until this function returns,
        // and `started`/`finish` make sure no request holds the loan by then.
        let loan = unsafe { lend_mut(bytes.as_mut_ptr(), bytes.len()) };
        let req = started(shared, self.irecv_buf(loan, None, source, tag))?;
        let status = finish(shared, req)?.into_status();
        status.ok()?;
        Ok(status)
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
        let mut storage = buf.into_storage().unwrap();
        assert!(storage.bytes_mut().is_empty());
        buf = Buf::from_storage(storage);
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
