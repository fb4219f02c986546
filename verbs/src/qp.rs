//! Connection setup: RC queue pairs, one per peer, wired at init through the
//! bootstrap key-value store.
//!
//! # Protocol (collective over the ranks that use the device)
//! 1. Each rank creates one RC QP per peer (two for itself: a loopback pair,
//!    see below), all sharing one CQ and one SRQ, and moves them to INIT.
//! 2. It publishes `ferry-verbs-port-<rank>` = `v1,<lid>,<gid>,<mtu>` (its
//!    port address: LID for IB, GID for RoCE) and, per peer,
//!    `ferry-verbs-qp-<rank>-<peer>` = `<qpn>,<psn>`. Barrier.
//! 3. It reads each peer's port key and the peer's QP key for this rank,
//!    moves each QP to RTR (path MTU = the smaller of the two active MTUs)
//!    and RTS. Barrier again, so that no rank sends before every QP that
//!    could receive it is in RTR (a packet for a QP still in INIT would be
//!    dropped and cost a retransmission timeout).
//!
//! Connecting at init costs `peers` QPs per rank up front and one KVS put
//! per peer (fine for the node counts Soft-RoCE CI and small clusters see;
//! a large job would connect lazily on first send, or use DC/UD, which is
//! future work). Every value is validated on read: a malformed address is a
//! typed [`VerbsError::BadPeerAddress`].
//!
//! # Self traffic
//! A rank reaches itself through a loopback pair: QP `A` (used for sending)
//! connected to QP `B` (only receives, through the SRQ) on the same port.
//! So self-sends, self-gets and self-puts take exactly the path remote ones
//! do, with the same ordering and flow control.
//!
//! # Timeouts
//! `timeout` and `retry_cnt` come from [`VerbsOptions`]: a dead peer fails
//! the QP with `IBV_WC_RETRY_EXC_ERR` after about `4.096 µs × 2^timeout ×
//! (retry + 1)` (≈ 2 s by default). `rnr_retry` is finite (6) although the
//! credit scheme makes RNR impossible (`credits.rs`): if that reasoning
//! were ever wrong, the result is an error, never a hang.

use ferry_core::Rank;

pub(crate) use ferry_verbs_wire::addr::{AddrError, PortAddr, QpAddr};

use crate::context::Selected;
use crate::error::VerbsError;
use crate::ffi::{sys, Qp};
use crate::options::VerbsOptions;

pub(crate) fn port_key(rank: Rank) -> String {
    format!("ferry-verbs-port-{rank}")
}

pub(crate) fn qp_key(from: Rank, to: Rank) -> String {
    format!("ferry-verbs-qp-{from}-{to}")
}

/// Decodes `rank`'s published port address.
///
/// # Errors
/// [`VerbsError::BadPeerAddress`] naming what is wrong.
pub(crate) fn port_addr(rank: Rank, s: &str) -> Result<PortAddr, VerbsError> {
    PortAddr::decode(s).map_err(|e| bad_address(rank, e, s))
}

/// Decodes `rank`'s published address of its QP for this rank.
///
/// # Errors
/// [`VerbsError::BadPeerAddress`] naming what is wrong.
pub(crate) fn qp_addr(rank: Rank, s: &str) -> Result<QpAddr, VerbsError> {
    QpAddr::decode(s).map_err(|e| bad_address(rank, e, s))
}

fn bad_address(rank: Rank, e: AddrError, s: &str) -> VerbsError {
    VerbsError::BadPeerAddress {
        rank,
        what: format!("{e} in {s:?}"),
    }
}

/// A starting PSN: 24 bits, different per QP so that a stale packet of an
/// earlier job on a reused QPN is unlikely to be accepted.
pub(crate) fn initial_psn(rank: Rank, qpn: u32) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (nanos ^ qpn.wrapping_mul(0x9e37_79b9) ^ (rank as u32).wrapping_mul(7919)) & 0xff_ffff
}

fn mask(flags: &[sys::ibv_qp_attr_mask]) -> u32 {
    flags.iter().fold(0, |m, f| m | f.0)
}

fn zeroed_attr() -> sys::ibv_qp_attr {
    crate::ffi::zeroed_qp_attr()
}

/// RESET → INIT: the QP may be the target of remote reads and writes (the
/// memory regions decide what is actually allowed).
pub(crate) fn to_init(qp: &mut Qp, port: u8) -> Result<(), VerbsError> {
    use sys::ibv_qp_attr_mask as M;
    let mut a = zeroed_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port;
    a.qp_access_flags = sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
        | sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
    qp.modify(
        &mut a,
        mask(&[
            M::IBV_QP_STATE,
            M::IBV_QP_PKEY_INDEX,
            M::IBV_QP_PORT,
            M::IBV_QP_ACCESS_FLAGS,
        ]),
    )?;
    Ok(())
}

/// INIT → RTR → RTS towards `remote`.
pub(crate) fn connect(
    qp: &mut Qp,
    sel: &Selected,
    local_psn: u32,
    remote_port: &PortAddr,
    remote: QpAddr,
    opts: &VerbsOptions,
) -> Result<(), VerbsError> {
    use sys::ibv_qp_attr_mask as M;
    let rd_atom = sel.dev_attr.max_qp_rd_atom.clamp(1, 16) as u8;
    let mut a = zeroed_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
    a.path_mtu = sel.port_attr.active_mtu.min(remote_port.mtu);
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = rd_atom;
    a.min_rnr_timer = 12; // 0.64 ms
    a.ah_attr.port_num = sel.port;
    a.ah_attr.dlid = remote_port.lid;
    a.ah_attr.sl = 0;
    if let Some(g) = sel.gid_index {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = sys::ibv_gid {
            raw: remote_port.gid,
        };
        a.ah_attr.grh.sgid_index = g;
        a.ah_attr.grh.hop_limit = 64;
    }
    qp.modify(
        &mut a,
        mask(&[
            M::IBV_QP_STATE,
            M::IBV_QP_AV,
            M::IBV_QP_PATH_MTU,
            M::IBV_QP_DEST_QPN,
            M::IBV_QP_RQ_PSN,
            M::IBV_QP_MAX_DEST_RD_ATOMIC,
            M::IBV_QP_MIN_RNR_TIMER,
        ]),
    )?;
    let mut a = zeroed_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
    a.timeout = opts.timeout;
    a.retry_cnt = opts.retry;
    a.rnr_retry = 6;
    a.sq_psn = local_psn;
    a.max_rd_atomic = rd_atom;
    qp.modify(
        &mut a,
        mask(&[
            M::IBV_QP_STATE,
            M::IBV_QP_TIMEOUT,
            M::IBV_QP_RETRY_CNT,
            M::IBV_QP_RNR_RETRY,
            M::IBV_QP_SQ_PSN,
            M::IBV_QP_MAX_QP_RD_ATOMIC,
        ]),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_psns_are_24_bit() {
        assert!(initial_psn(3, 17) < 1 << 24);
    }
}
