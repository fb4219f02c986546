//! Device tests inside one process over real libfabric providers: each
//! "rank" is an endpoint set up on its own thread (setup is collective),
//! then driven from the test thread. The device contract is checked by
//! ferry-core's test kit (`contract`); the bodies here are ofi's own (bounce
//! buffer parking, synchronous RMA checks, in-flight regions, providers),
//! each run on `tcp;ofi_rxm` and on `shm` (the `on_both!` modules).
//! Engine-level tests run one engine per thread.

mod contract;
mod rdma;

use std::time::{Duration, Instant};

use ferry_core::device::{Access, Device, OpToken, RdmaDir, Sent};
use ferry_core::recorder::{Event, Recorder};
use ferry_core::testkit::on_threads;
use ferry_core::{Buf, Error, PeerError, Rank, UsageError};

use crate::{OfiDevice, OfiError, OfiOptions};

const LIMIT: Duration = Duration::from_secs(20);

fn job(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "ofi{}x{}x{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn opts(provider: &str) -> OfiOptions {
    OfiOptions::with_provider(provider)
}

fn try_devices(n: u32, o: OfiOptions, tag: &str) -> Vec<Result<OfiDevice, OfiError>> {
    let ranks: Vec<Rank> = (0..n as Rank).collect();
    on_threads(n, &job(tag), None, move |_, boot| {
        OfiDevice::new(boot, &ranks, o.clone())
    })
}

fn devices(n: u32, o: OfiOptions, tag: &str) -> Vec<OfiDevice> {
    try_devices(n, o, tag)
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("setup: {e}")))
        .collect()
}

/// Progresses every device (senders need it too: manual progress) until
/// `done` holds for the recorders, or panics after [`LIMIT`].
fn drive(devs: &mut [OfiDevice], sinks: &mut [Recorder], done: impl Fn(&[Recorder]) -> bool) {
    let start = Instant::now();
    while !done(sinks) {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        if start.elapsed() > LIMIT {
            let counts: Vec<_> = sinks
                .iter()
                .map(|s| (s.packets().len(), s.rdma(), s.failures()))
                .collect();
            let state: Vec<_> = devs
                .iter()
                .map(|d| {
                    (
                        d.recvs.counts(),
                        d.peers.seq_in_all().to_vec(),
                        d.cq.stashed(),
                    )
                })
                .collect();
            panic!("timed out; (packets, rdma, failures) per rank: {counts:?}; ((held, empty, free, allocated, parked), seq_in, stash): {state:?}");
        }
    }
}

fn recorders(n: usize, take: bool) -> Vec<Recorder> {
    (0..n)
        .map(|_| Recorder {
            take,
            ..Recorder::default()
        })
        .collect()
}

/// Sends, progressing every device while the sender is busy.
fn send_retry(
    devs: &mut [OfiDevice],
    sinks: &mut [Recorder],
    from: usize,
    to: Rank,
    h: &[u8],
    p: &[u8],
) {
    let start = Instant::now();
    while devs[from].send(to, h, p).unwrap() == Sent::Busy {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < LIMIT, "send stayed busy");
    }
}

/// Starts a get or put, progressing while busy.
#[allow(clippy::too_many_arguments)]
fn rma_retry(
    devs: &mut [OfiDevice],
    sinks: &mut [Recorder],
    from: usize,
    dir: RdmaDir,
    peer: Rank,
    key: ferry_core::wire::RemoteKey,
    local: ferry_core::device::MemHandle,
    len: usize,
    token: OpToken,
) -> Result<(), Error> {
    let start = Instant::now();
    loop {
        let r = match dir {
            RdmaDir::Put => devs[from].put(peer, local, key, len, token)?,
            RdmaDir::Get => devs[from].get(peer, key, local, len, token)?,
        };
        if r == Sent::Done {
            return Ok(());
        }
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).unwrap();
        }
        assert!(start.elapsed() < LIMIT, "rma stayed busy");
    }
}

/// Whether `fd` becomes readable within `ms` milliseconds.
fn readable(fd: i32, ms: i32) -> bool {
    crate::ffi::poll_readable(fd, ms).expect("poll")
}

/// At most `max_parked` bounce buffers are handed over; the rest are
/// copies, and dropping the handed-over ones gives them back.
fn into_payload_parks_at_most_max_parked_bounce_buffers(provider: &str) {
    let o = OfiOptions {
        max_parked: 4,
        ..opts(provider)
    };
    let mut devs = devices(2, o, "park");
    let mut sinks = recorders(2, true);
    for i in 0..6u8 {
        send_retry(&mut devs, &mut sinks, 0, 1, &[i], &[i; 100]);
    }
    drive(&mut devs, &mut sinks, |s| s[1].packets().len() == 6);
    let handed: Vec<bool> = sinks[1]
        .events
        .iter()
        .map(|e| match e {
            Event::Packet {
                payload_addr,
                buf_id,
                ..
            } => payload_addr == buf_id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        handed,
        [true, true, true, true, false, false],
        "4 handed over, then copies"
    );
    assert_eq!(devs[1].parked_buffers(), 4);
    let bufs = sinks[1].bufs();
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(&b[..], &[i as u8; 100][..]);
    }
    drop(bufs);
    assert_eq!(devs[1].parked_buffers(), 0, "dropping returned them");
}

/// Moving the bytes is checked by the kit; ofi's own: local checks are
/// synchronous errors, and a region given up while a read into it is in
/// flight stays with the device until the read ends.
fn rma_local_checks_and_in_flight_regions(provider: &str) {
    let mut devs = devices(2, opts(provider), "rma");
    let mut sinks = recorders(2, false);
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7) as u8).collect();
    let (src, key) = devs[0]
        .register(1, Buf::from(data.clone()), Access::RemoteRead)
        .unwrap();
    // Local checks are synchronous errors.
    let (small, _) = devs[1]
        .register(0, Buf::zeroed(16).unwrap(), Access::LocalWrite)
        .unwrap();
    assert!(matches!(
        devs[1].get(0, key, small, 17, OpToken(3)),
        Err(Error::Usage(UsageError::LengthMismatch(_)))
    ));
    assert!(devs[1].deregister(small).is_some());
    assert!(devs[1].deregister(small).is_none(), "stale handle");
    assert!(matches!(
        devs[1].get(0, key, small, 1, OpToken(4)),
        Err(Error::Usage(UsageError::StaleHandle))
    ));
    // A region given up while a read into it is in flight stays with the
    // device (the provider may still write it) until the read ends.
    let (late, _) = devs[1]
        .register(0, Buf::zeroed(data.len()).unwrap(), Access::LocalWrite)
        .unwrap();
    let before = devs[1].registrations();
    assert!(!devs[1].driving(), "nothing in flight yet");
    if provider == "tcp;ofi_rxm" {
        assert!(devs[1].manual_progress, "tcp moves data only in our calls");
    }
    rma_retry(
        &mut devs,
        &mut sinks,
        1,
        RdmaDir::Get,
        0,
        key,
        late,
        data.len(),
        OpToken(40),
    )
    .unwrap();
    assert!(devs[1].deregister(late).is_none(), "kept while in flight");
    // Under manual progress the read moves only while rank 1 progresses:
    // a hybrid waiter must keep polling rather than sleep.
    assert_eq!(devs[1].driving(), devs[1].manual_progress);
    drive(&mut devs, &mut sinks, |s| !s[1].rdma().is_empty());
    assert!(!devs[1].driving(), "the read is over");
    assert_eq!(
        devs[1].registrations(),
        before - 1,
        "released at completion"
    );
    assert_eq!(devs[0].deregister(src).unwrap().len(), data.len());
    assert_eq!(devs[0].registrations() + devs[1].registrations(), 0);
}

/// Prints what one register + deregister costs (the crate docs quote it).
fn registration_cost(provider: &str) {
    let mut devs = devices(1, opts(provider), "regcost");
    for size in [4096usize, 1 << 20, 16 << 20] {
        let mut buf = Some(Buf::zeroed(size).unwrap());
        let n = 200;
        let start = Instant::now();
        for _ in 0..n {
            let (h, _) = devs[0]
                .register(0, buf.take().unwrap(), Access::RemoteRead)
                .unwrap();
            buf = devs[0].deregister(h);
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(n);
        println!("{provider}: register + deregister of {size} B: {us:.2} us");
    }
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod tcp {
            $(#[test] fn $name() { super::$name("tcp;ofi_rxm") })*
        }
        mod shm {
            $(#[test] fn $name() { super::$name("shm") })*
        }
    };
}

mod tcp_more {
    #[test]
    fn read_only_memory_is_a_source() {
        super::rdma::read_only_memory_is_a_source("tcp;ofi_rxm");
    }

    #[test]
    fn a_segmented_buffer_is_refused() {
        super::rdma::a_segmented_buffer_is_refused("tcp;ofi_rxm");
    }
}

on_both!(
    into_payload_parks_at_most_max_parked_bounce_buffers,
    rma_local_checks_and_in_flight_regions,
    registration_cost,
);

#[test]
fn a_bad_provider_name_lists_what_fi_getinfo_offers() {
    let results = try_devices(2, opts("no-such-provider"), "badprov");
    for r in results {
        let e = r.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, OfiError::NoProvider { .. }), "{text}");
        assert!(text.contains("\"no-such-provider\""), "{text}");
        assert!(
            text.contains("tcp;ofi_rxm") && text.contains("shm"),
            "{text}"
        );
    }
}

#[test]
fn providers_lists_tcp_and_shm() {
    let list = crate::providers().unwrap();
    for p in &list {
        println!("{}", p.summary);
    }
    assert!(list
        .iter()
        .any(|p| p.provider == "tcp;ofi_rxm" && p.summary.contains("rma=yes")));
    assert!(list
        .iter()
        .any(|p| p.provider == "shm" && p.wait_fd.is_some()));
}

#[test]
fn device_is_send() {
    fn is_send<T: Send>() {}
    is_send::<OfiDevice>();
}

mod engine;

/// As in a job spanning nodes (shm on the node, ofi beyond): each device
/// reaches only the other rank, not itself. Traffic flows, self-sends are
/// refused, and a death is still noticed (the liveness sockets exist
/// whenever there is another peer).
#[test]
fn a_device_without_self_in_its_peers() {
    let mut devs: Vec<OfiDevice> = on_threads(2, &job("noself"), None, |r, boot| {
        OfiDevice::new(boot, &[1 - r], opts("tcp;ofi_rxm")).unwrap()
    });
    // Nobody else connected to the liveness listeners.
    assert_eq!(devs[0].watch.refused() + devs[1].watch.refused(), 0);
    let mut sinks = recorders(2, false);
    send_retry(&mut devs, &mut sinks, 0, 1, b"over the network", &[7; 3000]);
    drive(&mut devs, &mut sinks, |s| s[1].packets().len() == 1);
    assert!(matches!(
        devs[0].send(0, b"", b""),
        Err(Error::Device(ferry_core::DeviceError::Unsupported(_)))
    ));
    drop(devs.pop());
    sinks.pop();
    let start = Instant::now();
    while sinks[0].failures().is_empty() {
        devs[0].progress(&mut sinks[0]).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "death not noticed"
        );
    }
    assert_eq!(
        sinks[0].failures(),
        vec![(1, Error::Peer(PeerError::Died { rank: 1 }))]
    );
}

#[test]
fn stale_shm_regions_of_dead_processes_do_not_block_setup() {
    // The files a killed process with this pid would have left under the
    // shm provider's default names (`<pid>:<n>:<n>`): setup must not trip
    // over them (it names its regions itself).
    let pid = std::process::id();
    let decoys: Vec<String> = (0..4)
        .flat_map(|a| (0..2).map(move |b| format!("/dev/shm/{pid}:{a}:{b}")))
        .collect();
    let created: Vec<&String> = decoys
        .iter()
        .filter(|p| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .is_ok()
        })
        .collect();
    let devs = try_devices(2, opts("shm"), "stale");
    for p in &created {
        let _ = std::fs::remove_file(p);
    }
    for d in devs {
        assert!(d.is_ok(), "setup failed next to stale regions: {d:?}");
    }
}
