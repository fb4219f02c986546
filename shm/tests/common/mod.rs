//! Multi-process test support: a file-based [`Bootstrap`] and a launcher
//! that re-executes the current binary once per rank, with environment
//! variables selecting the child role. Shared by the integration tests and
//! `examples/pingpong_shm.rs` (through `#[path]`).
#![allow(dead_code, unreachable_pub)]

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use ferry_core::{Bootstrap, BootstrapError, Park, Rank};

/// A PMI-like bootstrap over a directory: `put` writes a file (atomically,
/// by rename), `get` reads it, `barrier` waits until every rank has created
/// its marker for this epoch.
#[derive(Debug)]
pub struct FileBootstrap {
    rank: Rank,
    size: u32,
    job: String,
    dir: PathBuf,
    epoch: u32,
}

impl FileBootstrap {
    /// A bootstrap for `rank` of `size` over `dir` (created if missing).
    pub fn new(rank: Rank, size: u32, job: &str, dir: &Path) -> FileBootstrap {
        std::fs::create_dir_all(dir.join("kvs")).unwrap();
        std::fs::create_dir_all(dir.join("barrier")).unwrap();
        FileBootstrap {
            rank,
            size,
            job: job.to_owned(),
            dir: dir.to_owned(),
            epoch: 0,
        }
    }

    /// The bootstrap a child process was started with (see [`launch`]).
    pub fn from_env() -> Option<FileBootstrap> {
        let rank = std::env::var("FERRY_SHM_TEST_RANK").ok()?.parse().ok()?;
        let size = std::env::var("FERRY_SHM_TEST_SIZE").ok()?.parse().ok()?;
        let job = std::env::var("FERRY_SHM_TEST_JOB").ok()?;
        let dir = PathBuf::from(std::env::var("FERRY_SHM_TEST_DIR").ok()?);
        Some(FileBootstrap::new(rank, size, &job, &dir))
    }
}

impl Bootstrap for FileBootstrap {
    fn rank(&self) -> Rank {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        if key.contains('/') {
            return Err(BootstrapError::Invalid(key.to_owned()));
        }
        let tmp = self.dir.join("kvs").join(format!(".{key}.{}", self.rank));
        std::fs::write(&tmp, value).map_err(|e| BootstrapError::Io(e.to_string()))?;
        std::fs::rename(&tmp, self.dir.join("kvs").join(key))
            .map_err(|e| BootstrapError::Io(e.to_string()))
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        std::fs::read_to_string(self.dir.join("kvs").join(key))
            .map_err(|_| BootstrapError::NotFound(key.to_owned()))
    }
    fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.epoch += 1;
        let dir = self.dir.join("barrier");
        let io = |e: std::io::Error| BootstrapError::Io(e.to_string());
        std::fs::write(dir.join(format!("{}.{}", self.epoch, self.rank)), b"").map_err(io)?;
        let prefix = format!("{}.", self.epoch);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let arrived = std::fs::read_dir(&dir)
                .map_err(io)?
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .count();
            if arrived >= self.size as usize {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(BootstrapError::Io("barrier timed out".into()));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// A [`Park`] that sleeps in `poll` on a duplicate of the device's wait fd.
#[derive(Debug)]
pub struct PollPark {
    fd: OwnedFd,
    /// Parks so far.
    pub parks: u64,
}

impl PollPark {
    /// Parks on `dev`'s wait fd.
    pub fn new(dev: &impl AsFd) -> PollPark {
        PollPark {
            fd: dev.as_fd().try_clone_to_owned().unwrap(),
            parks: 0,
        }
    }

    /// Waits up to `ms` for the fd; true if it became readable.
    pub fn poll(&self, ms: i32) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        let t = Timespec {
            tv_sec: i64::from(ms / 1000),
            tv_nsec: i64::from(ms % 1000) * 1_000_000,
        };
        loop {
            match poll(&mut fds, Some(&t)) {
                Ok(n) => return n > 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => panic!("poll: {e}"),
            }
        }
    }
}

impl Park for PollPark {
    fn park(&mut self, _wait_fd: Option<i32>) -> ferry_core::Result<()> {
        self.parks += 1;
        // Bounded, so a lost wake-up shows as slowness in a test, and the
        // deadline-based assertions catch it.
        self.poll(10_000);
        Ok(())
    }
}

/// A job id no other test run uses.
pub fn unique_job(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("t{}-{nanos:x}-{tag}", std::process::id())
}

/// `/dev/shm` entries of this job's segment (there must be none).
pub fn shm_leftovers(job: &str) -> Vec<String> {
    let prefix = format!("ferry-{job}-");
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// What one rank of a [`launch`]ed job did.
#[derive(Debug)]
pub struct RankResult {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its stdout and stderr.
    pub output: String,
}

/// Runs `args` of the current executable as `size` ranks of one job (each
/// child gets `FERRY_SHM_TEST_{RANK,SIZE,JOB,DIR}` and `env`), waits for all
/// of them (killing the job after `timeout`), and returns what each did.
/// The output of a rank that did not exit 0 is printed. Asserts that the job
/// left nothing in `/dev/shm`.
pub fn launch(
    args: &[&str],
    size: u32,
    tag: &str,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Vec<RankResult> {
    let job = unique_job(tag);
    let dir = std::env::temp_dir().join(format!("ferry-shm-boot-{job}"));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let log = |r: u32| dir.join(format!("rank{r}.log"));
    let mut children: Vec<Child> = (0..size)
        .map(|r| {
            let out = std::fs::File::create(log(r)).unwrap();
            let mut cmd = Command::new(&exe);
            cmd.args(args)
                .env("FERRY_SHM_TEST_RANK", r.to_string())
                .env("FERRY_SHM_TEST_SIZE", size.to_string())
                .env("FERRY_SHM_TEST_JOB", &job)
                .env("FERRY_SHM_TEST_DIR", &dir)
                .stdout(out.try_clone().unwrap())
                .stderr(out);
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd.spawn().unwrap()
        })
        .collect();
    let deadline = Instant::now() + timeout;
    let mut statuses: Vec<Option<ExitStatus>> = vec![None; children.len()];
    while statuses.iter().any(Option::is_none) {
        for (i, c) in children.iter_mut().enumerate() {
            if statuses[i].is_none() {
                statuses[i] = c.try_wait().unwrap();
            }
        }
        if Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            for r in 0..size {
                eprintln!(
                    "--- rank {r}:\n{}",
                    std::fs::read_to_string(log(r)).unwrap_or_default()
                );
            }
            let _ = std::fs::remove_dir_all(&dir);
            panic!("job {job} timed out after {timeout:?}: {statuses:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let results: Vec<RankResult> = statuses
        .into_iter()
        .enumerate()
        .map(|(r, s)| RankResult {
            status: s.unwrap(),
            output: std::fs::read_to_string(log(r as u32)).unwrap_or_default(),
        })
        .collect();
    for (r, res) in results.iter().enumerate() {
        if !res.status.success() {
            eprintln!("--- rank {r} ({}):\n{}", res.status, res.output);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let left = shm_leftovers(&job);
    assert!(
        left.is_empty(),
        "job {job} left files in /dev/shm: {left:?}"
    );
    results
}

/// The byte at `i` of a test message from `from` to `to`.
pub fn pattern(from: Rank, to: Rank, len: usize, i: usize) -> u8 {
    (i.wrapping_mul(31) ^ (from as usize * 7 + to as usize * 13 + len)) as u8
}

/// A test message.
pub fn message(from: Rank, to: Rank, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern(from, to, len, i)).collect()
}

/// Checks a received message byte for byte.
pub fn check_message(from: Rank, to: Rank, data: &[u8], len: usize) {
    assert_eq!(data.len(), len, "length of the message {from} -> {to}");
    if let Some(i) = (0..len).find(|&i| data[i] != pattern(from, to, len, i)) {
        panic!("message {from} -> {to} of {len} bytes differs at byte {i}");
    }
}
