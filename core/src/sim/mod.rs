//! Deterministic simulation: N ranks over in-memory links, for testing the
//! engine without processes, sockets or clocks (after quinn's `Pair`).
//!
//! - [`Network`] holds the links, the simulated time, the RDMA regions and
//!   the failure state, shared by all devices as `Rc<RefCell<Network>>`.
//! - [`SimDevice`] is one rank's [`Device`](crate::Device) on it.
//! - [`NetConfig`] chooses the ranks, caps, delay range, link capacity and
//!   seed; the same seed replays the same run.
//! - [`SimRng`] is the seeded generator behind every random choice, for tests
//!   that want their own reproducible randomness.
//!
//! ```
//! use ferry_core::device::{Device, Incoming, OpToken, Sent, Sink};
//! use ferry_core::sim::{NetConfig, Network};
//! use ferry_core::{Error, Rank};
//!
//! #[derive(Default)]
//! struct Headers(Vec<Vec<u8>>);
//! impl Sink for Headers {
//!     fn packet<I: Incoming>(&mut self, _from: Rank, p: I) {
//!         self.0.push(p.header().to_vec());
//!     }
//!     fn rdma_done(&mut self, _: OpToken, _: Result<(), Error>) {}
//!     fn peer_failed(&mut self, _: Rank, _: Error) {}
//! }
//!
//! let net = Network::new(NetConfig::new(2).with_delay(2, 2));
//! let mut devices = Network::devices(&net);
//! assert_eq!(devices[0].send(1, b"hi", &[]).unwrap(), Sent::Done);
//! let mut sink = Headers::default();
//! assert_eq!(devices[1].progress(&mut sink).unwrap(), 0, "still on the wire");
//! net.borrow_mut().advance_by(2);
//! assert_eq!(devices[1].progress(&mut sink).unwrap(), 1);
//! assert_eq!(sink.0, vec![b"hi".to_vec()]);
//! assert!(net.borrow().is_idle());
//! ```

mod config;
mod device;
mod driver;
mod network;
mod node;
mod rdma;
mod rng;
#[cfg(test)]
mod tests;

pub use config::{LinkStats, NetConfig, RdmaStats};
pub use device::SimDevice;
pub use driver::{Sim, SimPark};
pub use network::Network;
pub use rng::SimRng;
