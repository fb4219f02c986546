//! The `overlap` body with and without the progress thread, side by side
//! (`cargo test -p ferry-tests --test progress -- --nocapture` shows the
//! figures). With the thread the body checks the overlap itself; without,
//! it only reports it: the point here is to see the difference.

use ferry_tests::harness::{Job, Launcher};

fn overlap_job(async_progress: &str) -> Vec<String> {
    let f = Job::new(
        Launcher::Ferryrun,
        env!("CARGO_BIN_EXE_ferry-tests-ferryrun"),
        2,
        env!("CARGO_BIN_EXE_ferry-conformance"),
    )
    .args(&["overlap"])
    .envs(&[
        ("FERRY_DEVICE", "shm"),
        ("FERRY_ASYNC_PROGRESS", async_progress),
    ])
    .run();
    assert_eq!(
        f.code,
        Some(0),
        "FERRY_ASYNC_PROGRESS={async_progress}\n{f}"
    );
    f.stderr
        .lines()
        .filter(|l| l.contains("overlap rank"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn overlap_with_and_without_the_progress_thread() {
    for setting in ["1", "0"] {
        let lines = overlap_job(setting);
        assert!(
            lines.iter().any(|l| l.contains("overlap")),
            "FERRY_ASYNC_PROGRESS={setting}: no figure reported"
        );
        for line in lines {
            eprintln!("FERRY_ASYNC_PROGRESS={setting}: {line}");
        }
    }
}
