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
//! - [`datatype`]: the predefined datatypes; [`reduce`]: reductions on
//!   them; [`info`]: `MPI_Info`.
//! - `ffi`: every exported function, and all of this crate's `unsafe`.
//!
//! ## Safety
//! `unsafe` code lives in `ffi` only, each block with a `// SAFETY:`
//! comment. Every body runs under `catch_unwind`: no panic reaches C.
//!
//! ## Thread safety
//! Any thread level; see [`state`] for what locks the C layer takes.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod abi;
pub mod attr;
pub mod datatype;
pub mod errhandler;
pub mod error;
#[allow(unsafe_code)]
mod ffi;
pub mod handle;
pub mod info;
pub mod reduce;
pub mod state;
