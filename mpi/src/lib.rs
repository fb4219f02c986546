//! # ferry-mpi
//!
//! The MPI-5 standard ABI on ferry: `libmpi_abi.so.1` exports `MPI_*` and
//! `PMPI_*` with the handle values and `MPI_Status` layout of the MPI 5.0
//! ABI, so a C program compiled against `include/mpi.h` (this project's
//! own header) runs on ferry. `mpi/README.md` says how to build a prefix
//! with `mpicc` and `mpiexec`, and which functions are not there yet.
//!
//! ## Layout
//! - [`abi`]: the ABI's constants; [`handle`]: handle encoding and the
//!   per-kind tables of user objects; [`state`]: the global runtime.
//! - [`error`]: ferry's errors as MPI error classes; [`errhandler`]: error
//!   handlers.
//! - [`datatype`]: predefined and derived datatypes, packing; [`reduce`]:
//!   which ferry reduction serves a predefined op on a type; [`attr`]:
//!   attribute keys; [`info`]: `MPI_Info`; [`comm::dims`]: `MPI_Dims_create`.
//! - `ffi`: every exported function, and all of this crate's `unsafe`:
//!   the lock-free tables (`cell`), request objects and their completion
//!   (`req`, `post`, `request`, `multi`), generalized requests (`greq`),
//!   point-to-point (`p2p`, `pair`, `persist`, `bsend`, `commbuf`,
//!   `mprobe`), datatypes (`types`, `typearray`, `typedecode`, `buf`,
//!   `pack`), communicators, groups and attributes, `MPI_Dims_create`
//!   (`topo`), collectives (`coll/`) and the MPIX extensions (`mpix`).
//!
//! ## Safety
//! `unsafe` code lives in `ffi` only, each block with a `// SAFETY:`
//! comment. Every body runs under `catch_unwind`: no panic reaches C.
//!
//! ## Thread safety
//! Any thread level; see [`state`] for what locks the C layer takes (none
//! below `MPI_THREAD_MULTIPLE`).
#![warn(missing_docs)]
#![deny(unsafe_code)]
// A body takes its MPI function's arguments as the standard lists them
// (MPI_Alltoallw_init has eleven).
#![allow(clippy::too_many_arguments)]

pub mod abi;
pub mod attr;
#[allow(unsafe_code)]
pub(crate) mod coll;
pub mod comm;
pub mod datatype;
pub(crate) mod env;
pub mod errhandler;
pub mod error;
#[allow(unsafe_code)]
mod ffi;
pub mod handle;
pub mod info;
#[allow(unsafe_code)]
pub(crate) mod mpix;
pub(crate) mod p2p;
pub mod reduce;
pub(crate) mod request;
pub mod state;
pub mod usererr;
