//! The protocol table: which protocol carries a message of a given size to a
//! given peer. Built once per peer at setup from the device caps and the
//! [`Config`]; the send path only compares the size with two thresholds.

use crate::config::{Config, RndvMode};
use crate::device::Caps;

/// A protocol for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Data travels with the header.
    Eager,
    /// RTS; the receiver RDMA-reads; FIN to the sender.
    RndvGet,
    /// RTS; CTS with the receiver's key; the sender RDMA-writes; FIN.
    RndvPut,
    /// RTS; CTS; the sender sends fragments the receiver copies in.
    Fragmented,
}

/// Thresholds for one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolTable {
    /// At most this many bytes: eager.
    pub eager_max: usize,
    /// At least this many bytes (and above `eager_max`): `rdma`.
    pub rdma_min: usize,
    /// The RDMA protocol, or `Fragmented` when the device has none.
    pub rdma: Protocol,
    /// Fragment size for `Fragmented`.
    pub fragment: usize,
}

impl ProtocolTable {
    /// Builds the table for a peer with these caps.
    pub fn new(caps: &Caps, config: &Config) -> ProtocolTable {
        let eager_max = config
            .eager_limit
            .unwrap_or(caps.eager_preferred)
            .min(caps.max_payload);
        let rdma = match config.rndv_mode {
            RndvMode::Auto if caps.rdma_get => Protocol::RndvGet,
            RndvMode::Auto if caps.rdma_put => Protocol::RndvPut,
            RndvMode::Get if caps.rdma_get => Protocol::RndvGet,
            RndvMode::Put if caps.rdma_put => Protocol::RndvPut,
            _ => Protocol::Fragmented,
        };
        ProtocolTable {
            eager_max,
            rdma_min: config.rdma_threshold,
            rdma,
            fragment: config.fragment_size.clamp(1, caps.max_payload.max(1)),
        }
    }

    /// The protocol for a message of `len` bytes. `credit` is false when the
    /// peer has no eager credit left, which forces rendezvous.
    #[inline]
    pub fn select(&self, len: usize, credit: bool) -> Protocol {
        if len <= self.eager_max && credit {
            Protocol::Eager
        } else if len >= self.rdma_min {
            self.rdma
        } else {
            Protocol::Fragmented
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(get: bool, put: bool) -> Caps {
        Caps {
            name: "t",
            max_payload: 4096,
            eager_preferred: 8192,
            rdma_get: get,
            rdma_put: put,
            wait_fd: false,
        }
    }

    #[test]
    fn sizes_on_both_sides_of_each_threshold() {
        let config = Config {
            eager_limit: Some(1024),
            rdma_threshold: 65536,
            ..Config::default()
        };
        let t = ProtocolTable::new(&caps(true, true), &config);
        assert_eq!(t.select(0, true), Protocol::Eager);
        assert_eq!(t.select(1024, true), Protocol::Eager);
        assert_eq!(t.select(1025, true), Protocol::Fragmented);
        assert_eq!(t.select(65535, true), Protocol::Fragmented);
        assert_eq!(t.select(65536, true), Protocol::RndvGet);
        assert_eq!(
            t.select(8, false),
            Protocol::Fragmented,
            "no credit forces rendezvous"
        );
    }

    #[test]
    fn eager_limit_is_clamped_to_the_device() {
        let config = Config {
            eager_limit: Some(1 << 20),
            ..Config::default()
        };
        let t = ProtocolTable::new(&caps(false, false), &config);
        assert_eq!(t.eager_max, 4096);
        assert_eq!(t.select(1 << 20, true), Protocol::Fragmented);
        assert_eq!(t.fragment, 4096);
    }

    #[test]
    fn unset_the_device_chooses_the_eager_limit_and_a_setting_overrides_it() {
        let device = Caps {
            max_payload: 64 * 1024,
            eager_preferred: 32 * 1024,
            ..caps(false, false)
        };
        let unset = ProtocolTable::new(&device, &Config::default());
        assert_eq!(unset.eager_max, 32 * 1024);
        for (set, want) in [(1024, 1024), (48 * 1024, 48 * 1024), (1 << 20, 64 * 1024)] {
            let config = Config {
                eager_limit: Some(set),
                ..Config::default()
            };
            assert_eq!(
                ProtocolTable::new(&device, &config).eager_max,
                want,
                "{set}"
            );
        }
    }

    #[test]
    fn mode_falls_back_to_what_the_device_has() {
        let put = Config {
            rndv_mode: RndvMode::Put,
            ..Config::default()
        };
        assert_eq!(
            ProtocolTable::new(&caps(true, true), &put).rdma,
            Protocol::RndvPut
        );
        assert_eq!(
            ProtocolTable::new(&caps(true, false), &put).rdma,
            Protocol::Fragmented
        );
        let auto = Config::default();
        assert_eq!(
            ProtocolTable::new(&caps(false, true), &auto).rdma,
            Protocol::RndvPut
        );
    }
}
