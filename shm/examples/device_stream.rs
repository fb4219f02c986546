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

use ferry_core::device::{Device, Incoming, OpToken, Sent, Sink};
use ferry_core::{Bootstrap, Error, Rank, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

/// Counts packets and copies each payload out.
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
                // The engine's eager header for a small message is 24 bytes.
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
                for round in [warm, iters] {
                    let t = Instant::now();
                    if me == 0 {
                        for _ in 0..round {
                            send(&mut dev, &mut sink);
                        }
                        let want = sink.n + 1;
                        while sink.n < want {
                            dev.progress(&mut sink).expect("progress");
                        }
                    } else {
                        let want = sink.n + round;
                        while sink.n < want {
                            dev.progress(&mut sink).expect("progress");
                        }
                        send(&mut dev, &mut sink);
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
