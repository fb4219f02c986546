//! The test side of the multi-process tests: launch a job through
//! `ferryrun` or `mpiexec.hydra` with a timeout, collect its output, check
//! each rank's result line and that `/dev/shm` holds nothing of the job
//! afterwards.
//!
//! # Why `/dev/shm` is checked two ways
//! `ferryrun` gives each job a random `FERRY_JOB_ID` and names the shm
//! segment `ferry-<id>-<random>`; the conformance runner prints the id, so
//! the check is exact. `ferryrun` also sweeps `ferry-<id>*` itself at the end of a job
//! and says so on stderr: that message means the *device* left a file
//! behind (it should unlink its segment as soon as every rank mapped it),
//! so the harness fails on it too. Hydra's job id (its kvsname) is not
//! visible to the ranks (and other programs, like ferry-bench, do not print
//! theirs), so for those jobs the harness compares
//! `/dev/shm` before and after, and re-checks after a pause so that a
//! concurrent test's short-lived segment is not blamed on this job.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// How long one conformance job may run (`ferryrun --timeout`). Bodies
/// take well under a second in release builds; this is for debug builds on
/// two oversubscribed cores.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(90);

/// The variable that replaces [`JOB_TIMEOUT`] (whole seconds): the emulated
/// Soft-RoCE VM runs 4 ranks on 2 slow vCPUs, where a heavy body needs
/// longer than on the host.
pub const JOB_TIMEOUT_VAR: &str = "FERRY_TEST_JOB_TIMEOUT";

/// [`JOB_TIMEOUT`], or [`JOB_TIMEOUT_VAR`]'s value if it is a positive
/// number of seconds.
pub fn job_timeout() -> Duration {
    std::env::var(JOB_TIMEOUT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map_or(JOB_TIMEOUT, Duration::from_secs)
}

/// The variable naming the program the Hydra runs start instead of
/// `mpiexec.hydra`: `ci/cluster.sh` points it at a wrapper that runs Hydra
/// on its first host with the other hosts reached through their
/// namespaces, so the same suites run across hosts.
pub const HYDRA_VAR: &str = "FERRY_TEST_HYDRA";

/// `mpiexec.hydra`, or the program [`HYDRA_VAR`] names.
pub fn hydra_program() -> String {
    std::env::var(HYDRA_VAR).unwrap_or_else(|_| "mpiexec.hydra".to_owned())
}

/// Extra time the harness gives the launcher itself before killing it.
const LAUNCHER_GRACE: Duration = Duration::from_secs(15);

/// The prefix of every result line the runner prints.
pub const LINE_PREFIX: &str = "ferry-conformance";

/// Which launcher starts the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// ferry's own `ferryrun`.
    Ferryrun,
    /// MPICH's `mpiexec.hydra`.
    Hydra,
}

/// A job to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// The launcher.
    pub launcher: Launcher,
    /// The `ferryrun` binary (unused for Hydra).
    pub ferryrun: PathBuf,
    /// Ranks to start.
    pub ranks: u32,
    /// The program every rank runs, and its arguments.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables every rank gets.
    pub env: Vec<(String, String)>,
    /// The job's time limit (given to the launcher, which kills the job).
    pub timeout: Duration,
}

/// A finished job.
#[derive(Debug)]
pub struct Finished {
    /// The launcher's command line, for messages.
    pub command: String,
    /// The launcher's exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Its stdout (every rank's, interleaved by line).
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
    /// `FERRY_JOB_ID`, if the runner printed it.
    pub job_id: Option<String>,
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n  exit code {:?} after {:.2?}\n--- stdout\n{}--- stderr\n{}---",
            self.command, self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

impl Job {
    /// A job of `ranks` ranks running `program args`.
    pub fn new(launcher: Launcher, ferryrun: &str, ranks: u32, program: &str) -> Job {
        Job {
            launcher,
            ferryrun: PathBuf::from(ferryrun),
            ranks,
            program: PathBuf::from(program),
            args: Vec::new(),
            env: Vec::new(),
            timeout: job_timeout(),
        }
    }

    /// Adds arguments.
    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Job {
        self.args.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Adds variables.
    pub fn envs<K: AsRef<str>, V: AsRef<str>>(mut self, env: &[(K, V)]) -> Job {
        self.env.extend(
            env.iter()
                .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned())),
        );
        self
    }

    fn command(&self) -> Command {
        let n = self.ranks.to_string();
        let secs = format!("{}", self.timeout.as_secs_f64());
        let mut cmd = match self.launcher {
            Launcher::Ferryrun => {
                let mut c = Command::new(&self.ferryrun);
                c.args(["-n", &n, "--timeout", &secs]);
                c
            }
            Launcher::Hydra => {
                let mut c = Command::new(hydra_program());
                // Hydra passes the whole environment by default; -genv
                // makes the job's own variables explicit all the same.
                for (k, v) in &self.env {
                    c.args(["-genv", k, v]);
                }
                c.args(["-n", &n]);
                // Hydra's own job time limit.
                c.env("MPIEXEC_TIMEOUT", self.timeout.as_secs().max(1).to_string());
                c
            }
        };
        cmd.arg(&self.program).args(&self.args);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs the job to completion. The launcher enforces the time limit;
    /// if it does not exit `LAUNCHER_GRACE` (15 s) later, it is sent SIGTERM
    /// (which `ferryrun` forwards), then SIGKILL, and the test panics.
    pub fn run(&self) -> Finished {
        let mut cmd = self.command();
        let command = format!("{cmd:?}");
        let before = ferry_shm_files();
        let start = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
        let out = collect(child.stdout.take().expect("piped stdout"));
        let err = collect(child.stderr.take().expect("piped stderr"));
        let code = wait_or_kill(&mut child, start + self.timeout + LAUNCHER_GRACE, &command);
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let job_id = stdout.lines().find_map(|l| {
            l.strip_prefix(LINE_PREFIX)?
                .trim()
                .strip_prefix("job-id ")
                .map(str::to_owned)
        });
        let finished = Finished {
            command,
            code,
            stdout,
            stderr,
            elapsed: start.elapsed(),
            job_id,
        };
        self.check_shm(&finished, &before);
        finished
    }

    /// Fails the test if the job left shared memory behind (see the module
    /// docs).
    pub fn check_shm(&self, f: &Finished, before: &BTreeSet<String>) {
        if let Some(line) = f
            .stderr
            .lines()
            .find(|l| l.contains("leftover shared-memory file"))
        {
            panic!("the device left shared memory for ferryrun to sweep: {line}\n{f}");
        }
        match &f.job_id {
            Some(id) => {
                let left: Vec<String> = ferry_shm_files()
                    .into_iter()
                    .filter(|n| n.starts_with(&ferry_core::shared_files::job_prefix(id)))
                    .collect();
                assert!(left.is_empty(), "job {id} left {left:?} in /dev/shm\n{f}");
                // A killed rank's libfabric shm region: ferryrun sweeps it.
                let prefix = ferry_core::shared_files::ofi_shm_region_prefix(id);
                let regions: Vec<String> = shm_entries()
                    .into_iter()
                    .filter(|n| n.starts_with(&prefix))
                    .collect();
                assert!(
                    regions.is_empty(),
                    "job {id} left {regions:?} in /dev/shm\n{f}"
                );
            }
            None => {
                let new = new_files(before);
                if !new.is_empty() {
                    // A concurrent job's segment lives for milliseconds.
                    thread::sleep(Duration::from_millis(500));
                    let still: Vec<_> = new_files(before);
                    assert!(still.is_empty(), "/dev/shm gained {still:?}\n{f}");
                }
            }
        }
    }
}

fn new_files(before: &BTreeSet<String>) -> Vec<String> {
    ferry_shm_files()
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect()
}

/// The names of every `ferry-*` entry in `/dev/shm`.
pub fn ferry_shm_files() -> BTreeSet<String> {
    shm_entries()
        .into_iter()
        .filter(|n| n.starts_with(ferry_core::shared_files::FILE_PREFIX))
        .collect()
}

fn collect(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = r.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn wait_or_kill(child: &mut Child, deadline: Instant, command: &str) -> Option<i32> {
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code();
        }
        if Instant::now() > deadline {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command} did not finish within its time limit; killed");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// True if `mpiexec.hydra` runs here; prints a loud notice if not.
pub fn hydra_installed() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let found = Command::new(hydra_program())
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!(
                "\n*** SKIPPED: mpiexec.hydra is not installed, so the Hydra runs did not \
                 happen (apt-get install -y mpich) ***\n"
            );
        }
        found
    })
}

/// One rank's result line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankResult {
    /// The body passed on this rank.
    Ok,
    /// The body skipped on this rank, for this reason.
    Skip(String),
}

/// Parses the result lines of `body` from a job's stdout: one per rank,
/// exactly, or a panic that shows the whole job.
pub fn rank_results(f: &Finished, body: &str, ranks: u32) -> Vec<RankResult> {
    let mut results: Vec<Option<RankResult>> = vec![None; ranks as usize];
    let lead = format!("{LINE_PREFIX} {body} rank ");
    for line in f.stdout.lines() {
        let Some(rest) = line.strip_prefix(&lead) else {
            continue;
        };
        let parsed = rest.split_once(": ").and_then(|(who, what)| {
            let (r, n) = who.split_once(" of ")?;
            let (r, n): (usize, u32) = (r.parse().ok()?, n.parse().ok()?);
            let result = match what.strip_prefix("skip: ") {
                Some(reason) => RankResult::Skip(reason.to_owned()),
                None if what.starts_with("ok") => RankResult::Ok,
                None => return None,
            };
            Some((r, n, result))
        });
        let Some((r, n, result)) = parsed else {
            panic!("malformed result line {line:?}\n{f}");
        };
        assert_eq!(n, ranks, "rank {r} saw a job of {n} ranks\n{f}");
        assert!(
            r < results.len() && results[r].is_none(),
            "rank {r} reported twice (or is out of range)\n{f}"
        );
        results[r] = Some(result);
    }
    results
        .into_iter()
        .enumerate()
        .map(|(r, res)| res.unwrap_or_else(|| panic!("rank {r} printed no result\n{f}")))
        .collect()
}

/// A device's instantiation of the conformance suite (made by
/// [`conformance_suite!`](crate::conformance_suite)).
#[derive(Debug, Clone)]
pub struct Suite {
    /// The instantiation's name (`shm`, `shm_nocma`).
    pub name: &'static str,
    /// The runner binary.
    pub runner: &'static str,
    /// The `ferryrun` binary.
    pub ferryrun: &'static str,
    /// Variables every rank gets.
    pub env: Vec<(&'static str, &'static str)>,
    /// Rank counts run through `ferryrun`.
    pub ranks: Vec<u32>,
    /// Rank counts run through `mpiexec.hydra`.
    pub hydra: Vec<u32>,
    /// Capabilities the instantiation guarantees.
    pub expect: Vec<(&'static str, bool)>,
}

impl Suite {
    /// The variable that carries `expect` to the runner.
    pub const EXPECT_VAR: &'static str = "FERRY_CONFORMANCE_EXPECT";

    fn job(&self, launcher: Launcher, ranks: u32, body: &str) -> Job {
        let expect: Vec<String> = self
            .expect
            .iter()
            .map(|(cap, want)| format!("{cap}={}", u8::from(*want)))
            .collect();
        Job::new(launcher, self.ferryrun, ranks, self.runner)
            .args(&[body])
            .envs(&self.env)
            .envs(&[(Self::EXPECT_VAR, expect.join(","))])
    }

    /// Runs `body` for every configured launcher and rank count; panics on
    /// the first failure. A body that skips on some rank is reported as
    /// skipped (loudly, on stderr): Rust's test harness has no skip status.
    pub fn run(&self, body: &str) {
        let mut runs: Vec<(Launcher, u32)> = self
            .ranks
            .iter()
            .map(|&n| (Launcher::Ferryrun, n))
            .collect();
        if !self.hydra.is_empty() && hydra_installed() {
            runs.extend(self.hydra.iter().map(|&n| (Launcher::Hydra, n)));
        }
        for (launcher, n) in runs {
            let f = self.job(launcher, n, body).run();
            assert_eq!(f.code, Some(0), "{}/{body}: job failed\n{f}", self.name);
            assert!(
                launcher == Launcher::Hydra || f.job_id.is_some(),
                "the runner did not print its FERRY_JOB_ID\n{f}"
            );
            let results = rank_results(&f, body, n);
            let skips: Vec<&String> = results
                .iter()
                .filter_map(|r| match r {
                    RankResult::Skip(why) => Some(why),
                    RankResult::Ok => None,
                })
                .collect();
            if let Some(why) = skips.first() {
                eprintln!(
                    "*** {}/{body} SKIPPED on {} of {n} ranks ({launcher:?}): {why}",
                    self.name,
                    skips.len()
                );
            } else {
                eprintln!(
                    "{}/{body}: {n} ranks via {launcher:?} ok in {:.2?}",
                    self.name, f.elapsed
                );
            }
        }
    }
}

/// The names of every entry in `/dev/shm` (none if it cannot be listed).
fn shm_entries() -> BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir(Path::new("/dev/shm")) else {
        return BTreeSet::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect()
}
