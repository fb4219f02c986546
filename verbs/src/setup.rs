//! [`VerbsDevice::new`]: opening the device, sizing the pools, creating the
//! UD endpoint and exchanging its address (the protocol is documented in
//! `qp.rs`). No RC QP is made here: peers are connected on first use
//! (`connect.rs`).

use ferry_core::device::{Caps, PeerFailures};
use ferry_core::wire::MAX_HEADER;
use ferry_core::{Bootstrap, Rank};
use ferry_verbs_wire::connect::UdAddr;

use crate::connect::{Connecting, Link};
use crate::context;
use crate::cq::Completions;
use crate::credits::{Credits, RESERVE};
use crate::device::VerbsDevice;
use crate::error::VerbsError;
use crate::ffi::{sys, Cq, Pd, Qp, Srq};
use crate::handshake::{Endpoint, UD_CQE};
use crate::limits::Limits;
use crate::liveness::Liveness;
use crate::observe::Observer;
use crate::options::VerbsOptions;
use crate::peers::{Peer, PeerIndex};
use crate::qp;
use crate::rdma::Ops;
use crate::sends::SendPool;
use crate::srq::RecvPool;

/// Inline sizes asked for, largest first (providers refuse what they cannot
/// do; ConnectX grants a few hundred bytes, rxe more).
const INLINE_ASK: [u32; 4] = [256, 128, 64, 0];

/// Extra send-queue slots per QP beyond the eager credits: RDMA operations,
/// credit messages, the hello and keepalive probes.
const SQ_EXTRA: u32 = 64;

/// Connections the first CQ has room for (it grows with `ibv_resize_cq`).
const CQ_FIRST_PEERS: u32 = 2;

/// An RC QP on the shared CQ and SRQ with `inline` bytes of inline data
/// (the size the device found at setup, [`probe_inline`]).
pub(crate) fn create_rc_qp(
    pd: &Pd,
    cq: &Cq,
    srq: &Srq,
    sq_depth: u32,
    inline: u32,
) -> Result<Qp, VerbsError> {
    let cap = sys::ibv_qp_cap {
        max_send_wr: sq_depth,
        max_recv_wr: 0,
        max_send_sge: 2,
        max_recv_sge: 1,
        max_inline_data: inline,
    };
    Ok(Qp::new(pd, cq, srq, cap)?.0)
}

/// The largest inline size an RC QP is granted here: one QP is made and
/// destroyed at setup, so every lazily made QP asks for the same size.
fn probe_inline(pd: &Pd, cq: &Cq, srq: &Srq, sq_depth: u32) -> Result<u32, VerbsError> {
    let mut last = None;
    for inline in INLINE_ASK {
        let cap = sys::ibv_qp_cap {
            max_send_wr: sq_depth,
            max_recv_wr: 0,
            max_send_sge: 2,
            max_recv_sge: 1,
            max_inline_data: inline,
        };
        match Qp::new(pd, cq, srq, cap) {
            // Providers grant at least what was asked: later QPs ask for
            // exactly this.
            Ok(_) => return Ok(inline),
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or(VerbsError::Unsupported("ibv_create_qp"), Into::into))
}

fn check_peers(peers: &[Rank], size: u32) -> Result<(), VerbsError> {
    if peers.is_empty() {
        return Err(VerbsError::BadPeers("no peers"));
    }
    if peers.windows(2).any(|w| w[0] >= w[1]) {
        return Err(VerbsError::BadPeers("not sorted and unique"));
    }
    if peers.iter().any(|&r| r < 0 || r as u32 >= size) {
        return Err(VerbsError::BadPeers("a rank outside the job"));
    }
    Ok(())
}

impl VerbsDevice {
    /// Opens the device and makes the UD endpoint through which peers are
    /// connected on first use.
    ///
    /// Collective over every rank of the job that has at least one peer on
    /// this device (one bootstrap put, one barrier, one get per peer; see
    /// `qp.rs`). `peers` is the sorted list of job ranks to reach; it
    /// contains this rank when self-traffic should go through the device
    /// too (a loopback QP pair, made at first use).
    ///
    /// # Errors
    /// [`VerbsError::NoDevice`] without a usable port, [`VerbsError::Os`]
    /// when a verb fails (e.g. `ENOMEM` from `ibv_reg_mr` under a small
    /// `ulimit -l`), [`VerbsError::Bootstrap`] / [`VerbsError::BadPeerAddress`]
    /// during the exchange, [`VerbsError::BadPeers`] for a bad list.
    pub fn new(
        boot: &mut dyn Bootstrap,
        peers: &[Rank],
        opts: VerbsOptions,
    ) -> Result<VerbsDevice, VerbsError> {
        let rank = boot.rank();
        let size = boot.size();
        check_peers(peers, size)?;
        let sel = context::select(&opts)?;
        let pd = Pd::new(&sel.ctx)?;

        // Pool sizes (credits.rs and srq.rs explain them).
        let n = peers.len() as u32;
        let eager = opts.eager_size.max(MAX_HEADER + 64);
        let max_srq = u32::try_from(sel.dev_attr.max_srq_wr).unwrap_or(0);
        let mut credits = opts.credits.max(2);
        if credits + RESERVE > max_srq {
            credits = max_srq.saturating_sub(RESERVE);
            if credits < 2 {
                return Err(VerbsError::NoDevice(format!(
                    "{}: SRQ of {max_srq} entries is too small",
                    sel.name
                )));
            }
            tracing::warn!(credits, "verbs: eager credits reduced to fit the SRQ");
        }
        let per_peer = credits + RESERVE;
        // The SRQ's ring holds every peer's chunk, up to the device's
        // limit; buffers are registered and posted per connection.
        let srq_cap = n.saturating_mul(per_peer).min(max_srq);
        let max_connected = srq_cap / per_peer;
        let max_qp_wr = u32::try_from(sel.dev_attr.max_qp_wr).unwrap_or(1).max(1);
        let sq_depth = (per_peer + SQ_EXTRA).min(max_qp_wr);
        let max_cqe = u32::try_from(sel.dev_attr.max_cqe).unwrap_or(1).max(1);
        let first = CQ_FIRST_PEERS.min(n) + 1;
        let cqe = UD_CQE
            .saturating_add(first.saturating_mul(sq_depth + per_peer))
            .min(max_cqe);
        let cq = Completions::new(&sel.ctx, cqe as i32)?;
        let keepalive = (opts.keepalive_ms > 0)
            .then(|| std::time::Duration::from_millis(u64::from(opts.keepalive_ms)));
        let live = Liveness::new(cq.channel_fd(), sel.ctx.async_fd()?, keepalive)?;
        let recv = RecvPool::new(&pd, srq_cap, per_peer, eager)?;
        let send = SendPool::new(&pd, eager, opts.send_bufs)?;
        let max_inline = probe_inline(&pd, cq.cq(), recv.srq(), sq_depth)?;

        // The UD endpoint: publish its address, barrier, read the peers'.
        let mut ud = Endpoint::new(&pd, cq.cq(), &sel, rank, peers.len())?;
        boot.put(&qp::port_key(rank), &ud.me().encode())?;
        boot.barrier()?;
        let mut table = Vec::with_capacity(peers.len());
        for &p in peers {
            let addr = if p == rank {
                *ud.me()
            } else {
                let s = boot.get(&qp::port_key(p))?;
                UdAddr::decode(&s).map_err(|e| VerbsError::BadPeerAddress {
                    rank: p,
                    what: format!("{e} in {s:?}"),
                })?
            };
            table.push(addr);
        }
        ud.set_table(table);

        let index = PeerIndex::new(size as usize, peers);
        let list: Vec<Peer> = peers
            .iter()
            .map(|&p| Peer {
                rank: p,
                qp: None,
                loop_rx: None,
                up: false,
                probing: false,
                credits: Credits::new(credits),
                sq_free: 0,
                unsig: 0,
                link: Link::Idle,
            })
            .collect();
        let max_inline = (max_inline as usize).min(eager);
        let caps = Caps {
            name: "verbs",
            max_payload: eager - MAX_HEADER,
            eager_preferred: 8192,
            rdma_get: true,
            rdma_put: true,
            wait_fd: true,
        };
        tracing::debug!(
            rank,
            device = %sel.name,
            port = sel.port,
            peers = list.len(),
            credits,
            max_connected,
            sq_depth,
            max_inline,
            "verbs device ready (connections are made on first use)"
        );
        let registry = crate::mr::Registry::new(opts.rcache);
        let limits = Limits::new(
            max_inline,
            sel.port_attr.max_msg_sz as usize,
            sq_depth,
            opts.signal_every,
            per_peer,
            max_connected,
            max_cqe,
        );
        let connect_timeout = std::time::Duration::from_millis(u64::from(opts.connect_ms));
        // The observer ring (`observe.rs`) starts at the first `progress`.
        let observer = Observer::new(opts.keepalive_ms > 0, list.iter().any(|p| p.rank != rank));
        Ok(VerbsDevice {
            failures: PeerFailures::new(list.len()),
            peers: list,
            ud,
            registry,
            send,
            recv,
            live,
            cq,
            pd,
            sel,
            opts,
            rank,
            caps,
            limits,
            index,
            credits_due: false,
            connecting: Connecting::new(connect_timeout),
            observer,
            ops: Ops::default(),
            doorbell: crate::doorbell::Doorbell::new(max_inline),
        })
    }
}
