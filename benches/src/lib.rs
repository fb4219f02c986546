//! ferry-bench: shared helpers for the criterion micro-benchmarks in
//! `benches/` (and, with the benchmark issue, the OSU-style programs).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use ferry_core::loopback::Loopback;
use ferry_core::{Config, Engine};

/// A single-rank engine over the loopback device, as the benches use it.
///
/// # Panics
/// Never: rank 0 of a job of 1 is always valid.
pub fn loopback_engine(config: Config) -> Engine<Loopback> {
    Engine::new(0, 1, Loopback::new(0), config).expect("rank 0 of 1 is valid")
}
