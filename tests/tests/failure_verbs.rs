//! The failure scenarios of `failure.rs` on the verbs device (feature
//! `verbs`; run inside the Soft-RoCE VM by `ci/verbs.sh`): rank 1 is killed
//! with SIGKILL, and every survivor's wait must fail with an error naming
//! rank 1, well before `ferryrun`'s SIGKILL two seconds after the death.
//!
//! On verbs a death is seen as retry-exceeded on the QP to the dead rank:
//! by the next operation towards it, or by the device's keepalive probe
//! when the survivor only waits. Short timeouts make that fast here:
//! `FERRY_VERBS_TIMEOUT=14` (67 ms) × (3 + 1) tries, probes every 200 ms.
#![cfg(feature = "verbs")]

use std::time::Duration;

use ferry_tests::fault::run_killed;

const RUNNER: &str = env!("CARGO_BIN_EXE_ferry-conformance");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");
/// ferryrun kills the survivors 2 s after the death: they must report first.
const BOUND: Duration = Duration::from_secs(2);

fn killed(scenario: &str, ranks: u32, extra: &[(&str, &str)]) {
    let mut env = vec![
        ("FERRY_DEVICE", "verbs"),
        ("FERRY_VERBS_TIMEOUT", "14"),
        ("FERRY_VERBS_RETRY", "3"),
        ("FERRY_VERBS_KEEPALIVE_MS", "200"),
    ];
    env.extend_from_slice(extra);
    let (f, survivors) = run_killed(RUNNER, FERRYRUN, scenario, ranks, &env);
    for s in &survivors {
        let (r, line) = (s.rank, &s.line);
        assert!(
            s.noticed_after < BOUND,
            "rank {r} noticed after {:?}\n{f}",
            s.noticed_after
        );
        // A wait on a transfer from rank 1 fails with the transfer's own
        // error, the RDMA READ's completion status (12 =
        // IBV_WC_RETRY_EXC_ERR: the peer is gone); other waits fail with
        // the peer error naming rank 1.
        assert!(
            line.contains("rank 1") || line.contains("completion status 12"),
            "rank {r}'s error names neither rank 1 nor retry-exceeded: {line}"
        );
        eprintln!("verbs fault {scenario}: rank {r}: {line}");
    }
}

#[test]
fn killed_after_sending_an_rts_of_64_mib() {
    killed("rts-then-die", 3, &[]);
}

#[test]
fn killed_while_the_others_wait_passively() {
    killed("die-while-waiting", 4, &[("FERRY_WAIT_MODE", "passive")]);
}

#[test]
fn killed_in_the_middle_of_a_64_mib_transfer() {
    killed("die-mid-transfer", 3, &[]);
}
