//! The progress thread (`FERRY_ASYNC_PROGRESS`) in singleton worlds: it
//! starts with the world, leaves no thread or fd behind after finalize or
//! the last drop, costs next to no CPU when idle, and lets passive waiters
//! sleep and wake as before. (Overlap itself needs a peer: the `overlap`
//! conformance body.)
//!
//! The lifecycle checks run in one `#[test]`: they count this process's
//! threads and fds, which tests running side by side would disturb.
// Shm singletons throughout: `cargo test -p ferry --no-default-features`
// builds this file without the device.
#![cfg(feature = "shm")]

use std::thread;
use std::time::{Duration, Instant};

use ferry::{Comm, Config, DeviceChoice, WaitMode, World};

fn config(device: DeviceChoice) -> Config {
    let mut c = Config::from_env().expect("FERRY_* variables");
    c.device = device;
    c.async_progress = true;
    c
}

/// The `ferry-progress` threads of this process, as `/proc` task dirs.
fn progress_threads() -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .map(|t| t.path())
        .filter(|t| {
            std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim_end() == "ferry-progress")
        })
        .collect()
}

/// The progress threads, once there are `n` (a new thread names itself
/// only once it runs).
fn progress_threads_when(n: usize) -> Vec<std::path::PathBuf> {
    let start = Instant::now();
    loop {
        let threads = progress_threads();
        if threads.len() == n || start.elapsed() > Duration::from_secs(5) {
            return threads;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// CPU time of a thread (`schedstat`: nanoseconds on the CPU).
fn thread_cpu(task: &std::path::Path) -> Duration {
    let s = std::fs::read_to_string(task.join("schedstat")).expect("schedstat");
    let ns = s.split_whitespace().next().and_then(|v| v.parse().ok());
    Duration::from_nanos(ns.expect("schedstat's first field"))
}

/// A message to itself, through the nonblocking calls and a wait.
fn self_exchange(comm: &Comm, len: usize) {
    let recv = comm.irecv(vec![0u8; len], 0, 5).expect("irecv");
    let send = comm.isend(vec![7u8; len], 0, 5).expect("isend");
    let done = ferry::wait_all(&mut [recv, send]).expect("wait_all");
    assert!(done[0].bytes().iter().all(|&b| b == 7));
}

/// A thread waits passively for a message the main thread sends 100 ms
/// later: it must sleep (not poll) and wake through an fd, never the
/// safety-net timeout, with the progress thread also sleeping on the
/// device.
fn passive_waiter_wakes(world: &World) {
    let comm = world.world();
    let before = world.counters();
    let waiter = {
        let comm = comm.clone();
        thread::spawn(move || {
            let mut buf = [0u64];
            comm.recv(&mut buf, 0, 9).expect("recv");
            buf[0]
        })
    };
    thread::sleep(Duration::from_millis(100));
    comm.send(&[42u64], 0, 9).expect("send");
    assert_eq!(waiter.join().expect("waiter"), 42);
    let after = world.counters();
    assert!(after.sleeps > before.sleeps, "the waiter never slept");
    assert_eq!(after.wake_timeouts, before.wake_timeouts);
}

#[test]
fn progress_thread_lifecycle() {
    assert!(progress_threads().is_empty());
    // Idle: the thread sleeps on the shm device's fd.
    let mut c = config(DeviceChoice::Shm);
    c.wait_mode = WaitMode::Passive;
    let world = c.init().expect("shm singleton");
    self_exchange(&world.world(), 1 << 20);
    passive_waiter_wakes(&world);
    let threads = progress_threads_when(1);
    assert_eq!(threads.len(), 1, "one progress thread per world");
    let (cpu0, t0) = (thread_cpu(&threads[0]), Instant::now());
    thread::sleep(Duration::from_secs(2));
    let share = (thread_cpu(&threads[0]) - cpu0).as_secs_f64() / t0.elapsed().as_secs_f64();
    eprintln!("idle progress thread: {:.3}% of a core", share * 100.0);
    assert!(
        share < 0.02,
        "idle progress thread used {:.1}%",
        share * 100.0
    );
    world.finalize().expect("finalize");
    assert!(progress_threads().is_empty(), "finalize left the thread");

    // Repeated worlds, ended by finalize or by dropping the last handle
    // (here a communicator, not the world): no thread or fd accumulates.
    let mut fds = None;
    for i in 0..6 {
        let device = if i % 2 == 0 {
            DeviceChoice::Loopback
        } else {
            DeviceChoice::Shm
        };
        let world = config(device).init().expect("singleton");
        assert_eq!(progress_threads_when(1).len(), 1);
        let comm = world.world();
        self_exchange(&comm, 100_000);
        if i % 3 == 2 {
            drop(world);
            self_exchange(&comm, 10);
            drop(comm);
        } else {
            drop(comm);
            world.finalize().expect("finalize");
        }
        assert!(progress_threads().is_empty(), "round {i} left the thread");
        let now = open_fds();
        if i >= 2 {
            assert_eq!(Some(now), fds, "round {i} leaked fds");
        }
        fds = Some(now);
    }
}

/// `FERRY_ASYNC_PROGRESS` is a flag like the others, off by default.
#[test]
fn the_variable_is_a_flag() {
    let parse = |v: &str| Config::from_lookup(|k| (k == "FERRY_ASYNC_PROGRESS").then(|| v.into()));
    assert!(!Config::default().async_progress);
    assert!(parse("1").expect("1").async_progress);
    assert!(parse("on").expect("on").async_progress);
    assert!(!parse("0").expect("0").async_progress);
    assert!(!parse("").expect("empty: unset").async_progress);
    let err = parse("sometimes").expect_err("not a flag");
    assert!(err.to_string().contains("FERRY_ASYNC_PROGRESS"), "{err}");
}
