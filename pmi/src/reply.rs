//! Strict checking of the server's replies, one function per request.
//!
//! For each request the client knows the one reply command it accepts and
//! the keys that reply must and may carry. Anything else — another command,
//! a missing or unknown key, a non-numeric number, `rc` other than 0 — is
//! an error naming what was wrong; nothing is guessed. Servers differ only
//! in the optional keys: Hydra 4.0 sends `msg=success` and omits `rc` on
//! most replies, MPICH 4.1+ adds `rc=0` everywhere and `found=TRUE` to
//! `get_result`, so those are accepted where real servers send them.
//!
//! The functions here are pure (bytes in, typed reply out) so that the
//! fuzz target `pmi_reply` can drive them directly.

use ferry_core::BootstrapError;

use super::wire::{excerpt, Message};

/// Upper bound we accept for the server's advertised maxima: anything
/// larger is nonsense (no line can carry it) and would only mislead the
/// length checks.
const MAXES_LIMIT: usize = 1 << 20;

/// The request a reply answers, with what the client needs to check it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// `cmd=init` → `response_to_init`.
    Init,
    /// `cmd=get_maxes` → `maxes`.
    GetMaxes,
    /// `cmd=get_appnum` → `appnum`.
    GetAppnum,
    /// `cmd=get_universe_size` → `universe_size`.
    GetUniverseSize,
    /// `cmd=get_my_kvsname` → `my_kvsname`.
    GetMyKvsname,
    /// `cmd=put` → `put_result`.
    Put,
    /// `cmd=get` → `get_result`.
    Get,
    /// `cmd=barrier_in` → `barrier_out`.
    Barrier,
    /// `cmd=finalize` → `finalize_ack`.
    Finalize,
}

/// The server's limits from `get_maxes` (bytes, as PMI counts them: the C
/// buffer sizes, so one more than the longest string they hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maxes {
    /// Longest kvsname buffer.
    pub kvsname_max: usize,
    /// Longest key buffer.
    pub keylen_max: usize,
    /// Longest value buffer.
    pub vallen_max: usize,
}

/// A checked reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// `response_to_init` with rc=0 and (if given) version 1.
    Init,
    /// `maxes`.
    Maxes(Maxes),
    /// `appnum`.
    Appnum(i32),
    /// `universe_size`; `None` when the server says -1 (unknown/unlimited).
    UniverseSize(Option<u32>),
    /// `my_kvsname`.
    Kvsname(String),
    /// `put_result` with rc=0.
    Put,
    /// `get_result`: the value, or `None` when the key is not there.
    Get(Option<String>),
    /// `barrier_out` with rc 0 (or absent).
    Barrier,
    /// `finalize_ack`.
    Finalize,
}

impl Request {
    /// The wire name of the request command (`cmd=` of the request).
    pub fn command(self) -> &'static str {
        match self {
            Request::Init => "init",
            Request::GetMaxes => "get_maxes",
            Request::GetAppnum => "get_appnum",
            Request::GetUniverseSize => "get_universe_size",
            Request::GetMyKvsname => "get_my_kvsname",
            Request::Put => "put",
            Request::Get => "get",
            Request::Barrier => "barrier_in",
            Request::Finalize => "finalize",
        }
    }

    /// The only reply command accepted for this request.
    pub fn reply_command(self) -> &'static str {
        match self {
            Request::Init => "response_to_init",
            Request::GetMaxes => "maxes",
            Request::GetAppnum => "appnum",
            Request::GetUniverseSize => "universe_size",
            Request::GetMyKvsname => "my_kvsname",
            Request::Put => "put_result",
            Request::Get => "get_result",
            Request::Barrier => "barrier_out",
            Request::Finalize => "finalize_ack",
        }
    }

    /// (required keys, optional keys) of the reply, besides `cmd`.
    fn keys(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            // MPICH's own client aborts unless rc is "0", so rc is required.
            Request::Init => (&["rc"], &["pmi_version", "pmi_subversion", "msg"]),
            Request::GetMaxes => (&["kvsname_max", "keylen_max", "vallen_max"], &["rc", "msg"]),
            Request::GetAppnum => (&["appnum"], &["rc", "msg"]),
            Request::GetUniverseSize => (&["size"], &["rc", "msg"]),
            Request::GetMyKvsname => (&["kvsname"], &["rc", "msg"]),
            Request::Put => (&["rc"], &["msg"]),
            // `value` is required only on success; checked below.
            Request::Get => (&["rc"], &["msg", "value", "found"]),
            Request::Barrier | Request::Finalize => (&[], &["rc", "msg"]),
        }
    }
}

/// Checks one reply line (including its `\n`) against `req`.
///
/// # Errors
/// - [`BootstrapError::Protocol`]: the line is not valid PMI-1, names the
///   wrong command, lacks a required key, carries an unknown key, or has a
///   malformed number.
/// - [`BootstrapError::Refused`]: a well-formed reply with `rc` other than
///   0 (for every request but `get`, where that means "not found" and
///   yields `Ok(Reply::Get(None))`).
pub fn parse_reply(req: Request, line: &[u8]) -> Result<Reply, BootstrapError> {
    let op = req.command();
    let proto = |what: String| {
        BootstrapError::Protocol(format!("reply to `{op}`: {what} in {}", excerpt(line)))
    };
    let msg = Message::parse(line).map_err(|e| proto(e.to_string()))?;
    let (required, optional) = req.keys();
    check_shape(&msg, req.reply_command(), required, optional).map_err(proto)?;
    let int = |key: &str| -> Result<Option<i64>, BootstrapError> {
        match msg.get(key) {
            None => Ok(None),
            Some(v) => parse_int(v)
                .map(Some)
                .ok_or_else(|| proto(format!("`{key}={v}` is not an integer"))),
        }
    };
    let rc = int("rc")?.unwrap_or(0);
    let refused = || BootstrapError::Refused {
        op,
        reason: match msg.get("msg") {
            Some(m) => format!("rc={rc} msg={m}"),
            None => format!("rc={rc}"),
        },
    };
    if rc != 0 && req != Request::Get {
        return Err(refused());
    }
    Ok(match req {
        Request::Init => {
            if let Some(v) = msg.get("pmi_version") {
                if v != "1" {
                    return Err(proto(format!("server speaks PMI version {v}, not 1")));
                }
            }
            // Only its form is checked: any 1.x server will do.
            int("pmi_subversion")?;
            Reply::Init
        }
        Request::GetMaxes => {
            let get = |key: &str| -> Result<usize, BootstrapError> {
                match int(key)? {
                    Some(n) if n > 0 && n <= MAXES_LIMIT as i64 => Ok(n as usize),
                    _ => Err(proto(format!(
                        "`{key}` must be between 1 and {MAXES_LIMIT}"
                    ))),
                }
            };
            Reply::Maxes(Maxes {
                kvsname_max: get("kvsname_max")?,
                keylen_max: get("keylen_max")?,
                vallen_max: get("vallen_max")?,
            })
        }
        Request::GetAppnum => match int("appnum")? {
            Some(n) if (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&n) => {
                Reply::Appnum(n as i32)
            }
            _ => return Err(proto("`appnum` out of range".into())),
        },
        Request::GetUniverseSize => match int("size")? {
            Some(-1) => Reply::UniverseSize(None),
            Some(n) if n > 0 && n <= i64::from(u32::MAX) => Reply::UniverseSize(Some(n as u32)),
            _ => return Err(proto("`size` must be -1 or a positive count".into())),
        },
        Request::GetMyKvsname => {
            let name = msg.get("kvsname").unwrap_or_default();
            // The name becomes `Bootstrap::job_id`, which devices put in
            // file names (e.g. /dev/shm/ferry-<job>-...), so only accept
            // characters that are safe there.
            if !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return Err(proto(format!(
                    "kvsname {name:?} has characters outside [A-Za-z0-9_.-]"
                )));
            }
            Reply::Kvsname(name.to_owned())
        }
        Request::Put => Reply::Put,
        Request::Get => {
            let found = match msg.get("found") {
                None | Some("TRUE") => true,
                Some("FALSE") => false,
                Some(v) => return Err(proto(format!("`found={v}` is not TRUE or FALSE"))),
            };
            // Both Hydra and MPICH answer a missing key with rc != 0; PMI-1
            // has no other error code for get, so any rc != 0 means absent.
            if rc != 0 || !found {
                Reply::Get(None)
            } else {
                match msg.get("value") {
                    Some(v) => Reply::Get(Some(v.to_owned())),
                    None => return Err(proto("missing key `value`".into())),
                }
            }
        }
        Request::Barrier => Reply::Barrier,
        Request::Finalize => Reply::Finalize,
    })
}

/// Checks that a reply names `cmd`, carries every `required` key and no
/// key outside `required` and `optional` (both PMI versions' rule); the
/// error says which.
pub(crate) fn check_shape(
    msg: &Message,
    cmd: &str,
    required: &[&str],
    optional: &[&str],
) -> Result<(), String> {
    if msg.cmd() != cmd {
        return Err(format!("expected `cmd={cmd}`, got `cmd={}`", msg.cmd()));
    }
    if let Some(key) = required.iter().find(|k| msg.get(k).is_none()) {
        return Err(format!("missing key `{key}`"));
    }
    match msg
        .args()
        .iter()
        .find(|(k, _)| !required.contains(&k.as_str()) && !optional.contains(&k.as_str()))
    {
        Some((key, _)) => Err(format!("unexpected key `{key}`")),
        None => Ok(()),
    }
}

/// Parses a decimal integer strictly: optional `-`, then 1 to 18 digits
/// (no `+`, no spaces, no overflow).
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(req: Request, line: &str) -> Result<Reply, BootstrapError> {
        parse_reply(req, line.as_bytes())
    }

    fn protocol_error(r: Result<Reply, BootstrapError>) -> String {
        match r {
            Err(BootstrapError::Protocol(m)) => m,
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_hydra_4_0_replies() {
        // Captured from mpiexec.hydra 4.0.2 (Debian bookworm).
        let cases = [
            (
                Request::Init,
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
                Reply::Init,
            ),
            (
                Request::GetMaxes,
                "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
                Reply::Maxes(Maxes {
                    kvsname_max: 256,
                    keylen_max: 64,
                    vallen_max: 1024,
                }),
            ),
            (
                Request::GetAppnum,
                "cmd=appnum appnum=0\n",
                Reply::Appnum(0),
            ),
            (
                Request::GetUniverseSize,
                "cmd=universe_size size=-1\n",
                Reply::UniverseSize(None),
            ),
            (
                Request::GetMyKvsname,
                "cmd=my_kvsname kvsname=kvs_1035_0_1793425741_vm\n",
                Reply::Kvsname("kvs_1035_0_1793425741_vm".into()),
            ),
            (
                Request::Put,
                "cmd=put_result rc=0 msg=success\n",
                Reply::Put,
            ),
            (
                Request::Get,
                "cmd=get_result rc=0 msg=success value=a=b\n",
                Reply::Get(Some("a=b".into())),
            ),
            (
                Request::Get,
                "cmd=get_result rc=-1 msg=key_missing_not_found value=unknown\n",
                Reply::Get(None),
            ),
            (Request::Barrier, "cmd=barrier_out\n", Reply::Barrier),
            (Request::Finalize, "cmd=finalize_ack\n", Reply::Finalize),
        ];
        for (req, line, want) in cases {
            assert_eq!(reply(req, line).unwrap(), want, "{line}");
        }
    }

    #[test]
    fn accepts_mpich_4_1_style_replies() {
        assert_eq!(
            reply(Request::Get, "cmd=get_result rc=0 found=TRUE value=x\n").unwrap(),
            Reply::Get(Some("x".into()))
        );
        assert_eq!(
            reply(Request::Get, "cmd=get_result rc=0 found=FALSE\n").unwrap(),
            Reply::Get(None)
        );
        assert_eq!(
            reply(Request::Get, "cmd=get_result rc=1\n").unwrap(),
            Reply::Get(None)
        );
        assert_eq!(
            reply(Request::GetUniverseSize, "cmd=universe_size rc=0 size=8\n").unwrap(),
            Reply::UniverseSize(Some(8))
        );
        assert_eq!(
            reply(Request::Barrier, "cmd=barrier_out rc=0\n").unwrap(),
            Reply::Barrier
        );
    }

    #[test]
    fn wrong_command_is_named() {
        let m = protocol_error(reply(Request::Barrier, "cmd=finalize_ack\n"));
        assert!(
            m.contains("expected `cmd=barrier_out`, got `cmd=finalize_ack`"),
            "{m}"
        );
        assert!(m.contains("barrier_in"), "{m}");
    }

    #[test]
    fn missing_rc_is_an_error() {
        let m = protocol_error(reply(Request::Put, "cmd=put_result msg=success\n"));
        assert!(m.contains("missing key `rc`"), "{m}");
        let m = protocol_error(reply(Request::Init, "cmd=response_to_init pmi_version=1\n"));
        assert!(m.contains("missing key `rc`"), "{m}");
    }

    #[test]
    fn nonzero_rc_is_refused() {
        let r = reply(Request::Put, "cmd=put_result rc=-1 msg=duplicate_key\n");
        assert_eq!(
            r,
            Err(BootstrapError::Refused {
                op: "put",
                reason: "rc=-1 msg=duplicate_key".into()
            })
        );
        let r = reply(Request::Barrier, "cmd=barrier_out rc=1\n");
        assert!(
            matches!(
                r,
                Err(BootstrapError::Refused {
                    op: "barrier_in",
                    ..
                })
            ),
            "{r:?}"
        );
        let r = reply(Request::Init, "cmd=response_to_init rc=-1\n");
        assert!(
            matches!(r, Err(BootstrapError::Refused { op: "init", .. })),
            "{r:?}"
        );
    }

    #[test]
    fn garbage_and_unknown_keys_are_errors() {
        let m = protocol_error(reply(Request::Barrier, "cmd=barrier_out garbage\n"));
        assert!(m.contains("not of the form key=value"), "{m}");
        let m = protocol_error(reply(Request::Barrier, "cmd=barrier_out extra=1\n"));
        assert!(m.contains("unexpected key `extra`"), "{m}");
        let m = protocol_error(reply(Request::Put, "hello\n"));
        assert!(m.contains("does not start with `cmd=`"), "{m}");
        let m = protocol_error(reply(Request::GetAppnum, "cmd=appnum appnum=x1\n"));
        assert!(m.contains("not an integer"), "{m}");
        let m = protocol_error(reply(Request::GetAppnum, "cmd=appnum appnum=+1\n"));
        assert!(m.contains("not an integer"), "{m}");
        let m = protocol_error(reply(
            Request::Put,
            "cmd=put_result rc=99999999999999999999\n",
        ));
        assert!(m.contains("not an integer"), "{m}");
    }

    #[test]
    fn missing_value_is_an_error() {
        let m = protocol_error(reply(Request::Get, "cmd=get_result rc=0 msg=success\n"));
        assert!(m.contains("missing key `value`"), "{m}");
        let m = protocol_error(reply(Request::Get, "cmd=get_result rc=0 value=\n"));
        assert!(m.contains("empty value"), "{m}");
        let m = protocol_error(reply(
            Request::GetMaxes,
            "cmd=maxes kvsname_max=256 keylen_max=64\n",
        ));
        assert!(m.contains("missing key `vallen_max`"), "{m}");
    }

    #[test]
    fn overlong_line_is_an_error() {
        let line = format!("cmd=get_result rc=0 value={}\n", "v".repeat(5000));
        let m = protocol_error(reply(Request::Get, &line));
        assert!(m.contains("longer than 4096"), "{m}");
        assert!(m.len() < 400, "the message quotes only an excerpt: {m}");
    }

    #[test]
    fn implausible_numbers_are_errors() {
        protocol_error(reply(
            Request::GetMaxes,
            "cmd=maxes kvsname_max=0 keylen_max=64 vallen_max=1\n",
        ));
        protocol_error(reply(
            Request::GetUniverseSize,
            "cmd=universe_size size=0\n",
        ));
        protocol_error(reply(
            Request::GetUniverseSize,
            "cmd=universe_size size=-2\n",
        ));
        protocol_error(reply(Request::GetAppnum, "cmd=appnum appnum=4294967296\n"));
        protocol_error(reply(
            Request::Init,
            "cmd=response_to_init rc=0 pmi_version=2\n",
        ));
        protocol_error(reply(
            Request::Get,
            "cmd=get_result rc=0 found=maybe value=1\n",
        ));
        protocol_error(reply(
            Request::GetMyKvsname,
            "cmd=my_kvsname kvsname=../etc\n",
        ));
    }

    #[test]
    fn parse_int_is_strict() {
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("-17"), Some(-17));
        for bad in ["", "-", "+1", " 1", "1a", "0x10", "1234567890123456789"] {
            assert_eq!(parse_int(bad), None, "{bad}");
        }
    }
}
