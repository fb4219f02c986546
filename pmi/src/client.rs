//! [`PmiClient`]: one bootstrap type for both protocol versions, chosen
//! once when it connects (see the crate docs for the rule).

use std::os::unix::net::UnixStream;
use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError, Rank};

use super::conn::{Conn, Stream};
use super::reply::Maxes;
use super::v1::Pmi1;
use super::v2::client::{Launch, Pmi2};
use super::v2::wire::{MAX_KEY, MAX_VALUE};

/// The PMI protocol version a [`PmiClient`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PmiVersion {
    /// PMI-1 (1.1): `ferryrun`, MPICH's Hydra.
    V1,
    /// PMI-2 (2.0): Slurm's `srun --mpi=pmi2`.
    V2,
}

/// A PMI client: this process's rank, size and job-wide key-value space,
/// served over PMI-1 by `ferryrun` or MPICH's Hydra (`mpiexec.hydra`), or
/// over PMI-2 by Slurm (`srun --mpi=pmi2`). [`PmiClient::from_env`] picks
/// the version; every method works with both, as noted.
///
/// # Keys and values
/// What is valid under PMI-1 is valid under PMI-2, so that what a device
/// publishes works under every launcher:
/// - keys are 1..`keylen_max` bytes of `[A-Za-z0-9_/-]` (the characters
///   MPICH's parser accepts), and must not start with `PMI_`, which Hydra
///   and Slurm reserve for their own attributes (reading them with `get`
///   is fine);
/// - PMI-1 carries values as bare tokens on a text line, so there they
///   are 1..`vallen_max` bytes of printable ASCII other than space and `\`
///   (`=` is fine). PMI-2 also allows spaces and `\`; it sends `;` as
///   `%3B` and `%` as `%25` (Slurm's parser cannot carry `;`), decodes
///   both in `get`, and counts the encoded length against its 1024 bytes.
///   Encode anything else (hex, base64) first.
///
/// Anything outside these rules is refused with [`BootstrapError::Invalid`]
/// before it reaches the wire, rather than being silently cut or mangled by
/// the server. A PMI-1 request line must also fit MPICH's 1024-byte
/// `PMIU_MAXLINE`.
///
/// # Errors and the connection
/// Replies are checked strictly (see [`crate::reply`] and
/// [`crate::v2::reply`]). After an I/O or protocol error the stream's
/// position is unknown, so the client refuses further requests with
/// [`BootstrapError::Io`] instead of reading a reply that belongs to
/// another request. [`BootstrapError::Invalid`], `NotFound` and `Refused`
/// leave it usable.
#[derive(Debug)]
pub struct PmiClient {
    proto: Proto,
}

/// The version-specific client; chosen at setup, matched per call.
#[derive(Debug)]
enum Proto {
    V1(Pmi1),
    V2(Pmi2),
}

impl PmiClient {
    pub(crate) fn v1(conn: Conn, rank: Rank, size: u32) -> Result<Self, BootstrapError> {
        Pmi1::handshake(conn, rank, size).map(|c| PmiClient {
            proto: Proto::V1(c),
        })
    }

    pub(crate) fn v2(conn: Conn, launch: &Launch) -> Result<Self, BootstrapError> {
        Pmi2::handshake(conn, launch).map(|c| PmiClient {
            proto: Proto::V2(c),
        })
    }

    /// Connects over an already connected Unix stream (for instance one
    /// end of a `UnixStream::pair` served by [`super::server::PmiServer`])
    /// and runs the PMI-1 handshake.
    ///
    /// # Errors
    /// [`BootstrapError::Protocol`] if `rank`/`size` are inconsistent or the
    /// server's replies are malformed; [`BootstrapError::Io`] if the
    /// connection fails; [`BootstrapError::Refused`] if the server says no.
    pub fn from_stream(stream: UnixStream, rank: Rank, size: u32) -> Result<Self, BootstrapError> {
        Self::v1(Conn::new(Stream::Unix(stream)), rank, size)
    }

    /// Connects over an already connected Unix stream and runs the PMI-2
    /// handshake (`init`, `fullinit` with `pmirank=rank` and, if given,
    /// `pmijobid=jobid`, then `job-getid`). The server's rank must be
    /// `rank`; size and job id come from its replies.
    ///
    /// # Errors
    /// As [`PmiClient::from_stream`].
    pub fn from_stream_pmi2(
        stream: UnixStream,
        rank: Rank,
        jobid: Option<&str>,
    ) -> Result<Self, BootstrapError> {
        let launch = Launch {
            rank,
            size: None,
            jobid: jobid.map(str::to_owned),
        };
        Self::v2(Conn::new(Stream::Unix(stream)), &launch)
    }

    /// The protocol version this client speaks.
    pub fn version(&self) -> PmiVersion {
        match &self.proto {
            Proto::V1(_) => PmiVersion::V1,
            Proto::V2(_) => PmiVersion::V2,
        }
    }

    /// The limits keys and values are checked against: the server's, from
    /// `get_maxes`, under PMI-1; PMI-2's fixed `PMI2_MAX_KEYLEN` and
    /// `PMI2_MAX_VALLEN` under PMI-2. (Counted as C buffer sizes: one more
    /// than the longest string they hold.)
    pub fn maxes(&self) -> Maxes {
        match &self.proto {
            Proto::V1(c) => c.maxes(),
            Proto::V2(c) => Maxes {
                kvsname_max: c.jobid().len() + 1,
                keylen_max: MAX_KEY,
                vallen_max: MAX_VALUE + 1,
            },
        }
    }

    /// The job's kvsname under PMI-1, its job id (`job-getid`) under PMI-2;
    /// also [`Bootstrap::job_id`].
    pub fn kvsname(&self) -> &str {
        match &self.proto {
            Proto::V1(c) => c.kvsname(),
            Proto::V2(c) => c.jobid(),
        }
    }

    /// Bounds how long any one request waits for its reply (`None`, the
    /// default, waits forever: a barrier legitimately waits for the slowest
    /// rank). A timeout makes the connection unusable, as any I/O error.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] if the socket option cannot be set.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.set_timeout(timeout),
            Proto::V2(c) => c.set_timeout(timeout),
        }
    }

    /// The application number: 0 unless the launcher started several
    /// executables, MPMD style. Under PMI-2 it is the `appnum` of the
    /// `fullinit` reply, which Slurm always sends as -1 (not tracked).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn get_appnum(&mut self) -> Result<i32, BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.get_appnum(),
            Proto::V2(c) => Ok(c.appnum()),
        }
    }

    /// The universe size: how many processes the job may grow to, or
    /// `None` when the launcher reports it as unknown/unlimited (-1, as
    /// Hydra does by default). Under PMI-2 it is the `universeSize` job
    /// attribute (Slurm: the step's task count).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn get_universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.get_universe_size(),
            Proto::V2(c) => c.universe_size(),
        }
    }

    /// Tells the launcher this rank is done with PMI and closes the
    /// connection. Launchers treat a rank that exits without finalizing as
    /// having failed its peers (ferryrun fails their later barriers).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn finalize(self) -> Result<(), BootstrapError> {
        match self.proto {
            Proto::V1(c) => c.finalize(),
            Proto::V2(c) => c.finalize(),
        }
    }

    /// Asks the launcher to kill the whole job and report `message`. No
    /// reply comes; this returns once the request is written, and the
    /// caller should then exit with `code` itself (the launcher kills this
    /// process too, but not instantly).
    ///
    /// PMI-1 sends `code` as the job's exit code and `message` as a single
    /// token (characters it cannot carry, spaces included, become `_`).
    /// PMI-2's `abort` has no exit code (Slurm cancels the step); its
    /// message keeps spaces, and `;` becomes `,`. Both cut the message to
    /// fit one request.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] if the request cannot be written.
    pub fn abort(self, code: i32, message: &str) -> Result<(), BootstrapError> {
        match self.proto {
            Proto::V1(c) => c.abort(code, message),
            Proto::V2(c) => c.abort(code, message),
        }
    }
}

impl Bootstrap for PmiClient {
    fn rank(&self) -> Rank {
        match &self.proto {
            Proto::V1(c) => c.rank(),
            Proto::V2(c) => c.rank(),
        }
    }

    fn size(&self) -> u32 {
        match &self.proto {
            Proto::V1(c) => c.size(),
            Proto::V2(c) => c.size(),
        }
    }

    fn job_id(&self) -> &str {
        match &self.proto {
            Proto::V1(c) => c.job_id(),
            Proto::V2(c) => c.job_id(),
        }
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.put(key, value),
            Proto::V2(c) => c.put(key, value),
        }
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.get(key),
            Proto::V2(c) => c.get(key),
        }
    }

    fn barrier(&mut self) -> Result<(), BootstrapError> {
        match &mut self.proto {
            Proto::V1(c) => c.barrier(),
            Proto::V2(c) => c.barrier(),
        }
    }
}
