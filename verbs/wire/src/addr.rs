//! The addresses each rank publishes at setup (see `ferry-verbs`'s `qp.rs`
//! for the protocol): its port, `v1,<lid hex>,<gid 32 hex digits>,<mtu>`,
//! and per peer its QP, `<qpn hex>,<psn hex>`. Every field is validated on
//! read.

use std::fmt;

/// What is wrong with a published address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddrError {
    /// Not four fields starting with `v1`.
    NotV1,
    /// The LID is not 16-bit hex.
    Lid,
    /// The GID is not 32 hex digits.
    Gid,
    /// The MTU is not an `ibv_mtu` value (1..=5).
    Mtu,
    /// The QP address is not `<qpn>,<psn>` with 24-bit hex values and a
    /// non-zero QP number.
    Qp,
}

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrError::NotV1 => "not a v1 verbs port address",
            AddrError::Lid => "bad LID",
            AddrError::Gid => "bad GID",
            AddrError::Mtu => "bad MTU",
            AddrError::Qp => "bad QP address",
        })
    }
}

impl std::error::Error for AddrError {}

/// A rank's port address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortAddr {
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID used for addressing.
    pub gid: [u8; 16],
    /// `ibv_mtu` value (1..=5).
    pub mtu: u32,
}

/// One end of a connection, as published: QP number and starting PSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAddr {
    /// The QP number (24-bit, non-zero).
    pub qpn: u32,
    /// The starting packet sequence number (24-bit).
    pub psn: u32,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex digits only: `from_str_radix` alone would take a leading sign.
fn hex_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl PortAddr {
    /// The published form.
    pub fn encode(&self) -> String {
        format!("v1,{:x},{},{}", self.lid, hex(&self.gid), self.mtu)
    }

    /// Decodes a published port address.
    ///
    /// # Errors
    /// The first field found wrong.
    pub fn decode(s: &str) -> Result<PortAddr, AddrError> {
        let f: Vec<&str> = s.split(',').collect();
        if f.len() != 4 || f[0] != "v1" {
            return Err(AddrError::NotV1);
        }
        if !hex_digits(f[1]) {
            return Err(AddrError::Lid);
        }
        let lid = u16::from_str_radix(f[1], 16).map_err(|_| AddrError::Lid)?;
        if f[2].len() != 32 || !hex_digits(f[2]) {
            return Err(AddrError::Gid);
        }
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = u8::from_str_radix(&f[2][2 * i..2 * i + 2], 16).map_err(|_| AddrError::Gid)?;
        }
        let mtu: u32 = f[3].parse().map_err(|_| AddrError::Mtu)?;
        if !(1..=5).contains(&mtu) {
            return Err(AddrError::Mtu);
        }
        Ok(PortAddr { lid, gid, mtu })
    }
}

impl QpAddr {
    /// The published form.
    pub fn encode(&self) -> String {
        format!("{:x},{:x}", self.qpn, self.psn)
    }

    /// Decodes a published QP address.
    ///
    /// # Errors
    /// [`AddrError::Qp`].
    pub fn decode(s: &str) -> Result<QpAddr, AddrError> {
        let (q, p) = s.split_once(',').ok_or(AddrError::Qp)?;
        if !hex_digits(q) || !hex_digits(p) {
            return Err(AddrError::Qp);
        }
        let qpn = u32::from_str_radix(q, 16).map_err(|_| AddrError::Qp)?;
        let psn = u32::from_str_radix(p, 16).map_err(|_| AddrError::Qp)?;
        // QPNs and PSNs are 24-bit.
        if qpn >> 24 != 0 || psn >> 24 != 0 || qpn == 0 {
            return Err(AddrError::Qp);
        }
        Ok(QpAddr { qpn, psn })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_and_garbage_is_rejected() {
        let p = PortAddr {
            lid: 0x12,
            gid: [0xab; 16],
            mtu: 3,
        };
        assert_eq!(PortAddr::decode(&p.encode()).unwrap(), p);
        for bad in [
            "",
            "v2,1,00,3",
            "v1,zz,00000000000000000000000000000000,3",
            "v1,+1,00000000000000000000000000000000,3",
            "v1,1,00,3",
            "v1,1,0000000000000000000000000000000g,3",
            "v1,1,+f000000000000000000000000000000,3",
            "v1,1,00000000000000000000000000000000,9",
        ] {
            assert!(PortAddr::decode(bad).is_err(), "{bad}");
        }
        let q = QpAddr {
            qpn: 0x11,
            psn: 0xabcdef,
        };
        assert_eq!(QpAddr::decode(&q.encode()).unwrap(), q);
        for bad in ["", "11", "0,1", "1000000,1", "1,1000000", "x,1", "+1,1"] {
            assert!(QpAddr::decode(bad).is_err(), "{bad}");
        }
    }
}
