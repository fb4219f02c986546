//! Thread levels (`FERRY_THREAD_LEVEL`, `MPI_Init_thread`): below
//! `Multiple` the engine has no lock, and a call that breaks the level's
//! promise is refused with a typed error, never a data race.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferry::{ApiError, Config, DeviceChoice, Error, ThreadLevel, World};

fn world(device: DeviceChoice, level: ThreadLevel) -> World {
    Config {
        device,
        thread_level: level,
        ..Config::default()
    }
    .init()
    .expect("init")
}

/// The devices a singleton can use in this build: the loopback, and shm
/// when it is compiled in (CI also tests without default features).
fn devices() -> Vec<DeviceChoice> {
    let mut d = vec![DeviceChoice::Loopback];
    if cfg!(feature = "shm") {
        d.push(DeviceChoice::Shm);
    }
    d
}

fn is_thread_level_error(e: &Error) -> bool {
    matches!(e, Error::Api(ApiError::ThreadLevel { .. }))
}

/// A message to self and back, checked.
fn round_trip(w: &World, tag: i32) -> ferry::Result<()> {
    let comm = w.world();
    let r = comm.irecv(vec![0u8; 4], 0, tag)?;
    comm.send(&[1u8, 2, 3, 4], 0, tag)?;
    let mut r = r;
    let got: Vec<u8> = r.wait()?.into_vec()?;
    assert_eq!(got, [1, 2, 3, 4]);
    Ok(())
}

#[test]
fn the_level_is_read_from_the_environment_and_reported() {
    for (value, level) in [
        ("single", ThreadLevel::Single),
        ("funneled", ThreadLevel::Funneled),
        ("serialized", ThreadLevel::Serialized),
        ("multiple", ThreadLevel::Multiple),
    ] {
        let c = Config::from_lookup(|v| (v == "FERRY_THREAD_LEVEL").then(|| value.into())).unwrap();
        assert_eq!(c.thread_level, level);
    }
    let bad = Config::from_lookup(|v| (v == "FERRY_THREAD_LEVEL").then(|| "many".into()));
    assert!(bad.unwrap_err().to_string().contains("FERRY_THREAD_LEVEL"));
    assert_eq!(Config::default().thread_level, ThreadLevel::Multiple);
    for level in [
        ThreadLevel::Single,
        ThreadLevel::Serialized,
        ThreadLevel::Multiple,
    ] {
        let w = world(DeviceChoice::Loopback, level);
        assert_eq!(w.thread_level(), level);
        assert!(w.is_thread_main());
        round_trip(&w, 1).unwrap();
        w.finalize().unwrap();
    }
}

#[test]
fn the_progress_thread_needs_multiple() {
    let err = Config {
        thread_level: ThreadLevel::Funneled,
        async_progress: true,
        ..Config::default()
    }
    .init()
    .unwrap_err();
    assert!(err.to_string().contains("FERRY_ASYNC_PROGRESS"), "{err}");
}

#[test]
fn funneled_refuses_other_threads_and_keeps_working() {
    for device in devices() {
        let w = world(device, ThreadLevel::Funneled);
        round_trip(&w, 1).unwrap();
        let comm = w.world();
        // A request started by the owner, dropped on another thread: leaked
        // (with its buffer), never freed through a race.
        let pending = comm.irecv(vec![0u8; 4], 0, 99).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(!w.is_thread_main());
                let err = comm.send(&[1u8], 0, 2).unwrap_err();
                assert!(is_thread_level_error(&err), "{err:?}");
                assert!(err.to_string().contains("thread level funneled"), "{err}");
                let err = comm.iprobe(0, 2).unwrap_err();
                assert!(is_thread_level_error(&err), "{err:?}");
                drop(pending);
            });
        });
        // The refused calls did nothing: nothing was sent on tag 2.
        assert!(comm.iprobe(0, 2).unwrap().is_none());
        round_trip(&w, 3).unwrap();
        w.finalize().unwrap();
    }
}

#[test]
fn serialized_lets_threads_take_turns_and_refuses_overlap() {
    let device = *devices().last().expect("the loopback at least");
    let w = world(device, ThreadLevel::Serialized);
    // Turns, handed over through a mutex: every call succeeds.
    let turn = std::sync::Mutex::new(());
    std::thread::scope(|s| {
        for t in 0..2 {
            let (w, turn) = (&w, &turn);
            s.spawn(move || {
                for i in 0..200 {
                    let _mine = turn.lock().unwrap();
                    round_trip(w, 10 + t * 1000 + i).unwrap();
                }
            });
        }
    });
    // Overlapping calls: some are refused, none corrupts anything. Each
    // thread's own traffic stays intact (checked in `round_trip`); a
    // refusal can come at any call, so a half-done round trip is cleaned
    // up by receiving what it sent.
    let refused = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(10);
    std::thread::scope(|s| {
        for t in 0..2 {
            let (w, refused, stop) = (&w, &refused, &stop);
            s.spawn(move || {
                let comm = w.world();
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    match comm.iprobe(0, 5000 + t) {
                        Ok(_) => {}
                        Err(e) => {
                            assert!(is_thread_level_error(&e), "{e:?}");
                            if refused.fetch_add(1, Ordering::Relaxed) >= 100 {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        }
    });
    assert!(
        refused.load(Ordering::Relaxed) > 0,
        "two threads probing at once for 10 s were never refused"
    );
    round_trip(&w, 7).unwrap();
    w.finalize().unwrap();
}
