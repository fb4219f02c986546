//! What setting up the verbs device costs per rank, lazily and with every
//! peer connected (what connecting at init would cost): `ci/verbs-init.sh`
//! runs it in the Soft-RoCE VM.
//!
//! `init_cost <ranks>...`: for each job size, `ranks` devices are set up
//! at once, one thread per rank (`ThreadBoot`: the bootstrap is an
//! in-process map, so the figures are the device's own cost, not a
//! launcher's), then
//! 1. `lazy`: after `VerbsDevice::new` (init wall time: the slowest rank's,
//!    and the mean), each rank's footprint;
//! 2. `k=1`: rank 0 sends one message to rank 1 (one connection each);
//! 3. `all`: every pair connected (the eager equivalent), and the time
//!    that took.
//!
//! Memory: registered bytes, QPs and CQ entries per rank from
//! [`VerbsDevice::footprint`], and the process's RSS growth divided by the
//! ranks (the threads share one process).

use std::time::{Duration, Instant};

use ferry_core::device::{Device, Sent};
use ferry_core::recorder::Recorder;
use ferry_core::{Rank, ThreadBoot};
use ferry_verbs::{VerbsDevice, VerbsOptions};

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn report(stage: &str, n: usize, devs: &[VerbsDevice], rss0: usize, extra: &str) {
    let f: Vec<_> = devs.iter().map(VerbsDevice::footprint).collect();
    let mean = |g: &dyn Fn(&ferry_verbs::Footprint) -> usize| {
        f.iter().map(g).sum::<usize>() as f64 / f.len() as f64
    };
    println!(
        "ranks={n} stage={stage:<5} qps/rank={:.1} cqe/rank={:.0} srq_posted/rank={:.0} \
         registered_KiB/rank={:.0} rss_delta_KiB/rank={:.0} {extra}",
        mean(&|f| f.qps),
        mean(&|f| f.cq_entries as usize),
        mean(&|f| f.srq_posted),
        mean(&|f| f.registered_bytes) / 1024.0,
        rss_bytes().saturating_sub(rss0) as f64 / 1024.0 / n as f64,
    );
}

fn pump_until(devs: &mut [VerbsDevice], done: impl Fn(&mut [VerbsDevice]) -> bool) {
    let mut sinks: Vec<Recorder> = devs.iter().map(|_| Recorder::default()).collect();
    let t0 = Instant::now();
    while !done(devs) {
        for (d, s) in devs.iter_mut().zip(sinks.iter_mut()) {
            d.progress(s).expect("progress");
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "timed out");
    }
}

fn run(n: u32) {
    let rss0 = rss_bytes();
    let ranks: Vec<Rank> = (0..n as Rank).collect();
    let boots = ThreadBoot::group(n, &format!("init-cost-{n}"));
    let handles: Vec<_> = boots
        .into_iter()
        .map(|mut boot| {
            let ranks = ranks.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let dev = VerbsDevice::new(&mut boot, &ranks, VerbsOptions::default());
                (dev.expect("VerbsDevice::new"), t0.elapsed())
            })
        })
        .collect();
    let mut devs = Vec::new();
    let mut times = Vec::new();
    for h in handles {
        let (d, t) = h.join().expect("rank thread");
        devs.push(d);
        times.push(t);
    }
    let max = times.iter().max().copied().unwrap_or_default();
    let mean = times.iter().sum::<Duration>() / n;
    report(
        "lazy",
        n as usize,
        &devs,
        rss0,
        &format!(
            "init_ms_max={:.1} init_ms_mean={:.1}",
            max.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3
        ),
    );
    if n >= 2 {
        let t0 = Instant::now();
        let mut sinks = [Recorder::default(), Recorder::default()];
        while devs[0].send(1, b"h", b"p").expect("send") == Sent::Busy {
            for (d, s) in devs[..2].iter_mut().zip(sinks.iter_mut()) {
                d.progress(s).expect("progress");
            }
        }
        let first = t0.elapsed();
        pump_until(&mut devs[..2], |d| d[1].is_connected(0));
        report(
            "k=1",
            n as usize,
            &devs,
            rss0,
            &format!("first_send_ms={:.2}", first.as_secs_f64() * 1e3),
        );
    }
    let t0 = Instant::now();
    pump_until(&mut devs, |devs| {
        let mut all = true;
        for d in devs.iter_mut() {
            for p in 0..n as Rank {
                all &= d.connect(p).expect("connect");
            }
        }
        all
    });
    report(
        "all",
        n as usize,
        &devs,
        rss0,
        &format!(
            "connect_all_ms={:.1} (init+all={:.1})",
            t0.elapsed().as_secs_f64() * 1e3,
            (max + t0.elapsed()).as_secs_f64() * 1e3
        ),
    );
}

fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    println!(
        "peer-state bytes per unconnected peer: Peer {} + address {} + AH slot {}",
        ferry_verbs::peer_state_bytes().0,
        ferry_verbs::peer_state_bytes().1,
        ferry_verbs::peer_state_bytes().2
    );
    for n in if sizes.is_empty() {
        vec![2, 4, 8]
    } else {
        sizes
    } {
        run(n);
    }
}
