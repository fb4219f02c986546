//! The bindgen output for libfabric's headers (see `build.rs`). Static
//! inline functions link to the `*__extern` wrappers of the compiled shim.
//! Only [`crate::ffi`] calls the functions; the rest of the crate uses the
//! constants and plain types.

#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// `FI_ADDR_UNSPEC` / `FI_ADDR_NOTAVAIL` (`((uint64_t) -1)`: a cast bindgen
/// cannot evaluate).
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;

/// `FI_VERSION(major, minor)`, a function-like macro.
pub const fn make_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}
