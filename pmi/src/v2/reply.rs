//! Strict checking of a PMI-2 server's replies, one rule per request.
//!
//! As for PMI-1 ([`crate::reply`]): for each request the client knows the
//! one reply command it accepts and the keys that reply must and may
//! carry. Another command, a missing or unknown key, a malformed number or
//! boolean, `rc` other than 0: each is an error naming what was wrong.
//! The keys are those Slurm's `mpi/pmi2` plugin and MPICH's PMI-2 client
//! use (`src/plugins/mpi/pmi2/pmi2.c`, `src/pmi/src/pmi2_api.c`).
//!
//! The functions are pure (bytes in, typed reply out) so that the fuzz
//! target `pmi2_reply` can drive them directly.

use ferry_core::BootstrapError;

use super::wire::parse_body;
use crate::reply::{check_shape, parse_int};
use crate::wire::excerpt;

/// The request a PMI-2 reply answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// `cmd=fullinit` → `fullinit-response`.
    FullInit,
    /// `cmd=job-getid` → `job-getid-response`.
    JobGetId,
    /// `cmd=kvs-put` → `kvs-put-response`.
    KvsPut,
    /// `cmd=kvs-fence` → `kvs-fence-response`.
    KvsFence,
    /// `cmd=kvs-get` → `kvs-get-response`.
    KvsGet,
    /// `cmd=info-getjobattr` → `info-getjobattr-response`.
    GetJobAttr,
    /// `cmd=finalize` → `finalize-response`.
    Finalize,
}

impl Request {
    /// Every request, for tests and the fuzz target.
    pub const ALL: [Request; 7] = [
        Request::FullInit,
        Request::JobGetId,
        Request::KvsPut,
        Request::KvsFence,
        Request::KvsGet,
        Request::GetJobAttr,
        Request::Finalize,
    ];

    /// The wire name of the request command.
    pub fn command(self) -> &'static str {
        match self {
            Request::FullInit => "fullinit",
            Request::JobGetId => "job-getid",
            Request::KvsPut => "kvs-put",
            Request::KvsFence => "kvs-fence",
            Request::KvsGet => "kvs-get",
            Request::GetJobAttr => "info-getjobattr",
            Request::Finalize => "finalize",
        }
    }

    /// The only reply command accepted for this request.
    pub fn reply_command(self) -> &'static str {
        match self {
            Request::FullInit => "fullinit-response",
            Request::JobGetId => "job-getid-response",
            Request::KvsPut => "kvs-put-response",
            Request::KvsFence => "kvs-fence-response",
            Request::KvsGet => "kvs-get-response",
            Request::GetJobAttr => "info-getjobattr-response",
            Request::Finalize => "finalize-response",
        }
    }

    /// (required keys, optional keys) of the reply, besides `cmd`. `rc` is
    /// required everywhere: MPICH's client fails a reply without it.
    fn keys(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Request::FullInit => (
                &[
                    "rc",
                    "pmi-version",
                    "pmi-subversion",
                    "rank",
                    "size",
                    "appnum",
                ],
                &["debugged", "pmiverbose", "spawner-jobid", "errmsg"],
            ),
            Request::JobGetId => (&["rc", "jobid"], &["errmsg"]),
            Request::KvsPut | Request::KvsFence | Request::Finalize => (&["rc"], &["errmsg"]),
            // `value` is required only with found=TRUE; checked below.
            Request::KvsGet | Request::GetJobAttr => (&["rc", "found"], &["value", "errmsg"]),
        }
    }
}

/// What `fullinit-response` says about this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullInit {
    /// This process's rank.
    pub rank: i32,
    /// The job's size.
    pub size: u32,
    /// The application number; -1 where the server does not track it
    /// (Slurm's plugin always sends -1).
    pub appnum: i32,
    /// The spawning job's id when this job was started by `spawn`.
    pub spawner_jobid: Option<String>,
}

/// A checked PMI-2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// `fullinit-response` with rc=0 and version 2.
    FullInit(FullInit),
    /// `job-getid-response`: the job id.
    JobId(String),
    /// `kvs-put-response` with rc=0.
    KvsPut,
    /// `kvs-fence-response` with rc=0.
    KvsFence,
    /// `kvs-get-response`: the value, or `None` when the key is not there.
    KvsGet(Option<String>),
    /// `info-getjobattr-response`: the value, or `None` when unknown.
    JobAttr(Option<String>),
    /// `finalize-response` with rc=0.
    Finalize,
}

/// Checks the reply to the PMI-1-style opening line
/// `cmd=init pmi_version=2 pmi_subversion=0`: it must be
/// `cmd=response_to_init` with `rc=0` and version 2.0 (Slurm answers a
/// version it does not serve with rc≠0 and the version it does).
///
/// # Errors
/// [`BootstrapError::Protocol`] for anything but that line;
/// [`BootstrapError::Refused`] for rc≠0.
pub fn parse_init_reply(line: &[u8]) -> Result<(), BootstrapError> {
    let proto = |what: String| {
        BootstrapError::Protocol(format!(
            "reply to the PMI-2 `init`: {what} in {}",
            excerpt(line)
        ))
    };
    let msg = crate::wire::Message::parse(line).map_err(|e| proto(e.to_string()))?;
    check_shape(
        &msg,
        "response_to_init",
        &["rc", "pmi_version", "pmi_subversion"],
        &["msg"],
    )
    .map_err(proto)?;
    let int = |key: &str| -> Result<i64, BootstrapError> {
        let v = msg.get(key).unwrap_or_default();
        parse_int(v).ok_or_else(|| proto(format!("`{key}={v}` is not an integer")))
    };
    let (rc, version, subversion) = (int("rc")?, int("pmi_version")?, int("pmi_subversion")?);
    if rc != 0 {
        return Err(BootstrapError::Refused {
            op: "init",
            reason: format!(
                "rc={rc}: the launcher serves PMI {version}.{subversion}, not 2.0 \
                 (set FERRY_PMI=1 to use PMI-1)"
            ),
        });
    }
    if (version, subversion) != (2, 0) {
        return Err(proto(format!(
            "the launcher answered PMI {version}.{subversion} to a request for 2.0"
        )));
    }
    Ok(())
}

/// Checks one reply body (the bytes after the length header) against
/// `req`.
///
/// # Errors
/// - [`BootstrapError::Protocol`]: the body is not valid PMI-2, names the
///   wrong command, lacks a required key, carries an unknown key, or has a
///   malformed number, boolean or job id.
/// - [`BootstrapError::Refused`]: a well-formed reply with `rc` other than
///   0, with the server's `errmsg` if it gave one.
pub fn parse_reply(req: Request, body: &[u8]) -> Result<Reply, BootstrapError> {
    let op = req.command();
    let proto = |what: String| {
        BootstrapError::Protocol(format!("reply to `{op}`: {what} in {}", excerpt(body)))
    };
    let msg = parse_body(body).map_err(|e| proto(e.to_string()))?;
    let (required, optional) = req.keys();
    check_shape(&msg, req.reply_command(), required, optional).map_err(proto)?;
    let int = |key: &str| -> Result<i64, BootstrapError> {
        let v = msg.get(key).unwrap_or_default();
        parse_int(v).ok_or_else(|| proto(format!("`{key}={v}` is not an integer")))
    };
    let boolean = |key: &str| -> Result<Option<bool>, BootstrapError> {
        match msg.get(key) {
            None => Ok(None),
            Some("TRUE") => Ok(Some(true)),
            Some("FALSE") => Ok(Some(false)),
            Some(v) => Err(proto(format!("`{key}={v}` is not TRUE or FALSE"))),
        }
    };
    let rc = int("rc")?;
    if rc != 0 {
        return Err(BootstrapError::Refused {
            op,
            reason: match msg.get("errmsg") {
                Some(m) => format!("rc={rc} errmsg={m}"),
                None => format!("rc={rc}"),
            },
        });
    }
    Ok(match req {
        Request::FullInit => {
            let (version, subversion) = (int("pmi-version")?, int("pmi-subversion")?);
            if version != 2 {
                return Err(proto(format!(
                    "server speaks PMI {version}.{subversion}, not 2"
                )));
            }
            boolean("debugged")?;
            boolean("pmiverbose")?;
            let size = int("size")?;
            let rank = int("rank")?;
            if !(1..=i64::from(i32::MAX)).contains(&size) || !(0..size).contains(&rank) {
                return Err(proto(format!("rank {rank} in a job of size {size}")));
            }
            let appnum =
                i32::try_from(int("appnum")?).map_err(|_| proto("`appnum` out of range".into()))?;
            Reply::FullInit(FullInit {
                rank: rank as i32,
                size: size as u32,
                appnum,
                spawner_jobid: msg.get("spawner-jobid").map(str::to_owned),
            })
        }
        Request::JobGetId => {
            let id = msg.get("jobid").unwrap_or_default();
            // The id becomes `Bootstrap::job_id`, which devices put in file
            // names (e.g. /dev/shm/ferry-<job>-...): only characters that
            // are safe there (Slurm's ids are `<job>.<step>`).
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return Err(proto(format!(
                    "job id {id:?} is empty or has characters outside [A-Za-z0-9_.-]"
                )));
            }
            Reply::JobId(id.to_owned())
        }
        Request::KvsPut => Reply::KvsPut,
        Request::KvsFence => Reply::KvsFence,
        Request::KvsGet | Request::GetJobAttr => {
            let value = match (boolean("found")?, msg.get("value")) {
                (Some(true), Some(v)) => Some(v.to_owned()),
                (Some(true), None) => return Err(proto("found=TRUE without `value`".into())),
                (_, Some(_)) => return Err(proto("found=FALSE with a `value`".into())),
                (_, None) => None,
            };
            if req == Request::KvsGet {
                Reply::KvsGet(value)
            } else {
                Reply::JobAttr(value)
            }
        }
        Request::Finalize => Reply::Finalize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(req: Request, body: &str) -> Result<Reply, BootstrapError> {
        parse_reply(req, body.as_bytes())
    }

    fn protocol_error(r: Result<Reply, BootstrapError>) -> String {
        match r {
            Err(BootstrapError::Protocol(m)) => m,
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_slurm_22_05_replies() {
        // The bodies Slurm 22.05's mpi/pmi2 plugin writes (pmi2.c).
        let cases = [
            (
                Request::FullInit,
                "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=4;\
                 appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                Reply::FullInit(FullInit {
                    rank: 1,
                    size: 4,
                    appnum: -1,
                    spawner_jobid: None,
                }),
            ),
            (
                Request::JobGetId,
                "cmd=job-getid-response;rc=0;jobid=17.0;",
                Reply::JobId("17.0".into()),
            ),
            (Request::KvsPut, "cmd=kvs-put-response;rc=0;", Reply::KvsPut),
            (
                Request::KvsFence,
                "cmd=kvs-fence-response;rc=0;",
                Reply::KvsFence,
            ),
            (
                Request::KvsGet,
                "cmd=kvs-get-response;rc=0;found=TRUE;value=host/abc;",
                Reply::KvsGet(Some("host/abc".into())),
            ),
            (
                Request::KvsGet,
                "cmd=kvs-get-response;rc=0;found=FALSE;",
                Reply::KvsGet(None),
            ),
            (
                Request::GetJobAttr,
                "cmd=info-getjobattr-response;rc=0;found=TRUE;value=4;",
                Reply::JobAttr(Some("4".into())),
            ),
            (
                Request::GetJobAttr,
                "cmd=info-getjobattr-response;rc=0;found=FALSE;",
                Reply::JobAttr(None),
            ),
            (
                Request::Finalize,
                "cmd=finalize-response;rc=0;",
                Reply::Finalize,
            ),
        ];
        for (req, body, want) in cases {
            assert_eq!(reply(req, body).unwrap(), want, "{body}");
        }
        let spawned = reply(
            Request::FullInit,
            "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=1;\
             appnum=0;spawner-jobid=16.0;",
        )
        .unwrap();
        assert!(matches!(
            spawned,
            Reply::FullInit(FullInit { spawner_jobid: Some(ref j), .. }) if j == "16.0"
        ));
    }

    #[test]
    fn init_reply() {
        assert_eq!(
            parse_init_reply(b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"),
            Ok(())
        );
        let r = parse_init_reply(b"cmd=response_to_init rc=1 pmi_version=1 pmi_subversion=1\n");
        assert!(
            matches!(&r, Err(BootstrapError::Refused { op: "init", reason }) if reason.contains("FERRY_PMI=1")),
            "{r:?}"
        );
        // ferryrun's answer to a version it does not serve.
        let r = parse_init_reply(
            b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_version\n",
        );
        assert!(matches!(r, Err(BootstrapError::Refused { .. })), "{r:?}");
        for bad in [
            &b"cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n"[..],
            b"cmd=response_to_init rc=0 pmi_version=2\n",
            b"cmd=response_to_init pmi_version=2 pmi_subversion=0\n",
            b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0 extra=1\n",
            b"cmd=init_ack rc=0 pmi_version=2 pmi_subversion=0\n",
            b"cmd=response_to_init rc=zero pmi_version=2 pmi_subversion=0\n",
            b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0",
            b"6     cmd=x;",
        ] {
            assert!(
                matches!(parse_init_reply(bad), Err(BootstrapError::Protocol(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn wrong_command_is_named() {
        let m = protocol_error(reply(Request::KvsFence, "cmd=kvs-put-response;rc=0;"));
        assert!(
            m.contains("expected `cmd=kvs-fence-response`, got `cmd=kvs-put-response`"),
            "{m}"
        );
        assert!(m.contains("reply to `kvs-fence`"), "{m}");
    }

    #[test]
    fn nonzero_rc_is_refused_with_errmsg() {
        assert_eq!(
            reply(
                Request::KvsFence,
                "cmd=kvs-fence-response;rc=-1;errmsg=mpi/pmi2: failed to send temp kvs;"
            ),
            Err(BootstrapError::Refused {
                op: "kvs-fence",
                reason: "rc=-1 errmsg=mpi/pmi2: failed to send temp kvs".into()
            })
        );
        // Slurm's fullinit answers a missing pmijobid with rc=3.
        let r = reply(
            Request::FullInit,
            "cmd=fullinit-response;rc=3;pmi-version=2;pmi-subversion=0;rank=0;size=1;appnum=-1;",
        );
        assert!(
            matches!(r, Err(BootstrapError::Refused { op: "fullinit", .. })),
            "{r:?}"
        );
        let r = reply(Request::KvsGet, "cmd=kvs-get-response;rc=1;found=FALSE;");
        assert!(matches!(r, Err(BootstrapError::Refused { .. })), "{r:?}");
    }

    #[test]
    fn missing_unknown_and_malformed_keys_are_errors() {
        let m = protocol_error(reply(Request::KvsPut, "cmd=kvs-put-response;"));
        assert!(m.contains("missing key `rc`"), "{m}");
        let m = protocol_error(reply(Request::KvsPut, "cmd=kvs-put-response;rc=0;extra=1;"));
        assert!(m.contains("unexpected key `extra`"), "{m}");
        let m = protocol_error(reply(Request::KvsPut, "cmd=kvs-put-response;rc=+0;"));
        assert!(m.contains("not an integer"), "{m}");
        let m = protocol_error(reply(Request::KvsGet, "cmd=kvs-get-response;rc=0;"));
        assert!(m.contains("missing key `found`"), "{m}");
        let m = protocol_error(reply(
            Request::KvsGet,
            "cmd=kvs-get-response;rc=0;found=yes;value=1;",
        ));
        assert!(m.contains("not TRUE or FALSE"), "{m}");
        let m = protocol_error(reply(
            Request::KvsGet,
            "cmd=kvs-get-response;rc=0;found=TRUE;",
        ));
        assert!(m.contains("without `value`"), "{m}");
        let m = protocol_error(reply(
            Request::KvsGet,
            "cmd=kvs-get-response;rc=0;found=FALSE;value=1;",
        ));
        assert!(m.contains("with a `value`"), "{m}");
        let m = protocol_error(reply(Request::KvsGet, "cmd=kvs-get-response;rc=0"));
        assert!(m.contains("not terminated"), "{m}");
        let m = protocol_error(reply(Request::JobGetId, "cmd=job-getid-response;rc=0;"));
        assert!(m.contains("missing key `jobid`"), "{m}");
    }

    #[test]
    fn implausible_values_are_errors() {
        let full = |fields: &str| {
            reply(
                Request::FullInit,
                &format!("cmd=fullinit-response;rc=0;pmi-subversion=0;{fields}"),
            )
        };
        for fields in [
            "pmi-version=1;rank=0;size=1;appnum=0;",
            "pmi-version=2;rank=4;size=4;appnum=0;",
            "pmi-version=2;rank=-1;size=4;appnum=0;",
            "pmi-version=2;rank=0;size=0;appnum=0;",
            "pmi-version=2;rank=0;size=4294967296;appnum=0;",
            "pmi-version=2;rank=0;size=1;appnum=4294967296;",
            "pmi-version=2;rank=0;size=1;appnum=0;debugged=maybe;",
            "pmi-version=2;rank=0;size=1;",
        ] {
            protocol_error(full(fields));
        }
        for id in ["../etc", "", "a b", "x;;y"] {
            let m = protocol_error(reply(
                Request::JobGetId,
                &format!("cmd=job-getid-response;rc=0;jobid={id};"),
            ));
            assert!(m.contains("job id"), "{m}");
        }
    }

    #[test]
    fn errors_quote_an_excerpt_only() {
        let body = format!(
            "cmd=kvs-get-response;rc=0;found=TRUE;value={}",
            "v".repeat(5000)
        );
        let m = protocol_error(reply(Request::KvsGet, &body));
        assert!(m.len() < 400, "{m}");
    }
}
