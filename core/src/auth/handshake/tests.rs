//! The handshake's unit tests: a good exchange, and each way to forge one.

use super::*;

const JOB: &str = "job-1";

fn secret(b: u8) -> JobSecret {
    JobSecret::from_bytes([b; 32])
}

/// Rank 0 (connector) and rank 1 (acceptor, which expects rank 0).
fn pair(connector_secret: u8, acceptor_secret: u8) -> (Gate, Gate) {
    (
        Gate::new(secret(connector_secret), JOB, 0, [], [10; 32]),
        Gate::new(secret(acceptor_secret), JOB, 1, [0], [11; 32]),
    )
}

fn sent(step: AcceptStep) -> Vec<u8> {
    match step {
        AcceptStep::Send(b) => b,
        other => panic!("expected bytes to send, got {other:?}"),
    }
}

fn proof(step: ConnectStep) -> Vec<u8> {
    match step {
        ConnectStep::Send(b) => b,
        other => panic!("expected a proof, got {other:?}"),
    }
}

#[test]
fn a_good_handshake_authenticates_both_sides() {
    let (mut c, mut a) = pair(1, 1);
    let (mut conn, hello) = c.connect(1);
    let mut acc = a.accept();
    let challenge = sent(acc.receive(&mut a, &hello).unwrap());
    assert_eq!(acc.claimed(), Some(0));
    let p = proof(conn.receive(&c, &challenge).unwrap());
    let AcceptStep::Authenticated { peer, welcome } = acc.receive(&mut a, &p).unwrap() else {
        panic!("the proof did not authenticate");
    };
    assert_eq!(peer, 0);
    assert_eq!(conn.receive(&c, &welcome).unwrap(), ConnectStep::Welcomed);
}

#[test]
fn messages_may_arrive_a_byte_at_a_time() {
    let (mut c, mut a) = pair(1, 1);
    let (mut conn, hello) = c.connect(1);
    let mut acc = a.accept();
    let mut challenge = None;
    for (i, b) in hello.iter().enumerate() {
        match acc.receive(&mut a, &[*b]).unwrap() {
            AcceptStep::NeedMore => assert!(i + 1 < hello.len()),
            AcceptStep::Send(bytes) => challenge = Some(bytes),
            other => panic!("{other:?}"),
        }
    }
    let challenge = challenge.expect("a challenge after the whole hello");
    let mut p = None;
    for b in &challenge {
        if let ConnectStep::Send(bytes) = conn.receive(&c, &[*b]).unwrap() {
            p = Some(bytes);
        }
    }
    assert!(matches!(
        acc.receive(&mut a, &p.unwrap()).unwrap(),
        AcceptStep::Authenticated { peer: 0, .. }
    ));
}

#[test]
fn a_wrong_secret_is_refused_on_both_sides() {
    // The acceptor holds another secret: the connector refuses its challenge
    // and never sends a proof.
    let (mut c, mut a) = pair(1, 2);
    let (mut conn, hello) = c.connect(1);
    let mut acc = a.accept();
    let challenge = sent(acc.receive(&mut a, &hello).unwrap());
    assert_eq!(
        conn.receive(&c, &challenge),
        Err(Refusal::BadMac { from: 1 })
    );
    // A connector with another secret that sends a proof anyway (it skips
    // checking the challenge, as an attacker would): the acceptor refuses.
    let (mut c, mut a) = pair(2, 1);
    let (_, hello) = c.connect(1);
    let mut acc = a.accept();
    let Message::Challenge { nonce, .. } =
        Message::decode(&sent(acc.receive(&mut a, &hello).unwrap()))
            .unwrap()
            .unwrap()
            .0
    else {
        panic!("not a challenge")
    };
    let Message::Hello { nonce: n_c, .. } = Message::decode(&hello).unwrap().unwrap().0 else {
        panic!("not a hello")
    };
    let forged = Message::Proof {
        from: 0,
        to: 1,
        mac: c.tag(CONNECT, 0, 1, &n_c, &nonce),
    };
    assert_eq!(
        acc.receive(&mut a, &forged.encode()),
        Err(Refusal::BadMac { from: 0 })
    );
}

#[test]
fn another_jobs_secret_holder_is_refused() {
    let mut c = Gate::new(secret(1), "job-2", 0, [], [10; 32]);
    let mut a = Gate::new(secret(1), JOB, 1, [0], [11; 32]);
    let (mut conn, hello) = c.connect(1);
    let challenge = sent(a.accept().receive(&mut a, &hello).unwrap());
    assert_eq!(
        conn.receive(&c, &challenge),
        Err(Refusal::BadMac { from: 1 })
    );
}

#[test]
fn wrong_ranks_are_refused() {
    // A rank the acceptor does not expect (rank 2 may not connect to 1).
    let (_, mut a) = pair(1, 1);
    let mut c2 = Gate::new(secret(1), JOB, 2, [], [12; 32]);
    let (_, hello) = c2.connect(1);
    assert_eq!(
        a.accept().receive(&mut a, &hello),
        Err(Refusal::WrongRank { from: 2 })
    );
    // A hello for another acceptor.
    let (mut c, mut a) = pair(1, 1);
    let (_, hello) = c.connect(3);
    assert_eq!(
        a.accept().receive(&mut a, &hello),
        Err(Refusal::WrongDestination { to: 3 })
    );
    // A proof that switches ranks after the hello.
    let mut a = Gate::new(secret(1), JOB, 2, [0, 1], [11; 32]);
    let mut c = Gate::new(secret(1), JOB, 0, [], [10; 32]);
    let (mut conn, hello) = c.connect(2);
    let mut acc = a.accept();
    let challenge = sent(acc.receive(&mut a, &hello).unwrap());
    let Message::Proof { mac, .. } = Message::decode(&proof(conn.receive(&c, &challenge).unwrap()))
        .unwrap()
        .unwrap()
        .0
    else {
        panic!("not a proof")
    };
    let switched = Message::Proof {
        from: 1,
        to: 2,
        mac,
    };
    assert_eq!(
        acc.receive(&mut a, &switched.encode()),
        Err(Refusal::WrongRank { from: 1 })
    );
    // The connector refuses a challenge from a rank it did not call.
    let (mut c, mut a) = pair(1, 1);
    let (mut conn, _) = c.connect(5);
    let (_, hello) = c.connect(1);
    let challenge = sent(a.accept().receive(&mut a, &hello).unwrap());
    assert_eq!(
        conn.receive(&c, &challenge),
        Err(Refusal::WrongRank { from: 1 })
    );
}

#[test]
fn replays_are_refused() {
    let (mut c, mut a) = pair(1, 1);
    let (mut conn, hello) = c.connect(1);
    let mut acc = a.accept();
    let challenge = sent(acc.receive(&mut a, &hello).unwrap());
    let p = proof(conn.receive(&c, &challenge).unwrap());
    assert!(matches!(
        acc.receive(&mut a, &p).unwrap(),
        AcceptStep::Authenticated { .. }
    ));
    // The recorded hello again, on a new connection: its nonce was seen.
    assert_eq!(
        a.accept().receive(&mut a, &hello),
        Err(Refusal::Replayed { from: 0 })
    );
    // A recorded hello with a fresh nonce and the recorded proof: the
    // acceptor's new nonce makes the proof worthless.
    let mut fresh = hello.clone();
    fresh[HEADER_LEN] ^= 1;
    let mut acc = a.accept();
    sent(acc.receive(&mut a, &fresh).unwrap());
    assert_eq!(acc.receive(&mut a, &p), Err(Refusal::BadMac { from: 0 }));
    // The acceptor's challenge reflected as a proof: another label.
    let mut acc = a.accept();
    let mut again = hello.clone();
    again[HEADER_LEN] ^= 2;
    let Message::Challenge { mac, .. } =
        Message::decode(&sent(acc.receive(&mut a, &again).unwrap()))
            .unwrap()
            .unwrap()
            .0
    else {
        panic!("not a challenge")
    };
    let reflected = Message::Proof {
        from: 0,
        to: 1,
        mac,
    };
    assert_eq!(
        acc.receive(&mut a, &reflected.encode()),
        Err(Refusal::BadMac { from: 0 })
    );
}

#[test]
fn truncated_trailing_and_garbage_bytes() {
    let (mut c, mut a) = pair(1, 1);
    let (_, hello) = c.connect(1);
    // Every strict prefix is incomplete, never an error nor a message.
    for n in 0..hello.len() {
        assert_eq!(Message::decode(&hello[..n]), Ok(None), "prefix of {n}");
    }
    // A truncated hello keeps the acceptor waiting (the caller's deadline
    // then closes the connection); nothing is authenticated.
    let mut acc = a.accept();
    assert_eq!(acc.receive(&mut a, &hello[..20]), Ok(AcceptStep::NeedMore));
    assert_eq!(acc.claimed(), None);
    // A hello with bytes after it: the protocol is lock-step.
    let mut long = hello.clone();
    long.push(0);
    assert_eq!(a.accept().receive(&mut a, &long), Err(Refusal::Trailing(1)));
    // The old liveness handshake (4 bytes of rank) and other garbage.
    assert_eq!(
        a.accept().receive(&mut a, &0u32.to_le_bytes()),
        Err(Refusal::Malformed(Malformed::Magic))
    );
    let mut bad = hello.clone();
    bad[4] = 9;
    assert_eq!(
        a.accept().receive(&mut a, &bad),
        Err(Refusal::Malformed(Malformed::Version(9)))
    );
    bad[4] = VERSION;
    bad[5] = 7;
    assert_eq!(
        a.accept().receive(&mut a, &bad),
        Err(Refusal::Malformed(Malformed::Kind(7)))
    );
    // A connector sent a welcome before anything: unexpected.
    let w = Message::Welcome { from: 0, to: 1 }.encode();
    assert_eq!(
        a.accept().receive(&mut a, &w),
        Err(Refusal::Unexpected("welcome"))
    );
}

#[test]
fn encode_decode_round_trip() {
    let ms = [
        Message::Hello {
            from: 1,
            to: 2,
            nonce: [3; 32],
        },
        Message::Challenge {
            from: u32::MAX,
            to: 0,
            nonce: [4; 32],
            mac: [5; 32],
        },
        Message::Proof {
            from: 7,
            to: 8,
            mac: [6; 32],
        },
        Message::Welcome { from: 9, to: 10 },
    ];
    for m in ms {
        let b = m.encode();
        assert_eq!(Message::decode(&b), Ok(Some((m, b.len()))));
    }
}
