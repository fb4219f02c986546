//! Jobs that span "nodes": `FERRY_RANKS_PER_NODE=2` splits this machine,
//! so ranks 0–1 share a node (and shared memory), 2–3 another, and pairs
//! across the split need the network device.
//!
//! - Every build: without a network device asked for or compiled in, such
//!   a job fails at setup with the typed error that says so.
//! - With the `ofi` feature: the whole conformance suite runs with
//!   `FERRY_DEVICE=auto` over shm inside a node and libfabric's
//!   `tcp;ofi_rxm` across, in one engine (`shm+ofi`).

#[test]
fn a_split_job_on_shm_alone_fails_with_a_typed_setup_error() {
    // `--label`: whole lines only, so the ranks' reports cannot interleave
    // inside the message checked below.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferry-tests-ferryrun"))
        .args(["-n", "4", "--label", "--timeout", "60"])
        .arg(env!("CARGO_BIN_EXE_ferry-conformance"))
        .arg("p2p_blocking")
        .env("FERRY_DEVICE", "shm")
        .env("FERRY_RANKS_PER_NODE", "2")
        .output()
        .expect("ferryrun starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the job must fail\n{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("2 of 4 ranks run on other nodes: a network device is needed")),
        "{stderr}"
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
