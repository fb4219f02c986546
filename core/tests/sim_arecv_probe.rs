//! ARecv (library-allocated buffers, zero-copy handover, exact-size
//! rendezvous allocation) and the probe family (iprobe, improbe, NO_PROC,
//! probe requests), over the simulated network.

mod common_protocols;

use common_protocols::*;
use ferry_core::sim::Sim;
use ferry_core::{
    Any, Buf, Completion, Error, Message, Outcount, PeerError, Request, RndvMode, Tag, UsageError,
    ANY_SOURCE, ANY_TAG, PROC_NULL,
};

fn last_delivered(sim: &Sim) -> usize {
    let net = sim.net().borrow();
    *net.delivered_payload_ids(1)
        .last()
        .expect("a payload was delivered")
}

#[test]
fn arecv_of_eager_hands_over_the_delivered_buffer() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 9);
    // Unexpected: the message waits in the queue in the packet's own buffer.
    let payload = pattern(700, 1);
    assert!(send(&mut sim, 0, 1, 1, &payload).is_empty());
    idle(&mut sim);
    let delivered = last_delivered(&sim);
    let r = arecv(&mut sim, 1, 0, 1);
    let c = done(&mut sim, 1, r);
    let buf = c.buf.unwrap();
    assert_eq!(
        (buf.id(), buf.len(), c.status.bytes),
        (delivered, 700, 700),
        "not copied"
    );
    assert!(buf.as_slice() == &payload[..]);

    // Posted: the arriving packet's buffer becomes the completion buffer.
    let r = arecv(&mut sim, 1, ANY_SOURCE, ANY_TAG);
    let payload = pattern(E, 2);
    send(&mut sim, 0, 1, 2, &payload);
    let c = done(&mut sim, 1, r);
    assert_eq!((c.status.source, c.status.tag), (0, 2));
    let buf = c.buf.unwrap();
    assert_eq!(buf.id(), last_delivered(&sim), "not copied");
    assert!(buf.as_slice() == &payload[..]);
}

#[test]
fn rendezvous_arecv_allocates_exactly_the_message() {
    for (want, mode, caps) in [
        (Proto::Get, RndvMode::Get, caps(true, true)),
        (Proto::Put, RndvMode::Put, caps(true, true)),
        (Proto::Frag, RndvMode::Fragmented, caps(true, true)),
        (Proto::Frag, RndvMode::Auto, caps(false, false)),
    ] {
        let mut sim = sim2(caps, config(mode), 10);
        for (tag, len) in [(1, R), (2, 2 * R + 3), (3, MIB + 17)] {
            for prepost in [true, false] {
                let w = format!("{want:?} len {len} prepost {prepost}");
                let payload = pattern(len, tag as u64);
                let r = if prepost {
                    arecv(&mut sim, 1, 0, tag)
                } else {
                    Request::NULL
                };
                let before = sim.engine(0).counters();
                let s = send(&mut sim, 0, 1, tag, &payload);
                idle(&mut sim);
                assert_eq!(sent_by(before, sim.engine(0).counters()), want, "{w}");
                let r = if prepost {
                    r
                } else {
                    arecv(&mut sim, 1, 0, tag)
                };
                let c = done(&mut sim, 1, r);
                assert_eq!(c.status.bytes, len, "{w}");
                let v = c
                    .buf
                    .unwrap()
                    .into_vec()
                    .expect("ARecv buffers are vectors");
                assert_eq!(
                    (v.len(), v.capacity()),
                    (len, len),
                    "{w}: one exact allocation"
                );
                assert!(v == payload, "{w}: data");
                done(&mut sim, 0, s);
            }
        }
    }
}

#[test]
fn an_arecv_above_its_allocation_bound_fails_alone_and_allocates_nothing() {
    for (mode, caps) in [
        (RndvMode::Get, caps(true, true)),
        (RndvMode::Put, caps(true, true)),
        (RndvMode::Fragmented, caps(true, true)),
    ] {
        let mut config = config(mode);
        config.max_arecv = R;
        let mut sim = sim2(caps, config, 11);
        let w = format!("{mode:?}");
        // Over the bound: the ARecv completes with the typed error, no
        // buffer, and the sender's request completes too.
        let mut r = arecv(&mut sim, 1, 0, 1);
        let mut s = send(&mut sim, 0, 1, 1, &pattern(R + 1, 1));
        let c = sim.wait(1, &mut r).unwrap();
        assert_eq!(
            (c.status.error, c.status.bytes),
            (
                Some(Error::Usage(UsageError::MessageTooLarge {
                    len: R + 1,
                    max: R
                })),
                0
            ),
            "{w}"
        );
        assert!(c.buf.is_none_or(|b| b.is_empty()), "{w}: nothing allocated");
        // The sender completes, with no error or with the receiver's
        // refusal (Get reports it as a failed transfer; Put and Fragmented
        // as a send that moved nothing).
        let sent = sim.wait(0, &mut s).unwrap();
        assert!(
            matches!(
                sent.status.error,
                None | Some(Error::Peer(PeerError::TransferFailed { rank: 1 }))
            ),
            "{w}: {:?}",
            sent.status
        );
        // At the bound, and after the failure: both work.
        let payload = pattern(R, 2);
        let r = arecv(&mut sim, 1, 0, 2);
        let s = send(&mut sim, 0, 1, 2, &payload);
        let c = done(&mut sim, 1, r);
        assert_eq!(c.status.error, None, "{w}");
        assert!(c.buf.unwrap().as_slice() == &payload[..], "{w}: data");
        done(&mut sim, 0, s);
    }
}

#[test]
fn mprobe_then_marecv_for_eager_and_rendezvous() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 11);
    let (small, large) = (pattern(300, 1), pattern(3 * R, 2));
    send(&mut sim, 0, 1, 1, &small);
    let s = send(&mut sim, 0, 1, 2, &large);
    idle(&mut sim);
    let eager_id = last_delivered(&sim);

    let (mut m, st) = sim
        .engine(1)
        .improbe(0, 2, 0)
        .unwrap()
        .expect("the RTS is here");
    assert_eq!((st.source, st.tag, st.bytes), (0, 2, 3 * R));
    let r = sim.engine(1).imarecv(&mut m).unwrap().request;
    assert!(m.is_null());
    let v = done(&mut sim, 1, r).buf.unwrap().into_vec().unwrap();
    assert!(v.capacity() == 3 * R && v == large);
    done(&mut sim, 0, s);

    let (mut m, st) = sim
        .engine(1)
        .improbe(ANY_SOURCE, ANY_TAG, 0)
        .unwrap()
        .unwrap();
    assert_eq!((st.tag, st.bytes), (1, 300));
    let r = sim.engine(1).imarecv(&mut m).unwrap().request;
    let buf = done(&mut sim, 1, r).buf.unwrap();
    assert_eq!(
        (buf.id(), buf.as_slice()),
        (eager_id, &small[..]),
        "handed over, not copied"
    );
    let mut null = Message::NULL;
    let stale = sim.engine(1).imarecv(&mut null).unwrap_err();
    assert_eq!(stale, Error::Usage(UsageError::StaleHandle));
}

#[test]
fn arecv_mixes_with_ordinary_requests_in_completion_calls() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 12);
    // Eager, get, fragmented, empty and get messages from rank 0.
    let lens = [400, 2 * R, 3 * F, 0, R + 1];
    let payloads: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(t, &l)| pattern(l, t as u64))
        .collect();
    let back = vec![5; R + 1];
    // Rank 1's list: ARecv, recv, ARecv, ARecv, its own send, recv.
    let post = |sim: &mut Sim| -> Vec<Request> {
        let mut reqs = vec![arecv(sim, 1, 0, 0), recv(sim, 1, 0, 1, 2 * R)];
        reqs.extend([
            arecv(sim, 1, 0, 2),
            arecv(sim, 1, 0, 3),
            send(sim, 1, 0, 9, &back),
        ]);
        reqs.push(recv(sim, 1, 0, 4, R + 1));
        reqs
    };
    let peer = |sim: &mut Sim| -> Vec<Request> {
        let mut reqs: Vec<Request> = payloads
            .iter()
            .enumerate()
            .map(|(t, p)| send(sim, 0, 1, t as Tag, p))
            .collect();
        reqs.push(recv(sim, 0, 1, 9, R + 1));
        reqs
    };
    let check = |i: usize, c: &Completion| {
        assert_eq!(c.status.error, None, "entry {i}");
        if i != 4 {
            let want = &payloads[if i == 5 { 4 } else { i }];
            assert!(bytes(c) == &want[..], "entry {i}");
        }
    };
    let finish_peer = |sim: &mut Sim, mut reqs: Vec<Request>| {
        assert!(bytes(&waitall(sim, 0, &mut reqs)[5]) == &back[..]);
    };

    let (mut reqs, other) = (post(&mut sim), peer(&mut sim));
    let out = waitall(&mut sim, 1, &mut reqs);
    assert_eq!(out.len(), 6);
    out.iter().enumerate().for_each(|(i, c)| check(i, c));
    assert!(reqs.iter().all(|r| r.is_null()));
    finish_peer(&mut sim, other);

    let (mut reqs, other) = (post(&mut sim), peer(&mut sim));
    let mut seen = [false; 6];
    let mut waitany = |sim: &mut Sim| sim.with_park(1, |e, p| e.waitany(&mut reqs, p)).unwrap();
    while let Any::Completed { index, completion } = waitany(&mut sim) {
        assert!(
            !std::mem::replace(&mut seen[index], true),
            "index {index} twice"
        );
        check(index, &completion);
    }
    assert_eq!(seen, [true; 6]);
    finish_peer(&mut sim, other);

    let (mut reqs, other) = (post(&mut sim), peer(&mut sim));
    let (mut seen, mut some) = ([false; 6], Vec::new());
    while let Outcount::Count(_) = sim.engine(1).testsome(&mut reqs, &mut some).unwrap() {
        for (i, c) in some.drain(..) {
            assert!(!std::mem::replace(&mut seen[i], true), "index {i} twice");
            check(i, &c);
        }
        sim.step().unwrap();
    }
    assert_eq!(seen, [true; 6]);
    finish_peer(&mut sim, other);
    no_leaks(&mut sim);
}

#[test]
fn iprobe_reports_without_taking() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 13);
    assert_eq!(sim.engine(1).iprobe(ANY_SOURCE, ANY_TAG, 0).unwrap(), None);
    let large = pattern(2 * R, 3);
    send(&mut sim, 0, 1, 4, b"abc");
    let s = send(&mut sim, 0, 1, 5, &large);
    idle(&mut sim);
    for _ in 0..2 {
        let st = sim
            .engine(1)
            .iprobe(0, ANY_TAG, 0)
            .unwrap()
            .expect("the first message");
        assert_eq!((st.source, st.tag, st.bytes, st.error), (0, 4, 3, None));
    }
    let st = sim.engine(1).iprobe(ANY_SOURCE, 5, 0).unwrap().unwrap();
    assert_eq!((st.source, st.tag, st.bytes), (0, 5, 2 * R));
    assert_eq!(
        sim.engine(1).iprobe(0, 4, 1).unwrap(),
        None,
        "another context"
    );
    idle(&mut sim);
    assert!(
        !sim.engine(0).is_complete(&s).unwrap(),
        "probing starts no transfer"
    );
    assert_eq!(sim.engine(1).counters().unexpected_depth, 2);
    let r = recv(&mut sim, 1, 0, 5, 2 * R);
    assert!(data_of(&mut sim, 1, r) == large);
    let r = recv(&mut sim, 1, 0, 4, 3);
    assert_eq!(data_of(&mut sim, 1, r), b"abc");
    done(&mut sim, 0, s);
}

#[test]
fn improbe_takes_the_message_out_of_matching() {
    for len in [40, 2 * R] {
        let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 14);
        let payload = pattern(len, 4);
        let s = send(&mut sim, 0, 1, 6, &payload);
        idle(&mut sim);
        let (mut m, st) = sim.engine(1).improbe(0, 6, 0).unwrap().unwrap();
        assert_eq!(st.bytes, len);
        assert_eq!(
            sim.engine(1).iprobe(0, 6, 0).unwrap(),
            None,
            "gone from matching"
        );
        let stolen = recv(&mut sim, 1, 0, 6, len);
        idle(&mut sim);
        assert!(
            !sim.engine(1).is_complete(&stolen).unwrap(),
            "len {len}: irecv got it"
        );
        let r = sim
            .engine(1)
            .imrecv(&mut m, Buf::zeroed(len).unwrap())
            .unwrap();
        let c = done(&mut sim, 1, r.request);
        assert_eq!((c.status.source, c.status.tag, c.status.bytes), (0, 6, len));
        assert!(bytes(&c) == &payload[..]);
        done(&mut sim, 0, s);
        sim.engine(1).cancel(&stolen).unwrap();
        assert!(done(&mut sim, 1, stolen).status.cancelled);
        no_leaks(&mut sim);
    }
}

#[test]
fn proc_null_probes_yield_no_proc() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 15);
    let (mut m, st) = sim
        .engine(1)
        .improbe(PROC_NULL, ANY_TAG, 0)
        .unwrap()
        .unwrap();
    assert!(m.is_no_proc());
    assert_eq!((st.source, st.bytes), (PROC_NULL, 0));
    let r = sim
        .engine(1)
        .imrecv(&mut m, Buf::zeroed(8).unwrap())
        .unwrap();
    assert!(m.is_null());
    let c = done(&mut sim, 1, r.request);
    assert_eq!((c.status.source, c.status.bytes), (PROC_NULL, 0));
    let mut m = Message::NO_PROC;
    let r = sim.engine(1).imarecv(&mut m).unwrap().request;
    let c = done(&mut sim, 1, r);
    assert_eq!((c.status.source, bytes(&c).len()), (PROC_NULL, 0));
    let r = sim.engine(1).improbe_request(PROC_NULL, 3, 0).unwrap();
    let c = done(&mut sim, 1, r);
    assert_eq!((c.message, c.status.source), (Message::NO_PROC, PROC_NULL));
    let st = sim.engine(1).iprobe(PROC_NULL, 3, 0).unwrap().unwrap();
    assert_eq!((st.source, st.bytes), (PROC_NULL, 0));
}

#[test]
fn probe_requests_complete_on_later_arrival_in_waitany() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 16);
    let large = pattern(2 * R, 5);
    let e = sim.engine(1);
    let probe = e.iprobe_request(0, 5, 0).unwrap();
    let mprobe = e.improbe_request(0, 6, 0).unwrap();
    let mut reqs = vec![probe, mprobe, arecv(&mut sim, 1, 0, 7)];
    idle(&mut sim);
    assert!(
        reqs.iter().all(|r| !sim.engine(1).is_complete(r).unwrap()),
        "nothing arrived"
    );
    let next = |sim: &mut Sim, reqs: &mut Vec<Request>| match sim
        .with_park(1, |e, p| e.waitany(reqs, p))
        .unwrap()
    {
        Any::Completed { index, completion } => (index, completion),
        Any::Undefined => panic!("an active request remains"),
    };

    let s6 = send(&mut sim, 0, 1, 6, &large);
    let (index, c) = next(&mut sim, &mut reqs);
    assert_eq!((index, c.status.tag, c.status.bytes), (1, 6, 2 * R));
    let mut m = c.message;
    assert_ne!(m, Message::NULL, "improbe_request hands over the message");
    assert_eq!(
        sim.engine(1).iprobe(0, 6, 0).unwrap(),
        None,
        "taken out of matching"
    );

    send(&mut sim, 0, 1, 5, b"five");
    let (index, c) = next(&mut sim, &mut reqs);
    assert_eq!(
        (index, c.status.tag, c.status.bytes, c.message),
        (0, 5, 4, Message::NULL)
    );
    let r = recv(&mut sim, 1, 0, 5, 4);
    assert_eq!(
        data_of(&mut sim, 1, r),
        b"five",
        "the probe left the message"
    );

    send(&mut sim, 0, 1, 7, b"seven");
    let (index, c) = next(&mut sim, &mut reqs);
    assert_eq!((index, bytes(&c)), (2, &b"seven"[..]));
    let last = sim.with_park(1, |e, p| e.waitany(&mut reqs, p)).unwrap();
    assert!(matches!(last, Any::Undefined));

    let r = sim
        .engine(1)
        .imrecv(&mut m, Buf::zeroed(2 * R).unwrap())
        .unwrap();
    assert!(data_of(&mut sim, 1, r.request) == large);
    done(&mut sim, 0, s6);
}
