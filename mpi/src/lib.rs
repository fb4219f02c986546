//! # ferry-mpi
//!
//! The MPI-5 standard ABI on ferry: `libmpi_abi.so.1` exports `MPI_*` and
//! `PMPI_*` with the handle values and `MPI_Status` layout of the MPI 5.0
//! ABI, so a C program compiled against `include/mpi.h` (this project's
//! own header) runs on ferry. `mpi/README.md` says how to build a prefix
//! with `mpicc` and `mpiexec`, and which functions are not there yet.
//!
//! ## Layout
//! One module per chapter of the standard, each holding the bodies of its
//! functions; `ffi` is the boundary.
//! - `ffi`: the C boundary and this crate's raw-memory mechanisms. Every
//!   exported function is one row of `mpi/abi/functions.txt`;
//!   `ferry-mpi-abigen` writes its shim (`ffi/exports/`) and its prototype
//!   in `include/mpi.h`. A shim catches panics, decodes the arguments
//!   (`ffi::args`: out-arguments, slices of the lengths the table gives,
//!   strings, callbacks, data-buffer tokens), calls the body and raises a
//!   failure through the error handler. Beside it: the lock-free tables
//!   (`cell`), the C heap and host name (`os`), the program's callbacks
//!   (`callbacks`, `large_user_fn`), `long double` reductions
//!   (`longdouble`).
//! - Chapters: `env` (environment, errors), [`info`], [`attr`]
//!   (attributes), [`comm`] (groups, communicators, intercommunicators,
//!   `MPI_Dims_create`), `p2p` (sends, receives, probes, persistent,
//!   buffered, statuses, large counts), `request` (what a handle names, the
//!   request object, the one completion path), [`datatype`] (predefined and derived types,
//!   constructors, decoding, packing), `coll` (collectives, reductions),
//!   `mpix` (ferry's extensions).
//! - Under them: [`abi`] (the ABI's constants and callback types),
//!   [`handle`] (handle encoding, the per-kind tables), [`state`] (the
//!   global runtime), [`error`] and [`usererr`] (error classes, codes,
//!   strings), [`errhandler`], [`reduce`] (which ferry reduction serves a
//!   predefined op on a type).
//!
//! ## Safety
//! The crate denies `unsafe`. Every body is safe Rust: the generated shims
//! decode the C arguments first (`ffi::args`), the program's data buffers
//! as tokens. `unsafe` is allowed in `ffi` (the boundary, the argument
//! decoders, the lock-free tables, the program's callbacks, the C heap)
//! and in `datatype::buf` and `datatype::segments`, the one place that
//! reads and writes a program's data buffers and starts ferry's raw
//! operations on them; each says its contract at the top. Every `unsafe`
//! block has a `// SAFETY:` comment, and every body runs under
//! `catch_unwind`: no panic reaches C.

//! ## Floors
//! A module uses only modules on its own floor or below it (`ferry-floors`
//! reads this list; `tests/floors/tests/ferry_crates.rs` holds the imports
//! that still run up, each with its reason, and fails on any other).
//! Bottom first:
//! 1. `abi`, `error`, `usererr`, `handle`, `sync`, `info` (but `calls`),
//!    `topology`: the ABI's values and errors, handle tables, the lock,
//!    info objects, what a process topology is.
//! 2. `errhandler`: error handlers.
//! 3. `ffi::args`, `ffi::cell`, `ffi::raw`, `ffi::os`, `ffi::callbacks`,
//!    `ffi::longdouble`, `ffi::large_user_fn`: the raw-memory mechanisms.
//! 4. `state`, `ffi::lookup`: the runtime and its communicator lookup.
//! 5. `datatype`, `info::calls`, `attr`, `reduce`: objects the other
//!    chapters use, and the info calls.
//! 6. `comm`, `env`, `session`, `tools`: communicators, groups, the
//!    environment, sessions, the tools interface.
//! 7. `request`: request objects and their completion.
//! 8. `p2p`, `coll`, `rma`, `mpix`, `comm::idup`, `fint`: the
//!    operations (one-sided ones too), the communicator call that makes a
//!    request, and handles as `int`s.
//! 9. `ffi`: the boundary (the generated shims, the guard, the handlers).
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
pub(crate) mod coll;
pub mod comm;
pub mod datatype;
pub(crate) mod env;
pub mod errhandler;
pub mod error;
#[allow(unsafe_code)]
mod ffi;
pub(crate) mod fint;
pub mod handle;
pub mod info;
pub(crate) mod mpix;
pub(crate) mod p2p;
pub mod reduce;
pub(crate) mod request;
pub(crate) mod rma;
pub(crate) mod session;
pub mod state;
pub mod sync;
pub(crate) mod tools;
pub mod topology;
pub mod usererr;
