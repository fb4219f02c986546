//! The request an origin sends a target: a fixed header, then the
//! operation's data. Every field is checked when decoded; nothing a peer
//! sends can make the target read or write outside its window.
//!
//! | bytes | field |
//! |---|---|
//! | 0 | kind ([`Kind`]) |
//! | 1 | element type ([`Datatype`] code; 0 for plain bytes) |
//! | 2 | accumulate op ([`AccOp`] code; 0 where none) |
//! | 3 | flags (bit 0: an exclusive lock) |
//! | 4..8 | reply tag (0: no reply) |
//! | 8..16 | displacement: the first byte in the target's window |
//! | 16..24 | length in bytes of the target range |
//! | 24.. | data: a put's or accumulate's bytes; a compare-and-swap's compare value then its new value |

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
            _ => return None,
        })
    }

    /// True for the operations a fence counts (those on window data).
    pub fn is_data(self) -> bool {
        !matches!(
            self,
            Kind::Lock | Kind::Unlock | Kind::Flush | Kind::Post | Kind::Complete
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
}

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
        }
    }

    /// The header followed by `data`, ready to send.
    ///
    /// # Errors
    /// The element type or op has no code (a user op, an opaque type: MPI
    /// allows neither in one-sided operations).
    pub fn encode(&self, data: &[u8]) -> Result<Vec<u8>, &'static str> {
        let dtype = type_code(self.dtype).ok_or("no one-sided operation on this element type")?;
        let op = op_code(&self.op).ok_or("no one-sided operation with a user-defined op")?;
        let mut v = Vec::with_capacity(HEADER_LEN + data.len());
        v.extend_from_slice(&[self.kind.code(), dtype, op, u8::from(self.exclusive)]);
        v.extend_from_slice(&(self.reply as u32).to_le_bytes());
        v.extend_from_slice(&self.disp.to_le_bytes());
        v.extend_from_slice(&self.len.to_le_bytes());
        v.extend_from_slice(data);
        Ok(v)
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
        };
        let data = &msg[HEADER_LEN..];
        let want = match kind {
            Kind::Put | Kind::Accumulate | Kind::GetAccumulate => Some(r.len),
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
}
