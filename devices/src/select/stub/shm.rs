//! Stub for a build without the `shm` feature: asking for the shared-memory device
//! is a typed error naming the feature and what it needs.

stub_device!("shm", "nothing but Rust");
