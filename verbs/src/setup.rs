//! [`VerbsDevice::new`]: opening the device, sizing the pools, and wiring
//! the queue pairs (the protocol is documented in `qp.rs`).

use std::collections::HashMap;

use ferry_core::device::Caps;
use ferry_core::wire::MAX_HEADER;
use ferry_core::{Bootstrap, Rank};

use crate::context;
use crate::cq::Completions;
use crate::credits::{Credits, RESERVE};
use crate::device::{Peer, SendPool, VerbsDevice, NOT_PEER};
use crate::error::VerbsError;
use crate::ffi::slab::Slab;
use crate::ffi::{sys, Cq, Pd, Qp, Srq};
use crate::liveness::Liveness;
use crate::options::VerbsOptions;
use crate::qp::{self, PortAddr, QpAddr};
use crate::srq::RecvPool;

/// Inline sizes asked for, largest first (providers refuse what they cannot
/// do; ConnectX grants a few hundred bytes, rxe more).
const INLINE_ASK: [u32; 4] = [256, 128, 64, 0];

/// Extra send-queue slots per QP beyond the eager credits: RDMA operations
/// and credit messages.
const SQ_EXTRA: u32 = 64;

fn create_qp(pd: &Pd, cq: &Cq, srq: &Srq, sq_depth: u32) -> Result<(Qp, u32), VerbsError> {
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
            Ok((qp, granted)) => return Ok((qp, granted.max_inline_data)),
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
    /// Opens the device and connects an RC queue pair to every peer.
    ///
    /// Collective over every rank of the job that has at least one peer on
    /// this device (two bootstrap barriers; see `qp.rs` for the exchange).
    /// `peers` is the sorted list of job ranks to reach; it contains this
    /// rank when self-traffic should go through the device too (a loopback
    /// QP pair).
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

        // Pool sizes (credits.rs explains the SRQ depth).
        let n = peers.len() as u32;
        let eager = opts.eager_size.max(MAX_HEADER + 64);
        let max_srq = u32::try_from(sel.dev_attr.max_srq_wr).unwrap_or(0);
        let mut credits = opts.credits.max(2);
        if n.saturating_mul(credits + RESERVE) > max_srq {
            credits = (max_srq / n).saturating_sub(RESERVE);
            if credits < 2 {
                return Err(VerbsError::NoDevice(format!(
                    "{}: SRQ of {max_srq} entries is too small for {n} peers",
                    sel.name
                )));
            }
            tracing::warn!(credits, "verbs: eager credits reduced to fit the SRQ");
        }
        let depth = n * (credits + RESERVE);
        let max_qp_wr = u32::try_from(sel.dev_attr.max_qp_wr).unwrap_or(1).max(1);
        let sq_depth = (credits + RESERVE + SQ_EXTRA).min(max_qp_wr);
        let me_too = peers.binary_search(&rank).is_ok();
        let qps = n + u32::from(me_too);
        let max_cqe = u32::try_from(sel.dev_attr.max_cqe).unwrap_or(1).max(1);
        let cqe = depth
            .saturating_add(qps.saturating_mul(sq_depth))
            .min(max_cqe);
        let cq = Completions::new(&sel.ctx, cqe as i32)?;
        let keepalive = (opts.keepalive_ms > 0)
            .then(|| std::time::Duration::from_millis(u64::from(opts.keepalive_ms)));
        let live = Liveness::new(cq.channel_fd(), sel.ctx.async_fd()?, keepalive)?;
        let recv = RecvPool::new(&pd, depth, eager)?;
        let send = SendPool {
            slab: Slab::new(&pd, eager, opts.send_bufs, 0)?,
            free: (0..opts.send_bufs).rev().collect(),
        };

        // 1. QPs in INIT.
        let mut max_inline = u32::MAX;
        let mut made = Vec::with_capacity(peers.len());
        for &p in peers {
            let (mut q, inline) = create_qp(&pd, &cq.cq, &recv.srq, sq_depth)?;
            qp::to_init(&mut q, sel.port)?;
            max_inline = max_inline.min(inline);
            let loop_rx = if p == rank {
                let (mut b, _) = create_qp(&pd, &cq.cq, &recv.srq, sq_depth)?;
                qp::to_init(&mut b, sel.port)?;
                Some(b)
            } else {
                None
            };
            let psn = qp::initial_psn(rank, q.num());
            made.push((p, q, psn, loop_rx));
        }

        // 2. Publish, barrier.
        let me = PortAddr {
            lid: sel.port_attr.lid,
            gid: sel.gid,
            mtu: sel.port_attr.active_mtu,
        };
        boot.put(&qp::port_key(rank), &me.encode())?;
        for (p, q, psn, _) in &made {
            if *p != rank {
                let addr = QpAddr {
                    qpn: q.num(),
                    psn: *psn,
                };
                boot.put(&qp::qp_key(rank, *p), &addr.encode())?;
            }
        }
        boot.barrier()?;

        // 3. Connect, barrier.
        for (p, q, psn, loop_rx) in &mut made {
            match loop_rx {
                Some(b) => {
                    let b_psn = qp::initial_psn(rank, b.num());
                    let a_addr = QpAddr {
                        qpn: q.num(),
                        psn: *psn,
                    };
                    let b_addr = QpAddr {
                        qpn: b.num(),
                        psn: b_psn,
                    };
                    qp::connect(q, &sel, *psn, &me, b_addr, &opts)?;
                    qp::connect(b, &sel, b_psn, &me, a_addr, &opts)?;
                }
                None => {
                    let port = qp::port_addr(*p, &boot.get(&qp::port_key(*p))?)?;
                    let remote = qp::qp_addr(*p, &boot.get(&qp::qp_key(*p, rank))?)?;
                    qp::connect(q, &sel, *psn, &port, remote, &opts)?;
                }
            }
        }
        boot.barrier()?;

        let mut index_of = vec![NOT_PEER; size as usize];
        let mut qpn_peer = HashMap::new();
        let mut list = Vec::with_capacity(made.len());
        for (i, (p, q, _, loop_rx)) in made.into_iter().enumerate() {
            index_of[p as usize] = i as u32;
            qpn_peer.insert(q.num(), i as u32);
            if let Some(b) = &loop_rx {
                qpn_peer.insert(b.num(), i as u32);
            }
            list.push(Peer {
                rank: p,
                qp: q,
                loop_rx,
                probing: false,
                credits: Credits::new(credits),
                sq_free: sq_depth,
            });
        }
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
            depth,
            sq_depth,
            max_inline,
            "verbs device ready"
        );
        let registry = crate::mr::Registry::new(opts.rcache);
        Ok(VerbsDevice::assemble(
            list, registry, send, recv, live, cq, pd, sel, rank, index_of, qpn_peer, caps,
            max_inline,
        ))
    }
}
