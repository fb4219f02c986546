//! The launcher's one raw operation: giving each rank, between `fork` and
//! `exec`, the signal mask and descriptor limit the user started ferryrun
//! with.
//!
//! ferryrun blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD to read them from a
//! signalfd, and a blocked mask survives `fork` and `exec`: without this,
//! every rank would start with SIGTERM blocked and could not be killed
//! except by SIGKILL. Rust's `Command` does not reset the mask (observed on
//! Rust 1.95 with strace), so it is done in a `pre_exec` hook, which is
//! `unsafe` because it runs in the forked child. ferryrun also raises its
//! own descriptor limit (it holds several descriptors per rank); the ranks
//! get the original limit back, so they run as they would without it.
#![allow(unsafe_code)]

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::SigSet;
use nix::unistd::Pid;

/// Makes `cmd`'s child start with no signals blocked and, when given, with
/// `nofile` (soft, hard) as its descriptor limit.
pub(crate) fn reset_child_state(cmd: &mut Command, nofile: Option<(u64, u64)>, cpu: Option<usize>) {
    // Built before the fork: the hook only copies it.
    let cpus = cpu.and_then(|c| {
        let mut set = CpuSet::new();
        set.set(c).ok().map(|()| set)
    });
    // The hook runs in the child after fork, where only async-signal-safe
    // work is allowed. It builds an empty sigset on the stack and calls
    // pthread_sigmask, setrlimit and sched_setaffinity (plain system
    // calls) through nix; on
    // failure it builds an io::Error from the raw errno, which does not
    // allocate. `nofile` is copied into the closure before the fork.
    // SAFETY: the hook is async-signal-safe: no allocation, no locks, no
    // shared state (see above).
    unsafe {
        cmd.pre_exec(move || {
            let errno = |e: nix::errno::Errno| io::Error::from_raw_os_error(e as i32);
            SigSet::empty().thread_set_mask().map_err(errno)?;
            if let Some((soft, hard)) = nofile {
                setrlimit(Resource::RLIMIT_NOFILE, soft, hard).map_err(errno)?;
            }
            if let Some(set) = &cpus {
                sched_setaffinity(Pid::from_raw(0), set).map_err(errno)?;
            }
            Ok(())
        });
    }
}
