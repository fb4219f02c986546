//! The lazy-connection handshake (see `ferry-verbs`'s `qp.rs` for the
//! protocol): the UD address each rank publishes at setup, and the
//! datagrams two ranks exchange over UD to connect their RC queue pairs.
//!
//! # The published UD address
//! `<port address>;<UD QPN hex>,<Q_Key hex>,<nonce hex>`, the port address
//! as in [`crate::addr::PortAddr`]. The nonce is drawn per device instance:
//! a datagram must carry the sender's and the receiver's nonces, so one of
//! an earlier job (or of an earlier device in this process) that reuses a
//! QPN is dropped.
//!
//! # The datagram ([`ConnectMsg::LEN`] bytes, little endian)
//! | bytes | field |
//! |---|---|
//! | 0..4 | [`MAGIC`] |
//! | 4 | kind: 1 request, 2 reply, 3 down |
//! | 5..8 | zero |
//! | 8..12 | sender's rank |
//! | 12..16 | receiver's rank |
//! | 16..20 | sender's nonce |
//! | 20..24 | receiver's nonce |
//! | 24..28 | sender's RC QPN (24-bit, non-zero; zero for down) |
//! | 28..32 | sender's starting PSN (24-bit; zero for down) |
//! | 32..36 | request: zero; reply: the requester's RC QPN it answers; down: the rank that died |
//!
//! A **down** notice says that the sender's connection to a rank failed as
//! a dead peer's does (the observer ring of `ferry-verbs`'s `liveness.rs`).
//!
//! [`ConnectMsg::decode`] checks every field that can be checked without
//! the device's state; the device checks the ranks and nonces against its
//! peer table and the UD source QPN against the sender's published one.

use std::fmt;

use crate::addr::{AddrError, PortAddr};

/// The first four bytes of every handshake datagram (`FVC1`).
pub const MAGIC: [u8; 4] = *b"FVC1";

/// What is wrong with a datagram or a published UD address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// Not exactly [`ConnectMsg::LEN`] bytes.
    Length,
    /// Not [`MAGIC`] (another protocol, or another version).
    Magic,
    /// An unknown kind, or non-zero padding.
    Kind,
    /// A rank that is negative as an `i32`.
    Rank,
    /// A QPN or PSN that is not 24-bit, or a zero QPN.
    Qp,
    /// A request with an answered QPN, or a reply without one.
    Echo,
    /// A published UD address that does not decode.
    Addr(AddrError),
    /// A published UD address without `;<qpn>,<qkey>,<nonce>`.
    UdFields,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Length => f.write_str("bad datagram length"),
            ConnectError::Magic => f.write_str("bad magic"),
            ConnectError::Kind => f.write_str("bad kind"),
            ConnectError::Rank => f.write_str("bad rank"),
            ConnectError::Qp => f.write_str("bad QPN or PSN"),
            ConnectError::Echo => f.write_str("bad answered QPN"),
            ConnectError::Addr(e) => write!(f, "{e}"),
            ConnectError::UdFields => f.write_str("bad UD QPN, Q_Key or nonce"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// A rank's published UD address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdAddr {
    /// The port the UD QP (and every RC QP of the rank) is on.
    pub port: PortAddr,
    /// The UD QP number (24-bit, non-zero).
    pub qpn: u32,
    /// The Q_Key its datagrams must carry (31-bit: no controlled keys).
    pub qkey: u32,
    /// The device instance's nonce.
    pub nonce: u32,
}

fn hex_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

impl UdAddr {
    /// The published form.
    pub fn encode(&self) -> String {
        format!(
            "{};{:x},{:x},{:x}",
            self.port.encode(),
            self.qpn,
            self.qkey,
            self.nonce
        )
    }

    /// Decodes a published UD address.
    ///
    /// # Errors
    /// [`ConnectError::Addr`] for the port part, [`ConnectError::UdFields`]
    /// for the rest.
    pub fn decode(s: &str) -> Result<UdAddr, ConnectError> {
        let (port, ud) = s.split_once(';').ok_or(ConnectError::UdFields)?;
        let port = PortAddr::decode(port).map_err(ConnectError::Addr)?;
        let f: Vec<&str> = ud.split(',').collect();
        let [q, k, n] = f[..] else {
            return Err(ConnectError::UdFields);
        };
        let (Some(qpn), Some(qkey), Some(nonce)) = (hex_u32(q), hex_u32(k), hex_u32(n)) else {
            return Err(ConnectError::UdFields);
        };
        if qpn == 0 || qpn >> 24 != 0 || qkey >> 31 != 0 {
            return Err(ConnectError::UdFields);
        }
        Ok(UdAddr {
            port,
            qpn,
            qkey,
            nonce,
        })
    }
}

/// Request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// "Connect to my RC QP `qpn`, and tell me yours."
    Request,
    /// "Connected to your QP `answers`; mine is `qpn`."
    Reply {
        /// The requester's RC QPN this reply is for.
        answers: u32,
    },
    /// "Rank `rank` died" (`qpn` and `psn` are zero).
    Down {
        /// The rank that died.
        rank: i32,
    },
}

/// One handshake datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectMsg {
    /// Request or reply.
    pub kind: Kind,
    /// The sender's job rank.
    pub from: i32,
    /// The receiver's job rank.
    pub to: i32,
    /// The sender's nonce (from its published [`UdAddr`]).
    pub from_nonce: u32,
    /// The receiver's nonce.
    pub to_nonce: u32,
    /// The sender's RC QPN.
    pub qpn: u32,
    /// The sender's starting PSN on that QP.
    pub psn: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn qp24(v: u32, nonzero: bool) -> bool {
    v >> 24 == 0 && (!nonzero || v != 0)
}

impl ConnectMsg {
    /// Bytes of a datagram.
    pub const LEN: usize = 36;

    /// The datagram's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&MAGIC);
        let (kind, answers) = match self.kind {
            Kind::Request => (1u8, 0u32),
            Kind::Reply { answers } => (2, answers),
            Kind::Down { rank } => (3, rank as u32),
        };
        b[4] = kind;
        let words = [
            self.from as u32,
            self.to as u32,
            self.from_nonce,
            self.to_nonce,
            self.qpn,
            self.psn,
            answers,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Decodes and validates a received datagram.
    ///
    /// # Errors
    /// The first field found wrong.
    pub fn decode(b: &[u8]) -> Result<ConnectMsg, ConnectError> {
        if b.len() != Self::LEN {
            return Err(ConnectError::Length);
        }
        if b[0..4] != MAGIC {
            return Err(ConnectError::Magic);
        }
        if b[5..8] != [0, 0, 0] {
            return Err(ConnectError::Kind);
        }
        let rank = |at| i32::try_from(u32_at(b, at)).map_err(|_| ConnectError::Rank);
        let (from, to) = (rank(8)?, rank(12)?);
        let (qpn, psn) = (u32_at(b, 24), u32_at(b, 28));
        let answers = u32_at(b, 32);
        if b[4] == 3 {
            if qpn != 0 || psn != 0 {
                return Err(ConnectError::Qp);
            }
            let rank = i32::try_from(answers).map_err(|_| ConnectError::Rank)?;
            return Ok(ConnectMsg {
                kind: Kind::Down { rank },
                from,
                to,
                from_nonce: u32_at(b, 16),
                to_nonce: u32_at(b, 20),
                qpn,
                psn,
            });
        }
        if !matches!(b[4], 1 | 2) {
            return Err(ConnectError::Kind);
        }
        if !qp24(qpn, true) || !qp24(psn, false) {
            return Err(ConnectError::Qp);
        }
        let kind = match b[4] {
            1 if answers == 0 => Kind::Request,
            2 if qp24(answers, true) => Kind::Reply { answers },
            _ => return Err(ConnectError::Echo),
        };
        Ok(ConnectMsg {
            kind,
            from,
            to,
            from_nonce: u32_at(b, 16),
            to_nonce: u32_at(b, 20),
            qpn,
            psn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ConnectMsg {
        ConnectMsg {
            kind: Kind::Request,
            from: 3,
            to: 7,
            from_nonce: 0xdead_beef,
            to_nonce: 1,
            qpn: 0x12,
            psn: 0xab_cdef,
        }
    }

    #[test]
    fn datagrams_round_trip_and_every_bad_field_is_rejected() {
        let r = request();
        assert_eq!(ConnectMsg::decode(&r.encode()), Ok(r));
        let reply = ConnectMsg {
            kind: Kind::Reply { answers: 0x44 },
            ..r
        };
        assert_eq!(ConnectMsg::decode(&reply.encode()), Ok(reply));
        let good = r.encode();
        let cases: [(usize, u8, ConnectError); 7] = [
            (0, b'X', ConnectError::Magic),
            (4, 4, ConnectError::Kind),
            (6, 1, ConnectError::Kind),
            (11, 0x80, ConnectError::Rank),
            (27, 1, ConnectError::Qp),
            (31, 1, ConnectError::Qp),
            (32, 1, ConnectError::Echo),
        ];
        for (at, v, want) in cases {
            let mut b = good;
            b[at] = v;
            assert_eq!(ConnectMsg::decode(&b), Err(want), "byte {at}");
        }
        let mut zero_qpn = good;
        zero_qpn[24] = 0;
        assert_eq!(ConnectMsg::decode(&zero_qpn), Err(ConnectError::Qp));
        let mut no_answer = reply.encode();
        no_answer[32..36].fill(0);
        assert_eq!(ConnectMsg::decode(&no_answer), Err(ConnectError::Echo));
        assert_eq!(ConnectMsg::decode(&good[..35]), Err(ConnectError::Length));
        let down = ConnectMsg {
            kind: Kind::Down { rank: 5 },
            qpn: 0,
            psn: 0,
            ..r
        };
        assert_eq!(ConnectMsg::decode(&down.encode()), Ok(down));
        let mut bad_down = down.encode();
        bad_down[24] = 1;
        assert_eq!(ConnectMsg::decode(&bad_down), Err(ConnectError::Qp));
        bad_down = down.encode();
        bad_down[35] = 0x80;
        assert_eq!(ConnectMsg::decode(&bad_down), Err(ConnectError::Rank));
        assert_eq!(ConnectMsg::decode(&[]), Err(ConnectError::Length));
    }

    #[test]
    fn ud_addresses_round_trip_and_garbage_is_rejected() {
        let a = UdAddr {
            port: PortAddr {
                lid: 1,
                gid: [7; 16],
                mtu: 3,
            },
            qpn: 0x11,
            qkey: 0x4652_5259,
            nonce: 0xffff_ffff,
        };
        assert_eq!(UdAddr::decode(&a.encode()), Ok(a));
        let port = a.port.encode();
        for bad in [
            String::new(),
            port.clone(),
            format!("{port};"),
            format!("{port};11,1"),
            format!("{port};0,1,1"),
            format!("{port};1000000,1,1"),
            format!("{port};1,80000000,1"),
            format!("{port};1,1,100000000"),
            format!("{port};1,+1,1"),
            format!("{port};1,1,1,1"),
            "v1,1,00,3;1,1,1".to_owned(),
        ] {
            assert!(UdAddr::decode(&bad).is_err(), "{bad}");
        }
    }
}
