//! Multi-process smoke tests of the public API: `devices/examples/api_smoke.rs`
//! run by `ferryrun -n 2` over the shm device, in each wait mode, with and
//! without CMA.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn ferryrun() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ferry-tests-ferryrun"))
}

/// The example binary, (re)built once per test run: `cargo test --test
/// api_multiproc` alone does not build examples, and a stale one would test
/// old code. It is built in a target directory of its own, so that this
/// build never rewrites artifacts the surrounding `cargo test` is still
/// using (its doctests, say).
fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let bin_dir = ferryrun().parent().expect("bin dir").to_path_buf();
        let release = bin_dir.ends_with("release");
        let target_dir = bin_dir.parent().expect("target dir").join("api-examples");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "ferry", "--examples", "--target-dir"])
            .arg(&target_dir);
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo build --examples");
        assert!(status.success(), "building the examples failed");
        target_dir
            .join(if release { "release" } else { "debug" })
            .join("examples")
    });
    dir.join(name)
}

fn run_smoke(mode: &str, env: &[(&str, &str)]) {
    let out = Command::new(ferryrun())
        // --label: ferryrun relays whole lines, so the two ranks' reports
        // cannot interleave mid-line.
        .args(["-n", "2", "--label", "--timeout", "120"])
        .arg(example("api_smoke"))
        .arg(mode)
        .envs(env.iter().copied())
        .output()
        .expect("ferryrun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{mode} {env:?}: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    for rank in 0..2 {
        assert!(
            stdout.contains(&format!("api_smoke {mode} ok rank {rank}")),
            "{mode} {env:?}: rank {rank} did not report\n{stdout}\n{stderr}"
        );
    }
    // Every sleep ended through an fd (device or kick), never the timeout.
    for line in stderr.lines().filter(|l| l.contains("wake-ups")) {
        assert!(line.ends_with("timeout 0"), "{mode} {env:?}: {line}");
    }
}

#[test]
fn pingpong_eager_and_rendezvous_hybrid() {
    run_smoke("pingpong", &[]);
}

#[test]
fn pingpong_passive() {
    run_smoke(
        "pingpong",
        &[("FERRY_WAIT_MODE", "passive"), ("FERRY_SPIN_US", "0")],
    );
}

#[test]
fn pingpong_spin() {
    run_smoke("pingpong", &[("FERRY_WAIT_MODE", "spin")]);
}

#[test]
fn pingpong_without_cma() {
    run_smoke("pingpong", &[("FERRY_SHM_CMA", "0")]);
}

#[test]
fn pingpong_rendezvous_put_and_fragments() {
    // Put reads the sender's buffer through the device, which for scoped and
    // raw sends is a read-only loan: it must never be asked for `&mut`.
    run_smoke("pingpong", &[("FERRY_RNDV_MODE", "put")]);
    run_smoke("pingpong", &[("FERRY_RNDV_MODE", "frag")]);
}

#[test]
fn pingpong_small_eager_limit() {
    run_smoke(
        "pingpong",
        &[("FERRY_EAGER_LIMIT", "64"), ("FERRY_RNDV_THRESHOLD", "1M")],
    );
}

#[test]
fn four_threads_per_rank_passive() {
    run_smoke("threads", &[("FERRY_WAIT_MODE", "passive")]);
}

#[test]
fn four_threads_per_rank_hybrid() {
    run_smoke("threads", &[]);
}

#[test]
fn logs_carry_a_rank_span_and_counters_print_at_finalize() {
    let out = Command::new(ferryrun())
        .args(["-n", "2", "--timeout", "120"])
        .arg(example("api_smoke"))
        .env("FERRY_LOG", "ferry=debug")
        .env("FERRY_PRINT_COUNTERS", "1")
        .output()
        .expect("ferryrun");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for rank in 0..2 {
        assert!(
            stderr.contains(&format!(
                "rank{{rank={rank}}}: ferry::select: ferry initialised"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("ferry rank {rank}: device shm")),
            "{stderr}"
        );
    }
}

#[test]
fn a_bad_variable_fails_the_job_with_its_name() {
    let out = Command::new(ferryrun())
        .args(["-n", "2", "--timeout", "60"])
        .arg(example("api_smoke"))
        .env("FERRY_WAIT_MODE", "sometimes")
        .output()
        .expect("ferryrun");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FERRY_WAIT_MODE"), "{stderr}");
}

#[test]
fn the_loopback_cannot_serve_two_ranks() {
    let out = Command::new(ferryrun())
        .args(["-n", "2", "--timeout", "60"])
        .arg(example("api_smoke"))
        .env("FERRY_DEVICE", "loopback")
        .output()
        .expect("ferryrun");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("device \"loopback\" cannot serve this job"),
        "{stderr}"
    );
}

/// A waiter blocked on a peer that vanishes returns a peer error promptly
/// (the shm device watches its peers' pidfds in its wait fd).
#[test]
fn a_dead_peer_ends_a_blocked_wait_with_an_error() {
    let smoke = example("api_smoke");
    for mode in ["passive", "hybrid", "spin"] {
        let start = std::time::Instant::now();
        let out = Command::new(ferryrun())
            .args(["-n", "2", "--timeout", "60"])
            .arg(&smoke)
            .arg("peer-death")
            .env("FERRY_WAIT_MODE", mode)
            .output()
            .expect("ferryrun");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("api_smoke peer-death ok rank 0"),
            "{mode}: {stdout}\n{stderr}"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{mode}: too slow"
        );
    }
}

/// Many runs of the threaded exchange in passive mode: a lost wake-up shows
/// as a hang (killed by `--timeout`). Run by `ci/test.sh` with `--ignored`.
#[test]
#[ignore = "stress: 20 jobs"]
fn stress_four_threads_per_rank_passive() {
    for _ in 0..20 {
        run_smoke("threads", &[("FERRY_WAIT_MODE", "passive")]);
    }
}
