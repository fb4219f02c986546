//! Device tests inside one process: each "rank" is a device set up on its
//! own thread with [`ThreadBoot`], then driven from the test thread. They
//! need a real RDMA device (CI runs them in the Soft-RoCE VM, on `rxe0`,
//! with `FERRY_VERBS_DEVICE` unset so the default selection is exercised).
//!
//! Without an RDMA device each test prints `SKIPPED` and passes, unless
//! `FERRY_VERBS_REQUIRE=1` (set by `ci/verbs.sh` inside the VM), which makes
//! a missing device a failure.
//!
//! The device contract is checked by ferry-core's test kit (`contract`);
//! these are the verbs device's own tests (port selection, credits, receive
//! buffer handover, registrations, keepalives, chunking, setup errors).

mod batch;
mod contract;
mod events;
mod lazy;
mod rcache;

use std::time::{Duration, Instant};

use ferry_core::device::{Access, Armed, Device, OpToken, Sent};
use ferry_core::recorder::Recorder;
use ferry_core::testkit::on_threads;
use ferry_core::{Buf, DeviceError, Error, PeerError, Rank, ThreadBoot};

use crate::{VerbsDevice, VerbsError, VerbsOptions};

/// Every wait in these tests ends by this deadline (Soft-RoCE under TCG is
/// slow, never this slow).
const DEADLINE: Duration = Duration::from_secs(30);

/// True if an RDMA device is present; otherwise prints SKIPPED (or fails
/// under `FERRY_VERBS_REQUIRE=1`).
fn rdma_present(test: &str) -> bool {
    let found = crate::devices()
        .map(|d| d.iter().any(|p| p.active))
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var("FERRY_VERBS_REQUIRE").as_deref() != Ok("1"),
            "{test}: no active RDMA port, and FERRY_VERBS_REQUIRE=1"
        );
        eprintln!("SKIPPED {test}: no active RDMA port on this machine (run ci/verbs.sh)");
    }
    found
}

fn try_devices(
    n: u32,
    opts: VerbsOptions,
    mangle: Option<fn(&str, String) -> String>,
) -> Vec<Result<VerbsDevice, VerbsError>> {
    let ranks: Vec<Rank> = (0..n as Rank).collect();
    on_threads(n, "verbs-unit", mangle, move |_, boot| {
        VerbsDevice::new(boot, &ranks, opts.clone())
    })
}

/// `n` devices, not connected (connections are made on first use).
fn lazy_devices(n: u32, opts: VerbsOptions) -> Vec<VerbsDevice> {
    try_devices(n, opts, None)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// `n` devices with every pair (and each loopback) connected, so that the
/// tests below see a send accepted at once, as before connections were
/// lazy; `lazy.rs` tests the handshake itself.
fn devices(n: u32, opts: VerbsOptions) -> Vec<VerbsDevice> {
    let mut devs = lazy_devices(n, opts);
    connect_all(&mut devs);
    devs
}

/// Connects every pair of `devs`, progressing all until done.
fn connect_all(devs: &mut [VerbsDevice]) {
    let mut sinks: Vec<Recorder> = devs.iter().map(|_| Recorder::default()).collect();
    let start = Instant::now();
    loop {
        let mut all = true;
        for d in devs.iter_mut() {
            for peer in 0..sinks.len() as Rank {
                all &= d.connect(peer).unwrap();
            }
        }
        if all {
            break;
        }
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "connecting timed out");
    }
    assert!(
        sinks.iter().all(|s| s.events.is_empty()),
        "a handshake is invisible to the engine"
    );
}

fn small() -> VerbsOptions {
    VerbsOptions {
        eager_size: 1024,
        credits: 4,
        send_bufs: 8,
        ..VerbsOptions::default()
    }
}

/// Progresses `dev` into `sink` until `done(sink)` or the deadline.
fn pump(dev: &mut VerbsDevice, sink: &mut Recorder, done: impl Fn(&Recorder) -> bool) {
    let start = Instant::now();
    while !done(sink) {
        dev.progress(sink).unwrap();
        assert!(
            start.elapsed() < DEADLINE,
            "timed out; saw {:?}",
            sink.events.len()
        );
    }
}

fn packets(sink: &Recorder) -> usize {
    sink.packets().len()
}

/// Progresses every device (returning credits) until `send` is accepted.
fn send_retrying(
    devs: &mut [VerbsDevice],
    from: usize,
    to: Rank,
    h: &[u8],
    p: &[u8],
    sinks: &mut [Recorder],
) {
    let start = Instant::now();
    while devs[from].send(to, h, p).unwrap() == Sent::Busy {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "send stayed Busy");
    }
}

#[test]
fn default_selection_finds_a_port_and_lists_it() {
    if !rdma_present("default_selection_finds_a_port_and_lists_it") {
        return;
    }
    let list = crate::devices().unwrap();
    for p in &list {
        eprintln!("{}", p.summary);
    }
    let devs = devices(1, VerbsOptions::default());
    let name = devs[0].port_name();
    assert!(list
        .iter()
        .any(|p| p.active && name == format!("{}:{}", p.device, p.port)));
    let caps = devs[0].caps(0);
    assert!(caps.rdma_get && caps.rdma_put && caps.wait_fd);
    assert_eq!(caps.max_payload, 8192 - ferry_core::wire::MAX_HEADER);
    assert!(
        devs[0].max_inline() > 0,
        "rxe and ConnectX both support inline sends"
    );
    eprintln!(
        "selected {name}, gid index {:?}, inline {}",
        devs[0].gid_index(),
        devs[0].max_inline()
    );
}

#[test]
fn a_flood_is_held_back_by_credits_and_then_delivered_in_order() {
    if !rdma_present("a_flood_is_held_back_by_credits") {
        return;
    }
    let mut devs = devices(2, small());
    let credits = devs[0].credits_available(1).unwrap();
    assert_eq!(credits, 4);
    // The receiver does not progress: after `credits` packets, Busy.
    for i in 0..credits {
        assert_eq!(devs[0].send(1, &[i as u8], &[7; 100]).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].send(1, b"x", b"y").unwrap(), Sent::Busy);
    // Now a flood of 200, one way, with both sides progressing: credits come
    // back by explicit credit messages (rank 1 sends nothing).
    let total = 200usize;
    let mut sinks = [Recorder::default(), Recorder::default()];
    for i in credits as usize..total {
        let payload = vec![(i % 251) as u8; 300 + i % 500];
        send_retrying(
            &mut devs,
            0,
            1,
            &(i as u32).to_le_bytes(),
            &payload,
            &mut sinks,
        );
    }
    let start = Instant::now();
    while packets(&sinks[1]) < total {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < DEADLINE);
    }
    let got = sinks[1].packets();
    for (i, (_, h, p)) in got.iter().enumerate().skip(credits as usize) {
        assert_eq!(h, &(i as u32).to_le_bytes().to_vec());
        assert_eq!(p.len(), 300 + i % 500);
    }
    assert!(sinks.iter().all(|s| s.failures().is_empty()));
    // Every credit comes back once the receiver has consumed everything.
    let start = Instant::now();
    while devs[0].credits_available(1) != Some(credits) {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        if start.elapsed() > Duration::from_secs(2) {
            // Fewer than half owed: they stay owed until the next data
            // message or threshold; that is by design.
            break;
        }
    }
    assert!(devs[0].credits_available(1).unwrap() >= credits / 2);
}

#[test]
fn into_payload_hands_over_the_receive_buffer_and_copies_when_spares_run_out() {
    if !rdma_present("into_payload_hands_over") {
        return;
    }
    let mut devs = devices(2, small());
    let mut taker = Recorder::taking();
    let mut other = Recorder::default();
    let mut held: Vec<Buf> = Vec::new();
    // depth = 2 peers × (4 + 2) = 12 posted, 12 spare: 30 packets held at
    // once must include copies, and nothing may fail.
    for i in 0..30u32 {
        let start = Instant::now();
        while devs[0].send(1, b"H", &i.to_le_bytes().repeat(50)).unwrap() == Sent::Busy {
            devs[0].progress(&mut other).unwrap();
            devs[1].progress(&mut taker).unwrap();
            held.extend(taker.bufs());
            assert!(start.elapsed() < DEADLINE);
        }
    }
    let start = Instant::now();
    while held.len() < 30 {
        devs[0].progress(&mut other).unwrap();
        devs[1].progress(&mut taker).unwrap();
        held.extend(taker.bufs());
        assert!(start.elapsed() < DEADLINE);
    }
    let lent = held
        .iter()
        .filter(|b| devs[1].eager_buffer_contains(b.id()))
        .count();
    assert!(
        lent >= 12,
        "the first buffers were handed over, not copied ({lent})"
    );
    assert!(lent < 30, "beyond the spares, payloads are copied ({lent})");
    for (i, b) in held.iter().enumerate() {
        assert_eq!(b.as_slice(), (i as u32).to_le_bytes().repeat(50).as_slice());
    }
    // Dropping the buffers gives the slots back: handover resumes.
    held.clear();
    taker.events.clear();
    assert_eq!(devs[0].send(1, b"H", b"again").unwrap(), Sent::Done);
    pump(&mut devs[1], &mut taker, |s| !s.events.is_empty());
    let b = taker.bufs().pop().unwrap();
    assert!(devs[1].eager_buffer_contains(b.id()));
    assert_eq!(b.as_slice(), b"again");
    // A lent buffer outlives the device.
    drop(devs);
    assert_eq!(b.as_slice(), b"again");
}

fn wait_rdma(dev: &mut VerbsDevice, sink: &mut Recorder, n: usize) {
    pump(dev, sink, |s| s.rdma().len() >= n);
}

/// Moving the bytes is checked by the kit; verbs' own: a zero-length
/// transfer completes (no work request is posted for it), a handle is good
/// once, and a stale one is a usage error.
#[test]
fn zero_length_rdma_completes_and_stale_handles_are_refused() {
    if !rdma_present("zero_length_rdma_completes") {
        return;
    }
    let mut devs = devices(2, small());
    let mut sink = Recorder::default();
    // Zero-length and unknown handles.
    let (h, key) = devs[0].register(1, Buf::new(), Access::RemoteRead).unwrap();
    let (h2, _) = devs[1].register(0, Buf::new(), Access::LocalWrite).unwrap();
    assert_eq!(devs[1].get(0, key, h2, 0, OpToken(9)).unwrap(), Sent::Done);
    wait_rdma(&mut devs[1], &mut sink, 1);
    assert!(devs[1].deregister(h2).is_some());
    assert!(devs[1].deregister(h2).is_none(), "a handle is good once");
    assert!(devs[0].deregister(h).is_some());
    assert!(matches!(
        devs[1].get(0, key, h2, 1, OpToken(3)),
        Err(Error::Usage(ferry_core::UsageError::StaleHandle))
    ));
    assert_eq!(devs[0].registrations() + devs[1].registrations(), 0);
}

/// Allocates `len`-byte vectors filled with `fill` until the allocator
/// hands back `addr` (it does at once for a freed block of the same size).
fn vec_at(addr: usize, len: usize, fill: u8) -> Vec<u8> {
    let mut held = Vec::new();
    loop {
        let v = vec![fill; len];
        if v.as_ptr() as usize == addr {
            return v;
        }
        held.push(v);
        assert!(held.len() < 64, "the allocator never reused the address");
    }
}

/// Rank 1 reads `len` bytes at rank 0's `key` into a fresh buffer: the
/// completion's result and the buffer.
fn read_remote(
    devs: &mut [VerbsDevice],
    key: ferry_core::wire::RemoteKey,
    len: usize,
    sink: &mut Recorder,
) -> (Result<(), Error>, Buf) {
    let (h, _) = devs[1]
        .register(0, Buf::zeroed(len).unwrap(), Access::LocalWrite)
        .unwrap();
    sink.events.clear();
    assert_eq!(devs[1].get(0, key, h, len, OpToken(1)).unwrap(), Sent::Done);
    wait_rdma(&mut devs[1], sink, 1);
    let (tok, res) = sink.rdma().pop().unwrap();
    assert_eq!(tok, OpToken(1));
    (res, devs[1].deregister(h).unwrap())
}

/// The old `key` grants nothing: the read fails with a completion error,
/// reads nothing, and (RC semantics: the QP is now in the error state) the
/// peer is reported.
fn assert_refused(devs: &mut [VerbsDevice], key: ferry_core::wire::RemoteKey, sink: &mut Recorder) {
    let (res, buf) = read_remote(devs, key, 64 * 1024, sink);
    assert!(
        matches!(res, Err(Error::Device(DeviceError::Completion { .. }))),
        "{res:?}"
    );
    assert!(buf.iter().all(|&b| b == 0), "nothing was read");
    pump(&mut devs[1], sink, |s| !s.failures().is_empty());
}

/// The registration-cache guarantee: a buffer freed and reallocated at the
/// same address gets a fresh registration, and the old key grants nothing.
#[test]
fn a_registration_is_never_stale_after_the_buffer_is_reused() {
    if !rdma_present("a_registration_is_never_stale") {
        return;
    }
    let mut devs = devices(2, small());
    let len = 64 * 1024;
    let mut sink = Recorder::default();
    let (h, old) = devs[0]
        .register(1, Buf::from_vec(vec![1; len]), Access::RemoteRead)
        .unwrap();
    let buf = devs[0].deregister(h).unwrap();
    let addr = buf.id();
    drop(buf);
    let reused = vec_at(addr, len, 2);
    let t0 = Instant::now();
    let (h2, new) = devs[0]
        .register(1, Buf::from_vec(reused), Access::RemoteRead)
        .unwrap();
    eprintln!("ibv_reg_mr of {len} bytes: {:?}", t0.elapsed());
    assert_eq!(new.addr, old.addr, "same memory");
    assert_ne!(new.key, old.key, "a fresh registration, not a cached one");
    // The new key reads the new contents; the old key fails.
    let (res, buf) = read_remote(&mut devs, new, len, &mut sink);
    res.unwrap();
    assert!(buf.iter().all(|&b| b == 2));
    assert_refused(&mut devs, old, &mut sink);
    assert!(devs[0].deregister(h2).is_some());
}

/// Whether `dev`'s wait fd becomes readable within `timeout_ms` (`poll(2)`).
fn poll_in(dev: &VerbsDevice, timeout_ms: i32) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(dev, PollFlags::IN)];
    let t = Timespec {
        tv_sec: i64::from(timeout_ms / 1000),
        tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
    };
    poll(&mut fds, Some(&t)).expect("poll") > 0
}

#[test]
fn a_malformed_peer_address_is_a_typed_setup_error() {
    if !rdma_present("a_malformed_peer_address") {
        return;
    }
    fn garble(key: &str, v: String) -> String {
        if key.starts_with("ferry-verbs-port-") {
            "v1,zz,nonsense,3".to_owned()
        } else {
            v
        }
    }
    let results = try_devices(2, small(), Some(garble));
    for r in results {
        let Err(e) = r else {
            panic!("setup succeeded with garbage")
        };
        assert!(matches!(e, VerbsError::BadPeerAddress { .. }), "{e}");
    }
    let err = VerbsDevice::new(
        &mut ThreadBoot::group(1, "verbs-bad").pop().unwrap(),
        &[1, 0],
        small(),
    )
    .unwrap_err();
    assert!(matches!(err, VerbsError::BadPeers(_)), "{err}");
}

/// A rank that sends nothing and sleeps on the wait fd still learns that
/// its peer died: the keepalive timer wakes it to probe (liveness.rs).
#[test]
fn a_rank_that_only_waits_learns_that_its_peer_died() {
    if !rdma_present("a_rank_that_only_waits_learns_that_its_peer_died") {
        return;
    }
    let opts = VerbsOptions {
        timeout: 14,
        retry: 3,
        keepalive_ms: 200,
        ..small()
    };
    let mut devs = devices(2, opts);
    drop(devs.pop()); // rank 1 dies
    let mut rx = devs.pop().unwrap();
    assert!(rx.wait_fd().is_some());
    let mut sink = Recorder::default();
    let (t0, mut sleeps) = (Instant::now(), 0);
    while sink.failures().is_empty() {
        rx.progress(&mut sink).unwrap();
        if !sink.failures().is_empty() {
            break;
        }
        match rx.arm().unwrap() {
            Armed::Pending => rx.disarm(),
            Armed::Sleep => {
                sleeps += 1;
                poll_in(&rx, 5_000);
                rx.disarm();
            }
        }
        assert!(t0.elapsed() < DEADLINE, "the death was never noticed");
    }
    eprintln!(
        "a sleeping rank noticed its peer's death after {:?} ({sleeps} sleeps)",
        t0.elapsed()
    );
    assert!(sleeps > 0, "it slept in between");
    assert!(matches!(
        sink.failures()[0],
        (1, Error::Peer(PeerError::Died { rank: 1 }))
    ));
}

/// Transfers longer than the port's `max_msg_sz` (8 MiB on rxe) are split
/// into chunks; with a tiny chunk size there are more chunks than send-queue
/// slots, so the rest are posted by later `progress` calls.
#[test]
fn rdma_longer_than_max_msg_is_chunked_and_completes_once() {
    if !rdma_present("rdma_longer_than_max_msg_is_chunked") {
        return;
    }
    let mut devs = devices(2, small());
    eprintln!("port max_msg_sz: {} bytes", devs[0].limits.max_msg());
    let len = 20 << 20;
    let src: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    for max_msg in [devs[1].limits.max_msg(), 64 << 10] {
        let mut sink = Recorder::default();
        devs[1].limits.set_max_msg(max_msg);
        devs[0].limits.set_max_msg(max_msg);
        let (hs, key) = devs[0]
            .register(1, Buf::from_vec(src.clone()), Access::RemoteRead)
            .unwrap();
        let (hd, _) = devs[1]
            .register(0, Buf::zeroed(len).unwrap(), Access::LocalWrite)
            .unwrap();
        assert_eq!(
            devs[1].get(0, key, hd, len, OpToken(7)).unwrap(),
            Sent::Done
        );
        wait_rdma(&mut devs[1], &mut sink, 1);
        assert_eq!(sink.rdma().len(), 1, "one completion per operation");
        sink.rdma().pop().unwrap().1.unwrap();
        assert!(devs[1].deregister(hd).unwrap().as_slice() == src.as_slice());
        assert!(devs[0].deregister(hs).is_some());
        let mut sink = Recorder::default();
        let (ht, key) = devs[1]
            .register(0, Buf::zeroed(len).unwrap(), Access::RemoteWrite)
            .unwrap();
        let (hl, _) = devs[0]
            .register(1, Buf::from_vec(src.clone()), Access::LocalRead)
            .unwrap();
        assert_eq!(
            devs[0].put(1, hl, key, len, OpToken(8)).unwrap(),
            Sent::Done
        );
        wait_rdma(&mut devs[0], &mut sink, 1);
        sink.rdma().pop().unwrap().1.unwrap();
        assert!(devs[1].deregister(ht).unwrap().as_slice() == src.as_slice());
        assert!(devs[0].deregister(hl).is_some());
        assert_eq!(sink.rdma().len(), 1, "one completion per operation");
        // Nothing else completes later.
        let mut later = Recorder::default();
        for _ in 0..100 {
            devs[0].progress(&mut later).unwrap();
            devs[1].progress(&mut later).unwrap();
        }
        assert!(later.rdma().is_empty());
    }
}
