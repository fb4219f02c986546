//! # ferry-launch
//!
//! `ferryrun`, the single-node launcher: starts N ranks of a program,
//! serves them PMI-1 (so they find each other through
//! `ferry_pmi::PmiClient`, exactly as under MPICH's `mpiexec.hydra`), and
//! turns the job's fate into one exit code.
//!
//! ## Quick start
//! ```text
//! cargo build --release
//! target/release/ferryrun -n 4 [--label] [--timeout SECS] PROGRAM [ARGS...]
//! ```
//! The binary is a thin wrapper around [`main`]; the pieces are public so
//! that tools (ferry-bench) can embed the launcher. See [`HELP`] for the
//! behaviour.
//!
//! ## Dependencies
//! Of ferry's crates, the PMI crate (the server side of the wire protocol);
//! from `ferry-core`, the names of the files a job may leave behind, the
//! shm device's in `FERRY_SHM_DIR` and the ofi device's libfabric
//! shm-provider regions in `/dev/shm` (`ferry_core::shared_files`, which
//! both devices name their files with), so the sweep at the end of every
//! job always matches what the devices create; and from the shm device,
//! the sweep itself (`ferry_shm::names`) and the segment directory's
//! setting (`ShmOptions`).
//!
//! ## Safety
//! `unsafe` is denied except in the private `ffi` module: one `pre_exec`
//! hook that resets each rank's signal mask and descriptor limit between
//! `fork` and `exec`.
//!
//! ## Cleanup
//! At the end of a job, however it ends, ferryrun removes the job's files
//! from the shm directory and the ofi regions from `/dev/shm`, and reports
//! what it removed.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod bind;
mod cleanup;
mod ffi;
mod job;
mod relay;

pub use args::{parse_args, Invocation, Options, UsageError, HELP, MAX_RANKS};
pub use bind::{plan as bind_plan, BindTo, MapBy};
pub use cleanup::new_job_id;
pub use job::{run, LaunchError, EXIT_TIMEOUT, KILL_GRACE};

/// Exit code for command-line mistakes.
pub const EXIT_USAGE: i32 = 2;

/// `ferryrun`'s entry point: parses the process's arguments, runs the job
/// and returns the exit code (see [`HELP`]).
pub fn main() -> i32 {
    match parse_args(std::env::args_os().skip(1)) {
        Ok(Invocation::Help) => {
            print!("{HELP}");
            0
        }
        Ok(Invocation::Version) => {
            println!("ferryrun {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Err(e) => {
            eprintln!(
                "ferryrun: {e}\n\
                 usage: ferryrun -n N [--label] [--timeout SECS] [--] PROGRAM [ARGS...]\n\
                 (ferryrun --help explains everything)"
            );
            EXIT_USAGE
        }
        Ok(Invocation::Run(opts)) => match run(&opts) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("ferryrun: {e}");
                1
            }
        },
    }
}
