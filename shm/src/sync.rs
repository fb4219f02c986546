//! The atomics facade: loom's model-checked atomics under `--cfg loom`, the
//! standard ones otherwise (the pattern of tokio and crossbeam).
//!
//! Only the queue algorithm's *tests* instantiate it with loom types: the
//! algorithm ([`crate::queue`]) is generic over [`crate::queue::Link`], which
//! both atomic families implement, while the segment in shared memory always
//! holds `std` atomics (loom's cannot live in an mmap).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU32;
