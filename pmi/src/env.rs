//! Finding the launcher: `PMI_FD`, `PMI_PORT`, `PMI_ID`, `PMI_RANK`,
//! `PMI_SIZE`, read the way MPICH's simple PMI client reads them, and the
//! protocol version: `FERRY_PMI`, else PMI-2 when `PMI_JOBID` is set (see
//! [`choose_version`]).

use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use ferry_core::{BootstrapError, Rank};

use super::client::{PmiClient, PmiVersion};
use super::conn::{Conn, Stream};
use super::ffi::adopt_inherited_socket;
use super::reply::parse_int;
use super::v2::client::Launch;
use super::wire::{excerpt, Message};

/// The variable that overrides the protocol choice: `1` or `2`.
pub(crate) const VERSION_VAR: &str = "FERRY_PMI";

/// The launcher variables, as read from the environment (a plain struct so
/// the decision logic is testable without touching the real environment).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PmiEnv {
    pub(crate) fd: Option<String>,
    pub(crate) port: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) rank: Option<String>,
    pub(crate) size: Option<String>,
    /// `PMI_JOBID`: set by Slurm's `mpi/pmi2` plugin for every task.
    pub(crate) jobid: Option<String>,
    /// `FERRY_PMI`: the user's choice of protocol version.
    pub(crate) version: Option<String>,
}

impl PmiEnv {
    pub(crate) fn from_process() -> Result<Self, BootstrapError> {
        let var = |name: &str| match std::env::var(name) {
            Ok(v) => Ok(Some(v)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(BootstrapError::Protocol(format!(
                "launcher environment: {name}={v:?} is not valid text"
            ))),
        };
        Ok(PmiEnv {
            fd: var("PMI_FD")?,
            port: var("PMI_PORT")?,
            id: var("PMI_ID")?,
            rank: var("PMI_RANK")?,
            size: var("PMI_SIZE")?,
            jobid: var("PMI_JOBID")?,
            version: var(VERSION_VAR)?,
        })
    }
}

/// Parses a launcher variable as a non-negative integer no larger than `max`.
fn number(name: &str, value: &str, max: i64) -> Result<i64, BootstrapError> {
    match parse_int(value) {
        Some(n) if (0..=max).contains(&n) => Ok(n),
        _ => Err(BootstrapError::Protocol(format!(
            "launcher environment: {name}={value:?} is not a number between 0 and {max}"
        ))),
    }
}

/// Rank and size from `PMI_RANK`/`PMI_SIZE`; both are required when the
/// connection itself does not tell us (MPICH would default them to 0 and 1,
/// which would silently turn a broken launch into N singletons).
fn rank_size_from_env(env: &PmiEnv) -> Result<(Rank, u32), BootstrapError> {
    let missing = |name: &str| {
        BootstrapError::Protocol(format!(
            "launcher environment: {name} is not set although PMI_FD or PMI_PORT is"
        ))
    };
    let rank = env.rank.as_deref().ok_or_else(|| missing("PMI_RANK"))?;
    let size = env.size.as_deref().ok_or_else(|| missing("PMI_SIZE"))?;
    let rank = number("PMI_RANK", rank, i64::from(Rank::MAX))? as Rank;
    let size = number("PMI_SIZE", size, i64::from(Rank::MAX))? as u32;
    Ok((rank, size))
}

impl PmiClient {
    /// Connects to the launcher named by the environment, or returns
    /// `Ok(None)` when there is none (a singleton run: neither `PMI_FD` nor
    /// `PMI_PORT` is set).
    ///
    /// - `PMI_FD` (ferryrun, Hydra's default): an inherited connected
    ///   socket; `PMI_RANK` and `PMI_SIZE` give rank and size. The
    ///   descriptor is made close-on-exec so programs this process starts
    ///   do not inherit the job's PMI channel.
    /// - `PMI_PORT=host:port` (Hydra's `-pmi-port`): a TCP connection; with
    ///   `PMI_ID`, rank and size come from the `initack` exchange,
    ///   otherwise from `PMI_RANK`/`PMI_SIZE`.
    ///
    /// The protocol is PMI-1 unless `FERRY_PMI=2`, or `PMI_JOBID` is set
    /// and `FERRY_PMI` is not `1` (see the crate docs, *Which version*).
    /// PMI-2 (Slurm's `srun --mpi=pmi2`) runs over `PMI_FD` only; rank and
    /// size come from its `fullinit` reply and must match `PMI_RANK` and
    /// `PMI_SIZE`.
    ///
    /// A process can take `PMI_FD` only once: a second call fails.
    ///
    /// # Errors
    /// [`BootstrapError::Protocol`] for malformed variables or replies,
    /// [`BootstrapError::Io`] when the launcher cannot be reached,
    /// [`BootstrapError::Invalid`] for a `FERRY_PMI` other than `1` or `2`,
    /// or `FERRY_PMI=2` without `PMI_FD`.
    pub fn from_env() -> Result<Option<PmiClient>, BootstrapError> {
        connect(&PmiEnv::from_process()?)
    }
}

/// The protocol version for a launch through `env`:
/// 1. `FERRY_PMI=1` or `FERRY_PMI=2`, if set (anything else is an error);
/// 2. otherwise PMI-2 when `PMI_JOBID` is set, PMI-1 when it is not.
///
/// `PMI_JOBID` is what sets Slurm's `srun --mpi=pmi2` apart: its plugin
/// sets `PMI_FD`, `PMI_RANK`, `PMI_SIZE` and `PMI_JOBID` (`<job>.<step>`)
/// in every task (`src/plugins/mpi/pmi2/mpi_pmi2.c`), and MPICH's own PMI-2
/// client sends it back in `fullinit`. Hydra and `ferryrun` set the first
/// three only (and `ferryrun` removes an inherited `PMI_JOBID` from its
/// ranks). `SLURM_MPI_TYPE` is no substitute: it names the plugin asked
/// for, not the one serving this process, and it is inherited by whatever
/// a task starts.
///
/// # Errors
/// [`BootstrapError::Invalid`] for a `FERRY_PMI` other than `1` or `2`.
pub(crate) fn choose_version(env: &PmiEnv) -> Result<PmiVersion, BootstrapError> {
    match env.version.as_deref().map(str::trim) {
        Some("1") => Ok(PmiVersion::V1),
        Some("2") => Ok(PmiVersion::V2),
        None | Some("") if env.jobid.is_some() => Ok(PmiVersion::V2),
        None | Some("") => Ok(PmiVersion::V1),
        Some(other) => Err(BootstrapError::Invalid(format!(
            "{VERSION_VAR}={other:?}: expected 1 (PMI-1) or 2 (PMI-2)"
        ))),
    }
}

pub(crate) fn connect(env: &PmiEnv) -> Result<Option<PmiClient>, BootstrapError> {
    if env.fd.is_none() && env.port.is_none() {
        return Ok(None);
    }
    let version = choose_version(env)?;
    if version == PmiVersion::V2 {
        return connect_v2(env).map(Some);
    }
    if let Some(fd) = &env.fd {
        let (rank, size) = rank_size_from_env(env)?;
        return PmiClient::v1(inherited(fd)?, rank, size).map(Some);
    }
    if let Some(port) = &env.port {
        let (host, p) = port.rsplit_once(':').ok_or_else(|| {
            BootstrapError::Protocol(format!(
                "launcher environment: PMI_PORT={port:?} is not host:port"
            ))
        })?;
        let p = number("PMI_PORT", p, i64::from(u16::MAX))? as u16;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let tcp = TcpStream::connect((host, p)).map_err(|e| {
            BootstrapError::Io(format!(
                "connecting to the launcher at PMI_PORT={port}: {e}"
            ))
        })?;
        // PMI is a chain of small request/reply lines: Nagle would add a
        // delay to every one of them.
        let _ = tcp.set_nodelay(true);
        let mut conn = Conn::new(Stream::Tcp(tcp));
        let (rank, size) = match &env.id {
            Some(id) => {
                let id = number("PMI_ID", id, i64::from(Rank::MAX))?;
                initack(&mut conn, id)?
            }
            None => rank_size_from_env(env)?,
        };
        return PmiClient::v1(conn, rank, size).map(Some);
    }
    Ok(None)
}

/// The connection `PMI_FD` names, adopted and made close-on-exec.
fn inherited(fd: &str) -> Result<Conn, BootstrapError> {
    let fd = number("PMI_FD", fd, i64::from(i32::MAX))? as i32;
    let owned = adopt_inherited_socket(fd)
        .map_err(|e| BootstrapError::Protocol(format!("launcher environment: {e}")))?;
    let stream = UnixStream::from(owned);
    // The launcher had to leave the descriptor inheritable for us; we do
    // not want our own children to inherit it in turn.
    nix::fcntl::fcntl(
        &stream,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map_err(|e| BootstrapError::Io(format!("marking PMI_FD close-on-exec: {e}")))?;
    Ok(Conn::new(Stream::Unix(stream)))
}

/// PMI-2 over `PMI_FD` (the only transport Slurm's plugin uses): the rank
/// is sent as `pmirank` and must come back in `fullinit`'s reply.
fn connect_v2(env: &PmiEnv) -> Result<PmiClient, BootstrapError> {
    let Some(fd) = &env.fd else {
        return Err(BootstrapError::Invalid(format!(
            "PMI-2 was chosen ({VERSION_VAR}=2) but PMI_FD is not set; this client speaks \
             PMI-2 only over an inherited socket, as Slurm's mpi/pmi2 plugin passes it"
        )));
    };
    let (rank, size) = rank_size_from_env(env)?;
    let launch = Launch {
        rank,
        size: Some(size),
        jobid: env.jobid.clone(),
    };
    PmiClient::v2(inherited(fd)?, &launch)
}

/// The `PMI_PORT` handshake: `cmd=initack pmiid=ID`, answered by
/// `cmd=initack`, then `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=D`.
fn initack(conn: &mut Conn, id: i64) -> Result<(Rank, u32), BootstrapError> {
    let line = Message::new("initack")
        .arg("pmiid", id.to_string())
        .encode()
        .map_err(|e| BootstrapError::Invalid(format!("initack: {e}")))?;
    conn.send(line.as_bytes())?;
    let mut expect = |key: Option<&str>| -> Result<Option<i64>, BootstrapError> {
        let line = conn.read_line("initack")?;
        let proto = |what: String| {
            BootstrapError::Protocol(format!("reply to `initack`: {what} in {}", excerpt(&line)))
        };
        let msg = Message::parse(&line).map_err(|e| proto(e.to_string()))?;
        let want_cmd = if key.is_some() { "set" } else { "initack" };
        if msg.cmd() != want_cmd {
            return Err(proto(format!(
                "expected `cmd={want_cmd}`, got `cmd={}`",
                msg.cmd()
            )));
        }
        let Some(key) = key else {
            return match msg.args().first() {
                None => Ok(None),
                Some((k, _)) => Err(proto(format!("unexpected key `{k}`"))),
            };
        };
        match msg.args() {
            [(k, v)] if k == key => parse_int(v)
                .map(Some)
                .ok_or_else(|| proto(format!("`{k}={v}` is not an integer"))),
            _ => Err(proto(format!("expected exactly `{key}=<n>`"))),
        }
    };
    expect(None)?;
    let size = expect(Some("size"))?.unwrap_or(-1);
    let rank = expect(Some("rank"))?.unwrap_or(-1);
    expect(Some("debug"))?;
    if !(1..=i64::from(Rank::MAX)).contains(&size) || !(0..size).contains(&rank) {
        return Err(BootstrapError::Protocol(format!(
            "reply to `initack`: rank {rank} in a job of size {size}"
        )));
    }
    Ok((rank as Rank, size as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_launcher_means_singleton() {
        let env = PmiEnv {
            rank: Some("0".into()),
            size: Some("4".into()),
            ..PmiEnv::default()
        };
        assert!(connect(&env).unwrap().is_none());
        assert!(connect(&PmiEnv::default()).unwrap().is_none());
    }

    #[test]
    fn version_follows_ferry_pmi_then_pmi_jobid() {
        let with = |version: Option<&str>, jobid: Option<&str>| {
            choose_version(&PmiEnv {
                fd: Some("7".into()),
                version: version.map(Into::into),
                jobid: jobid.map(Into::into),
                ..PmiEnv::default()
            })
        };
        // ferryrun and Hydra: no PMI_JOBID.
        assert_eq!(with(None, None), Ok(PmiVersion::V1));
        // srun --mpi=pmi2.
        assert_eq!(with(None, Some("17.0")), Ok(PmiVersion::V2));
        assert_eq!(with(Some(""), Some("17.0")), Ok(PmiVersion::V2));
        assert_eq!(with(Some("1"), Some("17.0")), Ok(PmiVersion::V1));
        assert_eq!(with(Some("2"), None), Ok(PmiVersion::V2));
        assert_eq!(with(Some(" 2 "), None), Ok(PmiVersion::V2));
        let err = with(Some("pmix"), None).unwrap_err();
        assert!(
            matches!(&err, BootstrapError::Invalid(m) if m.contains("FERRY_PMI=\"pmix\"")),
            "{err:?}"
        );
    }

    #[test]
    fn pmi2_needs_pmi_fd() {
        let env = PmiEnv {
            port: Some("localhost:1".into()),
            rank: Some("0".into()),
            size: Some("1".into()),
            version: Some("2".into()),
            ..PmiEnv::default()
        };
        let err = connect(&env).unwrap_err();
        assert!(
            matches!(&err, BootstrapError::Invalid(m) if m.contains("PMI_FD is not set")),
            "{err:?}"
        );
        // A bad FERRY_PMI does not matter for a singleton.
        let single = PmiEnv {
            version: Some("x".into()),
            ..PmiEnv::default()
        };
        assert!(connect(&single).unwrap().is_none());
    }

    #[test]
    fn malformed_variables_are_named() {
        let err = |env: PmiEnv| match connect(&env) {
            Err(BootstrapError::Protocol(m)) => m,
            other => panic!("expected a protocol error, got {other:?}"),
        };
        let base = PmiEnv {
            fd: Some("7".into()),
            rank: Some("0".into()),
            size: Some("2".into()),
            ..PmiEnv::default()
        };
        let m = err(PmiEnv {
            rank: None,
            ..base.clone()
        });
        assert!(m.contains("PMI_RANK is not set"), "{m}");
        let m = err(PmiEnv {
            size: Some("two".into()),
            ..base.clone()
        });
        assert!(m.contains("PMI_SIZE=\"two\""), "{m}");
        let m = err(PmiEnv {
            fd: Some("-3".into()),
            ..base.clone()
        });
        assert!(m.contains("PMI_FD=\"-3\""), "{m}");
        let m = err(PmiEnv {
            fd: Some("1".into()),
            ..base.clone()
        });
        assert!(m.contains("standard stream"), "{m}");
        let m = err(PmiEnv {
            fd: None,
            port: Some("nohost".into()),
            ..base.clone()
        });
        assert!(m.contains("not host:port"), "{m}");
        let m = err(PmiEnv {
            fd: None,
            port: Some("h:99999".into()),
            ..base
        });
        assert!(m.contains("PMI_PORT=\"99999\""), "{m}");
    }
}
