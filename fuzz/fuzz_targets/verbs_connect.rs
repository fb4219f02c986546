//! The verbs device's lazy-connection decoders
//! (`ferry_verbs_wire::connect`): the handshake datagrams any host on the
//! fabric can send to a rank's UD QP, and the published UD address. They
//! may not panic, and what they accept re-encodes to the same value.
#![no_main]

use ferry_verbs_wire::connect::{ConnectMsg, Kind, UdAddr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = ConnectMsg::decode(data) {
        assert!(m.from >= 0 && m.to >= 0);
        match m.kind {
            Kind::Request => assert!(m.qpn != 0 && m.qpn < 1 << 24 && m.psn < 1 << 24),
            Kind::Reply { answers } => {
                assert!(m.qpn != 0 && m.qpn < 1 << 24 && m.psn < 1 << 24);
                assert!(answers != 0 && answers < 1 << 24);
            }
            Kind::Down { rank } => assert!(rank >= 0 && m.qpn == 0 && m.psn == 0),
        }
        assert_eq!(m.encode().as_slice(), data);
    }
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(a) = UdAddr::decode(s) {
            assert!(a.qpn != 0 && a.qpn < 1 << 24 && a.qkey < 1 << 31);
            assert_eq!(UdAddr::decode(&a.encode()), Ok(a));
        }
    }
});
