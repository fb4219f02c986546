//! The request an origin sends a target: a fixed header, then the
//! operation's data. Every field is checked when decoded; nothing a peer
//! sends can make the target read or write outside its window.
//!
//! | bytes | field |
//! |---|---|
//! | 0 | kind ([`Kind`]) |
//! | 1 | element type ([`Datatype`] code; 0 for plain bytes) |
//! | 2 | accumulate op ([`AccOp`] code; 0 where none) |
//! | 3 | flags (bit 0: an exclusive lock; bit 1: scattered) |
//! | 4..8 | reply tag (0: no reply) |
//! | 8..16 | displacement: the first byte in the target's window (scattered: the number of ranges) |
//! | 16..24 | length in bytes of the target range (scattered: of all the ranges) |
//! | 24.. | data: a put's or accumulate's bytes; a compare-and-swap's compare value then its new value |
//!
//! A scattered put, get, accumulate or get-accumulate (a target datatype
//! of many pieces, in one request) has a table of its ranges before its
//! data: each range's displacement and length, 8 bytes each; the data,
//! and a get's reply, are the ranges' bytes one after another.
//!
//! A batch ([`Kind::Batch`]) carries puts and accumulates (plain or
//! scattered) one after another, each a whole request as above; its
//! header's displacement counts them and its length is their bytes. An
//! origin batches the operations that need no reply to one target until
//! something must go out after them, so an epoch of many small puts is a
//! few messages.

use crate::envelope::{Tag, TAG_UB};
use crate::reduction::{Datatype, ReduceOp};

use super::AccOp;

/// Bytes before the data.
pub const HEADER_LEN: usize = 24;

/// What a request asks of the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Write the data at the displacement.
    Put,
    /// Reply with the range.
    Get,
    /// Combine the data into the range.
    Accumulate,
    /// Reply with the range, then combine the data into it.
    GetAccumulate,
    /// Reply with the element; replace it if it equals the compare value.
    CompareAndSwap,
    /// Lock the window (shared, or exclusive with the flag); reply once
    /// granted.
    Lock,
    /// Release this origin's lock; reply once released (every earlier
    /// request of this origin is applied by then).
    Unlock,
    /// Reply once every earlier request of this origin is applied.
    Flush,
    /// A notice from a target to an origin: its exposure epoch for the
    /// origin is open (`MPI_Win_post`); no reply.
    Post,
    /// A notice from an origin to a target: its access epoch to the target
    /// is over, every earlier request applied (`MPI_Win_complete`); no
    /// reply.
    Complete,
    /// Several puts and accumulates, applied in order; no reply.
    Batch,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Put => 1,
            Kind::Get => 2,
            Kind::Accumulate => 3,
            Kind::GetAccumulate => 4,
            Kind::CompareAndSwap => 5,
            Kind::Lock => 6,
            Kind::Unlock => 7,
            Kind::Flush => 8,
            Kind::Post => 9,
            Kind::Complete => 10,
            Kind::Batch => 11,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::Put,
            2 => Kind::Get,
            3 => Kind::Accumulate,
            4 => Kind::GetAccumulate,
            5 => Kind::CompareAndSwap,
            6 => Kind::Lock,
            7 => Kind::Unlock,
            8 => Kind::Flush,
            9 => Kind::Post,
            10 => Kind::Complete,
            11 => Kind::Batch,
            _ => return None,
        })
    }

    /// True for the operations a fence counts (those on window data).
    pub fn is_data(self) -> bool {
        !matches!(
            self,
            Kind::Lock | Kind::Unlock | Kind::Flush | Kind::Post | Kind::Complete | Kind::Batch
        )
    }
}

/// A decoded request header.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// What it asks.
    pub kind: Kind,
    /// The element type of an accumulate or compare-and-swap (`U8` for
    /// plain bytes).
    pub dtype: Datatype,
    /// The accumulate op.
    pub op: AccOp,
    /// An exclusive lock (for [`Kind::Lock`]).
    pub exclusive: bool,
    /// The tag the reply goes back on (0: none).
    pub reply: Tag,
    /// The first byte of the target range.
    pub disp: u64,
    /// The target range's length in bytes.
    pub len: u64,
    /// A table of ranges leads the data ([`Request::scattered`]): `disp`
    /// counts them and `len` is their total.
    pub scattered: bool,
}

/// Bytes of one entry of a scattered request's table.
pub const RANGE_LEN: usize = 16;

/// The element types a request can name, by code (1-based).
const TYPES: [Datatype; 15] = [
    Datatype::U8,
    Datatype::I8,
    Datatype::I16,
    Datatype::I32,
    Datatype::I64,
    Datatype::U16,
    Datatype::U32,
    Datatype::U64,
    Datatype::F32,
    Datatype::F64,
    Datatype::F32I32,
    Datatype::F64I32,
    Datatype::I64I32,
    Datatype::I32I32,
    Datatype::I16I32,
];

fn type_code(t: Datatype) -> Option<u8> {
    TYPES.iter().position(|&x| x == t).map(|i| i as u8 + 1)
}

fn op_code(op: &AccOp) -> Option<u8> {
    Some(match op {
        AccOp::Replace => 1,
        AccOp::NoOp => 2,
        AccOp::Reduce(r) => match r {
            ReduceOp::Sum => 3,
            ReduceOp::Prod => 4,
            ReduceOp::Min => 5,
            ReduceOp::Max => 6,
            ReduceOp::Land => 7,
            ReduceOp::Lor => 8,
            ReduceOp::Lxor => 9,
            ReduceOp::Band => 10,
            ReduceOp::Bor => 11,
            ReduceOp::Bxor => 12,
            ReduceOp::MinLoc => 13,
            ReduceOp::MaxLoc => 14,
            _ => return None,
        },
    })
}

fn op_from_code(c: u8) -> Option<AccOp> {
    Some(match c {
        1 => AccOp::Replace,
        2 => AccOp::NoOp,
        3 => AccOp::Reduce(ReduceOp::Sum),
        4 => AccOp::Reduce(ReduceOp::Prod),
        5 => AccOp::Reduce(ReduceOp::Min),
        6 => AccOp::Reduce(ReduceOp::Max),
        7 => AccOp::Reduce(ReduceOp::Land),
        8 => AccOp::Reduce(ReduceOp::Lor),
        9 => AccOp::Reduce(ReduceOp::Lxor),
        10 => AccOp::Reduce(ReduceOp::Band),
        11 => AccOp::Reduce(ReduceOp::Bor),
        12 => AccOp::Reduce(ReduceOp::Bxor),
        13 => AccOp::Reduce(ReduceOp::MinLoc),
        14 => AccOp::Reduce(ReduceOp::MaxLoc),
        _ => return None,
    })
}

impl Request {
    /// A request of `kind` on the range `disp..disp + len` (bytes), with
    /// plain bytes, no op and no reply.
    pub fn new(kind: Kind, disp: u64, len: u64) -> Request {
        Request {
            kind,
            dtype: Datatype::U8,
            op: AccOp::Replace,
            exclusive: false,
            reply: 0,
            disp,
            len,
            scattered: false,
        }
    }

    /// A request of `kind` (put, get, accumulate or get-accumulate) on
    /// `ranges` (displacement, length) of the target's window at once;
    /// [`Request::encode_scattered`] makes its message.
    pub fn scattered(kind: Kind, ranges: &[(u64, u64)]) -> Request {
        let total = ranges.iter().fold(0u64, |t, r| t.saturating_add(r.1));
        let mut r = Request::new(kind, ranges.len() as u64, total);
        r.scattered = true;
        r
    }

    /// The header, the table of `ranges`, then `data`.
    ///
    /// # Errors
    /// As for [`Request::encode`].
    pub fn encode_scattered(
        &self,
        ranges: &[(u64, u64)],
        data: &[u8],
    ) -> Result<Vec<u8>, &'static str> {
        let mut table = Vec::with_capacity(ranges.len() * RANGE_LEN + data.len());
        for &(disp, len) in ranges {
            table.extend_from_slice(&disp.to_le_bytes());
            table.extend_from_slice(&len.to_le_bytes());
        }
        table.extend_from_slice(data);
        self.encode(&table)
    }

    /// A scattered request's ranges (from the table that leads `data`)
    /// and the data after the table.
    pub fn ranges<'a>(
        &self,
        data: &'a [u8],
    ) -> (impl Iterator<Item = (u64, u64)> + Clone + 'a, &'a [u8]) {
        let n = if self.scattered {
            self.disp as usize
        } else {
            0
        };
        let (table, rest) = data.split_at((n * RANGE_LEN).min(data.len()));
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let ranges = table
            .chunks_exact(RANGE_LEN)
            .map(move |e| (word(&e[..8]), word(&e[8..])));
        (ranges, rest)
    }

    /// The header followed by `data`, ready to send.
    ///
    /// # Errors
    /// The element type or op has no code (a user op, an opaque type: MPI
    /// allows neither in one-sided operations).
    pub fn encode(&self, data: &[u8]) -> Result<Vec<u8>, &'static str> {
        let mut v = Vec::with_capacity(HEADER_LEN + data.len());
        self.encode_into(&mut v, data)?;
        Ok(v)
    }

    /// [`Request::encode`], appended to `v` (a batch's buffer).
    ///
    /// # Errors
    /// As for [`Request::encode`]; nothing is appended then.
    pub fn encode_into(&self, v: &mut Vec<u8>, data: &[u8]) -> Result<(), &'static str> {
        let dtype = type_code(self.dtype).ok_or("no one-sided operation on this element type")?;
        let op = op_code(&self.op).ok_or("no one-sided operation with a user-defined op")?;
        let flags = u8::from(self.exclusive) | u8::from(self.scattered) << 1;
        v.extend_from_slice(&[self.kind.code(), dtype, op, flags]);
        v.extend_from_slice(&(self.reply as u32).to_le_bytes());
        v.extend_from_slice(&self.disp.to_le_bytes());
        v.extend_from_slice(&self.len.to_le_bytes());
        v.extend_from_slice(data);
        Ok(())
    }

    /// A batch's header, for `count` requests of `bytes` bytes in all
    /// (see the module docs), written over the first [`HEADER_LEN`] bytes
    /// of `v`.
    pub fn seal_batch(v: &mut [u8], count: u64) {
        if v.len() < HEADER_LEN {
            return;
        }
        let bytes = (v.len() - HEADER_LEN) as u64;
        let mut header = Vec::with_capacity(HEADER_LEN);
        let r = Request::new(Kind::Batch, count, bytes);
        if r.encode_into(&mut header, &[]).is_ok() {
            v[..HEADER_LEN].copy_from_slice(&header);
        }
    }

    /// The requests of a batch's data, one message each: `Err` at the
    /// first that is malformed (the ones before it stand), or that is not
    /// a put or an accumulate.
    pub fn batched(data: &[u8]) -> impl Iterator<Item = Result<&[u8], &'static str>> {
        let mut rest = data;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let one = Request::first(rest);
            match one {
                Ok(n) => {
                    let (msg, after) = rest.split_at(n);
                    rest = after;
                    Some(Ok(msg))
                }
                Err(e) => {
                    rest = &[];
                    Some(Err(e))
                }
            }
        })
    }

    /// The length of the put or accumulate at the start of `data`.
    fn first(data: &[u8]) -> Result<usize, &'static str> {
        if data.len() < HEADER_LEN {
            return Err("a batched request shorter than its header");
        }
        let kind = Kind::from_code(data[0]).ok_or("an unknown one-sided request")?;
        if !matches!(kind, Kind::Put | Kind::Accumulate) {
            return Err("a batched request that is not a put or an accumulate");
        }
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap_or([0; 8]));
        let (disp, len) = (word(8), word(16));
        let table = if data[3] & 2 != 0 {
            disp.checked_mul(RANGE_LEN as u64)
        } else {
            Some(0)
        };
        table
            .and_then(|t| t.checked_add(len))
            .and_then(|t| t.checked_add(HEADER_LEN as u64))
            .and_then(|t| usize::try_from(t).ok())
            .filter(|&t| t <= data.len())
            .ok_or("a batched request longer than its batch")
    }

    /// Decodes a message: the header and its data.
    ///
    /// # Errors
    /// A short message, an unknown kind, type or op, a reply tag outside
    /// `0..=TAG_UB`, or data of the wrong length for the kind.
    pub fn decode(msg: &[u8]) -> Result<(Request, &[u8]), &'static str> {
        if msg.len() < HEADER_LEN {
            return Err("a one-sided request shorter than its header");
        }
        let kind = Kind::from_code(msg[0]).ok_or("an unknown one-sided request")?;
        let dtype = msg[1]
            .checked_sub(1)
            .and_then(|i| TYPES.get(i as usize))
            .copied()
            .ok_or("an unknown element type")?;
        let op = op_from_code(msg[2]).ok_or("an unknown accumulate op")?;
        let word = |at: usize| u64::from_le_bytes(msg[at..at + 8].try_into().unwrap_or([0; 8]));
        let reply = u32::from_le_bytes(msg[4..8].try_into().unwrap_or([0; 4]));
        if reply > TAG_UB as u32 {
            return Err("a reply tag out of range");
        }
        let r = Request {
            kind,
            dtype,
            op,
            exclusive: msg[3] & 1 != 0,
            reply: reply as Tag,
            disp: word(8),
            len: word(16),
            scattered: msg[3] & 2 != 0,
        };
        let data = &msg[HEADER_LEN..];
        if r.scattered {
            return r.decode_scattered(data).map(|()| (r, data));
        }
        let want = match kind {
            Kind::Put | Kind::Accumulate | Kind::GetAccumulate | Kind::Batch => Some(r.len),
            Kind::CompareAndSwap => r.len.checked_mul(2),
            Kind::Get | Kind::Lock | Kind::Unlock | Kind::Flush | Kind::Post | Kind::Complete => {
                Some(0)
            }
        };
        if want != Some(data.len() as u64) {
            return Err("a one-sided request whose data does not match its length");
        }
        Ok((r, data))
    }

    /// Checks a scattered request's table and data lengths.
    fn decode_scattered(&self, data: &[u8]) -> Result<(), &'static str> {
        let payload = match self.kind {
            Kind::Put | Kind::Accumulate | Kind::GetAccumulate => self.len,
            Kind::Get => 0,
            _ => return Err("a scattered request of a kind that has one range"),
        };
        let table = usize::try_from(self.disp)
            .ok()
            .and_then(|n| n.checked_mul(RANGE_LEN))
            .filter(|&t| t <= data.len())
            .ok_or("a scattered request's table longer than its data")?;
        if (data.len() - table) as u64 != payload {
            return Err("a one-sided request whose data does not match its length");
        }
        let (mut ranges, _) = self.ranges(data);
        let total = ranges.try_fold(0u64, |t, r| t.checked_add(r.1));
        if total != Some(self.len) {
            return Err("a scattered request whose ranges do not add up to its length");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused() {
        let mut r = Request::new(Kind::GetAccumulate, 40, 16);
        r.dtype = Datatype::F64;
        r.op = AccOp::Reduce(ReduceOp::Max);
        r.reply = 77;
        let msg = r.encode(&[1u8; 16]).unwrap();
        let (back, data) = Request::decode(&msg).unwrap();
        assert_eq!(back, r);
        assert_eq!(data, &[1u8; 16]);
        assert!(Request::decode(&msg[..msg.len() - 1]).is_err());
        assert!(Request::decode(&msg[..10]).is_err());
        let mut bad = msg.clone();
        bad[0] = 99;
        assert!(Request::decode(&bad).is_err());
        let mut bad = msg.clone();
        bad[1] = 0;
        assert!(Request::decode(&bad).is_err());
        let mut bad = msg;
        bad[7] = 0xff;
        assert!(Request::decode(&bad).is_err());
        let user = AccOp::Reduce(ReduceOp::User(crate::reduction::UserOp::new(
            |_, _| {},
            true,
        )));
        let mut r = Request::new(Kind::Accumulate, 0, 0);
        r.op = user;
        assert!(r.encode(&[]).is_err());
    }

    #[test]
    fn scattered_requests_round_trip_and_bad_tables_are_refused() {
        let ranges = [(0, 4), (100, 8), (40, 4)];
        let r = Request::scattered(Kind::Put, &ranges);
        let msg = r.encode_scattered(&ranges, &[7u8; 16]).unwrap();
        let (back, data) = Request::decode(&msg).unwrap();
        assert_eq!(back, r);
        let (got, payload) = back.ranges(data);
        assert_eq!(got.collect::<Vec<_>>(), ranges);
        assert_eq!(payload, &[7u8; 16]);
        // A payload of another length than the ranges' total.
        let short = r.encode_scattered(&ranges, &[7u8; 15]).unwrap();
        assert!(Request::decode(&short).is_err());
        // Ranges that do not add up to the header's length.
        let mut lying = r.clone();
        lying.len = 12;
        assert!(Request::decode(&lying.encode_scattered(&ranges, &[7u8; 12]).unwrap()).is_err());
        // More ranges than the table holds.
        let mut long = r.clone();
        long.disp = 1 << 60;
        assert!(Request::decode(&long.encode_scattered(&ranges, &[7u8; 16]).unwrap()).is_err());
        // A scattered lock.
        let mut lock = Request::scattered(Kind::Lock, &[]);
        lock.len = 0;
        assert!(Request::decode(&lock.encode_scattered(&[], &[]).unwrap()).is_err());
        let g = Request::scattered(Kind::Get, &ranges);
        assert!(Request::decode(&g.encode_scattered(&ranges, &[]).unwrap()).is_ok());
    }
}
