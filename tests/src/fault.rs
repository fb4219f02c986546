//! The failure scenarios' common part: run `ferry-conformance fault
//! <scenario>` (rank 1 kills itself with SIGKILL at a chosen moment), check
//! that `ferryrun` reports that death, and collect what every survivor
//! said. Each device's test file then asserts what its device promises
//! (how fast the death is noticed, what the error names).

use std::time::Duration;

use crate::harness::{Finished, Job, Launcher};

/// One survivor's report.
#[derive(Debug)]
pub struct Survivor {
    /// Its rank.
    pub rank: u32,
    /// How long its wait took to fail.
    pub noticed_after: Duration,
    /// Its whole report line (the error text included).
    pub line: String,
}

/// Runs `scenario` on `ranks` ranks with `env`, asserts that `ferryrun`
/// exits with 128 + 9 naming rank 1, and returns the job and every other
/// rank's report. Panics if a survivor did not report, or its wait did not
/// fail.
pub fn run_killed(
    runner: &str,
    ferryrun: &str,
    scenario: &str,
    ranks: u32,
    env: &[(&str, &str)],
) -> (Finished, Vec<Survivor>) {
    let mut job = Job::new(Launcher::Ferryrun, ferryrun, ranks, runner)
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
    let survivors = (0..ranks)
        .filter(|&r| r != 1)
        .map(|rank| {
            let lead = format!("ferry-conformance fault {scenario} rank {rank}: ");
            let line = f
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix(&lead))
                .unwrap_or_else(|| panic!("rank {rank} did not report (hung until killed?)\n{f}"))
                .to_owned();
            let ms: u64 = line
                .strip_prefix("error after ")
                .and_then(|rest| rest.split(' ').next()?.parse().ok())
                .unwrap_or_else(|| panic!("rank {rank}'s wait did not fail: {line}\n{f}"));
            Survivor {
                rank,
                noticed_after: Duration::from_millis(ms),
                line,
            }
        })
        .collect();
    (f, survivors)
}

/// The usual promise: the job ends within `bound` (plus `ferryrun`'s
/// grace), and every survivor noticed within `bound`, with an error that
/// names rank 1.
pub fn assert_noticed(f: &Finished, survivors: &[Survivor], bound: Duration) {
    assert!(
        f.elapsed < bound + Duration::from_secs(5),
        "the job took {:?}\n{f}",
        f.elapsed
    );
    for s in survivors {
        assert!(
            s.noticed_after < bound,
            "rank {} noticed after {:?}\n{f}",
            s.rank,
            s.noticed_after
        );
        assert!(
            s.line.contains("rank 1"),
            "rank {}'s error does not name rank 1: {}",
            s.rank,
            s.line
        );
    }
}
