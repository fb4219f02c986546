//! Device-level message rate between two threads pinned to cores 0 and 1
//! (no engine, no matching, no request): rank 0 sends packets back to back,
//! rank 1 copies each payload out, as a pre-posted receive would, and
//! answers the last one. The same loop as UCX's transport-level
//! `ucx_perftest -t am_bw -d memory -x sysv`, so the two transports can be
//! compared without the layers above them.
//!
//! ```text
//! target/release/examples/device_stream 8 5000000
//! ```

use std::time::Instant;

use ferry_core::{Bootstrap, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

mod common;
use common::{send, Count};

fn pin(cpu: usize) {
    let mut cpus = rustix::thread::CpuSet::new();
    cpus.set(cpu);
    if rustix::thread::sched_setaffinity(None, &cpus).is_err() {
        eprintln!("device_stream: could not pin to CPU {cpu}; running unpinned");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(8, |a| a.parse().expect("size"));
    let iters: u64 = args
        .next()
        .map_or(5_000_000, |a| a.parse().expect("messages"));
    let opts = ShmOptions::from_env().expect("FERRY_SHM_* options");
    let job = format!("devstream{}", std::process::id());
    let handles: Vec<_> = ThreadBoot::group(2, &job)
        .into_iter()
        .map(|mut boot| {
            let opts = opts.clone();
            std::thread::spawn(move || {
                let me = boot.rank();
                pin(me as usize);
                let mut dev = ShmDevice::new(&mut boot, &[0, 1], opts).expect("setup");
                boot.barrier().expect("barrier");
                let peer = 1 - me;
                let payload = vec![1u8; size];
                let mut sink = Count::new(size);
                let warm = iters / 10;
                for round in [warm, iters] {
                    let t = Instant::now();
                    if me == 0 {
                        for _ in 0..round {
                            send(&mut dev, &mut sink, peer, &payload);
                        }
                        sink.wait_for(&mut dev, sink.n + 1);
                    } else {
                        sink.wait_for(&mut dev, sink.n + round);
                        send(&mut dev, &mut sink, peer, &payload);
                    }
                    if me == 0 && round == iters {
                        let secs = t.elapsed().as_secs_f64();
                        println!(
                            "{size} B: {:.2} M msg/s, {:.1} ns a message (device only, {iters} messages)",
                            iters as f64 / secs / 1e6,
                            secs * 1e9 / iters as f64
                        );
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("rank thread");
    }
}
