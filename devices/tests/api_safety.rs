//! Soundness of the safe API when requests are leaked (`mem::forget`) or
//! scopes unwind. These tests also run under Miri (spin mode and the
//! loopback device make no syscalls):
//!
//! ```text
//! MIRIFLAGS=-Zmiri-ignore-leaks cargo +nightly miri test -p ferry --test api_safety
//! ```
//!
//! (`mem::forget` leaks by design: the ignored leaks are the forgotten
//! requests and the world handle they keep alive.)

use std::mem;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod common;

use common::loopback_world as world;

/// A leaked pending receive owns its buffer: the engine fills memory it
/// owns, nothing dangles, and the world keeps working. The buffer is
/// dropped with the engine at finalize.
#[test]
fn leaking_a_pending_receive_is_sound() {
    let w = world();
    let comm = w.world();
    let r = comm.irecv(vec![0u64; 64], 0, 1).unwrap();
    mem::forget(r);
    comm.send(&[7u64; 64], 0, 1).unwrap();
    comm.send(&[8u64; 2], 0, 2).unwrap();
    let (v, _) = comm.arecv::<u64>(0, 2).unwrap();
    assert_eq!(v, [8, 8]);
    assert!(
        comm.iprobe(0, 1).unwrap().is_none(),
        "the leaked receive took its message"
    );
    w.finalize().unwrap();
}

/// A leaked pending send (rendezvous: the engine and device hold the
/// buffer while the receiver reads it) completes normally.
#[test]
fn leaking_a_pending_rendezvous_send_is_sound() {
    let w = world();
    let comm = w.world();
    let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
    let s = comm.isend(data.clone(), 0, 3).unwrap();
    assert!(!s.is_empty());
    mem::forget(s);
    let mut buf = vec![0u8; data.len()];
    comm.recv(&mut buf, 0, 3).unwrap();
    assert_eq!(buf, data);
}

/// Forgetting a scoped request does not let it escape the scope: the scope
/// completes it before the borrowed buffer is usable again. (A
/// `ScopedRequest` needs no `Drop`, since the scope keeps its own record of
/// the request: forgetting one is exactly what this test shows is harmless.)
#[test]
#[allow(clippy::forget_non_drop)]
fn a_scoped_request_cannot_outlive_its_scope() {
    let w = world();
    let comm = w.self_comm();
    let data = [1u16, 2, 3];
    let mut buf = [0u16; 3];
    comm.scope(|s| {
        let r = s.irecv(&mut buf, 0, 4).unwrap();
        mem::forget(r);
        let sent = s.isend(&data, 0, 4).unwrap();
        mem::forget(sent);
        // `data` may still be read while it is lent to a send.
        assert_eq!(data[0], 1);
    });
    assert_eq!(buf, data, "the scope completed the leaked receive");
}

/// A panic inside the scope still completes every request before the
/// borrows end (then the panic resumes).
#[test]
fn a_panicking_scope_completes_its_requests() {
    let w = world();
    let comm = w.self_comm();
    let data = vec![9u32; 5000];
    let mut buf = vec![0u32; 5000];
    let r = catch_unwind(AssertUnwindSafe(|| {
        comm.scope(|s| {
            s.isend(&data, 0, 5).unwrap();
            s.irecv(&mut buf, 0, 5).unwrap();
            panic!("user panic inside the scope");
        })
    }));
    assert!(r.is_err());
    assert_eq!(buf, data);
}

/// Waiting inside the scope reports each status; untouched requests are
/// completed at the end.
#[test]
fn scoped_requests_report_their_status() {
    let w = world();
    let comm = w.world();
    let a = [1u8; 10];
    let b = [2u8; 20];
    let mut ra = [0u8; 10];
    let mut rb = [0u8; 32];
    comm.scope(|s| {
        let sa = s.isend(&a, 0, 1).unwrap();
        assert!(sa.is_empty(), "an eager send completes inside isend");
        let recv_a = s.irecv(&mut ra, 0, 1).unwrap();
        s.isend(&b, 0, 2).unwrap();
        let mut recv_b = s.irecv(&mut rb, 0, 2).unwrap();
        assert_eq!(recv_a.wait().unwrap().bytes, 10);
        let st = loop {
            if let Some(st) = recv_b.test().unwrap() {
                break st;
            }
        };
        assert_eq!((st.source, st.tag, st.bytes), (0, 2, 20));
    });
    assert_eq!(ra, a);
    assert_eq!(&rb[..20], &b[..]);
}

/// The raw layer: the caller keeps the memory alive until completion.
#[test]
fn raw_pointers_round_trip() {
    let w = world();
    let comm = w.world();
    let src = [3u8; 100];
    let mut dst = [0u8; 100];
    // SAFETY: `src` and `dst` outlive both requests, which are waited for
    // before this block ends, and are not touched meanwhile.
    unsafe {
        let mut r = comm.irecv_raw(dst.as_mut_ptr(), dst.len(), 0, 6).unwrap();
        let mut s = comm
            .isend_raw(src.as_ptr(), src.len(), 0, 6, ferry::SendMode::Standard)
            .unwrap();
        s.wait().unwrap();
        assert_eq!(r.wait().unwrap().status.bytes, 100);
    }
    assert_eq!(dst, src);
}
