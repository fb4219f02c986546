//! Attack tests: each side channel of `SECURITY.md`, attacked the way
//! another user of the node or another host would, while a real job
//! starts and runs through `ferryrun`.
//!
//! - **shm wake sockets**: a process of another user (uid 65534, through
//!   util-linux's `setpriv`) squats every name it can derive while the
//!   job is frozen in the middle of its shm setup, then floods every
//!   socket of the job (paths under its `FERRY_SHM_DIR`, abstract names with
//!   its prefix) while rank 1 sleeps in a receive for
//!   3 s. The job succeeds, the sleeper's CPU stays under 2 % of its wall
//!   time (`getrusage`), and not one datagram or name gets through.
//! - **ofi liveness sockets** (with the `ofi` feature): every rank is
//!   frozen as soon as it listens, an intruder opens forged, stalled,
//!   garbage and wrongly-addressed connections to every listener, the job
//!   is thawed: it starts and runs, every intrusion is closed, and each
//!   rank logged a refusal for each.
//!
//! - **ferryrun's PMI server**: while the job is frozen, none of
//!   ferryrun's sockets listens on TCP or has a Unix socket name (only the
//!   inherited socket pairs exist).
//!
//! The harness freezes ranks with SIGSTOP (they are this user's
//! processes), so the attacks land inside setup every time, not by luck.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");
const SLEEPER: &str = env!("CARGO_BIN_EXE_ferry-tests-sleeper");
const INTRUDER: &str = env!("CARGO_BIN_EXE_ferry-tests-intruder");
const SETUP_LIMIT: Duration = Duration::from_secs(60);

/// A `ferryrun` job whose output is collected (stderr also line by line,
/// as it comes, through `lines`).
struct Launched {
    child: Child,
    out: JoinHandle<String>,
    err: JoinHandle<String>,
    /// Read by the ofi test only.
    #[cfg_attr(not(feature = "ofi"), allow(dead_code))]
    lines: mpsc::Receiver<String>,
}

fn launch(ranks: u32, env: &[(&str, &str)], args: &[&str]) -> Launched {
    let mut child = Command::new(FERRYRUN)
        .args(["-n", &ranks.to_string(), "--timeout", "120", SLEEPER])
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ferryrun");
    let mut stdout = child.stdout.take().expect("piped");
    let out = thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let stderr = child.stderr.take().expect("piped");
    let (tx, lines) = mpsc::channel();
    let err = thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    Launched {
        child,
        out,
        err,
        lines,
    }
}

impl Launched {
    /// Waits for the job; its exit code, stdout and stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + Duration::from_secs(150);
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for ferryrun") {
                break status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("ferryrun did not end");
            }
            thread::sleep(Duration::from_millis(20));
        };
        (
            code,
            self.out.join().unwrap_or_default(),
            self.err.join().unwrap_or_default(),
        )
    }

    /// The ranks: ferryrun's children, with their rank (`PMI_RANK`).
    fn ranks(&self) -> Vec<(u32, u32)> {
        let pid = self.child.id();
        let mut out = Vec::new();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return out;
        };
        for t in tasks.filter_map(Result::ok) {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                let env = std::fs::read(format!("/proc/{c}/environ")).unwrap_or_default();
                let rank = env
                    .split(|&b| b == 0)
                    .find_map(|kv| kv.strip_prefix(b"PMI_RANK="))
                    .and_then(|r| std::str::from_utf8(r).ok()?.parse().ok());
                if let Some(r) = rank {
                    out.push((r, c));
                }
            }
        }
        out.sort_unstable();
        out
    }
}

fn signal(pids: &[u32], sig: Signal) {
    for &p in pids {
        kill(Pid::from_raw(p as i32), sig).unwrap_or_else(|e| panic!("{sig} to {p}: {e}"));
    }
}

/// The number after `key ` in `line` (`..., key 12, ...`).
fn field(line: &str, key: &str) -> u64 {
    let at = line
        .find(&format!("{key} "))
        .unwrap_or_else(|| panic!("no {key:?} in {line:?}"));
    line[at + key.len() + 1..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {line:?}"))
}

/// The command prefix that runs a program as another user (uid and gid
/// 65534), or `None` with the reason printed.
fn as_another_user() -> Option<[&'static str; 4]> {
    let prefix = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "SKIPPED another-user attack: not root, so no process of another user can be \
             started here (run the tests as root, as ci/test.sh does)"
        );
        return None;
    }
    match Command::new(prefix[0])
        .args(&prefix[1..])
        .arg("true")
        .status()
    {
        Ok(s) if s.success() => Some(prefix),
        other => {
            eprintln!(
                "SKIPPED another-user attack: `setpriv` (util-linux) cannot drop to uid 65534: \
                 {other:?} (ci/test.sh installs util-linux)"
            );
            None
        }
    }
}

/// The inodes of `pid`'s sockets.
fn socket_inodes(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(Result::ok)
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|l| {
                    let l = l.to_str()?.to_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Fails if any of `pid`'s sockets can be reached by others: a listening
/// TCP socket, or a Unix socket with a name (abstract or a path).
fn assert_unreachable(pid: u32, what: &str) {
    let inodes = socket_inodes(pid);
    assert!(!inodes.is_empty(), "{what} has no sockets at all?");
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                panic!("{what} listens on TCP: {l}");
            }
        }
    }
    let text = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 7 && inodes.iter().any(|i| i == f[6]) {
            panic!("{what} has a named Unix socket: {l}");
        }
    }
}

/// A copy of the intruder that another user may run (the build tree may
/// not be theirs to read).
fn intruder_for_anyone() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ferry-sectest-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.join("ferry-tests-intruder");
    std::fs::copy(INTRUDER, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// A directory for the job's shared-memory files that everyone may write
/// to, as `/dev/shm` (mode 1777), and that holds nothing else.
fn shared_dir() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("sectest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn another_user_can_neither_flood_a_sleeper_nor_squat_its_wake_names() {
    let Some(other) = as_another_user() else {
        return;
    };
    let intruder = intruder_for_anyone();
    let dir = shared_dir();
    let dir_s = dir.to_str().unwrap().to_owned();
    let job = launch(
        3,
        &[("FERRY_DEVICE", "shm"), ("FERRY_SHM_DIR", &dir_s)],
        &["3"],
    );
    // Freeze the job as soon as its shm setup has made its first name:
    // the ranks that have not bound their wake socket yet stay so while
    // the intruder squats.
    let start = Instant::now();
    while std::fs::read_dir(&dir).unwrap().next().is_none() {
        assert!(start.elapsed() < SETUP_LIMIT, "the job made no shm file");
        thread::sleep(Duration::from_micros(200));
    }
    let pids: Vec<u32> = job.ranks().into_iter().map(|(_, p)| p).collect();
    signal(&pids, Signal::SIGSTOP);
    // ferryrun's PMI server has nothing anyone could connect to: only the
    // socket pairs its ranks inherited.
    assert_unreachable(job.child.id(), "ferryrun");
    // One intruder: its first round squats while the job is frozen, the
    // next ones (holding every name it took) flood for as long as rank 1
    // sleeps, and a little more.
    let mut intruder = Command::new(other[0])
        .args(&other[1..])
        .arg(&intruder)
        .args(["unix", &dir_s, "5"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the intruder");
    let mut intruder_out = BufReader::new(intruder.stdout.take().expect("piped"));
    let mut first = String::new();
    intruder_out.read_line(&mut first).unwrap();
    signal(&pids, Signal::SIGCONT);
    assert!(first.starts_with("intruder: first round done"), "{first:?}");
    let (code, out, err) = job.finish();
    let mut rest = String::new();
    intruder_out.read_to_string(&mut rest).unwrap();
    let _ = intruder.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let report = rest
        .lines()
        .find(|l| l.starts_with("intruder unix:"))
        .unwrap_or_else(|| panic!("no intruder report: {rest:?}"))
        .to_owned();
    eprintln!("{report}");
    let context = format!("--- stdout\n{out}--- stderr\n{err}---\n{report}");
    assert_eq!(code, Some(0), "the job failed\n{context}");
    for r in 0..3 {
        assert!(
            out.contains(&format!("sleeper rank {r} of 3: ok")),
            "rank {r} did not finish\n{context}"
        );
    }
    // The attacks happened, and none got through.
    assert!(field(&report, "squats") > 0, "{context}");
    assert!(
        field(&report, "sends") > 0,
        "the flood found nothing to send to\n{context}"
    );
    assert_eq!(field(&report, "delivered"), 0, "{context}");
    assert_eq!(
        field(&report, "squats that took a name inside a ferry directory"),
        0,
        "{context}"
    );
    // The sleeper slept: under 2 % of a core over its wait.
    let line = out
        .lines()
        .find(|l| l.starts_with("sleeper rank 1: cpu"))
        .unwrap_or_else(|| panic!("no CPU report\n{context}"));
    let share: f64 = line
        .rsplit('(')
        .next()
        .and_then(|s| s.trim_end_matches(" %)").parse().ok())
        .unwrap_or_else(|| panic!("bad CPU report {line:?}"));
    eprintln!("{line}");
    let wall = field(line, "over") as f64;
    assert!(wall >= 2500.0, "the sleeper did not wait: {line}");
    assert!(
        share < 2.0,
        "the sleeper used {share} % of a core: {line}\n{context}"
    );
    // What the intruder planted with the job's name is not ferryrun's to
    // remove, and no reason to fail the job.
    if field(&report, "planted") > 0 {
        assert!(err.contains("another user owns"), "{context}");
    }
}

#[cfg(feature = "ofi")]
#[test]
fn intruders_on_every_liveness_port_are_refused_and_the_job_runs() {
    const N: u32 = 3;
    let job = launch(
        N,
        &[
            ("FERRY_DEVICE", "ofi"),
            ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm"),
            // The fabric on loopback: every address of the test is this
            // machine's, and the listeners must bind the fabric's.
            ("FI_TCP_IFACE", "lo"),
            // `ferry=info` for the span naming each rank.
            ("FERRY_LOG", "ferry=info,ferry_ofi=debug"),
        ],
        &["0.2"],
    );
    // Freeze each rank as soon as it says where it listens.
    let mut listening: Vec<(u32, String)> = Vec::new();
    let mut frozen: Vec<u32> = Vec::new();
    let mut seen = String::new();
    let start = Instant::now();
    while listening.len() < N as usize {
        let left = SETUP_LIMIT.saturating_sub(start.elapsed());
        let line = job
            .lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("not every rank listened\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        let Some(addr) = line.split("ofi liveness: listening addr=").nth(1) else {
            continue;
        };
        let rank: u32 = line
            .split("rank{rank=")
            .nth(1)
            .and_then(|r| r.split('}').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no rank in {line:?}"));
        let pid = job
            .ranks()
            .into_iter()
            .find(|(r, _)| *r == rank)
            .map(|(_, p)| p)
            .unwrap_or_else(|| panic!("no process for rank {rank}"));
        signal(&[pid], Signal::SIGSTOP);
        frozen.push(pid);
        listening.push((rank, addr.trim().to_owned()));
    }
    for (rank, addr) in &listening {
        assert!(
            addr.starts_with("127.0.0.1:"),
            "rank {rank} listens at {addr}, not at the fabric's address (loopback)"
        );
    }
    let mut intruder = Command::new(INTRUDER)
        .arg("liveness")
        .args(listening.iter().map(|(r, a)| format!("{a}={r}")))
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the intruder");
    let mut intruder_out = BufReader::new(intruder.stdout.take().expect("piped"));
    let mut first = String::new();
    intruder_out.read_line(&mut first).unwrap();
    assert!(first.starts_with("intruder: connected"), "{first:?}");
    signal(&frozen, Signal::SIGCONT);
    let (code, out, err) = job.finish();
    let mut report = String::new();
    intruder_out.read_to_string(&mut report).unwrap();
    let _ = intruder.wait();
    let context = format!("--- stdout\n{out}--- stderr\n{err}---\n{first}{report}");
    assert_eq!(code, Some(0), "the job failed\n{context}");
    for r in 0..N {
        assert!(
            out.contains(&format!("sleeper rank {r} of {N}: ok")),
            "rank {r} did not finish\n{context}"
        );
    }
    // Every intrusion was closed by the ranks...
    let line = report
        .lines()
        .find(|l| l.starts_with("intruder liveness:"))
        .unwrap_or_else(|| panic!("no intruder report\n{context}"));
    let opened = field(line, "liveness:");
    assert_eq!(opened, u64::from(N) * (u64::from(N) + 4), "{context}");
    assert_eq!(field(line, "left open"), 0, "{context}");
    // ... and each refusal was logged by the rank it was aimed at.
    for r in 0..N {
        let refused = err
            .lines()
            .filter(|l| l.contains("ofi liveness: refused a connection"))
            .filter(|l| l.contains(&format!("rank={r} from=")))
            .count();
        assert!(
            refused >= (N + 4) as usize,
            "rank {r} logged {refused} refusals, expected {}\n{context}",
            N + 4
        );
    }
}
