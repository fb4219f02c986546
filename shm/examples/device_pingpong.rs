//! Device-level ping-pong between two threads (no engine): the one-way
//! latency of the shm transport alone, cells or fastboxes
//! (`FERRY_SHM_FASTBOX_SLOTS=0` for cells only).
//!
//! ```text
//! taskset -c 0,1 target/release/examples/device_pingpong 8 200000
//! ```

use std::time::Instant;

mod common;
use common::send;

fn main() {
    let (size, iters) = common::args(100_000);
    common::pair("devpp", size, false, move |me, peer, dev, sink| {
        let payload = vec![1u8; size];
        let warm = iters / 10;
        let mut t = Instant::now();
        for i in 0..warm + iters {
            if i == warm {
                t = Instant::now();
            }
            if me == 0 {
                send(dev, sink, peer, &payload);
            }
            sink.wait_for(dev, sink.n + 1);
            if me == 1 {
                send(dev, sink, peer, &payload);
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / iters as f64 / 2.0;
        if me == 0 {
            println!("{size} B one-way: {ns:.1} ns (device only, {iters} round trips)");
        }
    });
}
