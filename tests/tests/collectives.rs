//! The collective and communicator bodies at the rank counts the
//! conformance suites skip (1, 3, 5, 7: non-powers of two, and a
//! communicator of one), on shared memory, through `ferryrun` and
//! `mpiexec.hydra`; and with the node collectives off
//! (`FERRY_COLL_NODE=0`) under each forced point-to-point algorithm, so
//! every algorithm also runs between real processes. (The conformance
//! suites run both bodies on every device at their usual counts.)

use ferry_tests::harness::Suite;

fn suite(
    name: &'static str,
    env: Vec<(&'static str, &'static str)>,
    ranks: Vec<u32>,
    hydra: Vec<u32>,
) -> Suite {
    Suite {
        name,
        runner: env!("CARGO_BIN_EXE_ferry-conformance"),
        ferryrun: env!("CARGO_BIN_EXE_ferry-tests-ferryrun"),
        env,
        ranks,
        hydra,
        expect: Vec::new(),
    }
}

#[test]
fn collectives_on_odd_rank_counts() {
    suite(
        "coll_odd",
        vec![("FERRY_DEVICE", "shm")],
        vec![1, 3, 5, 7],
        vec![3],
    )
    .run("collectives");
}

#[test]
fn communicators_on_odd_rank_counts() {
    suite(
        "comm_odd",
        vec![("FERRY_DEVICE", "shm")],
        vec![1, 3, 5, 7],
        vec![3],
    )
    .run("communicators");
}

#[test]
fn collectives_point_to_point_with_each_forced_algorithm() {
    let forced: [(&str, &str); 8] = [
        ("FERRY_COLL_ALLREDUCE", "recursive_doubling"),
        ("FERRY_COLL_ALLREDUCE", "rabenseifner"),
        ("FERRY_COLL_ALLREDUCE", "ring"),
        ("FERRY_COLL_BCAST", "scatter_allgather"),
        ("FERRY_COLL_ALLGATHER", "bruck"),
        ("FERRY_COLL_ALLGATHER", "ring"),
        ("FERRY_COLL_ALLTOALL", "bruck"),
        ("FERRY_COLL_ALLTOALL", "pairwise"),
    ];
    for (var, value) in forced {
        let env = vec![
            ("FERRY_DEVICE", "shm"),
            ("FERRY_COLL_NODE", "0"),
            (var, value),
        ];
        eprintln!("{var}={value}");
        suite("coll_p2p", env, vec![3, 4], vec![]).run("collectives");
    }
}
