//! The hot path must not allocate (issue 4): a counting global allocator
//! and eager messages through the real engine and shm device, two ranks
//! on two threads of this process ([`ferry_bench::inproc::shm_pair`]).
//! After a warm-up (which may grow the engine's tables and queues once),
//! a steady ping-pong of eager messages must make **zero** heap
//! allocations on either thread, for messages a receive was posted for and
//! for small ones that arrive first (unexpected). The count is per thread, so other tests
//! running at the same time cannot disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::mpsc;
use std::thread;

use ferry_bench::inproc::shm_pair;
use ferry_core::{Buf, Config, Engine, SpinPark};
use ferry_shm::{ShmDevice, ShmOptions};

/// The system allocator, counting this thread's allocations.
struct Counting;

thread_local! {
    // `const` and without a destructor: usable from inside the allocator,
    // at any point of a thread's life, without allocating.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// This thread's allocations so far.
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are this allocator's; the counter is
// a thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const WARMUP: usize = 1_000;
const ITERS: usize = 10_000;
const TAG: i32 = 3;

/// How one side moves a message.
#[derive(Debug, Clone, Copy)]
enum Style {
    /// `Engine::send` / `Engine::recv` (blocking, busy-polling).
    Blocking,
    /// Receive pre-posted with `irecv` before the send, then `wait`.
    Preposted,
    /// The message is unexpected: the receiver probes until it has
    /// arrived (and sits in the unexpected queue), then receives it.
    Unexpected,
}

/// One ping-pong side: `first_send` sends first. Returns the allocations
/// this thread made in the timed part.
fn side(e: &mut Engine<ShmDevice>, peer: i32, first_send: bool, size: usize, style: Style) -> u64 {
    let mut sbuf = Some(Buf::from_vec(vec![0x5a; size]));
    let mut rbuf = Some(Buf::zeroed(size).expect("buffer"));
    let mut before = 0;
    for i in 0..WARMUP + ITERS {
        if i == WARMUP {
            before = allocations();
        }
        let mut send = |e: &mut Engine<ShmDevice>| {
            let s = e
                .isend(peer, TAG, 0, sbuf.take().expect("send buffer"))
                .expect("isend");
            assert!(
                s.request.is_empty(),
                "an eager send of {size} B completes inside isend"
            );
            sbuf = s.buf;
        };
        match style {
            Style::Blocking | Style::Unexpected => {
                let mut recv = |e: &mut Engine<ShmDevice>| {
                    if matches!(style, Style::Unexpected) {
                        while e.iprobe(peer, TAG, 0).expect("iprobe").is_none() {}
                    }
                    let b = rbuf.take().expect("receive buffer");
                    rbuf = e.recv(peer, TAG, 0, b, &mut SpinPark).expect("recv").buf;
                };
                if first_send {
                    send(e);
                    recv(e);
                } else {
                    recv(e);
                    send(e);
                }
            }
            Style::Preposted => {
                let r = e
                    .irecv(peer, TAG, 0, rbuf.take().expect("receive buffer"))
                    .expect("irecv");
                if first_send {
                    send(e);
                }
                let mut req = r.request;
                rbuf = e.wait(&mut req, &mut SpinPark).expect("wait").buf;
                if !first_send {
                    send(e);
                }
            }
        }
    }
    let n = allocations() - before;
    let got = rbuf.expect("receive buffer");
    assert_eq!(got.as_slice(), vec![0x5a; size].as_slice(), "payload");
    n
}

/// Runs the ping-pong on both threads; returns (rank 0's, rank 1's)
/// allocations in the steady state.
fn pingpong(size: usize, style: Style) -> (u64, u64) {
    let (mut e0, mut e1) = shm_pair(ShmOptions::default(), Config::default());
    let (tx, rx) = mpsc::channel();
    let peer = thread::spawn(move || {
        let n = side(&mut e1, 0, false, size, style);
        tx.send(n).expect("main thread");
        e1
    });
    let n0 = side(&mut e0, 1, true, size, style);
    let n1 = rx.recv().expect("peer thread");
    let e1 = peer.join().expect("peer thread");
    drop((e0, e1));
    (n0, n1)
}

#[test]
fn eager_messages_allocate_nothing_in_steady_state() {
    for size in [0, 8, 64, 256, 1024, 8192] {
        for style in [Style::Blocking, Style::Preposted, Style::Unexpected] {
            if size > 1024 && matches!(style, Style::Unexpected) {
                continue; // the next test
            }
            let (n0, n1) = pingpong(size, style);
            assert_eq!(
                (n0, n1),
                (0, 0),
                "{size} B, {style:?}: allocations on (rank 0, rank 1) over {ITERS} round trips"
            );
        }
    }
}

/// What is left, measured exactly: an unexpected eager message larger than
/// the engine's pooled buffers (1 KiB) stays in its shm cell, handed over
/// in one box (so that an ARecv takes it without a copy), which is one
/// allocation per message on the receiving side, and never more.
#[test]
fn unexpected_messages_past_the_pool_allocate_one_box_each() {
    for size in [1025, 8192] {
        let (n0, n1) = pingpong(size, Style::Unexpected);
        assert_eq!(
            (n0, n1),
            (ITERS as u64, ITERS as u64),
            "{size} B unexpected: one allocation per message received"
        );
    }
}

/// A rendezvous message's protocol states (RTS, CTS or registration, FIN,
/// release) are kept out of the request in boxes the engine reuses: a
/// steady stream of them allocates nothing either.
#[test]
fn rendezvous_messages_allocate_nothing_in_steady_state() {
    const SIZE: usize = 256 << 10;
    let (mut e0, mut e1) = shm_pair(ShmOptions::default(), Config::default());
    let (tx, rx) = mpsc::channel();
    let peer = thread::spawn(move || {
        tx.send(rndv_side(&mut e1, 0, false, SIZE))
            .expect("main thread");
        e1
    });
    let n0 = rndv_side(&mut e0, 1, true, SIZE);
    let n1 = rx.recv().expect("peer thread");
    let c = e0.counters();
    let rndv = c.rndv_get_sent + c.rndv_put_sent + c.rndv_frag_sent;
    assert_eq!(
        rndv, 400,
        "every message of rank 0 took the rendezvous path"
    );
    drop((e0, peer.join().expect("peer thread")));
    assert_eq!(
        (n0, n1),
        (0, 0),
        "{SIZE} B rendezvous: allocations on (rank 0, rank 1)"
    );
}

/// One side of a rendezvous ping-pong (receive posted first, send waited
/// for); the allocations of its steady state.
fn rndv_side(e: &mut Engine<ShmDevice>, peer: i32, first_send: bool, size: usize) -> u64 {
    const ROUNDS: usize = 200;
    let mut sbuf = Some(Buf::from_vec(vec![0x5a; size]));
    let mut rbuf = Some(Buf::zeroed(size).expect("buffer"));
    let send = |e: &mut Engine<ShmDevice>, sbuf: &mut Option<Buf>| {
        let s = e
            .isend(peer, TAG, 0, sbuf.take().expect("send buffer"))
            .expect("isend");
        assert!(
            !s.request.is_empty(),
            "a rendezvous send waits for its receiver"
        );
        let mut req = s.request;
        *sbuf = e.wait(&mut req, &mut SpinPark).expect("wait send").buf;
    };
    let mut before = 0;
    for i in 0..2 * ROUNDS {
        if i == ROUNDS {
            before = allocations();
        }
        let mut r = e
            .irecv(peer, TAG, 0, rbuf.take().expect("receive buffer"))
            .expect("irecv")
            .request;
        if first_send {
            send(e, &mut sbuf);
        }
        rbuf = e.wait(&mut r, &mut SpinPark).expect("wait recv").buf;
        if !first_send {
            send(e, &mut sbuf);
        }
    }
    let n = allocations() - before;
    assert_eq!(
        rbuf.expect("receive buffer").as_slice(),
        vec![0x5a; size].as_slice()
    );
    n
}

/// The test would pass vacuously if the counter counted nothing.
#[test]
fn the_counter_counts() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert!(allocations() > before);
    drop(v);
}
