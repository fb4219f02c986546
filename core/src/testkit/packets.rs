//! The checks of `send` and `progress`: caps, order, framing, buffering,
//! limits, back-pressure, event counts and payload handover.

use super::{skip, Bench, DeviceKit, Setup, Wake};
use crate::device::{Device, Sent};
use crate::envelope::Rank;
use crate::error::{Error, UsageError};
use crate::recorder::Event;
use crate::wire::MAX_HEADER;

/// Up to three ranks, as many as the kit can build.
fn ranks<K: DeviceKit>(kit: &K) -> usize {
    kit.expect().max_ranks.clamp(1, 3)
}

/// The receiver of the multi-sender checks: rank 1, or 0 alone.
fn receiver(n: usize) -> usize {
    usize::from(n > 1)
}

/// The start of a multi-sender check: `None` when the kit skips `check`,
/// else the default bench of [`ranks`] ranks (`take`: payloads handed over
/// through `into_payload`), its size and its receiver.
fn start<'k, K: DeviceKit>(
    kit: &'k mut K,
    check: &str,
    take: bool,
) -> Option<(Bench<'k, K>, usize, usize)> {
    if !kit.available(check) {
        return None;
    }
    let n = ranks(kit);
    let bench = Bench::new(kit, n, Setup::Default, take).expect("a default setup");
    Some((bench, n, receiver(n)))
}

/// [`crate::Caps`]: every peer's caps agree with what the device does and
/// with what the kit expects: `wait_fd` is set exactly when `wait_fd()`
/// returns an fd, RDMA as expected, and a payload limit that fits a packet.
pub fn caps_match_the_device<K: DeviceKit>(mut kit: K) {
    let check = "caps_match_the_device";
    if !kit.available(check) {
        return;
    }
    let expect = kit.expect();
    let n = ranks(&kit);
    let devs = kit.devices(n, Setup::Default).expect("a default setup");
    for (r, d) in devs.iter().enumerate() {
        for peer in 0..n as Rank {
            let caps = d.caps(peer);
            assert!(!caps.name.is_empty(), "rank {r}: a device name");
            assert!(caps.max_payload > 0, "rank {r}: a payload limit");
            assert_eq!(
                caps.wait_fd,
                d.wait_fd().is_some(),
                "rank {r} peer {peer}: caps.wait_fd says whether wait_fd() has an fd"
            );
            assert_eq!(
                caps.wait_fd,
                expect.wake == Wake::Fd,
                "rank {r} peer {peer}: expected wake-up {:?}",
                expect.wake
            );
            assert_eq!(
                (caps.rdma_get, caps.rdma_put),
                (expect.rdma, expect.rdma),
                "rank {r} peer {peer}: rdma caps"
            );
        }
    }
}

/// *Peers*, *Order*, *Framing*: packets of many sizes (empty, tiny, the
/// limit) from every rank, the receiver itself included, arrive exactly
/// once, in send order per sender, with the header and payload boundaries
/// they were sent with.
pub fn packets_arrive_in_order_from_every_sender_including_self<K: DeviceKit>(mut kit: K) {
    let Some((mut b, n, to)) = start(
        &mut kit,
        "packets_arrive_in_order_from_every_sender_including_self",
        false,
    ) else {
        return;
    };
    let max = b.devs[0].caps(to as Rank).max_payload;
    let sizes = [0usize, 1, 8, 40, 100, 5000.min(max), max];
    let count = 30u8;
    for i in 0..count {
        for s in 0..n {
            let len = sizes[usize::from(i) % sizes.len()];
            let payload = vec![s as u8 * 10 + i; len];
            b.send(s, to, &[s as u8, i], &payload);
        }
    }
    let want = usize::from(count) * n;
    b.drive("every packet", |s| s[to].packets().len() >= want);
    // Nothing more arrives: exactly once.
    for _ in 0..20 {
        b.round();
    }
    let packets = b.sinks[to].packets();
    assert_eq!(packets.len(), want, "each packet exactly once");
    for s in 0..n {
        let mine: Vec<_> = packets.iter().filter(|p| p.0 == s as Rank).collect();
        assert_eq!(mine.len(), usize::from(count), "from {s}");
        for (i, (_, h, p)) in mine.iter().enumerate() {
            assert_eq!(h, &vec![s as u8, i as u8], "order from {s}");
            assert_eq!(
                p,
                &vec![s as u8 * 10 + i as u8; sizes[i % sizes.len()]],
                "payload {i} from {s}"
            );
        }
    }
}

/// *Buffered*: once `send` returns `Done` the caller may reuse both slices;
/// what arrives is what they held at the call.
pub fn a_sent_packet_is_buffered<K: DeviceKit>(mut kit: K) {
    let Some((mut b, _, to)) = start(&mut kit, "a_sent_packet_is_buffered", false) else {
        return;
    };
    let max = b.devs[0].caps(to as Rank).max_payload;
    let mut header = vec![0u8; 8];
    let mut payload = vec![0u8; max.min(3000)];
    for i in 0..10u8 {
        header.fill(i);
        payload.fill(i ^ 0x5A);
        b.send(0, to, &header, &payload);
        // Scribble over both at once, before any progress.
        header.fill(0xEE);
        payload.fill(0xEE);
    }
    b.drive("ten packets", |s| s[to].packets().len() == 10);
    for (i, (from, h, p)) in b.sinks[to].packets().into_iter().enumerate() {
        assert_eq!(from, 0);
        assert_eq!(h, vec![i as u8; 8], "header {i} as sent");
        assert_eq!(
            p,
            vec![i as u8 ^ 0x5A; payload.len()],
            "payload {i} as sent"
        );
    }
}

/// Packet limits: a header of [`MAX_HEADER`] bytes with a payload of
/// [`crate::Caps::max_payload`] arrives whole (longer ones are the engine's
/// to never send: the *Size limits* clause of the contract), and a rank
/// outside the job is [`UsageError::InvalidRank`].
pub fn packets_at_the_limits_arrive_and_unknown_ranks_are_refused<K: DeviceKit>(mut kit: K) {
    let Some((mut b, n, to)) = start(
        &mut kit,
        "packets_at_the_limits_arrive_and_unknown_ranks_are_refused",
        false,
    ) else {
        return;
    };
    let max = b.devs[0].caps(to as Rank).max_payload;
    let d = &mut b.devs[0];
    let outside = n as Rank;
    assert!(
        matches!(
            d.send(outside, b"", b""),
            Err(Error::Usage(UsageError::InvalidRank { rank, .. })) if rank == outside
        ),
        "rank {outside} is outside a job of {n}"
    );
    assert!(
        matches!(
            d.send(-1, b"", b""),
            Err(Error::Usage(UsageError::InvalidRank { rank: -1, .. }))
        ),
        "a negative rank"
    );
    b.send(0, to, &[7; MAX_HEADER], &vec![7; max]);
    b.drive("the largest packet", |s| s[to].packets().len() == 1);
    let (from, h, p) = b.sinks[to].packets().pop().unwrap();
    assert_eq!((from, h.len(), p.len()), (0, MAX_HEADER, max));
    assert!(h.iter().chain(&p).all(|&x| x == 7));
}

/// *Back-pressure*: a sender whose receiver does not progress runs out of
/// resources and gets [`Sent::Busy`] (not an error, and having sent
/// nothing); after progress it sends again, and everything accepted
/// arrives once, in order.
pub fn back_pressure_is_busy_and_recovers_in_order<K: DeviceKit>(mut kit: K) {
    let check = "back_pressure_is_busy_and_recovers_in_order";
    if !kit.available(check) {
        return;
    }
    let n = ranks(&kit).min(2);
    let to = receiver(n);
    let Some(mut b) = Bench::new(&mut kit, n, Setup::Bounded, false) else {
        return skip(check, "the kit has no bounded setup");
    };
    let payload = vec![5u8; b.devs[0].caps(to as Rank).max_payload.min(10_000)];
    let mut sent = 0u32;
    let mut busy = false;
    // Neither side progresses: the send resources run out.
    while sent < 100_000 {
        match b.devs[0]
            .send(to as Rank, &sent.to_le_bytes(), &payload)
            .expect("send")
        {
            Sent::Done => sent += 1,
            Sent::Busy => {
                busy = true;
                break;
            }
        }
    }
    assert!(busy, "{sent} sends never ran out of resources");
    assert!(sent > 0, "the first send was accepted");
    let total = sent + 10;
    for i in sent..total {
        b.send(0, to, &i.to_le_bytes(), &payload);
    }
    b.drive("every accepted packet", |s| {
        s[to].packets().len() >= total as usize
    });
    for _ in 0..10 {
        b.round();
    }
    let packets = b.sinks[to].packets();
    assert_eq!(packets.len(), total as usize, "a Busy send sent nothing");
    for (i, (_, h, p)) in packets.iter().enumerate() {
        assert_eq!(h[..], (i as u32).to_le_bytes(), "FIFO after back-pressure");
        assert_eq!(p.len(), payload.len());
    }
}

/// *Progress*: `progress` never blocks, returns exactly the number of events
/// it reported (every round of the kit checks that), and returns 0 once
/// everything is delivered.
pub fn progress_counts_what_it_reports<K: DeviceKit>(mut kit: K) {
    let Some((mut b, n, to)) = start(&mut kit, "progress_counts_what_it_reports", false) else {
        return;
    };
    let mut reported = 0;
    for i in 0..5u8 {
        for s in 0..n {
            b.send(s, to, &[i], &[i; 10]);
        }
    }
    let start = std::time::Instant::now();
    while b.sinks[to].packets().len() < 5 * n {
        reported += b.round();
        assert!(start.elapsed() < super::DEADLINE, "packets never arrived");
    }
    let events: usize = b.sinks.iter().map(|s| s.events.len()).sum();
    assert_eq!(reported, events, "the returned counts add up");
    // Quiet: some round reports nothing, and then every round does.
    let start = std::time::Instant::now();
    while b.round() > 0 {
        assert!(
            start.elapsed() < super::DEADLINE,
            "progress never went quiet"
        );
    }
    let events = b.sinks[to].events.len();
    for _ in 0..10 {
        assert_eq!(b.round(), 0, "nothing left to report");
    }
    assert_eq!(b.sinks[to].events.len(), events);
}

/// *Progress*, [`crate::device::Incoming::into_payload`]: a taken payload
/// holds the bytes, is writable, is the device's own buffer where the kit
/// says the device hands over (the first packet of an idle device at
/// least), and outlives the device.
pub fn into_payload_hands_over_a_buffer_that_outlives_the_device<K: DeviceKit>(mut kit: K) {
    let Some((mut b, _, to)) = start(
        &mut kit,
        "into_payload_hands_over_a_buffer_that_outlives_the_device",
        true,
    ) else {
        return;
    };
    let hands_over = b.kit.expect().hands_over;
    // Past any small-packet path that copies (shm's fastboxes).
    let len = b.devs[0].caps(to as Rank).max_payload.min(1000);
    for i in 0..6u8 {
        b.send(0, to, &[i], &vec![i; len]);
    }
    b.drive("six packets", |s| s[to].packets().len() == 6);
    let handed: Vec<bool> = b.sinks[to]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Packet {
                payload_addr,
                buf_id,
                ..
            } => Some(payload_addr == buf_id),
            _ => None,
        })
        .collect();
    if hands_over {
        assert!(handed[0], "the first payload is the device's own buffer");
    }
    let mut bufs = b.sinks[to].bufs();
    assert_eq!(bufs.len(), 6);
    for (i, buf) in bufs.iter().enumerate() {
        assert_eq!(&buf[..], &vec![i as u8; len][..]);
    }
    bufs[0][0] = 42;
    assert_eq!(bufs[0][0], 42, "a taken payload is writable");
    drop(bufs);
    // Dropped buffers went back: the device keeps working.
    for i in 0..50u8 {
        b.send(0, to, &[i], &[i; 300]);
    }
    b.drive("50 more", |s| s[to].packets().len() == 56);
    b.sinks[to].bufs();
    // A taken buffer outlives its device.
    b.send(0, to, b"h", b"payload");
    b.drive("the last packet", |s| s[to].packets().len() == 57);
    let last = b.sinks[to].bufs().pop().expect("taken");
    drop(b);
    assert_eq!(&last[..], b"payload");
}
