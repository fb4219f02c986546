//! Stub for a build without the `ofi` feature: asking for the libfabric device
//! is a typed error naming the feature and what it needs.

const FEATURE: &str = "ofi";
const NEEDS: &str = "libfabric-dev";
include!("stub.rs");
