//! Stub for a build without the `verbs` feature: asking for the verbs device
//! is a typed error naming the feature and what it needs.

const FEATURE: &str = "verbs";
const NEEDS: &str = "libibverbs-dev and librdmacm-dev";
include!("stub.rs");
