//! The mutual challenge-response that opens a side-channel connection
//! between two ranks (the ofi device's liveness sockets), sans-IO.
//!
//! The lower rank connects (the *connector*, rank `c`), the higher one
//! accepts (the *acceptor*, rank `a`). `K` is the [`JobSecret`], `job` the
//! job id, `n_c` and `n_a` fresh nonces of each side:
//!
//! ```text
//! connector                                              acceptor
//!   Hello     {c → a, n_c}                        ──▶
//!                                                 ◀──  Challenge {a → c, n_a,
//!                                                        HMAC(K, ACCEPT, job, c, a, n_c, n_a)}
//!   Proof     {c → a, HMAC(K, CONNECT, job, c, a, n_c, n_a)}  ──▶
//!                                                 ◀──  Welcome   {a → c}
//! ```
//!
//! - Each side proves knowledge of `K` over the other's fresh nonce, so a
//!   recorded message is useless on another connection (replay), and both
//!   ranks are bound into both MACs, so a proof for one pair of ranks is
//!   useless for another.
//! - The two directions use different labels, so an acceptor's challenge
//!   can never serve as a connector's proof (reflection).
//! - The connector sends its proof only after checking the acceptor's MAC,
//!   so it never computes a MAC for someone who has not proved first.
//! - MACs are compared in constant time.
//! - The protocol is lock-step: a side that receives more than the one
//!   message it waits for refuses the connection.
//!
//! The acceptor counts a connection only once its proof checks; the
//! connector only once it was welcomed. Everything else is a [`Refusal`],
//! which the caller logs before closing the connection.
//!
//! # Wire format
//! Every message: `"FRYH"`, version `1`, kind (1 hello, 2 challenge,
//! 3 proof, 4 welcome), `from` and `to` ranks (u32, little-endian), then
//! the kind's body: a 32-byte nonce (hello), a nonce and a 32-byte MAC
//! (challenge), a MAC (proof), nothing (welcome).

use std::collections::HashSet;

use super::{JobSecret, Nonces, MAC_LEN};

/// The magic that starts every message.
pub const MAGIC: [u8; 4] = *b"FRYH";
/// The protocol version.
pub const VERSION: u8 = 1;
/// Magic, version, kind, from, to.
pub const HEADER_LEN: usize = 4 + 1 + 1 + 4 + 4;
/// Bytes in a nonce.
pub const NONCE_LEN: usize = 32;
/// The longest message (a challenge).
pub const MAX_MESSAGE: usize = HEADER_LEN + NONCE_LEN + MAC_LEN;

const ACCEPT: &str = "ferry side-channel handshake v1: acceptor";
const CONNECT: &str = "ferry side-channel handshake v1: connector";

/// A nonce.
pub type Nonce = [u8; NONCE_LEN];
/// A MAC.
pub type Tag = [u8; MAC_LEN];

/// One handshake message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Connector → acceptor: who it is, whom it wants, its nonce.
    Hello {
        /// The connector's rank.
        from: u32,
        /// The acceptor's rank.
        to: u32,
        /// The connector's nonce.
        nonce: Nonce,
    },
    /// Acceptor → connector: its nonce and its proof.
    Challenge {
        /// The acceptor's rank.
        from: u32,
        /// The connector's rank.
        to: u32,
        /// The acceptor's nonce.
        nonce: Nonce,
        /// The acceptor's MAC.
        mac: Tag,
    },
    /// Connector → acceptor: the connector's proof.
    Proof {
        /// The connector's rank.
        from: u32,
        /// The acceptor's rank.
        to: u32,
        /// The connector's MAC.
        mac: Tag,
    },
    /// Acceptor → connector: the connection counts.
    Welcome {
        /// The acceptor's rank.
        from: u32,
        /// The connector's rank.
        to: u32,
    },
}

/// Why bytes are not a handshake message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformed {
    /// The first four bytes are not [`MAGIC`].
    #[error("bad magic")]
    Magic,
    /// An unknown protocol version.
    #[error("unknown version {0}")]
    Version(u8),
    /// An unknown message kind.
    #[error("unknown message kind {0}")]
    Kind(u8),
}

fn kind_len(kind: u8) -> Option<usize> {
    Some(
        HEADER_LEN
            + match kind {
                1 => NONCE_LEN,
                2 => NONCE_LEN + MAC_LEN,
                3 => MAC_LEN,
                4 => 0,
                _ => return None,
            },
    )
}

fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

impl Message {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let (kind, from, to) = match *self {
            Message::Hello { from, to, .. } => (1u8, from, to),
            Message::Challenge { from, to, .. } => (2, from, to),
            Message::Proof { from, to, .. } => (3, from, to),
            Message::Welcome { from, to } => (4, from, to),
        };
        let mut out = Vec::with_capacity(MAX_MESSAGE);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(kind);
        out.extend_from_slice(&from.to_le_bytes());
        out.extend_from_slice(&to.to_le_bytes());
        match self {
            Message::Hello { nonce, .. } => out.extend_from_slice(nonce),
            Message::Challenge { nonce, mac, .. } => {
                out.extend_from_slice(nonce);
                out.extend_from_slice(mac);
            }
            Message::Proof { mac, .. } => out.extend_from_slice(mac),
            Message::Welcome { .. } => {}
        }
        out
    }

    /// Decodes the message at the start of `buf`: `Ok(None)` if `buf` is a
    /// valid but incomplete prefix, `Ok(Some((message, length)))` once it
    /// is whole. Never panics, whatever the bytes.
    ///
    /// # Errors
    /// [`Malformed`] as soon as the bytes received cannot start a message.
    pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, Malformed> {
        let magic_seen = buf.len().min(MAGIC.len());
        if buf[..magic_seen] != MAGIC[..magic_seen] {
            return Err(Malformed::Magic);
        }
        if let Some(&v) = buf.get(4) {
            if v != VERSION {
                return Err(Malformed::Version(v));
            }
        }
        let Some(&kind) = buf.get(5) else {
            return Ok(None);
        };
        let len = kind_len(kind).ok_or(Malformed::Kind(kind))?;
        if buf.len() < len {
            return Ok(None);
        }
        let from = u32::from_le_bytes(array(&buf[6..10]));
        let to = u32::from_le_bytes(array(&buf[10..14]));
        let body = &buf[HEADER_LEN..len];
        let m = match kind {
            1 => Message::Hello {
                from,
                to,
                nonce: array(body),
            },
            2 => Message::Challenge {
                from,
                to,
                nonce: array(body),
                mac: array(&body[NONCE_LEN..]),
            },
            3 => Message::Proof {
                from,
                to,
                mac: array(body),
            },
            _ => Message::Welcome { from, to },
        };
        Ok(Some((m, len)))
    }

    fn name(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::Challenge { .. } => "challenge",
            Message::Proof { .. } => "proof",
            Message::Welcome { .. } => "welcome",
        }
    }
}

/// Why a connection was refused. Log it (it names no secret) and close
/// the connection; it counts for nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Bytes that are not a handshake message.
    #[error("malformed message: {0}")]
    Malformed(#[from] Malformed),
    /// A valid message, but not the one this step waits for.
    #[error("unexpected {0} message")]
    Unexpected(&'static str),
    /// More bytes than the one message this step waits for.
    #[error("{0} byte(s) beyond the expected message")]
    Trailing(usize),
    /// Addressed to another rank.
    #[error("addressed to rank {to}, not to this rank")]
    WrongDestination {
        /// The rank it was for.
        to: u32,
    },
    /// Claims a rank that is not expected on this connection.
    #[error("claims to be rank {from}, which is not a peer expected here")]
    WrongRank {
        /// The rank it claimed.
        from: u32,
    },
    /// A hello whose nonce was seen before: a replay.
    #[error("replayed hello (nonce seen before) claiming rank {from}")]
    Replayed {
        /// The rank it claimed.
        from: u32,
    },
    /// The MAC does not check: the other end does not hold the job secret.
    #[error("bad MAC from a peer claiming rank {from}: forged, replayed or of another job")]
    BadMac {
        /// The rank it claimed.
        from: u32,
    },
}

/// One rank's side of every handshake of one setup: the secret, the job
/// id, who may connect to it, the hello nonces seen (replays) and its own
/// nonce source.
#[derive(Debug)]
pub struct Gate {
    secret: JobSecret,
    job: Vec<u8>,
    me: u32,
    may_connect: HashSet<u32>,
    seen: HashSet<Nonce>,
    nonces: Nonces,
}

impl Gate {
    /// The gate of rank `me` in job `job`, which accepts connections from
    /// the ranks in `may_connect`. `seed` must be fresh random bytes.
    pub fn new(
        secret: JobSecret,
        job: &str,
        me: u32,
        may_connect: impl IntoIterator<Item = u32>,
        seed: [u8; 32],
    ) -> Gate {
        Gate {
            secret,
            job: job.as_bytes().to_vec(),
            me,
            may_connect: may_connect.into_iter().collect(),
            seen: HashSet::new(),
            nonces: Nonces::new(seed),
        }
    }

    /// This rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    fn tag(&self, label: &str, c: u32, a: u32, n_c: &Nonce, n_a: &Nonce) -> Tag {
        self.secret.mac(
            label,
            &[&self.job, &c.to_le_bytes(), &a.to_le_bytes(), n_c, n_a],
        )
    }

    fn check(&self, label: &str, c: u32, a: u32, n_c: &Nonce, n_a: &Nonce, tag: &Tag) -> bool {
        self.secret.verify(
            label,
            &[&self.job, &c.to_le_bytes(), &a.to_le_bytes(), n_c, n_a],
            tag,
        )
    }

    /// Starts a connection to `peer`: the connector, and the hello to send.
    pub fn connect(&mut self, peer: u32) -> (Connector, Vec<u8>) {
        let nonce = self.nonces.next_nonce();
        let hello = Message::Hello {
            from: self.me,
            to: peer,
            nonce,
        };
        (
            Connector {
                peer,
                nonce,
                state: ConnectorState::AwaitChallenge,
                buf: Vec::new(),
            },
            hello.encode(),
        )
    }

    /// Starts on a connection accepted from anyone.
    pub fn accept(&mut self) -> Acceptor {
        Acceptor {
            nonce: self.nonces.next_nonce(),
            state: AcceptorState::AwaitHello,
            buf: Vec::new(),
        }
    }
}

/// Appends `bytes` to `buf` and takes one whole message if there is one;
/// refuses anything beyond it.
fn take_one(buf: &mut Vec<u8>, bytes: &[u8]) -> Result<Option<Message>, Refusal> {
    buf.extend_from_slice(bytes);
    match Message::decode(buf)? {
        None => {
            // A valid prefix is shorter than the longest message.
            debug_assert!(buf.len() < MAX_MESSAGE);
            Ok(None)
        }
        Some((m, len)) if len == buf.len() => {
            buf.clear();
            Ok(Some(m))
        }
        Some((_, len)) => Err(Refusal::Trailing(buf.len() - len)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnectorState {
    AwaitChallenge,
    AwaitWelcome,
    Welcomed,
}

/// What a connector does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectStep {
    /// Wait for more bytes.
    NeedMore,
    /// Send these bytes (the proof), then wait.
    Send(Vec<u8>),
    /// The acceptor welcomed us: the connection counts.
    Welcomed,
}

/// The connecting side of one handshake.
#[derive(Debug)]
pub struct Connector {
    peer: u32,
    nonce: Nonce,
    state: ConnectorState,
    buf: Vec<u8>,
}

impl Connector {
    /// The rank this connects to.
    pub fn peer(&self) -> u32 {
        self.peer
    }

    /// Feeds bytes received from the acceptor.
    ///
    /// # Errors
    /// A [`Refusal`]: close the connection (and try again on a new one).
    pub fn receive(&mut self, gate: &Gate, bytes: &[u8]) -> Result<ConnectStep, Refusal> {
        if self.state == ConnectorState::Welcomed {
            return Err(Refusal::Trailing(bytes.len()));
        }
        let Some(m) = take_one(&mut self.buf, bytes)? else {
            return Ok(ConnectStep::NeedMore);
        };
        let (from, to) = match m {
            Message::Challenge { from, to, .. } | Message::Welcome { from, to } => (from, to),
            other => return Err(Refusal::Unexpected(other.name())),
        };
        if to != gate.me {
            return Err(Refusal::WrongDestination { to });
        }
        if from != self.peer {
            return Err(Refusal::WrongRank { from });
        }
        match (self.state, m) {
            (ConnectorState::AwaitChallenge, Message::Challenge { nonce, mac, .. }) => {
                let (c, a) = (gate.me, self.peer);
                if !gate.check(ACCEPT, c, a, &self.nonce, &nonce, &mac) {
                    return Err(Refusal::BadMac { from });
                }
                self.state = ConnectorState::AwaitWelcome;
                let proof = Message::Proof {
                    from: c,
                    to: a,
                    mac: gate.tag(CONNECT, c, a, &self.nonce, &nonce),
                };
                Ok(ConnectStep::Send(proof.encode()))
            }
            (ConnectorState::AwaitWelcome, Message::Welcome { .. }) => {
                self.state = ConnectorState::Welcomed;
                Ok(ConnectStep::Welcomed)
            }
            (_, m) => Err(Refusal::Unexpected(m.name())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptorState {
    AwaitHello,
    AwaitProof { peer: u32, peer_nonce: Nonce },
    Done,
}

/// What an acceptor does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptStep {
    /// Wait for more bytes.
    NeedMore,
    /// Send these bytes (the challenge), then wait.
    Send(Vec<u8>),
    /// The connector proved it holds the secret: send `welcome`; the
    /// connection is `peer`'s and counts.
    Authenticated {
        /// The connector's rank.
        peer: u32,
        /// The welcome to send.
        welcome: Vec<u8>,
    },
}

/// The accepting side of one handshake.
#[derive(Debug)]
pub struct Acceptor {
    nonce: Nonce,
    state: AcceptorState,
    buf: Vec<u8>,
}

impl Acceptor {
    /// The rank the connector claimed, once its hello arrived (not proved
    /// until [`AcceptStep::Authenticated`]).
    pub fn claimed(&self) -> Option<u32> {
        match self.state {
            AcceptorState::AwaitProof { peer, .. } => Some(peer),
            AcceptorState::AwaitHello | AcceptorState::Done => None,
        }
    }

    /// Feeds bytes received from the connector.
    ///
    /// # Errors
    /// A [`Refusal`]: log it, close the connection; it counts for nothing.
    pub fn receive(&mut self, gate: &mut Gate, bytes: &[u8]) -> Result<AcceptStep, Refusal> {
        if self.state == AcceptorState::Done {
            return Err(Refusal::Trailing(bytes.len()));
        }
        let Some(m) = take_one(&mut self.buf, bytes)? else {
            return Ok(AcceptStep::NeedMore);
        };
        match (self.state, m) {
            (AcceptorState::AwaitHello, Message::Hello { from, to, nonce }) => {
                if to != gate.me {
                    return Err(Refusal::WrongDestination { to });
                }
                if !gate.may_connect.contains(&from) {
                    return Err(Refusal::WrongRank { from });
                }
                if !gate.seen.insert(nonce) {
                    return Err(Refusal::Replayed { from });
                }
                self.state = AcceptorState::AwaitProof {
                    peer: from,
                    peer_nonce: nonce,
                };
                let (c, a) = (from, gate.me);
                let challenge = Message::Challenge {
                    from: a,
                    to: c,
                    nonce: self.nonce,
                    mac: gate.tag(ACCEPT, c, a, &nonce, &self.nonce),
                };
                Ok(AcceptStep::Send(challenge.encode()))
            }
            (AcceptorState::AwaitProof { peer, peer_nonce }, Message::Proof { from, to, mac }) => {
                if to != gate.me {
                    return Err(Refusal::WrongDestination { to });
                }
                if from != peer {
                    return Err(Refusal::WrongRank { from });
                }
                if !gate.check(CONNECT, peer, gate.me, &peer_nonce, &self.nonce, &mac) {
                    return Err(Refusal::BadMac { from });
                }
                self.state = AcceptorState::Done;
                let welcome = Message::Welcome {
                    from: gate.me,
                    to: peer,
                };
                Ok(AcceptStep::Authenticated {
                    peer,
                    welcome: welcome.encode(),
                })
            }
            (_, m) => Err(Refusal::Unexpected(m.name())),
        }
    }
}

#[cfg(test)]
mod tests;
