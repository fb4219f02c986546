//! Stub for a build without the `shm` feature: asking for the shared-memory device
//! is a typed error naming the feature and what it needs.

const FEATURE: &str = "shm";
const NEEDS: &str = "nothing but Rust";
include!("stub.rs");
