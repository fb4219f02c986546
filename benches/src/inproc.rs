//! Two shm ranks inside one process, one per thread, for the criterion
//! benches and the zero-allocation test: each thread maps the segment as
//! a separate process would (CMA included: a process may
//! `process_vm_readv` itself), so the device's code paths are the real
//! ones.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use ferry_core::{Config, Engine, ThreadBoot};
use ferry_shm::{ShmDevice, ShmOptions};

/// Two engines over the shm device, ranks 0 and 1 of one job, set up on
/// two threads (the setup is collective). Move rank 1's to another thread.
///
/// # Panics
/// If the device cannot be set up (no `/dev/shm`).
pub fn shm_pair(opts: ShmOptions, config: Config) -> (Engine<ShmDevice>, Engine<ShmDevice>) {
    static N: AtomicU32 = AtomicU32::new(0);
    let job = format!("bench{}x{}", std::process::id(), N.fetch_add(1, Relaxed));
    let handles: Vec<_> = ThreadBoot::group(2, &job)
        .into_iter()
        .map(|mut boot| {
            let (opts, config) = (opts.clone(), config.clone());
            std::thread::spawn(move || {
                let r = ferry_core::Bootstrap::rank(&boot);
                let dev = ShmDevice::new(&mut boot, &[0, 1], opts).expect("shm device setup");
                Engine::new(r, 2, dev, config).expect("rank within the job")
            })
        })
        .collect();
    let mut engines = handles.into_iter().map(|h| h.join().expect("setup thread"));
    let e0 = engines.next().expect("rank 0");
    let e1 = engines.next().expect("rank 1");
    (e0, e1)
}
