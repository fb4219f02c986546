//! Any byte string is either a valid header that re-encodes to the same
//! bytes, or a decode error: never a panic.
#![no_main]

use ferry_core::wire::{Header, MAX_HEADER};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = Header::decode(data) {
        let mut out = [0u8; MAX_HEADER];
        let n = header.encode(&mut out);
        assert_eq!(&out[..n], data, "decode accepted a non-canonical header");
    }
});
