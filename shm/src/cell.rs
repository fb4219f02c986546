//! The cell codec: the byte layout of a cell's body, and the decoder that
//! validates every length in it before anything is sliced.
//!
//! A cell in the segment is a 4-byte queue link (an atomic, owned by the
//! queue) followed by the **body** this module reads and writes:
//!
//! | body offset | size | field |
//! |---|---|---|
//! | 0 | 4 | source: the sender's local index (little-endian) |
//! | 4 | 4 | header length, at most [`HEADER_CAP`] |
//! | 8 | 4 | payload length, at most the cell's payload capacity |
//! | 12 | 4 | per-pair sequence number (see [`crate::fastbox`]: it orders cells against fastbox packets) |
//! | 16 | 64 | header bytes |
//! | 80 | capacity | payload bytes |
//!
//! The body lives in memory that other processes can write, so the decoder
//! trusts nothing: it reads each length **once** into a local, checks it
//! against the body it was given, and slices only with checked values. A
//! corrupted cell is a [`CellError`], never a panic or an out-of-bounds
//! slice (fuzzed by `fuzz/fuzz_targets/shm_cell.rs`).

use ferry_core::wire::MAX_HEADER;

/// Bytes of fixed fields at the start of the body.
pub const FIELDS_LEN: usize = 16;
/// Room for the packet header.
pub const HEADER_CAP: usize = MAX_HEADER;
/// Where the payload starts in the body.
pub const PAYLOAD_OFFSET: usize = FIELDS_LEN + HEADER_CAP;

/// The body length of a cell with `payload_cap` bytes of payload room.
pub const fn body_len(payload_cap: usize) -> usize {
    PAYLOAD_OFFSET + payload_cap
}

/// A decoded cell: views into the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The sender's local index, as written in the cell.
    pub src: u32,
    /// The sender's sequence number for this (sender, receiver) pair. The
    /// decoder does not judge it (the receiver's sequencer does).
    pub seq: u32,
    /// The packet header.
    pub header: &'a [u8],
    /// The packet payload.
    pub payload: &'a [u8],
}

/// Why a cell was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    /// The body is shorter than the fixed fields and header room.
    #[error("cell body too short")]
    Short,
    /// The header length exceeds [`HEADER_CAP`].
    #[error("cell header length out of range")]
    HeaderTooLong,
    /// The payload length exceeds the cell's capacity.
    #[error("cell payload length out of range")]
    PayloadTooLong,
    /// The source field names a rank other than the cell's owner.
    #[error("cell source is not the cell's owner")]
    WrongSource,
}

impl CellError {
    /// A static description, for [`ferry_core::PeerError::Protocol`].
    pub fn what(self) -> &'static str {
        match self {
            CellError::Short => "shm cell body too short",
            CellError::HeaderTooLong => "shm cell header length out of range",
            CellError::PayloadTooLong => "shm cell payload length out of range",
            CellError::WrongSource => "shm cell source is not the cell's owner",
        }
    }
}

#[inline]
fn read_u32(body: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&body[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Decodes a cell body. `expected_src` is the cell's owner (known from the
/// cell's index): a sender only ever fills its own cells.
///
/// # Errors
/// A [`CellError`] naming the first field that is out of range.
#[inline]
pub fn decode(body: &[u8], expected_src: u32) -> Result<Decoded<'_>, CellError> {
    if body.len() < PAYLOAD_OFFSET {
        return Err(CellError::Short);
    }
    let src = read_u32(body, 0);
    let header_len = read_u32(body, 4) as usize;
    let payload_len = read_u32(body, 8) as usize;
    let seq = read_u32(body, 12);
    if src != expected_src {
        return Err(CellError::WrongSource);
    }
    if header_len > HEADER_CAP {
        return Err(CellError::HeaderTooLong);
    }
    let capacity = body.len() - PAYLOAD_OFFSET;
    if payload_len > capacity {
        return Err(CellError::PayloadTooLong);
    }
    Ok(Decoded {
        src,
        seq,
        header: &body[FIELDS_LEN..FIELDS_LEN + header_len],
        payload: &body[PAYLOAD_OFFSET..PAYLOAD_OFFSET + payload_len],
    })
}

/// Fills a cell body.
///
/// # Errors
/// [`CellError::HeaderTooLong`] or [`CellError::PayloadTooLong`] if the
/// packet does not fit ([`CellError::Short`] for a body without the fixed
/// room); nothing is written then.
#[inline]
pub fn encode(
    body: &mut [u8],
    src: u32,
    seq: u32,
    header: &[u8],
    payload: &[u8],
) -> Result<(), CellError> {
    if body.len() < PAYLOAD_OFFSET {
        return Err(CellError::Short);
    }
    if header.len() > HEADER_CAP {
        return Err(CellError::HeaderTooLong);
    }
    if payload.len() > body.len() - PAYLOAD_OFFSET {
        return Err(CellError::PayloadTooLong);
    }
    body[0..4].copy_from_slice(&src.to_le_bytes());
    body[4..8].copy_from_slice(&(header.len() as u32).to_le_bytes());
    body[8..12].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    body[12..16].copy_from_slice(&seq.to_le_bytes());
    body[FIELDS_LEN..FIELDS_LEN + header.len()].copy_from_slice(header);
    body[PAYLOAD_OFFSET..PAYLOAD_OFFSET + payload.len()].copy_from_slice(payload);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut body = vec![0xEEu8; body_len(100)];
        encode(&mut body, 3, 0xDEAD_BEEF, b"hdr", &[7; 100]).unwrap();
        let d = decode(&body, 3).unwrap();
        assert_eq!(d.src, 3);
        assert_eq!(d.seq, 0xDEAD_BEEF);
        assert_eq!(d.header, b"hdr");
        assert_eq!(d.payload, &[7; 100][..]);
        encode(&mut body, 3, 1, &[1; HEADER_CAP], &[]).unwrap();
        let d = decode(&body, 3).unwrap();
        assert_eq!(d.header.len(), HEADER_CAP);
        assert!(d.payload.is_empty());
    }

    #[test]
    fn oversized_packets_are_refused_and_write_nothing() {
        let mut body = vec![0u8; body_len(8)];
        assert_eq!(
            encode(&mut body, 0, 0, &[0; HEADER_CAP + 1], &[]),
            Err(CellError::HeaderTooLong)
        );
        assert_eq!(
            encode(&mut body, 0, 0, &[], &[0; 9]),
            Err(CellError::PayloadTooLong)
        );
        assert!(body.iter().all(|&b| b == 0));
        assert_eq!(
            encode(&mut [0u8; 10], 0, 0, &[], &[]),
            Err(CellError::Short)
        );
    }

    #[test]
    fn malformed_cells_are_rejected() {
        let mut body = vec![0u8; body_len(16)];
        encode(&mut body, 1, 0, b"h", b"p").unwrap();
        assert_eq!(decode(&body, 2), Err(CellError::WrongSource));
        assert_eq!(
            decode(&body[..PAYLOAD_OFFSET - 1], 1),
            Err(CellError::Short)
        );

        let mut bad = body.clone();
        bad[4..8].copy_from_slice(&(HEADER_CAP as u32 + 1).to_le_bytes());
        assert_eq!(decode(&bad, 1), Err(CellError::HeaderTooLong));
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&bad, 1), Err(CellError::HeaderTooLong));

        let mut bad = body.clone();
        bad[8..12].copy_from_slice(&17u32.to_le_bytes());
        assert_eq!(decode(&bad, 1), Err(CellError::PayloadTooLong));
        bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&bad, 1), Err(CellError::PayloadTooLong));
        // Exactly full is fine.
        bad[8..12].copy_from_slice(&16u32.to_le_bytes());
        assert_eq!(decode(&bad, 1).unwrap().payload.len(), 16);
        for e in [
            CellError::Short,
            CellError::HeaderTooLong,
            CellError::PayloadTooLong,
            CellError::WrongSource,
        ] {
            assert!(e.what().starts_with("shm cell"));
        }
    }
}
