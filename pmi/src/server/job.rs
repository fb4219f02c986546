//! The server's protocol logic, without I/O: request lines in, reply lines
//! and job events out. [`super::PmiServer`] feeds it from sockets.

use std::collections::HashMap;

use ferry_core::auth::{JobSecret, SECRET_KEY};

use super::super::reply::parse_int;
use super::super::wire::{check_key, excerpt, Message};

/// Limits advertised by `get_maxes` — the same figures as Hydra, so a
/// program behaves the same under either launcher.
pub const KVSNAME_MAX: usize = 256;
/// See [`KVSNAME_MAX`].
pub const KEYLEN_MAX: usize = 64;
/// See [`KVSNAME_MAX`].
pub const VALLEN_MAX: usize = 1024;

/// Something the launcher must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A rank asked for the job to be killed (`cmd=abort`).
    Aborted {
        /// The rank.
        rank: u32,
        /// The exit code it asked for.
        code: i32,
        /// Its message (possibly empty).
        message: String,
    },
    /// A rank finished with PMI (`cmd=finalize`).
    Finalized {
        /// The rank.
        rank: u32,
    },
    /// A rank sent something that is not valid PMI-1, or a command this
    /// server does not implement; its connection is closed.
    BadRequest {
        /// The rank.
        rank: u32,
        /// What was wrong.
        reason: String,
    },
    /// A rank's connection closed (or could not be written to).
    Disconnected {
        /// The rank.
        rank: u32,
        /// Whether it had finalized first (the normal way to leave).
        finalized: bool,
    },
}

/// What [`PmiJob`] asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send `line` (ending in `\n`) to `rank`.
    Reply {
        /// Destination rank.
        rank: u32,
        /// The reply line.
        line: String,
    },
    /// Close `rank`'s connection (after a bad request).
    Close {
        /// The rank.
        rank: u32,
    },
    /// Report an event to the launcher.
    Event(ServerEvent),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankState {
    Active,
    Finalized,
    /// Closed, or cut off after a bad request.
    Gone,
}

/// One job's PMI-1 state: the key-value space, the barrier, and each
/// rank's standing.
///
/// Semantics, chosen to match Hydra where PMI-1 leaves room:
/// - a `put` is visible to every later `get` (Hydra: after the next
///   barrier; relying on less is always correct);
/// - putting an existing key overwrites it (Hydra 4.0 does too);
/// - a barrier completes when every rank has entered it; once any rank has
///   finalized or left, no barrier can complete, so waiting and later
///   barriers fail at once with `rc=-1` instead of hanging the job;
/// - `get` of `PMI_process_mapping` answers that all ranks share one node,
///   as MPICH programs expect;
/// - with [`PmiJob::with_secret`], `get` of [`SECRET_KEY`] answers the job
///   secret and `put` of it is refused (`reserved_key`), like `PMI_*`.
#[derive(Debug)]
pub struct PmiJob {
    kvsname: String,
    size: u32,
    /// Whether [`SECRET_KEY`] holds the launcher's secret (then reserved).
    serves_secret: bool,
    kvs: HashMap<String, String>,
    ranks: Vec<RankState>,
    in_barrier: Vec<bool>,
    waiting: u32,
}

impl PmiJob {
    /// A job of `size` ranks whose key-value space is named `kvsname`.
    pub fn new(kvsname: &str, size: u32) -> Self {
        PmiJob {
            kvsname: kvsname.to_owned(),
            size,
            serves_secret: false,
            kvs: HashMap::new(),
            ranks: vec![RankState::Active; size as usize],
            in_barrier: vec![false; size as usize],
            waiting: 0,
        }
    }

    /// Serves `secret` as the job secret: the answer to `get` of
    /// [`SECRET_KEY`], a key no rank may `put` (see `ferry_core::auth`).
    /// Only the ranks, through their connections, can read it.
    #[must_use]
    pub fn with_secret(mut self, secret: &JobSecret) -> Self {
        self.kvs.insert(SECRET_KEY.to_owned(), secret.to_hex());
        self.serves_secret = true;
        self
    }

    /// The job's kvsname.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The number of ranks.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The value stored under `key`, if any.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.kvs.get(key).map(String::as_str)
    }

    /// Handles one request line (with its `\n`) from `rank`.
    pub fn handle_line(&mut self, rank: u32, line: &[u8]) -> Vec<Output> {
        let mut out = Vec::new();
        if self.state(rank) != Some(RankState::Active)
            && self.state(rank) != Some(RankState::Finalized)
        {
            return out;
        }
        // `abort` is read leniently: MPICH clients send the message with
        // its spaces unescaped, and the job must die either way.
        if line.starts_with(b"cmd=abort ") || line == b"cmd=abort\n" {
            let (code, message) = parse_abort(line);
            out.push(Output::Event(ServerEvent::Aborted {
                rank,
                code,
                message,
            }));
            return out;
        }
        let msg = match Message::parse(line) {
            Ok(m) => m,
            Err(e) => {
                self.bad_request(rank, format!("{e} in {}", excerpt(line)), &mut out);
                return out;
            }
        };
        if self.state(rank) == Some(RankState::Finalized) {
            self.bad_request(rank, format!("`{}` after finalize", msg.cmd()), &mut out);
            return out;
        }
        let reply = |line: &str| Output::Reply {
            rank,
            line: format!("{line}\n"),
        };
        match msg.cmd() {
            "init" => match msg.get("pmi_version") {
                Some("1") => out.push(reply(
                    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
                )),
                _ => out.push(reply(
                    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_version",
                )),
            },
            "get_maxes" => out.push(reply(&format!(
                "cmd=maxes rc=0 kvsname_max={KVSNAME_MAX} keylen_max={KEYLEN_MAX} vallen_max={VALLEN_MAX}"
            ))),
            "get_appnum" => out.push(reply("cmd=appnum rc=0 appnum=0")),
            "get_universe_size" => {
                out.push(reply(&format!("cmd=universe_size rc=0 size={}", self.size)))
            }
            "get_my_kvsname" => {
                out.push(reply(&format!("cmd=my_kvsname rc=0 kvsname={}", self.kvsname)))
            }
            "put" => out.push(reply(&self.put(&msg))),
            "get" => out.push(reply(&self.get(&msg))),
            "barrier_in" => self.barrier_in(rank, &mut out),
            "finalize" => {
                self.ranks[rank as usize] = RankState::Finalized;
                out.push(reply("cmd=finalize_ack rc=0"));
                out.push(Output::Event(ServerEvent::Finalized { rank }));
                self.fail_barrier(&format!("rank_{rank}_finalized"), &mut out);
            }
            other => {
                let reason = format!("unsupported PMI command `{other}`");
                self.bad_request(rank, reason, &mut out);
            }
        }
        out
    }

    /// Records that `rank`'s connection closed.
    pub fn connection_closed(&mut self, rank: u32) -> Vec<Output> {
        let mut out = Vec::new();
        let Some(state) = self.state(rank) else {
            return out;
        };
        if state != RankState::Gone {
            self.ranks[rank as usize] = RankState::Gone;
            out.push(Output::Event(ServerEvent::Disconnected {
                rank,
                finalized: state == RankState::Finalized,
            }));
            if state == RankState::Active {
                self.fail_barrier(&format!("rank_{rank}_left_the_job"), &mut out);
            }
        }
        out
    }

    /// Cuts `rank` off for a reason found outside [`PmiJob::handle_line`]
    /// (for instance a line too long to buffer).
    pub fn reject(&mut self, rank: u32, reason: String) -> Vec<Output> {
        let mut out = Vec::new();
        if matches!(
            self.state(rank),
            Some(RankState::Active | RankState::Finalized)
        ) {
            self.bad_request(rank, reason, &mut out);
        }
        out
    }

    fn state(&self, rank: u32) -> Option<RankState> {
        self.ranks.get(rank as usize).copied()
    }

    fn bad_request(&mut self, rank: u32, reason: String, out: &mut Vec<Output>) {
        self.ranks[rank as usize] = RankState::Gone;
        out.push(Output::Close { rank });
        out.push(Output::Event(ServerEvent::BadRequest { rank, reason }));
        self.fail_barrier(&format!("rank_{rank}_left_the_job"), out);
    }

    fn check_kvsname(&self, msg: &Message) -> Result<(), &'static str> {
        match msg.get("kvsname") {
            Some(name) if name != self.kvsname => Err("unknown_kvsname"),
            _ => Ok(()),
        }
    }

    fn put(&mut self, msg: &Message) -> String {
        let result = (|| {
            self.check_kvsname(msg)?;
            let key = msg.get("key").ok_or("missing_key")?;
            let value = msg.get("value").ok_or("missing_value")?;
            check_key(key).map_err(|_| "invalid_key")?;
            if key.len() >= KEYLEN_MAX {
                return Err("key_too_long");
            }
            if value.len() >= VALLEN_MAX {
                return Err("value_too_long");
            }
            if key.starts_with("PMI_") || (self.serves_secret && key == SECRET_KEY) {
                return Err("reserved_key");
            }
            self.kvs.insert(key.to_owned(), value.to_owned());
            Ok(())
        })();
        match result {
            Ok(()) => "cmd=put_result rc=0 msg=success".to_owned(),
            Err(why) => format!("cmd=put_result rc=-1 msg={why}"),
        }
    }

    fn get(&self, msg: &Message) -> String {
        let result = (|| {
            self.check_kvsname(msg)?;
            let key = msg.get("key").ok_or("missing_key")?;
            if key == "PMI_process_mapping" {
                // MPICH's format: (vector,(first node, node count, ranks per node)).
                return Ok(format!("(vector,(0,1,{}))", self.size));
            }
            self.kvs.get(key).cloned().ok_or("key_not_found")
        })();
        match result {
            Ok(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
            Err(why) => format!("cmd=get_result rc=-1 msg={why}"),
        }
    }

    fn barrier_in(&mut self, rank: u32, out: &mut Vec<Output>) {
        if self.in_barrier[rank as usize] {
            self.bad_request(rank, "second `barrier_in` before `barrier_out`".into(), out);
            return;
        }
        if let Some(gone) = self.ranks.iter().position(|&s| s != RankState::Active) {
            out.push(Output::Reply {
                rank,
                line: format!("cmd=barrier_out rc=-1 msg=rank_{gone}_left_the_job\n"),
            });
            return;
        }
        self.in_barrier[rank as usize] = true;
        self.waiting += 1;
        if self.waiting == self.size {
            for (r, flag) in self.in_barrier.iter_mut().enumerate() {
                *flag = false;
                out.push(Output::Reply {
                    rank: r as u32,
                    line: "cmd=barrier_out rc=0\n".to_owned(),
                });
            }
            self.waiting = 0;
        }
    }

    /// Fails every rank waiting in the barrier: it can no longer complete.
    fn fail_barrier(&mut self, why: &str, out: &mut Vec<Output>) {
        for (r, flag) in self.in_barrier.iter_mut().enumerate() {
            if std::mem::take(flag) && self.ranks[r] == RankState::Active {
                out.push(Output::Reply {
                    rank: r as u32,
                    line: format!("cmd=barrier_out rc=-1 msg={why}\n"),
                });
            }
        }
        self.waiting = 0;
    }
}

/// Reads `cmd=abort exitcode=N message=...` leniently: the message is the
/// rest of the line, spaces included; a missing or malformed code is 1.
fn parse_abort(line: &[u8]) -> (i32, String) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\n');
    let mut code = 1;
    let mut message = String::new();
    if let Some(i) = text.find(" exitcode=") {
        let rest = &text[i + " exitcode=".len()..];
        let token = rest.split(' ').next().unwrap_or_default();
        code = parse_int(token)
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(1);
    }
    if let Some(i) = text.find(" message=") {
        message = text[i + " message=".len()..].chars().take(1024).collect();
    }
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(out: &[Output]) -> Vec<(u32, &str)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Reply { rank, line } => Some((*rank, line.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn handshake_put_get() {
        let mut job = PmiJob::new("job1", 2);
        let out = job.handle_line(0, b"cmd=init pmi_version=1 pmi_subversion=1\n");
        assert_eq!(
            replies(&out),
            [(
                0,
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
            )]
        );
        let out = job.handle_line(1, b"cmd=put kvsname=job1 key=k value=v=1\n");
        assert_eq!(replies(&out), [(1, "cmd=put_result rc=0 msg=success\n")]);
        let out = job.handle_line(0, b"cmd=get kvsname=job1 key=k\n");
        assert_eq!(
            replies(&out),
            [(0, "cmd=get_result rc=0 msg=success value=v=1\n")]
        );
        let out = job.handle_line(0, b"cmd=get kvsname=job1 key=nope\n");
        assert_eq!(
            replies(&out),
            [(0, "cmd=get_result rc=-1 msg=key_not_found\n")]
        );
        let out = job.handle_line(0, b"cmd=get kvsname=other key=k\n");
        assert_eq!(
            replies(&out),
            [(0, "cmd=get_result rc=-1 msg=unknown_kvsname\n")]
        );
        let out = job.handle_line(0, b"cmd=put kvsname=job1 key=PMI_x value=1\n");
        assert_eq!(
            replies(&out),
            [(0, "cmd=put_result rc=-1 msg=reserved_key\n")]
        );
    }

    #[test]
    fn the_secret_is_served_and_reserved() {
        let secret = JobSecret::from_bytes([7; 32]);
        let mut job = PmiJob::new("j", 1).with_secret(&secret);
        let out = job.handle_line(
            0,
            format!("cmd=get kvsname=j key={SECRET_KEY}\n").as_bytes(),
        );
        assert_eq!(
            replies(&out),
            [(
                0,
                format!(
                    "cmd=get_result rc=0 msg=success value={}\n",
                    secret.to_hex()
                )
                .as_str()
            )]
        );
        let out = job.handle_line(
            0,
            format!("cmd=put kvsname=j key={SECRET_KEY} value=00\n").as_bytes(),
        );
        assert_eq!(
            replies(&out),
            [(0, "cmd=put_result rc=-1 msg=reserved_key\n")]
        );
        assert_eq!(job.value(SECRET_KEY), Some(secret.to_hex().as_str()));
        // Without a secret, the key is an ordinary one (Hydra's behaviour,
        // where rank 0 publishes it).
        let mut job = PmiJob::new("j", 1);
        let out = job.handle_line(
            0,
            format!("cmd=put kvsname=j key={SECRET_KEY} value=00\n").as_bytes(),
        );
        assert_eq!(replies(&out), [(0, "cmd=put_result rc=0 msg=success\n")]);
    }

    #[test]
    fn barrier_releases_everyone_once() {
        let mut job = PmiJob::new("j", 3);
        assert!(job.handle_line(2, b"cmd=barrier_in\n").is_empty());
        assert!(job.handle_line(0, b"cmd=barrier_in\n").is_empty());
        let out = job.handle_line(1, b"cmd=barrier_in\n");
        let mut got = replies(&out);
        got.sort();
        assert_eq!(
            got,
            [
                (0, "cmd=barrier_out rc=0\n"),
                (1, "cmd=barrier_out rc=0\n"),
                (2, "cmd=barrier_out rc=0\n")
            ]
        );
        // And again: the barrier is reusable.
        assert!(job.handle_line(1, b"cmd=barrier_in\n").is_empty());
    }

    #[test]
    fn a_departed_rank_fails_the_barrier() {
        let mut job = PmiJob::new("j", 3);
        assert!(job.handle_line(0, b"cmd=barrier_in\n").is_empty());
        let out = job.connection_closed(2);
        assert!(out.contains(&Output::Event(ServerEvent::Disconnected {
            rank: 2,
            finalized: false
        })));
        assert_eq!(
            replies(&out),
            [(0, "cmd=barrier_out rc=-1 msg=rank_2_left_the_job\n")]
        );
        let out = job.handle_line(1, b"cmd=barrier_in\n");
        assert_eq!(
            replies(&out),
            [(1, "cmd=barrier_out rc=-1 msg=rank_2_left_the_job\n")]
        );
    }

    #[test]
    fn bad_requests_close_the_connection() {
        let mut job = PmiJob::new("j", 2);
        let out = job.handle_line(1, b"cmd=put key=a b\n");
        assert!(out.contains(&Output::Close { rank: 1 }));
        assert!(
            matches!(&out[1], Output::Event(ServerEvent::BadRequest { rank: 1, reason }) if reason.contains("key=value"))
        );
        // A closed rank is ignored from then on.
        assert!(job.handle_line(1, b"cmd=get_maxes\n").is_empty());
        let out = job.handle_line(0, b"cmd=spawn nprocs=2\n");
        assert!(
            matches!(&out[1], Output::Event(ServerEvent::BadRequest { reason, .. }) if reason.contains("`spawn`"))
        );
    }

    #[test]
    fn abort_is_read_leniently() {
        let mut job = PmiJob::new("j", 1);
        let out = job.handle_line(0, b"cmd=abort exitcode=7 message=it went wrong\n");
        assert_eq!(
            out,
            [Output::Event(ServerEvent::Aborted {
                rank: 0,
                code: 7,
                message: "it went wrong".into()
            })]
        );
        assert_eq!(parse_abort(b"cmd=abort\n"), (1, String::new()));
        assert_eq!(parse_abort(b"cmd=abort exitcode=x\n"), (1, String::new()));
    }

    #[test]
    fn finalize_then_requests_are_bad() {
        let mut job = PmiJob::new("j", 2);
        let out = job.handle_line(0, b"cmd=finalize\n");
        assert_eq!(replies(&out), [(0, "cmd=finalize_ack rc=0\n")]);
        let out = job.handle_line(0, b"cmd=get_maxes\n");
        assert!(matches!(
            &out[1],
            Output::Event(ServerEvent::BadRequest { .. })
        ));
        let out = job.connection_closed(0);
        assert!(out.is_empty(), "{out:?}");
    }
}
