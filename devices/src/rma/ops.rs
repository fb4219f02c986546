//! The operations: put, get, accumulate, get-accumulate, fetch-and-op and
//! compare-and-swap, each checked (epoch, range, op) before anything is
//! sent. Puts and accumulates copy the data into their request, so the
//! caller's slice is free when the call returns; gets and fetching
//! operations return a [`Request`] that owns their result.

use ferry_core::coll::{Datatype, ReduceOp};
use ferry_core::rma::{AccOp, Kind, Request as Wire, REQUEST_TAG};
use ferry_core::{Buf, Rank, SendMode, UsageError};

use super::{elem_size, Access, Origin, Window};
use crate::coll::op::Op;
use crate::error::Result;
use crate::request::Request;
use crate::typed::{origin_of, Element};

/// How an accumulate combines its data with the target's.
#[derive(Debug, Clone, Copy)]
pub enum Combine<'a, T> {
    /// The data replaces the target's (`MPI_REPLACE`), element by
    /// element atomically.
    Replace,
    /// The target's data stays (`MPI_NO_OP`): a fetching operation that
    /// only reads, atomically with the other accumulates.
    NoOp,
    /// `target = data (op) target`, with a predefined op (MPI allows no
    /// user-defined op in one-sided operations).
    Op(&'a Op<T>),
}

impl<T: Element> Combine<'_, T> {
    /// The op and element type on the wire.
    fn wire(&self) -> Result<(AccOp, Datatype)> {
        Ok(match self {
            Combine::Replace => (AccOp::Replace, whole::<T>()),
            Combine::NoOp => (AccOp::NoOp, whole::<T>()),
            Combine::Op(op) => (AccOp::Reduce(op.op.clone()), op.dtype),
        })
    }
}

impl<T: Element> Window<T> {
    /// `MPI_Put`: writes `data` at element `disp` of `target`'s window.
    /// Complete at the target by the next fence, flush or unlock.
    ///
    /// # Errors
    /// No access epoch to `target` ([`UsageError::RmaSync`]), a range past
    /// its window ([`UsageError::RmaRange`]), a bad rank, a dead target.
    pub fn put(&self, target: Rank, disp: usize, data: &[T]) -> Result<()> {
        self.rput(target, disp, data).map(drop)
    }

    /// `MPI_Rput`: [`Window::put`], with a request that completes when
    /// the data has left (local completion).
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn rput(&self, target: Rank, disp: usize, data: &[T]) -> Result<Request> {
        self.put_bytes(target, byte_disp::<T>(disp)?, bytes(data))
    }

    /// `MPI_Get` (`MPI_Rget`): `count` elements from element `disp` of
    /// `target`'s window, in the request's vector
    /// ([`Completion::into_vec`](crate::Completion::into_vec)).
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn get(&self, target: Rank, disp: usize, count: usize) -> Result<Request> {
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            let mut v = vec![T::zeroed(); count];
            self.get_to(target, byte_disp::<T>(disp)?, bytes_mut(&mut v))?;
            return Ok(self.ready(Some(v)));
        }
        let len = byte_disp::<T>(count)?;
        self.get_into(target, byte_disp::<T>(disp)?, len, |c, from, tag| {
            c.irecv(vec![T::zeroed(); count], from, tag)
        })
    }

    /// `MPI_Accumulate` (`MPI_Raccumulate` without the request):
    /// combines `data` into `target`'s window from element `disp` on.
    /// Accumulates are atomic per element, and those of one origin to one
    /// target apply in order.
    ///
    /// # Errors
    /// As for [`Window::put`]; a user-defined op.
    pub fn accumulate(
        &self,
        target: Rank,
        disp: usize,
        data: &[T],
        op: Combine<'_, T>,
    ) -> Result<()> {
        let (acc, dtype) = op.wire()?;
        self.accumulate_bytes(target, byte_disp::<T>(disp)?, bytes(data), acc, dtype)
            .map(drop)
    }

    /// `MPI_Get_accumulate` (`MPI_Rget_accumulate`): combines `data` into
    /// the target range and returns what it held before, atomically.
    ///
    /// # Errors
    /// As for [`Window::accumulate`].
    pub fn get_accumulate(
        &self,
        target: Rank,
        disp: usize,
        data: &[T],
        op: Combine<'_, T>,
    ) -> Result<Request> {
        let (acc, dtype) = op.wire()?;
        let count = data.len();
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            let mut v = vec![T::zeroed(); count];
            let out = bytes_mut(&mut v);
            self.get_accumulate_to(target, byte_disp::<T>(disp)?, bytes(data), acc, dtype, out)?;
            return Ok(self.ready(Some(v)));
        }
        self.get_accumulate_into(
            target,
            byte_disp::<T>(disp)?,
            bytes(data),
            acc,
            dtype,
            |c, from, tag| c.irecv(vec![T::zeroed(); count], from, tag),
        )
    }

    /// `MPI_Fetch_and_op`: [`Window::get_accumulate`] of one element.
    ///
    /// # Errors
    /// As for [`Window::accumulate`].
    pub fn fetch_and_op(
        &self,
        target: Rank,
        disp: usize,
        value: T,
        op: Combine<'_, T>,
    ) -> Result<Request> {
        self.get_accumulate(target, disp, &[value], op)
    }

    /// `MPI_Compare_and_swap`: replaces the element at `disp` with `swap`
    /// if it equals `compare` (bit for bit), atomically; the request's
    /// vector holds the element as it was.
    ///
    /// # Errors
    /// As for [`Window::put`]; an element of a size other than 1, 2, 4 or
    /// 8 bytes.
    pub fn compare_and_swap(
        &self,
        target: Rank,
        disp: usize,
        compare: T,
        swap: T,
    ) -> Result<Request> {
        let dtype = cas_type::<T>()?;
        #[cfg(feature = "shm")]
        if self.direct().is_some() {
            let mut v = vec![T::zeroed(); 1];
            let (c, s) = ([compare], [swap]);
            let out = bytes_mut(&mut v);
            self.compare_and_swap_to(
                target,
                byte_disp::<T>(disp)?,
                bytes(&c),
                bytes(&s),
                dtype,
                out,
            )?;
            return Ok(self.ready(Some(v)));
        }
        self.compare_and_swap_into(
            target,
            byte_disp::<T>(disp)?,
            bytes(&[compare]),
            bytes(&[swap]),
            dtype,
            |c, from, tag| c.irecv(vec![T::zeroed(); 1], from, tag),
        )
    }

    /// [`Window::get`] into `out`, complete when it returns: no request
    /// and, on a node window, no allocation (a copy); on any other
    /// window, the request's wait.
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn get_now(&self, target: Rank, disp: usize, out: &mut [T]) -> Result<()> {
        self.get_to(target, byte_disp::<T>(disp)?, bytes_mut(out))
    }

    /// [`Window::fetch_and_op`], complete when it returns: the element as
    /// it was (see [`Window::get_now`]).
    ///
    /// # Errors
    /// As for [`Window::fetch_and_op`].
    pub fn fetch_and_op_now(
        &self,
        target: Rank,
        disp: usize,
        value: T,
        op: Combine<'_, T>,
    ) -> Result<T> {
        let mut old = [T::zeroed()];
        self.get_accumulate_now(target, disp, &[value], &mut old, op)?;
        Ok(old[0])
    }

    /// [`Window::get_accumulate`], complete when it returns: the range as
    /// it was lands in `out` (see [`Window::get_now`]).
    ///
    /// # Errors
    /// As for [`Window::get_accumulate`]; `out` of another length than
    /// `data`.
    pub fn get_accumulate_now(
        &self,
        target: Rank,
        disp: usize,
        data: &[T],
        out: &mut [T],
        op: Combine<'_, T>,
    ) -> Result<()> {
        let (acc, dtype) = op.wire()?;
        let disp = byte_disp::<T>(disp)?;
        self.get_accumulate_to(target, disp, bytes(data), acc, dtype, bytes_mut(out))
    }

    /// [`Window::compare_and_swap`], complete when it returns: the
    /// element as it was (see [`Window::get_now`]).
    ///
    /// # Errors
    /// As for [`Window::compare_and_swap`].
    pub fn compare_and_swap_now(
        &self,
        target: Rank,
        disp: usize,
        compare: T,
        swap: T,
    ) -> Result<T> {
        let dtype = cas_type::<T>()?;
        let mut old = [T::zeroed()];
        let (c, s) = ([compare], [swap]);
        let disp = byte_disp::<T>(disp)?;
        self.compare_and_swap_to(
            target,
            disp,
            bytes(&c),
            bytes(&s),
            dtype,
            bytes_mut(&mut old),
        )?;
        Ok(old[0])
    }

    /// [`Window::rput`] in bytes: `data` at byte `disp` of `target`'s
    /// window (the untyped form, for callers with their own element
    /// types: the C layer).
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn put_bytes(&self, target: Rank, disp: u64, data: &[u8]) -> Result<Request> {
        let mut o = self.origin()?;
        let wire = self.wire(&o, Kind::Put, target, disp, data.len() as u64)?;
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            self.direct_put(&o, d, target, disp, data)?;
            return Ok(self.ready::<u8>(None));
        }
        self.issue(&mut o, target, &wire, data)
    }

    /// [`Window::get`] in bytes: `len` bytes from byte `disp`; `recv`
    /// posts the reply's receive on the window's communicator, from the
    /// target, on the tag given, wherever the caller wants the bytes.
    ///
    /// # Errors
    /// As for [`Window::put`]; what `recv` returns.
    pub fn get_into<R>(
        &self,
        target: Rank,
        disp: u64,
        len: u64,
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::Get, target, disp, len)?;
        self.fetch(&mut o, target, &mut wire, &[], recv)
    }

    /// [`Window::accumulate`] in bytes, with the op and element type given
    /// (the request completes when the data has left).
    ///
    /// # Errors
    /// As for [`Window::accumulate`]; an op its element type does not have.
    pub fn accumulate_bytes(
        &self,
        target: Rank,
        disp: u64,
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
    ) -> Result<Request> {
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::Accumulate, target, disp, data.len() as u64)?;
        (wire.op, wire.dtype) = checked(op, dtype, data.len())?;
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            let ranges = [(disp, data.len() as u64)];
            self.direct_accumulate(&o, d, target, &ranges, data, &wire.op, wire.dtype, None)?;
            return Ok(self.ready::<u8>(None));
        }
        self.issue(&mut o, target, &wire, data)
    }

    /// [`Window::get_accumulate`] in bytes (`recv` as in
    /// [`Window::get_into`], for `data.len()` bytes).
    ///
    /// # Errors
    /// As for [`Window::accumulate_bytes`]; what `recv` returns.
    pub fn get_accumulate_into<R>(
        &self,
        target: Rank,
        disp: u64,
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::GetAccumulate, target, disp, data.len() as u64)?;
        (wire.op, wire.dtype) = checked(op, dtype, data.len())?;
        self.fetch(&mut o, target, &mut wire, data, recv)
    }

    /// [`Window::compare_and_swap`] in bytes: one element of `dtype`
    /// (`compare` and `swap` its size; `recv` for that many bytes).
    ///
    /// # Errors
    /// As for [`Window::put`]; values of another size than the type's.
    pub fn compare_and_swap_into<R>(
        &self,
        target: Rank,
        disp: u64,
        compare: &[u8],
        swap: &[u8],
        dtype: Datatype,
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        if compare.len() != dtype.size() || swap.len() != dtype.size() {
            return Err(UsageError::LengthMismatch(
                "compare-and-swap: values of another size than the element",
            )
            .into());
        }
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::CompareAndSwap, target, disp, compare.len() as u64)?;
        wire.dtype = dtype;
        let mut data = compare.to_vec();
        data.extend_from_slice(swap);
        self.fetch(&mut o, target, &mut wire, &data, recv)
    }

    /// Whether this is a node window (every member on this node, in
    /// shared memory): its gets and fetching operations complete in their
    /// call, into the caller's memory ([`Window::get_to`] and the other
    /// `_to` forms).
    pub fn is_node_window(&self) -> bool {
        #[cfg(feature = "shm")]
        return self.direct().is_some();
        #[cfg(not(feature = "shm"))]
        false
    }

    /// [`Window::get`] in bytes into `out`, complete when it returns: on a
    /// node window, a copy; on any other, a request and its wait.
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn get_to(&self, target: Rank, disp: u64, out: &mut [u8]) -> Result<()> {
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            let o = self.origin()?;
            self.wire(&o, Kind::Get, target, disp, out.len() as u64)?;
            return self.direct_get(&o, d, target, disp, out);
        }
        let mut r = self.get_into(target, disp, out.len() as u64, reply_of(out.len()))?;
        copy_reply(&mut r, out)
    }

    /// [`Window::get_accumulate_into`] into `out`, complete when it
    /// returns (as [`Window::get_to`]).
    ///
    /// # Errors
    /// As for [`Window::accumulate_bytes`].
    pub fn get_accumulate_to(
        &self,
        target: Rank,
        disp: u64,
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
        out: &mut [u8],
    ) -> Result<()> {
        let range = [(disp, data.len() as u64)];
        self.get_accumulate_scattered_to(target, &range, data, op, dtype, out)
    }

    /// [`Window::compare_and_swap_into`] into `out`, complete when it
    /// returns (as [`Window::get_to`]).
    ///
    /// # Errors
    /// As for [`Window::compare_and_swap_into`].
    pub fn compare_and_swap_to(
        &self,
        target: Rank,
        disp: u64,
        compare: &[u8],
        swap: &[u8],
        dtype: Datatype,
        out: &mut [u8],
    ) -> Result<()> {
        let size = dtype.size();
        if compare.len() != size || swap.len() != size || out.len() != size {
            return Err(UsageError::LengthMismatch(
                "compare-and-swap: values of another size than the element",
            )
            .into());
        }
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            let o = self.origin()?;
            self.wire(&o, Kind::CompareAndSwap, target, disp, size as u64)?;
            return self.direct_compare_and_swap(&o, d, target, disp, compare, swap, out);
        }
        let recv = reply_of(size);
        let mut r = self.compare_and_swap_into(target, disp, compare, swap, dtype, recv)?;
        copy_reply(&mut r, out)
    }

    /// A request complete in its call (`REQUEST_EMPTY`), holding `result`.
    pub(super) fn ready<E: Element>(&self, result: Option<Vec<E>>) -> Request {
        Request::begun(
            &self.comm,
            ferry_core::Request::EMPTY,
            result.map(|v| Buf::from_storage(Box::new(crate::typed::VecStorage(v)))),
            origin_of::<E>(),
        )
    }

    /// Checks the epoch and the byte range; the request for it.
    pub(super) fn wire(
        &self,
        o: &Origin,
        kind: Kind,
        target: Rank,
        start: u64,
        len: u64,
    ) -> Result<Wire> {
        let size = self.size_of(target)?;
        let open = match &o.access {
            Access::Fence | Access::All => true,
            Access::Locks(l) => l.get(target as usize).is_some_and(Option::is_some),
            Access::Group(g) => g.contains(&target),
            Access::Closed => false,
        };
        if !open {
            return Err(
                UsageError::RmaSync("an operation outside an access epoch to its target").into(),
            );
        }
        match start.checked_add(len) {
            Some(end) if end <= size => Ok(Wire::new(kind, start, len)),
            end => Err(UsageError::RmaRange {
                end: end.unwrap_or(u64::MAX),
                size,
            }
            .into()),
        }
    }

    /// Sends `wire` with `data` to `target`; the send's request.
    pub(super) fn issue(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &Wire,
        data: &[u8],
    ) -> Result<Request> {
        if self.enqueue(o, target, wire, data)? {
            return Ok(self.done());
        }
        let msg = wire.encode(data).map_err(UsageError::Unsupported)?;
        self.send_request(o, target, wire, msg)
    }

    /// Sends the encoded request `msg` to `target` after the target's
    /// batch, counting a data request for fences.
    pub(super) fn send_request(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &Wire,
        msg: Vec<u8>,
    ) -> Result<Request> {
        self.flush_batch(o, target)?;
        let r = self.comm.isend_buf(
            Buf::from_vec(msg),
            origin_of::<u8>(),
            target,
            REQUEST_TAG,
            SendMode::Standard,
        )?;
        if wire.kind.is_data() {
            o.sent[target as usize] += 1;
        }
        Ok(r)
    }

    /// Sends the request, then posts the reply's receive (`recv`); what
    /// `recv` made. (A reply that comes first waits among the unexpected
    /// messages; a receive that fails to post leaves nothing of the
    /// caller's memory to the engine.)
    fn fetch<R>(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &mut Wire,
        data: &[u8],
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        wire.reply = o.reply_tag();
        drop(self.issue(o, target, wire, data)?);
        recv(&self.comm, target, wire.reply)
    }
}

/// The byte offset of element `disp` (or the bytes of `disp` elements).
fn byte_disp<T>(disp: usize) -> Result<u64> {
    (disp as u64)
        .checked_mul(elem_size::<T>() as u64)
        .ok_or_else(|| {
            UsageError::RmaRange {
                end: u64::MAX,
                size: 0,
            }
            .into()
        })
}

/// An accumulate's op on `dtype`, checked: a predefined op the type has,
/// and whole elements.
pub(super) fn checked(op: AccOp, dtype: Datatype, len: usize) -> Result<(AccOp, Datatype)> {
    if let AccOp::Reduce(r) = &op {
        if matches!(r, ReduceOp::User(_)) {
            return Err(UsageError::Unsupported(
                "a user-defined op in a one-sided operation (MPI allows predefined ops only)",
            )
            .into());
        }
        r.check(dtype)?;
    }
    if dtype.size() == 0 || len % dtype.size() != 0 {
        return Err(UsageError::LengthMismatch("an accumulate of a partial element").into());
    }
    Ok((op, dtype))
}

/// The receive of a `len`-byte reply, in a vector of its own (the
/// message path of the forms that complete in their call).
pub(super) fn reply_of(
    len: usize,
) -> impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<Request> {
    move |c, from, tag| c.irecv(vec![0u8; len], from, tag)
}

/// Waits for a fetching request and copies its bytes to `out`.
pub(super) fn copy_reply(r: &mut Request, out: &mut [u8]) -> Result<()> {
    let done = r.wait().map_err(super::sync::refused)?;
    if let Some(e) = done.status.error {
        return Err(super::sync::refused(e.into()));
    }
    let got = done.bytes();
    let n = got.len().min(out.len());
    out[..n].copy_from_slice(&got[..n]);
    Ok(())
}

/// The unsigned type of `T`'s size (bytes for other sizes): the element a
/// replace or no-op is atomic on.
fn whole<T>() -> Datatype {
    match elem_size::<T>() {
        2 => Datatype::U16,
        4 => Datatype::U32,
        8 => Datatype::U64,
        _ => Datatype::U8,
    }
}

/// The element type of a compare-and-swap on `T`.
fn cas_type<T>() -> Result<Datatype> {
    match elem_size::<T>() {
        1 | 2 | 4 | 8 => Ok(whole::<T>()),
        _ => Err(UsageError::Unsupported(
            "compare-and-swap on elements of other than 1, 2, 4 or 8 bytes",
        )
        .into()),
    }
}

/// The bytes of `data`, writable.
fn bytes_mut<T: Element>(data: &mut [T]) -> &mut [u8] {
    if elem_size::<T>() == 0 {
        return &mut [];
    }
    bytemuck::cast_slice_mut(data)
}

/// The bytes of `data`.
pub(super) fn bytes<T: Element>(data: &[T]) -> &[u8] {
    if elem_size::<T>() == 0 {
        return &[];
    }
    bytemuck::cast_slice(data)
}
