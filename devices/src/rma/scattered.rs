//! Scattered operations: a put, get, accumulate or get-accumulate over
//! many ranges of the target's window in one request (a C program's
//! target datatype of many pieces, such as a matrix's column), where one
//! request per range would cost a message each (see
//! [`ferry_core::rma::wire`]). On a node window each range is done in the
//! call, as any operation there.

use ferry_core::coll::Datatype;
use ferry_core::rma::{AccOp, Kind, Request as Wire};
use ferry_core::{Rank, UsageError};

use super::ops::checked;
use super::{Origin, Window};
use crate::error::Result;
use crate::request::Request;
use crate::typed::Element;

impl<T: Element> Window<T> {
    /// [`Window::put_bytes`] over several ranges of `target`'s window at
    /// once (displacement and length each; `data` fills them in order):
    /// one request however many ranges there are (a target datatype of
    /// many pieces).
    ///
    /// # Errors
    /// As for [`Window::put`], for any range; `data` of another length
    /// than the ranges'.
    pub fn put_scattered(
        &self,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
    ) -> Result<Request> {
        let mut o = self.origin()?;
        self.check_ranges(&o, Kind::Put, target, ranges, data.len())?;
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            for_ranges(ranges, data, |disp, piece| {
                self.direct_put(&o, d, target, disp, piece)
            })?;
            return Ok(self.ready::<u8>(None));
        }
        let wire = Wire::scattered(Kind::Put, ranges);
        self.issue_scattered(&mut o, target, &wire, ranges, data)
    }

    /// [`Window::accumulate_bytes`] over several ranges at once (as
    /// [`Window::put_scattered`]; each range holds whole elements).
    ///
    /// # Errors
    /// As for [`Window::accumulate_bytes`] and [`Window::put_scattered`].
    pub fn accumulate_scattered(
        &self,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
    ) -> Result<Request> {
        let mut o = self.origin()?;
        let wire = self.combining(&o, Kind::Accumulate, target, ranges, data, op, dtype)?;
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            self.direct_accumulate(&o, d, target, ranges, data, &wire.op, wire.dtype, None)?;
            return Ok(self.ready::<u8>(None));
        }
        self.issue_scattered(&mut o, target, &wire, ranges, data)
    }

    /// [`Window::get_into`] from several ranges at once: the reply is
    /// their bytes one after another (`recv` as for
    /// [`Window::get_into`]). Not on a node window, whose gets land where
    /// the caller says at once: [`Window::get_to`] each range there.
    ///
    /// # Errors
    /// As for [`Window::get_into`] and [`Window::put_scattered`]; a node
    /// window ([`UsageError::Unsupported`]).
    pub fn get_scattered_into<R>(
        &self,
        target: Rank,
        ranges: &[(u64, u64)],
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        let mut o = self.origin()?;
        let total = ranges.iter().map(|r| r.1 as usize).sum();
        self.check_ranges(&o, Kind::Get, target, ranges, total)?;
        let mut wire = Wire::scattered(Kind::Get, ranges);
        self.fetch_scattered(&mut o, target, &mut wire, ranges, &[], recv)
    }

    /// [`Window::get_accumulate_to`] over several ranges at once, atomic
    /// as a whole: the ranges' old bytes land in `out` in order, complete
    /// when it returns (on a window that is not a node window, a request
    /// and its wait).
    ///
    /// # Errors
    /// As for [`Window::get_accumulate_scattered_into`]; `out` of another
    /// length than `data`.
    pub fn get_accumulate_scattered_to(
        &self,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
        out: &mut [u8],
    ) -> Result<()> {
        if out.len() != data.len() {
            return Err(
                UsageError::LengthMismatch("get-accumulate: result and data differ").into(),
            );
        }
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            let o = self.origin()?;
            let w = self.combining(&o, Kind::GetAccumulate, target, ranges, data, op, dtype)?;
            let (op, dtype) = (&w.op, w.dtype);
            return self.direct_accumulate(&o, d, target, ranges, data, op, dtype, Some(out));
        }
        let recv = super::ops::reply_of(out.len());
        let mut r = self.get_accumulate_scattered_into(target, ranges, data, op, dtype, recv)?;
        super::ops::copy_reply(&mut r, out)
    }

    /// [`Window::get_accumulate_into`] over several ranges at once (as
    /// [`Window::get_scattered_into`]).
    ///
    /// # Errors
    /// As for [`Window::get_accumulate_into`] and
    /// [`Window::get_scattered_into`].
    #[allow(clippy::too_many_arguments)]
    pub fn get_accumulate_scattered_into<R>(
        &self,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        let mut o = self.origin()?;
        let mut wire = self.combining(&o, Kind::GetAccumulate, target, ranges, data, op, dtype)?;
        self.fetch_scattered(&mut o, target, &mut wire, ranges, data, recv)
    }

    /// The scattered request of an accumulate or get-accumulate of `data`
    /// over `ranges`, checked: epoch, ranges, op, whole elements in each.
    #[allow(clippy::too_many_arguments)]
    fn combining(
        &self,
        o: &Origin,
        kind: Kind,
        target: Rank,
        ranges: &[(u64, u64)],
        data: &[u8],
        op: AccOp,
        dtype: Datatype,
    ) -> Result<Wire> {
        self.check_ranges(o, kind, target, ranges, data.len())?;
        let mut wire = Wire::scattered(kind, ranges);
        (wire.op, wire.dtype) = checked(op, dtype, data.len())?;
        for &(_, len) in ranges {
            checked(wire.op.clone(), wire.dtype, len as usize)?;
        }
        Ok(wire)
    }

    /// Checks the epoch and every range, and that `bytes` fill them.
    fn check_ranges(
        &self,
        o: &Origin,
        kind: Kind,
        target: Rank,
        ranges: &[(u64, u64)],
        bytes: usize,
    ) -> Result<()> {
        self.wire(o, kind, target, 0, 0)?;
        let mut total = 0u64;
        for &(disp, len) in ranges {
            self.wire(o, kind, target, disp, len)?;
            total = total.saturating_add(len);
        }
        if total != bytes as u64 {
            return Err(
                UsageError::LengthMismatch("scattered ranges and their data differ").into(),
            );
        }
        Ok(())
    }

    /// Sends a scattered request: its send's request.
    fn issue_scattered(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &Wire,
        ranges: &[(u64, u64)],
        data: &[u8],
    ) -> Result<Request> {
        let msg = wire
            .encode_scattered(ranges, data)
            .map_err(UsageError::Unsupported)?;
        self.send_request(o, target, wire, msg)
    }

    /// [`Window::fetch`] for a scattered request.
    fn fetch_scattered<R>(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &mut Wire,
        ranges: &[(u64, u64)],
        data: &[u8],
        recv: impl FnOnce(&crate::Comm, Rank, ferry_core::Tag) -> Result<R>,
    ) -> Result<R> {
        if self.is_node_window() {
            return Err(UsageError::Unsupported(
                "a scattered get on a node window (get each range where it goes)",
            )
            .into());
        }
        wire.reply = o.reply_tag();
        drop(self.issue_scattered(o, target, wire, ranges, data)?);
        recv(&self.comm, target, wire.reply)
    }
}

/// Runs `f` on each range's displacement and its piece of `data`.
#[cfg(feature = "shm")]
fn for_ranges(
    ranges: &[(u64, u64)],
    data: &[u8],
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut at = 0usize;
    for &(disp, len) in ranges {
        f(disp, &data[at..at + len as usize])?;
        at += len as usize;
    }
    Ok(())
}
