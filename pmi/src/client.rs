//! The PMI-1 client: one connection to the launcher, strict request/reply.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError, Rank};

use super::reply::{parse_reply, Maxes, Reply, Request};
use super::wire::{check_key, check_value, excerpt, Message, MAX_LINE, MAX_REQUEST_LINE};

/// The connection to the launcher: an inherited Unix socket (`PMI_FD`) or a
/// TCP connection (`PMI_PORT`).
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A line-oriented connection with a bounded read buffer.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Stream,
    /// Bytes received but not yet consumed as a line.
    buf: Vec<u8>,
}

impl Conn {
    pub(crate) fn new(stream: Stream) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, line: &str) -> Result<(), BootstrapError> {
        self.stream
            .write_all(line.as_bytes())
            .map_err(|e| BootstrapError::Io(format!("sending to the launcher: {e}")))
    }

    /// Reads one line, `\n` included, of at most [`MAX_LINE`] bytes.
    pub(crate) fn read_line(&mut self, op: &str) -> Result<Vec<u8>, BootstrapError> {
        let mut chunk = [0u8; 1024];
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                return Ok(self.buf.drain(..=end).collect());
            }
            if self.buf.len() >= MAX_LINE {
                return Err(BootstrapError::Protocol(format!(
                    "reply to `{op}`: line is longer than {MAX_LINE} bytes: {}",
                    excerpt(&self.buf)
                )));
            }
            // Never read past the bound, so a flood costs at most MAX_LINE.
            let room = (MAX_LINE - self.buf.len()).min(chunk.len());
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) if self.buf.is_empty() => {
                    return Err(BootstrapError::Io(format!(
                        "the launcher closed the PMI connection while we waited for the reply to `{op}`"
                    )))
                }
                Ok(0) => {
                    return Err(BootstrapError::Protocol(format!(
                        "reply to `{op}`: connection closed in the middle of a line: {}",
                        excerpt(&self.buf)
                    )))
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(BootstrapError::Io(format!(
                        "timed out waiting for the reply to `{op}`"
                    )))
                }
                Err(e) => {
                    return Err(BootstrapError::Io(format!(
                        "reading the reply to `{op}`: {e}"
                    )))
                }
            }
        }
    }

    /// True when the server sent bytes nobody asked for.
    pub(crate) fn has_unread(&self) -> bool {
        !self.buf.is_empty()
    }
}

/// A PMI-1 client: this process's rank, size and job-wide key-value space,
/// served by `ferryrun` or MPICH's Hydra (`mpiexec.hydra`).
///
/// # Keys and values
/// PMI-1 carries keys and values as bare tokens on a text line, so:
/// - keys are 1..`keylen_max` bytes of `[A-Za-z0-9_/-]` (the characters
///   MPICH's parser accepts), and must not start with `PMI_`, which Hydra
///   reserves for its own attributes (reading them with `get` is fine);
/// - values are 1..`vallen_max` bytes of printable ASCII other than space
///   and `\` (`=` is fine). Encode anything else (hex, base64) first.
///
/// Anything outside these rules is refused with [`BootstrapError::Invalid`]
/// before it reaches the wire, rather than being silently cut or mangled by
/// the server. The whole request line must also fit MPICH's 1024-byte
/// `PMIU_MAXLINE`.
///
/// # Errors and the connection
/// Replies are checked strictly (see [`super::reply`]). After an I/O or
/// protocol error the line stream's position is unknown, so the client
/// refuses further requests with [`BootstrapError::Io`] instead of reading
/// a reply that belongs to another request. [`BootstrapError::Invalid`],
/// `NotFound` and `Refused` leave it usable.
#[derive(Debug)]
pub struct PmiClient {
    conn: Conn,
    rank: Rank,
    size: u32,
    kvsname: String,
    maxes: Maxes,
    /// Why the connection is no longer usable, once it is not.
    broken: Option<String>,
}

impl PmiClient {
    /// Runs the PMI-1 handshake (`init`, `get_maxes`, `get_my_kvsname`) on a
    /// connected stream. `rank` and `size` come from the launcher's
    /// environment (`PMI_RANK`, `PMI_SIZE`) or from the `initack` exchange.
    pub(crate) fn handshake(conn: Conn, rank: Rank, size: u32) -> Result<Self, BootstrapError> {
        if size == 0 || rank < 0 || rank as u64 >= u64::from(size) {
            return Err(BootstrapError::Protocol(format!(
                "the launcher gave rank {rank} in a job of size {size}"
            )));
        }
        let mut client = PmiClient {
            conn,
            rank,
            size,
            kvsname: String::new(),
            maxes: Maxes {
                kvsname_max: 256,
                keylen_max: 64,
                vallen_max: 1024,
            },
            broken: None,
        };
        let init = Message::new("init")
            .arg("pmi_version", "1")
            .arg("pmi_subversion", "1");
        client.transact(Request::Init, &init)?;
        if let Reply::Maxes(m) = client.transact(Request::GetMaxes, &Message::new("get_maxes"))? {
            client.maxes = m;
        }
        if let Reply::Kvsname(name) =
            client.transact(Request::GetMyKvsname, &Message::new("get_my_kvsname"))?
        {
            client.kvsname = name;
        }
        Ok(client)
    }

    /// Connects over an already connected Unix stream (for instance one
    /// end of a `UnixStream::pair` served by [`super::server::PmiServer`])
    /// and runs the handshake.
    ///
    /// # Errors
    /// [`BootstrapError::Protocol`] if `rank`/`size` are inconsistent or the
    /// server's replies are malformed; [`BootstrapError::Io`] if the
    /// connection fails; [`BootstrapError::Refused`] if the server says no.
    pub fn from_stream(stream: UnixStream, rank: Rank, size: u32) -> Result<Self, BootstrapError> {
        Self::handshake(Conn::new(Stream::Unix(stream)), rank, size)
    }

    /// The server's limits from `get_maxes`.
    pub fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// The job's kvsname (also [`Bootstrap::job_id`]).
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Bounds how long any one request waits for its reply (`None`, the
    /// default, waits forever: a barrier legitimately waits for the slowest
    /// rank). A timeout makes the connection unusable, as any I/O error.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] if the socket option cannot be set.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), BootstrapError> {
        self.conn
            .stream
            .set_read_timeout(timeout)
            .map_err(|e| BootstrapError::Io(format!("setting the PMI reply timeout: {e}")))
    }

    /// The application number (0 unless the launcher started several
    /// executables, MPMD style).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn get_appnum(&mut self) -> Result<i32, BootstrapError> {
        match self.transact(Request::GetAppnum, &Message::new("get_appnum"))? {
            Reply::Appnum(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// The universe size: how many processes the job may grow to, or
    /// `None` when the launcher reports it as unknown/unlimited (-1, as
    /// Hydra does by default).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn get_universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        match self.transact(Request::GetUniverseSize, &Message::new("get_universe_size"))? {
            Reply::UniverseSize(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// Tells the launcher this rank is done with PMI and closes the
    /// connection. Launchers treat a rank that exits without finalizing as
    /// having failed its peers (ferryrun fails their later barriers).
    ///
    /// # Errors
    /// See [`PmiClient`]'s error section.
    pub fn finalize(mut self) -> Result<(), BootstrapError> {
        self.transact(Request::Finalize, &Message::new("finalize"))?;
        Ok(())
    }

    /// Asks the launcher to kill the whole job with exit code `code` and
    /// report `message`. PMI-1 sends no reply to `abort`; this returns once
    /// the request is written, and the caller should then exit with `code`
    /// itself (the launcher kills this process too, but not instantly).
    ///
    /// `message` is sent as a single token: characters PMI-1 cannot carry
    /// (spaces included) become `_`, and it is cut to fit one line.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] if the request cannot be written.
    pub fn abort(mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        self.usable()?;
        let mut text: String = message
            .chars()
            .map(|c| {
                if c.is_ascii() && super::wire::is_sendable_value_byte(c as u8) {
                    c
                } else {
                    '_'
                }
            })
            .take(MAX_REQUEST_LINE - 64)
            .collect();
        if text.is_empty() {
            text.push('-');
        }
        let line = Message::new("abort")
            .arg("exitcode", code.to_string())
            .arg("message", text)
            .encode()
            .map_err(|e| BootstrapError::Invalid(format!("abort message: {e}")))?;
        self.conn.send(&line)
    }

    /// Checks a key against the protocol's and the server's limits.
    fn check_key(&self, key: &str) -> Result<(), BootstrapError> {
        check_key(key).map_err(|_| {
            BootstrapError::Invalid(format!(
                "key {key:?}: PMI-1 keys are non-empty and use only [A-Za-z0-9_/-]"
            ))
        })?;
        // keylen_max is a C buffer size: it includes the terminating NUL.
        if key.len() >= self.maxes.keylen_max {
            return Err(BootstrapError::Invalid(format!(
                "key {key:?} is {} bytes; the launcher allows at most {}",
                key.len(),
                self.maxes.keylen_max - 1
            )));
        }
        Ok(())
    }

    /// Sends `req`, reads one reply line and checks it against `kind`.
    fn transact(&mut self, kind: Request, req: &Message) -> Result<Reply, BootstrapError> {
        self.usable()?;
        let line = req
            .encode()
            .map_err(|e| BootstrapError::Invalid(format!("`{}` request: {e}", kind.command())))?;
        if line.len() > MAX_REQUEST_LINE {
            return Err(BootstrapError::Invalid(format!(
                "`{}` request is {} bytes; PMI-1 servers read at most {MAX_REQUEST_LINE}",
                kind.command(),
                line.len()
            )));
        }
        let result = self.exchange(kind, &line);
        if let Err(BootstrapError::Io(reason) | BootstrapError::Protocol(reason)) = &result {
            self.broken = Some(reason.clone());
        }
        result
    }

    fn exchange(&mut self, kind: Request, line: &str) -> Result<Reply, BootstrapError> {
        if self.conn.has_unread() {
            return Err(BootstrapError::Protocol(format!(
                "the launcher sent {} unsolicited byte(s) before `{}`",
                self.conn.buf.len(),
                kind.command()
            )));
        }
        self.conn.send(line)?;
        let reply = self.conn.read_line(kind.command())?;
        parse_reply(kind, &reply)
    }

    fn usable(&self) -> Result<(), BootstrapError> {
        match &self.broken {
            None => Ok(()),
            Some(reason) => Err(BootstrapError::Io(format!(
                "PMI connection unusable after an earlier error ({reason})"
            ))),
        }
    }
}

/// A reply variant that `parse_reply` cannot return for the request; kept
/// as an error rather than a panic.
fn unexpected(reply: Reply) -> BootstrapError {
    BootstrapError::Protocol(format!("internal: unexpected reply {reply:?}"))
}

impl Bootstrap for PmiClient {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn job_id(&self) -> &str {
        &self.kvsname
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.check_key(key)?;
        if key.starts_with("PMI_") {
            return Err(BootstrapError::Invalid(format!(
                "key {key:?}: the PMI_ prefix is reserved for the launcher"
            )));
        }
        check_value(key, value).map_err(|_| {
            BootstrapError::Invalid(format!(
                "value {value:?} of key {key:?}: PMI-1 values are non-empty printable \
                 ASCII without spaces or backslashes"
            ))
        })?;
        if value.len() >= self.maxes.vallen_max {
            return Err(BootstrapError::Invalid(format!(
                "value of key {key:?} is {} bytes; the launcher allows at most {}",
                value.len(),
                self.maxes.vallen_max - 1
            )));
        }
        let req = Message::new("put")
            .arg("kvsname", self.kvsname.clone())
            .arg("key", key)
            .arg("value", value);
        self.transact(Request::Put, &req)?;
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.check_key(key)?;
        let req = Message::new("get")
            .arg("kvsname", self.kvsname.clone())
            .arg("key", key);
        match self.transact(Request::Get, &req)? {
            Reply::Get(Some(v)) => Ok(v),
            Reply::Get(None) => Err(BootstrapError::NotFound(key.to_owned())),
            other => Err(unexpected(other)),
        }
    }

    fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.transact(Request::Barrier, &Message::new("barrier_in"))?;
        Ok(())
    }
}
