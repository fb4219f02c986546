//! Tests of the simulated network and its devices.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::buffer::Buf;
use crate::device::WcStatus;
use crate::device::{Access, Armed, Caps, Device, MemHandle, OpToken, Sent};
use crate::envelope::Rank;
use crate::error::{DeviceError, Error, PeerError, UsageError};
use crate::loopback::tests::{Event, Recorder};
use crate::wire::RemoteKey;

type Net = Rc<RefCell<Network>>;

fn setup(config: NetConfig) -> (Net, Vec<SimDevice>, Vec<Recorder>) {
    let ranks = config.ranks;
    let net = Network::new(config);
    let devices = Network::devices(&net);
    (
        net,
        devices,
        (0..ranks).map(|_| Recorder::taking()).collect(),
    )
}

/// Progresses every device, advancing time whenever a round reports nothing,
/// until the network is idle.
fn run_to_idle(net: &Net, devices: &mut [SimDevice], sinks: &mut [Recorder]) {
    for _ in 0..100_000 {
        let mut events = 0;
        for (device, sink) in devices.iter_mut().zip(sinks.iter_mut()) {
            events += device.progress(sink).unwrap();
        }
        if net.borrow().is_idle() {
            return;
        }
        if events == 0 {
            net.borrow_mut().advance();
        }
    }
    panic!("the network never became idle");
}

fn completion_status(result: Result<(), Error>) -> i32 {
    match result {
        Err(Error::Device(DeviceError::Completion { status, .. })) => status,
        other => panic!("expected a completion error, got {other:?}"),
    }
}

/// The invariant a harness checks for lost wakeups: an armed rank with a
/// deliverable event must have been woken.
fn assert_no_lost_wakeup(net: &Net) {
    let net = net.borrow();
    for r in 0..net.ranks() as Rank {
        assert!(
            !(net.is_armed(r) && !net.is_woken(r) && net.has_deliverable(r)),
            "rank {r} is armed with a deliverable event but not woken"
        );
    }
}

#[test]
fn sim_keeps_per_pair_fifo_under_random_delays_for_many_seeds() {
    const RANKS: usize = 4;
    for seed in 0..40 {
        let (net, mut devices, mut sinks) =
            setup(NetConfig::new(RANKS).with_delay(0, 6).with_seed(seed));
        let mut rng = SimRng::new(seed ^ 0x5EED);
        let mut sent = [[0u32; RANKS]; RANKS];
        for _ in 0..400 {
            let (from, to) = (
                rng.below(RANKS as u64) as usize,
                rng.below(RANKS as u64) as usize,
            );
            let seq = sent[from][to];
            let header = [&[from as u8][..], &seq.to_le_bytes()].concat();
            let payload = vec![seq as u8; rng.below(40) as usize];
            assert_eq!(
                devices[from].send(to as Rank, &header, &payload).unwrap(),
                Sent::Done
            );
            sent[from][to] += 1;
            if rng.chance(1, 3) {
                net.borrow_mut().advance();
            }
            if rng.chance(1, 4) {
                let r = rng.below(RANKS as u64) as usize;
                devices[r].progress(&mut sinks[r]).unwrap();
            }
        }
        run_to_idle(&net, &mut devices, &mut sinks);
        for (to, sink) in sinks.iter().enumerate() {
            let mut next = [0u32; RANKS];
            for (from, header, payload) in sink.packets() {
                let from = from as usize;
                assert_eq!(header[0] as usize, from, "seed {seed}: framing intact");
                let seq = u32::from_le_bytes(header[1..5].try_into().unwrap());
                assert_eq!(seq, next[from], "seed {seed}: {from}->{to} out of order");
                assert!(payload.iter().all(|&b| b == seq as u8));
                next[from] += 1;
            }
            for from in 0..RANKS {
                assert_eq!(
                    next[from], sent[from][to],
                    "seed {seed}: {from}->{to} lost packets"
                );
                let stats = net.borrow().link_stats(from as Rank, to as Rank);
                assert_eq!(stats.packets_sent, u64::from(sent[from][to]));
                assert_eq!(stats.packets_delivered, stats.packets_sent);
                assert_eq!(stats.bytes_delivered, stats.bytes_sent);
            }
        }
    }
}

/// Packets as `(sender, per-sender seq)`.
type Trace = Vec<(Rank, u8)>;

/// Two senders to one receiver, alternating; returns the global send order
/// and the receive order as `(sender, per-sender seq)`.
fn two_senders(seed: u64) -> (Trace, Trace) {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(3).with_delay(0, 4).with_seed(seed));
    let mut order = Vec::new();
    for seq in 0..10u8 {
        for from in [0, 1] {
            assert_eq!(devices[from].send(2, &[seq], &[]).unwrap(), Sent::Done);
            order.push((from as Rank, seq));
        }
        net.borrow_mut().advance();
    }
    run_to_idle(&net, &mut devices, &mut sinks);
    let received = sinks[2]
        .packets()
        .into_iter()
        .map(|(from, h, _)| (from, h[0]))
        .collect();
    (order, received)
}

#[test]
fn sim_reorders_across_pairs_for_some_seed() {
    let mut reordered = None;
    for seed in 0..20 {
        let (sent, received) = two_senders(seed);
        assert_eq!(received.len(), sent.len());
        for from in [0, 1] {
            let seqs: Vec<u8> = received
                .iter()
                .filter(|p| p.0 == from)
                .map(|p| p.1)
                .collect();
            assert_eq!(
                seqs,
                (0..10).collect::<Vec<_>>(),
                "seed {seed}: FIFO within a pair"
            );
        }
        if received != sent {
            reordered = Some(seed);
        }
    }
    let seed = reordered.expect("some seed interleaves the two senders differently");
    // Prove it concretely: a packet sent later arrived before one sent earlier.
    let (sent, received) = two_senders(seed);
    let position = |p| sent.iter().position(|&q| q == p).unwrap();
    assert!(received.windows(2).any(|w| position(w[0]) > position(w[1])));
}

#[test]
fn sim_same_seed_replays_the_same_run() {
    assert_eq!(two_senders(7), two_senders(7));
}

#[test]
fn sim_link_capacity_gives_back_pressure_per_link() {
    let config = NetConfig::new(3).with_delay(5, 5).with_link_capacity(2);
    let (net, mut devices, mut sinks) = setup(config);
    assert_eq!(devices[0].send(1, &[1], &[]).unwrap(), Sent::Done);
    assert_eq!(devices[0].send(1, &[2], &[]).unwrap(), Sent::Done);
    assert_eq!(devices[0].send(1, &[3], &[]).unwrap(), Sent::Busy);
    assert_eq!(net.borrow().in_flight(0, 1), 2, "Busy sent nothing");
    assert_eq!(net.borrow().link_stats(0, 1).busy, 1);
    assert_eq!(
        devices[0].send(2, &[9], &[]).unwrap(),
        Sent::Done,
        "other links unaffected"
    );
    assert_eq!(
        devices[1].send(0, &[9], &[]).unwrap(),
        Sent::Done,
        "the reverse link too"
    );

    // Delivered-but-unprogressed packets still count: capacity frees only
    // when the receiver consumes them.
    net.borrow_mut().advance_by(5);
    assert_eq!(devices[0].send(1, &[3], &[]).unwrap(), Sent::Busy);
    assert_eq!(devices[1].progress(&mut sinks[1]).unwrap(), 2);
    assert_eq!(devices[0].send(1, &[3], &[]).unwrap(), Sent::Done);
    run_to_idle(&net, &mut devices, &mut sinks);
    let headers: Vec<_> = sinks[1].packets().into_iter().map(|p| p.1[0]).collect();
    assert_eq!(headers, vec![1, 2, 3]);
}

#[test]
fn sim_hands_payloads_over_without_copy_and_logs_their_ids() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(2));
    for i in 0..3u8 {
        assert_eq!(devices[0].send(1, &[i], &[i; 64]).unwrap(), Sent::Done);
    }
    assert_eq!(devices[0].send(1, &[3], &[]).unwrap(), Sent::Done);
    run_to_idle(&net, &mut devices, &mut sinks);
    let mut ids = Vec::new();
    for event in &sinks[1].events {
        if let Event::Packet {
            payload_addr,
            buf_id,
            payload,
            ..
        } = event
        {
            assert_eq!(
                payload_addr, buf_id,
                "into_payload returned the delivered Vec"
            );
            if !payload.is_empty() {
                ids.push(*buf_id);
            }
        }
    }
    assert_eq!(ids.len(), 3);
    assert_eq!(
        net.borrow().delivered_payload_ids(1),
        &ids[..],
        "empty payloads are not logged"
    );
    assert!(net.borrow().delivered_payload_ids(0).is_empty());
}

#[test]
fn sim_get_completes_after_its_delay_with_the_data_in_place() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(2).with_delay(3, 3));
    let (src, key) = devices[1]
        .register(0, Buf::from(&b"payload!"[..]), Access::RemoteRead)
        .unwrap();
    let (dst, _) = devices[0]
        .register(0, Buf::zeroed(8).unwrap(), Access::LocalWrite)
        .unwrap();
    assert_eq!(
        devices[0].get(1, key, dst, 8, OpToken(1)).unwrap(),
        Sent::Done
    );
    for _ in 0..3 {
        assert_eq!(
            devices[0].progress(&mut sinks[0]).unwrap(),
            0,
            "not complete yet"
        );
        assert_eq!(net.borrow().registered_bytes(0, dst), Some(&[0u8; 8][..]));
        assert!(net.borrow().has_in_flight());
        net.borrow_mut().advance();
    }
    assert_eq!(
        net.borrow().registered_bytes(0, dst),
        Some(&b"payload!"[..])
    );
    assert_eq!(devices[0].progress(&mut sinks[0]).unwrap(), 1);
    assert_eq!(sinks[0].rdma(), vec![(OpToken(1), Ok(()))]);
    assert!(net.borrow().is_idle());
    assert_eq!(
        net.borrow().rdma_stats(),
        RdmaStats {
            gets: 1,
            puts: 0,
            bytes: 8,
            failed: 0
        }
    );
    assert_eq!(&devices[0].deregister(dst).unwrap()[..], b"payload!");
    assert_eq!(&devices[1].deregister(src).unwrap()[..], b"payload!");
    assert!(devices[1].deregister(src).is_none());
}

#[test]
fn sim_put_data_is_visible_before_rdma_done_and_before_a_later_fin() {
    for seed in 0..30 {
        let (net, mut devices, mut sinks) =
            setup(NetConfig::new(2).with_delay(0, 5).with_seed(seed));
        let data = b"rendezvous data";
        let (src, _) = devices[0]
            .register(0, Buf::from(&data[..]), Access::LocalRead)
            .unwrap();
        let (dst, key) = devices[1]
            .register(0, Buf::zeroed(data.len()).unwrap(), Access::RemoteWrite)
            .unwrap();
        assert_eq!(
            devices[0].put(1, src, key, data.len(), OpToken(4)).unwrap(),
            Sent::Done
        );
        while sinks[0].rdma().is_empty() {
            net.borrow_mut().advance();
            devices[0].progress(&mut sinks[0]).unwrap();
        }
        assert_eq!(sinks[0].rdma(), vec![(OpToken(4), Ok(()))]);
        assert_eq!(
            net.borrow().registered_bytes(1, dst),
            Some(&data[..]),
            "seed {seed}"
        );
        assert_eq!(devices[0].send(1, b"FIN", &[]).unwrap(), Sent::Done);
        while sinks[1].packets().is_empty() {
            net.borrow_mut().advance();
            devices[1].progress(&mut sinks[1]).unwrap();
        }
        assert_eq!(&devices[1].deregister(dst).unwrap()[..], data);
    }
}

#[test]
fn sim_put_copies_at_completion_time_not_before() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(2).with_delay(2, 2));
    let (src, _) = devices[0]
        .register(0, Buf::from(&b"abc"[..]), Access::LocalRead)
        .unwrap();
    let (dst, key) = devices[1]
        .register(0, Buf::zeroed(3).unwrap(), Access::RemoteWrite)
        .unwrap();
    assert_eq!(
        devices[0].put(1, src, key, 3, OpToken(0)).unwrap(),
        Sent::Done
    );
    net.borrow_mut().advance();
    assert_eq!(net.borrow().registered_bytes(1, dst), Some(&[0u8; 3][..]));
    net.borrow_mut().advance();
    assert_eq!(net.borrow().registered_bytes(1, dst), Some(&b"abc"[..]));
    assert_eq!(devices[0].progress(&mut sinks[0]).unwrap(), 1);
    assert_eq!(net.borrow().rdma_stats().puts, 1);
}

#[test]
fn sim_rdma_failures_arrive_through_rdma_done() {
    let net = Network::new(NetConfig::new(3).with_delay(0, 0));
    net.borrow_mut().set_caps(
        2,
        Caps {
            rdma_get: false,
            ..NetConfig::DEFAULT_CAPS
        },
    );
    let mut devices = Network::devices(&net);
    let mut sink = Recorder::taking();
    let (_, key) = devices[1]
        .register(0, Buf::from(&b"1234"[..]), Access::RemoteRead)
        .unwrap();
    let (_, other_rank_key) = devices[2]
        .register(0, Buf::zeroed(4).unwrap(), Access::RemoteRead)
        .unwrap();
    let (dst, _) = devices[0]
        .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
        .unwrap();
    let cases = [
        (
            RemoteKey {
                key: key.key ^ 2,
                ..key
            },
            dst,
            4,
            WcStatus::RemAccessErr.code(),
        ),
        (other_rank_key, dst, 4, WcStatus::RemAccessErr.code()),
        (RemoteKey::default(), dst, 4, WcStatus::RemAccessErr.code()),
        (key, dst, 5, WcStatus::RemInvReqErr.code()),
        (key, MemHandle(777), 4, WcStatus::LocProtErr.code()),
    ];
    for (i, &(key, local, len, _)) in cases.iter().enumerate() {
        assert_eq!(
            devices[0]
                .get(1, key, local, len, OpToken(i as u64))
                .unwrap(),
            Sent::Done
        );
    }
    // A put from a get destination reads a region not registered for it.
    assert_eq!(
        devices[0].put(1, dst, key, 4, OpToken(50)).unwrap(),
        Sent::Done
    );
    assert_eq!(devices[0].progress(&mut sink).unwrap(), cases.len() + 1);
    let done = sink.rdma();
    for (i, &(_, _, _, code)) in cases.iter().enumerate() {
        assert_eq!(done[i].0, OpToken(i as u64));
        assert_eq!(completion_status(done[i].1), code, "case {i}");
    }
    assert_eq!(
        completion_status(done[cases.len()].1),
        WcStatus::LocProtErr.code()
    );
    assert_eq!(
        net.borrow().registered_bytes(0, dst),
        Some(&[0u8; 4][..]),
        "nothing written"
    );
    assert_eq!(net.borrow().rdma_stats().failed, cases.len() as u64 + 1);

    let err = devices[0].get(9, key, dst, 1, OpToken(0)).unwrap_err();
    assert!(matches!(
        err,
        Error::Usage(UsageError::InvalidRank { rank: 9, size: 3 })
    ));
    let err = devices[0]
        .get(2, other_rank_key, dst, 1, OpToken(0))
        .unwrap_err();
    assert_eq!(
        err,
        Error::Device(DeviceError::Unsupported("rdma get")),
        "rank 2 has no get"
    );
    assert!(!devices[2].caps(0).rdma_get && !devices[0].caps(2).rdma_get);
}

#[test]
fn sim_caps_are_the_meet_of_both_ranks() {
    let net = Network::new(NetConfig::new(3));
    let small = Caps {
        max_payload: 100,
        eager_preferred: 8192,
        rdma_put: false,
        wait_fd: true,
        ..NetConfig::DEFAULT_CAPS
    };
    net.borrow_mut().set_caps(2, small);
    let mut devices = Network::devices(&net);
    assert_eq!(devices[0].caps(1), &NetConfig::DEFAULT_CAPS);
    for (a, b) in [(0, 2), (2, 0)] {
        let caps = devices[a].caps(b as Rank);
        assert_eq!(
            (caps.max_payload, caps.rdma_get, caps.rdma_put),
            (100, true, false)
        );
        assert!(!caps.wait_fd, "the simulation has no fd");
    }
    assert_eq!(
        devices[0].caps(-1),
        &NetConfig::DEFAULT_CAPS,
        "unknown peer: own caps"
    );
    let err = devices[0].send(2, &[], &[0; 101]).unwrap_err();
    assert!(matches!(
        err,
        Error::Usage(UsageError::MessageTooLarge { len: 101, max: 100 })
    ));
    assert_eq!(devices[0].send(1, &[], &[0; 101]).unwrap(), Sent::Done);
    let err = devices[0].send(3, &[], &[]).unwrap_err();
    assert!(matches!(
        err,
        Error::Usage(UsageError::InvalidRank { rank: 3, size: 3 })
    ));
    assert_eq!(devices[0].wait_fd(), None);
}

#[test]
fn sim_kill_reports_peer_failed_once_and_refuses_traffic() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(3).with_delay(2, 2));
    assert_eq!(devices[1].send(0, b"a", &[1]).unwrap(), Sent::Done);
    assert_eq!(devices[1].send(0, b"b", &[2]).unwrap(), Sent::Done);
    assert_eq!(devices[0].send(1, b"c", &[]).unwrap(), Sent::Done);
    assert_eq!(devices[0].send(2, b"d", &[]).unwrap(), Sent::Done);
    let (src, key) = devices[1]
        .register(0, Buf::zeroed(4).unwrap(), Access::RemoteRead)
        .unwrap();
    let (dst, _) = devices[0]
        .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
        .unwrap();
    assert_eq!(
        devices[0].get(1, key, dst, 4, OpToken(3)).unwrap(),
        Sent::Done
    );
    assert_eq!(devices[2].arm().unwrap(), Armed::Sleep);

    net.borrow_mut().kill(1);
    assert!(!net.borrow().is_alive(1) && net.borrow().is_alive(0));
    assert_eq!(
        net.borrow().link_stats(1, 0).dropped,
        2,
        "in-flight packets from the dead rank"
    );
    assert_eq!(net.borrow().link_stats(0, 1).dropped, 1, "and to it");
    assert!(
        net.borrow().is_woken(2),
        "the failure wakes an armed survivor"
    );
    devices[2].disarm();

    let died = Error::from(PeerError::Died { rank: 1 });
    assert_eq!(devices[0].progress(&mut sinks[0]).unwrap(), 2);
    assert_eq!(
        sinks[0].rdma(),
        vec![(OpToken(3), Err(died))],
        "the in-flight get is flushed"
    );
    assert_eq!(sinks[0].failures(), vec![(1, died)]);
    assert_eq!(devices[0].send(1, b"x", &[]).unwrap_err(), died);
    assert_eq!(
        devices[0].get(1, key, dst, 4, OpToken(4)).unwrap_err(),
        died
    );
    assert_eq!(
        devices[0].put(1, dst, key, 4, OpToken(5)).unwrap_err(),
        died
    );
    assert_eq!(
        devices[1].send(0, b"x", &[]).unwrap_err(),
        died,
        "the dead rank is silent"
    );
    assert_eq!(devices[1].arm().unwrap(), Armed::Sleep);
    assert!(!net.borrow().is_armed(1), "a dead rank is never woken");

    net.borrow_mut().kill(1);
    run_to_idle(&net, &mut devices, &mut sinks);
    assert_eq!(sinks[0].failures(), vec![(1, died)], "exactly once");
    assert_eq!(sinks[2].failures(), vec![(1, died)], "exactly once");
    assert!(
        sinks[1].events.is_empty(),
        "the dead rank's device reports nothing"
    );
    assert_eq!(
        sinks[2].packets(),
        vec![(0, b"d".to_vec(), vec![])],
        "survivors still talk"
    );
    assert!(sinks[0].packets().is_empty());
    assert!(
        devices[1].deregister(src).is_some(),
        "the dead rank's memory comes back"
    );
}

#[test]
fn sim_corrupt_next_garbles_exactly_one_header() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(3).with_delay(0, 2).with_seed(3));
    net.borrow_mut().corrupt_next(0, 1);
    for i in 0..3u8 {
        assert_eq!(devices[0].send(1, &[0x10, i], &[i; 3]).unwrap(), Sent::Done);
    }
    assert_eq!(devices[0].send(2, &[0x10, 0], &[0; 3]).unwrap(), Sent::Done);
    run_to_idle(&net, &mut devices, &mut sinks);
    let got = sinks[1].packets();
    assert_eq!(
        got[0],
        (0, vec![!0x10, !0], vec![0; 3]),
        "header inverted, payload intact"
    );
    assert_eq!(got[1], (0, vec![0x10, 1], vec![1; 3]));
    assert_eq!(got[2], (0, vec![0x10, 2], vec![2; 3]));
    assert_eq!(sinks[2].packets(), vec![(0, vec![0x10, 0], vec![0; 3])]);
    assert_eq!(net.borrow().link_stats(0, 1).corrupted, 1);
    assert_eq!(net.borrow().link_stats(0, 2).corrupted, 0);
}

#[test]
fn sim_arm_and_wake_follow_the_no_lost_wakeup_rule() {
    let (net, mut devices, mut sinks) = setup(NetConfig::new(2).with_delay(2, 2));
    assert_eq!(devices[1].arm().unwrap(), Armed::Sleep, "nothing pending");
    assert!(net.borrow().is_armed(1) && !net.borrow().is_woken(1));
    assert_eq!(devices[0].send(1, b"p", &[]).unwrap(), Sent::Done);
    assert!(!net.borrow().is_woken(1), "in flight is not deliverable");
    assert_eq!(net.borrow().next_event_at(), Some(2));
    net.borrow_mut().advance();
    assert!(!net.borrow().is_woken(1));
    assert_no_lost_wakeup(&net);
    net.borrow_mut().advance();
    assert!(
        net.borrow().is_woken(1),
        "deliverable while armed raises the flag"
    );
    assert_no_lost_wakeup(&net);
    devices[1].disarm();
    assert!(!net.borrow().is_armed(1) && !net.borrow().is_woken(1));
    assert_eq!(
        devices[1].arm().unwrap(),
        Armed::Pending,
        "a deliverable packet is waiting"
    );
    assert!(!net.borrow().is_armed(1), "Pending does not arm");
    assert_eq!(devices[1].progress(&mut sinks[1]).unwrap(), 1);
    assert_eq!(devices[1].arm().unwrap(), Armed::Sleep);
    devices[1].disarm();

    // An RDMA completion wakes its initiator.
    let (src, key) = devices[1]
        .register(0, Buf::zeroed(1).unwrap(), Access::RemoteRead)
        .unwrap();
    let (dst, _) = devices[0]
        .register(0, Buf::zeroed(1).unwrap(), Access::LocalWrite)
        .unwrap();
    assert_eq!(
        devices[0].get(1, key, dst, 1, OpToken(0)).unwrap(),
        Sent::Done
    );
    assert_eq!(devices[0].arm().unwrap(), Armed::Sleep);
    net.borrow_mut().advance_by(2);
    assert!(net.borrow().is_woken(0));
    assert_no_lost_wakeup(&net);
    devices[0].disarm();
    assert_eq!(devices[0].progress(&mut sinks[0]).unwrap(), 1);
    devices[1].deregister(src).unwrap();
    assert!(net.borrow().is_idle());
}

#[test]
fn sim_zero_delay_send_wakes_an_armed_receiver_at_once() {
    let (net, mut devices, _) = setup(NetConfig::new(2).with_delay(0, 0));
    assert_eq!(devices[1].arm().unwrap(), Armed::Sleep);
    assert_eq!(devices[0].send(1, b"now", &[]).unwrap(), Sent::Done);
    assert!(net.borrow().is_woken(1));
    assert!(net.borrow().has_deliverable(1));
    assert_eq!(devices[0].arm().unwrap(), Armed::Sleep);
    assert_eq!(devices[0].send(0, b"self", &[]).unwrap(), Sent::Done);
    assert!(
        net.borrow().is_woken(0),
        "self-sends go over the network too"
    );
    assert!(format!("{:?} {:?}", net.borrow(), devices[0]).contains("SimDevice"));
}
