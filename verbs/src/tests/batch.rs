//! Doorbell batching (`doorbell.rs`): what a batch holds, when it is
//! posted, and that a refused chain fails only its peer.

use super::*;
use crate::ffi::{sys, CHAIN_MAX};

fn roomy() -> VerbsOptions {
    VerbsOptions {
        credits: 96,
        ..VerbsOptions::default()
    }
}

/// A header that numbers the packet; the payload is inline-size for even
/// `i` and needs a slab slot for odd `i` (over the inline limit).
fn packet(dev: &VerbsDevice, i: usize) -> (Vec<u8>, Vec<u8>) {
    let len = if i % 2 == 0 {
        8
    } else {
        dev.max_inline() + 100
    };
    (
        (i as u32).to_le_bytes().to_vec(),
        vec![(i % 251) as u8; len],
    )
}

fn recorders(n: usize) -> Vec<Recorder> {
    (0..n).map(|_| Recorder::default()).collect()
}

fn assert_in_order(sink: &Recorder, from: Rank, n: usize, dev: &VerbsDevice) {
    let got: Vec<_> = sink.packets().into_iter().filter(|p| p.0 == from).collect();
    assert_eq!(got.len(), n);
    for (i, (_, h, p)) in got.iter().enumerate() {
        let (want_h, want_p) = packet(dev, i);
        assert_eq!(
            (h, p),
            (&want_h, &want_p),
            "packet {i} out of order or changed"
        );
    }
}

#[test]
fn a_batch_holds_its_sends_until_it_ends_and_they_arrive_in_order() {
    if !rdma_present("a_batch_holds_its_sends") {
        return;
    }
    let mut devs = devices(2, roomy());
    let mut sinks = recorders(2);
    let free = devs[0].send.free_count();
    devs[0].batch_begin();
    devs[0].batch_begin(); // nested: only the outer end posts
    let n = 20;
    for i in 0..n {
        let (h, p) = packet(&devs[0], i);
        assert_eq!(devs[0].send(1, &h, &p).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].doorbell.held(), n);
    devs[0].batch_end().unwrap();
    assert_eq!(devs[0].doorbell.held(), n, "an inner end posts nothing");
    // Nothing was posted: the receiver sees nothing.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(200) {
        devs[1].progress(&mut sinks[1]).unwrap();
    }
    assert_eq!(packets(&sinks[1]), 0, "a held send reached the peer");
    devs[0].batch_end().unwrap();
    assert_eq!(devs[0].doorbell.held(), 0);
    let start = Instant::now();
    while packets(&sinks[1]) < n {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "held sends never arrived");
    }
    assert_in_order(&sinks[1], 0, n, &devs[0]);
    // Every slab slot comes back through its completion.
    let start = Instant::now();
    while devs[0].send.free_count() < free {
        devs[0].progress(&mut sinks[0]).unwrap();
        assert!(start.elapsed() < DEADLINE, "slab slots not returned");
    }
    assert!(sinks.iter().all(|s| s.failures().is_empty()));
}

#[test]
fn a_chain_is_posted_when_full_when_the_peer_changes_and_on_progress() {
    if !rdma_present("a_chain_is_posted_when_full") {
        return;
    }
    let mut devs = devices(3, roomy());
    let mut sinks = recorders(3);
    devs[0].batch_begin();
    // Full: the 33rd send posts the first 32.
    let n = CHAIN_MAX + 8;
    for i in 0..n {
        let (h, p) = packet(&devs[0], i);
        assert_eq!(devs[0].send(1, &h, &p).unwrap(), Sent::Done);
        assert_eq!(devs[0].doorbell.held(), i % CHAIN_MAX + 1);
    }
    // Another peer: what is held for rank 1 goes first.
    let (h, p) = packet(&devs[0], 0);
    assert_eq!(devs[0].send(2, &h, &p).unwrap(), Sent::Done);
    assert_eq!(devs[0].doorbell.held(), 1);
    // Progress inside the batch posts what is held (a waiter inside a batch
    // sees its sends go out); the batch stays open.
    devs[0].progress(&mut sinks[0]).unwrap();
    assert_eq!(devs[0].doorbell.held(), 0);
    let (h, p) = packet(&devs[0], 1);
    assert_eq!(devs[0].send(2, &h, &p).unwrap(), Sent::Done);
    assert_eq!(devs[0].doorbell.held(), 1);
    devs[0].batch_end().unwrap();
    let start = Instant::now();
    while packets(&sinks[1]) < n || packets(&sinks[2]) < 2 {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "held sends never arrived");
    }
    assert_in_order(&sinks[1], 0, n, &devs[0]);
    assert_in_order(&sinks[2], 0, 2, &devs[0]);
}

#[test]
fn an_rdma_operation_posts_the_held_sends_before_it() {
    if !rdma_present("an_rdma_operation_posts_the_held_sends") {
        return;
    }
    let mut devs = devices(2, roomy());
    let mut sinks = recorders(2);
    let (target, key) = devs[1]
        .register(0, Buf::from_vec(vec![5u8; 4096]), Access::RemoteRead)
        .unwrap();
    let (local, _) = devs[0]
        .register(1, Buf::from_vec(vec![0u8; 4096]), Access::LocalWrite)
        .unwrap();
    devs[0].batch_begin();
    let (h, p) = packet(&devs[0], 0);
    assert_eq!(devs[0].send(1, &h, &p).unwrap(), Sent::Done);
    assert_eq!(devs[0].doorbell.held(), 1);
    assert_eq!(
        devs[0].get(1, key, local, 4096, OpToken(9)).unwrap(),
        Sent::Done
    );
    assert_eq!(
        devs[0].doorbell.held(),
        0,
        "the get went out behind the send"
    );
    devs[0].batch_end().unwrap();
    pump_all(&mut devs, &mut sinks, |s| {
        packets(&s[1]) == 1 && !s[0].rdma().is_empty()
    });
    assert_eq!(sinks[0].rdma(), vec![(OpToken(9), Ok(()))]);
    assert_eq!(
        devs[0].deregister(local).unwrap().as_slice(),
        &[5u8; 4096][..]
    );
    devs[1].deregister(target).unwrap();
}

#[test]
fn a_refused_chain_fails_only_its_peer_and_returns_its_slots() {
    if !rdma_present("a_refused_chain_fails_only_its_peer") {
        return;
    }
    let mut devs = devices(3, roomy());
    let mut sinks = recorders(3);
    let free = devs[0].send.free_count();
    devs[0].batch_begin();
    for i in 0..6 {
        let (h, p) = packet(&devs[0], i);
        assert_eq!(devs[0].send(1, &h, &p).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].send.free_count(), free - 3, "three slab sends held");
    // The QP leaves RTS under the held chain (as if the connection broke
    // between hold and post): a QP in RESET refuses a post.
    let qp = devs[0].peers[1].qp.as_mut().unwrap();
    let mut attr = crate::ffi::zeroed_qp_attr();
    attr.qp_state = sys::ibv_qp_state::IBV_QPS_RESET;
    qp.modify(&mut attr, sys::ibv_qp_attr_mask::IBV_QP_STATE.0)
        .unwrap();
    devs[0].batch_end().unwrap();
    assert_eq!(devs[0].doorbell.held(), 0);
    assert_eq!(
        devs[0].send.free_count(),
        free,
        "the refused slots came back"
    );
    devs[0].progress(&mut sinks[0]).unwrap();
    let failed: Vec<Rank> = sinks[0].failures().iter().map(|f| f.0).collect();
    assert_eq!(
        failed,
        vec![1],
        "the refused chain's peer, and only it, failed"
    );
    assert!(matches!(
        devs[0].send(1, b"h", b"p"),
        Err(Error::Device(DeviceError::Os { .. }))
    ));
    // The other peer is untouched.
    assert_eq!(devs[0].send(2, b"still", b"here").unwrap(), Sent::Done);
    pump_all(&mut devs, &mut sinks, |s| packets(&s[2]) == 1);
}

fn pump_all(devs: &mut [VerbsDevice], sinks: &mut [Recorder], done: impl Fn(&[Recorder]) -> bool) {
    let start = Instant::now();
    while !done(sinks) {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "timed out");
    }
}
