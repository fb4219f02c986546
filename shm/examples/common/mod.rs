//! What the device-level examples share: two ranks as two threads, each
//! with its shm device; a sink that counts packets and copies each payload
//! out (as a pre-posted receive would); and a send that progresses until
//! the device takes the packet.

use ferry_core::device::{Device, Incoming, OpToken, Sent, Sink};
use ferry_core::{Bootstrap, Error, Rank, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

/// The command line: payload size (default 8) and a count (`default`).
pub(crate) fn args(default: u64) -> (usize, u64) {
    let mut args = std::env::args().skip(1);
    let size = args.next().map_or(8, |a| a.parse().expect("size"));
    let count = args.next().map_or(default, |a| a.parse().expect("count"));
    (size, count)
}

/// Runs `body(me, peer, device, sink)` on ranks 0 and 1 of a job named
/// `job`, each a thread with its own shm device (`FERRY_SHM_*` options),
/// after a barrier; `pin` puts rank r on CPU r.
pub(crate) fn pair<F>(job: &str, size: usize, pin: bool, body: F)
where
    F: Fn(Rank, Rank, &mut ShmDevice, &mut Count) + Send + Sync + Copy + 'static,
{
    let opts = ShmOptions::from_env().expect("FERRY_SHM_* options");
    let job = format!("{job}{}", std::process::id());
    let handles: Vec<_> = ThreadBoot::group(2, &job)
        .into_iter()
        .map(|mut boot| {
            let opts = opts.clone();
            std::thread::spawn(move || {
                let me = boot.rank();
                if pin {
                    pin_to(me as usize);
                }
                let mut dev = ShmDevice::new(&mut boot, &[0, 1], opts).expect("setup");
                boot.barrier().expect("barrier");
                body(me, 1 - me, &mut dev, &mut Count::new(size));
            })
        })
        .collect();
    for h in handles {
        h.join().expect("rank thread");
    }
}

fn pin_to(cpu: usize) {
    let mut cpus = rustix::thread::CpuSet::new();
    cpus.set(cpu);
    if rustix::thread::sched_setaffinity(None, &cpus).is_err() {
        eprintln!("could not pin to CPU {cpu}; running unpinned");
    }
}

/// The engine's eager header for a small message is 24 bytes.
pub(crate) const HEADER: [u8; 24] = [0; 24];

/// Counts packets and copies each payload out.
pub(crate) struct Count {
    pub(crate) n: u64,
    buf: Vec<u8>,
}

impl Count {
    /// A sink for payloads of up to `size` bytes.
    pub(crate) fn new(size: usize) -> Count {
        Count {
            n: 0,
            buf: vec![0; size.max(1)],
        }
    }

    /// Progresses `dev` until `n` packets have arrived in all.
    pub(crate) fn wait_for(&mut self, dev: &mut ShmDevice, n: u64) {
        while self.n < n {
            dev.progress(self).expect("progress");
        }
    }
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

/// Sends one packet to `peer`, progressing (into `sink`) while the device
/// is busy.
pub(crate) fn send(dev: &mut ShmDevice, sink: &mut Count, peer: Rank, payload: &[u8]) {
    loop {
        match dev.send(peer, &HEADER, payload).expect("send") {
            Sent::Done => return,
            Sent::Busy => {
                dev.progress(sink).expect("progress");
            }
        }
    }
}
