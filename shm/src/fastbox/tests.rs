//! Unit tests and loom models of the fastbox protocol.

use super::*;

#[test]
fn round_trip_and_lengths() {
    let mut data = [0xEEu8; 120];
    let w = encode(&mut data, 7, b"hdr", &[5; 100]).unwrap();
    let s = decode(w, &data).unwrap();
    assert_eq!(
        (s.seq, s.header, s.payload),
        (7, &b"hdr"[..], &[5u8; 100][..])
    );
    assert_eq!(seq_of(w), 7);
    let w = encode(&mut data, u32::MAX, &[1; HEADER_CAP], &[2; 56]).unwrap();
    let s = decode(w, &data).unwrap();
    assert_eq!((s.seq, s.header.len(), s.payload.len()), (u32::MAX, 64, 56));
    let w = encode(&mut data, 0, b"", b"").unwrap();
    assert_ne!(w, 0, "an empty packet still marks the slot full");
    assert_eq!(decode(w, &data).unwrap().payload, b"");
    assert_eq!(
        encode(&mut data, 0, &[0; 65], b""),
        Err(SlotError::HeaderTooLong)
    );
    assert_eq!(
        encode(&mut data, 0, b"h", &[0; 120]),
        Err(SlotError::TooLong)
    );
}

#[test]
fn malformed_control_words_are_rejected() {
    let data = [0u8; 56];
    assert_eq!(decode(0, &data), Err(SlotError::Empty));
    assert_eq!(decode(FULL | 1 << 56, &data), Err(SlotError::Reserved));
    assert_eq!(
        decode(FULL | 65 << 32, &data),
        Err(SlotError::HeaderTooLong)
    );
    assert_eq!(decode(FULL | 57 << 40, &data), Err(SlotError::TooLong));
    assert_eq!(
        decode(FULL | 0xFFFF << 40 | 0xFF << 32, &data),
        Err(SlotError::HeaderTooLong)
    );
    assert_eq!(
        decode(FULL | 20 << 32 | 37 << 40, &data),
        Err(SlotError::TooLong)
    );
    assert_eq!(
        decode(FULL | 20 << 32 | 36 << 40, &data)
            .unwrap()
            .payload
            .len(),
        36
    );
    for e in [
        SlotError::Empty,
        SlotError::Reserved,
        SlotError::HeaderTooLong,
        SlotError::TooLong,
    ] {
        assert!(e.what().starts_with("shm fastbox"));
    }
}

#[test]
fn order_wraps_and_bounds_the_window() {
    assert_eq!(order(5, 5, 0), Order::Now);
    assert_eq!(order(6, 5, 0), Order::Bad);
    assert_eq!(order(6, 5, 4), Order::Later(1));
    assert_eq!(order(9, 5, 4), Order::Later(4));
    assert_eq!(order(10, 5, 4), Order::Bad);
    assert_eq!(order(4, 5, 4), Order::Bad, "behind");
    assert_eq!(order(1, u32::MAX, 4), Order::Later(2), "wraps");
    assert!(slot_size_ok(64) && slot_size_ok(256) && slot_size_ok(4096));
    assert!(!slot_size_ok(0) && !slot_size_ok(100) && !slot_size_ok(8192));
}

/// Model checks, with the queue's (see `queue.rs`). Run with
/// `RUSTFLAGS="--cfg loom" cargo test -p ferry-shm --release --lib loom`.
#[cfg(loom)]
mod loom_models {
    use super::*;
    use crate::queue::{claim_sleeper, Link};
    use crate::sync;
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::Ordering::Relaxed;

    fn builder() -> loom::model::Builder {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b
    }

    /// A one-slot ring: the sender sends two packets through it (the
    /// second only once the receiver freed the slot); the receiver sees
    /// each packet's data (a Relaxed word standing for the bytes) and the
    /// sender never overwrites bytes the receiver has yet to read.
    #[test]
    fn loom_fastbox_publish_and_reuse() {
        builder().check(|| {
            let ctrl = Arc::new(sync::AtomicU64::new(0));
            let data = Arc::new(sync::AtomicU32::new(0));
            let sender = {
                let (ctrl, data) = (ctrl.clone(), data.clone());
                thread::spawn(move || {
                    for seq in 0..2u32 {
                        while !is_free(&*ctrl) {
                            thread::yield_now();
                        }
                        data.store(100 + seq, Relaxed);
                        publish(&*ctrl, FULL | u64::from(seq));
                    }
                })
            };
            for seq in 0..2u32 {
                let word = loop {
                    let w = peek(&*ctrl);
                    if w != 0 {
                        break w;
                    }
                    thread::yield_now();
                };
                assert_eq!(seq_of(word), seq);
                assert_eq!(data.load(Relaxed), 100 + seq, "bytes of packet {seq}");
                release(&*ctrl);
            }
            sender.join().unwrap();
        });
    }

    /// The sleep handshake on a fastbox: a receiver that decides to
    /// sleep is always signalled by the sender whose slot it missed.
    #[test]
    fn loom_fastbox_no_lost_wakeup() {
        builder().check(|| {
            let ctrl = Arc::new(sync::AtomicU64::new(0));
            let sleeping = Arc::new(sync::AtomicU32::new(0));
            let sender = {
                let (ctrl, sleeping) = (ctrl.clone(), sleeping.clone());
                thread::spawn(move || {
                    publish(&*ctrl, FULL);
                    claim_sleeper(&*sleeping)
                })
            };
            // `arm`: A1, then A2.
            Link::swap(&*sleeping, 1, AcqRel);
            let slept = probe(&*ctrl) == 0;
            if !slept {
                Link::store(&*sleeping, 0, Relaxed);
            }
            let signalled = sender.join().unwrap();
            if slept {
                assert!(signalled, "the receiver slept and nobody woke it");
            }
            assert_ne!(peek(&*ctrl), 0);
        });
    }

    /// Order across the paths: the sender sends packet 0 by fastbox and
    /// packet 1 by cell (a one-node queue); a receiver that pops the cell
    /// first finds packet 0 in the slot (the catch-up rule), with its
    /// data.
    #[test]
    fn loom_cell_after_fastbox_sees_the_slot() {
        use crate::queue::{Arena, Pop, Queue, NIL};
        struct A(Vec<sync::AtomicU32>);
        impl Arena for A {
            type Link = sync::AtomicU32;
            fn next(&self, node: u32) -> Option<&sync::AtomicU32> {
                self.0.get(node as usize)
            }
        }
        builder().check(|| {
            // Node 0: the cell; node 1: the stub; words 2, 3: tail, head.
            let a = Arc::new(A((0..4).map(|_| sync::AtomicU32::new(NIL)).collect()));
            fn q(a: &A) -> Queue<'_, sync::AtomicU32> {
                Queue::new(&a.0[2], &a.0[3], 1)
            }
            q(&a).init(&*a).unwrap();
            let ctrl = Arc::new(sync::AtomicU64::new(0));
            let data = Arc::new(sync::AtomicU32::new(0));
            let sender = {
                let (a, ctrl, data) = (a.clone(), ctrl.clone(), data.clone());
                thread::spawn(move || {
                    data.store(7, Relaxed);
                    publish(&*ctrl, FULL);
                    q(&a).push(&*a, 0).unwrap();
                })
            };
            let mut expected = 0u32;
            let fb = |expected: &mut u32| {
                let w = peek(&*ctrl);
                if w != 0 && order(seq_of(w), *expected, 1) == Order::Now {
                    assert_eq!(data.load(Relaxed), 7, "slot bytes visible");
                    release(&*ctrl);
                    *expected += 1;
                }
            };
            while expected < 2 {
                fb(&mut expected);
                match q(&a).pop(&*a).unwrap() {
                    Pop::Item(0) => {
                        // The cell is packet 1.
                        if order(1, expected, 1) == Order::Later(1) {
                            let w = peek(&*ctrl);
                            assert_ne!(w, 0, "the slot sent before the cell is visible");
                            fb(&mut expected);
                        }
                        assert_eq!(expected, 1);
                        expected = 2;
                    }
                    Pop::Item(n) => panic!("node {n}"),
                    Pop::Empty | Pop::Busy => thread::yield_now(),
                }
            }
            sender.join().unwrap();
        });
    }
}
