//! The shm fastbox decoder and sequencer on arbitrary bytes: a slot (its
//! control word and data, as another process may have scribbled them)
//! either decodes to views inside the data that re-encode to the same
//! control word, or is rejected; the sequence judgement never panics and
//! stays inside its window. Never a panic or an out-of-bounds slice.
#![no_main]

use ferry_shm::fastbox::{decode, encode, order, seq_of, Order, SlotError, HEADER_CAP};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // 8 bytes of control word, 4 of expected sequence, 2 of window; the
    // rest is the slot's data.
    if data.len() < 14 {
        return;
    }
    let ctrl = u64::from_le_bytes(data[..8].try_into().unwrap());
    let expected = u32::from_le_bytes(data[8..12].try_into().unwrap());
    let window = u32::from(u16::from_le_bytes(data[12..14].try_into().unwrap()));
    let slot = &data[14..];
    match order(seq_of(ctrl), expected, window) {
        Order::Now => assert_eq!(seq_of(ctrl), expected),
        Order::Later(gap) => {
            assert!(gap >= 1 && gap <= window);
            assert_eq!(expected.wrapping_add(gap), seq_of(ctrl));
        }
        Order::Bad => {}
    }
    match decode(ctrl, slot) {
        Ok(s) => {
            assert_eq!(s.seq, seq_of(ctrl));
            assert!(s.header.len() <= HEADER_CAP);
            assert!(s.header.len() + s.payload.len() <= slot.len());
            let base = slot.as_ptr() as usize;
            assert_eq!(s.header.as_ptr() as usize, base);
            assert_eq!(s.payload.as_ptr() as usize, base + s.header.len());
            let mut again = vec![0u8; slot.len()];
            let word = encode(&mut again, s.seq, s.header, s.payload)
                .expect("a decoded slot re-encodes");
            assert_eq!(word, ctrl, "the control word round-trips");
            let e = decode(word, &again).expect("a re-encoded slot decodes");
            assert_eq!((e.header, e.payload), (s.header, s.payload));
        }
        Err(SlotError::Empty) => assert_eq!(ctrl >> 63, 0),
        Err(_) => {}
    }
});
