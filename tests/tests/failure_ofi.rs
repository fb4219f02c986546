//! A rank killed with SIGKILL mid-job, on the libfabric device: every
//! surviving rank's wait returns an error naming the dead rank within the
//! time limit instead of hanging, and `ferryrun` exits with 128 + 9. The
//! same scenarios as `failure.rs` (shm), over `tcp;ofi_rxm` and `shm`, with
//! and without RMA, waiting passively and spinning.
//!
//! A dead peer is noticed through the device's liveness sockets (and, for
//! operations in flight, through the provider's error completions).
#![cfg(feature = "ofi")]

use std::time::Duration;

use ferry_tests::fault::{assert_noticed, run_killed};

const RUNNER: &str = env!("CARGO_BIN_EXE_ferry-conformance");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");
const BOUND: Duration = Duration::from_secs(10);
const TCP: (&str, &str) = ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm");
const SHM: (&str, &str) = ("FERRY_OFI_PROVIDER", "shm");
const OFI: (&str, &str) = ("FERRY_DEVICE", "ofi");

fn killed(scenario: &str, ranks: u32, env: &[(&str, &str)]) {
    let (f, survivors) = run_killed(RUNNER, FERRYRUN, scenario, ranks, env);
    assert_noticed(&f, &survivors, BOUND);
}

#[test]
fn tcp_killed_after_sending_an_rts_of_64_mib() {
    killed("rts-then-die", 3, &[OFI, TCP]);
}

#[test]
fn tcp_killed_in_the_middle_of_a_64_mib_transfer() {
    killed("die-mid-transfer", 3, &[OFI, TCP]);
}

#[test]
fn tcp_killed_in_the_middle_of_a_fragmented_transfer() {
    killed("die-mid-transfer", 3, &[OFI, TCP, ("FERRY_OFI_RMA", "0")]);
}

#[test]
fn tcp_killed_while_the_others_wait_passively() {
    killed(
        "die-while-waiting",
        4,
        &[OFI, TCP, ("FERRY_WAIT_MODE", "passive")],
    );
}

// Not "die-mid-transfer" on shm: the provider copies the 64 MiB with one
// process_vm_readv that finishes within the scenario's 2 ms, so the
// transfer completes (correctly) before the sender dies.
#[test]
fn shm_killed_after_sending_an_rts_of_64_mib() {
    killed("rts-then-die", 3, &[OFI, SHM]);
}

#[test]
fn shm_killed_while_the_others_wait() {
    killed("die-while-waiting", 3, &[OFI, SHM]);
}
