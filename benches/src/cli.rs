//! `ferry-bench`'s command line, and the table of subcommands.
//!
//! ```text
//! ferryrun -n 2 ferry-bench latency [--sizes 8,65536] [--iters N] [--warmup N]
//!                                   [--reps R] [--json FILE] [--validate]
//!                                   [--device shm] [--wait-mode spin|passive|hybrid]
//! ```
//!
//! Every subcommand is one [`Subcommand`] entry in [`SUBCOMMANDS`]: its
//! columns, default sizes, OSU iteration counts and the function that
//! measures one size. The driver ([`crate::job`]) does the rest (start-up,
//! repetitions, the table, JSON), so a new subcommand is one module and
//! one entry.

use std::path::PathBuf;
use std::process::ExitCode;

use ferry::{DeviceChoice, WaitMode};

use crate::job::Measure;

/// One benchmark: what it prints and how it measures a size.
#[derive(Debug)]
pub struct Subcommand {
    /// Its name on the command line.
    pub name: &'static str,
    /// One line for `--help` and the table header.
    pub about: &'static str,
    /// The columns after `size`, with their units: the first is the
    /// headline figure.
    pub columns: &'static [&'static str],
    /// Sizes measured without `--sizes`.
    pub default_sizes: fn() -> Vec<usize>,
    /// `(iterations, warm-up)` for a size, without `--iters`/`--warmup`.
    pub iterations: fn(usize) -> (usize, usize),
    /// Whether `measure` appends heap allocations per timed iteration when
    /// they are counted (the hot-path loops do).
    pub counts_allocations: bool,
    /// Run the first size once untimed before the table (cheap for the
    /// ping-pong loops; `wait` would spend seconds on it).
    pub job_warmup: bool,
    /// Runs with any even number of ranks, as pairs (`mbw-mr`); the
    /// others need exactly 2.
    pub multi_pair: bool,
    /// Measures one size on this rank; rank 0 returns the columns.
    pub measure: Measure,
}

/// Powers of two from `from` to 4 MiB (`0` first if `from` is 0).
pub fn powers_of_two(from: usize) -> Vec<usize> {
    let mut v = if from == 0 { vec![0] } else { Vec::new() };
    let mut s = from.max(1);
    while s <= 4 << 20 {
        v.push(s);
        s *= 2;
    }
    v
}

/// Every subcommand, in `--help` order.
pub const SUBCOMMANDS: &[Subcommand] = &[
    crate::latency::LATENCY,
    crate::bw::BW,
    crate::bibw::BIBW,
    crate::bibw::MBW_MR,
    crate::wait::WAIT,
    crate::arecv::ARECV,
    crate::request::REQUEST,
    crate::coll::BARRIER,
    crate::coll::BCAST,
    crate::coll::REDUCE,
    crate::coll::ALLREDUCE,
    crate::coll::ALLGATHER,
    crate::coll::ALLTOALL,
    crate::nbc::IBARRIER,
    crate::nbc::IBCAST,
    crate::nbc::IALLREDUCE,
    crate::nbc::IALLTOALL,
    crate::rma::PUT_LATENCY,
    crate::rma::GET_LATENCY,
    crate::rma::ACC_LATENCY,
    crate::rma::GET_ACC_LATENCY,
    crate::rma::FOP_LATENCY,
    crate::rma::CAS_LATENCY,
    crate::rma::PUT_BW,
    crate::rma::GET_BW,
    crate::rma::PUT_BIBW,
    crate::passive::PASSIVE_EPOCH,
];

/// The options common to every subcommand.
#[derive(Debug, Clone)]
pub struct Options {
    /// The subcommand's name.
    pub subcommand: &'static str,
    /// `--device`.
    pub device: Option<DeviceChoice>,
    /// `--wait-mode`.
    pub wait_mode: Option<WaitMode>,
    /// `--spin-us`.
    pub spin_us: Option<u64>,
    /// `--iters`.
    pub iters: Option<usize>,
    /// `--warmup`.
    pub warmup: Option<usize>,
    /// `--sizes`.
    pub sizes: Option<Vec<usize>>,
    /// `--reps` (default 1).
    pub reps: usize,
    /// `--json FILE`.
    pub json: Option<PathBuf>,
    /// `--validate`: check every received byte.
    pub validate: bool,
    /// `--window` (bw; default 64).
    pub window: usize,
    /// `--batch`: bw and mbw-mr start each window's sends inside one
    /// `Comm::batch` (doorbell batching).
    pub batch: bool,
    /// `--block-secs` (wait, ibarrier; default 2).
    pub block_secs: f64,
    /// `--persistent`: the blocking collective subcommands measure the
    /// persistent form (`allreduce_init`, ..., `start` + `wait`).
    pub persistent: bool,
    /// `--sync` (the one-sided subcommands: flush, flush_local, lock_all,
    /// lock, fence, pscw).
    pub sync: Option<String>,
    /// `--private`: the one-sided subcommands use
    /// `win_allocate_private`'s window (every operation a message).
    pub private: bool,
}

/// The help text.
pub fn help() -> String {
    let mut s = String::from(
        "ferry-bench: OSU-style benchmarks over ferry, for exactly 2 ranks\n\n\
         Usage: ferryrun -n 2 ferry-bench SUBCOMMAND [OPTIONS]\n\
         \x20      mpiexec.hydra -n 2 ferry-bench SUBCOMMAND [OPTIONS]\n\
         \x20      ferry-bench SUBCOMMAND [OPTIONS]    (starts the 2 ranks itself)\n\n\
         Subcommands:\n",
    );
    for c in SUBCOMMANDS {
        s.push_str(&format!("  {:<15} {}\n", c.name, c.about));
    }
    s.push_str(
        "\nOptions:\n\
         \x20 --sizes A,B,...     message sizes in bytes (k/m suffixes; default: OSU's range)\n\
         \x20 --iters N           timed iterations per size (default: OSU's counts)\n\
         \x20 --warmup N          untimed iterations first (default: OSU's, or iters/10)\n\
         \x20 --reps R            repeat the whole run R times; the table shows medians\n\
         \x20 --json FILE         also write every repetition, median and spread as JSON\n\
         \x20 --validate          check every received byte (off by default, as in OSU)\n\
         \x20 --device D          auto, shm, loopback (FERRY_DEVICE)\n\
         \x20 --wait-mode M       spin, passive, hybrid (FERRY_WAIT_MODE)\n\
         \x20 --spin-us N         hybrid spin time (FERRY_SPIN_US)\n\
         \x20 --window N          bw, bibw, mbw-mr, request: messages in flight (default 64)\n\
         \x20 --block-secs S      wait, ibarrier: how long a rank stays blocked (default 2)\n\
         \x20 --persistent        barrier ... alltoall: the persistent form (*_init, start, wait)\n\
         \x20 --sync S            one-sided: flush (default), flush_local, lock_all, lock, fence, pscw\n\
         \x20 --private           one-sided: a window of private memory (every operation a message)\n\n\
         Output: lines starting with # are headers; each data row is `size value [more\n\
         columns]`, whitespace-separated. Latency in us (one-way: round trip / 2),\n\
         bandwidth in MB/s (10^6 B/s), message rate in messages/s. Other FERRY_*\n\
         variables (FERRY_SHM_CMA=0, FERRY_EAGER_LIMIT, ...) apply as usual.\n",
    );
    s
}

fn parse_size(s: &str) -> Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let (digits, shift) = match lower.strip_suffix('k') {
        Some(d) => (d, 10),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 20),
            None => (lower.as_str(), 0),
        },
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("bad size {s:?}"))
}

fn number<T: std::str::FromStr>(opt: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{opt}: bad value {v:?}"))
}

/// Parses the arguments after the program name.
///
/// # Errors
/// A message for the user (`Err(None)` means: print the help and succeed).
pub fn parse(args: &[String]) -> Result<Options, Option<String>> {
    let Some(first) = args.first() else {
        return Err(Some("no subcommand given".into()));
    };
    if first == "-h" || first == "--help" || first == "help" {
        return Err(None);
    }
    let sub = SUBCOMMANDS
        .iter()
        .find(|c| c.name == first)
        .ok_or_else(|| Some(format!("unknown subcommand {first:?}")))?;
    let mut o = Options {
        subcommand: sub.name,
        device: None,
        wait_mode: None,
        spin_us: None,
        iters: None,
        warmup: None,
        sizes: None,
        reps: 1,
        json: None,
        validate: false,
        window: 64,
        batch: false,
        block_secs: 2.0,
        persistent: false,
        sync: None,
        private: false,
    };
    let mut it = args[1..].iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| Some(format!("{name} needs a value")))
        };
        match name {
            "-h" | "--help" => return Err(None),
            "--validate" => o.validate = true,
            "--persistent" => o.persistent = true,
            "--private" => o.private = true,
            "--sync" => o.sync = Some(value()?),
            "--batch" => o.batch = true,
            "--device" => {
                // Parsed as FERRY_DEVICE would be, with the same names.
                let v = value()?;
                let lookup = |k: &str| (k == "FERRY_DEVICE").then(|| v.clone());
                let c = ferry::Config::from_lookup(lookup)
                    .map_err(|e| Some(format!("--device: {e}")))?;
                o.device = Some(c.device);
            }
            "--wait-mode" => {
                let v = value()?;
                let lookup = |k: &str| (k == "FERRY_WAIT_MODE").then(|| v.clone());
                let c = ferry::Config::from_lookup(lookup)
                    .map_err(|e| Some(format!("--wait-mode: {e}")))?;
                o.wait_mode = Some(c.wait_mode);
            }
            "--spin-us" => o.spin_us = Some(number(name, &value()?)?),
            "--iters" => o.iters = Some(number(name, &value()?)?),
            "--warmup" => o.warmup = Some(number(name, &value()?)?),
            "--reps" => o.reps = number::<usize>(name, &value()?)?.max(1),
            "--window" => o.window = number::<usize>(name, &value()?)?.max(1),
            "--block-secs" => o.block_secs = number(name, &value()?)?,
            "--json" => o.json = Some(PathBuf::from(value()?)),
            "--sizes" => {
                let v = value()?;
                let sizes = v
                    .split(',')
                    .map(parse_size)
                    .collect::<Result<Vec<_>, _>>()?;
                o.sizes = Some(sizes);
            }
            _ => return Err(Some(format!("unknown option {arg:?}"))),
        }
    }
    if o.iters == Some(0) {
        return Err(Some("--iters must be at least 1".into()));
    }
    Ok(o)
}

/// The subcommand named in `o`.
pub fn subcommand(o: &Options) -> &'static Subcommand {
    SUBCOMMANDS
        .iter()
        .find(|c| c.name == o.subcommand)
        .expect("parse only accepts listed subcommands")
}

/// True when a PMI launcher (`ferryrun`, `mpiexec.hydra`) started us.
fn launched() -> bool {
    std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some()
}

/// Started by hand: run the same command as a 2-rank job through the
/// launcher ferry embeds, so that `cargo run --release -p ferry-bench --
/// latency` works on a fresh machine. A singleton could not measure
/// anything (every subcommand needs a peer).
fn self_launch(args: &[String]) -> ExitCode {
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ferry-bench: cannot find my own executable to launch 2 ranks: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "ferry-bench: not started by a launcher; running `ferryrun -n 2 {}`",
        args.join(" ")
    );
    let opts = ferry_launch::Options {
        ranks: 2,
        label: false,
        timeout: None,
        bind_to: ferry_launch::BindTo::Auto,
        map_by: ferry_launch::MapBy::Core,
        report_bindings: false,
        program: program.into_os_string(),
        args: args.iter().map(Into::into).collect(),
    };
    match ferry_launch::run(&opts) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("ferry-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The program: parses the arguments, runs the subcommand, exits 0 on
/// success. `allocations` counts heap allocations so far (the
/// `ferry-bench` binary's counting allocator), for the per-iteration
/// allocation figure.
pub fn main(allocations: Option<fn() -> u64>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(o) => o,
        Err(None) => {
            print!("{}", help());
            return ExitCode::SUCCESS;
        }
        Err(Some(msg)) => {
            eprintln!("ferry-bench: {msg}\n\n{}", help());
            return ExitCode::from(2);
        }
    };
    if !launched() {
        return self_launch(&args);
    }
    match crate::job::run(&options, allocations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("ferry-bench {}: {msg}", options.subcommand);
            ExitCode::FAILURE
        }
    }
}
