//! # ferry-pmi
//!
//! Bootstrap over the PMI-1 wire protocol: how a rank learns its rank, its
//! job's size and the other ranks' addresses. Of ferry's crates it depends
//! only on `ferry-core`, for the [`Bootstrap`](ferry_core::Bootstrap) trait
//! the client implements.
//!
//! - [`PmiClient`] implements [`ferry_core::Bootstrap`] against a PMI-1
//!   server: `ferryrun`, or MPICH's Hydra (`mpiexec.hydra`), so the same
//!   binary runs under either. [`PmiClient::from_env`] finds the server
//!   through `PMI_FD` (or `PMI_PORT`) and returns `None` for a singleton.
//! - [`server`] is the server side that `ferryrun` runs.
//! - [`wire`] and [`reply`] are the strict line parser and reply checks.
//!
//! # The protocol
//! Newline-terminated `cmd=NAME key=value ...` lines, one reply per request
//! (MPICH `src/pmi/simple/simple_pmi.c`, Hydra `pmip_pmi_v1.c`):
//!
//! | request                                   | reply                                       |
//! |-------------------------------------------|---------------------------------------------|
//! | `init pmi_version=1 pmi_subversion=1`     | `response_to_init rc=0 [pmi_version ...]`   |
//! | `get_maxes`                               | `maxes kvsname_max keylen_max vallen_max`   |
//! | `get_appnum`                              | `appnum appnum=N`                           |
//! | `get_universe_size`                       | `universe_size size=N` (-1: unknown)        |
//! | `get_my_kvsname`                          | `my_kvsname kvsname=NAME`                   |
//! | `put kvsname key value`                   | `put_result rc [msg]`                       |
//! | `get kvsname key`                         | `get_result rc [msg] [value]` (rc≠0: absent)|
//! | `barrier_in`                              | `barrier_out [rc]`                          |
//! | `finalize`                                | `finalize_ack`                              |
//! | `abort exitcode message`                  | (none: the launcher kills the job)          |
//!
//! # Limitations
//! - Keys and values are bare tokens: no spaces, no `\`, printable ASCII
//!   only (see [`PmiClient`]); the client refuses others with
//!   [`ferry_core::BootstrapError::Invalid`] instead of sending something
//!   a server would cut or mangle.
//! - One kvsname (the job's own); no `spawn`, `publish_name` or
//!   `getbyidx`; PMI-2 (Slurm's `srun --mpi=pmi2`) is not implemented.
//!
//! # Safety
//! `unsafe` is denied except in the private `ffi` module: adopting the
//! socket the launcher passed as `PMI_FD` (an `OwnedFd::from_raw_fd`, after
//! checking through `/proc/self/fd` that it is an open socket, adopted once).
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod client;
mod conn;
mod env;
mod ffi;
pub mod reply;
pub mod server;
mod v1;
pub mod v2;
pub mod wire;

pub use client::{PmiClient, PmiVersion};
pub use reply::Maxes;
