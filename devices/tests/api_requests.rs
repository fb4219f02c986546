//! The completion family through the public API: REQUEST_EMPTY without a
//! lock, null and inactive requests, non-destructive `get_status_*`,
//! cancel, and freeing by drop.

use std::sync::mpsc;
use std::thread;

use ferry::{Config, Outcome, Request, Status, World, ANY_TAG};

fn world() -> World {
    Config::default().init().expect("singleton init")
}

#[test]
fn request_empty_needs_no_lock() {
    let w = world();
    let comm = w.world();
    let mut eager = comm.isend(vec![7u8; 16], 0, 1).unwrap();
    assert!(eager.is_empty());
    // Another thread holds the world's lock (a persistent request's buffer
    // closure runs under it) while this one inspects and completes the
    // EMPTY request: neither may need the lock, or this would deadlock.
    let mut holder = comm.send_init(vec![0u8; 1], 0, 2).unwrap();
    let (inside_tx, inside_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let t = thread::spawn(move || {
        holder
            .with_buf_mut::<u8, _>(|_| {
                inside_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
            .unwrap();
        holder
    });
    inside_rx.recv().unwrap();
    assert!(eager.is_empty());
    assert!(eager.is_complete().unwrap());
    let done = eager.wait().unwrap();
    assert_eq!(done.status, Status::EMPTY);
    assert!(!done.status.cancelled);
    assert_eq!(
        done.into_vec::<u8>().unwrap(),
        [7; 16],
        "the buffer comes back"
    );
    assert!(eager.is_null());
    release_tx.send(()).unwrap();
    drop(t.join().unwrap());
    let (v, _) = comm.arecv::<u8>(0, 1).unwrap();
    assert_eq!(v, [7; 16]);
}

#[test]
fn empty_requests_mix_with_others_in_every_call() {
    let w = world();
    let comm = w.world();
    let recv = comm.irecv(vec![0u8; 16], 0, 1).unwrap();
    let empty = comm.isend(vec![1u8; 16], 0, 1).unwrap();
    assert!(empty.is_empty());
    let mut reqs = [empty, recv];
    let statuses = loop {
        if let Some(s) = ferry::get_status_all(&reqs).unwrap() {
            break s;
        }
    };
    assert_eq!(statuses[0], Status::EMPTY);
    assert_eq!((statuses[1].source, statuses[1].bytes), (0, 16));
    let done = ferry::wait_all(&mut reqs).unwrap();
    assert_eq!(done[0].bytes(), &[1; 16], "EMPTY hands its buffer back");
    assert_eq!(done[1].bytes(), &[1; 16]);
}

/// EMPTY requests hold no communicator, so a list of only EMPTY and null
/// requests is settled without a world: every call must still treat EMPTY
/// as complete (and hand its buffer back) and null as inactive.
#[test]
fn lists_of_only_empty_and_null_requests() {
    let w = world();
    let comm = w.world();
    let empty = |v: u8| {
        let r = comm.isend(vec![v; 4], 0, 3).unwrap();
        assert!(r.is_empty());
        r
    };
    let mut reqs = [Request::NULL, empty(1), empty(2)];
    let statuses = ferry::get_status_all(&reqs).unwrap().expect("all complete");
    assert_eq!(statuses, [Status::EMPTY; 3]);
    assert!(matches!(
        ferry::get_status_any(&reqs).unwrap(),
        Some(Outcome::Completed((1, Status::EMPTY)))
    ));
    match ferry::get_status_some(&reqs).unwrap() {
        Outcome::Completed(v) => assert_eq!(v, [(1, Status::EMPTY), (2, Status::EMPTY)]),
        Outcome::Undefined => panic!("two EMPTY requests are complete"),
    }
    assert!(!reqs[1].is_null(), "get_status_* complete nothing");

    match ferry::wait_any(&mut reqs).unwrap() {
        Outcome::Completed((1, done)) => assert_eq!(done.bytes(), &[1; 4]),
        other => panic!("wait_any: {other:?}"),
    }
    assert!(reqs[1].is_null());
    match ferry::test_some(&mut reqs).unwrap() {
        Outcome::Completed(v) => {
            assert_eq!(v.len(), 1);
            assert_eq!((v[0].0, v[0].1.bytes()), (2, &[2u8; 4][..]));
        }
        Outcome::Undefined => panic!("one EMPTY request is left"),
    }
    assert!(matches!(
        ferry::wait_some(&mut reqs).unwrap(),
        Outcome::Undefined
    ));

    let mut reqs = [empty(3), Request::NULL];
    let mut out = Vec::new();
    ferry::wait_all_into(&mut reqs, &mut out).unwrap();
    assert_eq!(
        out[0].bytes(),
        &[3; 4],
        "wait_all hands EMPTY's buffer back"
    );
    assert_eq!(out[1].status, Status::EMPTY);
    assert!(reqs.iter().all(Request::is_null));
    let mut reqs = [empty(4)];
    let done = ferry::test_all(&mut reqs).unwrap().expect("complete");
    assert_eq!(done[0].bytes(), &[4; 4]);
    let mut reqs = [empty(5)];
    assert!(matches!(
        ferry::test_any(&mut reqs).unwrap(),
        Some(Outcome::Completed((0, _)))
    ));
    for _ in 0..5 {
        let _ = comm.arecv::<u8>(0, 3).unwrap();
    }
}

#[test]
fn null_and_inactive_requests_follow_mpi() {
    let w = world();
    let comm = w.world();
    let mut nulls = [Request::NULL, Request::NULL];
    assert_eq!(ferry::wait_all(&mut nulls).unwrap().len(), 2);
    assert!(matches!(
        ferry::wait_any(&mut nulls).unwrap(),
        Outcome::Undefined
    ));
    assert!(matches!(
        ferry::test_any(&mut nulls).unwrap(),
        Some(Outcome::Undefined)
    ));
    assert!(matches!(
        ferry::wait_some(&mut nulls).unwrap(),
        Outcome::Undefined
    ));
    assert!(matches!(
        ferry::get_status_some(&nulls).unwrap(),
        Outcome::Undefined
    ));
    assert!(matches!(
        ferry::get_status_any(&nulls).unwrap(),
        Some(Outcome::Undefined)
    ));
    let mut null = Request::NULL;
    assert_eq!(null.wait().unwrap().status, Status::EMPTY);
    assert!(null.test().unwrap().is_some());

    // An inactive persistent request is inactive too.
    let inactive = comm.recv_init(vec![0u8; 1], 0, 1).unwrap();
    let mut reqs = [Request::NULL, inactive];
    assert!(matches!(
        ferry::wait_any(&mut reqs).unwrap(),
        Outcome::Undefined
    ));
    let all = ferry::wait_all(&mut reqs).unwrap();
    assert_eq!(all[1].status, Status::EMPTY);
    assert!(
        !reqs[1].is_null(),
        "waiting on an inactive persistent request keeps it"
    );
}

#[test]
fn get_status_calls_complete_nothing() {
    let w = world();
    let comm = w.world();
    let reqs: Vec<Request> = (0..4)
        .map(|t| comm.irecv(vec![0u32; 2], 0, t).unwrap())
        .collect();
    let mut reqs = reqs;
    comm.send(&[1u32, 1], 0, 1).unwrap();
    comm.send(&[3u32, 3], 0, 3).unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let Outcome::Completed(some) = ferry::get_status_some(&reqs).unwrap() else {
            panic!("undefined");
        };
        let idx: Vec<usize> = some.iter().map(|(i, _)| *i).collect();
        assert_eq!(idx, [1, 3], "the same complete requests, every time");
        assert!(some.iter().all(|(_, s)| s.bytes == 8));
        seen.push(idx);
    }
    assert!(ferry::get_status_all(&reqs).unwrap().is_none());
    let Some(Outcome::Completed((i, s))) = ferry::get_status_any(&reqs).unwrap() else {
        panic!();
    };
    assert!(i == 1 || i == 3);
    assert_eq!(s.tag, i as i32);
    assert!(reqs.iter().all(|r| !r.is_null()), "nothing was freed");
    // testsome now completes exactly those two.
    let Outcome::Completed(done) = ferry::test_some(&mut reqs).unwrap() else {
        panic!();
    };
    assert_eq!(done.len(), 2);
    assert!(reqs[1].is_null() && reqs[3].is_null());
    for r in &reqs {
        r.cancel().unwrap();
    }
    let done = ferry::wait_all(&mut reqs).unwrap();
    assert!(done[0].status.cancelled && done[2].status.cancelled);
    assert!(
        !done[1].status.cancelled,
        "null entries report an empty status"
    );
}

#[test]
fn cancel_leaves_matched_and_completed_requests_alone() {
    let w = world();
    let comm = w.world();
    comm.send(&[5u8], 0, 1).unwrap();
    comm.probe(0, 1).unwrap(); // arrived: the receive below matches at once
    let mut matched = comm.irecv(vec![0u8; 1], 0, 1).unwrap();
    matched.cancel().unwrap();
    let done = matched.wait().unwrap();
    assert!(!done.status.cancelled);
    assert_eq!(done.bytes(), &[5]);
    let mut pending = comm.irecv(vec![0u8; 1], 0, ANY_TAG).unwrap();
    pending.cancel().unwrap();
    assert!(pending.wait().unwrap().status.cancelled);
    let empty = comm.isend(vec![0u8], 0, 2).unwrap();
    empty.cancel().unwrap();
}

#[test]
fn dropping_a_pending_request_frees_it_in_the_background() {
    let w = world();
    let comm = w.world();
    let r = comm.irecv(vec![0u8; 4], 0, 9).unwrap();
    assert_eq!(w.counters().engine.posted_depth, 1);
    drop(r);
    assert_eq!(
        w.counters().engine.posted_depth,
        1,
        "still posted: it completes later"
    );
    comm.send(&[1u8, 2, 3, 4], 0, 9).unwrap();
    assert!(
        comm.iprobe(0, 9).unwrap().is_none(),
        "the freed receive took it"
    );
    assert_eq!(w.counters().engine.posted_depth, 0);
}

#[test]
fn test_progresses_and_is_complete_does_not() {
    let w = world();
    let comm = w.world();
    let mut r = comm.irecv(vec![0u8; 1], 0, 1).unwrap();
    comm.isend(vec![9u8], 0, 1).unwrap().free();
    // The message sits in the loopback queue until something progresses.
    assert!(!r.is_complete().unwrap(), "is_complete makes no progress");
    assert!(
        r.get_status().unwrap().is_some(),
        "get_status progresses once"
    );
    assert!(r.is_complete().unwrap());
    assert!(!r.is_null(), "get_status frees nothing");
    assert_eq!(r.test().unwrap().unwrap().bytes(), &[9]);
    assert!(r.is_null());
}
