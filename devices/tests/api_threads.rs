//! Many threads per rank (MPI_THREAD_MULTIPLE) and passive waiting, in a
//! singleton job: over the loopback device, and over the shm device (a
//! job of one still has a real wait fd).
//!
//! The wake-up tests check *how* sleepers woke: by a kick or the device fd,
//! never by the safety-net timeout.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use ferry::{Comm, Config, DeviceChoice, Outcome, WaitMode, World};

fn world(device: DeviceChoice, mode: WaitMode, spin_us: u64) -> World {
    Config {
        device,
        wait_mode: mode,
        spin: Duration::from_micros(spin_us),
        ..Config::default()
    }
    .init()
    .expect("init")
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    assert_send_sync::<World>();
    assert_send_sync::<Comm>();
    assert_send_sync::<ferry::Request>();
    fn assert_send<T: Send>() {}
    assert_send::<ferry::Completion>();
    assert_send_sync::<ferry::Message>();
    assert_send_sync::<ferry::Canceller>();
}

/// Four threads; thread `t` receives what thread `(t + 1) % 4` sends, with
/// a mix of eager and rendezvous sizes, through every completion style.
fn four_threads(w: &World, rounds: usize) {
    let comm = w.world();
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let comm = comm.clone();
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                let from_tag = t; // I receive on my tag...
                let to_tag = (t + 3) % 4; // ...and send on my left neighbour's
                for i in 0..rounds {
                    let len = if i % 16 == 0 { 20_000 } else { 1 + i % 64 };
                    let recv = comm.irecv(vec![0u32; len], 0, from_tag).unwrap();
                    let data: Vec<u32> = (0..len as u32).map(|x| x ^ i as u32).collect();
                    let send = comm.isend(data, 0, to_tag).unwrap();
                    let got: Vec<u32> = match i % 3 {
                        0 => {
                            let mut reqs = [recv, send];
                            let mut done = ferry::wait_all(&mut reqs).unwrap().into_iter();
                            done.next().unwrap().into_vec().unwrap()
                        }
                        1 => {
                            let mut recv = recv;
                            let got = recv.wait().unwrap().into_vec().unwrap();
                            let mut send = send;
                            send.wait().unwrap();
                            got
                        }
                        _ => {
                            let mut reqs = [send, recv];
                            let mut got = None;
                            while let Outcome::Completed((i, c)) =
                                ferry::wait_any(&mut reqs).unwrap()
                            {
                                if i == 1 {
                                    got = Some(c.into_vec().unwrap());
                                }
                            }
                            got.unwrap()
                        }
                    };
                    // What my right neighbour sent in its round i.
                    assert_eq!(got.len(), len);
                    assert!(got
                        .iter()
                        .enumerate()
                        .all(|(k, &x)| x == k as u32 ^ i as u32));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let c = w.counters();
    eprintln!("{c}");
    assert_eq!(
        c.wake_timeouts, 0,
        "no wake-up may come from the timeout: {c}"
    );
}

#[test]
fn four_threads_loopback_passive() {
    let w = world(DeviceChoice::Loopback, WaitMode::Passive, 0);
    four_threads(&w, 600);
    let c = w.counters();
    assert!(c.sleeps > 0, "passive waiters sleep: {c}");
}

#[test]
fn four_threads_loopback_hybrid() {
    four_threads(&world(DeviceChoice::Loopback, WaitMode::Hybrid, 20), 600);
}

#[test]
fn four_threads_loopback_spin() {
    let w = world(DeviceChoice::Loopback, WaitMode::Spin, 0);
    four_threads(&w, 300);
    assert_eq!(w.counters().sleeps, 0, "spin mode never sleeps");
}

#[cfg(feature = "shm")]
#[test]
fn four_threads_shm_singleton_passive() {
    let w = world(DeviceChoice::Shm, WaitMode::Passive, 0);
    assert_eq!(w.device_name(), "shm");
    four_threads(&w, 600);
}

/// One thread sleeps in a blocking receive; another sends. The sleeper is
/// woken by a kick (the loopback has no fd) within a bounded time, not by
/// the timeout.
#[test]
fn a_sleeper_is_woken_by_another_threads_send() {
    let mut devices = vec![DeviceChoice::Loopback];
    if cfg!(feature = "shm") {
        devices.push(DeviceChoice::Shm);
    }
    for device in devices {
        let w = world(device, WaitMode::Passive, 0);
        let comm = w.world();
        let receiver = {
            let comm = comm.clone();
            thread::spawn(move || {
                let mut buf = [0u8; 4];
                comm.recv(&mut buf, 0, 99).unwrap();
                (buf, Instant::now())
            })
        };
        // Let it fall asleep.
        while w.counters().sleeps == 0 {
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(20));
        let sent = Instant::now();
        comm.send(&[1u8, 2, 3, 4], 0, 99).unwrap();
        let (buf, woke) = receiver.join().unwrap();
        assert_eq!(buf, [1, 2, 3, 4]);
        let latency = woke.duration_since(sent);
        let c = w.counters();
        assert!(
            latency < Duration::from_millis(200),
            "{device:?}: woke after {latency:?}"
        );
        assert!(c.wakeups_kick + c.wakeups_device >= 1, "{device:?}: {c}");
        assert_eq!(c.wake_timeouts, 0, "{device:?}: {c}");
    }
}

/// `cancel` from another thread wakes a thread sleeping on the request.
#[test]
fn cancel_wakes_the_waiter() {
    let w = world(DeviceChoice::Loopback, WaitMode::Passive, 0);
    let comm = w.world();
    let req = comm.irecv(vec![0u8; 8], 0, 5).unwrap();
    let canceller = req.canceller();
    let waiter = thread::spawn(move || {
        let mut req = req;
        req.wait().unwrap()
    });
    while w.counters().sleeps == 0 {
        thread::sleep(Duration::from_millis(1));
    }
    canceller.cancel().unwrap();
    let done = waiter.join().unwrap();
    assert!(done.status.cancelled);
    assert_eq!(
        done.into_vec::<u8>().unwrap(),
        [0; 8],
        "the buffer comes back"
    );
    assert_eq!(w.counters().wake_timeouts, 0);
    canceller.cancel().unwrap(); // completed and freed: a no-op
}

/// A thread that only tests (disarming the device each time) while another
/// sleeps must not strand the sleeper: the release rule re-arms or kicks.
#[cfg(feature = "shm")]
#[test]
fn a_busy_tester_does_not_strand_a_sleeper() {
    let w = world(DeviceChoice::Shm, WaitMode::Passive, 0);
    let comm = w.world();
    let sleeper = {
        let comm = comm.clone();
        thread::spawn(move || comm.arecv::<u8>(0, 1).unwrap().0)
    };
    while w.counters().sleeps == 0 {
        thread::sleep(Duration::from_millis(1));
    }
    let mut probe = comm.irecv(vec![0u8; 1], 0, 2).unwrap();
    for _ in 0..1000 {
        assert!(probe.test().unwrap().is_none());
    }
    comm.send(&[42u8], 0, 1).unwrap();
    assert_eq!(sleeper.join().unwrap(), [42]);
    probe.cancel().unwrap();
    assert!(probe.wait().unwrap().status.cancelled);
    let c = w.counters();
    assert_eq!(c.wake_timeouts, 0, "{c}");
    assert!(
        c.rearms > 0,
        "the tester re-armed the device for the sleeper: {c}"
    );
}
