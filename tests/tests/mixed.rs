//! Jobs that span "nodes": `FERRY_RANKS_PER_NODE=2` splits this machine,
//! so ranks 0–1 share a node (and shared memory), 2–3 another, and pairs
//! across the split need the network device.
//!
//! - Every build: without a network device asked for or compiled in, such
//!   a job fails at setup with the typed error that says so.
//! - With the `ofi` feature: the whole conformance suite runs with
//!   `FERRY_DEVICE=auto` over shm inside a node and libfabric's
//!   `tcp;ofi_rxm` across, in one engine (`shm+ofi`).

use ferry_tests::harness::{Job, Launcher};

#[test]
fn a_split_job_on_shm_alone_fails_with_a_typed_setup_error() {
    let f = Job::new(
        Launcher::Ferryrun,
        env!("CARGO_BIN_EXE_ferry-tests-ferryrun"),
        4,
        env!("CARGO_BIN_EXE_ferry-conformance"),
    )
    .args(&["p2p_blocking"])
    .envs(&[("FERRY_DEVICE", "shm"), ("FERRY_RANKS_PER_NODE", "2")])
    .run();
    assert_ne!(f.code, Some(0), "the job must fail\n{f}");
    assert!(
        f.stderr
            .contains("2 of 4 ranks run on other nodes: a network device is needed"),
        "{f}"
    );
}

#[cfg(feature = "ofi")]
ferry_tests::conformance_suite!(
    shm_ofi_tcp,
    env = [
        ("FERRY_DEVICE", "auto"),
        ("FERRY_RANKS_PER_NODE", "2"),
        ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm"),
    ],
    ranks = [4],
    hydra = [4],
);
