//! Whether the shm device should use cross-memory attach for rendezvous,
//! when the user did not say (`FERRY_SHM_CMA` unset, so
//! [`ShmOptions::cma_probe`](crate::ShmOptions::cma_probe) is on).
//!
//! CMA copies once, through the kernel; the alternative pipelines two
//! copies through the cells on two cores. Which is faster depends on the
//! machine: on bare metal CMA usually wins for large messages, but under a
//! hypervisor its page-table walks can make it several times slower than
//! a plain `memcpy` (measured on this project's CI VM: CMA 10.8 GB/s
//! against 28.7 GB/s for the pipeline at 1 MiB). So each rank times both on
//! its own memory at setup, once (about 2 ms), and CMA is kept only where
//! it is at least as fast as a memcpy. The shm device then turns CMA off on
//! every rank if any rank declined, so the ranks always agree.

use std::io::IoSliceMut;
use std::time::{Duration, Instant};

use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;

/// Bytes per timed copy: large enough to leave the caches, small enough
/// to keep setup quick.
const PROBE_BYTES: usize = 4 << 20;
/// Timed copies of each kind; the best one counts.
const ROUNDS: usize = 3;

/// The measured figures of one probe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CmaProbe {
    /// memcpy bandwidth, bytes/s.
    pub(crate) memcpy: f64,
    /// CMA (`process_vm_readv` of this process) bandwidth, bytes/s; 0 if
    /// the kernel refused.
    pub(crate) cma: f64,
}

impl CmaProbe {
    /// Use CMA if it is at least as fast as a memcpy.
    pub(crate) fn prefer_cma(&self) -> bool {
        self.cma >= self.memcpy
    }
}

fn best(mut f: impl FnMut() -> bool) -> Option<Duration> {
    let mut best: Option<Duration> = None;
    // One untimed round first: page faults and cold caches.
    if !f() {
        return None;
    }
    for _ in 0..ROUNDS {
        let t = Instant::now();
        if !f() {
            return None;
        }
        let d = t.elapsed();
        best = Some(best.map_or(d, |b| b.min(d)));
    }
    best
}

fn rate(d: Option<Duration>) -> f64 {
    d.map_or(0.0, |d| PROBE_BYTES as f64 / d.as_secs_f64().max(1e-9))
}

/// Times a memcpy and a CMA read of `PROBE_BYTES` on this process.
pub(crate) fn probe() -> CmaProbe {
    let src = vec![0x5au8; PROBE_BYTES];
    let mut dst = vec![0u8; PROBE_BYTES];
    let memcpy = rate(best(|| {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&dst);
        true
    }));
    let pid = Pid::this();
    let remote = [RemoteIoVec {
        base: src.as_ptr() as usize,
        len: PROBE_BYTES,
    }];
    let cma = rate(best(|| {
        let mut local = [IoSliceMut::new(&mut dst)];
        matches!(process_vm_readv(pid, &mut local, &remote), Ok(n) if n == PROBE_BYTES)
    }));
    CmaProbe { memcpy, cma }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_measures_both_copies() {
        let p = probe();
        assert!(p.memcpy > 1e8, "memcpy below 100 MB/s: {p:?}");
        // A process may always read itself unless seccomp forbids the call.
        assert!(p.cma > 1e8 || p.cma == 0.0, "{p:?}");
        eprintln!(
            "memcpy {:.1} GB/s, CMA {:.1} GB/s, prefer CMA: {}",
            p.memcpy / 1e9,
            p.cma / 1e9,
            p.prefer_cma()
        );
    }
}
