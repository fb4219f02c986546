//! # ferry
//!
//! The crate applications depend on. Today it re-exports the engine
//! ([`ferry_core`]) with its in-memory devices; the shared-memory device,
//! bootstrap (PMI-1), `ferryrun` and the typed public API arrive with the
//! shm issue, and the `verbs` and `ofi` features with theirs.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod pmi;

pub use ferry_core::*;
