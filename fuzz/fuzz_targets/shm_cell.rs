//! The shm cell decoder on arbitrary bytes: a cell body (as another process
//! may have scribbled it) either decodes to views that lie inside the body
//! and re-encode to the same fields, or is rejected: never a panic or an
//! out-of-bounds slice.
#![no_main]

use ferry_shm::cell::{decode, encode, CellError, HEADER_CAP, PAYLOAD_OFFSET};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the owner the receiver expects (the cell's
    // index decides it, so it is trusted); the rest is the body.
    let Some((&owner, body)) = data.split_first() else {
        return;
    };
    let owner = u32::from(owner % 4);
    match decode(body, owner) {
        Ok(d) => {
            assert_eq!(d.src, owner);
            assert!(d.header.as_ptr() as usize >= body.as_ptr() as usize + 16);
            assert!(d.header.len() <= HEADER_CAP);
            assert!(PAYLOAD_OFFSET + d.payload.len() <= body.len());
            let base = body.as_ptr() as usize;
            assert!(d.payload.as_ptr() as usize >= base + PAYLOAD_OFFSET);
            let mut again = vec![0u8; body.len()];
            encode(&mut again, d.src, d.seq, d.header, d.payload)
                .expect("a decoded cell re-encodes");
            let e = decode(&again, owner).expect("a re-encoded cell decodes");
            assert_eq!((e.seq, e.header, e.payload), (d.seq, d.header, d.payload));
        }
        Err(CellError::Short) => assert!(body.len() < PAYLOAD_OFFSET),
        Err(_) => {}
    }
});
