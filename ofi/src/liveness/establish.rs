//! Setting up the liveness connections: one non-blocking loop over the
//! listener, the connections this rank makes (to every peer above it) and
//! those it accepted (from anyone), each driven through the handshake of
//! [`ferry_core::auth::handshake`].
//!
//! - An accepted connection has [`ACCEPT_DEADLINE`] to authenticate; one
//!   that stalls, sends garbage, claims a rank it cannot prove, or is still
//!   unauthenticated when setup ends is logged and closed. It never counts.
//! - At most `MAX_PENDING_EXTRA` + 2 × (peers below) unauthenticated
//!   connections are kept; beyond, the oldest is dropped (a real peer that
//!   is dropped reconnects).
//! - A connection this rank made that the other side closes or answers
//!   wrongly is retried (with a growing pause) until the setup deadline: a
//!   real acceptor never refuses us, so such a close means we were dropped
//!   in a flood, or were not talking to the real peer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use ferry_core::auth::handshake::{AcceptStep, Acceptor, ConnectStep, Connector, Gate};
use ferry_core::Rank;
use rustix::event::{poll, PollFd, PollFlags};
use rustix::net::{AddressFamily, SocketFlags, SocketType};

/// How long an accepted connection has to complete its handshake.
pub(crate) const ACCEPT_DEADLINE: Duration = Duration::from_secs(10);
/// Unauthenticated connections kept beyond twice the expected ones.
const MAX_PENDING_EXTRA: usize = 64;
/// The longest single wait, so that deadlines are looked at.
const TICK: Duration = Duration::from_millis(100);
/// The longest pause before reconnecting.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How many connections setup refused (each one was logged).
pub(crate) type Refusals = usize;

#[derive(Debug)]
enum Out {
    /// (Re)connect once this time has come.
    Idle {
        at: Instant,
    },
    Connecting(TcpStream),
    Handshaking(TcpStream, Connector),
    Done,
}

#[derive(Debug)]
struct Outgoing {
    peer: Rank,
    addr: SocketAddr,
    state: Out,
    tries: u32,
}

#[derive(Debug)]
struct Pending {
    stream: TcpStream,
    from: SocketAddr,
    acceptor: Acceptor,
    deadline: Instant,
}

/// Starts a non-blocking connect.
fn start_connect(addr: &SocketAddr) -> io::Result<TcpStream> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = rustix::net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    match rustix::net::connect(&fd, addr) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => Ok(TcpStream::from(fd)),
        Err(e) => Err(e.into()),
    }
}

/// Whether a connect error means nobody will ever listen there.
fn fatal(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::AddrNotAvailable
    )
}

fn connect_error(me: Rank, o: &Outgoing, e: &io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "rank {me} could not connect to rank {}'s liveness socket at {}: {e}",
            o.peer, o.addr
        ),
    )
}

impl Outgoing {
    fn retry(&mut self, now: Instant, why: &str, me: Rank) {
        self.tries += 1;
        let pause = Duration::from_millis(10 << self.tries.min(7)).min(MAX_BACKOFF);
        tracing::warn!(
            rank = me,
            peer = self.peer,
            addr = %self.addr,
            "ofi liveness: connection to a peer failed ({why}); retrying in {pause:?}"
        );
        self.state = Out::Idle { at: now + pause };
    }

    /// Moves one step on readiness; returns the stream once welcomed.
    fn step(&mut self, me: Rank, gate: &mut Gate, now: Instant) -> io::Result<Option<TcpStream>> {
        match std::mem::replace(&mut self.state, Out::Done) {
            Out::Connecting(mut stream) => {
                if let Some(e) = stream.take_error()? {
                    if fatal(&e) {
                        return Err(connect_error(me, self, &e));
                    }
                    self.retry(now, &e.to_string(), me);
                    return Ok(None);
                }
                let (conn, hello) = gate.connect(self.peer as u32);
                match stream.write_all(&hello) {
                    Ok(()) => self.state = Out::Handshaking(stream, conn),
                    Err(e) => self.retry(now, &format!("sending the hello: {e}"), me),
                }
            }
            Out::Handshaking(mut stream, mut conn) => {
                let mut buf = [0u8; 512];
                let n = match stream.read(&mut buf) {
                    Ok(0) => {
                        self.retry(now, "closed during the handshake", me);
                        return Ok(None);
                    }
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) =>
                    {
                        self.state = Out::Handshaking(stream, conn);
                        return Ok(None);
                    }
                    Err(e) => {
                        self.retry(now, &e.to_string(), me);
                        return Ok(None);
                    }
                };
                match conn.receive(gate, &buf[..n]) {
                    Ok(ConnectStep::NeedMore) => self.state = Out::Handshaking(stream, conn),
                    Ok(ConnectStep::Send(proof)) => match stream.write_all(&proof) {
                        Ok(()) => self.state = Out::Handshaking(stream, conn),
                        Err(e) => self.retry(now, &format!("sending the proof: {e}"), me),
                    },
                    Ok(ConnectStep::Welcomed) => return Ok(Some(stream)),
                    Err(r) => {
                        self.retry(now, &format!("its listener failed the handshake: {r}"), me)
                    }
                }
            }
            other => self.state = other,
        }
        Ok(None)
    }
}

enum InStep {
    Keep,
    Refuse(String),
    Authenticated(Rank),
}

impl Pending {
    fn step(&mut self, gate: &mut Gate) -> InStep {
        let mut buf = [0u8; 512];
        let n = match self.stream.read(&mut buf) {
            Ok(0) => return InStep::Refuse("closed before completing the handshake".into()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return InStep::Keep
            }
            Err(e) => return InStep::Refuse(format!("read failed: {e}")),
        };
        let (reply, peer) = match self.acceptor.receive(gate, &buf[..n]) {
            Ok(AcceptStep::NeedMore) => return InStep::Keep,
            Ok(AcceptStep::Send(challenge)) => (challenge, None),
            Ok(AcceptStep::Authenticated { peer, welcome }) => (welcome, Some(peer as Rank)),
            Err(r) => return InStep::Refuse(r.to_string()),
        };
        match (self.stream.write_all(&reply), peer) {
            (Err(e), _) => InStep::Refuse(format!("write failed: {e}")),
            (Ok(()), None) => InStep::Keep,
            (Ok(()), Some(p)) => InStep::Authenticated(p),
        }
    }
}

fn refuse(me: Rank, from: &SocketAddr, claimed: Option<u32>, why: &str, refused: &mut Refusals) {
    *refused += 1;
    tracing::warn!(
        rank = me,
        from = %from,
        claimed = ?claimed,
        "ofi liveness: refused a connection: {why}"
    );
}

/// Connects to every rank of `targets`, accepts one authenticated
/// connection from every rank of `below`, within `timeout`. Returns the
/// connections by rank and how many others were refused.
pub(crate) fn establish(
    me: Rank,
    listener: TcpListener,
    targets: &[(Rank, SocketAddr)],
    below: &[Rank],
    gate: &mut Gate,
    timeout: Duration,
) -> io::Result<(Vec<(Rank, TcpStream)>, Refusals)> {
    listener.set_nonblocking(true)?;
    let start = Instant::now();
    let deadline = start + timeout;
    let mut outs: Vec<Outgoing> = targets
        .iter()
        .map(|&(peer, addr)| Outgoing {
            peer,
            addr,
            state: Out::Idle { at: start },
            tries: 0,
        })
        .collect();
    let mut accepted: Vec<Option<TcpStream>> = below.iter().map(|_| None).collect();
    let mut made: Vec<(Rank, TcpStream)> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let max_pending = MAX_PENDING_EXTRA + 2 * below.len();
    let mut refused: Refusals = 0;
    loop {
        let now = Instant::now();
        for o in &mut outs {
            if matches!(o.state, Out::Idle { at } if at <= now) {
                match start_connect(&o.addr) {
                    Ok(s) => o.state = Out::Connecting(s),
                    Err(e) if fatal(&e) => return Err(connect_error(me, o, &e)),
                    Err(e) => o.retry(now, &e.to_string(), me),
                }
            }
        }
        pending.retain(|p| {
            let keep = p.deadline > now;
            if !keep {
                let why = format!("no complete handshake within {ACCEPT_DEADLINE:?}");
                refuse(me, &p.from, p.acceptor.claimed(), &why, &mut refused);
            }
            keep
        });
        if outs.iter().all(|o| matches!(o.state, Out::Done)) && accepted.iter().all(Option::is_some)
        {
            break;
        }
        if now >= deadline {
            let mut missing: Vec<Rank> = outs
                .iter()
                .filter(|o| !matches!(o.state, Out::Done))
                .map(|o| o.peer)
                .collect();
            missing.extend(
                below
                    .iter()
                    .zip(&accepted)
                    .filter(|(_, a)| a.is_none())
                    .map(|(r, _)| *r),
            );
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no authenticated liveness connection with ranks {missing:?} within {timeout:?} \
                     ({refused} other connection(s) refused)"
                ),
            ));
        }

        // Wait for the next event or deadline.
        let mut wait = TICK.min(deadline - now);
        for o in &outs {
            if let Out::Idle { at } = o.state {
                wait = wait.min(at.saturating_duration_since(now));
            }
        }
        for p in &pending {
            wait = wait.min(p.deadline.saturating_duration_since(now));
        }
        let (listener_ready, outs_ready, pending_ready) = {
            let mut fds = vec![PollFd::new(&listener, PollFlags::IN)];
            let mut outs_polled = Vec::new();
            for (i, o) in outs.iter().enumerate() {
                let (s, flags) = match &o.state {
                    Out::Connecting(s) => (s, PollFlags::OUT),
                    Out::Handshaking(s, _) => (s, PollFlags::IN),
                    Out::Idle { .. } | Out::Done => continue,
                };
                fds.push(PollFd::new(s, flags));
                outs_polled.push(i);
            }
            for p in &pending {
                fds.push(PollFd::new(&p.stream, PollFlags::IN));
            }
            let timeout = rustix::time::Timespec {
                tv_sec: wait.as_secs() as i64,
                tv_nsec: i64::from(wait.subsec_nanos()),
            };
            match poll(&mut fds, Some(&timeout)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            let hit: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
            let outs_ready: Vec<usize> = outs_polled
                .iter()
                .zip(&hit[1..])
                .filter(|(_, h)| **h)
                .map(|(i, _)| *i)
                .collect();
            (hit[0], outs_ready, hit[1 + outs_polled.len()..].to_vec())
        };
        let now = Instant::now();

        // Connections this rank makes.
        for i in outs_ready {
            if let Some(stream) = outs[i].step(me, gate, now)? {
                made.push((outs[i].peer, stream));
            }
        }
        // Accepted connections, before the new ones (their readiness was
        // polled in this order).
        let mut i = pending_ready.len();
        while i > 0 {
            i -= 1;
            if !pending_ready[i] {
                continue;
            }
            match pending[i].step(gate) {
                InStep::Keep => {}
                InStep::Refuse(why) => {
                    let p = pending.swap_remove(i);
                    refuse(me, &p.from, p.acceptor.claimed(), &why, &mut refused);
                }
                InStep::Authenticated(peer) => {
                    let p = pending.swap_remove(i);
                    if let Some(slot) = below.iter().position(|&r| r == peer) {
                        if accepted[slot].replace(p.stream).is_some() {
                            tracing::debug!(rank = me, peer, "ofi liveness: a peer reconnected");
                        }
                    }
                }
            }
        }
        if listener_ready {
            loop {
                match listener.accept() {
                    Ok((stream, from)) => {
                        stream.set_nonblocking(true)?;
                        pending.push(Pending {
                            stream,
                            from,
                            acceptor: gate.accept(),
                            deadline: now + ACCEPT_DEADLINE,
                        });
                        if pending.len() > max_pending {
                            let p = pending.remove(0);
                            let why = format!("more than {max_pending} unauthenticated connections; dropped the oldest");
                            refuse(me, &p.from, p.acceptor.claimed(), &why, &mut refused);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                        ) => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("accepting a liveness connection: {e}"),
                        ))
                    }
                }
            }
        }
    }
    for p in pending {
        refuse(
            me,
            &p.from,
            p.acceptor.claimed(),
            "still unauthenticated when setup ended",
            &mut refused,
        );
    }
    if refused > 0 {
        tracing::warn!(
            rank = me,
            refused,
            "ofi liveness: setup refused connection(s) from outside the job"
        );
    }
    let mut socks = made;
    socks.extend(
        below
            .iter()
            .zip(accepted)
            .filter_map(|(r, s)| Some((*r, s?))),
    );
    Ok((socks, refused))
}
