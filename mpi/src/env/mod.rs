//! Environmental management (MPI 4.1 chapter 9): starting and ending the
//! library, versions, clocks, memory, and errors (codes, classes, strings
//! and the handlers that raise them).

pub(crate) mod environment;
pub(crate) mod errors;
pub(crate) mod fortran;
