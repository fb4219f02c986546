//! ferry-tests: the device conformance suite and the multi-process tests.
//!
//! # How it fits together
//! - [`bodies`]: the test bodies. Each is a function run by *every rank* of
//!   a real job, given that rank's [`World`](ferry::World) (through
//!   [`bodies::Ctx`]). Bodies verify data byte for byte, skip by capability
//!   ([`bodies::Verdict::Skip`]) and fail when a device's claimed
//!   capabilities disagree with what it does.
//! - `src/bin/ferry-conformance.rs`: the runner every rank executes,
//!   `ferry-conformance <body>`: it starts ferry, runs the body and prints
//!   one result line per rank.
//! - [`harness`]: launches the runner through `ferryrun` or
//!   `mpiexec.hydra`, with a timeout, checks every rank's line and that
//!   `/dev/shm` holds nothing of the job afterwards.
//! - [`conformance_suite!`]: instantiates one `#[test]` per body for a
//!   device, in the manner of rustls' `provider_ring!`:
//!
//! ```text
//! ferry_tests::conformance_suite!(shm,
//!     env = [("FERRY_DEVICE", "shm")],
//!     ranks = [2, 4, 8],
//!     hydra = [2, 4],
//!     expect = [],
//! );
//! ```
//!
//! The ofi and verbs issues instantiate the same macro with their own
//! `FERRY_DEVICE`; nothing in the bodies names a device.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bodies;
pub mod fault;
pub mod harness;

/// Calls `$callback!($($args)* ; body, body, ...)` with the name of every
/// conformance body: the one list that both the runner's registry and
/// [`conformance_suite!`] are generated from, so they cannot drift apart.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_conformance_bodies {
    ($callback:path ; $($args:tt)*) => {
        $callback! { $($args)* ;
            p2p_blocking,
            p2p_nonblocking,
            protocol_selection,
            rdma_get,
            fragmented,
            segmented,
            any_source_order,
            blocking_recv_order,
            truncation,
            issend_sync,
            mprobe_threads,
            arecv_mixed,
            get_status_some,
            request_empty,
            cancel_recv,
            persistent,
            batched,
            unexpected_flood,
            threads4,
            passive_wait,
            hybrid_drives_transfers,
            collectives,
            communicators,
            one_sided,
            overlap,
        }
    };
}

/// Generates one `#[test]` per conformance body; see [`conformance_suite!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($suite:ident ; $($body:ident),* $(,)?) => {
        $(
            #[test]
            fn $body() {
                $suite().run(stringify!($body));
            }
        )*
    };
}

/// Instantiates the conformance suite for one device: a module `$name`
/// with one `#[test]` per body. Each test runs the body as a real job
/// through `ferryrun` for every count in `ranks`, then through
/// `mpiexec.hydra` for every count in `hydra` (skipped, loudly, when Hydra
/// is not installed).
///
/// - `env`: variables every rank gets (pick the device here).
/// - `ranks`: rank counts for `ferryrun`; `hydra` (optional): rank counts
///   for `mpiexec.hydra`.
/// - `expect`: capabilities the instantiation guarantees, as
///   `("rdma_get", false)`; the `protocol_selection` body fails if the
///   device reports otherwise (so a "no CMA" instantiation cannot silently
///   test the CMA path).
///
/// Must be used from an integration test of the `ferry-tests` package: the
/// tests find the runner through `CARGO_BIN_EXE_ferry-conformance`.
#[macro_export]
macro_rules! conformance_suite {
    (
        $name:ident,
        env = [$(($key:expr, $value:expr)),* $(,)?],
        ranks = [$($n:expr),* $(,)?]
        $(, hydra = [$($h:expr),* $(,)?])?
        $(, expect = [$(($cap:expr, $want:expr)),* $(,)?])?
        $(,)?
    ) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn suite() -> $crate::harness::Suite {
                $crate::harness::Suite {
                    name: stringify!($name),
                    runner: env!("CARGO_BIN_EXE_ferry-conformance"),
                    ferryrun: env!("CARGO_BIN_EXE_ferry-tests-ferryrun"),
                    env: vec![$(($key, $value)),*],
                    ranks: vec![$($n),*],
                    hydra: vec![$($($h),*)?],
                    expect: vec![$($(($cap, $want)),*)?],
                }
            }

            $crate::__with_conformance_bodies!($crate::__conformance_tests ; suite);
        }
    };
}
