//! ferry-tests: the device conformance suite (one set of test bodies,
//! instantiated per device) and the multi-process tests.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
