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

use ferry_tests::harness::{Job, Launcher};

const RUNNER: &str = env!("CARGO_BIN_EXE_ferry-conformance");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");
const BOUND: Duration = Duration::from_secs(10);
const TCP: (&str, &str) = ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm");
const SHM: (&str, &str) = ("FERRY_OFI_PROVIDER", "shm");
const OFI: (&str, &str) = ("FERRY_DEVICE", "ofi");

fn killed(scenario: &str, ranks: u32, env: &[(&str, &str)]) {
    let mut job = Job::new(Launcher::Ferryrun, FERRYRUN, ranks, RUNNER)
        .args(&["fault", scenario])
        .envs(env);
    job.timeout = Duration::from_secs(60);
    let f = job.run();
    assert_eq!(
        f.code,
        Some(128 + 9),
        "ferryrun should report rank 1's SIGKILL\n{f}"
    );
    assert!(
        f.stderr.contains("rank 1 was killed by signal 9"),
        "ferryrun did not name the dead rank\n{f}"
    );
    assert!(
        f.elapsed < BOUND + Duration::from_secs(5),
        "the job took {:?}\n{f}",
        f.elapsed
    );
    for r in (0..ranks).filter(|&r| r != 1) {
        let lead = format!("ferry-conformance fault {scenario} rank {r}: ");
        let line = f
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&lead))
            .unwrap_or_else(|| panic!("rank {r} did not report (hung until killed?)\n{f}"));
        let ms: u64 = line
            .strip_prefix("error after ")
            .and_then(|rest| rest.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("rank {r}'s wait did not fail: {line}\n{f}"));
        assert!(
            Duration::from_millis(ms) < BOUND,
            "rank {r} noticed after {ms} ms\n{f}"
        );
        assert!(
            line.contains("rank 1"),
            "rank {r}'s error does not name rank 1: {line}"
        );
    }
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
