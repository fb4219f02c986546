//! The PMI-2 client: the opening `init` line, then length-prefixed
//! request/reply messages on the same connection.

use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError, Rank};

use super::reply::{parse_init_reply, parse_reply, FullInit, Reply, Request};
use super::wire::{encode, parse_header, Message, HEADER_LEN, MAX_KEY, MAX_VALUE};
use crate::conn::Conn;
use crate::wire::check_key;

/// The job attribute that holds the universe size (Slurm: the step's task
/// count).
const UNIVERSE_SIZE_ATTR: &str = "universeSize";

/// The PMI-2 side of [`crate::PmiClient`] (whose docs state the key and
/// value rules and what an error does to the connection).
#[derive(Debug)]
pub(crate) struct Pmi2 {
    conn: Conn,
    init: FullInit,
    jobid: String,
    /// Why the connection is no longer usable, once it is not.
    broken: Option<String>,
}

/// What the launcher's environment says, for `fullinit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    /// `PMI_RANK`: sent as `pmirank`, and must match the server's answer.
    pub(crate) rank: Rank,
    /// `PMI_SIZE`, if set: must match the server's answer.
    pub(crate) size: Option<u32>,
    /// `PMI_JOBID`, if set: sent as `pmijobid` (Slurm requires it).
    pub(crate) jobid: Option<String>,
}

impl Pmi2 {
    /// The PMI-2 handshake on a connected stream: `cmd=init pmi_version=2
    /// pmi_subversion=0` (a PMI-1 line, as MPICH's client sends it), then
    /// `fullinit` and `job-getid`.
    pub(crate) fn handshake(conn: Conn, launch: &Launch) -> Result<Self, BootstrapError> {
        let mut client = Pmi2 {
            conn,
            init: FullInit {
                rank: launch.rank,
                size: launch.size.unwrap_or(1),
                appnum: -1,
                spawner_jobid: None,
            },
            jobid: String::new(),
            broken: None,
        };
        let result = client.open(launch);
        if let Err(BootstrapError::Io(reason) | BootstrapError::Protocol(reason)) = &result {
            client.broken = Some(reason.clone());
        }
        result.map(|()| client)
    }

    fn open(&mut self, launch: &Launch) -> Result<(), BootstrapError> {
        // Slurm reads this line with one read(2) of at most 64 bytes, so
        // nothing may follow it before its reply.
        self.conn
            .send(b"cmd=init pmi_version=2 pmi_subversion=0\n")?;
        let line = self.conn.read_line("init")?;
        parse_init_reply(&line)?;
        let mut fullinit = Message::new("fullinit");
        if let Some(jobid) = &launch.jobid {
            fullinit = fullinit.arg("pmijobid", jobid.clone());
        }
        let fullinit = fullinit
            .arg("pmirank", launch.rank.to_string())
            .arg("threaded", "FALSE");
        let Reply::FullInit(init) = self.transact(Request::FullInit, &fullinit)? else {
            return Err(unexpected(Request::FullInit));
        };
        if init.rank != launch.rank || launch.size.is_some_and(|s| s != init.size) {
            return Err(BootstrapError::Protocol(format!(
                "the launcher's environment says rank {} of {}, its `fullinit` reply rank {} of {}",
                launch.rank,
                launch.size.map_or("?".into(), |s| s.to_string()),
                init.rank,
                init.size
            )));
        }
        self.init = init;
        let Reply::JobId(jobid) = self.transact(Request::JobGetId, &Message::new("job-getid"))?
        else {
            return Err(unexpected(Request::JobGetId));
        };
        self.jobid = jobid;
        Ok(())
    }

    /// The job id from `job-getid` (Slurm: `<job>.<step>`).
    pub(crate) fn jobid(&self) -> &str {
        &self.jobid
    }

    /// The application number from `fullinit` (-1: not tracked).
    pub(crate) fn appnum(&self) -> i32 {
        self.init.appnum
    }

    pub(crate) fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), BootstrapError> {
        self.conn.set_timeout(timeout)
    }

    /// The `universeSize` job attribute, `None` if the server has none.
    pub(crate) fn universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        let req = Message::new("info-getjobattr").arg("key", UNIVERSE_SIZE_ATTR);
        match self.transact(Request::GetJobAttr, &req)? {
            Reply::JobAttr(None) => Ok(None),
            Reply::JobAttr(Some(v)) => match crate::reply::parse_int(&v) {
                Some(-1) => Ok(None),
                Some(n) if n > 0 && n <= i64::from(u32::MAX) => Ok(Some(n as u32)),
                _ => {
                    let why = format!(
                        "reply to `info-getjobattr`: {UNIVERSE_SIZE_ATTR}={v:?} is not -1 or a positive count"
                    );
                    self.broken = Some(why.clone());
                    Err(BootstrapError::Protocol(why))
                }
            },
            _ => Err(unexpected(Request::GetJobAttr)),
        }
    }

    pub(crate) fn finalize(mut self) -> Result<(), BootstrapError> {
        self.transact(Request::Finalize, &Message::new("finalize"))?;
        Ok(())
    }

    /// `cmd=abort;isworld=TRUE;msg=...;`: no reply (Slurm cancels the step).
    /// PMI-2 has no exit code; the caller exits with `code` itself.
    pub(crate) fn abort(mut self, _code: i32, message: &str) -> Result<(), BootstrapError> {
        self.usable()?;
        let text: String = message
            .chars()
            .map(|c| match c {
                // `;` too: Slurm does not unescape `;;`.
                ';' => ',',
                c if c.is_ascii() && super::wire::is_value_byte(c as u8) => c,
                _ => '_',
            })
            .take(MAX_VALUE)
            .collect();
        let req = Message::new("abort")
            .arg("isworld", "TRUE")
            .arg("msg", text);
        let frame =
            encode(&req).map_err(|e| BootstrapError::Invalid(format!("abort message: {e}")))?;
        self.conn.send(&frame)
    }

    /// Sends `req`, reads one framed reply and checks it against `kind`.
    fn transact(&mut self, kind: Request, req: &Message) -> Result<Reply, BootstrapError> {
        self.usable()?;
        let frame = encode(req)
            .map_err(|e| BootstrapError::Invalid(format!("`{}` request: {e}", kind.command())))?;
        let result = self.exchange(kind, &frame);
        if let Err(BootstrapError::Io(reason) | BootstrapError::Protocol(reason)) = &result {
            self.broken = Some(reason.clone());
        }
        result
    }

    fn exchange(&mut self, kind: Request, frame: &[u8]) -> Result<Reply, BootstrapError> {
        let op = kind.command();
        if self.conn.unread() > 0 {
            return Err(BootstrapError::Protocol(format!(
                "the launcher sent {} unsolicited byte(s) before `{op}`",
                self.conn.unread()
            )));
        }
        self.conn.send(frame)?;
        let header = self.conn.read_exact(HEADER_LEN, op)?;
        let len = parse_header(&header)
            .map_err(|e| BootstrapError::Protocol(format!("reply to `{op}`: {e}")))?;
        // Bounded by parse_header (MAX_MESSAGE).
        let body = self.conn.read_exact(len, op)?;
        parse_reply(kind, &body)
    }

    fn usable(&self) -> Result<(), BootstrapError> {
        match &self.broken {
            None => Ok(()),
            Some(reason) => Err(BootstrapError::Io(format!(
                "PMI connection unusable after an earlier error ({reason})"
            ))),
        }
    }

    fn check_key(key: &str) -> Result<(), BootstrapError> {
        check_key(key).map_err(|_| {
            BootstrapError::Invalid(format!(
                "key {key:?}: PMI keys are non-empty and use only [A-Za-z0-9_/-]"
            ))
        })?;
        if key.len() >= MAX_KEY {
            return Err(BootstrapError::Invalid(format!(
                "key {key:?} is {} bytes; PMI-2 allows at most {}",
                key.len(),
                MAX_KEY - 1
            )));
        }
        Ok(())
    }
}

/// What `put` sends for `value`: `%` as `%25` and `;` as `%3B`. PMI-2
/// escapes `;` as `;;`, but Slurm's plugin splits requests at every `;`
/// and never undoes the escape, so a value with `;` (ferry's shm and ofi
/// devices publish such values) would reach the other ranks cut short.
fn encode_value(value: &str) -> String {
    value.replace('%', "%25").replace(';', "%3B")
}

/// The inverse of [`encode_value`], applied to every value `get` returns.
/// Values the launcher put itself (`PMI_process_mapping`) pass through
/// unchanged unless they hold `%25` or `%3B`, which none of Slurm's do.
fn decode_value(value: &str) -> String {
    if !value.contains('%') {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("%3B") {
            out.push(';');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("%25") {
            out.push('%');
            rest = after;
        } else {
            out.push('%');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A reply variant that `parse_reply` cannot return for the request; kept
/// as an error rather than a panic.
fn unexpected(req: Request) -> BootstrapError {
    BootstrapError::Protocol(format!(
        "internal: unexpected reply variant to `{}`",
        req.command()
    ))
}

impl Bootstrap for Pmi2 {
    fn rank(&self) -> Rank {
        self.init.rank
    }

    fn size(&self) -> u32 {
        self.init.size
    }

    fn job_id(&self) -> &str {
        &self.jobid
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        Self::check_key(key)?;
        if key.starts_with("PMI_") {
            return Err(BootstrapError::Invalid(format!(
                "key {key:?}: the PMI_ prefix is reserved for the launcher"
            )));
        }
        if value.is_empty() || !value.bytes().all(super::wire::is_value_byte) {
            return Err(BootstrapError::Invalid(format!(
                "value {value:?} of key {key:?}: PMI-2 values are non-empty printable ASCII \
                 or space"
            )));
        }
        let sent = encode_value(value);
        if sent.len() > MAX_VALUE {
            return Err(BootstrapError::Invalid(format!(
                "value of key {key:?} is {} bytes once `;` and `%` are encoded; PMI-2 allows \
                 at most {MAX_VALUE}",
                sent.len()
            )));
        }
        let req = Message::new("kvs-put").arg("key", key).arg("value", sent);
        self.transact(Request::KvsPut, &req)?;
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        Self::check_key(key)?;
        // As MPICH sends it: this job's id, any source (-1).
        let req = Message::new("kvs-get")
            .arg("jobid", self.jobid.clone())
            .arg("srcid", "-1")
            .arg("key", key);
        match self.transact(Request::KvsGet, &req)? {
            Reply::KvsGet(Some(v)) => Ok(decode_value(&v)),
            Reply::KvsGet(None) => Err(BootstrapError::NotFound(key.to_owned())),
            _ => Err(unexpected(Request::KvsGet)),
        }
    }

    fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.transact(Request::KvsFence, &Message::new("kvs-fence"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_the_percent_encoding() {
        for v in [
            "plain",
            "ferry-10-b3c5;95a3",
            "a;b;c;",
            ";",
            "%",
            "%3B",
            "%25%3B;%",
            "100%;done",
            "x=1 y\\z",
        ] {
            let sent = encode_value(v);
            assert!(!sent.contains(';'), "{sent}");
            assert_eq!(decode_value(&sent), v, "{sent}");
        }
        assert_eq!(encode_value("a;b%c"), "a%3Bb%25c");
        // A launcher's own values with a stray `%` pass through.
        assert_eq!(decode_value("(vector,(0,1,4))"), "(vector,(0,1,4))");
        assert_eq!(decode_value("50%"), "50%");
        assert_eq!(decode_value("%4"), "%4");
    }
}
