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
            Combine::Replace => (AccOp::Replace, Datatype::U8),
            Combine::NoOp => (AccOp::NoOp, Datatype::U8),
            Combine::Op(op) => {
                if matches!(op.op, ReduceOp::User(_)) {
                    return Err(UsageError::Unsupported(
                        "a user-defined op in a one-sided operation (MPI allows predefined ops only)",
                    )
                    .into());
                }
                op.op.check(op.dtype)?;
                (AccOp::Reduce(op.op.clone()), op.dtype)
            }
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
        let mut o = self.origin()?;
        let wire = self.wire(&o, Kind::Put, target, disp, data.len())?;
        self.issue(&mut o, target, &wire, bytes(data))
    }

    /// `MPI_Get` (`MPI_Rget`): `count` elements from element `disp` of
    /// `target`'s window, in the request's vector
    /// ([`Completion::into_vec`](crate::Completion::into_vec)).
    ///
    /// # Errors
    /// As for [`Window::put`].
    pub fn get(&self, target: Rank, disp: usize, count: usize) -> Result<Request> {
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::Get, target, disp, count)?;
        self.fetch(&mut o, target, &mut wire, &[], count)
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
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::Accumulate, target, disp, data.len())?;
        (wire.op, wire.dtype) = op.wire()?;
        self.issue(&mut o, target, &wire, bytes(data)).map(drop)
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
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::GetAccumulate, target, disp, data.len())?;
        (wire.op, wire.dtype) = op.wire()?;
        self.fetch(&mut o, target, &mut wire, bytes(data), data.len())
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
        let mut o = self.origin()?;
        let mut wire = self.wire(&o, Kind::CompareAndSwap, target, disp, 1)?;
        wire.dtype = match elem_size::<T>() {
            1 => Datatype::U8,
            2 => Datatype::U16,
            4 => Datatype::U32,
            8 => Datatype::U64,
            _ => {
                return Err(UsageError::Unsupported(
                    "compare-and-swap on elements of other than 1, 2, 4 or 8 bytes",
                )
                .into())
            }
        };
        let mut data = bytes(&[compare]).to_vec();
        data.extend_from_slice(bytes(&[swap]));
        self.fetch(&mut o, target, &mut wire, &data, 1)
    }

    /// Checks the epoch and the range; the request for it (bytes).
    pub(super) fn wire(
        &self,
        o: &Origin,
        kind: Kind,
        target: Rank,
        disp: usize,
        count: usize,
    ) -> Result<Wire> {
        let size = self.size_of(target)?;
        let open = match &o.access {
            Access::Fence | Access::All => true,
            Access::Locks(l) => l.get(target as usize).is_some_and(Option::is_some),
            Access::Closed => false,
        };
        if !open {
            return Err(
                UsageError::RmaSync("an operation outside an access epoch to its target").into(),
            );
        }
        let e = elem_size::<T>() as u64;
        let start = (disp as u64).checked_mul(e);
        let len = (count as u64).checked_mul(e);
        let end = start.zip(len).and_then(|(s, l)| s.checked_add(l));
        match (start, len, end) {
            (Some(start), Some(len), Some(end)) if end <= size => Ok(Wire::new(kind, start, len)),
            _ => Err(UsageError::RmaRange {
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
        let msg = wire.encode(data).map_err(UsageError::Unsupported)?;
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

    /// Posts the receive of the reply (`count` elements) and sends the
    /// request; the receive's request.
    fn fetch(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &mut Wire,
        data: &[u8],
        count: usize,
    ) -> Result<Request> {
        wire.reply = o.reply_tag();
        let reply = self
            .comm
            .irecv(vec![T::zeroed(); count], target, wire.reply)?;
        match self.issue(o, target, wire, data) {
            Ok(_sent) => Ok(reply),
            Err(e) => {
                let _ = reply.cancel();
                Err(e)
            }
        }
    }
}

/// The bytes of `data`.
pub(super) fn bytes<T: Element>(data: &[T]) -> &[u8] {
    if elem_size::<T>() == 0 {
        return &[];
    }
    bytemuck::cast_slice(data)
}
