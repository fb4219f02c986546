//! The side-channel handshake's decoder and both of its state machines
//! (`ferry_core::auth::handshake`), fed bytes an intruder chooses: the
//! bytes split at every point the input asks for. Nothing may panic, a
//! decoded message must re-encode to the same bytes, and no input may
//! authenticate (the fuzzer does not hold the secret), whichever side it
//! talks to.
#![no_main]

use ferry_core::auth::handshake::{AcceptStep, ConnectStep, Gate, Message};
use ferry_core::auth::JobSecret;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((m, len))) = Message::decode(data) {
        assert_eq!(m.encode(), &data[..len]);
    }
    // The first byte picks where the stream is cut into reads.
    let (cut, bytes) = match data.split_first() {
        Some((c, rest)) => (usize::from(*c).max(1), rest),
        None => return,
    };
    let secret = JobSecret::from_bytes([0x42; 32]);
    let mut acceptor_gate = Gate::new(secret.clone(), "fuzz", 1, [0], [1; 32]);
    let mut acceptor = acceptor_gate.accept();
    for chunk in bytes.chunks(cut) {
        match acceptor.receive(&mut acceptor_gate, chunk) {
            Ok(AcceptStep::Authenticated { .. }) => panic!("authenticated without the secret"),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let mut connector_gate = Gate::new(secret, "fuzz", 0, [], [2; 32]);
    let (mut connector, _hello) = connector_gate.connect(1);
    for chunk in bytes.chunks(cut) {
        match connector.receive(&connector_gate, chunk) {
            Ok(ConnectStep::Send(_)) => panic!("a proof for a challenge without the secret"),
            Ok(ConnectStep::Welcomed) => panic!("welcomed without a challenge"),
            Ok(ConnectStep::NeedMore) => {}
            Err(_) => break,
        }
    }
});
