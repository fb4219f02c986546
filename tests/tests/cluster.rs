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

/// A rank leaves on an error, without finalize, while every other rank
/// waits for a message from it. The ranks of the other host never talked
/// to it: over verbs none of them observes it (the ring's successors are
/// the first rank of each host), so they hear of the death from its own
/// host's rank, which sees it through shared memory and tells the rest.
/// Every survivor's wait must fail naming rank 1, and the job must end:
/// before this was handled, the other host's ranks waited until Hydra's
/// job was killed from outside.
#[test]
fn a_rank_leaving_on_an_error_fails_the_waits_on_the_other_host() {
    cluster_mpiexec();
    let runner = env!("CARGO_BIN_EXE_ferry-conformance");
    // Rank 1 asks for a scenario that does not exist: after the setup
    // barrier it reports the error and exits with 1, as a failed check does.
    let script = r#"if [ "$PMI_RANK" = 1 ]; then exec "$0" fault no-such-scenario; else exec "$0" fault die-while-waiting; fi"#;
    let mut job = Job::new(Launcher::Hydra, "", RANKS, "sh")
        .args(&["-c", script, runner])
        .envs(ENV);
    job.timeout = std::time::Duration::from_secs(120);
    let f = job.run();
    for rank in [0, 2, 3] {
        let lead = format!("ferry-conformance fault die-while-waiting rank {rank}: error after ");
        let line = f.stdout.lines().find_map(|l| l.strip_prefix(&lead));
        assert!(
            line.is_some_and(|l| l.contains("rank 1")),
            "rank {rank} did not hear of rank 1's death\n{f}"
        );
    }
    assert!(
        f.elapsed < std::time::Duration::from_secs(60),
        "the job took {:?}\n{f}",
        f.elapsed
    );
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
