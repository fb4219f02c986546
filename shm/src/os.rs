//! The operating-system calls the device makes, as checked wrappers that
//! return typed errors (the `syscall!` pattern of mio). All of them go
//! through rustix's and nix's safe interfaces, so this module needs no
//! `unsafe`; the raw access to the mapping lives in [`crate::ffi`].

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use memmap2::MmapRaw;
use rustix::event::epoll;
use rustix::net::{
    self, AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use rustix::process::{Pid, PidfdFlags};

/// Fills `buf` from `/dev/urandom`.
pub(crate) fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    File::open("/dev/urandom")?.read_exact(buf)
}

/// 32 random bytes from `/dev/urandom`.
pub(crate) fn random_bytes32() -> io::Result<[u8; 32]> {
    let mut b = [0u8; 32];
    random_bytes(&mut b)?;
    Ok(b)
}

/// A random `u64` from `/dev/urandom`.
pub(crate) fn random_u64() -> io::Result<u64> {
    let mut b = [0u8; 8];
    random_bytes(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Keeps `[A-Za-z0-9_-]` of a job id (at most 48 characters), so it is
/// safe in a file name and a socket name. An empty result becomes `job`.
pub(crate) fn sanitize_job_id(id: &str) -> String {
    let s: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(48)
        .collect();
    if s.is_empty() {
        "job".to_owned()
    } else {
        s
    }
}

/// Creates the segment file: it must not exist (`O_EXCL`), mode 0600.
pub(crate) fn create_segment_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Opens an existing segment file for reading and writing.
pub(crate) fn open_segment_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

/// Maps the whole file, shared and writable.
pub(crate) fn map(file: &File) -> io::Result<MmapRaw> {
    // MAP_POPULATE: the pages are faulted in here, at setup, rather than
    // by the first message through each cell (a 64 KiB cell is 16 page
    // faults on each side, which took the first 1,000 round trips of a
    // 64 KiB ping-pong from 3.7 to 4.4-5.9 us on average).
    memmap2::MmapOptions::new().populate().map_raw(file)
}

/// Lets any process of ours read us with CMA when Yama's ptrace scope is 1
/// (harmless without Yama, where it fails with `EINVAL`).
pub(crate) fn allow_cma_from_any() {
    if let Err(e) = rustix::process::set_ptracer(rustix::process::PTracer::Any) {
        tracing::debug!(error = %e, "PR_SET_PTRACER(ANY) failed (no Yama?)");
    }
}

/// Why a CMA copy failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmaError {
    /// The peer process is gone (`ESRCH`).
    NoProcess,
    /// An address range is not mapped in one of the processes (`EFAULT`), or
    /// the copy made no progress.
    Fault,
    /// The kernel forbids it (`EPERM`: Yama, a seccomp filter, another
    /// user).
    Denied,
    /// Anything else, with its errno.
    Other(i32),
}

fn cma_error(e: nix::errno::Errno) -> CmaError {
    match e {
        nix::errno::Errno::ESRCH => CmaError::NoProcess,
        nix::errno::Errno::EFAULT => CmaError::Fault,
        nix::errno::Errno::EPERM => CmaError::Denied,
        e => CmaError::Other(e as i32),
    }
}

fn nix_pid(pid: u32) -> Result<nix::unistd::Pid, CmaError> {
    i32::try_from(pid)
        .map(nix::unistd::Pid::from_raw)
        .map_err(|_| CmaError::NoProcess)
}

/// Reads `local.len()` bytes at `remote` in process `pid` into `local`
/// (`process_vm_readv`), looping over partial transfers.
pub(crate) fn cma_read(pid: u32, local: &mut [u8], remote: u64) -> Result<(), CmaError> {
    let pid = nix_pid(pid)?;
    let mut done = 0;
    while done < local.len() {
        let base = usize::try_from(remote)
            .ok()
            .and_then(|r| r.checked_add(done))
            .ok_or(CmaError::Fault)?;
        let rest = &mut local[done..];
        let remote_iov = [nix::sys::uio::RemoteIoVec {
            base,
            len: rest.len(),
        }];
        let n = nix::sys::uio::process_vm_readv(pid, &mut [io::IoSliceMut::new(rest)], &remote_iov)
            .map_err(cma_error)?;
        if n == 0 {
            return Err(CmaError::Fault);
        }
        done += n;
    }
    Ok(())
}

/// Writes `local` to `remote` in process `pid` (`process_vm_writev`),
/// looping over partial transfers.
pub(crate) fn cma_write(pid: u32, local: &[u8], remote: u64) -> Result<(), CmaError> {
    let pid = nix_pid(pid)?;
    let mut done = 0;
    while done < local.len() {
        let base = usize::try_from(remote)
            .ok()
            .and_then(|r| r.checked_add(done))
            .ok_or(CmaError::Fault)?;
        let rest = &local[done..];
        let remote_iov = [nix::sys::uio::RemoteIoVec {
            base,
            len: rest.len(),
        }];
        let n = nix::sys::uio::process_vm_writev(pid, &[io::IoSlice::new(rest)], &remote_iov)
            .map_err(cma_error)?;
        if n == 0 {
            return Err(CmaError::Fault);
        }
        done += n;
    }
    Ok(())
}

/// A pidfd for `pid`: it becomes readable when the process exits.
pub(crate) fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok(rustix::process::pidfd_open(pid, PidfdFlags::empty())?)
}

/// `kill(pid, 0)` found no such process (the fallback liveness check where
/// pidfds are unavailable; a zombie still counts as alive).
pub(crate) fn pid_gone(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return true;
    };
    matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Checks that `meta` is ours and closed to everyone else: owned by this
/// process's effective uid, with no group or other permission bits.
fn check_private(meta: &std::fs::Metadata, what: &str, path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{what} {} belongs to uid {}, not to us (uid {me}): refusing it",
                path.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{what} {} has mode {:o}: others may use it; refusing it",
                path.display(),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Checks an opened shared-memory file: a regular file of ours, mode
/// 0600 or stricter (another user cannot have planted or shared it).
pub(crate) fn check_own_file(file: &File, path: &Path) -> io::Result<()> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    check_private(&meta, "shared-memory file", path)
}

/// Checks that `path` is a directory (not a symlink) of ours that nobody
/// else can enter: the home of a wake socket.
pub(crate) fn check_private_dir(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a directory", path.display()),
        ));
    }
    check_private(&meta, "wake directory", path)
}

/// Creates a private directory (mode 0700) `name(random hex)` in
/// `parent`, for this rank's wake socket; returns its path and the hex.
/// A name that exists already (nobody can predict ours, but a squatter
/// may try) is skipped for another: squatting cannot make setup fail.
pub(crate) fn create_wake_dir(
    parent: &Path,
    name: impl Fn(&str) -> String,
) -> io::Result<(std::path::PathBuf, String)> {
    use std::os::unix::fs::DirBuilderExt;
    for _ in 0..8 {
        let hex = format!("{:016x}", random_u64()?);
        let path = parent.join(name(&hex));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                check_private_dir(&path)?;
                return Ok((path, hex));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                tracing::warn!(path = %path.display(), "a wake directory name is taken (squatted?); drawing another");
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "eight random wake directory names in a row exist already",
    ))
}

/// Raises the soft descriptor limit towards the hard one if it is below
/// `needed` (a rank holds about two descriptors per local peer: a pidfd
/// and a socket connected to its wake socket). Best effort: if the limit
/// stays too low, opening the descriptors fails with `EMFILE`, named in
/// the setup error.
pub(crate) fn ensure_descriptors(needed: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let lim = getrlimit(Resource::Nofile);
    let Some(current) = lim.current else { return };
    if current >= needed {
        return;
    }
    let want = lim.maximum.map_or(needed, |max| needed.min(max));
    let raised = rustix::process::Rlimit {
        current: Some(want),
        maximum: lim.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => tracing::debug!(
            from = current,
            to = want,
            "raised the descriptor limit for the local peers"
        ),
        Err(e) => tracing::debug!(error = %e, "could not raise the descriptor limit"),
    }
}

fn unix_addr(path: &Path) -> io::Result<SocketAddrUnix> {
    SocketAddrUnix::new(path).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: cannot be a socket address ({e}; FERRY_SHM_DIR too long?)",
                path.display()
            ),
        )
    })
}

fn dgram_socket() -> io::Result<OwnedFd> {
    Ok(net::socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?)
}

/// A nonblocking datagram socket bound to `path` (inside a private wake
/// directory): the object a sleeping rank waits on.
pub(crate) fn wake_socket(path: &Path) -> io::Result<OwnedFd> {
    let fd = dgram_socket()?;
    net::bind(&fd, &unix_addr(path)?)?;
    Ok(fd)
}

/// A nonblocking datagram socket connected to the wake socket at `path`:
/// how this rank wakes that peer. The connection outlives the path (which
/// is removed after setup), and only this socket can use it.
pub(crate) fn wake_sender(path: &Path) -> io::Result<OwnedFd> {
    let fd = dgram_socket()?;
    net::connect(&fd, &unix_addr(path)?)?;
    Ok(fd)
}

/// Sends one wake-up byte on the connected `fd`; `Ok(false)` if nothing
/// was sent because the receiver's socket buffer is full (it holds
/// wake-ups already) or the peer's socket is gone (it needs none).
pub(crate) fn signal(fd: impl AsFd) -> io::Result<bool> {
    match net::send(fd, &[1], SendFlags::DONTWAIT) {
        Ok(_) => Ok(true),
        Err(
            rustix::io::Errno::AGAIN | rustix::io::Errno::CONNREFUSED | rustix::io::Errno::NOTCONN,
        ) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads and discards every pending wake-up datagram; returns how many.
pub(crate) fn drain(fd: impl AsFd) -> u32 {
    let mut buf = [0u8; 16];
    let fd = fd.as_fd();
    let mut count = 0u32;
    while net::recv(fd, &mut buf, RecvFlags::DONTWAIT).is_ok() {
        count = count.wrapping_add(1);
    }
    count
}

/// An epoll set: the device's one `wait_fd`.
pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl std::fmt::Debug for Epoll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epoll")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl Epoll {
    pub(crate) fn new() -> io::Result<Epoll> {
        Ok(Epoll {
            fd: epoll::create(epoll::CreateFlags::CLOEXEC)?,
        })
    }

    /// The fd, borrowed.
    pub(crate) fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The raw fd to poll.
    pub(crate) fn raw(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// Watches `fd` for readability, tagging its events with `data`.
    pub(crate) fn add(&self, fd: impl AsFd, data: u64) -> io::Result<()> {
        Ok(epoll::add(
            &self.fd,
            fd,
            epoll::EventData::new_u64(data),
            epoll::EventFlags::IN,
        )?)
    }

    /// Stops watching `fd`.
    pub(crate) fn remove(&self, fd: impl AsFd) -> io::Result<()> {
        Ok(epoll::delete(&self.fd, fd)?)
    }

    /// The tags of the fds that are ready now (never blocks).
    pub(crate) fn ready_now(&self, out: &mut Vec<u64>) -> io::Result<()> {
        let zero = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            // (`epoll::Event` holds a raw pointer, so it is not `Send`: a
            // stack buffer keeps the device `Send`.)
            let mut buf = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 32];
            let (events, _) = epoll::wait(&self.fd, &mut buf, Some(&zero))?;
            let n = events.len();
            out.extend(events.iter().map(|e| e.data.u64()));
            if n < 32 {
                return Ok(());
            }
        }
    }
}
