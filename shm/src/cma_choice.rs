//! Whether the shm device uses cross-memory attach for rendezvous when the
//! user did not say (`FERRY_SHM_CMA` unset, so
//! [`ShmOptions::cma_auto`](crate::ShmOptions::cma_auto) is on).
//!
//! CMA copies once, through the kernel; the alternative pipelines two
//! copies through the cells on two cores. Which is faster depends on the
//! machine: on bare metal CMA usually wins for large messages (Open MPI and
//! MPICH use it there by default), but under a hypervisor its page-table
//! walks make it slower than a plain `memcpy`, and the pipeline, which
//! copies at memcpy speed on both cores, wins at every size. Measured on
//! the two 2-vCPU AMD EPYC VMs this project runs on: CMA 10.8 GB/s against
//! 28.7 GB/s for the pipeline at 1 MiB on the first; on the second, 6.3
//! against 11.0 GB/s (`ferry-bench bw`, window 64), and `process_vm_readv`
//! of 4 MiB at 7-11 GB/s against 15-24 GB/s for `memcpy` in every one of 10
//! launches.
//!
//! # Why the choice does not depend on timing
//! An earlier version timed CMA against a memcpy at setup (2 ms, once per
//! launch) and kept the faster. On a noisy machine the two figures cross
//! from one launch to the next, and the whole job then ran on the slower
//! path: 1 MiB bandwidth ranged from 3.2 to 8.7 GB/s over launches of the
//! same job. So the default is now a rule on what the machine *is*, which
//! gives the same answer in every launch: CMA off when the CPU reports that
//! it runs under a hypervisor (the `hypervisor` flag of `/proc/cpuinfo`),
//! on otherwise. [`measure`] remains for `ferry-info`, which prints the
//! machine's own figures so a user can see whether the rule fits and set
//! `FERRY_SHM_CMA` if it does not.

use std::io::IoSliceMut;
use std::time::Instant;

use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;

/// The default when `FERRY_SHM_CMA` is unset, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmaDefault {
    /// Use CMA for rendezvous.
    pub cma: bool,
    /// The reason, for logs and `ferry-info`.
    pub why: &'static str,
}

/// The rule (see the module docs): off under a hypervisor, on otherwise.
pub fn machine_default() -> CmaDefault {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    default_for(&cpuinfo)
}

fn default_for(cpuinfo: &str) -> CmaDefault {
    let virtualized = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    if virtualized {
        CmaDefault {
            cma: false,
            why: "the CPU runs under a hypervisor, where CMA is slower than the copy pipeline",
        }
    } else {
        CmaDefault {
            cma: true,
            why: "bare metal, where CMA's single copy beats the copy pipeline",
        }
    }
}

/// Bytes per timed copy: large enough to leave the caches.
const PROBE_BYTES: usize = 4 << 20;

/// The machine's own copy rates, as [`measure`] found them.
#[derive(Debug, Clone, Copy)]
pub struct CopyRates {
    /// `memcpy` of 4 MiB in this process, bytes/s (median).
    pub memcpy: f64,
    /// `process_vm_readv` of 4 MiB of this process, bytes/s (median); 0 if
    /// the kernel refused.
    pub cma: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rate(t: Instant) -> f64 {
    PROBE_BYTES as f64 / t.elapsed().as_secs_f64().max(1e-9)
}

/// Times `rounds` memcpys and `rounds` CMA reads of 4 MiB, alternating so
/// that a noisy moment hits both, and returns the medians (about 1 ms per
/// round on a VM). For reporting only: the device never decides by it.
pub fn measure(rounds: usize) -> CopyRates {
    let src = vec![0x5au8; PROBE_BYTES];
    let mut dst = vec![0u8; PROBE_BYTES];
    let pid = Pid::this();
    let remote = [RemoteIoVec {
        base: src.as_ptr() as usize,
        len: PROBE_BYTES,
    }];
    let mut memcpy = Vec::with_capacity(rounds);
    let mut cma = Vec::with_capacity(rounds);
    let mut cma_refused = false;
    // One untimed round of each first: page faults and cold caches.
    for round in 0..=rounds {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&dst);
        let r = rate(t);
        if round > 0 {
            memcpy.push(r);
        }
        if cma_refused {
            continue;
        }
        let t = Instant::now();
        let mut local = [IoSliceMut::new(&mut dst)];
        match process_vm_readv(pid, &mut local, &remote) {
            Ok(n) if n == PROBE_BYTES => {
                let r = rate(t);
                if round > 0 {
                    cma.push(r);
                }
            }
            _ => cma_refused = true,
        }
    }
    CopyRates {
        memcpy: median(memcpy),
        cma: if cma_refused { 0.0 } else { median(cma) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hypervisor_flag_turns_cma_off() {
        let vm = "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n";
        assert!(!default_for(vm).cma);
        let metal = "processor\t: 0\nflags\t\t: fpu vme sse2 lahf_lm\n";
        assert!(default_for(metal).cma);
        // A word that merely contains it is not the flag.
        let other = "flags\t\t: fpu not_hypervisor_x\n";
        assert!(default_for(other).cma);
        // No flags line (not x86, or no /proc): bare-metal default.
        assert!(default_for("").cma);
    }

    #[test]
    fn measure_reports_both_rates() {
        let r = measure(3);
        assert!(r.memcpy > 1e8, "memcpy below 100 MB/s: {r:?}");
        // A process may always read itself unless seccomp forbids the call.
        assert!(r.cma > 1e8 || r.cma == 0.0, "{r:?}");
    }
}
