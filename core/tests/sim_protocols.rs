//! Protocol-level simulation tests of the engine: which protocol carries a
//! message of each size, truncation, send modes, ARecv, the probe family,
//! persistent requests, eager credits and device back-pressure.
//!
//! Every transfer is checked byte for byte, and the sender's counters (plus
//! packet and RDMA counts on the simulated network) prove which protocol
//! actually ran, so a test cannot pass by falling back to another path.

mod common_protocols;

use common_protocols::*;
use ferry_core::protocol::Protocol;
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{
    Buf, Caps, Completion, Config, Error, Rank, Request, RndvMode, SendMode, Status, Tag,
    UsageError, ANY_SOURCE, ANY_TAG,
};

/// Sizes on both sides of the eager limit, the fragment size and the RDMA
/// threshold, plus one far beyond all of them.
#[rustfmt::skip]
const SIZES: [usize; 14] =
    [0, 1, E - 1, E, E + 1, F - 1, F, F + 1, 3 * F, R - 1, R, R + 1, 8 * F, MIB];

/// Packets each protocol sends on 0 -> 1 and 1 -> 0 when `moved` bytes land:
/// eager data; RTS, FIN back (get); RTS, CTS back, FIN (put); RTS, CTS back,
/// fragments (fragmented).
fn packets_for(proto: Proto, moved: usize) -> (u64, u64) {
    match proto {
        Proto::Eager => (1, 0),
        Proto::Get => (1, 1),
        Proto::Put => (2, 1),
        Proto::Frag => (1 + moved.div_ceil(F) as u64, 1),
    }
}

fn table_proto(sim: &mut Sim, len: usize) -> Proto {
    match sim.engine(0).protocol_table(1).unwrap().select(len, true) {
        Protocol::Eager => Proto::Eager,
        Protocol::RndvGet => Proto::Get,
        Protocol::RndvPut => Proto::Put,
        Protocol::Fragmented => Proto::Frag,
    }
}

fn check_sizes(mode: RndvMode) {
    let config = config(mode);
    let variants = [
        caps(true, true),
        caps(true, false),
        caps(false, true),
        caps(false, false),
    ];
    for (v, caps) in variants.into_iter().enumerate() {
        let mut sim = sim2(caps.clone(), config.clone(), 100 + v as u64);
        for (i, &len) in SIZES.iter().enumerate() {
            let want = expected_proto(len, &config, &caps);
            let w = format!(
                "{mode:?} get {} put {} len {len}",
                caps.rdma_get, caps.rdma_put
            );
            assert_eq!(table_proto(&mut sim, len), want, "{w}: the engine's table");
            for prepost in [true, false] {
                let d = transfer(&mut sim, len, len, i as Tag, prepost);
                assert_eq!(d.proto, want, "{w} prepost {prepost}");
                assert_eq!((d.recv.bytes, d.recv.error), (len, None), "{w}");
                assert_eq!(d.packets, packets_for(want, len), "{w}: packets");
                let rdma = matches!(want, Proto::Get | Proto::Put);
                let (by_rdma, by_wire) = if rdma { (len, 0) } else { (0, len) };
                assert_eq!(d.rdma_bytes, by_rdma as u64, "{w}");
                assert_eq!(d.wire_bytes, by_wire as u64, "{w}");
            }
        }
    }
}

#[test]
fn sizes_across_thresholds_auto() {
    check_sizes(RndvMode::Auto);
}

#[test]
fn sizes_across_thresholds_get() {
    check_sizes(RndvMode::Get);
}

#[test]
fn sizes_across_thresholds_put() {
    check_sizes(RndvMode::Put);
}

#[test]
fn sizes_across_thresholds_fragmented() {
    check_sizes(RndvMode::Fragmented);
}

#[test]
fn zero_rdma_threshold_sends_every_rendezvous_by_rdma() {
    let config = Config {
        rdma_threshold: 0,
        ..config(RndvMode::Auto)
    };
    let mut sim = sim2(caps(true, true), config, 5);
    for (tag, len) in [(1, E + 1), (2, F - 1), (3, R - 1)] {
        assert_eq!(
            transfer(&mut sim, len, len, tag, true).proto,
            Proto::Get,
            "len {len}"
        );
    }
}

#[test]
fn eager_limit_is_clamped_to_the_link_payload() {
    let small = Caps {
        max_payload: 4096,
        eager_preferred: 8192,
        ..caps(true, true)
    };
    let config = Config {
        eager_limit: Some(MIB),
        ..config(RndvMode::Auto)
    };
    let mut sim = sim2(small, config, 6);
    assert_eq!(transfer(&mut sim, 4096, 4096, 1, false).proto, Proto::Eager);
    assert_eq!(transfer(&mut sim, 4097, 4097, 2, false).proto, Proto::Frag);
    assert_eq!(transfer(&mut sim, R, R, 3, false).proto, Proto::Get);
}

#[test]
fn truncation_in_every_protocol_stays_inside_the_buffer() {
    let cases = [
        (Proto::Eager, RndvMode::Auto, caps(true, true), 800),
        (Proto::Get, RndvMode::Get, caps(true, true), 3 * R),
        (Proto::Put, RndvMode::Put, caps(true, true), 3 * R),
        (Proto::Frag, RndvMode::Fragmented, caps(true, true), 3 * R),
        (Proto::Frag, RndvMode::Auto, caps(false, false), 3 * R),
    ];
    for (k, (want, mode, caps, len)) in cases.into_iter().enumerate() {
        let mut sim = sim2(caps, config(mode), 200 + k as u64);
        // A partial last fragment, an exact fragment multiple, one byte
        // short, and no room at all.
        let caps = [len / 3 + 5, 2 * F, len - 1, 0]
            .into_iter()
            .filter(|&c| c < len);
        for (t, cap) in caps.enumerate() {
            for prepost in [true, false] {
                let w = format!("{want:?} len {len} cap {cap} prepost {prepost}");
                let d = transfer(&mut sim, len, cap, t as Tag, prepost);
                assert_eq!(d.proto, want, "{w}");
                let err = d.recv.error.unwrap_or_else(|| panic!("{w}: no error"));
                assert!(err.is_truncation(), "{w}: {err:?}");
                let truncated = UsageError::Truncated {
                    message: len,
                    capacity: cap,
                };
                assert_eq!(err, Error::Usage(truncated), "{w}");
                assert_eq!(d.recv.bytes, cap, "{w}: bytes");
                assert_eq!(d.bytes.len(), cap + SLACK, "{w}");
                // Rendezvous moves only what fits; eager data came whole.
                let moved = if want == Proto::Eager { len } else { cap } as u64;
                match want {
                    Proto::Get | Proto::Put => assert_eq!(d.rdma_bytes, moved, "{w}"),
                    _ => assert_eq!(d.wire_bytes, moved, "{w}"),
                }
                assert_eq!(d.packets.0, packets_for(want, cap).0, "{w}: packets");
            }
        }
    }
}

#[test]
fn synchronous_send_completes_only_after_the_match() {
    for mode in [RndvMode::Auto, RndvMode::Put, RndvMode::Fragmented] {
        let mut sim = sim2(caps(true, true), config(mode), 7);
        for (tag, len) in [(1, 0), (2, 100), (3, E), (4, 3 * R), (5, R - 1)] {
            let w = format!("{mode:?} len {len}");
            let payload = pattern(len, tag as u64);
            let before = sim.engine(0).counters();
            let s = sim
                .engine(0)
                .issend(1, tag, 0, Buf::from(&payload[..]))
                .unwrap();
            assert!(
                !s.request.is_empty() && s.buf.is_none(),
                "{w}: sync is never EMPTY"
            );
            idle(&mut sim);
            let proto = sent_by(before, sim.engine(0).counters());
            assert_eq!(
                proto,
                expected_proto(len, &config(mode), &caps(true, true)),
                "{w}"
            );
            assert!(
                !sim.engine(0).is_complete(&s.request).unwrap(),
                "{w}: unmatched"
            );
            let r = recv(&mut sim, 1, 0, tag, len);
            assert!(data_of(&mut sim, 1, r) == payload, "{w}");
            assert!(bytes(&done(&mut sim, 0, s.request)) == &payload[..], "{w}");
        }
        // Pre-posted: the sync send completes within the same idle run.
        let r = recv(&mut sim, 1, 0, 9, 10);
        let s = sim
            .engine(0)
            .issend(1, 9, 0, Buf::from(&b"0123456789"[..]))
            .unwrap();
        idle(&mut sim);
        assert!(sim.engine(0).is_complete(&s.request).unwrap());
        assert_eq!(data_of(&mut sim, 1, r), b"0123456789");
        done(&mut sim, 0, s.request);
    }
}

#[test]
fn ready_send_delivers_and_counts_unmatched_rendezvous() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 8);
    for (tag, len) in [(1, 100), (2, 3 * R), (3, 3 * R)] {
        let payload = pattern(len, 50 + tag as u64);
        let posted = tag < 3;
        let r = if posted {
            recv(&mut sim, 1, 0, tag, len)
        } else {
            Request::NULL
        };
        let s = sim
            .engine(0)
            .irsend(1, tag, 0, Buf::from(&payload[..]))
            .unwrap();
        idle(&mut sim);
        let unmatched = sim.engine(1).counters().ready_unmatched;
        assert_eq!(unmatched, u64::from(!posted), "tag {tag}");
        let r = if posted {
            r
        } else {
            recv(&mut sim, 1, ANY_SOURCE, tag, len)
        };
        assert!(data_of(&mut sim, 1, r) == payload, "tag {tag}: delivered");
        done(&mut sim, 0, s.request);
    }
}

/// The id of the last non-empty payload the network handed to rank 1.
#[test]
fn persistent_requests_run_many_rounds() {
    let cases = [
        (RndvMode::Auto, 600),
        (RndvMode::Auto, 3 * R),
        (RndvMode::Put, 3 * R),
        (RndvMode::Fragmented, R + 5),
    ];
    for (mode, len) in cases {
        let mut sim = sim2(caps(true, true), config(mode), 17);
        let (sbuf, rbuf) = (Buf::zeroed(len).unwrap(), Buf::zeroed(len).unwrap());
        let mut s = sim
            .engine(0)
            .send_init(1, 3, 0, sbuf, SendMode::Standard)
            .unwrap();
        let mut r = sim.engine(1).recv_init(0, 3, 0, rbuf).unwrap();
        for round in 0..5u64 {
            let w = format!("{mode:?} len {len} round {round}");
            let data = pattern(len, round);
            sim.engine(0)
                .persistent_buf_mut(&s)
                .unwrap()
                .copy_from_slice(&data);
            // Alternate who starts first, and start against startall.
            if round % 2 == 0 {
                sim.engine(1).start(&r).unwrap();
                sim.engine(0).startall(&[s]).unwrap();
            } else {
                sim.engine(0).start(&s).unwrap();
                idle(&mut sim);
                sim.engine(1).startall(&[r]).unwrap();
            }
            let rc = sim.wait(1, &mut r).unwrap();
            assert_eq!((rc.status.bytes, rc.status.error), (len, None), "{w}");
            assert!(rc.buf.is_none(), "{w}: the buffer stays with the request");
            let got = sim.engine(1).persistent_buf(&r).unwrap();
            assert!(got.as_slice() == &data[..], "{w}");
            assert_eq!(sim.wait(0, &mut s).unwrap().status.error, None, "{w}");
            assert!(
                !r.is_null() && !s.is_null(),
                "persistent handles survive completion"
            );
            // Inactive now: test and wait return at once, with the empty status.
            let again = sim
                .engine(1)
                .test(&mut r)
                .unwrap()
                .expect("inactive is complete");
            assert_eq!(again.status, Status::EMPTY);
            assert_eq!(sim.wait(0, &mut s).unwrap().status, Status::EMPTY);
        }
        sim.engine(0).free(&mut s).unwrap();
        sim.engine(1).free(&mut r).unwrap();
        no_leaks(&mut sim);
    }
}

#[test]
fn persistent_requests_refuse_use_while_active() {
    let active = Error::Usage(UsageError::RequestActive);
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 18);
    let (sbuf, rbuf) = (Buf::zeroed(2 * R).unwrap(), Buf::zeroed(2 * R).unwrap());
    let mut s = sim
        .engine(0)
        .send_init(1, 1, 0, sbuf, SendMode::Standard)
        .unwrap();
    let mut r = sim.engine(1).recv_init(0, 1, 0, rbuf).unwrap();
    sim.engine(0).start(&s).unwrap();
    idle(&mut sim);
    let e = sim.engine(0);
    assert!(!e.is_complete(&s).unwrap());
    assert_eq!(e.start(&s).unwrap_err(), active);
    assert_eq!(e.startall(&[s]).unwrap_err(), active);
    assert_eq!(e.persistent_buf(&s).unwrap_err(), active);
    assert_eq!(e.persistent_buf_mut(&s).unwrap_err(), active);
    sim.engine(1).start(&r).unwrap();
    assert_eq!(sim.engine(1).persistent_buf(&r).unwrap_err(), active);
    idle(&mut sim);
    // Complete but not yet waited on: still active.
    assert!(sim.engine(1).is_complete(&r).unwrap());
    assert_eq!(sim.engine(1).start(&r).unwrap_err(), active);
    sim.wait(1, &mut r).unwrap();
    sim.wait(0, &mut s).unwrap();
    assert_eq!(sim.engine(1).persistent_buf(&r).unwrap().len(), 2 * R);
    sim.engine(1).start(&r).unwrap();
    // An eager persistent send completes at once, yet stays active until waited on.
    let small = Buf::zeroed(8).unwrap();
    let mut s = sim
        .engine(0)
        .send_init(1, 1, 0, small, SendMode::Standard)
        .unwrap();
    sim.engine(0).start(&s).unwrap();
    assert!(sim.engine(0).is_complete(&s).unwrap());
    assert_eq!(sim.engine(0).start(&s).unwrap_err(), active);
    sim.wait(0, &mut s).unwrap();
    assert_eq!(sim.wait(1, &mut r).unwrap().status.bytes, 8);
    let plain = recv(&mut sim, 1, 0, 3, 0);
    let err = sim.engine(1).start(&plain).unwrap_err();
    assert!(
        matches!(err, Error::Usage(UsageError::WrongRequestKind(_))),
        "{err:?}"
    );
    sim.engine(1).cancel(&plain).unwrap();
    assert!(done(&mut sim, 1, plain).status.cancelled);
}

#[test]
fn eager_credits_bound_unexpected_memory_and_come_back() {
    const N: usize = 200;
    const LEN: usize = 500;
    let config = Config {
        eager_credits: 4,
        ..config(RndvMode::Auto)
    };
    let mut sim = sim2(caps(true, true), config, 19);
    let mut sends: Vec<Request> = (0..N)
        .map(|i| send(&mut sim, 0, 1, 9, &pattern(LEN, i as u64)))
        .collect();
    idle(&mut sim);
    let c = sim.engine(0).counters();
    assert_eq!(c.eager_sent, 4, "one eager message per credit");
    assert_eq!(c.credit_stalls, (N - 4) as u64);
    assert_eq!(
        c.rndv_get_sent + c.rndv_put_sent + c.rndv_frag_sent,
        (N - 4) as u64
    );
    assert_eq!(sim.engine(1).counters().unexpected_depth, N as u64);
    let buffered = sim.net().borrow().link_stats(0, 1).bytes_delivered;
    assert_eq!(
        buffered,
        (4 * LEN) as u64,
        "only credited messages brought their data"
    );

    let mut recvs: Vec<Request> = (0..N).map(|_| recv(&mut sim, 1, 0, 9, LEN)).collect();
    for (i, c) in waitall(&mut sim, 1, &mut recvs).iter().enumerate() {
        assert!(
            bytes(c) == &pattern(LEN, i as u64)[..],
            "message {i}: in order, intact"
        );
    }
    let out = waitall(&mut sim, 0, &mut sends);
    assert!(out.iter().all(|c| c.status.error.is_none()));
    idle(&mut sim);

    for round in 0..3 {
        let before = sim.engine(0).counters();
        for _ in 0..4 {
            let s = send(&mut sim, 0, 1, 10, &[1; LEN]);
            assert!(
                s.is_empty(),
                "round {round}: credits came back, so eager again"
            );
        }
        assert_eq!(sim.engine(0).counters().eager_sent - before.eager_sent, 4);
        for _ in 0..4 {
            let r = recv(&mut sim, 1, 0, 10, LEN);
            done(&mut sim, 1, r);
        }
        idle(&mut sim);
    }
}

type Finish = fn(&mut Sim, Rank, &mut [Request]) -> Vec<Completion>;

/// Sends 60 messages of mixed sizes 0 -> 1 over links of `capacity`
/// packets, receives them in order with `finish` driving the receives and
/// then the sends, and returns the sender's back-pressure count.
fn backpressure_run(capacity: usize, mode: RndvMode, finish: Finish) -> u64 {
    let lens = [0, 10, E, E + 1, 3 * F + 1, R, 3 * R, 16 * 1024, 70_000];
    let net = NetConfig::new(2)
        .with_link_capacity(capacity)
        .with_seed(capacity as u64);
    let mut sim = Sim::new(net, config(mode));
    let msgs: Vec<Vec<u8>> = (0..60)
        .map(|i| pattern(lens[i % lens.len()], i as u64))
        .collect();
    let mut sends: Vec<Request> = msgs.iter().map(|m| send(&mut sim, 0, 1, 1, m)).collect();
    let mut recvs: Vec<Request> = (0..msgs.len())
        .map(|i| match i % 3 {
            0 => arecv(&mut sim, 1, 0, 1),
            _ => recv(&mut sim, 1, 0, ANY_TAG, msgs[i].len()),
        })
        .collect();
    for (i, c) in finish(&mut sim, 1, &mut recvs).iter().enumerate() {
        let w = format!("cap {capacity} {mode:?} message {i}");
        assert_eq!(c.status.error, None, "{w}");
        assert!(bytes(c) == &msgs[i][..], "{w}: in order, intact");
    }
    let out = finish(&mut sim, 0, &mut sends);
    assert!(out.iter().all(|c| c.status.error.is_none()));
    assert!(sim.net().borrow().link_stats(0, 1).busy > 0);
    idle(&mut sim);
    no_leaks(&mut sim);
    sim.engine(0).counters().backpressure
}

#[test]
fn link_backpressure_keeps_order_and_completes() {
    // Polls and steps the whole job, as a peer running concurrently would
    // (blocking waits: see the ignored test below).
    fn poll(sim: &mut Sim, rank: Rank, reqs: &mut [Request]) -> Vec<Completion> {
        let mut out = Vec::new();
        while !sim.engine(rank).testall(reqs, &mut out).unwrap() {
            sim.step().unwrap();
        }
        out
    }
    for capacity in [1, 2] {
        for mode in [RndvMode::Auto, RndvMode::Put, RndvMode::Fragmented] {
            assert!(
                backpressure_run(capacity, mode, poll) > 0,
                "cap {capacity} {mode:?}"
            );
        }
    }
}

#[test]
fn blocking_waits_complete_under_link_backpressure() {
    let (tx, rx) = std::sync::mpsc::channel();
    // Were `waitall` to spin without letting the peer run (a livelock), a
    // watchdog turns it into
    // a failure (the spinning thread ends with the test process).
    std::thread::spawn(move || {
        let _ = tx.send(backpressure_run(1, RndvMode::Auto, waitall));
    });
    let pressure = rx.recv_timeout(std::time::Duration::from_secs(60));
    assert!(pressure.expect("blocking waits finished within a minute") > 0);
}
