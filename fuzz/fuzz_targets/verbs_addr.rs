//! The verbs device's connection-address decoders
//! (`ferry_verbs_wire::addr`): the port and QP addresses a peer publishes
//! through the bootstrap key-value store. They may not panic, and what they
//! accept encodes to an address that decodes to the same value.
#![no_main]

use ferry_verbs_wire::addr::{PortAddr, QpAddr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = PortAddr::decode(s) {
        assert!((1..=5).contains(&p.mtu));
        assert_eq!(PortAddr::decode(&p.encode()), Ok(p));
    }
    if let Ok(q) = QpAddr::decode(s) {
        assert!(q.qpn != 0 && q.qpn < 1 << 24 && q.psn < 1 << 24);
        assert_eq!(QpAddr::decode(&q.encode()), Ok(q));
    }
});
