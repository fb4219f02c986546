//! `ferryrun`, the single-node launcher: starts N ranks of a program,
//! serves them PMI-1 (so they find each other through
//! [`crate::pmi::PmiClient`], exactly as under MPICH's `mpiexec.hydra`),
//! and turns the job's fate into one exit code.
//!
//! The binary is a thin wrapper around [`main`]; the pieces are public so
//! that tools can embed the launcher. See [`HELP`] for the behaviour.

mod args;
mod cleanup;
mod ffi;
mod job;
mod relay;

pub use args::{parse_args, Invocation, Options, UsageError, HELP, MAX_RANKS};
pub use cleanup::{new_job_id, remove_job_files, SHM_DIR};
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
