//! The verbs device's immediate decoder (`ferry_verbs_wire::imm`): the 32
//! bits a peer puts in every eager SEND, with the byte count the HCA
//! reports. It may not panic; what it accepts is consistent with the byte
//! count and encodes back to the same 32 bits.
#![no_main]

use ferry_core::wire::MAX_HEADER;
use ferry_verbs_wire::imm::Imm;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut word = [0u8; 4];
    let mut len = [0u8; 4];
    for (i, b) in data.iter().take(8).enumerate() {
        if i < 4 {
            word[i] = *b;
        } else {
            len[i - 4] = *b;
        }
    }
    let imm = u32::from_le_bytes(word);
    let byte_len = u32::from_le_bytes(len) as usize;
    if let Ok(d) = Imm::decode(imm, byte_len) {
        assert!(d.header_len <= MAX_HEADER && d.header_len <= byte_len);
        let again = if d.credit_only {
            assert!(d.header_len == 0 && byte_len == 0);
            Imm::credit(d.credits)
        } else {
            Imm::data(d.header_len, d.credits)
        };
        assert_eq!(again, imm, "decoded {d:?}");
    }
});
