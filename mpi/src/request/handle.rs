//! What an `MPI_Request` handle names ([`ReqHandle`]): nothing
//! (`MPI_REQUEST_NULL`), an operation complete at its start
//! (`MPIX_REQUEST_EMPTY`), an engine operation named directly, or an entry
//! of the request table; and lending the object behind one handle to a
//! call that works on it ([`lend`], [`give_back`]).
//!
//! # Direct handles
//! A raw operation (`State::Raw`) on `MPI_COMM_WORLD`, below
//! `MPI_THREAD_MULTIPLE`, is named by its engine handle itself instead of
//! by a request-table entry.
//!
//! A windowed stream of small messages starts and completes one request
//! per message. A table entry costs each of them an insert, two lookups
//! and a removal, with the entry's object moved in and out (about 190
//! instructions of the receiver's 2,000 a message in `mpi_bw`); the engine
//! already checks its own handles (index and generation), so the table
//! adds nothing a direct handle lacks.
//!
//! ## Encoding
//! ```text
//!  63  62      56 55               24 23             0
//! +---+----------+-------------------+----------------+
//! | 1 |    0     | engine generation | engine index   |
//! +---+----------+-------------------+----------------+
//! ```
//! Bit 63 is set in no other handle (user handles are below 2^49,
//! predefined ones below `0x1000`), so a direct handle never names a table
//! entry, and a table's decoder rejects it as foreign (`MPI_ERR_COMM` where
//! a communicator is expected). An operation whose engine index does not
//! fit in 24 bits gets a table entry instead.
//!
//! ## Why these conditions
//! - `MPI_COMM_WORLD` only: errors are raised on the request's
//!   communicator, which a direct handle cannot carry; it is always the
//!   world's.
//! - Below `MULTIPLE` only: there, another thread may complete or cancel a
//!   request this one is waiting on, which the table's lending detects
//!   (`BadHandle::Busy`) and `waiting.rs` relies on.
//!
//! ## Staleness
//! A completed request's handle is set to `MPI_REQUEST_NULL`; a copy the
//! program kept names an engine slot whose generation has moved on, so
//! the engine reports it stale (`MPI_ERR_REQUEST`), as the table would.
//! A direct request is lent as a promoted [`ReqObj`] and given back with
//! [`give_back`], which hands a pending operation back to its handle
//! rather than freeing it.
//!
//! ## A handle listed twice
//! The table lends an entry once, so an array that lists a request twice
//! finds it `Busy` and fails before anything completes. A call over an
//! array of direct handles checks the same with [`Seen`]: one stamp per
//! engine index, so the check is a load and a store per handle.

use ferry::RawRequest;

use crate::request::object::{ReqObj, State};

use crate::abi::class::{MPI_ERR_INTERN, MPI_ERR_REQUEST};
use crate::abi::{MPIX_REQUEST_EMPTY, MPI_COMM_WORLD, MPI_REQUEST_NULL};
use crate::error::{Fail, Res};
use crate::state::{rt, Runtime};

/// What a request handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqHandle {
    /// `MPI_REQUEST_NULL`.
    Null,
    /// `MPIX_REQUEST_EMPTY`: complete, with the empty status, and no object.
    Empty,
    /// An engine operation named by its engine handle (see the module docs).
    Direct(RawRequest),
    /// An entry of the request table.
    Table(usize),
}

impl ReqHandle {
    /// What `h` names.
    #[inline]
    pub(crate) fn of(h: usize) -> ReqHandle {
        match h {
            MPI_REQUEST_NULL => ReqHandle::Null,
            MPIX_REQUEST_EMPTY => ReqHandle::Empty,
            _ => match decode(h) {
                Some(r) => ReqHandle::Direct(r),
                None => ReqHandle::Table(h),
            },
        }
    }

    /// True for a handle without an object (null or EMPTY).
    #[inline]
    pub(crate) fn is_trivial(h: usize) -> bool {
        h == MPI_REQUEST_NULL || h == MPIX_REQUEST_EMPTY
    }
}

/// A bad request handle as a failure.
pub(crate) fn bad_request(b: crate::handle::BadHandle) -> Fail {
    Fail::handle(MPI_ERR_REQUEST, b, "request")
}

/// Lends the object behind request `h` (a table entry, whose handle stays
/// reserved, or a direct request promoted); it goes back with
/// [`give_back`].
///
/// # Errors
/// `MPI_ERR_REQUEST` for a bad, busy or trivial handle.
#[inline]
pub(crate) fn lend(rt: &Runtime, h: usize) -> Res<ReqObj> {
    if let Some(r) = decode(h) {
        return Ok(lend_direct(rt, r));
    }
    let mut obj = rt.requests().with(|t| t.lend(h))?.map_err(bad_request)?;
    obj.promote(rt);
    Ok(obj)
}

/// Gives a lent request back: kept under its handle if it is pending or
/// persistent, freed otherwise. True if it was freed (the program's handle
/// becomes `MPI_REQUEST_NULL`).
#[inline]
pub(crate) fn give_back(rt: &Runtime, h: usize, obj: ReqObj) -> Res<bool> {
    if is_direct(h) {
        return give_back_direct(obj);
    }
    let spent = obj.inactive() && !obj.persistent();
    if spent {
        rt.requests().with(|t| t.release(h))?;
        drop(obj);
    } else {
        rt.requests().with(|t| t.restore(h, obj))?;
    }
    Ok(spent)
}

/// The handle of a request just made: `MPIX_REQUEST_EMPTY` for an
/// operation that finished inside its call (its post step run now, at
/// once), else a new table entry.
pub(crate) fn store(obj: ReqObj) -> Res<usize> {
    let rt = rt()?;
    let State::Active(req) = &obj.state else {
        return rt.add_request(obj);
    };
    // An ARecv's buffer goes out through its status, which an empty
    // request has none of.
    if !req.is_empty() || obj.persistent() || matches!(obj.post, crate::request::post::Post::Arecv)
    {
        return rt.add_request(obj);
    }
    if obj.post.writes_buffers() {
        let mut obj = obj;
        obj.wait()?.result?;
    }
    Ok(MPIX_REQUEST_EMPTY)
}

const DIRECT_BIT: usize = 1 << 63;
const INDEX_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// Bits 56..=62: always zero in a direct handle.
const UNUSED_MASK: usize = 0x7f << 56;

/// The direct handle of a raw operation started on `comm`, if it may have
/// one (see the module docs); `None` for a table entry.
#[inline]
pub(crate) fn encode(rt: &Runtime, r: RawRequest, comm: usize) -> Option<usize> {
    if comm != MPI_COMM_WORLD || !rt.requests().unlocked() {
        return None;
    }
    pack(r)
}

/// `r` as a direct handle; `None` if its index does not fit.
#[inline]
fn pack(r: RawRequest) -> Option<usize> {
    let raw = r.to_raw();
    let (index, generation) = (raw & 0xffff_ffff, raw >> 32);
    if index > INDEX_MASK {
        return None;
    }
    Some(DIRECT_BIT | ((generation as usize) << INDEX_BITS) | index as usize)
}

/// The engine handle a direct handle names; `None` for any other value.
#[inline]
pub(crate) fn decode(h: usize) -> Option<RawRequest> {
    if h & DIRECT_BIT == 0 || h & UNUSED_MASK != 0 {
        return None;
    }
    let index = (h as u64) & INDEX_MASK;
    let generation = ((h & !DIRECT_BIT) >> INDEX_BITS) as u64;
    Some(RawRequest::from_raw((generation << 32) | index))
}

/// A direct handle's engine index and generation (`None` for another).
pub(crate) fn direct_parts(h: usize) -> Option<(u32, u32)> {
    decode(h)?;
    Some((
        (h as u64 & INDEX_MASK) as u32,
        ((h & !DIRECT_BIT) >> INDEX_BITS) as u32,
    ))
}

/// The direct handle of engine index `index` at generation `generation`.
pub(crate) fn direct_from_parts(index: u32, generation: u32) -> usize {
    DIRECT_BIT | ((generation as usize) << INDEX_BITS) | (index as usize & INDEX_MASK as usize)
}

/// True for a direct handle.
#[inline]
pub(crate) fn is_direct(h: usize) -> bool {
    decode(h).is_some()
}

/// A direct request as the object a table entry would hold, promoted to an
/// ordinary ferry request, for the general completion paths. It must go
/// back through [`give_back_direct`]: dropping it frees the operation.
pub(crate) fn lend_direct(rt: &Runtime, r: RawRequest) -> ReqObj {
    let mut obj = ReqObj::raw(r, MPI_COMM_WORLD);
    obj.promote(rt);
    obj
}

/// [`lend_direct`], for a call that would not notice a stale handle itself
/// (`MPI_Request_free`, `MPI_Cancel`: freeing or cancelling a stale
/// engine handle does nothing).
///
/// # Errors
/// `MPI_ERR_REQUEST` for a stale handle.
pub(crate) fn lend_live(rt: &Runtime, r: RawRequest) -> Res<ReqObj> {
    let obj = lend_direct(rt, r);
    let checked = match &obj.state {
        State::Active(req) => req.get_status().map(drop),
        _ => Ok(()),
    };
    match checked {
        Ok(()) => Ok(obj),
        Err(e) => {
            // Not dropped: a live operation (failing for another reason,
            // a finalized world) stays named by the program's handle.
            give_back_direct(obj)?;
            Err(Fail::from(e).on(MPI_COMM_WORLD))
        }
    }
}

/// Ends a lend of a direct request: a finished one is dropped (the program's
/// handle becomes `MPI_REQUEST_NULL`), a pending one's operation is handed
/// back to the handle, which still names it. True if it was finished.
///
/// # Errors
/// `MPI_ERR_INTERN` if a pending direct request had become something else
/// than a ferry operation (no general path does that).
pub(crate) fn give_back_direct(obj: ReqObj) -> Res<bool> {
    if obj.inactive() {
        return Ok(true);
    }
    let mut obj = obj;
    match std::mem::replace(&mut obj.state, State::Inactive) {
        State::Active(req) => {
            // Not freed: the program's handle still names the operation.
            let _pending = req.into_raw();
            Ok(false)
        }
        other => {
            obj.state = other;
            Err(Fail::new(
                MPI_ERR_INTERN,
                "internal error (please report): a direct request changed kind",
            ))
        }
    }
}

/// Which direct handles one call has met (see the module docs).
#[derive(Debug)]
pub(crate) struct Seen {
    /// The current call's stamp.
    epoch: u32,
    /// Per engine index, the stamp of the last call that met it.
    stamps: Vec<u32>,
}

impl Default for Seen {
    /// Stamps for the engine's first 64 indices (an OSU window of requests)
    /// made at once, so that a first deeper window in the middle of a run
    /// is the first to grow them.
    fn default() -> Seen {
        Seen {
            epoch: 0,
            stamps: vec![0; 64],
        }
    }
}

impl Seen {
    /// Starts a call: every handle is new again.
    #[inline]
    pub(crate) fn begin(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamps.fill(0);
            self.epoch = 1;
        }
    }

    /// True the first time this call meets `r` (grows the stamps to the
    /// largest index met: the engine's live requests at most).
    #[inline]
    pub(crate) fn first_time(&mut self, r: RawRequest) -> bool {
        let index = (r.to_raw() & INDEX_MASK) as usize;
        if index >= self.stamps.len() {
            self.stamps.resize(index + 1, 0);
        }
        let first = self.stamps[index] != self.epoch;
        self.stamps[index] = self.epoch;
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_handle_round_trips() {
        for raw in [
            (1u64 << 32) | 7,
            (0xffff_ffffu64 << 32) | INDEX_MASK,
            2u64 << 32,
        ] {
            let h = pack(RawRequest::from_raw(raw)).expect("fits");
            assert!(h & DIRECT_BIT != 0);
            assert_eq!(decode(h).map(RawRequest::to_raw), Some(raw));
        }
        // An index past 24 bits gets a table entry instead.
        assert_eq!(
            pack(RawRequest::from_raw((1u64 << 32) | (INDEX_MASK + 1))),
            None
        );
    }

    #[test]
    fn no_other_handle_decodes_as_direct() {
        // NULL, EMPTY, predefined handles and table handles of every kind.
        let user = crate::handle::USER_BIT;
        for h in [
            0usize,
            1,
            0x101,
            0x209,
            user | 0xc2,
            user | (0xffff << 32) | 0xffff_ffff,
        ] {
            assert!(decode(h).is_none(), "{h:#x}");
        }
        // Garbage in the unused bits is not a direct handle either.
        assert!(decode(DIRECT_BIT | (1 << 60)).is_none());
    }

    #[test]
    fn seen_finds_a_handle_met_twice_in_one_call_only() {
        let (a, b) = (
            RawRequest::from_raw((3 << 32) | 5),
            RawRequest::from_raw((1 << 32) | 9),
        );
        let mut seen = Seen::default();
        seen.begin();
        assert!(seen.first_time(a) && seen.first_time(b));
        assert!(!seen.first_time(a));
        seen.begin();
        assert!(seen.first_time(a));
        // The stamp wraps without a false duplicate.
        seen.epoch = u32::MAX;
        seen.begin();
        assert!(seen.first_time(b) && !seen.first_time(b));
    }
}
