//! Long stress runs, `#[ignore]`d in a plain `cargo test` and run by
//! `ci/test.sh` in release (`cargo test --release -- --ignored`): the load
//! bodies at ten times their size (a flood of a million messages), and
//! every failure scenario many times over, to catch rare hangs.

use ferry_tests::bodies::SCALE_VAR;
use ferry_tests::harness::{Job, Launcher, Suite};

const RUNNER: &str = env!("CARGO_BIN_EXE_ferry-conformance");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");

fn scaled(name: &'static str, cma: &'static str) -> Suite {
    Suite {
        name,
        runner: RUNNER,
        ferryrun: FERRYRUN,
        env: vec![
            ("FERRY_DEVICE", "shm"),
            ("FERRY_SHM_CMA", cma),
            (SCALE_VAR, "10"),
        ],
        ranks: vec![2, 4, 8],
        hydra: vec![],
        expect: vec![],
    }
}

#[test]
#[ignore = "stress: run by ci/test.sh in release"]
fn load_bodies_at_ten_times_their_size() {
    for suite in [scaled("shm x10", "1"), scaled("shm_nocma x10", "0")] {
        for body in [
            "unexpected_flood",
            "threads4",
            "any_source_order",
            "mprobe_threads",
        ] {
            suite.run(body);
        }
    }
}

/// Fault jobs of a round that run at once. Most scenarios' survivors
/// block SIGTERM and stay up until `ferryrun`'s SIGKILL, 2 s later
/// (`KILL_GRACE`): idle time, which one job after another would spend 20
/// times over (about 8 minutes of `ci/test.sh`). Running them at once
/// overlaps it, and puts several failing jobs on the node together: a
/// round's 16 jobs in two waves of 8 (157 s for 20 rounds in waves of
/// 4). Twelve rounds, not the twenty of earlier sessions: `ci/test.sh`
/// keeps within its 45 minutes as suites join it.
const FAULT_JOBS_AT_ONCE: usize = 8;

#[test]
#[ignore = "stress: run by ci/test.sh in release"]
fn every_failure_scenario_twelve_times() {
    let jobs: Vec<(&str, &str)> = ferry_tests::bodies::fault::SCENARIOS
        .iter()
        .flat_map(|&scenario| ["1", "0"].map(|cma| (scenario, cma)))
        .collect();
    for round in 0..12 {
        for batch in jobs.chunks(FAULT_JOBS_AT_ONCE) {
            std::thread::scope(|scope| {
                let running: Vec<_> = batch
                    .iter()
                    .map(|&(scenario, cma)| {
                        let job = Job::new(Launcher::Ferryrun, FERRYRUN, 3, RUNNER)
                            .args(&["fault", scenario])
                            .envs(&[("FERRY_SHM_CMA", cma)]);
                        (scenario, cma, scope.spawn(move || job.run()))
                    })
                    .collect();
                for (scenario, cma, handle) in running {
                    let f = handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    let what = format!("round {round}, {scenario}, FERRY_SHM_CMA={cma}");
                    assert_eq!(f.code, Some(137), "{what}\n{f}");
                    let errors = f.stdout.matches(": error after ").count();
                    assert_eq!(errors, 2, "{what}: both survivors must fail\n{f}");
                }
            });
        }
    }
}
