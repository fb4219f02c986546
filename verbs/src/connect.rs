//! Lazy connections: the per-peer handshake state machine over the UD
//! endpoint (`handshake.rs`). The protocol, the tie-break for simultaneous
//! connects and the timeouts are documented in `qp.rs`.

use std::time::{Duration, Instant};

use ferry_core::{DeviceError, Error, PeerError};
use ferry_verbs_wire::connect::{ConnectMsg, Kind};

use crate::device::{VerbsDevice, CREDIT_TAG};
use crate::ffi::{Qp, SendOp};
use crate::handshake::UD_CQE;
use crate::imm::Imm;
use crate::qp::{self, QpAddr};

/// The first retransmission timeout of a connect request; it doubles per
/// attempt up to [`RTO_MAX`].
const RTO_FIRST: Duration = Duration::from_millis(50);
const RTO_MAX: Duration = Duration::from_secs(1);

/// Where a peer's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    /// Never used: no QP.
    Idle,
    /// This rank sent a request; its QP is in INIT. No deadline while
    /// only the observer ring (`observe.rs`) wants the connection: a peer
    /// that does not progress for a while is not failed for that.
    Asking {
        psn: u32,
        tries: u32,
        next: Instant,
        deadline: Option<Instant>,
    },
    /// The peer asked; this rank's QP is connected (RTS) to the peer's QP
    /// `answers`, but sends wait for the peer's first packet (its "hello"),
    /// which proves the peer's QP is out of INIT.
    Accepted {
        psn: u32,
        answers: u32,
        deadline: Instant,
    },
    /// Connected both ways.
    Up,
}

impl Link {
    /// The next time a timer of this state fires (`None` for settled ones).
    fn next_timer(&self) -> Option<Instant> {
        match *self {
            Link::Asking { next, deadline, .. } => Some(deadline.map_or(next, |d| next.min(d))),
            Link::Accepted { deadline, .. } => Some(deadline),
            Link::Idle | Link::Up => None,
        }
    }
}

fn rto(tries: u32) -> Duration {
    RTO_FIRST
        .saturating_mul(1 << tries.saturating_sub(1).min(8))
        .min(RTO_MAX)
}

/// The connections being made: the peers with a handshake in progress,
/// how long one may take, and the RC QPs made so far.
#[derive(Debug)]
pub(crate) struct Connecting {
    /// Peers with a handshake in progress (indices into `peers`).
    pending: Vec<u32>,
    /// How long a handshake may take (`FERRY_VERBS_CONNECT_MS`).
    timeout: Duration,
    /// RC QPs made so far (the loopback pair counts two).
    qps: u32,
}

impl Connecting {
    /// Handshakes of at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> Connecting {
        Connecting {
            pending: Vec::new(),
            timeout,
            qps: 0,
        }
    }

    /// When a handshake started now must be done.
    fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Peer `i` started a handshake.
    fn start(&mut self, i: usize) {
        self.pending.push(i as u32);
    }

    /// Peer `i`'s handshake ended.
    fn end(&mut self, i: usize) {
        self.pending.retain(|&j| j as usize != i);
    }

    /// Whether a handshake is in progress.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Counts `n` new RC QPs; returns the total.
    fn add_qps(&mut self, n: u32) -> u32 {
        self.qps += n;
        self.qps
    }

    /// RC QPs made so far.
    pub(crate) fn qps(&self) -> u32 {
        self.qps
    }
}

impl VerbsDevice {
    /// Starts connecting to peer `i` (its first use). `Ok` = the
    /// handshake is under way (or done, for this rank itself); the caller
    /// returns `Busy` until the peer is up.
    ///
    /// # Errors
    /// The peer's failure: it could not be given a QP (no room in the CQ
    /// or SRQ, a verb failed). The peer is failed too.
    #[cold]
    pub(crate) fn start_connect(&mut self, i: usize) -> Result<(), Error> {
        self.begin_connect(i, true)
    }

    /// [`VerbsDevice::start_connect`]; `bounded`: the handshake has a
    /// deadline (an operation waits for it), else it retries until it
    /// succeeds or an operation needs the peer (the observer ring).
    pub(crate) fn begin_connect(&mut self, i: usize, bounded: bool) -> Result<(), Error> {
        if let Link::Asking {
            deadline: deadline @ None,
            ..
        } = &mut self.peers[i].link
        {
            if bounded {
                *deadline = Some(self.connecting.deadline());
            }
            return Ok(());
        }
        if self.peers[i].link != Link::Idle {
            return Ok(());
        }
        let r = if self.peers[i].rank == self.rank {
            self.connect_self(i)
        } else {
            self.new_rc_qp(i, 1).map(|psn| {
                let now = Instant::now();
                self.peers[i].link = Link::Asking {
                    psn,
                    tries: 1,
                    next: now + rto(1),
                    deadline: bounded.then(|| self.connecting.deadline()),
                };
                self.connecting.start(i);
                self.send_handshake(i, Kind::Request, psn);
            })
        };
        r.inspect_err(|&e| {
            if bounded {
                self.fail(i, e);
            } else {
                tracing::warn!(peer = self.peers[i].rank, error = %e, "verbs: observer connection not made");
            }
        })
    }

    /// Creates peer `i`'s QP (and `extra - 1` more CQ room, for the
    /// loopback pair), grows the receive pool by the peer's chunk, and
    /// moves the QP to INIT. Returns its starting PSN.
    fn new_rc_qp(&mut self, i: usize, qps: u32) -> Result<u32, Error> {
        if self.recv.chunks() >= self.limits.max_connected() as usize {
            return Err(DeviceError::Os {
                what: "verbs: more connected peers than the SRQ holds (see FERRY_VERBS_CREDITS)",
                code: libc::ENOSPC,
            }
            .into());
        }
        let qps = self.connecting.add_qps(qps);
        let sq_depth = self.limits.sq_depth();
        let needed = UD_CQE
            .saturating_add(qps.saturating_mul(sq_depth))
            .saturating_add((self.recv.chunks() as u32 + 1).saturating_mul(self.limits.per_peer()));
        self.cq.ensure(needed, self.limits.max_cqe())?;
        self.recv.grow(&self.pd).map_err(crate::error::into_core)?;
        let (q, psn) = self.qp_in_init(i)?;
        let p = &mut self.peers[i];
        p.qp = Some(q);
        p.sq_free = sq_depth;
        Ok(psn)
    }

    /// An RC QP for peer `i` in INIT, its QPN mapped to the peer, and its
    /// starting PSN. (CQ and receive room are the caller's: `new_rc_qp`.)
    fn qp_in_init(&mut self, i: usize) -> Result<(Qp, u32), Error> {
        let mut q = crate::setup::create_rc_qp(
            &self.pd,
            self.cq.cq(),
            self.recv.srq(),
            self.limits.sq_depth(),
            self.limits.max_inline() as u32,
        )
        .map_err(crate::error::into_core)?;
        qp::to_init(&mut q, self.sel.port).map_err(crate::error::into_core)?;
        let psn = qp::initial_psn(self.rank, q.num());
        self.index.bind_qpn(q.num(), i);
        Ok((q, psn))
    }

    /// This rank itself: a loopback pair, connected at once.
    fn connect_self(&mut self, i: usize) -> Result<(), Error> {
        let a_psn = self.new_rc_qp(i, 2)?;
        let (mut b, b_psn) = self.qp_in_init(i)?;
        let me = self.ud.me().port;
        let p = &mut self.peers[i];
        let Some(a) = p.qp.as_mut() else {
            return Err(Error::Internal("verbs: loopback QP missing"));
        };
        let (a_addr, b_addr) = (
            QpAddr {
                qpn: a.num(),
                psn: a_psn,
            },
            QpAddr {
                qpn: b.num(),
                psn: b_psn,
            },
        );
        qp::connect(a, &self.sel, a_psn, &me, b_addr, &self.opts)
            .map_err(crate::error::into_core)?;
        qp::connect(&mut b, &self.sel, b_psn, &me, a_addr, &self.opts)
            .map_err(crate::error::into_core)?;
        p.loop_rx = Some(b);
        p.link = Link::Up;
        p.up = true;
        Ok(())
    }

    /// Sends a request or reply to peer `i` about its QP (starting PSN
    /// `psn`). A failure to post is logged: the requester retransmits.
    fn send_handshake(&mut self, i: usize, kind: Kind, psn: u32) {
        let (Some(q), Some(addr)) = (self.peers[i].qp.as_ref(), self.ud.addr(i)) else {
            return;
        };
        let msg = ConnectMsg {
            kind,
            from: self.rank,
            to: self.peers[i].rank,
            from_nonce: self.ud.me().nonce,
            to_nonce: addr.nonce,
            qpn: q.num(),
            psn,
        };
        match self.ud.send(&self.pd, &self.sel, i, &msg) {
            Ok(true) => {}
            Ok(false) => tracing::debug!(peer = msg.to, "verbs: handshake send slots busy"),
            Err(e) => tracing::warn!(peer = msg.to, error = %e, "verbs: handshake not sent"),
        }
    }

    /// Connects peer `i`'s QP to `remote`.
    fn connect_to(&mut self, i: usize, psn: u32, remote: QpAddr) -> Result<(), Error> {
        let Some(port) = self.ud.addr(i).map(|a| a.port) else {
            return Err(Error::Internal("verbs: no address for a peer"));
        };
        let Some(q) = self.peers[i].qp.as_mut() else {
            return Err(Error::Internal("verbs: connecting a peer without a QP"));
        };
        qp::connect(q, &self.sel, psn, &port, remote, &self.opts).map_err(crate::error::into_core)
    }

    /// A valid datagram from peer `i` (see `qp.rs` for each case).
    pub(crate) fn on_handshake(&mut self, i: usize, msg: ConnectMsg) {
        if !self.failures.is_alive(i) {
            return;
        }
        let remote = QpAddr {
            qpn: msg.qpn,
            psn: msg.psn,
        };
        let r = match (msg.kind, self.peers[i].link) {
            (Kind::Down { rank }, _) => {
                self.on_down(rank);
                Ok(())
            }
            (Kind::Request, Link::Idle) => self.new_rc_qp(i, 1).and_then(|psn| {
                let deadline = self.connecting.deadline();
                self.connecting.start(i);
                self.accept(i, psn, remote, deadline)
            }),
            // Simultaneous connects: the lower rank's request wins; the
            // higher rank answers it with the QP it asked with.
            (Kind::Request, Link::Asking { psn, deadline, .. }) if self.rank > msg.from => {
                let deadline = deadline.unwrap_or_else(|| self.connecting.deadline());
                self.accept(i, psn, remote, deadline)
            }
            (Kind::Request, Link::Accepted { psn, answers, .. }) if answers == msg.qpn => {
                // The reply was lost: send it again.
                self.send_handshake(i, Kind::Reply { answers }, psn);
                Ok(())
            }
            (Kind::Reply { answers }, Link::Asking { psn, .. })
                if self.peers[i]
                    .qp
                    .as_ref()
                    .is_some_and(|q| q.num() == answers) =>
            {
                self.connect_to(i, psn, remote).and_then(|()| self.hello(i))
            }
            // Our own request was overruled, a duplicate, or stale.
            _ => Ok(()),
        };
        if let Err(e) = r {
            self.fail(i, e);
        }
    }

    /// Connects to the requester and replies; sends wait for its hello.
    fn accept(
        &mut self,
        i: usize,
        psn: u32,
        remote: QpAddr,
        deadline: Instant,
    ) -> Result<(), Error> {
        self.connect_to(i, psn, remote)?;
        self.peers[i].link = Link::Accepted {
            psn,
            answers: remote.qpn,
            deadline,
        };
        self.send_handshake(
            i,
            Kind::Reply {
                answers: remote.qpn,
            },
            psn,
        );
        Ok(())
    }

    /// The requester's side is connected: its first packet (a credit
    /// message returning nothing) tells the peer so; then the peer is up.
    fn hello(&mut self, i: usize) -> Result<(), Error> {
        let p = &mut self.peers[i];
        let Some(q) = p.qp.as_mut() else {
            return Err(Error::Internal("verbs: hello without a QP"));
        };
        let covers = crate::signal::covers(&mut p.unsig);
        q.post_empty(CREDIT_TAG | covers, SendOp::SendImm(Imm::credit(0)))?;
        p.sq_free -= 1;
        self.up(i);
        Ok(())
    }

    /// Peer `i` is connected both ways.
    pub(crate) fn up(&mut self, i: usize) {
        let p = &mut self.peers[i];
        p.link = Link::Up;
        p.up = true;
        self.connecting.end(i);
        tracing::debug!(rank = self.rank, peer = p.rank, "verbs: connected");
    }

    /// Retransmits requests that are due and fails peers whose handshake
    /// ran past its deadline.
    pub(crate) fn handshake_timers(&mut self) {
        let now = Instant::now();
        let mut k = 0;
        while k < self.connecting.pending.len() {
            let i = self.connecting.pending[k] as usize;
            k += 1;
            let link = self.peers[i].link;
            let expired = match link {
                Link::Asking { deadline, .. } => deadline.is_some_and(|d| now >= d),
                Link::Accepted { deadline, .. } => now >= deadline,
                Link::Idle | Link::Up => false,
            };
            if expired || !self.failures.is_alive(i) {
                if expired {
                    tracing::warn!(peer = self.peers[i].rank, "verbs: connection timed out");
                    let rank = self.peers[i].rank;
                    self.fail(i, PeerError::Died { rank }.into());
                }
                self.peers[i].link = Link::Idle;
                k -= 1;
                self.connecting.pending.swap_remove(k);
                continue;
            }
            if let Link::Asking {
                psn,
                tries,
                next,
                deadline,
            } = link
            {
                if now >= next {
                    self.peers[i].link = Link::Asking {
                        psn,
                        tries: tries + 1,
                        next: now + rto(tries + 1),
                        deadline,
                    };
                    self.send_handshake(i, Kind::Request, psn);
                }
            }
        }
    }

    /// The earliest handshake timer (for the sleeper's wake-up).
    pub(crate) fn next_handshake_timer(&self) -> Option<Instant> {
        self.connecting
            .pending
            .iter()
            .filter_map(|&i| self.peers[i as usize].link.next_timer())
            .min()
    }
}
