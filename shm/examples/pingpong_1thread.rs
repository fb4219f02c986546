//! Two ranks' engines driven by one thread: a deterministic ping-pong over
//! the shm device, for instruction counts (nothing spins: every receive
//! finds its message already there).
//!
//! ```text
//! valgrind --tool=callgrind target/release/examples/pingpong_1thread 8 1000
//! valgrind --tool=callgrind target/release/examples/pingpong_1thread 8 11000
//! ```
//! The difference of the two totals over 10 000 is the cost of one round
//! trip (two sends, two receives, both engines included). `FERRY_SHM_*`
//! variables apply (`FERRY_SHM_FASTBOX_SLOTS=0` for cells only).

use ferry_core::{Bootstrap, Buf, Config, Engine, SpinPark, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(8, |a| a.parse().expect("size"));
    let iters: u64 = args
        .next()
        .map_or(10_000, |a| a.parse().expect("iterations"));
    let opts = ShmOptions::from_env().expect("FERRY_SHM_* options");
    let job = format!("pp1t{}", std::process::id());
    let mut engines = ThreadBoot::group(2, &job)
        .into_iter()
        .map(|mut boot| {
            let opts = opts.clone();
            std::thread::spawn(move || {
                let r = boot.rank();
                let dev = ShmDevice::new(&mut boot, &[0, 1], opts).expect("shm device setup");
                Engine::new(r, 2, dev, Config::default()).expect("engine")
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("setup thread"))
        .collect::<Vec<_>>();
    let mut e1 = engines.pop().expect("rank 1");
    let mut e0 = engines.pop().expect("rank 0");
    let mut bufs: Vec<Option<Buf>> = (0..4)
        .map(|_| Some(Buf::zeroed(size).expect("buffer")))
        .collect();
    let p = &mut SpinPark;
    for _ in 0..iters {
        let b = bufs[0].take().expect("buffer");
        bufs[0] = e0.send(1, 1, 0, b, p).expect("send").buf;
        let b = bufs[1].take().expect("buffer");
        bufs[1] = e1.recv(0, 1, 0, b, p).expect("recv").buf;
        let b = bufs[2].take().expect("buffer");
        bufs[2] = e1.send(0, 1, 0, b, p).expect("send").buf;
        let b = bufs[3].take().expect("buffer");
        bufs[3] = e0.recv(1, 1, 0, b, p).expect("recv").buf;
    }
    println!("{iters} round trips of {size} bytes");
}
