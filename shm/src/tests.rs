//! Device tests inside one process: each "rank" is a thread with its own
//! mapping of the segment (the same code paths as separate processes, CMA
//! included: a process may `process_vm_readv` itself). The device contract
//! is checked by ferry-core's test kit (`contract`); these are the shm
//! device's own tests (cells, fastboxes, CMA keys, the memory formula). The
//! multi-process tests are in `tests/`.

mod contract;

use ferry_core::device::{Access, Armed, Device, MemHandle, OpToken, Sent, WcStatus};
use ferry_core::wire::RemoteKey;
use ferry_core::{Buf, DeviceError, Error, PeerError, Rank};

use crate::{ShmDevice, ShmOptions};

fn job_id(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "unit{}x{}x{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// No file of this job is left in the segment directory.
fn assert_clean(job: &str) {
    let prefix = format!("ferry-{job}-");
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(leftovers.is_empty(), "left in /dev/shm: {leftovers:?}");
}

/// Sets up `n` devices, one per thread, all ranks local.
fn devices(n: u32, opts: ShmOptions, tag: &str) -> Vec<ShmDevice> {
    devices_with(n, opts, tag, None)
}

fn devices_with(
    n: u32,
    opts: ShmOptions,
    tag: &str,
    mangle: Option<fn(&str, String) -> String>,
) -> Vec<ShmDevice> {
    try_devices(n, opts, tag, mangle)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

fn try_devices(
    n: u32,
    opts: ShmOptions,
    tag: &str,
    mangle: Option<fn(&str, String) -> String>,
) -> Vec<Result<ShmDevice, crate::ShmError>> {
    let job = job_id(tag);
    let ranks: Vec<Rank> = (0..n as Rank).collect();
    let devs = on_threads(n, &job, mangle, move |_, boot| {
        ShmDevice::new(boot, &ranks, opts.clone())
    });
    assert_clean(&job);
    devs
}

use ferry_core::recorder::Recorder;
use ferry_core::testkit::on_threads;

/// Cells only (no fastboxes): the cell path's tests.
fn small() -> ShmOptions {
    ShmOptions {
        cell_size: 256,
        cells_per_rank: 8,
        fastbox_slots: 0,
        ..ShmOptions::default()
    }
}

/// Small cells and small fastbox rings (4 slots of 128 bytes).
fn small_fb() -> ShmOptions {
    ShmOptions {
        fastbox_slots: 4,
        fastbox_slot_size: 128,
        ..small()
    }
}

/// Cell accounting behind back-pressure (the contract's Busy rule is in the
/// kit): 8 cells, then Busy with the pool empty; the receiver gives every
/// cell back.
#[test]
fn a_full_pool_is_busy_and_the_receiver_returns_every_cell() {
    let mut devs = devices(2, small(), "busy");
    for _ in 0..8 {
        assert_eq!(devs[0].send(1, b"h", b"x").unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].send(1, b"h", b"x").unwrap(), Sent::Busy);
    assert_eq!(devs[0].free_cells(), 0);
    let mut sink = Recorder::default();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 8);
    assert_eq!(devs[0].send(1, b"h", b"y").unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 7, "the receiver returned every cell");
}

#[test]
fn corrupted_cells_are_protocol_errors_reported_once() {
    let mut devs = devices(2, small(), "corrupt");
    // Forge cells from rank 0: bad header length, bad payload length, and a
    // source that is not the owner.
    for (at, value) in [(4usize, 65u32), (8, 257), (8, u32::MAX), (0, 1)] {
        let d = &mut devs[0];
        let mut cell = d.pool.pop().unwrap();
        let body = d.seg.body_mut(&mut cell);
        crate::cell::encode(body, 0, 0, b"hh", b"pp").unwrap();
        body[at..at + 4].copy_from_slice(&value.to_le_bytes());
        d.seg.push_recv(1, cell).unwrap();
    }
    let mut sink = Recorder::default();
    devs[1].progress(&mut sink).unwrap();
    devs[1].progress(&mut sink).unwrap();
    assert!(sink.packets().is_empty(), "no corrupted cell was delivered");
    let failures = sink.failures();
    assert_eq!(failures.len(), 1, "reported once: {failures:?}");
    assert!(matches!(
        failures[0],
        (0, Error::Peer(PeerError::Protocol { rank: 0, .. }))
    ));
    assert!(matches!(
        devs[1].send(0, b"", b""),
        Err(Error::Peer(PeerError::Protocol { rank: 0, .. }))
    ));
    // The rejected cells went back to their owner.
    assert_eq!(devs[0].send(1, b"", b"").unwrap(), Sent::Done);
    devs[0].refill();
    assert_eq!(devs[0].free_cells(), 7);
}

/// A queue link pointing outside the segment: the receiver delivers what
/// came before it, then cuts every peer off with a protocol error (nothing
/// after the bad link can be trusted), and never indexes out of bounds.
#[test]
fn a_corrupted_queue_link_cuts_every_peer_off() {
    let mut devs = devices(3, small(), "link");
    assert_eq!(devs[0].send(1, b"first", b"").unwrap(), Sent::Done);
    let d = &devs[0];
    let cell = d.seg.geometry().pool(0).end - 1; // the LIFO pool's first pick
    d.seg
        .link(cell)
        .unwrap()
        .store(u32::MAX - 7, std::sync::atomic::Ordering::Release);
    let mut sink = Recorder::default();
    devs[1].progress(&mut sink).unwrap();
    devs[1].progress(&mut sink).unwrap();
    assert_eq!(sink.packets().len(), 1, "the packet before the bad link");
    let failed: Vec<Rank> = sink.failures().iter().map(|f| f.0).collect();
    assert_eq!(failed, vec![0, 1, 2], "every peer reported once");
    assert!(sink
        .failures()
        .iter()
        .all(|f| matches!(f.1, Error::Peer(PeerError::Protocol { .. }))));
    assert!(devs[1].send(2, b"", b"").is_err());
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep, "nothing left to do");
}

#[test]
fn into_payload_hands_over_the_cell_until_half_the_pool_is_parked() {
    let mut devs = devices(2, small(), "park");
    for i in 0..6u8 {
        assert_eq!(devs[0].send(1, &[i], &[i; 100]).unwrap(), Sent::Done);
    }
    let mut sink = Recorder {
        take: true,
        ..Recorder::default()
    };
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 6);
    let mut bufs = sink.bufs();
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(&b[..], &[i as u8; 100][..]);
    }
    // 8 cells per rank: 4 may be parked, the rest are copies.
    let in_cells: Vec<bool> = bufs
        .iter()
        .map(|b| devs[1].segment_contains(b.id()))
        .collect();
    assert_eq!(in_cells, [true, true, true, true, false, false]);
    // Parked cells are writable (ARecv buffers belong to the user).
    bufs[0][0] = 42;
    assert_eq!(bufs[0][0], 42);
    let storage = bufs.remove(1).into_storage().unwrap();
    assert!(storage
        .into_any()
        .downcast::<crate::incoming::CellBuf>()
        .is_ok());
    drop(bufs);
    devs[0].refill();
    assert_eq!(
        devs[0].free_cells(),
        8,
        "dropping the buffers returned every cell"
    );
    // And parking is possible again.
    assert_eq!(devs[0].send(1, b"", &[9; 10]).unwrap(), Sent::Done);
    devs[1].progress(&mut sink).unwrap();
    let b = sink.bufs().pop().unwrap();
    assert!(devs[1].segment_contains(b.id()));
}

/// The wake-up itself is checked by the kit; shm specifics: `disarm`
/// drains the wake-up datagram, and an awake receiver is sent no signal.
#[test]
fn disarm_drains_the_wake_up_and_an_awake_receiver_gets_no_signal() {
    let mut devs = devices(2, small(), "wake");
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    assert_eq!(devs[0].send(1, b"wake", b"").unwrap(), Sent::Done);
    assert!(readable(&devs[1], 1000), "the send woke the sleeper");
    devs[1].disarm();
    let mut sink = Recorder::default();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
    assert!(!readable(&devs[1], 0), "disarm drained the wake-up");
    // Awake receiver: no signal is sent.
    assert_eq!(devs[0].send(1, b"quiet", b"").unwrap(), Sent::Done);
    assert!(!readable(&devs[1], 0));
    assert_eq!(devs[1].arm().unwrap(), Armed::Pending, "a packet is queued");
    devs[1].disarm();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
}

/// Polls `dev`'s wait fd for readability.
pub(crate) fn readable(dev: &ShmDevice, ms: i32) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(dev, PollFlags::IN)];
    let t = Timespec {
        tv_sec: i64::from(ms / 1000),
        tv_nsec: i64::from(ms % 1000) * 1_000_000,
    };
    poll(&mut fds, Some(&t)).unwrap() > 0
}

/// Moving the bytes is checked by the kit; shm checks every key: forged,
/// stale and out-of-range keys fail through `rdma_done` with the status
/// `ibv_wc_status` would give.
#[test]
fn cma_refuses_forged_stale_and_out_of_range_keys() {
    let mut devs = devices(2, ShmOptions::default(), "cma");
    assert!(devs[0].cma_enabled(), "CMA works on this machine");
    let (src, key) = devs[0]
        .register(0, Buf::from(vec![7u8; 64]), Access::RemoteRead)
        .unwrap();
    // Forged, stale and out-of-range keys fail through rdma_done.
    let (dst, _) = devs[1]
        .register(0, Buf::zeroed(16).unwrap(), Access::LocalWrite)
        .unwrap();
    let forged = RemoteKey {
        key: key.key ^ 2,
        ..key
    };
    let moved = RemoteKey {
        addr: key.addr + 8,
        ..key
    };
    let cases: [(RemoteKey, MemHandle, usize, WcStatus); 4] = [
        (forged, dst, 16, WcStatus::RemAccessErr),
        (moved, dst, 8, WcStatus::RemAccessErr),
        (key, dst, 17, WcStatus::LocLenErr),
        (key, MemHandle(999), 1, WcStatus::LocProtErr),
    ];
    for (i, (k, local, len, _)) in cases.iter().enumerate() {
        assert_eq!(
            devs[1]
                .get(0, *k, *local, *len, OpToken(10 + i as u64))
                .unwrap(),
            Sent::Done
        );
    }
    let mut sink = Recorder::default();
    devs[1].progress(&mut sink).unwrap();
    let done = sink.rdma();
    assert_eq!(done.len(), cases.len());
    for (i, (_, _, _, code)) in cases.iter().enumerate() {
        match done[i].1 {
            Err(Error::Device(DeviceError::Completion { status, .. })) => {
                assert_eq!(status, code.code(), "case {i}")
            }
            other => panic!("case {i}: {other:?}"),
        }
    }
    devs[0].deregister(src).unwrap();
    assert_eq!(
        devs[1].get(0, key, dst, 1, OpToken(20)).unwrap(),
        Sent::Done
    );
    devs[1].progress(&mut sink).unwrap();
    assert!(
        matches!(sink.rdma().last(), Some((OpToken(20), Err(_)))),
        "a deregistered (stale) key is refused"
    );
}

/// Rank 2's CMA probe buffer is published at an unmapped address, so the
/// others' probes of it fail: every rank turns CMA off (the caps must agree
/// across ranks), and large messages would go through the cells.
#[test]
fn a_failed_cma_probe_disables_cma_on_every_rank() {
    fn mangle(key: &str, value: String) -> String {
        if key != "ferry-shm-2" {
            return value;
        }
        let mut parts: Vec<&str> = value.split('-').collect();
        parts[1] = "10";
        parts.join("-")
    }
    let devs = devices_with(3, small(), "probe", Some(mangle));
    for d in &devs {
        assert!(!d.cma_enabled());
        assert!(!d.caps(0).rdma_get && !d.caps(0).rdma_put);
    }
}

/// A cell handed out as a buffer keeps the mapping alive after its device
/// is gone, and returning it then is harmless.
#[test]
fn cell_buffers_outlive_their_device() {
    let mut devs = devices(2, small(), "outlive");
    assert_eq!(devs[0].send(1, b"h", b"payload").unwrap(), Sent::Done);
    let mut sink = Recorder {
        take: true,
        ..Recorder::default()
    };
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
    let buf = sink.bufs().pop().unwrap();
    assert!(devs[1].segment_contains(buf.id()));
    drop(devs);
    assert_eq!(&buf[..], b"payload");
    drop(buf);
}

/// No rank can create anything in the directory: every rank gets an error
/// (none waits forever for a segment that will never come).
#[test]
fn a_failed_creator_fails_every_rank_instead_of_hanging() {
    let opts = ShmOptions {
        dir: "/nonexistent-ferry-shm-dir".into(),
        ..small()
    };
    let results = try_devices(3, opts, "nocreate", None);
    for r in &results {
        assert!(matches!(r, Err(crate::ShmError::Os { .. })), "{r:?}");
    }
}

/// One rank (not the creator) fails before barrier 1 and says so: the
/// others fail naming it, instead of hanging.
#[test]
fn a_rank_failing_before_the_first_barrier_fails_the_others() {
    fn mangle(key: &str, value: String) -> String {
        if key == "ferry-shm-1" {
            "failed".into()
        } else {
            value
        }
    }
    let results = try_devices(3, small(), "failcard", Some(mangle));
    for r in &results {
        let e = r
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(e.contains("rank 1"), "{r:?}");
    }
}

/// Another user's wake directory or segment cannot be used: a directory
/// that is open to others, or a planted one, is refused.
#[test]
fn only_private_wake_directories_and_own_files_are_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ferry-wake-test-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = crate::os::check_private_dir(&dir).unwrap_err();
    assert!(e.to_string().contains("mode 755"), "{e}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    crate::os::check_private_dir(&dir).unwrap();
    let link = dir.with_extension("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert!(crate::os::check_private_dir(&link).is_err());
    let f = dir.join("f");
    let file = std::fs::File::create(&f).unwrap();
    file.set_permissions(std::fs::Permissions::from_mode(0o666))
        .unwrap();
    assert!(crate::os::check_own_file(&file, &f).is_err());
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .unwrap();
    crate::os::check_own_file(&file, &f).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_is_send() {
    fn is_send<T: Send>() {}
    is_send::<ShmDevice>();
}

/// Prints the memory formula's figures (the crate docs quote them).
#[test]
fn memory_formula_figures() {
    let opts = ShmOptions::default();
    println!(
        "segment size, cell_size = {} B, cells_per_rank = {}, fastboxes {} x {} B up to {} ranks:",
        opts.cell_size,
        opts.cells_per_rank,
        opts.fastbox_slots,
        opts.fastbox_slot_size,
        opts.fastbox_max_ranks
    );
    let mut last = 0;
    for n in [2usize, 8, 16, 32, 33, 64, 256] {
        let bytes = ShmDevice::segment_bytes(n, &opts);
        println!(
            "{n:>4} ranks: {bytes:>11} bytes = {:>7.1} MiB ({:.2} MiB per rank)",
            bytes as f64 / 1048576.0,
            bytes as f64 / 1048576.0 / n as f64
        );
        assert!(bytes > last || n == 33, "{n}");
        last = bytes;
    }
    // Without fastboxes it is linear: 256 ranks cost 128 times 2 ranks,
    // give or take a page.
    let cells = ShmOptions {
        fastbox_slots: 0,
        ..ShmOptions::default()
    };
    let two = ShmDevice::segment_bytes(2, &cells) as f64;
    let many = ShmDevice::segment_bytes(256, &cells) as f64;
    assert!((many / two - 128.0).abs() < 1.0);
    // The fastboxes add exactly N² · K · Z (a multiple of a page here).
    for n in [2usize, 16, 32] {
        assert_eq!(
            ShmDevice::segment_bytes(n, &opts) - ShmDevice::segment_bytes(n, &cells),
            n * n * opts.fastbox_slots * opts.fastbox_slot_size
        );
    }
    assert_eq!(
        ShmDevice::segment_bytes(33, &opts),
        ShmDevice::segment_bytes(33, &cells),
        "no fastboxes above fastbox_max_ranks"
    );
}

/// The payload of the `i`-th packet of sender `s` in the order tests: sizes
/// that go by fastbox (≤ 120 bytes with the header) and by cell, mixed.
fn mixed_payload(s: usize, i: usize) -> Vec<u8> {
    let len = match (i * 7 + s) % 5 {
        0 => 200,
        1 => 0,
        2 => 100,
        3 => 119,
        _ => 8,
    };
    vec![(s * 31 + i) as u8; len]
}

/// Checks that `sink` holds `count` packets from sender `s`, in order, as
/// `mixed_payload` made them.
fn check_mixed(sink: &Recorder, s: usize, count: usize) {
    let packets = sink.packets();
    let mine: Vec<_> = packets.iter().filter(|p| p.0 == s as Rank).collect();
    assert_eq!(mine.len(), count, "sender {s}");
    for (i, (_, h, p)) in mine.iter().enumerate() {
        assert_eq!(
            h,
            &(i as u32).to_le_bytes(),
            "sender {s}: packet {i} out of order"
        );
        assert_eq!(p, &mixed_payload(s, i), "sender {s}: packet {i}");
    }
}

/// Fastbox packets and cells from one sender arrive in the order sent,
/// whatever the receiver polls first: full rings fall back to cells, cells
/// overtake nothing, and slots wait for the cells before them.
#[test]
fn fastbox_and_cells_keep_per_pair_order() {
    let mut devs = devices(3, small_fb(), "fborder");
    let mut sink = Recorder::default();
    let mut sent = [0usize; 3];
    // Rounds of sends with partial progress in between.
    for round in 0..40 {
        for (s, dev) in devs.iter_mut().enumerate() {
            for _ in 0..(round % 4 + 1) {
                let i = sent[s];
                let p = mixed_payload(s, i);
                match dev.send(1, &(i as u32).to_le_bytes(), &p).unwrap() {
                    Sent::Done => sent[s] += 1,
                    Sent::Busy => break,
                }
            }
        }
        if round % 3 != 0 {
            devs[1].progress(&mut sink).unwrap();
        }
        for s in [0, 2] {
            devs[s].progress(&mut Recorder::default()).unwrap();
        }
    }
    while devs[1].progress(&mut sink).unwrap() > 0 {}
    assert!(sink.failures().is_empty(), "{:?}", sink.failures());
    let total: usize = sent.iter().sum();
    assert_eq!(sink.packets().len(), total);
    let min = *sent.iter().min().unwrap();
    assert!(min > 20, "{sent:?}");
    for (s, &count) in sent.iter().enumerate() {
        check_mixed(&sink, s, count);
    }
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    devs[1].disarm();
}

/// The same under real concurrency: two sender threads and a receiver
/// thread, each with its own mapping, the receiver taking every payload.
#[test]
fn fastbox_and_cells_keep_order_across_threads() {
    const COUNT: usize = 20_000;
    let mut devs = devices(3, small_fb(), "fbthreads");
    let mut recv = devs.remove(1);
    let handles: Vec<_> = devs
        .into_iter()
        .zip([0usize, 2])
        .map(|(mut dev, s)| {
            std::thread::spawn(move || {
                let mut i = 0;
                while i < COUNT {
                    match dev.send(1, &(i as u32).to_le_bytes(), &mixed_payload(s, i)) {
                        Ok(Sent::Done) => i += 1,
                        Ok(Sent::Busy) => {
                            dev.progress(&mut Recorder::default()).unwrap();
                            std::thread::yield_now();
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                dev
            })
        })
        .collect();
    let mut sink = Recorder {
        take: true,
        ..Recorder::default()
    };
    let mut got = 0;
    while got < 2 * COUNT {
        got += recv.progress(&mut sink).unwrap();
        assert!(sink.failures().is_empty(), "{:?}", sink.failures());
    }
    let _devs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for s in [0usize, 2] {
        check_mixed(&sink, s, COUNT);
    }
}

/// Small packets take no cell while the ring has room; a full ring falls
/// back to cells; the receiver frees the slots.
#[test]
fn small_packets_go_by_fastbox_until_the_ring_is_full() {
    let mut devs = devices(2, small_fb(), "fbring");
    for i in 0..4u8 {
        assert_eq!(devs[0].send(1, &[i], &[i; 50]).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].free_cells(), 8, "four packets, no cell");
    assert_eq!(devs[0].send(1, &[4], &[4; 50]).unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 7, "the full ring fell back to a cell");
    assert_eq!(devs[0].send(1, &[5], &[5; 150]).unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 6, "too big for a slot");
    let mut sink = Recorder {
        take: true,
        ..Recorder::default()
    };
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 6);
    let bufs = sink.bufs();
    for (i, b) in bufs.iter().enumerate() {
        let len = if i == 5 { 150 } else { 50 };
        assert_eq!(&b[..], &vec![i as u8; len][..]);
    }
    // Fastbox payloads are copies; cell payloads are parked cells.
    let in_seg: Vec<bool> = bufs
        .iter()
        .map(|b| devs[1].segment_contains(b.id()))
        .collect();
    assert_eq!(in_seg, [false, false, false, false, true, true]);
    drop(bufs);
    // The slots were freed: four more go by fastbox.
    devs[0].refill();
    for i in 0..4u8 {
        assert_eq!(devs[0].send(1, &[i], b"again").unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].free_cells(), 8);
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 4);
}

#[test]
fn sleeping_receiver_is_woken_by_a_fastbox_send() {
    let mut devs = devices(2, small_fb(), "fbwake");
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    assert!(!readable(&devs[1], 0));
    assert_eq!(devs[0].send(1, b"wake", b"x").unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 8, "it went by fastbox");
    assert!(
        readable(&devs[1], 1000),
        "the fastbox send woke the sleeper"
    );
    devs[1].disarm();
    let mut sink = Recorder::default();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
    assert!(!readable(&devs[1], 0));
    // Awake: no signal; a full slot makes `arm` pending.
    assert_eq!(devs[0].send(1, b"quiet", b"").unwrap(), Sent::Done);
    assert!(!readable(&devs[1], 0));
    assert_eq!(devs[1].arm().unwrap(), Armed::Pending, "a slot is full");
    devs[1].disarm();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    devs[1].disarm();
}

/// Forged slots and sequence numbers: a protocol error for that peer,
/// reported once, its later packets dropped; other peers unaffected.
#[test]
fn corrupted_fastboxes_and_sequences_are_protocol_errors() {
    use std::sync::atomic::Ordering::Release;
    // (what to forge, on rank 0's ring to rank 1)
    let forge: [fn(&mut ShmDevice); 4] = [
        // A control word with reserved bits.
        |d| {
            d.seg
                .fb_ctrl(0, 1, 0)
                .unwrap()
                .store(1 << 63 | 1 << 60, Release);
        },
        // A payload longer than the slot.
        |d| {
            d.seg
                .fb_ctrl(0, 1, 0)
                .unwrap()
                .store(1 << 63 | 200 << 40, Release);
        },
        // A slot far ahead of the sequence.
        |d| {
            d.seg
                .fb_ctrl(0, 1, 0)
                .unwrap()
                .store(1 << 63 | 1000, Release);
        },
        // A cell two ahead, with no fastbox packets before it.
        |d| {
            let mut cell = d.pool.pop().unwrap();
            crate::cell::encode(d.seg.body_mut(&mut cell), 0, 2, b"h", b"p").unwrap();
            d.seg.push_recv(1, cell).unwrap();
        },
    ];
    for (k, f) in forge.iter().enumerate() {
        let mut devs = devices(3, small_fb(), "fbcorrupt");
        f(&mut devs[0]);
        assert_eq!(devs[2].send(1, b"fine", b"").unwrap(), Sent::Done);
        let mut sink = Recorder::default();
        devs[1].progress(&mut sink).unwrap();
        devs[1].progress(&mut sink).unwrap();
        let failures = sink.failures();
        assert_eq!(failures.len(), 1, "case {k}: {failures:?}");
        assert!(
            matches!(
                failures[0],
                (0, Error::Peer(PeerError::Protocol { rank: 0, .. }))
            ),
            "case {k}: {failures:?}"
        );
        let from: Vec<Rank> = sink.packets().iter().map(|p| p.0).collect();
        assert_eq!(from, vec![2], "case {k}: only rank 2's packet");
        // Rank 0's later packets are dropped, not delivered out of order.
        assert_eq!(devs[0].send(1, b"late", b"").unwrap(), Sent::Done);
        assert_eq!(devs[0].send(1, b"late", &[0; 200]).unwrap(), Sent::Done);
        devs[1].progress(&mut sink).unwrap();
        assert_eq!(sink.packets().len(), 1, "case {k}");
        assert_eq!(devs[1].arm().unwrap(), Armed::Sleep, "case {k}");
        devs[1].disarm();
    }
}

/// With fastboxes off (option or too many ranks), everything goes by cell.
#[test]
fn fastboxes_can_be_turned_off() {
    let opts = ShmOptions {
        fastbox_max_ranks: 1,
        ..small_fb()
    };
    let mut devs = devices(2, opts, "fboff");
    assert_eq!(devs[0].send(1, b"h", b"x").unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 7, "a cell");
    let mut sink = Recorder::default();
    assert_eq!(devs[1].progress(&mut sink).unwrap(), 1);
    assert_eq!(
        ShmDevice::segment_bytes(2, &small()),
        devs[0].seg.geometry().total
    );
}

/// A catch-up that consumes the whole ring leaves every slot used: the
/// next poll frees them before it looks at the next slot (which still
/// holds a consumed packet), and the ring is usable again.
#[test]
fn a_ring_used_up_by_a_catch_up_is_freed_before_the_next_look() {
    let mut devs = devices(2, small_fb(), "fbwrap");
    for i in 0..4u8 {
        assert_eq!(devs[0].send(1, &[i], &[i; 8]).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].send(1, &[4], &[4; 200]).unwrap(), Sent::Done);
    assert_eq!(devs[0].free_cells(), 7, "four slots, one cell");
    let mut sink = Recorder::default();
    // What `deliver` does for the cell (sequence 4) before the poll saw
    // the slots: deliver the four slots first.
    assert_eq!(devs[1].fb_catch_up(0, 4, &mut sink), (true, 4));
    assert_eq!(devs[1].lanes[0].rx_used, 4, "every slot used, none freed");
    // The ring is full of consumed packets: these go by cell.
    for i in 5..7u8 {
        assert_eq!(devs[0].send(1, &[i], &[i; 8]).unwrap(), Sent::Done);
    }
    assert_eq!(devs[0].free_cells(), 5);
    while devs[1].progress(&mut sink).unwrap() > 0 {}
    assert_eq!(devs[1].lanes[0].rx_used, 0);
    // The slots were freed: fastbox again.
    for i in 7..11u8 {
        assert_eq!(devs[0].send(1, &[i], &[i; 8]).unwrap(), Sent::Done);
    }
    devs[0].refill();
    assert_eq!(devs[0].free_cells(), 8, "all by fastbox, every cell back");
    while devs[1].progress(&mut sink).unwrap() > 0 {}
    let got: Vec<u8> = sink.packets().iter().map(|p| p.1[0]).collect();
    assert_eq!(got, (0..11).collect::<Vec<u8>>());
    assert!(sink.failures().is_empty());
}
