//! ferry-bench: the OSU-style benchmark program (`ferry-bench`, see
//! [`cli`]) and the helpers shared by the criterion micro-benchmarks in
//! `benches/`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use ferry_core::loopback::Loopback;
use ferry_core::{Config, Engine};

mod arecv;
mod bibw;
mod bw;
pub mod cli;
mod coll;
pub mod inproc;
pub mod job;
mod latency;
mod nbc;
mod passive;
mod report;
mod request;
mod rma;
mod wait;

/// A single-rank engine over the loopback device, as the benches use it.
///
/// # Panics
/// Never: rank 0 of a job of 1 is always valid.
pub fn loopback_engine(config: Config) -> Engine<Loopback> {
    Engine::new(0, 1, Loopback::new(0), config).expect("rank 0 of 1 is valid")
}
