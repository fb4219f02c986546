//! Jobs across hosts: the conformance suite (with its collective and
//! communicator bodies) on a cluster of two hosts, started by MPICH's Hydra
//! through its ssh launcher (`ci/cluster/mpiexec`, which the scripts pass in
//! `FERRY_TEST_HYDRA`), 2 ranks per host. `FERRY_DEVICE=auto` with no
//! `FERRY_RANKS_PER_NODE`: ferry finds the hosts apart by itself and runs
//! shared memory inside each host and the network device across.
//!
//! - With `ofi`: `ci/cluster.sh`'s hosts, each a network and UTS namespace
//!   of its own, libfabric's `tcp;ofi_rxm` across the veth link.
//! - With `verbs`: the Soft-RoCE VM's hosts (`ci/vm/cluster-hosts.sh`, run
//!   by `ci/verbs.sh`), each a UTS namespace with an rxe device of its own
//!   (the VM kernel's rxe sends only from the initial network namespace, so
//!   these hosts share it).
//!
//! Built only with the `cluster` feature and a network device. With both,
//! the network device is verbs, as `FERRY_DEVICE=auto` picks it when it is
//! built (`ci/verbs.sh` builds both, for its ofi stage).
#![cfg(all(feature = "cluster", any(feature = "ofi", feature = "verbs")))]

use std::collections::BTreeSet;
use std::path::Path;

use ferry_tests::harness::{hydra_program, Job, Launcher, HYDRA_VAR};

const RANKS: u32 = 4;

/// The network device between the hosts.
#[cfg(all(feature = "ofi", not(feature = "verbs")))]
const NET: &str = "ofi";
#[cfg(feature = "verbs")]
const NET: &str = "verbs";

/// What every rank of a cluster job gets.
#[cfg(all(feature = "ofi", not(feature = "verbs")))]
const ENV: &[(&str, &str)] = &[
    ("FERRY_DEVICE", "auto"),
    ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm"),
];
#[cfg(feature = "verbs")]
const ENV: &[(&str, &str)] = &[("FERRY_DEVICE", "auto")];

/// The cluster's `mpiexec`, or a panic that says how to get one.
fn cluster_mpiexec() -> String {
    assert!(
        std::env::var_os(HYDRA_VAR).is_some(),
        "the cluster tests run on the hosts ci/cluster.sh makes (it sets {HYDRA_VAR}); \
         run `ci/cluster.sh`"
    );
    hydra_program()
}

#[test]
fn a_job_spans_hosts_with_shm_inside_and_the_network_across() {
    cluster_mpiexec();
    let runner = Path::new(env!("CARGO_BIN_EXE_ferry-conformance"));
    let info = runner.with_file_name("ferry-info");
    assert!(
        info.exists(),
        "{} is not built (cargo build -p ferry --features {NET} --bin ferry-info)",
        info.display()
    );
    let f = Job::new(Launcher::Hydra, "", RANKS, &info.to_string_lossy())
        .envs(ENV)
        .run();
    assert_eq!(f.code, Some(0), "ferry-info failed\n{f}");
    // " rank  host  pid  device  peers by device", then one row per rank.
    let rows: Vec<Vec<&str>> = f
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() >= 5 && w[0].parse::<u32>().is_ok())
        .collect();
    assert_eq!(rows.len(), RANKS as usize, "one row per rank\n{f}");
    let hosts: BTreeSet<&str> = rows.iter().map(|w| w[1]).collect();
    assert_eq!(hosts.len(), 2, "the ranks run on two hosts\n{f}");
    for w in &rows {
        let device = format!("shm+{NET}");
        assert_eq!(
            w[3], device,
            "rank {} runs shm inside, {NET} across\n{f}",
            w[0]
        );
        let peers = w[4..].join(" ");
        let want = if w[0].parse::<u32>().unwrap_or(0) < 2 {
            format!("shm 0-1, {NET} 2-3")
        } else {
            format!("{NET} 0-1, shm 2-3")
        };
        assert_eq!(peers, want, "rank {}'s routes\n{f}", w[0]);
    }
}

#[cfg(all(feature = "ofi", not(feature = "verbs")))]
ferry_tests::conformance_suite!(
    hosts_shm_ofi,
    env = [
        ("FERRY_DEVICE", "auto"),
        ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm"),
    ],
    ranks = [],
    hydra = [RANKS],
);

#[cfg(feature = "verbs")]
ferry_tests::conformance_suite!(
    hosts_shm_verbs,
    env = [("FERRY_DEVICE", "auto")],
    ranks = [],
    hydra = [RANKS],
);
