//! Every error path gives a typed error (a call's `Err`, or an operation's
//! `Status::error`), never a panic or a hang: stale handles, bad ranks and
//! tags, truncation, persistent-request misuse, a peer that dies mid-protocol
//! and a peer that sends garbage.

mod common_requests;

use common_requests::*;
use ferry_core::loopback::Loopback;
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{
    Config, Engine, Error, Message, PeerError, Rank, Request, RndvMode, SendMode, Status,
    UsageError, ANY_SOURCE, ANY_TAG, TAG_UB,
};

const MODES: [RndvMode; 3] = [RndvMode::Get, RndvMode::Put, RndvMode::Fragmented];

fn with_mode(ranks: usize, mode: RndvMode) -> Sim {
    // Fixed one-tick delays, so a test can stop between two protocol steps.
    let config = Config {
        rndv_mode: mode,
        ..Config::default()
    };
    sim_with(NetConfig::new(ranks).with_delay(1, 1), config)
}

/// Progresses every rank until `done` holds, advancing time only between
/// rounds, so a test can act right after a packet arrived and before any
/// later protocol step (an RDMA op, the next packet) takes effect.
fn progress_until(sim: &mut Sim, mut done: impl FnMut(&mut Sim) -> bool) {
    for _ in 0..SPIN_LIMIT {
        for r in 0..sim.size() {
            sim.engine(r as Rank).progress().unwrap();
        }
        if done(sim) {
            return;
        }
        sim.net().borrow_mut().advance();
    }
    panic!("condition never held");
}

#[track_caller]
fn stale<T: std::fmt::Debug>(r: ferry_core::Result<T>) {
    assert_eq!(usage(r.unwrap_err()), UsageError::StaleHandle);
}

fn died(rank: Rank) -> Option<Error> {
    Some(PeerError::Died { rank }.into())
}

// -------------------------------------------------------------- handles ----

#[test]
fn a_handle_kept_after_completion_is_stale_everywhere() {
    let mut sim = sim(2);
    let mut r = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    let copy = r;
    send_now(&mut sim, 1, 0, 1, b"x");
    sim.wait(0, &mut r).unwrap();
    assert!(r.is_null());

    // The freed slot is reused at once: the copy must not reach the new request.
    let fresh = sim.engine(0).irecv(1, 2, 0, zeroed(1)).unwrap().request;
    // handle.rs packs the slot index into the low 32 bits.
    assert_eq!(fresh.to_raw() as u32, copy.to_raw() as u32, "same slot");
    assert_ne!(fresh, copy, "new generation");
    let e = sim.engine(0);
    let mut c = copy;
    stale(e.test(&mut c));
    stale(e.wait(&mut c, &mut MustNotPark));
    stale(e.cancel(&copy));
    stale(e.get_status(&copy));
    stale(e.is_complete(&copy));
    stale(e.start(&copy));
    stale(e.complete_generic(&copy, Status::EMPTY, None));
    stale(e.testall(&mut [copy, fresh], &mut Vec::new()));
    stale(e.waitall(&mut [copy], &mut Vec::new(), &mut MustNotPark));
    stale(e.testany(&mut [Request::NULL, copy]));
    stale(e.waitany(&mut [copy], &mut MustNotPark));
    stale(e.testsome(&mut [copy, fresh], &mut Vec::new()));
    stale(e.waitsome(&mut [copy], &mut Vec::new(), &mut MustNotPark));
    stale(e.get_status_all(&[copy], &mut Vec::new()));
    stale(e.get_status_any(&[copy]));
    stale(e.get_status_some(&[copy], &mut Vec::new()));
    stale(e.get_status(&Request::from_raw(0xdead_beef_0000_0007)));
    assert_eq!(c, copy, "a failed call leaves the handle alone");
    assert!(
        !e.is_complete(&fresh).unwrap(),
        "the new request was not cancelled"
    );
}

#[test]
fn a_stale_handle_behind_a_pending_one_is_reported_by_the_all_forms() {
    let mut sim = sim(2);
    let mut r = sim.engine(0).irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let copy = r;
    send_now(&mut sim, 1, 0, 1, b"x");
    sim.wait(0, &mut r).unwrap();
    let pending = sim.engine(0).irecv(1, 2, 0, zeroed(1)).unwrap().request;
    let e = sim.engine(0);
    stale(e.testall(&mut [pending, copy], &mut Vec::new()));
    stale(e.testall_resume(&mut [pending, copy], &mut Vec::new(), &mut None));
    stale(e.get_status_all(&[pending, copy], &mut Vec::new()));
}

#[test]
fn testall_resume_skips_the_complete_prefix_and_completes_in_order() {
    let mut sim = sim(2);
    let mut reqs: Vec<Request> = (0..3)
        .map(|tag| sim.engine(0).irecv(1, tag, 0, zeroed(1)).unwrap().request)
        .collect();
    let (mut out, mut cursor) = (Vec::new(), None);
    send_now(&mut sim, 1, 0, 0, b"a");
    sim.run_until_idle().unwrap();
    assert!(!sim
        .engine(0)
        .testall_resume(&mut reqs, &mut out, &mut cursor)
        .unwrap());
    assert_eq!(
        cursor,
        Some(1),
        "the first receive is done, the second pending"
    );
    send_now(&mut sim, 1, 0, 2, b"c");
    sim.run_until_idle().unwrap();
    assert!(!sim
        .engine(0)
        .testall_resume(&mut reqs, &mut out, &mut cursor)
        .unwrap());
    assert_eq!(cursor, Some(1), "the cursor waits at the first pending one");
    send_now(&mut sim, 1, 0, 1, b"b");
    sim.run_until_idle().unwrap();
    assert!(sim
        .engine(0)
        .testall_resume(&mut reqs, &mut out, &mut cursor)
        .unwrap());
    assert!(reqs.iter().all(|r| r.is_null()));
    let got: Vec<u8> = out.iter().map(|c| c.buf.as_ref().unwrap()[0]).collect();
    assert_eq!(got, b"abc");
}

#[test]
fn freeing_twice_is_a_stale_handle() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let live = e.live_requests();
    let mut g = e.generic_request();
    e.complete_generic(&g, Status::EMPTY, None).unwrap();
    let mut copy = g;
    e.free(&mut g).unwrap();
    assert!(g.is_null());
    assert_eq!(
        e.live_requests(),
        live,
        "a complete request is freed at once"
    );
    stale(e.free(&mut copy));
    stale(e.free(&mut Request::NULL.clone()));
    let mut empty = Request::EMPTY;
    e.free(&mut empty).unwrap();
    assert!(empty.is_null());

    // A pending request freed early goes away when it completes.
    let mut r = e.irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let copy = r;
    e.free(&mut r).unwrap();
    assert_eq!(e.live_requests(), live + 1, "still in flight");
    send_now(&mut sim, 1, 0, 1, b"x");
    sim.run_until_idle().unwrap();
    assert_eq!(sim.engine(0).live_requests(), live);
    stale(sim.engine(0).test(&mut copy.clone()));
}

#[test]
fn freeing_a_pending_request_twice_is_a_stale_handle() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let mut r = e.irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let mut copy = r;
    e.free(&mut r).unwrap();
    stale(e.free(&mut copy));
    stale(e.cancel(&copy));
    stale(e.get_status(&copy));
}

#[test]
fn ranks_outside_the_job_are_invalid() {
    let mut sim = sim(3);
    let e = sim.engine(0);
    let live = e.live_requests();
    let invalid = |rank| UsageError::InvalidRank { rank, size: 3 };
    for dest in [3, -5, ANY_SOURCE, i32::MAX] {
        assert_eq!(
            usage(e.isend(dest, 0, 0, buf(b"x")).unwrap_err()),
            invalid(dest)
        );
        assert_eq!(
            usage(e.issend(dest, 0, 0, buf(b"x")).unwrap_err()),
            invalid(dest)
        );
        let err = e
            .send_init(dest, 0, 0, buf(b"x"), SendMode::Standard)
            .unwrap_err();
        assert_eq!(usage(err), invalid(dest));
    }
    for source in [3, -5, i32::MIN] {
        assert_eq!(
            usage(e.irecv(source, 0, 0, zeroed(1)).unwrap_err()),
            invalid(source)
        );
        assert_eq!(usage(e.iarecv(source, 0, 0).unwrap_err()), invalid(source));
        assert_eq!(
            usage(e.recv_init(source, 0, 0, zeroed(1)).unwrap_err()),
            invalid(source)
        );
        assert_eq!(usage(e.iprobe(source, 0, 0).unwrap_err()), invalid(source));
        assert_eq!(
            usage(e.iprobe_request(source, 0, 0).unwrap_err()),
            invalid(source)
        );
    }
    assert_eq!(e.live_requests(), live, "nothing was allocated");
    assert!(sim.net().borrow().is_idle(), "nothing was sent");
}

#[test]
fn tags_outside_the_range_are_invalid() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let live = e.live_requests();
    for tag in [-1, ANY_TAG, TAG_UB + 1, i32::MIN] {
        let err = e.isend(1, tag, 0, buf(b"x")).unwrap_err();
        assert_eq!(usage(err), UsageError::InvalidTag { tag });
        // Checked before PROC_NULL short-cuts the send.
        let err = e
            .isend(ferry_core::PROC_NULL, tag, 0, buf(b"x"))
            .unwrap_err();
        assert_eq!(usage(err), UsageError::InvalidTag { tag });
    }
    for tag in [-2, TAG_UB + 1] {
        assert_eq!(
            usage(e.irecv(1, tag, 0, zeroed(1)).unwrap_err()),
            UsageError::InvalidTag { tag }
        );
        assert_eq!(
            usage(e.iprobe(1, tag, 0).unwrap_err()),
            UsageError::InvalidTag { tag }
        );
    }
    assert_eq!(e.live_requests(), live);

    // The bounds themselves are valid.
    let mut r = e.irecv(1, TAG_UB, 0, zeroed(1)).unwrap().request;
    send_now(&mut sim, 1, 0, TAG_UB, b"u");
    assert_eq!(wait_data(&mut sim, 0, &mut r, b"u").status.tag, TAG_UB);
}

#[test]
fn engine_new_rejects_a_rank_outside_the_job() {
    for (rank, size) in [(2, 2), (-1, 2), (0, 0)] {
        let err = Engine::new(rank, size, Loopback::new(0), Config::default()).unwrap_err();
        assert_eq!(usage(err), UsageError::InvalidRank { rank, size });
    }
}

// ------------------------------------------------------------ truncation ----

fn truncated(message: usize, capacity: usize) -> Option<Error> {
    Some(UsageError::Truncated { message, capacity }.into())
}

#[test]
fn eager_truncation_fills_the_buffer_and_reports_it() {
    for capacity in [0, 10] {
        let mut sim = sim(2);
        let payload = data(100, 1);
        let b = zeroed(capacity);
        let id = b.id();
        let mut r = sim.engine(0).irecv(1, 1, 0, b).unwrap().request;
        send_now(&mut sim, 1, 0, 1, &payload);
        let c = sim.wait(0, &mut r).unwrap();
        assert_eq!(c.status.error, truncated(100, capacity));
        assert_eq!(c.status.bytes, capacity);
        let got = c.buf.unwrap();
        assert_eq!(
            (got.id(), got.len()),
            (id, capacity),
            "same buffer, not grown"
        );
        assert_eq!(&got[..], &payload[..capacity]);
    }
}

#[test]
fn rendezvous_truncation_in_every_protocol() {
    for mode in MODES {
        for capacity in [0, 10_000] {
            let mut sim = with_mode(2, mode);
            let payload = data(RNDV, 2);
            let b = zeroed(capacity);
            let id = b.id();
            let mut r = sim.engine(0).irecv(1, 1, 0, b).unwrap().request;
            let mut s = sim.engine(1).isend(0, 1, 0, buf(&payload)).unwrap().request;
            let c = sim.wait(0, &mut r).unwrap();
            assert_eq!(
                c.status.error,
                truncated(RNDV, capacity),
                "{mode:?} {capacity}"
            );
            assert_eq!(c.status.bytes, capacity);
            let got = c.buf.unwrap();
            assert_eq!((got.id(), got.len()), (id, capacity), "{mode:?} {capacity}");
            assert_eq!(&got[..], &payload[..capacity], "{mode:?} {capacity}");
            let c = sim.wait(1, &mut s).unwrap();
            assert_eq!(c.status.error, None, "{mode:?}: the sender is not at fault");
            assert_eq!(c.buf.unwrap().len(), RNDV);
            sim.run_until_idle().unwrap();
            assert_eq!(
                sim.engine(0).live_requests() + sim.engine(1).live_requests(),
                0
            );
        }
    }
}

#[test]
fn cancel_after_match_in_every_protocol_leaves_the_data_intact() {
    for mode in MODES {
        let mut sim = with_mode(2, mode);
        let payload = data(RNDV, 3);
        let mut r = sim
            .engine(0)
            .irecv(ANY_SOURCE, ANY_TAG, 0, zeroed(RNDV))
            .unwrap()
            .request;
        let mut s = sim.engine(1).isend(0, 1, 0, buf(&payload)).unwrap().request;
        progress_until(&mut sim, |sim| sim.engine(0).counters().packets_in > 0);
        assert!(
            !sim.engine(0).is_complete(&r).unwrap(),
            "{mode:?}: matched, not done"
        );
        sim.engine(0).cancel(&r).unwrap();
        let c = wait_data(&mut sim, 0, &mut r, &payload);
        assert!(!c.status.cancelled, "{mode:?}");
        assert_eq!((c.status.source, c.status.tag), (1, 1));
        sim.wait(1, &mut s).unwrap();
    }
}

// ------------------------------------------------------------ persistent ----

#[test]
fn inactive_persistent_requests_complete_at_once_with_an_empty_status() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    // Rank 0 talks to itself, so the restart below needs no partner.
    let p = e.recv_init(0, 1, 0, zeroed(4)).unwrap();
    let q = e.send_init(0, 1, 0, buf(b"q"), SendMode::Standard).unwrap();
    for handle in [p, q] {
        let mut h = handle;
        let c = e.wait(&mut h, &mut MustNotPark).unwrap();
        assert_eq!(c.status, Status::EMPTY);
        assert!(c.buf.is_none());
        assert_eq!(h, handle, "an inactive persistent request is not freed");
        let c = e
            .test(&mut h)
            .unwrap()
            .expect("inactive counts as complete");
        assert_eq!(c.status, Status::EMPTY);
        assert_eq!(h, handle);
    }
    // And it still works afterwards.
    e.start(&p).unwrap();
    e.start(&q).unwrap();
    let mut list = [p, q];
    let mut out = Vec::new();
    sim.with_park(0, |e, park| e.waitall(&mut list, &mut out, park))
        .unwrap();
    assert_eq!((out[0].status.source, out[0].status.bytes), (0, 1));
    assert_eq!(&sim.engine(0).persistent_buf(&p).unwrap()[..1], b"q");
}

#[test]
fn start_misuse_is_a_typed_error() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let r = e.irecv(1, 1, 0, zeroed(1)).unwrap().request;
    assert!(matches!(
        usage(e.start(&r).unwrap_err()),
        UsageError::WrongRequestKind(_)
    ));
    assert!(matches!(
        usage(e.startall(&[r]).unwrap_err()),
        UsageError::WrongRequestKind(_)
    ));
    stale(e.start(&Request::NULL));
    stale(e.start(&Request::EMPTY));

    let p = e.recv_init(1, 2, 0, zeroed(1)).unwrap();
    let idle = e.recv_init(1, 3, 0, zeroed(1)).unwrap();
    e.start(&p).unwrap();
    assert_eq!(usage(e.start(&p).unwrap_err()), UsageError::RequestActive);
    assert_eq!(
        usage(e.startall(&[idle, p]).unwrap_err()),
        UsageError::RequestActive
    );
    assert!(
        matches!(
            e.testany(&mut [idle]).unwrap(),
            Some(ferry_core::Any::Undefined)
        ),
        "startall checks every request before starting any"
    );
    assert_eq!(
        usage(e.persistent_buf(&p).unwrap_err()),
        UsageError::RequestActive
    );
}

#[test]
fn imrecv_of_a_null_or_used_message_is_stale() {
    let mut sim = sim(2);
    send_now(&mut sim, 1, 0, 1, b"m");
    sim.run_until_idle().unwrap();
    let e = sim.engine(0);
    let (mut m, status) = e.improbe(1, 1, 0).unwrap().expect("the message is here");
    assert_eq!(status.bytes, 1);
    let copy = m;
    let mut r = e.imrecv(&mut m, zeroed(1)).unwrap().request;
    assert!(m.is_null());
    stale(e.imrecv(&mut copy.clone(), zeroed(1)));
    stale(e.imarecv(&mut copy.clone()));
    stale(e.imrecv(&mut Message::NULL.clone(), zeroed(1)));
    stale(e.imarecv(&mut Message::NULL.clone()));
    wait_data(&mut sim, 0, &mut r, b"m");
}

// ------------------------------------------------------------ peer death ----

/// 0 <-> 2 still carries eager and rendezvous traffic both ways.
fn survivors_still_talk(sim: &mut Sim) {
    for (from, to) in [(0, 2), (2, 0)] {
        for len in [EAGER, RNDV] {
            let payload = data(len, from as u8);
            let mut r = sim
                .engine(to)
                .irecv(from, 9, 0, zeroed(len))
                .unwrap()
                .request;
            let mut s = sim
                .engine(from)
                .isend(to, 9, 0, buf(&payload))
                .unwrap()
                .request;
            wait_data(sim, to, &mut r, &payload);
            if !s.is_empty() {
                assert_eq!(sim.wait(from, &mut s).unwrap().status.error, None);
            }
        }
    }
}

/// After rank 1 died: rank 0's new operations towards it fail in their
/// status (they start fine: the send is a real request, not EMPTY), and the
/// buffer comes back.
fn later_operations_towards_the_dead_fail_in_status(sim: &mut Sim) {
    let b = buf(b"late");
    let id = b.id();
    let s = sim.engine(0).isend(1, 1, 0, b).unwrap();
    assert!(!s.request.is_empty() && s.buf.is_none());
    let mut s = s.request;
    let c = sim.engine(0).test(&mut s).unwrap().expect("fails at once");
    assert_eq!((c.status.error, c.buf.map(|b| b.id())), (died(1), Some(id)));
    let mut r = sim.engine(0).irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let c = sim.engine(0).test(&mut r).unwrap().expect("fails at once");
    assert_eq!(c.status.error, died(1));
}

#[test]
fn peer_death_mid_rendezvous_as_sender_fails_the_affected_requests() {
    for mode in MODES {
        let mut sim = with_mode(3, mode);
        let payload = data(RNDV, 4);
        let big = buf(&payload);
        let id = big.id();
        let _at_1 = sim.engine(1).irecv(0, 1, 0, zeroed(RNDV)).unwrap();
        let mut send = sim.engine(0).isend(1, 1, 0, big).unwrap().request;
        let mut from1 = sim.engine(0).irecv(1, 5, 0, zeroed(8)).unwrap().request;
        let mut any = sim
            .engine(0)
            .irecv(ANY_SOURCE, 6, 0, zeroed(8))
            .unwrap()
            .request;
        let mut at2 = sim.engine(2).irecv(1, 5, 0, zeroed(8)).unwrap().request;
        progress_until(&mut sim, |sim| sim.engine(1).counters().packets_in > 0);
        assert!(
            !sim.engine(0).is_complete(&send).unwrap(),
            "{mode:?}: RTS seen, no FIN yet"
        );
        sim.kill(1);

        let c = sim.wait(0, &mut send).unwrap();
        assert_eq!(c.status.error, died(1), "{mode:?}");
        assert_eq!(
            c.buf.map(|b| b.id()),
            Some(id),
            "{mode:?}: send buffer handed back"
        );
        assert_eq!(sim.wait(0, &mut from1).unwrap().status.error, died(1));
        assert_eq!(sim.wait(2, &mut at2).unwrap().status.error, died(1));
        assert_eq!(sim.engine(0).peer_error(1), died(1));
        assert_eq!(sim.engine(2).peer_error(1), died(1));
        assert_eq!(sim.engine(0).peer_error(2), None);

        // ULFM's PROC_FAILED_PENDING: a wildcard receive on a communicator
        // that holds the dead rank fails (it cannot know it is not waiting
        // for it); a receive naming a survivor still works.
        let c = sim.wait(0, &mut any).unwrap();
        assert_eq!(
            c.status.error,
            Some(ferry_core::PeerError::FailedPending { rank: 1 }.into()),
            "{mode:?}"
        );
        let mut from2 = sim.engine(0).irecv(2, 6, 0, zeroed(8)).unwrap().request;
        send_now(&mut sim, 2, 0, 6, b"alive");
        wait_data(&mut sim, 0, &mut from2, b"alive");

        later_operations_towards_the_dead_fail_in_status(&mut sim);
        survivors_still_talk(&mut sim);
    }
}

#[test]
fn peer_death_mid_rendezvous_as_receiver_fails_the_receive() {
    for mode in MODES {
        let mut sim = with_mode(3, mode);
        let b = zeroed(RNDV);
        let id = b.id();
        let mut r = sim.engine(0).irecv(1, 1, 0, b).unwrap().request;
        let _s = sim.engine(1).isend(0, 1, 0, buf(&data(RNDV, 5))).unwrap();
        progress_until(&mut sim, |sim| sim.engine(0).counters().packets_in > 0);
        assert!(
            !sim.engine(0).is_complete(&r).unwrap(),
            "{mode:?}: matched, transferring"
        );
        sim.kill(1);
        let c = sim.wait(0, &mut r).unwrap();
        assert_eq!(c.status.error, died(1), "{mode:?}");
        assert_eq!(
            c.buf.map(|b| b.id()),
            Some(id),
            "{mode:?}: receive buffer handed back"
        );
        assert_eq!(sim.engine(0).peer_error(1), died(1));
        later_operations_towards_the_dead_fail_in_status(&mut sim);
        survivors_still_talk(&mut sim);
        sim.run_until_idle().unwrap();
        assert_eq!(sim.engine(0).live_requests(), 0, "{mode:?}: nothing leaked");
    }
}

// --------------------------------------------------------- corrupt header ----

fn protocol_error_from(err: Option<Error>, rank: Rank) {
    assert!(
        matches!(err, Some(Error::Peer(PeerError::Protocol { rank: r, .. })) if r == rank),
        "expected a protocol error from {rank}, got {err:?}"
    );
}

#[test]
fn a_corrupted_header_cuts_off_only_its_sender() {
    let mut sim = sim(3);
    let mut from1 = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    let mut from2 = sim.engine(0).irecv(2, 2, 0, zeroed(EAGER)).unwrap().request;
    sim.net().borrow_mut().corrupt_next(1, 0);
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 6));
    let c = sim.wait(0, &mut from1).unwrap();
    protocol_error_from(c.status.error, 1);
    assert_eq!(sim.net().borrow().link_stats(1, 0).corrupted, 1);
    assert_eq!(sim.engine(0).counters().protocol_errors, 1);
    protocol_error_from(sim.engine(0).peer_error(1), 1);

    // Rank 1 does not know; what it sends now is dropped, and not recounted.
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 7));
    sim.run_until_idle().unwrap();
    let counters = sim.engine(0).counters();
    assert_eq!(
        (counters.protocol_errors, counters.unexpected_depth),
        (1, 0)
    );

    assert!(!sim.engine(0).is_complete(&from2).unwrap());
    send_now(&mut sim, 2, 0, 2, &data(EAGER, 8));
    wait_data(&mut sim, 0, &mut from2, &data(EAGER, 8));
    survivors_still_talk(&mut sim);
}

#[test]
fn a_corrupted_control_packet_fails_the_waiting_send() {
    // Rendezvous-get: the packet after the RTS on 1 -> 0 is the FIN.
    let mut sim = with_mode(3, RndvMode::Get);
    let big = buf(&data(RNDV, 9));
    let id = big.id();
    let mut r = sim.engine(1).irecv(0, 1, 0, zeroed(RNDV)).unwrap().request;
    let mut s = sim.engine(0).isend(1, 1, 0, big).unwrap().request;
    sim.net().borrow_mut().corrupt_next(1, 0);
    wait_data(&mut sim, 1, &mut r, &data(RNDV, 9));
    let c = sim.wait(0, &mut s).unwrap();
    protocol_error_from(c.status.error, 1);
    assert_eq!(
        c.buf.map(|b| b.id()),
        Some(id),
        "the send buffer comes back"
    );
    assert_eq!(sim.engine(0).counters().protocol_errors, 1);
    survivors_still_talk(&mut sim);
}
