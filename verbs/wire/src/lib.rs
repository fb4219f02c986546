//! # ferry-verbs-wire: the verbs device's wire formats
//!
//! What `ferry-verbs` reads from peers, decoded and validated here, in a
//! crate that needs no libibverbs, so that the fuzz targets (`fuzz/`) and
//! plain `cargo test` reach every decoder:
//! - [`imm`]: the 32-bit immediate of every eager SEND;
//! - [`addr`]: the port and QP addresses each rank publishes through the
//!   bootstrap key-value store at setup (the RC form, kept for tools);
//! - [`connect`]: the UD address published at setup and the datagrams of
//!   the lazy-connection handshake.
//!
//! Every decoder returns a typed error for malformed input and never
//! panics.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod addr;
pub mod connect;
pub mod imm;
