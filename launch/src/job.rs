//! Running one job: spawn the ranks, then a single-threaded poll loop that
//! serves PMI, relays output, reaps exits, forwards signals and enforces
//! the timeout; finally the `/dev/shm` sweep.
//!
//! One thread and one `poll` keep every decision (who failed first, when
//! to escalate to SIGKILL) in one place without locks. Signals arrive
//! through a signalfd, so a signal is just another readable descriptor and
//! no handler runs at an awkward moment.

use std::ffi::OsStr;
use std::io::{self, IsTerminal, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::{killpg, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;

use super::args::Options;
use super::cleanup::{new_job_id, new_job_secret};
use super::relay::{LineRelay, Sink};
use ferry_core::shared_files;
use ferry_pmi::server::{PmiJob, PmiServer, ServerEvent};
use ferry_shm::names::remove_prefixed;
use ferry_shm::ShmOptions;

/// Time between SIGTERM and SIGKILL when the job is being killed.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for ranks after SIGKILL before giving up on them
/// (a process stuck in the kernel cannot be killed; we still exit).
const GIVE_UP_AFTER: Duration = Duration::from_secs(5);
/// After the last rank exits, how long to keep draining pipes and PMI
/// sockets that a rank's own children may still hold open.
const DRAIN: Duration = Duration::from_secs(1);
/// Upper bound on one poll, so a lost wake-up cannot stall the loop.
const TICK: Duration = Duration::from_millis(250);
/// Exit code on timeout (as coreutils' `timeout`).
pub const EXIT_TIMEOUT: i32 = 124;

/// A failure of the launcher itself (not of the ranks).
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct LaunchError {
    what: String,
    #[source]
    source: io::Error,
}

fn setup<E: Into<io::Error>>(what: &str) -> impl FnOnce(E) -> LaunchError + '_ {
    move |e| LaunchError {
        what: what.to_owned(),
        source: e.into(),
    }
}

/// Writes one `ferryrun: ...` line with a single write, so it cannot be
/// interleaved with a rank's output mid-line.
fn say(msg: &str) {
    let _ = io::stderr().write_all(format!("ferryrun: {msg}\n").as_bytes());
}

fn signal_name(signo: i32) -> &'static str {
    Signal::try_from(signo).map_or("unknown signal", Signal::as_str)
}

/// The exit code a rank's status maps to: its code, or 128+N for signal N.
fn status_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    }
}

#[derive(Debug)]
struct RankProc {
    child: Child,
    status: Option<ExitStatus>,
}

#[derive(Debug, Clone, Copy)]
enum Target {
    Signals,
    Pmi(u32),
    Relay(usize),
}

#[derive(Debug)]
struct Job {
    job_id: String,
    ranks: Vec<RankProc>,
    server: PmiServer,
    relays: Vec<Option<LineRelay>>,
    signals: SignalFd,
    /// The job's exit code, fixed by the first failure.
    exit_code: Option<i32>,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    term_sent: Option<Instant>,
    kill_sent: Option<Instant>,
    /// The first terminating signal ferryrun received.
    interrupted: Option<Signal>,
    all_exited: Option<Instant>,
    gave_up: bool,
    /// The descriptor limit to restore in the ranks, if we raised ours.
    nofile: Option<(u64, u64)>,
    /// Each rank's CPU (`None`: unbound).
    cpus: Option<Vec<usize>>,
}

/// Runs the job described by `opts` and returns ferryrun's exit code.
///
/// Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling thread (they
/// are read through a signalfd), so call it from a program's main thread
/// before starting other threads, as the `ferryrun` binary does.
///
/// # Errors
/// [`LaunchError`] when the launcher cannot set itself up (job id, signal
/// handling, sockets). Failures of the ranks are exit codes, not errors.
pub fn run(opts: &Options) -> Result<i32, LaunchError> {
    let job_id = new_job_id().map_err(setup("creating a job id from /dev/urandom"))?;
    // Served over the ranks' inherited PMI sockets only (SECURITY.md).
    let secret = new_job_secret().map_err(setup("creating the job secret from /dev/urandom"))?;
    let mut mask = SigSet::empty();
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ] {
        mask.add(sig);
    }
    // Blocked signals stay pending for the signalfd. Each rank gets an
    // empty mask back between fork and exec (see `ffi`).
    mask.thread_block().map_err(setup("blocking signals"))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(setup("creating a signalfd"))?;

    let cpus = crate::bind::plan(
        opts.ranks,
        opts.bind_to,
        opts.map_by,
        &crate::bind::allowed_cpus(),
        crate::bind::package_of,
    )
    .map_err(|e| LaunchError {
        what: e.0,
        source: io::Error::other("the ranks cannot be placed as asked"),
    })?;
    let nofile = raise_nofile_limit(opts.ranks);
    let mut server_ends = Vec::with_capacity(opts.ranks as usize);
    let mut child_ends = Vec::with_capacity(opts.ranks as usize);
    for _ in 0..opts.ranks {
        let (server_end, child_end) = UnixStream::pair().map_err(|e| LaunchError {
            what: format!(
                "creating the PMI sockets ({} ranks need about {} descriptors; see `ulimit -n`)",
                opts.ranks,
                4 * u64::from(opts.ranks) + 64
            ),
            source: e,
        })?;
        server_ends.push(server_end);
        child_ends.push(Some(child_end));
    }
    let server = PmiServer::new(
        PmiJob::new(&job_id, opts.ranks).with_secret(&secret),
        server_ends,
    )
    .map_err(|e| LaunchError {
        what: "starting the PMI server".into(),
        source: io::Error::other(e.to_string()),
    })?;
    let mut job = Job {
        job_id,
        ranks: Vec::new(),
        server,
        relays: Vec::new(),
        signals,
        exit_code: None,
        deadline: opts.timeout.map(|t| Instant::now() + t),
        timeout: opts.timeout,
        term_sent: None,
        kill_sent: None,
        interrupted: None,
        all_exited: None,
        gave_up: false,
        nofile,
        cpus,
    };
    for rank in 0..opts.ranks {
        let Some(child_end) = child_ends[rank as usize].take() else {
            continue;
        };
        if let Err((code, msg)) = job.spawn(opts, rank, child_end) {
            say(&msg);
            job.fail(code);
            break;
        }
    }
    // Ranks never started (a spawn failed) still hold their socket end
    // here; dropping them lets the server see those ranks as gone.
    drop(child_ends);
    let looped = job.event_loop();
    if looped.is_err() {
        // We can no longer watch the ranks: take them down with us rather
        // than leave an unsupervised job behind.
        job.signal_all(Signal::SIGKILL);
    }

    let mut code = job.exit_code.unwrap_or_else(|| match job.interrupted {
        Some(sig) => 128 + sig as i32,
        None if job.gave_up => 1,
        None => 0,
    });
    // The ranks inherit this process's environment, so FERRY_SHM_DIR here
    // is the directory they used.
    let shm_dir = ShmOptions::dir_from_source(&|var: &str| std::env::var(var).ok());
    // The shm device removes its files once every local rank has attached,
    // so its leftovers mean a rank died during setup (or a device bug: the
    // tests fail on this message); libfabric's shm provider cannot unlink
    // the region of a killed process, so those are expected after a kill.
    for left in shared_files::leftovers(&job.job_id, &shm_dir) {
        if !sweep(&left.dir, &left.prefix, left.what, &job.job_id) && code == 0 {
            code = 1;
        }
    }
    looped?;
    Ok(code)
}

/// Removes what a job left in `dir` under `prefix` (a killed rank's shm
/// segment, wake directories, ofi shm-provider regions) and says what it
/// removed (as `what`), and what it left because another user owns it (planted by
/// someone who saw the job id: no failure of the job, SECURITY.md).
/// False if the directory could not be cleaned.
fn sweep(dir: &Path, prefix: &str, what: &str, job_id: &str) -> bool {
    match remove_prefixed(dir, prefix) {
        Ok(swept) => {
            if !swept.removed.is_empty() {
                say(&format!(
                    "removed {} {what} in {}: {}",
                    swept.removed.len(),
                    dir.display(),
                    swept.removed.join(" ")
                ));
            }
            if !swept.foreign.is_empty() {
                say(&format!(
                    "left {} file(s) with this job's name that another user owns in {}: {}",
                    swept.foreign.len(),
                    dir.display(),
                    swept.foreign.join(" ")
                ));
            }
            true
        }
        Err(e) => {
            say(&format!(
                "could not clean up {} for job {job_id}: {e}",
                dir.display()
            ));
            false
        }
    }
}

impl Job {
    /// Starts `rank`. On failure returns the exit code and message.
    fn spawn(
        &mut self,
        opts: &Options,
        rank: u32,
        child_end: UnixStream,
    ) -> Result<(), (i32, String)> {
        // The child must inherit its socket end, so it loses close-on-exec
        // here, just before this one spawn: every other socket end stays
        // close-on-exec, and this one is closed in the parent right after,
        // so no other rank ever inherits it.
        fcntl(&child_end, FcntlArg::F_SETFD(FdFlag::empty()))
            .map_err(|e| (1, format!("cannot pass the PMI socket to rank {rank}: {e}")))?;
        let pmi_fd = std::os::fd::AsRawFd::as_raw_fd(&child_end);
        let size = opts.ranks.to_string();
        let stdin = if rank == 0 && !io::stdin().is_terminal() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        let out = |label: bool| {
            if label {
                Stdio::piped()
            } else {
                Stdio::inherit()
            }
        };
        let mut cmd = Command::new(&opts.program);
        cmd.args(&opts.args)
            .env("PMI_FD", pmi_fd.to_string())
            .env("PMI_RANK", rank.to_string())
            .env("PMI_SIZE", &size)
            .env("FERRY_JOB_ID", &self.job_id)
            .env("MPI_LOCALRANKID", rank.to_string())
            .env("MPI_LOCALNRANKS", &size)
            // Left over from an outer launcher, these would point the
            // rank at the wrong server.
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            // Slurm's pmi2 plugin sets it (ferryrun inside `srun
            // --mpi=pmi2`); ferry_pmi would take it as a PMI-2 server.
            .env_remove("PMI_JOBID")
            // Its own process group, so killing the rank also kills any
            // processes it started (a shell wrapper's child, for example).
            .process_group(0)
            .stdin(stdin)
            .stdout(out(opts.label))
            .stderr(out(opts.label));
        let cpu = self
            .cpus
            .as_ref()
            .and_then(|c| c.get(rank as usize).copied());
        if opts.report_bindings {
            say(&crate::bind::report(rank, cpu));
        }
        super::ffi::reset_child_state(&mut cmd, self.nofile, cpu);
        let mut child = cmd.spawn().map_err(|e| {
            let code = match e.kind() {
                io::ErrorKind::NotFound => 127,
                io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            };
            (
                code,
                format!("cannot start rank {rank} ({}): {e}", show(&opts.program)),
            )
        })?;
        drop(child_end);
        if let Some(stdout) = child.stdout.take() {
            self.relays.push(Some(LineRelay::new(
                OwnedFd::from(stdout),
                rank,
                Sink::Stdout,
            )));
        }
        if let Some(stderr) = child.stderr.take() {
            self.relays.push(Some(LineRelay::new(
                OwnedFd::from(stderr),
                rank,
                Sink::Stderr,
            )));
        }
        self.ranks.push(RankProc {
            child,
            status: None,
        });
        Ok(())
    }

    fn live(&self) -> impl Iterator<Item = (u32, &RankProc)> {
        self.ranks
            .iter()
            .enumerate()
            .filter(|(_, p)| p.status.is_none())
            .map(|(r, p)| (r as u32, p))
    }

    fn signal_all(&self, sig: Signal) {
        for (_, p) in self.live() {
            // The rank leads its own group (process_group(0)), so the group
            // id is its pid; an unreaped pid cannot have been reused.
            let _ = killpg(Pid::from_raw(p.child.id() as i32), sig);
        }
    }

    /// Records the job's exit code if none is set yet, and kills the rest.
    fn fail(&mut self, code: i32) {
        if self.exit_code.is_none() {
            self.exit_code = Some(code);
        }
        self.start_kill();
    }

    fn start_kill(&mut self) {
        if self.term_sent.is_none() {
            self.term_sent = Some(Instant::now());
            self.signal_all(Signal::SIGTERM);
        }
    }

    fn event_loop(&mut self) -> Result<(), LaunchError> {
        loop {
            let now = Instant::now();
            self.check_deadlines(now);
            if self.finished(now) {
                return Ok(());
            }
            let (ready, timed_out) = {
                let mut targets = vec![Target::Signals];
                let mut fds = vec![PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
                for (rank, fd) in self.server.fds() {
                    targets.push(Target::Pmi(rank));
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
                for (i, relay) in self.relays.iter().enumerate() {
                    if let Some(relay) = relay {
                        targets.push(Target::Relay(i));
                        fds.push(PollFd::new(relay.fd(), PollFlags::POLLIN));
                    }
                }
                let wait = self.next_wakeup(now);
                let timeout =
                    PollTimeout::try_from(wait.as_millis() as i32 + 1).unwrap_or(PollTimeout::MAX);
                let n = match poll(&mut fds, timeout) {
                    Ok(n) => n,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(setup("waiting for the ranks")(e)),
                };
                let ready: Vec<Target> = targets
                    .iter()
                    .zip(&fds)
                    .filter(|(_, fd)| fd.revents().is_some_and(|r| !r.is_empty()))
                    .map(|(t, _)| *t)
                    .collect();
                (ready, n == 0)
            };
            let mut reap = timed_out;
            for target in ready {
                match target {
                    Target::Signals => reap |= self.on_signals(),
                    Target::Pmi(rank) => {
                        let events = self.server.handle_readable(rank);
                        self.on_events(events);
                    }
                    Target::Relay(i) => {
                        if let Some(relay) = &mut self.relays[i] {
                            if !relay.pump() {
                                self.relays[i] = None;
                            }
                        }
                    }
                }
            }
            if reap {
                self.reap();
            }
        }
    }

    fn next_wakeup(&self, now: Instant) -> Duration {
        let mut wait = TICK;
        let mut until = |t: Option<Instant>| {
            if let Some(t) = t {
                wait = wait.min(t.saturating_duration_since(now));
            }
        };
        if self.term_sent.is_none() {
            until(self.deadline);
        }
        until(self.term_sent.map(|t| t + KILL_GRACE));
        until(self.kill_sent.map(|t| t + GIVE_UP_AFTER));
        until(self.all_exited.map(|t| t + DRAIN));
        wait
    }

    fn finished(&self, now: Instant) -> bool {
        if self.gave_up {
            return true;
        }
        let Some(exited) = self.all_exited else {
            return false;
        };
        let drained =
            self.relays.iter().all(Option::is_none) && self.server.open_connections() == 0;
        drained || now >= exited + DRAIN
    }

    fn check_deadlines(&mut self, now: Instant) {
        if self.all_exited.is_some() {
            return;
        }
        if let (Some(deadline), None) = (self.deadline, self.term_sent) {
            if now >= deadline {
                let secs = self.timeout.unwrap_or_default().as_secs_f64();
                say(&format!(
                    "timeout: the job did not finish within {secs} s; killing {} rank(s)",
                    self.live().count()
                ));
                self.fail(EXIT_TIMEOUT);
            }
        }
        if let (Some(term), None) = (self.term_sent, self.kill_sent) {
            if now >= term + KILL_GRACE {
                let left: Vec<String> = self.live().map(|(r, _)| r.to_string()).collect();
                if !left.is_empty() {
                    say(&format!(
                        "rank(s) {} still running {} s after SIGTERM; sending SIGKILL",
                        left.join(","),
                        KILL_GRACE.as_secs()
                    ));
                    self.signal_all(Signal::SIGKILL);
                }
                self.kill_sent = Some(now);
            }
        }
        if let Some(kill) = self.kill_sent {
            if now >= kill + GIVE_UP_AFTER {
                let left: Vec<String> = self.live().map(|(r, _)| r.to_string()).collect();
                if !left.is_empty() {
                    say(&format!(
                        "rank(s) {} did not exit even after SIGKILL; giving up on them",
                        left.join(",")
                    ));
                    self.gave_up = true;
                }
            }
        }
    }

    /// Drains the signalfd; returns whether a child may have exited.
    fn on_signals(&mut self) -> bool {
        let mut child_exited = false;
        while let Ok(Some(info)) = self.signals.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            match sig {
                Signal::SIGCHLD => child_exited = true,
                _ if self.interrupted.is_none() => {
                    self.interrupted = Some(sig);
                    say(&format!("got {}; forwarding it to the ranks", sig.as_str()));
                    self.signal_all(sig);
                }
                _ => {
                    say(&format!("got {} again; killing the job", sig.as_str()));
                    if self.term_sent.is_none() {
                        self.term_sent = Some(Instant::now());
                    }
                    self.kill_sent = Some(Instant::now());
                    self.signal_all(Signal::SIGKILL);
                }
            }
        }
        child_exited
    }

    fn on_events(&mut self, events: Vec<ServerEvent>) {
        for event in events {
            match event {
                ServerEvent::Aborted {
                    rank,
                    code,
                    message,
                } => {
                    // Exit codes are 8 bits; an abort must still fail the
                    // job, so a code that wraps to 0 becomes 1.
                    let exit = match code.rem_euclid(256) {
                        0 => 1,
                        c => c,
                    };
                    say(&format!(
                        "rank {rank} aborted the job (exit code {code}): {message}"
                    ));
                    self.fail(exit);
                }
                ServerEvent::BadRequest { rank, reason } => {
                    say(&format!("rank {rank} broke the PMI protocol: {reason}"));
                    self.fail(1);
                }
                ServerEvent::Finalized { rank } => {
                    tracing::debug!(rank, "PMI finalize");
                }
                ServerEvent::Disconnected { rank, finalized } => {
                    tracing::debug!(rank, finalized, "PMI connection closed");
                }
                // `ServerEvent` is non_exhaustive: an event a newer server
                // reports needs no action from this launcher.
                other => tracing::debug!(?other, "PMI server event"),
            }
        }
    }

    fn reap(&mut self) {
        let mut exits = Vec::new();
        for (rank, p) in self.ranks.iter_mut().enumerate() {
            if p.status.is_some() {
                continue;
            }
            match p.child.try_wait() {
                Ok(Some(status)) => {
                    p.status = Some(status);
                    exits.push((rank, status));
                }
                Ok(None) => {}
                Err(e) => {
                    // Cannot happen for our own unreaped child; if it does,
                    // count the rank as failed rather than wait forever.
                    say(&format!("cannot wait for rank {rank}: {e}"));
                    p.status = Some(ExitStatus::from_raw(1 << 8));
                    exits.push((rank, ExitStatus::from_raw(1 << 8)));
                }
            }
        }
        for (rank, status) in exits {
            let code = status_code(status);
            if code != 0 && self.exit_code.is_none() && self.term_sent.is_none() {
                let how = match status.signal() {
                    Some(sig) => format!("was killed by signal {sig} ({})", signal_name(sig)),
                    None => format!("exited with code {code}"),
                };
                let others = self.live().count();
                if others > 0 {
                    say(&format!(
                        "rank {rank} {how}; killing the other {others} rank(s)"
                    ));
                } else {
                    say(&format!("rank {rank} {how}"));
                }
            }
            if code != 0 {
                self.fail(code);
            }
        }
        if self.all_exited.is_none() && self.live().next().is_none() {
            self.all_exited = Some(Instant::now());
        }
    }
}

/// ferryrun holds up to four descriptors per rank (two socket ends, two
/// pipes); raise the soft limit towards the hard one if that needs more.
/// Returns the original limits when they were changed, for the ranks.
fn raise_nofile_limit(ranks: u32) -> Option<(u64, u64)> {
    let needed = 4 * u64::from(ranks) + 64;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft >= needed {
        return None;
    }
    // If even the hard limit is too low, creating the sockets fails with
    // a clear "Too many open files" message.
    setrlimit(Resource::RLIMIT_NOFILE, needed.min(hard), hard).ok()?;
    Some((soft, hard))
}

fn show(program: &OsStr) -> String {
    format!("{:?}", program.to_string_lossy())
}
