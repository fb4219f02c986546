//! `ferry-info`: what this build of ferry can do on this machine.
//!
//! Prints the compiled features, the devices found (is shared memory
//! usable, is CMA permitted, how big is /dev/shm; the network devices), the
//! effective configuration and protocol thresholds per device, and the shm
//! memory formula's figures for 2, 16, 64 and 256 ranks.
//!
//! Started by a launcher (`ferryrun`, `mpiexec`, `srun`), it instead starts
//! the job and rank 0 prints one line per rank: its host, process id, device
//! and which device reaches each peer (`shm 0-1, ofi 2-3`), which is what
//! to check first when a job spans hosts.

use std::process::ExitCode;

use ferry::{Config, DeviceChoice, ProtocolTable};

/// `println!` that ends the program quietly when stdout is gone (`ferry-info
/// | head`): `println!` would panic on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn table(t: &ProtocolTable) -> String {
    format!(
        "eager up to {} B; rendezvous by {:?} from {} B (fragments of {} B below that)",
        t.eager_max, t.rdma, t.rdma_min, t.fragment
    )
}

/// What the kernel says about cross-memory attach between sibling ranks.
fn cma_permission() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        Ok(s) => match s.trim() {
            "0" => "yes (yama ptrace_scope 0)".into(),
            "1" => "yes: ranks allow their peers with PR_SET_PTRACER (yama ptrace_scope 1)".into(),
            v => format!("no (yama ptrace_scope {v}): large messages are copied through cells"),
        },
        Err(_) => "yes (no yama LSM; the device still probes at setup)".into(),
    }
}

fn dev_shm() -> String {
    match rustix::fs::statvfs("/dev/shm") {
        Ok(s) => format!(
            "{} total, {} free",
            bytes(s.f_blocks * s.f_frsize),
            bytes(s.f_bavail * s.f_frsize)
        ),
        Err(e) => format!("unavailable ({e})"),
    }
}

fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ferry-info: {e}");
            return ExitCode::FAILURE;
        }
    };
    if launched() {
        return match job_report(config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ferry-info: {e}");
                ExitCode::FAILURE
            }
        };
    }
    out!("ferry {}", env!("CARGO_PKG_VERSION"));
    out!();
    out!("features");
    out!("  shm    {}", yes(cfg!(feature = "shm")));
    out!("  ofi    {}", yes(cfg!(feature = "ofi")));
    out!("  verbs  {}", yes(cfg!(feature = "verbs")));
    out!();
    out!("configuration (FERRY_* variables)");
    out!("  device           {}", config.device.name());
    out!(
        "  wait mode        {:?}, spin {} us",
        config.wait_mode,
        config.spin.as_micros()
    );
    out!("  thread level     {}", config.thread_level.name());
    match config.engine.eager_limit {
        Some(n) => out!("  eager limit      {n} B"),
        None => out!("  eager limit      the device's (per peer, below)"),
    }
    out!("  rndv threshold   {} B", config.engine.rdma_threshold);
    out!(
        "  eager credits    {} per peer",
        config.engine.eager_credits
    );
    out!(
        "  max message      {}",
        bytes(config.engine.max_message as u64)
    );
    out!();
    out!("devices");
    let loopback = Config {
        device: DeviceChoice::Loopback,
        ..config.clone()
    }
    .init()
    .and_then(|w| w.protocol_table(0));
    match loopback {
        Ok(t) => out!("  loopback  available: {}", table(&t)),
        Err(e) => out!("  loopback  unavailable: {e}"),
    }
    if cfg!(feature = "shm") {
        // A job of one sets the device up for real: segment, wake-up fds,
        // and its own CMA probe.
        let shm = Config {
            device: DeviceChoice::Shm,
            ..config.clone()
        }
        .init()
        .and_then(|w| w.protocol_table(0));
        match shm {
            Ok(t) => out!("  shm       available: {}", table(&t)),
            Err(e) => out!("  shm       unavailable: {e}"),
        }
    } else {
        out!("  shm       not compiled in (feature `shm`)");
    }
    out!("            CMA permitted: {}", cma_permission());
    shm_cma_setting();
    out!("            /dev/shm: {}", dev_shm());
    ofi_providers();
    verbs_ports();
    shm_formula();
    ExitCode::SUCCESS
}

/// True when a launcher started this process (a PMI-1 or PMI-2 server, or
/// a job rank variable, is in the environment).
fn launched() -> bool {
    ["PMI_FD", "PMI_PORT", "PMI_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// One rank's line in the job report, fixed-size so that rank 0 can gather
/// them in one collective; longer lines are cut.
const RECORD: usize = 512;

/// `shm 0-1, ofi 2-3`: runs of consecutive ranks reached by one device.
fn peer_runs(devices: &[&str]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut start = 0;
    for i in 1..=devices.len() {
        if i == devices.len() || devices[i] != devices[start] {
            let span = if i - 1 == start {
                format!("{start}")
            } else {
                format!("{start}-{}", i - 1)
            };
            runs.push(format!("{} {span}", devices[start]));
            start = i;
        }
    }
    runs.join(", ")
}

fn job_report(config: Config) -> ferry::Result<()> {
    let world = config.init()?;
    let (me, size) = (world.rank(), world.size());
    let devices = (0..size as ferry::Rank)
        .map(|peer| world.peer_device(peer))
        .collect::<ferry::Result<Vec<_>>>()?;
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let line = format!(
        "{me:>5}  {host:<16} {:>8}  {:<9}  {}",
        std::process::id(),
        world.device_name(),
        peer_runs(&devices)
    );
    let mut record = [0u8; RECORD];
    let n = line.len().min(RECORD);
    record[..n].copy_from_slice(&line.as_bytes()[..n]);
    let mut all = vec![0u8; if me == 0 { RECORD * size as usize } else { 0 }];
    world
        .world()
        .gather(&record, (me == 0).then_some(&mut all[..]), 0)?;
    if me == 0 {
        out!(
            "ferry {}: a job of {size} ranks (FERRY_DEVICE={})",
            env!("CARGO_PKG_VERSION"),
            world.config().device.name()
        );
        out!(" rank  host                  pid  device     peers by device");
        for rec in all.chunks(RECORD) {
            let end = rec.iter().position(|&b| b == 0).unwrap_or(RECORD);
            out!("{}", String::from_utf8_lossy(&rec[..end]));
        }
    }
    world.finalize()
}

#[cfg(feature = "shm")]
fn shm_formula() {
    let opts = ferry_shm::ShmOptions::from_env().unwrap_or_default();
    out!();
    out!(
        "shm segment size per node (cells of {} B, {} cells per rank; linear in ranks)",
        opts.cell_size,
        opts.cells_per_rank
    );
    for n in [2usize, 16, 64, 256] {
        let total = ferry_shm::ShmDevice::segment_bytes(n, &opts);
        out!(
            "  {n:>3} ranks: {:>10} ({} per rank)",
            bytes(total as u64),
            bytes((total / n) as u64)
        );
    }
}

#[cfg(not(feature = "shm"))]
fn shm_formula() {}

/// What FERRY_SHM_CMA asks for, as the shm device reads it; unset, the
/// machine's rule and this machine's own copy rates, so a user can see
/// whether the rule fits.
#[cfg(feature = "shm")]
fn shm_cma_setting() {
    use ferry_shm::cma_choice;
    match ferry_shm::ShmOptions::from_env() {
        Ok(o) if !o.cma => out!("            CMA disabled by FERRY_SHM_CMA"),
        Ok(o) if o.cma_auto => {
            let rule = cma_choice::machine_default();
            let on = if rule.cma { "on" } else { "off" };
            out!("            CMA {on} (FERRY_SHM_CMA unset): {}", rule.why);
            let r = cma_choice::measure(9);
            out!(
                "            this machine, 4 MiB medians: memcpy {:.1} GB/s, process_vm_readv {:.1} GB/s",
                r.memcpy / 1e9,
                r.cma / 1e9
            );
        }
        Ok(_) => out!("            CMA forced on by FERRY_SHM_CMA"),
        Err(e) => out!("            {e}"),
    }
}

#[cfg(not(feature = "shm"))]
fn shm_cma_setting() {}

/// The libfabric providers `fi_getinfo` offers (FERRY_OFI_PROVIDER picks one).
#[cfg(feature = "ofi")]
fn ofi_providers() {
    match ferry_ofi::providers() {
        Ok(list) if list.is_empty() => {
            out!("  ofi       compiled in; fi_getinfo offers no provider")
        }
        Ok(list) => {
            out!(
                "  ofi       compiled in; providers (FERRY_OFI_PROVIDER or FI_PROVIDER picks one):"
            );
            for p in list {
                out!("              {}", p.summary);
            }
        }
        Err(e) => out!("  ofi       compiled in, unusable: {e}"),
    }
}

#[cfg(not(feature = "ofi"))]
fn ofi_providers() {
    out!("  ofi       not compiled in (feature `ofi`)");
}

/// The RDMA devices and ports libibverbs finds (FERRY_VERBS_DEVICE picks one).
#[cfg(feature = "verbs")]
fn verbs_ports() {
    match ferry_verbs::devices() {
        Ok(list) if list.is_empty() => out!("  verbs     compiled in; no RDMA device found"),
        Ok(list) => {
            out!("  verbs     compiled in; devices (FERRY_VERBS_DEVICE picks one):");
            for p in list {
                out!("              {}", p.summary);
            }
        }
        Err(e) => out!("  verbs     compiled in, unusable: {e}"),
    }
}

#[cfg(not(feature = "verbs"))]
fn verbs_ports() {
    out!("  verbs     not compiled in (feature `verbs`)");
}

#[cfg(test)]
mod tests {
    use super::peer_runs;

    #[test]
    fn peer_runs_groups_consecutive_ranks_by_device() {
        assert_eq!(peer_runs(&["shm", "shm", "ofi", "ofi"]), "shm 0-1, ofi 2-3");
        assert_eq!(
            peer_runs(&["ofi", "shm", "shm", "ofi"]),
            "ofi 0, shm 1-2, ofi 3"
        );
        assert_eq!(peer_runs(&["loopback"]), "loopback 0");
        assert_eq!(peer_runs(&[]), "");
    }
}
