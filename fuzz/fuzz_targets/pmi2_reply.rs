//! Every decoder of bytes a PMI-2 server sends: the length header, the
//! body parser, the reply checks (for every request) and the check of the
//! opening `init` reply. None may panic, and a parsed body that can be
//! re-encoded must parse back to the same message.
#![no_main]

use ferry_pmi::v2::reply::{parse_init_reply, parse_reply, Request};
use ferry_pmi::v2::wire::{encode, parse, parse_body, parse_header, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(msg) = parse_body(data) {
        if let Ok(frame) = encode(&msg) {
            assert_eq!(parse(&frame).as_ref(), Ok(&msg));
        }
    }
    // As a whole frame, and as a header followed by a body.
    let _ = parse(data);
    if data.len() >= HEADER_LEN {
        let _ = parse_header(&data[..HEADER_LEN]);
    }
    for req in Request::ALL {
        let _ = parse_reply(req, data);
    }
    let _ = parse_init_reply(data);
});
