//! A rank killed with SIGKILL mid-job: every surviving rank's wait
//! returns an error within the time limit instead of hanging, `ferryrun`
//! exits non-zero (128 + 9, rank 1's death being the first failure), and
//! `/dev/shm` holds nothing of the job afterwards (checked by the
//! harness, which also fails if `ferryrun` had to sweep a file the device
//! left behind).
//!
//! The survivors block SIGTERM, but `ferryrun` sends SIGKILL two seconds
//! after the first failure, so in practice they must notice the death
//! within two seconds; the bound asserted on their own report is the
//! issue's ten.

use std::time::Duration;

use ferry_tests::fault::{assert_noticed, run_killed};

const RUNNER: &str = env!("CARGO_BIN_EXE_ferry-conformance");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");
const BOUND: Duration = Duration::from_secs(10);

fn killed(scenario: &str, ranks: u32, env: &[(&str, &str)]) {
    let (f, survivors) = run_killed(RUNNER, FERRYRUN, scenario, ranks, env);
    assert_noticed(&f, &survivors, BOUND);
}

#[test]
fn killed_after_sending_an_rts_of_64_mib() {
    killed("rts-then-die", 3, &[]);
}

#[test]
fn killed_after_sending_an_rts_of_64_mib_without_cma() {
    killed("rts-then-die", 3, &[("FERRY_SHM_CMA", "0")]);
}

#[test]
fn killed_while_the_others_wait_passively() {
    killed("die-while-waiting", 4, &[("FERRY_WAIT_MODE", "passive")]);
}

#[test]
fn killed_while_the_others_wait_hybrid() {
    killed("die-while-waiting", 3, &[]);
}

#[test]
fn killed_in_the_middle_of_a_64_mib_transfer() {
    killed("die-mid-transfer", 3, &[]);
}

#[test]
fn killed_in_the_middle_of_a_64_mib_transfer_without_cma() {
    killed("die-mid-transfer", 3, &[("FERRY_SHM_CMA", "0")]);
}

#[test]
fn killed_inside_a_ring_allreduce() {
    // Point-to-point, by the ring: most survivors are not rank 1's
    // neighbours.
    killed(
        "die-in-allreduce",
        5,
        &[("FERRY_COLL_NODE", "0"), ("FERRY_COLL_ALLREDUCE", "ring")],
    );
}

#[test]
fn killed_inside_an_allreduce_by_recursive_doubling() {
    killed(
        "die-in-allreduce",
        4,
        &[
            ("FERRY_COLL_NODE", "0"),
            ("FERRY_COLL_ALLREDUCE", "recursive_doubling"),
        ],
    );
}

#[test]
fn killed_inside_a_shared_memory_allreduce() {
    killed("die-in-allreduce", 4, &[]);
}

#[test]
fn killed_inside_the_shared_memory_barrier() {
    killed("die-in-node-barrier", 4, &[]);
}

#[test]
fn killed_inside_a_shared_memory_ibarrier() {
    killed("die-in-node-ibarrier", 4, &[]);
}

#[test]
fn killed_before_a_barrier() {
    killed("die-before-barrier", 4, &[]);
}

#[test]
fn any_source_receives_fail_when_a_member_dies() {
    killed("any-source-after-death", 3, &[]);
}

#[test]
fn a_target_killed_inside_a_lock_epoch_fails_the_flushes() {
    killed("rma-target-dies-in-lock", 3, &[]);
}

#[test]
fn an_origin_killed_holding_an_exclusive_lock_leaves_it_to_the_others() {
    killed("rma-origin-dies-holding-lock", 4, &[]);
}
