//! Device-level ping-pong between two threads (no engine): the one-way
//! latency of the shm transport alone, cells or fastboxes
//! (`FERRY_SHM_FASTBOX_SLOTS=0` for cells only).
//!
//! ```text
//! taskset -c 0,1 target/release/examples/device_pingpong 8 200000
//! ```

use std::time::Instant;

use ferry_core::device::{Device, Incoming, OpToken, Sent, Sink};
use ferry_core::{Bootstrap, Error, Rank, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

/// Counts packets and copies each payload out, as a pre-posted receive.
struct Count {
    n: u64,
    buf: Vec<u8>,
}

impl Sink for Count {
    fn packet<I: Incoming>(&mut self, _from: Rank, packet: I) {
        let p = packet.payload();
        self.buf[..p.len()].copy_from_slice(p);
        self.n += 1;
    }
    fn rdma_done(&mut self, _: OpToken, _: Result<(), Error>) {}
    fn peer_failed(&mut self, peer: Rank, error: Error) {
        panic!("peer {peer} failed: {error}");
    }
}

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
                let header = [0u8; 24];
                let payload = vec![1u8; size];
                let mut sink = Count {
                    n: 0,
                    buf: vec![0; size.max(1)],
                };
                let send = |dev: &mut ShmDevice, sink: &mut Count| loop {
                    match dev.send(peer, &header, &payload).expect("send") {
                        Sent::Done => break,
                        Sent::Busy => {
                            dev.progress(sink).expect("progress");
                        }
                    }
                };
                let warm = iters / 10;
                let mut t = Instant::now();
                for i in 0..warm + iters {
                    if i == warm {
                        t = Instant::now();
                    }
                    if me == 0 {
                        send(&mut dev, &mut sink);
                    }
                    let want = sink.n + 1;
                    while sink.n < want {
                        dev.progress(&mut sink).expect("progress");
                    }
                    if me == 1 {
                        send(&mut dev, &mut sink);
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
