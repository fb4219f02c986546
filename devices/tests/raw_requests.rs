//! Raw requests (`Comm::isend_raw_request`, `Comm::irecv_raw_request`):
//! the engine handle alone, completed in arrays by `wait_all_raw` and
//! `test_all_raw`, or turned into an ordinary request by
//! `Request::from_raw`. (The MPI C tests run them across processes: the
//! C ABI's `MPI_Isend` and `MPI_Irecv` on the world use them.)

use ferry::{RawRequest, Request, SendMode, Status};

mod common;

use common::loopback_world as world;

/// A window of receives and sends to self, completed by one
/// `wait_all_raw` with null and EMPTY entries among them: every status is
/// handed over, the data landed, and every entry is null afterwards.
#[test]
fn wait_all_raw_completes_a_window() {
    let w = world();
    let comm = w.world();
    assert!(comm.has_job_ranks());
    let src: Vec<[u8; 16]> = (0..8u8).map(|i| [i; 16]).collect();
    let mut dst = vec![[0u8; 16]; 8];
    let mut reqs = vec![RawRequest::NULL];
    // SAFETY: `src` and `dst` outlive the requests, which are all completed
    // below before either is touched.
    unsafe {
        for (i, d) in dst.iter_mut().enumerate() {
            reqs.push(
                comm.irecv_raw_request(d.as_mut_ptr(), 16, 0, i as i32)
                    .unwrap(),
            );
        }
        for (i, s) in src.iter().enumerate() {
            let r = comm
                .isend_raw_request(s.as_ptr(), 16, 0, i as i32, SendMode::Standard)
                .unwrap();
            // An eager send to self completes inside its call.
            assert!(r.is_empty());
            reqs.push(r);
        }
    }
    let mut seen = vec![None; reqs.len()];
    comm.wait_all_raw(&mut reqs, |i, s| seen[i] = Some(s))
        .unwrap();
    assert!(reqs.iter().all(|r| r.is_null()));
    assert_eq!(seen[0], Some(Status::EMPTY), "a null entry");
    for (i, s) in seen[1..9].iter().enumerate() {
        let s = s.expect("every receive reported");
        assert_eq!((s.source, s.tag, s.bytes), (0, i as i32, 16));
        assert!(s.error.is_none());
    }
    assert!(seen[9..].iter().all(|s| *s == Some(Status::EMPTY)));
    assert_eq!(dst, src);
}

/// `test_all_raw` changes nothing while a receive is pending, then
/// completes all; a completed (now null) handle kept elsewhere is stale.
#[test]
fn test_all_raw_is_all_or_nothing() {
    let w = world();
    let comm = w.world();
    let src = [7u8; 40];
    let mut a = [0u8; 40];
    let mut b = [0u8; 40];
    // SAFETY: the buffers outlive the requests, completed below.
    let mut reqs = unsafe {
        vec![
            comm.irecv_raw_request(a.as_mut_ptr(), 40, 0, 1).unwrap(),
            comm.irecv_raw_request(b.as_mut_ptr(), 40, 0, 2).unwrap(),
        ]
    };
    let kept = reqs[1];
    // SAFETY: `src` outlives the send (eager to self: done in the call).
    unsafe { comm.isend_raw_request(src.as_ptr(), 40, 0, 1, SendMode::Standard) }.unwrap();
    let mut calls = 0;
    assert!(!comm.test_all_raw(&mut reqs, |_, _| calls += 1).unwrap());
    assert_eq!(calls, 0, "nothing is handed over until all are complete");
    assert!(!reqs[0].is_null(), "a complete entry stays until all are");
    // SAFETY: as above.
    unsafe { comm.isend_raw_request(src.as_ptr(), 40, 0, 2, SendMode::Standard) }.unwrap();
    assert!(comm.test_all_raw(&mut reqs, |_, _| calls += 1).unwrap());
    assert_eq!(calls, 2);
    assert_eq!((a, b), (src, src));
    let mut stale = [kept];
    assert!(comm.wait_all_raw(&mut stale, |_, _| ()).is_err());
}

/// A raw request handed to `Request::from_raw` is an ordinary request: its
/// wait reports the status, and dropping a pending one frees it.
#[test]
fn from_raw_makes_an_ordinary_request() {
    let w = world();
    let comm = w.world();
    let src = [9u8; 24];
    let mut dst = [0u8; 24];
    // SAFETY: `dst` outlives the request, waited for below.
    let raw = unsafe { comm.irecv_raw_request(dst.as_mut_ptr(), 24, 0, 3) }.unwrap();
    // SAFETY: `src` outlives the send (eager to self: done in the call).
    unsafe { comm.isend_raw_request(src.as_ptr(), 24, 0, 3, SendMode::Standard) }.unwrap();
    let mut r = Request::from_raw(&comm, raw);
    assert_eq!(r.wait().unwrap().status.bytes, 24);
    assert_eq!(dst, src);
    assert!(Request::from_raw(&comm, RawRequest::NULL).is_null());
    // A pending one cancels as any other.
    let mut unused = [0u8; 4];
    // SAFETY: `unused` outlives the request, cancelled and waited for below.
    let pending = unsafe { comm.irecv_raw_request(unused.as_mut_ptr(), 4, 0, 99) }.unwrap();
    let mut r = Request::from_raw(&comm, pending);
    r.cancel().unwrap();
    assert!(r.wait().unwrap().status.cancelled);
}
