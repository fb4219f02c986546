//! # ferry-pmi
//!
//! Bootstrap over the PMI wire protocols, version 1 and 2: how a rank
//! learns its rank, its job's size and the other ranks' addresses. Of
//! ferry's crates it depends only on `ferry-core`, for the
//! [`Bootstrap`](ferry_core::Bootstrap) trait the client implements.
//!
//! - [`PmiClient`] implements [`ferry_core::Bootstrap`] against a PMI-1
//!   server (`ferryrun`, MPICH's Hydra `mpiexec.hydra`) or a PMI-2 server
//!   (Slurm's `srun --mpi=pmi2`), so the same binary runs under any of
//!   them. [`PmiClient::from_env`] finds the server through `PMI_FD` (or
//!   `PMI_PORT`), picks the version, and returns `None` for a singleton.
//! - [`server`] is the (PMI-1) server side that `ferryrun` runs.
//! - [`wire`] and [`reply`] are PMI-1's strict line parser and reply
//!   checks; [`v2::wire`] and [`v2::reply`] are PMI-2's.
//!
//! # Which version
//! Chosen once, when the client connects, from the environment:
//! 1. `FERRY_PMI=1` or `FERRY_PMI=2` if set (anything else is an error);
//! 2. otherwise PMI-2 if `PMI_JOBID` is set, PMI-1 if not.
//!
//! Slurm's `mpi/pmi2` plugin sets `PMI_FD`, `PMI_RANK`, `PMI_SIZE` and
//! `PMI_JOBID` (`<job>.<step>`) in every task; Hydra and `ferryrun` set
//! the first three only, and `ferryrun` removes an inherited `PMI_JOBID`
//! from its ranks. `SLURM_MPI_TYPE=pmi2` is set too, but it is inherited
//! by whatever a task starts, so it does not tell who serves this process.
//! A launcher started *inside* an `srun --mpi=pmi2` task that passes its
//! environment on (Hydra does) leaves `PMI_JOBID` set: there, set
//! `FERRY_PMI=1`. PMI-2 is spoken only over `PMI_FD`, as Slurm passes it.
//!
//! # PMI-1
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
//! # PMI-2
//! The PMI-1 line `cmd=init pmi_version=2 pmi_subversion=0` (answered by
//! `cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0`), then
//! messages of a 6-byte space-padded decimal length and a body of
//! `key=value;` pairs, `;` inside a value escaped as `;;` (Slurm
//! `src/plugins/mpi/pmi2/`, MPICH `src/pmi/src/pmi2_api.c`):
//!
//! | request (body)                                   | reply (`cmd=`, besides `rc`)                 | `PmiClient` call      |
//! |--------------------------------------------------|----------------------------------------------|-----------------------|
//! | `fullinit;[pmijobid=J;]pmirank=R;threaded=FALSE;`| `fullinit-response` `pmi-version` `rank` `size` `appnum` | connecting   |
//! | `job-getid;`                                     | `job-getid-response` `jobid`                 | `job_id`, `kvsname`   |
//! | `kvs-put;key=K;value=V;`                         | `kvs-put-response`                           | `put`                 |
//! | `kvs-fence;`                                     | `kvs-fence-response`                         | `barrier`             |
//! | `kvs-get;jobid=J;srcid=-1;key=K;`                | `kvs-get-response` `found` (`value`)         | `get`                 |
//! | `info-getjobattr;key=universeSize;`              | `info-getjobattr-response` `found` (`value`) | `get_universe_size`   |
//! | `finalize;`                                      | `finalize-response`                          | `finalize`            |
//! | `abort;isworld=TRUE;msg=M;`                      | (none: Slurm cancels the step)               | `abort`               |
//!
//! `get_appnum` returns `fullinit`'s `appnum`, which Slurm sends as -1
//! (not tracked); PMI-2's `abort` carries no exit code.
//!
//! # Limitations
//! - Keys are bare tokens under both versions: `[A-Za-z0-9_/-]`, no `PMI_`
//!   prefix. PMI-1 values have no spaces, no `\`, printable ASCII only;
//!   PMI-2 values are printable ASCII and spaces (see [`PmiClient`]). The
//!   client refuses others with [`ferry_core::BootstrapError::Invalid`]
//!   instead of sending something a server would cut or mangle.
//! - Slurm's plugin does not undo PMI-2's `;;` escape, so the PMI-2 client
//!   sends `;` as `%3B` and `%` as `%25` and decodes them in `get`; a
//!   launcher's own value holding `%3B` or `%25` would be decoded too.
//! - One kvsname (the job's own); no `spawn`, `publish_name`, `getbyidx`,
//!   node attributes or PMI-2's threaded mode; no PMIx (`srun
//!   --mpi=pmix`).
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
