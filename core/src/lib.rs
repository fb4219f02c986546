//! # ferry-core
//!
//! The sans-IO heart of ferry: requests, tag matching, the eager and
//! rendezvous protocols, the completion family, and the device interface
//! (the ADI). It never touches a socket, a clock or an environment variable;
//! devices feed it events and it tells them what to send.
//!
//! Most users want the `ferry` crate, which adds real devices, bootstrap and a
//! launcher. Use ferry-core directly to write a device, or to test protocol
//! logic deterministically with the `sim` harness (behind the test-only
//! `__testkit` feature).
//!
//! ## Quick start
//! ```
//! use ferry_core::{loopback::Loopback, Buf, Config, Engine, SpinPark};
//!
//! let mut engine = Engine::new(0, 1, Loopback::new(0), Config::default()).unwrap();
//! let recv = engine.irecv(0, 7, 0, Buf::zeroed(5).unwrap()).unwrap();
//! let send = engine.isend(0, 7, 0, Buf::from(&b"hello"[..])).unwrap();
//! assert!(send.request.is_empty(), "an eager send completes inside isend");
//! let mut request = recv.request;
//! let done = engine.wait(&mut request, &mut SpinPark).unwrap();
//! assert_eq!(&done.buf.unwrap()[..], b"hello");
//! assert!(request.is_null());
//! ```
//!
//! ## Map
//! - [`Engine`]: posting, progress and the completion family.
//! - [`device`]: the device contract; [`loopback`] implements it in memory.
//! - [`wire`]: the protocol headers and their validating decoder.
//! - [`coll`]: collectives as schedules; [`reduction`]: the element types,
//!   reduction ops and their kernels.
//! - [`rma`]: one-sided communication as messages: the requests and what a
//!   target does with them.
//! - [`Request`], [`Message`]: generational handles, with `NULL` and `EMPTY`.
//! - [`Buf`]: owned buffers that move through the engine (soundness under
//!   `mem::forget`).
//!
//! ## Floors
//! A module uses only modules on its own floor or below it, through
//! `use crate::…` or a `crate::` path (the crate root's re-exports count as
//! the module they come from). `ferry-floors` checks it in CI, reading this
//! list. Bottom first:
//! 1. `envelope`, `error`, `reduction`: the words every module speaks:
//!    ranks, tags and contexts; errors; element types and reductions.
//! 2. `handle`, `buffer`, `status`, `wire`, `config`, `settings`,
//!    `shared_files`, `bootstrap`: plain values: handles, buffers,
//!    statuses, the wire headers, the engine's configuration and the
//!    `FERRY_*` settings, the names of a job's files, the bootstrap's
//!    contract.
//! 3. `slab`, `matching`, `auth`, `device`: the engine's stores, tag
//!    matching, the side channels' authentication, the device contract.
//! 4. `protocol`, `coll`, `rma`, `recorder`, `loopback`: what is built on
//!    the device contract: the protocol table, collective schedules, the
//!    one-sided requests' target side, the recording sink and the
//!    in-memory device.
//! 5. `engine`: posting, progress and completion.
//! 6. `sim`, `testkit`: the simulation harness and the device test kit
//!    (test-only).
//!
//! ## Features
//! - `__testkit` (test-only, not for users): the simulation network
//!   (`sim`), the recording sink (`recorder`) and the device-contract test
//!   kit (`testkit`, `device_contract_tests!`). Device crates enable it in
//!   their `[dev-dependencies]`; a user's build does not ship them.
//!
//! ## Safety
//! `#![forbid(unsafe_code)]`. Devices that need `unsafe` live in their own
//! crates.
//!
//! ## Thread safety
//! An [`Engine`] is a plain `&mut self` state machine. `ferry` shares one
//! between threads behind its own lock and does the OS-level sleeping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod bootstrap;
pub mod buffer;
pub mod coll;
pub mod config;
pub mod device;
pub mod engine;
pub mod envelope;
pub mod error;
pub mod handle;
pub mod loopback;
pub mod matching;
pub mod protocol;
#[cfg(any(test, feature = "__testkit"))]
pub mod recorder;
pub mod reduction;
pub mod rma;
pub mod settings;
pub mod shared_files;
#[cfg(any(test, feature = "__testkit"))]
pub mod sim;
mod slab;
pub mod status;
#[cfg(any(test, feature = "__testkit"))]
pub mod testkit;
pub mod wire;

pub use bootstrap::{Bootstrap, BootstrapError, ThreadBoot};
pub use buffer::{Attachment, Buf, ByteStorage, Lender, LentView, Segments};
pub use config::{AnyOrder, Config, RndvMode};
pub use device::{Caps, Device};
pub use engine::{
    Any, Arrival, Check, CheckMode, CollStarted, Completion, Counters, Direct, DirectRecv, Engine,
    Outcount, Park, SendMode, SpinPark, Started, StatusAny,
};
pub use envelope::{
    ContextId, Envelope, Pattern, Rank, Tag, ANY_SOURCE, ANY_TAG, PROC_NULL, ROOT, TAG_UB,
};
pub use error::{DeviceError, Error, Fault, PeerError, Result, UsageError};
pub use handle::{Message, Request};
pub use status::Status;
