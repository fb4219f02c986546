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

#[test]
#[ignore = "stress: run by ci/test.sh in release"]
fn every_failure_scenario_twenty_times() {
    for round in 0..20 {
        for scenario in ferry_tests::bodies::fault::SCENARIOS {
            for cma in ["1", "0"] {
                let f = Job::new(Launcher::Ferryrun, FERRYRUN, 3, RUNNER)
                    .args(&["fault", scenario])
                    .envs(&[("FERRY_SHM_CMA", cma)])
                    .run();
                assert_eq!(f.code, Some(137), "round {round}\n{f}");
                let errors = f.stdout.matches(": error after ").count();
                assert_eq!(errors, 2, "round {round}: both survivors must fail\n{f}");
            }
        }
    }
}
