//! Lazy connections (`qp.rs`, `connect.rs`): a peer is connected on first
//! use over the UD handshake, and only that peer.

use std::time::{Duration, Instant};

use ferry_core::device::{Armed, Device, Sent};
use ferry_core::recorder::Recorder;
use ferry_core::{Error, PeerError, Rank};
use ferry_verbs_wire::connect::{ConnectMsg, Kind};

use super::{lazy_devices, poll_in, rdma_present, small, DEADLINE};
use crate::{VerbsDevice, VerbsOptions};

/// Small pools and no keepalives: no observer ring (`observe.rs`), so the
/// only connections are the ones the test makes.
fn quiet() -> VerbsOptions {
    VerbsOptions {
        keepalive_ms: 0,
        ..small()
    }
}

/// Progresses every device once.
fn progress_all(devs: &mut [VerbsDevice], sinks: &mut [Recorder]) {
    for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
        d.progress(s).unwrap();
    }
}

/// Sends `msgs` from `from` to `to` in order, retrying `Busy` (as the
/// engine's outbox does) while progressing every device.
fn send_all(devs: &mut [VerbsDevice], sinks: &mut [Recorder], from: usize, to: Rank, msgs: u32) {
    let start = Instant::now();
    for m in 0..msgs {
        while devs[from].send(to, &m.to_le_bytes(), b"lazy").unwrap() == Sent::Busy {
            progress_all(devs, sinks);
            assert!(start.elapsed() < DEADLINE, "send {m} stayed Busy");
        }
    }
}

#[test]
fn the_first_send_connects_that_peer_only_and_queued_sends_keep_their_order() {
    if !rdma_present("the_first_send_connects_that_peer_only") {
        return;
    }
    let mut devs = lazy_devices(4, quiet());
    let mut sinks: Vec<Recorder> = (0..4).map(|_| Recorder::default()).collect();
    for d in &devs {
        let f = d.footprint();
        assert_eq!((f.connected, f.qps, f.srq_posted), (0, 1, 0), "{f:?}");
    }
    // The first send starts the handshake and is pushed back.
    assert_eq!(
        devs[0].send(2, &0u32.to_le_bytes(), b"lazy").unwrap(),
        Sent::Busy
    );
    assert!(!devs[0].is_connected(2));
    send_all(&mut devs, &mut sinks, 0, 2, 20);
    let start = Instant::now();
    while sinks[2].packets().len() < 20 {
        progress_all(&mut devs, &mut sinks);
        assert!(start.elapsed() < DEADLINE);
    }
    let got: Vec<u32> = sinks[2]
        .packets()
        .iter()
        .map(|(from, h, _)| {
            assert_eq!(*from, 0);
            u32::from_le_bytes(h[..4].try_into().unwrap())
        })
        .collect();
    assert_eq!(got, (0..20).collect::<Vec<_>>(), "in order, each once");
    let f: Vec<_> = devs.iter().map(VerbsDevice::footprint).collect();
    eprintln!("footprints after 0 -> 2: {f:#?}");
    // Ranks 0 and 2: one RC QP each (plus the UD QP); 1 and 3: none.
    for (r, want) in [(0, 1), (1, 0), (2, 1), (3, 0)] {
        assert_eq!(f[r].connected, want, "rank {r}: {:?}", f[r]);
        assert_eq!(f[r].qps, want + 1, "rank {r}: {:?}", f[r]);
        assert_eq!(
            f[r].srq_posted,
            want * 6,
            "rank {r}: C + 2 buffers per connection"
        );
    }
    assert!(f[1].registered_bytes < f[0].registered_bytes);
    assert!(devs[2].is_connected(0) && !devs[2].is_connected(1));
    // Rank 2 answers over the same connection: no new handshake.
    send_all(&mut devs, &mut sinks, 2, 0, 3);
    assert_eq!(devs[2].footprint().connected, 1);
    // Self-traffic: the loopback pair, made at first use (two QPs).
    send_all(&mut devs, &mut sinks, 1, 1, 1);
    assert_eq!(devs[1].footprint().qps, 3);
    assert!(sinks.iter().all(|s| s.failures().is_empty()));
}

#[test]
fn simultaneous_connects_end_with_one_qp_per_side() {
    if !rdma_present("simultaneous_connects_end_with_one_qp_per_side") {
        return;
    }
    for round in 0..3 {
        let mut devs = lazy_devices(2, small());
        let mut sinks = [Recorder::default(), Recorder::default()];
        // Both ask before either has progressed.
        assert_eq!(devs[0].send(1, b"a", b"0").unwrap(), Sent::Busy);
        assert_eq!(devs[1].send(0, b"b", b"1").unwrap(), Sent::Busy);
        // Vary who progresses first.
        if round == 1 {
            for _ in 0..50 {
                devs[1].progress(&mut sinks[1]).unwrap();
            }
        }
        let start = Instant::now();
        while !(devs[0].is_connected(1) && devs[1].is_connected(0)) {
            progress_all(&mut devs, &mut sinks);
            assert!(start.elapsed() < DEADLINE, "round {round}: never connected");
        }
        for d in &devs {
            assert_eq!(
                d.footprint().qps,
                2,
                "round {round}: one RC QP and the UD QP"
            );
        }
        send_all(&mut devs, &mut sinks, 0, 1, 5);
        send_all(&mut devs, &mut sinks, 1, 0, 5);
        let start = Instant::now();
        while sinks[0].packets().len() < 5 || sinks[1].packets().len() < 5 {
            progress_all(&mut devs, &mut sinks);
            assert!(start.elapsed() < DEADLINE, "round {round}: traffic stalled");
        }
        assert!(sinks.iter().all(|s| s.failures().is_empty()));
    }
}

#[test]
fn a_peer_that_never_answers_fails_with_a_typed_error_in_bounded_time() {
    if !rdma_present("a_peer_that_never_answers") {
        return;
    }
    let opts = VerbsOptions {
        connect_ms: 500,
        ..small()
    };
    let mut devs = lazy_devices(2, opts);
    // Rank 1 is alive but never progresses: its UD QP receives the
    // requests, and nobody answers them.
    let mut sink = Recorder::default();
    let t0 = Instant::now();
    assert_eq!(devs[0].send(1, b"h", b"p").unwrap(), Sent::Busy);
    let mut sleeps = 0;
    while sink.failures().is_empty() {
        devs[0].progress(&mut sink).unwrap();
        // Passive waiting: the handshake timer wakes the sleeper.
        match devs[0].arm().unwrap() {
            Armed::Pending => devs[0].disarm(),
            Armed::Sleep => {
                sleeps += 1;
                poll_in(&devs[0], 5_000);
                devs[0].disarm();
            }
        }
        assert!(t0.elapsed() < DEADLINE, "the handshake never gave up");
    }
    let took = t0.elapsed();
    eprintln!("gave up after {took:?} ({sleeps} sleeps)");
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(5));
    assert!(sleeps > 0, "it slept between retransmissions");
    assert!(matches!(
        sink.failures()[0],
        (1, Error::Peer(PeerError::Died { rank: 1 }))
    ));
    assert!(matches!(
        devs[0].send(1, b"h", b"p"),
        Err(Error::Peer(PeerError::Died { rank: 1 }))
    ));
}

#[test]
fn corrupted_and_stale_datagrams_are_dropped() {
    if !rdma_present("corrupted_and_stale_datagrams_are_dropped") {
        return;
    }
    let mut devs = lazy_devices(2, quiet());
    let mut sinks = [Recorder::default(), Recorder::default()];
    let good = ConnectMsg {
        kind: Kind::Request,
        from: 0,
        to: 1,
        from_nonce: devs[0].ud.me().nonce,
        to_nonce: devs[1].ud.addr(1).unwrap().nonce,
        qpn: 0x123,
        psn: 7,
    };
    let mut garbage = good.encode();
    garbage[4] = 9; // no such kind
    let stale = ConnectMsg {
        to_nonce: good.to_nonce ^ 1, // an earlier instance of rank 1
        ..good
    };
    let wrong_rank = ConnectMsg { to: 0, ..good };
    let datagrams: [&[u8]; 5] = [
        &garbage,
        &stale.encode(),
        &wrong_rank.encode(),
        b"not a datagram",
        &[],
    ];
    let d0 = &mut devs[0];
    let mut sent = 0;
    for d in datagrams {
        // 5 datagrams fit the 16 send slots.
        assert!(d0.ud.send_bytes(&d0.pd, &d0.sel, 1, d).unwrap());
        sent += 1;
    }
    let start = Instant::now();
    while devs[1].dropped_datagrams() < sent {
        progress_all(&mut devs, &mut sinks);
        assert!(
            start.elapsed() < DEADLINE,
            "dropped {}",
            devs[1].dropped_datagrams()
        );
    }
    assert_eq!(devs[1].footprint().connected, 0, "nothing was connected");
    assert!(
        sinks.iter().all(|s| s.events.is_empty()),
        "nothing reported"
    );
    // The endpoint still works.
    send_all(&mut devs, &mut sinks, 0, 1, 1);
    let start = Instant::now();
    while sinks[1].packets().is_empty() {
        progress_all(&mut devs, &mut sinks);
        assert!(start.elapsed() < DEADLINE);
    }
}

/// A rank asleep on its wait fd is woken by a peer's connect request (the
/// UD QP shares the CQ and its channel), answers it, and the peer's
/// queued send then goes through.
#[test]
fn a_sleeping_rank_wakes_for_a_connect_request() {
    if !rdma_present("a_sleeping_rank_wakes_for_a_connect_request") {
        return;
    }
    let mut devs = lazy_devices(2, quiet());
    let mut sinks = [Recorder::default(), Recorder::default()];
    devs[1].progress(&mut sinks[1]).unwrap();
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    assert!(!poll_in(&devs[1], 0), "nothing to wake for yet");
    assert_eq!(devs[0].send(1, b"h", b"wake").unwrap(), Sent::Busy);
    assert!(poll_in(&devs[1], 10_000), "the request wakes the sleeper");
    devs[1].disarm();
    let start = Instant::now();
    while devs[0].send(1, b"h", b"wake").unwrap() == Sent::Busy {
        progress_all(&mut devs, &mut sinks);
        assert!(start.elapsed() < DEADLINE);
    }
    while sinks[1].packets().is_empty() {
        progress_all(&mut devs, &mut sinks);
        assert!(start.elapsed() < DEADLINE);
    }
    assert_eq!(sinks[1].packets()[0].2, b"wake".to_vec());
}

/// The observer ring (`observe.rs`): with 4 ranks, 0 observes 1, 1
/// observes 2, 2 observes 3 and 3 observes 0, so rank 3 has no connection
/// to rank 1. When rank 1 dies, rank 0's probe finds out and its down
/// notice tells rank 3, asleep on its wait fd.
#[test]
fn a_rank_learns_of_the_death_of_a_peer_it_never_talked_to() {
    if !rdma_present("a_rank_learns_of_the_death_of_a_peer_it_never_talked_to") {
        return;
    }
    let opts = VerbsOptions {
        timeout: 14,
        retry: 3,
        keepalive_ms: 200,
        ..small()
    };
    let mut devs = lazy_devices(4, opts);
    let mut sinks: Vec<Recorder> = (0..4).map(|_| Recorder::default()).collect();
    let start = Instant::now();
    while !(0..4).all(|r| devs[r].is_connected(((r + 1) % 4) as Rank)) {
        progress_all(&mut devs, &mut sinks);
        assert!(start.elapsed() < DEADLINE, "the ring never connected");
    }
    for d in &devs {
        assert!(d.footprint().connected <= 2, "{:?}", d.footprint());
    }
    assert!(!devs[3].is_connected(1) && devs[3].footprint().connected == 2);
    drop(devs.remove(1)); // rank 1 dies
    let mut rest = devs;
    let (t0, mut sleeps) = (Instant::now(), 0);
    let mut s3 = Recorder::default();
    let mut s0 = Recorder::default();
    while s3.failures().is_empty() {
        // Rank 0 probes; rank 2 too (it is rank 1's observed peer).
        rest[0].progress(&mut s0).unwrap();
        rest[1].progress(&mut sinks[2]).unwrap();
        rest[2].progress(&mut s3).unwrap();
        if !s3.failures().is_empty() {
            break;
        }
        match rest[2].arm().unwrap() {
            Armed::Pending => rest[2].disarm(),
            Armed::Sleep => {
                sleeps += 1;
                poll_in(&rest[2], 20);
                rest[2].disarm();
            }
        }
        assert!(t0.elapsed() < DEADLINE, "rank 3 never heard");
    }
    eprintln!(
        "rank 3 heard of rank 1's death after {:?} ({sleeps} sleeps)",
        t0.elapsed()
    );
    assert!(matches!(
        s3.failures()[0],
        (1, Error::Peer(PeerError::Died { rank: 1 }))
    ));
    assert!(
        !rest[2].is_connected(1),
        "through a notice, not a connection"
    );
    // Rank 3 still talks to rank 0.
    assert!(rest[2].is_connected(0));
}
