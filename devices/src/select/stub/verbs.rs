//! Stub for a build without the `verbs` feature: asking for the verbs device
//! is a typed error naming the feature and what it needs.

stub_device!("verbs", "libibverbs-dev and librdmacm-dev");
