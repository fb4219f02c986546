//! The PMI-1 client: one connection to the launcher, strict request/reply
//! of newline-terminated lines (see [`crate::wire`] and [`crate::reply`]).

use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError, Rank};

use super::conn::Conn;
use super::reply::{parse_reply, Maxes, Reply, Request};
use super::wire::{check_key, check_value, Message, MAX_REQUEST_LINE};

/// The PMI-1 side of [`crate::PmiClient`] (whose docs state the key and
/// value rules and what an error does to the connection).
#[derive(Debug)]
pub(crate) struct Pmi1 {
    conn: Conn,
    rank: Rank,
    size: u32,
    kvsname: String,
    maxes: Maxes,
    /// Why the connection is no longer usable, once it is not.
    broken: Option<String>,
}

impl Pmi1 {
    /// Runs the PMI-1 handshake (`init`, `get_maxes`, `get_my_kvsname`) on a
    /// connected stream. `rank` and `size` come from the launcher's
    /// environment (`PMI_RANK`, `PMI_SIZE`) or from the `initack` exchange.
    pub(crate) fn handshake(conn: Conn, rank: Rank, size: u32) -> Result<Self, BootstrapError> {
        if size == 0 || rank < 0 || rank as u64 >= u64::from(size) {
            return Err(BootstrapError::Protocol(format!(
                "the launcher gave rank {rank} in a job of size {size}"
            )));
        }
        let mut client = Pmi1 {
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

    /// The server's limits from `get_maxes`.
    pub(crate) fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// The job's kvsname (also [`Bootstrap::job_id`]).
    pub(crate) fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Bounds how long any one request waits for its reply (`None`, the
    /// default, waits forever: a barrier legitimately waits for the slowest
    /// rank). A timeout makes the connection unusable, as any I/O error.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] if the socket option cannot be set.
    pub(crate) fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), BootstrapError> {
        self.conn.set_timeout(timeout)
    }

    /// The application number (0 unless the launcher started several
    /// executables, MPMD style).
    ///
    /// # Errors
    /// See [`crate::PmiClient`]'s error section.
    pub(crate) fn get_appnum(&mut self) -> Result<i32, BootstrapError> {
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
    /// See [`crate::PmiClient`]'s error section.
    pub(crate) fn get_universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
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
    /// See [`crate::PmiClient`]'s error section.
    pub(crate) fn finalize(mut self) -> Result<(), BootstrapError> {
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
    pub(crate) fn abort(mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
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
        self.conn.send(line.as_bytes())
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
        if self.conn.unread() > 0 {
            return Err(BootstrapError::Protocol(format!(
                "the launcher sent {} unsolicited byte(s) before `{}`",
                self.conn.unread(),
                kind.command()
            )));
        }
        self.conn.send(line.as_bytes())?;
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

impl Bootstrap for Pmi1 {
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
