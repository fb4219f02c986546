//! The 32-bit immediate of every eager SEND: the only framing the device
//! adds, so a packet's bytes on the wire are exactly header + payload.
//!
//! | bits | field |
//! |---|---|
//! | 0..7 | header length (at most [`MAX_HEADER`]) |
//! | 7 | credit-only message (no header, no payload) |
//! | 8..24 | eager credits returned to the receiver of this message |
//! | 24..32 | [`MAGIC`]: catches a peer of another protocol version |
//!
//! Everything here is validated on arrival ([`Imm::decode`]): the header
//! length against `MAX_HEADER` and the received byte count, the magic, and
//! (by the caller) the returned credits against what was lent.

use ferry_core::wire::MAX_HEADER;

/// The top byte of every immediate.
pub const MAGIC: u32 = 0xF5;
const CREDIT_ONLY: u32 = 1 << 7;

/// A decoded immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imm {
    /// Bytes of engine header at the start of the message.
    pub header_len: usize,
    /// A message that only returns credits.
    pub credit_only: bool,
    /// Eager credits returned to the receiver.
    pub credits: u16,
}

impl Imm {
    /// A data message (`header_len <= MAX_HEADER`, checked by the sender).
    pub fn data(header_len: usize, credits: u16) -> u32 {
        debug_assert!(header_len <= MAX_HEADER);
        (MAGIC << 24) | (u32::from(credits) << 8) | (header_len as u32 & 0x7f)
    }

    /// A credit-only message.
    pub fn credit(credits: u16) -> u32 {
        (MAGIC << 24) | (u32::from(credits) << 8) | CREDIT_ONLY
    }

    /// Decodes and validates the immediate of a message of `byte_len` bytes.
    ///
    /// # Errors
    /// What is wrong with it (a peer of another protocol version, a length
    /// that does not fit).
    pub fn decode(imm: u32, byte_len: usize) -> Result<Imm, &'static str> {
        if imm >> 24 != MAGIC {
            return Err("verbs: bad immediate (protocol version mismatch?)");
        }
        let header_len = (imm & 0x7f) as usize;
        let credit_only = imm & CREDIT_ONLY != 0;
        let credits = ((imm >> 8) & 0xffff) as u16;
        if credit_only && (header_len != 0 || byte_len != 0) {
            return Err("verbs: credit message with data");
        }
        if header_len > MAX_HEADER {
            return Err("verbs: header longer than MAX_HEADER");
        }
        if header_len > byte_len {
            return Err("verbs: header longer than the message");
        }
        Ok(Imm {
            header_len,
            credit_only,
            credits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let d = Imm::decode(Imm::data(12, 300), 100).unwrap();
        assert_eq!(
            d,
            Imm {
                header_len: 12,
                credit_only: false,
                credits: 300
            }
        );
        let c = Imm::decode(Imm::credit(7), 0).unwrap();
        assert!(c.credit_only && c.credits == 7 && c.header_len == 0);
        assert!(Imm::decode(Imm::credit(7), 1).is_err());
        assert!(Imm::decode(Imm::data(12, 0), 11).is_err());
        assert!(Imm::decode(0, 0).is_err());
        assert!(Imm::decode((MAGIC << 24) | 100, 200).is_err());
    }
}
