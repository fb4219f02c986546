//! The checks of waiting (`arm`, the wake-up) and of peer failure.

use std::time::{Duration, Instant};

use super::{skip, Bench, DeviceKit, Setup, Wake, DEADLINE};
use crate::device::{Armed, Device};
use crate::envelope::Rank;
use crate::error::{Error, PeerError};

/// Arms `devs[rank]` until it reports `Sleep` (progressing while an event
/// is pending).
fn arm_until_sleep<K: DeviceKit>(b: &mut Bench<'_, K>, rank: usize) {
    let start = Instant::now();
    loop {
        b.round();
        match b.devs[rank].arm().expect("arm") {
            Armed::Sleep => return,
            Armed::Pending => b.devs[rank].disarm(),
        }
        assert!(start.elapsed() < DEADLINE, "rank {rank} never armed");
    }
}

/// *Waiting* 2: with a packet on its way to it, `arm` never lets its owner
/// sleep through it: it reports `Pending`, or `Sleep` and then the wake-up
/// comes; after progress the packet is there.
pub fn arm_is_pending_while_an_event_is_deliverable<K: DeviceKit>(mut kit: K) {
    let check = "arm_is_pending_while_an_event_is_deliverable";
    if !kit.available(check) {
        return;
    }
    let wake = kit.expect().wake;
    let n = kit.expect().max_ranks.clamp(1, 2);
    if wake == Wake::None && n > 1 {
        // Events from other ranks can appear unseen: the owner never sleeps.
        return skip(check, "the device has no wake-up (its owner spins)");
    }
    let to = n - 1;
    let mut b = Bench::new(&mut kit, n, Setup::Default, false).expect("a default setup");
    // Connect first (some providers connect on the first send).
    b.send(0, to, b"hello", b"");
    b.drive("the first packet", |s| s[to].packets().len() == 1);
    arm_until_sleep(&mut b, to);
    b.devs[to].disarm();
    b.send(0, to, b"again", b"x");
    let start = Instant::now();
    loop {
        // The sender may need progress to push the packet out, the
        // simulation its clock: everyone but the receiver moves.
        b.kit.tick(&mut b.devs);
        if n > 1 {
            b.devs[0].progress(&mut b.sinks[0]).expect("progress");
        }
        let armed = b.devs[to].arm().expect("arm");
        if armed == Armed::Pending
            || (wake != Wake::None && b.kit.woken(&b.devs, to, Duration::from_millis(10)))
        {
            break;
        }
        b.devs[to].disarm();
        assert!(
            start.elapsed() < DEADLINE,
            "arm never saw the packet that was sent"
        );
    }
    b.devs[to].disarm();
    b.drive("the second packet", |s| s[to].packets().len() == 2);
    assert_eq!(b.sinks[to].packets()[1].1, b"again");
}

/// *Waiting* 3: after `arm` returns `Sleep`, nothing wakes the sleeper until
/// an event comes; a send from another rank then wakes it (its wait fd
/// becomes readable, or its wake flag goes up) without the sleeper doing
/// anything; after `disarm`, progress delivers the packet.
pub fn a_sleeper_is_woken_by_a_send<K: DeviceKit>(mut kit: K) {
    let check = "a_sleeper_is_woken_by_a_send";
    if !kit.available(check) {
        return;
    }
    let expect = kit.expect();
    if expect.wake == Wake::None {
        return skip(check, "the device has no wake-up (its owner spins)");
    }
    if expect.max_ranks < 2 {
        return skip(check, "only one rank: no other rank can wake it");
    }
    let mut b = Bench::new(&mut kit, 2, Setup::Default, false).expect("a default setup");
    b.send(0, 1, b"hello", b"");
    b.drive("the first packet", |s| s[1].packets().len() == 1);
    arm_until_sleep(&mut b, 1);
    assert!(
        !b.kit.woken(&b.devs, 1, Duration::ZERO),
        "woken before anything happened"
    );
    b.send(0, 1, b"wake", &[1; 100]);
    let start = Instant::now();
    loop {
        // Only the sender (and the simulation's clock) moves.
        b.kit.tick(&mut b.devs);
        b.devs[0].progress(&mut b.sinks[0]).expect("progress");
        if b.kit.woken(&b.devs, 1, Duration::from_millis(1)) {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the send did not wake the sleeper"
        );
    }
    b.devs[1].disarm();
    b.drive("the wake-up packet", |s| s[1].packets().len() == 2);
    assert_eq!(b.sinks[1].packets()[1].1, b"wake");
}

/// *Failure*: when a rank dies, every other rank is told once, through
/// `peer_failed`, with [`PeerError::Died`]; a later `send` to it fails with
/// that error; the survivors still talk to each other.
pub fn a_dead_peer_is_reported_once<K: DeviceKit>(mut kit: K) {
    let check = "a_dead_peer_is_reported_once";
    if !kit.available(check) {
        return;
    }
    if kit.expect().max_ranks < 3 {
        return skip(check, "fewer than three ranks");
    }
    let Some(mut b) = Bench::new(&mut kit, 3, Setup::FailFast, false) else {
        return skip(check, "the kit has no fail-fast setup");
    };
    b.send(2, 0, b"last words", b"");
    b.drive("the last words", |s| s[0].packets().len() == 1);
    if !b.kit.kill_last(&mut b.devs) {
        return skip(check, "a rank cannot die inside one process");
    }
    assert_eq!(b.devs.len(), 2, "kill_last removed the last device");
    b.sinks.pop();
    let dead = 2 as Rank;
    b.drive("both survivors to notice", |s| {
        s.iter().all(|s| !s.failures().is_empty())
    });
    for _ in 0..20 {
        b.round();
    }
    for (r, s) in b.sinks.iter().enumerate() {
        assert_eq!(
            s.failures(),
            vec![(dead, Error::Peer(PeerError::Died { rank: dead }))],
            "rank {r}: reported once"
        );
    }
    assert_eq!(
        b.devs[0].send(dead, b"", b"").unwrap_err(),
        Error::Peer(PeerError::Died { rank: dead })
    );
    b.send(0, 1, b"still here", b"");
    b.drive("the survivors' packet", |s| s[1].packets().len() == 1);
}
