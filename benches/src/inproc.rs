//! Two shm ranks inside one process, one per thread, for the criterion
//! benches and the zero-allocation test: each thread maps the segment as
//! a separate process would (CMA included: a process may
//! `process_vm_readv` itself), so the device's code paths are the real
//! ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Barrier, Mutex};

use ferry_core::{Bootstrap, BootstrapError, Config, Engine, Rank};
use ferry_shm::{ShmDevice, ShmOptions};

/// A bootstrap for threads of one process (a shared map and a barrier).
#[derive(Debug, Clone)]
pub struct ThreadBoot {
    rank: Rank,
    size: u32,
    job: String,
    kvs: Arc<Mutex<HashMap<String, String>>>,
    barrier: Arc<Barrier>,
}

impl Bootstrap for ThreadBoot {
    fn rank(&self) -> Rank {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.kvs
            .lock()
            .map_err(|_| BootstrapError::Io("poisoned".into()))?
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.kvs
            .lock()
            .map_err(|_| BootstrapError::Io("poisoned".into()))?
            .get(key)
            .cloned()
            .ok_or_else(|| BootstrapError::NotFound(key.to_owned()))
    }
    fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.barrier.wait();
        Ok(())
    }
}

/// Two engines over the shm device, ranks 0 and 1 of one job, set up on
/// two threads (the setup is collective). Move rank 1's to another thread.
///
/// # Panics
/// If the device cannot be set up (no `/dev/shm`).
pub fn shm_pair(opts: ShmOptions, config: Config) -> (Engine<ShmDevice>, Engine<ShmDevice>) {
    static N: AtomicU32 = AtomicU32::new(0);
    let job = format!("bench{}x{}", std::process::id(), N.fetch_add(1, Relaxed));
    let kvs = Arc::new(Mutex::new(HashMap::new()));
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|r| {
            let mut boot = ThreadBoot {
                rank: r,
                size: 2,
                job: job.clone(),
                kvs: Arc::clone(&kvs),
                barrier: Arc::clone(&barrier),
            };
            let (opts, config) = (opts.clone(), config.clone());
            std::thread::spawn(move || {
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
