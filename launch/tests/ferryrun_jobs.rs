//! `ferryrun` end to end: real processes, real sockets, real signals.
//!
//! The PMI test program is the `pmi_check` example, built on first use by
//! `cargo build --example` into the same target directory and profile as
//! this test (a plain `cargo test` has built it already, so that is a
//! no-op; with `--test ferryrun_jobs` it builds it). The same binary also
//! runs under MPICH's `mpiexec.hydra` when that is installed (CI installs
//! it: `apt-get install -y mpich`).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferryrun");

/// How long any one job may take before the test kills it and fails.
const LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn collect(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// Runs `cmd` to completion (killing it and failing after [`LIMIT`]).
fn run(mut cmd: Command) -> Finished {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let status = wait(&mut child, start + LIMIT);
    let elapsed = start.elapsed();
    let finished = Finished {
        code: status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed,
    };
    eprintln!("{cmd:?}\n  -> {finished:?}");
    finished
}

fn wait(child: &mut Child, deadline: Instant) -> Option<i32> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after {LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn ferryrun(args: &[&str]) -> Command {
    let mut cmd = Command::new(FERRYRUN);
    cmd.args(args);
    cmd
}

/// The `pmi_check` example, built for this target directory and profile.
fn pmi_check() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // This test runs from <target>/<profile>/deps/<name>-<hash>.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_owned();
        let target_dir = profile_dir.parent().unwrap();
        let profile = profile_dir.file_name().unwrap().to_str().unwrap();
        let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
        cmd.args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            "ferry-launch",
            "--example",
            "pmi_check",
        ])
        .arg("--target-dir")
        .arg(target_dir);
        match profile {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let status = cmd
            .status()
            .expect("running cargo to build the pmi_check example");
        assert!(
            status.success(),
            "building the pmi_check example failed: {cmd:?}"
        );
        let path = profile_dir.join("examples").join("pmi_check");
        assert!(path.exists(), "{} missing after the build", path.display());
        path
    })
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = s.lines().collect();
    lines.sort_unstable();
    lines
}

fn expect_ok_lines(out: &str, n: u32) {
    let mut want: Vec<String> = (0..n)
        .map(|r| format!("pmi_check: rank {r} of {n} ok"))
        .collect();
    want.sort();
    assert_eq!(sorted_lines(out), want);
}

#[test]
fn pmi_check_passes_under_ferryrun_with_1_2_4_8_ranks() {
    for n in [1u32, 2, 4, 8] {
        let mut cmd = ferryrun(&["-n", &n.to_string()]);
        cmd.arg(pmi_check());
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "n={n}: {}", f.stderr);
        expect_ok_lines(&f.stdout, n);
        assert_eq!(f.stderr, "", "n={n}");
    }
}

fn hydra_installed() -> bool {
    let found = Command::new("mpiexec.hydra")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!(
            "\n\n********************************************************************\n\
             SKIPPED: mpiexec.hydra is not installed, so the Hydra runs did not\n\
             happen. Install it with: apt-get install -y mpich\n\
             ********************************************************************\n"
        );
    }
    found
}

#[test]
fn pmi_check_passes_under_mpiexec_hydra_with_2_and_4_ranks() {
    if !hydra_installed() {
        return;
    }
    // Hydra's default (PMI_FD) and its -pmi-port mode (PMI_PORT + PMI_ID).
    for (n, extra) in [(2u32, None), (4, None), (2, Some("-pmi-port"))] {
        let mut cmd = Command::new("mpiexec.hydra");
        cmd.args(extra)
            .args(["-n", &n.to_string()])
            .arg(pmi_check());
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "n={n} {extra:?}: {}", f.stderr);
        expect_ok_lines(&f.stdout, n);
    }
}

#[test]
fn first_failing_exit_code_is_propagated_and_the_rest_killed() {
    let mut cmd = ferryrun(&["-n", "4"]);
    cmd.arg(pmi_check()).args(["fail-rank", "2", "3"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(3));
    assert!(
        f.stderr.contains("rank 2 exited with code 3"),
        "{}",
        f.stderr
    );
    // The other ranks sleep 60 s unless killed.
    assert!(f.elapsed < Duration::from_secs(10), "{:?}", f.elapsed);
}

#[test]
fn a_rank_killed_by_a_signal_fails_the_job_promptly() {
    let f = run(ferryrun(&[
        "-n",
        "3",
        "sh",
        "-c",
        r#"if [ "$PMI_RANK" = 1 ]; then kill -9 $$; fi; sleep 60"#,
    ]));
    assert_eq!(f.code, Some(128 + 9));
    assert!(
        f.stderr.contains("rank 1 was killed by signal 9 (SIGKILL)"),
        "{}",
        f.stderr
    );
    assert!(f.elapsed < Duration::from_secs(10), "{:?}", f.elapsed);
}

#[test]
fn timeout_kills_the_job_with_124() {
    let f = run(ferryrun(&["-n", "2", "--timeout", "2", "sleep", "60"]));
    assert_eq!(f.code, Some(124));
    assert!(f.stderr.contains("timeout"), "{}", f.stderr);
    assert!(f.elapsed >= Duration::from_secs(2), "{:?}", f.elapsed);
    assert!(f.elapsed < Duration::from_secs(8), "{:?}", f.elapsed);
}

#[test]
fn ranks_that_ignore_sigterm_get_sigkill() {
    let f = run(ferryrun(&[
        "-n",
        "2",
        "--timeout",
        "0.5",
        "sh",
        "-c",
        "trap '' TERM; sleep 60",
    ]));
    assert_eq!(f.code, Some(124));
    assert!(f.stderr.contains("sending SIGKILL"), "{}", f.stderr);
    assert!(f.elapsed < Duration::from_secs(8), "{:?}", f.elapsed);
}

#[test]
fn pmi_abort_kills_the_job_with_its_code() {
    let mut cmd = ferryrun(&["-n", "3"]);
    cmd.arg(pmi_check()).args(["abort-rank", "1", "7"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(7));
    assert!(
        f.stderr
            .contains("rank 1 aborted the job (exit code 7): pmi_check_was_asked_to_abort"),
        "{}",
        f.stderr
    );
    assert!(f.elapsed < Duration::from_secs(10), "{:?}", f.elapsed);
}

#[test]
fn a_pmi_protocol_violation_fails_the_job() {
    let f = run(ferryrun(&[
        "-n",
        "2",
        "sh",
        "-c",
        r#"if [ "$PMI_RANK" = 0 ]; then eval "echo not-pmi >&$PMI_FD"; fi; sleep 60"#,
    ]));
    assert_eq!(f.code, Some(1));
    assert!(
        f.stderr.contains("rank 0 broke the PMI protocol"),
        "{}",
        f.stderr
    );
    assert!(f.elapsed < Duration::from_secs(10), "{:?}", f.elapsed);
}

#[test]
fn label_prefixes_whole_lines() {
    let script = r#"echo "out $PMI_RANK"; printf "par"; sleep 0.2; echo "tial $PMI_RANK"
                    echo "err $PMI_RANK" >&2; printf "tail $PMI_RANK""#;
    let f = run(ferryrun(&["-n", "3", "--label", "sh", "-c", script]));
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let mut want_out = Vec::new();
    let mut want_err = Vec::new();
    for r in 0..3 {
        want_out.push(format!("[{r}] out {r}"));
        want_out.push(format!("[{r}] partial {r}"));
        // A last line without newline still arrives whole, labeled.
        want_out.push(format!("[{r}] tail {r}"));
        want_err.push(format!("[{r}] err {r}"));
    }
    want_out.sort();
    assert_eq!(sorted_lines(&f.stdout), want_out);
    assert_eq!(sorted_lines(&f.stderr), want_err);
    assert!(f.stdout.ends_with('\n'));
}

/// The job id from "removed N leftover shared-memory file(s) ...: ferry-<id>-...".
fn removed_files(stderr: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find(|l| l.contains("leftover shared-memory file"))
        .unwrap_or_else(|| panic!("no cleanup message in {stderr:?}"));
    let names = line.rsplit(": ").next().unwrap();
    names.split(' ').map(str::to_owned).collect()
}

#[test]
fn leftover_dev_shm_files_are_removed_after_success() {
    let mut cmd = ferryrun(&["-n", "2"]);
    cmd.arg(pmi_check()).arg("plant-shm");
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let removed = removed_files(&f.stderr);
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].starts_with("ferry-") && removed[0].ends_with("-planted"));
    assert!(!Path::new("/dev/shm").join(&removed[0]).exists());
}

#[test]
fn leftover_dev_shm_files_are_removed_after_failure() {
    let f = run(ferryrun(&[
        "-n",
        "2",
        "sh",
        "-c",
        // Rank 0 fails only once rank 1 has made its file too.
        r#"touch "/dev/shm/ferry-$FERRY_JOB_ID-r$PMI_RANK"
           if [ "$PMI_RANK" = 0 ]; then
               while [ ! -e "/dev/shm/ferry-$FERRY_JOB_ID-r1" ]; do sleep 0.05; done
               exit 5
           fi
           sleep 60"#,
    ]));
    assert_eq!(f.code, Some(5));
    let removed = removed_files(&f.stderr);
    assert_eq!(removed.len(), 2, "{removed:?}");
    let job = removed[0]
        .trim_start_matches("ferry-")
        .trim_end_matches("-r0");
    assert_eq!(job.len(), 32, "{job}");
    assert_eq!(removed[1], format!("ferry-{job}-r1"));
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("ferry-{job}")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_sweep_honours_ferry_shm_dir() {
    let dir = std::env::temp_dir().join(format!("ferryrun-shm-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = ferryrun(&[
        "-n",
        "1",
        "sh",
        "-c",
        r#"touch "$FERRY_SHM_DIR/ferry-$FERRY_JOB_ID-elsewhere" "$FERRY_SHM_DIR/other-$FERRY_JOB_ID""#,
    ]);
    cmd.env("FERRY_SHM_DIR", &dir);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let removed = removed_files(&f.stderr);
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].ends_with("-elsewhere"), "{removed:?}");
    assert!(
        f.stderr.contains(&dir.display().to_string()),
        "{}",
        f.stderr
    );
    // Only the shm device's own prefix is swept: the other file stays.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("other-"), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn signals_are_forwarded_to_the_ranks() {
    let script = r#"trap 'echo "term $PMI_RANK"; exit 0' TERM; echo ready; sleep 60 & wait"#;
    let mut child = ferryrun(&["-n", "2", "--label", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let reader = thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err = collect(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|l: &&String| l.ends_with("ready"))
        .count()
        < 2
    {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("ranks did not start");
        seen.push(line);
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let code = wait(&mut child, Instant::now() + Duration::from_secs(20));
    reader.join().unwrap();
    seen.extend(rx.try_iter());
    let stderr = err.join().unwrap();
    // Both ranks caught the forwarded signal and exited 0; ferryrun
    // reports that it was terminated.
    assert_eq!(code, Some(128 + 15), "{stderr}");
    assert!(seen.contains(&"[0] term 0".to_owned()), "{seen:?}");
    assert!(seen.contains(&"[1] term 1".to_owned()), "{seen:?}");
    assert!(
        stderr.contains("got SIGTERM; forwarding it to the ranks"),
        "{stderr}"
    );
}

#[test]
fn a_missing_program_is_reported() {
    let f = run(ferryrun(&["-n", "2", "/nonexistent/ferry-test-program"]));
    assert_eq!(f.code, Some(127));
    assert!(f.stderr.contains("cannot start rank 0"), "{}", f.stderr);
}

#[test]
fn usage_errors_and_help() {
    let f = run(ferryrun(&[]));
    assert_eq!(f.code, Some(2));
    assert!(f.stderr.contains("usage: ferryrun -n N"), "{}", f.stderr);
    let f = run(ferryrun(&["-n", "0", "true"]));
    assert_eq!(f.code, Some(2));
    let f = run(ferryrun(&["--help"]));
    assert_eq!(f.code, Some(0));
    for needle in [
        "--label",
        "--timeout",
        "124",
        "PMI_FD",
        "FERRY_JOB_ID",
        "/dev/shm",
        "SIGKILL",
    ] {
        assert!(f.stdout.contains(needle), "help lacks {needle}");
    }
}

/// The CPUs this test may use, as `/proc/self/status` lists them.
fn allowed_here() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_owned()
}

/// Each rank's `Cpus_allowed_list`, by rank (`--label` output).
fn ranks_cpus(extra: &[&str], n: u32) -> (Finished, Vec<String>) {
    let mut cmd = Command::new(FERRYRUN);
    cmd.args(["-n", &n.to_string(), "--label"])
        .args(extra)
        .args(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]);
    let f = run(cmd);
    let mut lists = vec![String::new(); n as usize];
    for line in f.stdout.lines() {
        let Some((rank, rest)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else {
            continue;
        };
        let rank: usize = rank.parse().expect("a rank label");
        lists[rank] = rest
            .trim_start_matches("Cpus_allowed_list:")
            .trim()
            .to_owned();
    }
    (f, lists)
}

#[test]
fn ranks_are_bound_to_one_cpu_each_when_they_fit() {
    let cpus = ferry_launch::bind_plan(
        64,
        ferry_launch::BindTo::Auto,
        ferry_launch::MapBy::Core,
        &[],
        |_| None,
    );
    assert_eq!(cpus, Ok(None), "no CPUs known: nothing to bind");
    let here = allowed_here();
    let singles: Vec<&str> = here.split(',').collect();
    if singles.len() == 1 && !here.contains('-') {
        eprintln!("one CPU here ({here}): binding two ranks cannot be shown");
        return;
    }
    // The default: bound, one distinct CPU per rank.
    let (f, lists) = ranks_cpus(&["--report-bindings"], 2);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(
        lists
            .iter()
            .all(|l| !l.is_empty() && !l.contains(['-', ','])),
        "{lists:?}"
    );
    assert_ne!(lists[0], lists[1], "two ranks on one CPU: {lists:?}");
    assert!(f.stderr.contains("rank 0 bound to cpu"), "{}", f.stderr);
    // --bind-to none: every rank keeps what ferryrun had.
    let (f, lists) = ranks_cpus(&["--bind-to", "none"], 2);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(lists.iter().all(|l| *l == here), "{lists:?} vs {here}");
}

#[test]
fn an_oversubscribed_job_is_left_unbound_unless_core_binding_is_forced() {
    let here = allowed_here();
    let n = 65; // more than the CPUs of any machine this runs on
    let (f, lists) = ranks_cpus(&[], n);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(lists.iter().all(|l| *l == here), "auto leaves them unbound");
    let mut cmd = Command::new(FERRYRUN);
    cmd.args(["-n", &n.to_string(), "--bind-to", "core", "true"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(1), "{f:?}");
    assert!(f.stderr.contains("use --bind-to none"), "{}", f.stderr);
}
