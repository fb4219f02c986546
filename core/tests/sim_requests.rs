//! Requests on the simulated network: REQUEST_EMPTY (the MPI Forum proposal
//! "MPI_REQUEST_EMPTY"), `is_complete` without progress (MPICH's ADI
//! completion design, `MPID_DeviceCheck`), the completion family with
//! MPI's null and inactive rules, the non-destructive `get_status*` forms
//! (Williams et al., "Enabling Non-Destructive Testing of the Statuses of
//! Multiple Requests", EuroMPI'23), cancel and generic requests.

mod common_requests;

use std::collections::BTreeSet;

use common_requests::*;
use ferry_core::sim::{NetConfig, Sim, SimDevice};
use ferry_core::{
    Any, Config, Engine, Outcount, Request, SendMode, Status, StatusAny, UsageError, ANY_SOURCE,
    ANY_TAG, PROC_NULL,
};

// ---------------------------------------------------------------- EMPTY ----

#[test]
fn eager_isend_returns_empty_with_its_own_buffer_and_allocates_nothing() {
    let mut sim = sim(2);
    let payload = data(EAGER, 1);
    let e = sim.engine(0);
    let (live, empties) = (e.live_requests(), e.counters().empty_returns);
    let b = buf(&payload);
    let id = b.id();
    let s = e.isend(1, 5, 0, b).unwrap();
    assert_eq!(s.request, Request::EMPTY);
    let back = s.buf.expect("an EMPTY send hands its buffer straight back");
    assert_eq!(back.id(), id, "the same buffer, not a copy");
    assert_eq!(&back[..], &payload[..]);
    assert_eq!(
        e.live_requests(),
        live,
        "no request object for an EMPTY send"
    );
    assert_eq!(e.counters().empty_returns, empties + 1);

    // The message really left: a later receive gets it.
    let mut r = sim.engine(1).irecv(0, 5, 0, zeroed(EAGER)).unwrap().request;
    wait_data(&mut sim, 1, &mut r, &payload);

    // Knowing that it is done needs no engine at all.
    let handle = s.request;
    drop(sim);
    assert!(handle.is_empty() && !handle.is_null());
}

#[test]
fn test_and_wait_on_empty_return_at_once_without_progress() {
    let mut sim = sim(2);
    // A packet waits for rank 0: if test or wait progressed, it would be gone.
    send_now(&mut sim, 1, 0, 3, b"pending");
    deliver_to(&sim, 0);
    let e = sim.engine(0);
    let events = e.events();

    let mut r = Request::EMPTY;
    assert!(e.is_complete(&r).unwrap());
    assert_eq!(e.get_status(&r).unwrap(), Some(Status::EMPTY));
    assert_eq!(r, Request::EMPTY, "get_status leaves the handle alone");
    let c = e.test(&mut r).unwrap().expect("EMPTY is complete");
    assert_eq!(c.status, Status::EMPTY);
    assert!(!c.status.cancelled);
    assert!(c.buf.is_none() && c.message == ferry_core::Message::NULL);
    assert!(r.is_null(), "test sets the handle to NULL");

    let mut r = Request::EMPTY;
    let c = e.wait(&mut r, &mut MustNotPark).unwrap();
    assert_eq!(c.status, Status::EMPTY);
    assert!(r.is_null());

    assert_eq!(e.events(), events, "no progress was made");
    assert!(
        sim.net().borrow().has_deliverable(0),
        "the packet is still uncollected"
    );
}

#[test]
fn empty_is_active_and_complete_in_the_multi_forms() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let pending = e.irecv(1, 9, 0, zeroed(EAGER)).unwrap().request;

    let mut list = [Request::NULL, Request::EMPTY];
    match e.testany(&mut list).unwrap() {
        Some(Any::Completed {
            index: 1,
            completion,
        }) => {
            assert_eq!(completion.status, Status::EMPTY)
        }
        other => panic!("testany over [NULL, EMPTY]: {other:?}"),
    }
    assert_eq!(list, [Request::NULL; 2]);

    let mut list = [Request::NULL, Request::EMPTY];
    assert!(matches!(
        e.waitany(&mut list, &mut MustNotPark).unwrap(),
        Any::Completed { index: 1, .. }
    ));

    let mut list = [pending, Request::EMPTY];
    let mut some = Vec::new();
    assert_eq!(
        e.testsome(&mut list, &mut some).unwrap(),
        Outcount::Count(1)
    );
    assert_eq!(some.len(), 1);
    assert_eq!((some[0].0, some[0].1.status), (1, Status::EMPTY));
    assert_eq!(
        list,
        [pending, Request::NULL],
        "the pending receive is untouched"
    );

    let mut list = [Request::EMPTY];
    assert_eq!(
        e.waitsome(&mut list, &mut some, &mut MustNotPark).unwrap(),
        Outcount::Count(1)
    );

    let list = [Request::NULL, Request::EMPTY];
    assert_eq!(
        e.get_status_any(&list).unwrap(),
        Some(StatusAny::Completed {
            index: 1,
            status: Status::EMPTY
        })
    );
    let mut statuses = Vec::new();
    let list = [Request::EMPTY, Request::NULL, pending];
    assert_eq!(
        e.get_status_some(&list, &mut statuses).unwrap(),
        Outcount::Count(1)
    );
    assert_eq!(statuses, vec![(0, Status::EMPTY)]);
    let mut all = Vec::new();
    assert!(e
        .get_status_all(&[Request::EMPTY, Request::EMPTY], &mut all)
        .unwrap());
    assert_eq!(all, vec![Status::EMPTY; 2]);
    assert!(!e
        .get_status_all(&[Request::EMPTY, pending], &mut all)
        .unwrap());

    // waitall mixes EMPTY with a real receive.
    send_now(&mut sim, 1, 0, 9, &data(EAGER, 2));
    let mut list = [Request::EMPTY, pending];
    let mut out = Vec::new();
    sim.with_park(0, |e, park| e.waitall(&mut list, &mut out, park))
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].status, Status::EMPTY);
    assert_eq!(out[1].status.source, 1);
    assert_eq!(&out[1].buf.as_ref().unwrap()[..], &data(EAGER, 2)[..]);
    assert_eq!(list, [Request::NULL; 2]);
}

#[test]
fn sends_to_proc_null_return_empty_in_every_mode() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let live = e.live_requests();
    for mode in [SendMode::Standard, SendMode::Synchronous, SendMode::Ready] {
        for len in [0, EAGER, RNDV] {
            let b = zeroed(len);
            let id = b.id();
            let s = e.isend_mode(PROC_NULL, 1, 0, b, mode).unwrap();
            assert!(s.request.is_empty(), "{mode:?} {len}");
            assert_eq!(s.buf.map(|b| b.id()), Some(id));
        }
    }
    assert_eq!(e.live_requests(), live);
    assert!(sim.net().borrow().is_idle(), "nothing went on the wire");
}

#[test]
fn issend_and_rendezvous_sends_never_return_empty() {
    let mut sim = sim(2);
    let payload = data(RNDV, 3);
    let e = sim.engine(0);
    let live = e.live_requests();
    let mut sync = e.issend(1, 1, 0, buf(b"sync")).unwrap();
    assert!(!sync.request.is_empty() && sync.buf.is_none());
    let big = buf(&payload);
    let big_id = big.id();
    let mut large = e.isend(1, 2, 0, big).unwrap();
    assert!(!large.request.is_empty() && large.buf.is_none());
    assert_eq!(e.live_requests(), live + 2);

    // A synchronous send stays pending until a receive matches it.
    sim.run_until_idle().unwrap();
    assert!(!sim.engine(0).is_complete(&sync.request).unwrap());

    let mut r1 = sim.engine(1).irecv(0, 1, 0, zeroed(4)).unwrap().request;
    let mut r2 = sim.engine(1).irecv(0, 2, 0, zeroed(RNDV)).unwrap().request;
    wait_data(&mut sim, 1, &mut r1, b"sync");
    wait_data(&mut sim, 1, &mut r2, &payload);
    let c = sim.wait(0, &mut sync.request).unwrap();
    assert_eq!(c.status, Status::EMPTY);
    let c = sim.wait(0, &mut large.request).unwrap();
    assert_eq!(buf_id(&c), Some(big_id), "the send buffer comes back");
    assert_eq!(sim.engine(0).live_requests(), live);
}

#[test]
fn receive_of_an_arrived_message_is_complete_but_real_by_default() {
    let mut sim = sim(2);
    send_now(&mut sim, 1, 0, 4, &data(EAGER, 4));
    sim.run_until_idle().unwrap();
    let e = sim.engine(0);
    let b = zeroed(EAGER);
    let id = b.id();
    let s = e.irecv(1, 4, 0, b).unwrap();
    assert!(!s.request.is_empty() && !s.request.is_null());
    assert!(s.buf.is_none());
    assert!(e.is_complete(&s.request).unwrap(), "matched inside irecv");
    let mut r = s.request;
    let c = e.test(&mut r).unwrap().unwrap();
    assert_eq!(c.status, recv_status(1, 4, EAGER));
    assert_eq!((buf_id(&c), bytes_of(&c)), (Some(id), &data(EAGER, 4)[..]));
}

#[test]
fn receive_may_be_empty_when_configured() {
    let opt_in = Config {
        recv_may_be_empty: true,
        ..Config::default()
    };
    let mut sim = sim_with(NetConfig::new(2), opt_in);
    send_now(&mut sim, 1, 0, 4, &data(EAGER, 5));
    send_now(&mut sim, 1, 0, 6, &data(EAGER, 6));
    sim.run_until_idle().unwrap();
    let e = sim.engine(0);
    let live = e.live_requests();

    let b = zeroed(EAGER);
    let id = b.id();
    let s = e.irecv(1, 4, 0, b).unwrap();
    assert!(s.request.is_empty());
    let got = s.buf.expect("the filled buffer comes straight back");
    assert_eq!(got.id(), id);
    assert_eq!(&got[..], &data(EAGER, 5)[..]);

    let s = e.iarecv(1, 6, 0).unwrap();
    assert!(s.request.is_empty());
    assert_eq!(
        &s.buf.unwrap()[..],
        &data(EAGER, 6)[..],
        "ARecv: exactly the message"
    );
    assert_eq!(e.live_requests(), live);

    // Nothing here yet: a real request, even with the option on.
    let s = e.irecv(1, 7, 0, zeroed(1)).unwrap();
    assert!(!s.request.is_empty() && s.buf.is_none());
    assert!(!e.is_complete(&s.request).unwrap());
}

// -------------------------------------------------------- is_complete ----

#[test]
fn is_complete_reads_state_without_progress() {
    let mut sim = sim(2);
    let r = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 7));
    deliver_to(&sim, 0);
    let e = sim.engine(0);
    let events = e.events();
    for _ in 0..3 {
        assert!(
            !e.is_complete(&r).unwrap(),
            "the message is deliverable, not received"
        );
    }
    assert_eq!(e.events(), events);
    assert!(sim.net().borrow().has_deliverable(0));
    assert!(sim.engine(0).progress().unwrap() > 0);
    assert!(sim.engine(0).is_complete(&r).unwrap());
}

// ---------------------------------------------------- completion family ----

#[test]
fn test_is_none_until_complete_then_frees_the_request() {
    let mut sim = sim(2);
    let b = zeroed(EAGER);
    let id = b.id();
    let mut r = sim.engine(0).irecv(1, 1, 0, b).unwrap().request;
    let copy = r;
    assert!(sim.engine(0).test(&mut r).unwrap().is_none());
    assert_eq!(r, copy, "a pending test leaves the handle as it was");
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 8));
    sim.run_until_idle().unwrap();
    let live = sim.engine(0).live_requests();
    let c = sim.engine(0).test(&mut r).unwrap().unwrap();
    assert!(r.is_null());
    assert_eq!(c.buf.unwrap().id(), id);
    assert_eq!(sim.engine(0).live_requests(), live - 1);
}

#[test]
fn testall_completes_nothing_while_one_is_pending() {
    let mut sim = sim(3);
    let bufs = [zeroed(EAGER), zeroed(RNDV)];
    let ids = [bufs[0].id(), bufs[1].id()];
    let [b0, b1] = bufs;
    let r1 = sim.engine(0).irecv(1, 1, 0, b0).unwrap().request;
    let r2 = sim.engine(0).irecv(2, 2, 0, b1).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 9));
    sim.run_until_idle().unwrap();

    let e = sim.engine(0);
    let live = e.live_requests();
    let mut list = [r1, r2];
    let mut out = Vec::new();
    assert!(!e.testall(&mut list, &mut out).unwrap());
    assert_eq!(list, [r1, r2], "handles unchanged");
    assert_eq!(e.live_requests(), live, "nothing freed");
    assert!(e.is_complete(&r1).unwrap(), "still valid, and complete");
    assert!(!e.is_complete(&r2).unwrap());

    let big = data(RNDV, 10);
    let mut s = sim.engine(2).isend(0, 2, 0, buf(&big)).unwrap().request;
    sim.with_park(0, |e, park| e.waitall(&mut list, &mut out, park))
        .unwrap();
    assert_eq!(out.len(), 2, "one completion per request");
    for (i, c) in out.iter().enumerate() {
        assert_eq!(buf_id(c), Some(ids[i]), "buffer {i} handed back");
        assert_eq!(c.status.source, i as i32 + 1);
    }
    assert_eq!(&out[1].buf.as_ref().unwrap()[..], &big[..]);
    assert_eq!(list, [Request::NULL; 2]);
    assert_eq!(sim.engine(0).live_requests(), live - 2);
    sim.wait(2, &mut s).unwrap();
}

#[test]
fn any_and_some_forms_complete_what_is_done_and_skip_null() {
    let mut sim = sim(3);
    let from1 = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    let from2 = sim.engine(0).irecv(2, 2, 0, zeroed(EAGER)).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 11));
    sim.run_until_idle().unwrap();

    let e = sim.engine(0);
    let mut list = [Request::NULL, from2, Request::NULL, from1];
    match e.testany(&mut list).unwrap() {
        Some(Any::Completed {
            index: 3,
            completion,
        }) => assert_eq!(completion.status.source, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(list, [Request::NULL, from2, Request::NULL, Request::NULL]);
    assert!(
        e.testany(&mut list).unwrap().is_none(),
        "only a pending one left"
    );

    send_now(&mut sim, 2, 0, 2, &data(EAGER, 12));
    let got = sim
        .with_park(0, |e, park| e.waitany(&mut list, park))
        .unwrap();
    assert!(matches!(got, Any::Completed { index: 1, .. }));
    assert_eq!(list, [Request::NULL; 4]);

    // some: every complete one at once, the pending one left alone.
    let a = sim.engine(0).irecv(1, 3, 0, zeroed(1)).unwrap().request;
    let b = sim.engine(0).irecv(2, 3, 0, zeroed(1)).unwrap().request;
    let c = sim.engine(0).irecv(1, 4, 0, zeroed(1)).unwrap().request;
    send_now(&mut sim, 1, 0, 3, b"a");
    send_now(&mut sim, 2, 0, 3, b"b");
    sim.run_until_idle().unwrap();
    let mut list = [a, Request::NULL, b, c];
    let mut out = Vec::new();
    assert_eq!(
        sim.engine(0).testsome(&mut list, &mut out).unwrap(),
        Outcount::Count(2)
    );
    let idx: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
    assert_eq!(idx, vec![0, 2]);
    assert_eq!(list, [Request::NULL, Request::NULL, Request::NULL, c]);
    assert_eq!(
        sim.engine(0).testsome(&mut list, &mut out).unwrap(),
        Outcount::Count(0)
    );

    send_now(&mut sim, 1, 0, 4, b"c");
    let n = sim
        .with_park(0, |e, park| e.waitsome(&mut list, &mut out, park))
        .unwrap();
    assert_eq!(n, Outcount::Count(1));
    assert_eq!(out[0].0, 3);
    assert_eq!(&out[0].1.buf.as_ref().unwrap()[..], b"c");
}

/// Every any/some form over a list with no active entry: MPI_UNDEFINED,
/// without sleeping and without touching the list.
fn assert_all_undefined(e: &mut Engine<SimDevice>, list: &mut [Request]) {
    let before = list.to_vec();
    let (mut some, mut st) = (Vec::new(), Vec::new());
    assert!(matches!(e.testany(list).unwrap(), Some(Any::Undefined)));
    assert!(matches!(
        e.waitany(list, &mut MustNotPark).unwrap(),
        Any::Undefined
    ));
    assert_eq!(e.testsome(list, &mut some).unwrap(), Outcount::Undefined);
    let n = e.waitsome(list, &mut some, &mut MustNotPark).unwrap();
    assert_eq!(n, Outcount::Undefined);
    assert_eq!(e.get_status_any(list).unwrap(), Some(StatusAny::Undefined));
    assert_eq!(
        e.get_status_some(list, &mut st).unwrap(),
        Outcount::Undefined
    );
    assert!(some.is_empty() && st.is_empty());
    assert_eq!(list, &before[..], "inactive entries are not freed");
}

#[test]
fn all_null_lists_follow_mpi_rules() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let mut nulls = [Request::NULL; 3];
    assert_all_undefined(e, &mut nulls);

    let (mut out, mut st) = (Vec::new(), Vec::new());
    assert!(e.testall(&mut nulls, &mut out).unwrap());
    assert_eq!(out.len(), 3);
    assert!(out
        .iter()
        .all(|c| c.status == Status::EMPTY && c.buf.is_none()));
    e.waitall(&mut nulls, &mut out, &mut MustNotPark).unwrap();
    assert_eq!(out.len(), 3);
    assert!(e.get_status_all(&nulls, &mut st).unwrap());
    assert_eq!(st, vec![Status::EMPTY; 3]);
    assert_eq!(e.get_status(&Request::NULL).unwrap(), Some(Status::EMPTY));

    // An empty list: all-forms are trivially done, any-forms undefined.
    assert!(e.testall(&mut [], &mut out).unwrap() && out.is_empty());
    assert!(matches!(e.testany(&mut []).unwrap(), Some(Any::Undefined)));
}

#[test]
fn inactive_persistent_requests_are_skipped_like_null() {
    let mut sim = sim(2);
    let e = sim.engine(0);
    let p = e.recv_init(1, 1, 0, zeroed(EAGER)).unwrap();
    let q = e.send_init(1, 2, 0, buf(b"q"), SendMode::Standard).unwrap();
    let mut list = [Request::NULL, p, q];
    assert_all_undefined(e, &mut list);

    // Still usable: start, complete, and be inactive again.
    e.start(&p).unwrap();
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 13));
    sim.run_until_idle().unwrap();
    let e = sim.engine(0);
    let got = e.testany(&mut list).unwrap();
    assert!(matches!(got, Some(Any::Completed { index: 1, .. })));
    assert_eq!(list[1], p, "a persistent request keeps its handle");
    assert_eq!(&e.persistent_buf(&p).unwrap()[..], &data(EAGER, 13)[..]);
    assert_all_undefined(e, &mut list);
}

#[test]
fn inactive_persistent_request_reports_an_empty_status_in_all_forms() {
    // MPI: a null or inactive entry's status is the empty status, also after
    // the persistent request has been used once.
    let mut sim = sim(2);
    let p = sim.engine(0).recv_init(1, 1, 0, zeroed(EAGER)).unwrap();
    sim.engine(0).start(&p).unwrap();
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 14));
    let mut r = p;
    let c = sim.wait(0, &mut r).unwrap();
    assert_eq!(c.status.source, 1, "the active run's status");
    assert_eq!(r, p);

    let e = sim.engine(0);
    assert_eq!(e.get_status(&p).unwrap(), Some(Status::EMPTY));
    let mut out = Vec::new();
    assert!(e.testall(&mut [p], &mut out).unwrap());
    assert_eq!(out[0].status, Status::EMPTY);
    let mut st = Vec::new();
    assert!(e.get_status_all(&[p, Request::NULL], &mut st).unwrap());
    assert_eq!(
        st,
        vec![Status::EMPTY; 2],
        "inactive entry must report the empty status"
    );
}

// ---------------------------------------------------------- get_status ----

#[test]
fn get_status_forms_are_non_destructive() {
    let mut sim = sim(3);
    let bufs = [zeroed(EAGER), zeroed(RNDV)];
    let ids = [bufs[0].id(), bufs[1].id()];
    let [b0, b1] = bufs;
    let r1 = sim.engine(0).irecv(1, 1, 0, b0).unwrap().request;
    let r2 = sim.engine(0).irecv(2, 2, 0, b1).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 15));
    let big = buf(&data(RNDV, 16));
    let mut s = sim.engine(2).isend(0, 2, 0, big).unwrap().request;
    sim.run_until_idle().unwrap();
    sim.wait(2, &mut s).unwrap();

    let e = sim.engine(0);
    let live = e.live_requests();
    let list = [r1, r2];
    let mut all = Vec::new();
    for _ in 0..3 {
        assert!(e.get_status_all(&list, &mut all).unwrap());
    }
    assert_eq!(all[0].source, 1);
    assert_eq!((all[1].source, all[1].bytes), (2, RNDV));
    let mut some = Vec::new();
    assert_eq!(
        e.get_status_some(&list, &mut some).unwrap(),
        Outcount::Count(2)
    );
    assert_eq!(some, vec![(0, all[0]), (1, all[1])]);
    let Some(StatusAny::Completed { index, status }) = e.get_status_any(&list).unwrap() else {
        panic!("both are complete")
    };
    assert_eq!(status, all[index]);
    assert_eq!(e.get_status(&r2).unwrap(), Some(all[1]));
    assert_eq!(e.live_requests(), live, "nothing was freed");

    // A later destructive completion sees the same statuses and buffers.
    let mut list = list;
    let mut out = Vec::new();
    assert_eq!(e.testsome(&mut list, &mut out).unwrap(), Outcount::Count(2));
    for (i, c) in &out {
        assert_eq!(c.status, all[*i]);
        assert_eq!(buf_id(c), Some(ids[*i]));
    }
    assert_eq!(e.live_requests(), live - 2);
}

/// Only `poll` progresses the receiver; the sender progresses and time moves
/// in between. The receive must still complete.
fn receiver_driven_by(len: usize, mut poll: impl FnMut(&mut Sim, Request) -> bool) {
    let mut sim = sim_with(NetConfig::new(2).with_delay(1, 3), Config::default());
    let r = sim.engine(0).irecv(1, 1, 0, zeroed(len)).unwrap().request;
    let payload = data(len, 17);
    let mut s = sim.engine(1).isend(0, 1, 0, buf(&payload)).unwrap().request;
    let mut done = false;
    for _ in 0..SPIN_LIMIT {
        if poll(&mut sim, r) {
            done = true;
            break;
        }
        sim.engine(1).progress().unwrap();
        sim.net().borrow_mut().advance();
    }
    assert!(done, "len {len}: the receive never completed");
    let mut r = r;
    wait_data(&mut sim, 0, &mut r, &payload);
    if !s.is_empty() {
        sim.wait(1, &mut s).unwrap();
    }
}

#[test]
fn get_status_calls_drive_progress() {
    for len in [EAGER, RNDV] {
        receiver_driven_by(len, |sim, r| {
            matches!(
                sim.engine(0).get_status_any(&[r]).unwrap(),
                Some(StatusAny::Completed { .. })
            )
        });
        receiver_driven_by(len, |sim, r| {
            let mut st = Vec::new();
            sim.engine(0)
                .get_status_some(&[Request::NULL, r], &mut st)
                .unwrap()
                == Outcount::Count(1)
        });
        receiver_driven_by(len, |sim, r| {
            sim.engine(0).get_status_all(&[r], &mut Vec::new()).unwrap()
        });
        receiver_driven_by(len, |sim, r| {
            sim.engine(0).get_status(&r).unwrap().is_some()
        });
    }
}

#[test]
fn get_status_any_rotates_over_complete_requests() {
    let mut sim = sim(2);
    let list = [Request::EMPTY, Request::EMPTY];
    let seen: BTreeSet<usize> = (0..4)
        .map(|_| match sim.engine(0).get_status_any(&list).unwrap() {
            Some(StatusAny::Completed { index, .. }) => index,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(seen, BTreeSet::from([0, 1]), "index 0 must not always win");

    let a = sim.engine(0).irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let b = sim.engine(0).irecv(1, 2, 0, zeroed(1)).unwrap().request;
    send_now(&mut sim, 1, 0, 1, b"a");
    send_now(&mut sim, 1, 0, 2, b"b");
    sim.run_until_idle().unwrap();
    let list = [a, Request::NULL, b];
    let seen: BTreeSet<usize> = (0..4)
        .filter_map(|_| match sim.engine(0).get_status_any(&list).unwrap() {
            Some(StatusAny::Completed { index, .. }) => Some(index),
            _ => None,
        })
        .collect();
    assert_eq!(seen, BTreeSet::from([0, 2]));
}

#[test]
fn testany_does_not_starve_a_complete_receive_behind_an_always_complete_entry() {
    let mut sim = sim(2);
    let r = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 18));
    sim.run_until_idle().unwrap();
    let mut list = [Request::EMPTY, r];
    for turn in 0..8 {
        match sim.engine(0).testany(&mut list).unwrap() {
            Some(Any::Completed { index: 0, .. }) => list[0] = Request::EMPTY,
            Some(Any::Completed {
                index: 1,
                completion: c,
            }) => {
                return assert_eq!(bytes_of(&c), &data(EAGER, 18)[..]);
            }
            other => panic!("turn {turn}: {other:?}"),
        }
    }
    panic!("testany starved the complete receive");
}

#[test]
fn testsome_does_not_starve_a_receive_whose_message_is_arriving() {
    // MPI (Waitsome/Testsome): a receive that repeatedly appears in the list,
    // with a matching send posted, eventually succeeds. Here a fresh EMPTY
    // send joins every call, as in a loop that keeps posting small sends.
    let mut sim = sim(2);
    let r = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 19));
    deliver_to(&sim, 0);
    let mut out = Vec::new();
    for _ in 0..100 {
        let mut list = [Request::EMPTY, r];
        sim.engine(0).testsome(&mut list, &mut out).unwrap();
        if list[1].is_null() {
            return;
        }
        sim.net().borrow_mut().advance();
    }
    panic!("the receive never completed: testsome never progressed");
}

#[test]
fn get_status_some_reports_every_complete_request() {
    let mut sim = sim(3);
    let mut reqs = Vec::new();
    for src in [1, 2] {
        for tag in 0..3 {
            reqs.push(sim.engine(0).irecv(src, tag, 0, zeroed(1)).unwrap().request);
        }
    }
    for tag in [0, 2] {
        send_now(&mut sim, 1, 0, tag, b"x");
        send_now(&mut sim, 2, 0, tag, b"y");
    }
    sim.run_until_idle().unwrap();
    let mut st = Vec::new();
    let n = sim.engine(0).get_status_some(&reqs, &mut st).unwrap();
    assert_eq!(n, Outcount::Count(4));
    let want: Vec<_> = [0, 2, 3, 5]
        .into_iter()
        .map(|i| (i, recv_status(1 + i as i32 / 3, i as i32 % 3, 1)))
        .collect();
    assert_eq!(st, want);
}

// --------------------------------------------------------------- cancel ----

#[test]
fn cancel_of_unmatched_receives_completes_them_cancelled() {
    let mut sim = sim(2);
    let b = filled(EAGER, 0xAB);
    let id = b.id();
    let e = sim.engine(0);
    let mut recv = e.irecv(1, 1, 0, b).unwrap().request;
    let mut arecv = e.iarecv(1, 1, 0).unwrap().request;
    let mut probe = e.iprobe_request(1, 1, 0).unwrap();
    let mut mprobe = e.improbe_request(ANY_SOURCE, ANY_TAG, 0).unwrap();
    for r in [recv, arecv, probe, mprobe] {
        e.cancel(&r).unwrap();
    }
    let c = e.test(&mut recv).unwrap().expect("cancelled is complete");
    assert!(c.status.cancelled);
    let back = c.buf.unwrap();
    assert_eq!(back.id(), id);
    assert!(back.iter().all(|&x| x == 0xAB), "the buffer is untouched");
    for r in [&mut arecv, &mut probe, &mut mprobe] {
        let c = e.test(r).unwrap().expect("complete");
        assert!(c.status.cancelled);
        assert!(bytes_of(&c).is_empty() && c.message == ferry_core::Message::NULL);
    }

    // The message goes to a live receive, not to any cancelled one.
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 20));
    let mut other = sim.engine(0).irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    wait_data(&mut sim, 0, &mut other, &data(EAGER, 20));
    assert_eq!(sim.engine(0).counters().posted_depth, 0);
}

#[test]
fn cancel_of_sends_and_matched_receives_does_nothing() {
    let mut sim = sim(2);
    let big = data(RNDV, 21);
    let mut send = sim.engine(0).isend(1, 1, 0, buf(&big)).unwrap().request;
    sim.engine(0).cancel(&send).unwrap();
    sim.engine(0).cancel(&Request::EMPTY).unwrap();

    // Matched, mid-rendezvous: the RTS has arrived and the get is running.
    let mut recv = sim.engine(1).irecv(0, 1, 0, zeroed(RNDV)).unwrap().request;
    while sim.engine(1).counters().packets_in == 0 {
        sim.step().unwrap();
    }
    assert!(
        !sim.engine(1).is_complete(&recv).unwrap(),
        "still transferring"
    );
    sim.engine(1).cancel(&recv).unwrap();
    let c = wait_data(&mut sim, 1, &mut recv, &big);
    assert!(!c.status.cancelled);
    let c = sim.wait(0, &mut send).unwrap();
    assert!(!c.status.cancelled && c.status.error.is_none());

    // Matched and complete (eager).
    let mut recv = sim.engine(1).irecv(0, 2, 0, zeroed(EAGER)).unwrap().request;
    send_now(&mut sim, 0, 1, 2, &data(EAGER, 22));
    sim.run_until_idle().unwrap();
    sim.engine(1).cancel(&recv).unwrap();
    let c = wait_data(&mut sim, 1, &mut recv, &data(EAGER, 22));
    assert!(!c.status.cancelled);
}

// -------------------------------------------------------------- generic ----

#[test]
fn generic_requests_mix_with_point_to_point_in_waitall_and_testsome() {
    let mut sim = sim(2);
    let payload = data(RNDV, 23);
    let e = sim.engine(0);
    let g = e.generic_request();
    let recv = e.irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
    let send = e.isend(1, 2, 0, buf(&payload)).unwrap().request;
    let mut peer = sim.engine(1).irecv(0, 2, 0, zeroed(RNDV)).unwrap().request;
    let mut list = [g, recv, send];
    let mut some = Vec::new();
    let n = sim.engine(0).testsome(&mut list, &mut some).unwrap();
    assert_eq!(n, Outcount::Count(0));

    let gen_status = recv_status(0, 77, 3);
    let gb = buf(b"gen");
    let gid = gb.id();
    let e = sim.engine(0);
    e.complete_generic(&g, gen_status, Some(gb)).unwrap();
    let twice = e.complete_generic(&g, Status::EMPTY, None).unwrap_err();
    let kind = UsageError::WrongRequestKind("not a pending generic request");
    assert_eq!(usage(twice), kind, "completing a generic request twice");
    assert_eq!(
        e.testsome(&mut list, &mut some).unwrap(),
        Outcount::Count(1)
    );
    assert_eq!((some[0].0, some[0].1.status), (0, gen_status));
    assert_eq!(buf_id(&some[0].1), Some(gid));
    assert!(list[0].is_null());

    let g2 = e.generic_request();
    list[0] = g2;
    e.complete_generic(&g2, Status::EMPTY, None).unwrap();
    send_now(&mut sim, 1, 0, 1, &data(EAGER, 24));
    let mut out = Vec::new();
    sim.with_park(0, |e, park| e.waitall(&mut list, &mut out, park))
        .unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].status, Status::EMPTY);
    assert_eq!(bytes_of(&out[1]), &data(EAGER, 24)[..]);
    assert_eq!(bytes_of(&out[2]), &payload[..]);
    wait_data(&mut sim, 1, &mut peer, &payload);
    let gone = sim.engine(0).complete_generic(&g2, Status::EMPTY, None);
    assert_eq!(usage(gone.unwrap_err()), UsageError::StaleHandle, "freed");
}
