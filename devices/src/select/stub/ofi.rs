//! Stub for a build without the `ofi` feature: asking for the libfabric device
//! is a typed error naming the feature and what it needs.

stub_device!("ofi", "libfabric-dev");
