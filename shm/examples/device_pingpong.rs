//! Device-level ping-pong between two threads (no engine): the one-way
//! latency of the shm transport alone, cells or fastboxes
//! (`FERRY_SHM_FASTBOX_SLOTS=0` for cells only).
//!
//! ```text
//! taskset -c 0,1 target/release/examples/device_pingpong 8 200000
//! ```

use std::time::Instant;

use ferry_core::{Bootstrap, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

mod common;
use common::{send, Count};

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(8, |a| a.parse().expect("size"));
    let iters: u64 = args
        .next()
        .map_or(100_000, |a| a.parse().expect("iterations"));
    let opts = ShmOptions::from_env().expect("FERRY_SHM_* options");
    let job = format!("devpp{}", std::process::id());
    let handles: Vec<_> = ThreadBoot::group(2, &job)
        .into_iter()
        .map(|mut boot| {
            let opts = opts.clone();
            std::thread::spawn(move || {
                let me = boot.rank();
                let mut dev = ShmDevice::new(&mut boot, &[0, 1], opts).expect("setup");
                boot.barrier().expect("barrier");
                let peer = 1 - me;
                let payload = vec![1u8; size];
                let mut sink = Count::new(size);
                let warm = iters / 10;
                let mut t = Instant::now();
                for i in 0..warm + iters {
                    if i == warm {
                        t = Instant::now();
                    }
                    if me == 0 {
                        send(&mut dev, &mut sink, peer, &payload);
                    }
                    sink.wait_for(&mut dev, sink.n + 1);
                    if me == 1 {
                        send(&mut dev, &mut sink, peer, &payload);
                    }
                }
                let ns = t.elapsed().as_nanos() as f64 / iters as f64 / 2.0;
                if me == 0 {
                    println!("{size} B one-way: {ns:.1} ns (device only, {iters} round trips)");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("rank thread");
    }
}
