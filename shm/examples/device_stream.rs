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

mod common;
use common::send;

fn main() {
    let (size, iters) = common::args(5_000_000);
    common::pair("devstream", size, true, move |me, peer, dev, sink| {
        let payload = vec![1u8; size];
        let warm = iters / 10;
        for round in [warm, iters] {
            let t = Instant::now();
            if me == 0 {
                for _ in 0..round {
                    send(dev, sink, peer, &payload);
                }
                sink.wait_for(dev, sink.n + 1);
            } else {
                sink.wait_for(dev, sink.n + round);
                send(dev, sink, peer, &payload);
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
    });
}
