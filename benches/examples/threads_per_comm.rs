//! How much one world's engine lock serialises threads that share nothing
//! but the world (the measurement behind `docs/design/progress-contexts.md`).
//!
//! A singleton world (`FERRY_THREAD_LEVEL=multiple`); each of T threads
//! owns a communicator (a `dup` of `self`) and sends itself 8-byte messages
//! (`isend` + `recv`) as fast as it can. Prints the total message rate for
//! T = 1 and T = 2: with a lock per world, two threads on two cores do not
//! go faster than one.
//!
//! Run: `cargo run --release -p ferry-bench --example threads_per_comm`

use std::time::{Duration, Instant};

fn main() -> Result<(), ferry::Error> {
    let world = ferry::Config {
        thread_level: ferry::ThreadLevel::Multiple,
        ..ferry::Config::default()
    }
    .init()?;
    let comms: Vec<ferry::Comm> = (0..2)
        .map(|_| world.self_comm().dup())
        .collect::<Result<_, _>>()?;
    for threads in [1usize, 2] {
        let rates = (0..3)
            .map(|_| rate(&comms[..threads]))
            .collect::<Result<Vec<f64>, _>>()?;
        let best = rates.iter().copied().fold(0.0, f64::max);
        println!(
            "{threads} thread(s), one communicator each: {:.2} M msg/s (best of 3)",
            best / 1e6
        );
    }
    world.finalize()
}

/// Messages per second over all threads, each on its own communicator.
fn rate(comms: &[ferry::Comm]) -> Result<f64, ferry::Error> {
    let span = Duration::from_millis(500);
    let start = Instant::now();
    let counts = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .iter()
            .map(|c| {
                s.spawn(move || -> Result<u64, ferry::Error> {
                    let mut n = 0u64;
                    let mut buf = [0u8; 8];
                    while start.elapsed() < span {
                        for _ in 0..64 {
                            let r = c.isend(vec![1u8; 8], 0, 7)?;
                            c.recv(&mut buf, 0, 7)?;
                            drop(r);
                            n += 1;
                        }
                    }
                    Ok(n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect::<Result<Vec<u64>, ferry::Error>>()
    })?;
    Ok(counts.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64())
}
