//! Connection setup: one UD QP per rank at init, and RC queue pairs made
//! lazily, one per peer actually used, connected over a UD handshake.
//!
//! # At init (collective over the ranks that use the device)
//! 1. Each rank creates its CQ, an empty SRQ (`srq.rs`), its send slab and
//!    ONE small UD QP (32 receive and 16 send slots of ≤ 128 bytes) and
//!    moves it to RTS. No RC QP exists yet (one is created and destroyed at
//!    once, to learn the inline size every later QP asks for).
//! 2. It publishes `ferry-verbs-port-<rank>` = its UD address,
//!    `v1,<lid>,<gid>,<mtu>;<ud qpn>,<qkey>,<nonce>`
//!    (`ferry_verbs_wire::connect::UdAddr`). One barrier.
//! 3. It reads each peer's key into a table (about 40 bytes per peer;
//!    validated: a malformed one is a typed [`VerbsError::BadPeerAddress`]).
//!
//! # On first use of a peer (send, get, put, or [`VerbsDevice::connect`])
//! The requester `A` creates its RC QP (INIT), grows the receive pool and
//! the CQ by the peer's share (`srq.rs`, below), and sends a **request**
//! `{A, B, nonces, qpn_A, psn_A}` to `B`'s UD QP; the operation returns
//! `Busy` (the engine's outbox keeps it, and everything after it, in order:
//! no queue in the device, no busy loop). `B`, in its `progress`:
//! creates its QP, connects it (RTR, RTS) to `qpn_A` and sends a **reply**
//! `{qpn_B, psn_B, answers: qpn_A}`; `B`'s side is *accepted* but sends
//! nothing yet. `A` connects its QP (RTR, RTS) on the reply and posts a
//! **hello** (a credit message returning nothing: `A`'s first packet on the
//! QP); it is up. `B` is up when the hello (or any packet) arrives from `A`:
//! it proves `A`'s QP left INIT, so nothing `B` sends can reach a QP that
//! would drop it. Sends queued in the engine go out, in order, at the next
//! `progress` after the connection is up.
//!
//! # Simultaneous connects
//! When both ranks ask at once, the **lower rank's request wins**: the
//! lower rank ignores the higher's request; the higher rank, on the lower
//! one's request, connects the QP it asked with to the requester's and
//! replies. So each side ends with exactly one QP, connected to the
//! other's (`tests/lazy.rs` checks it).
//!
//! # Loss, duplicates, stale and hostile datagrams
//! UD is unreliable. The requester retransmits its request after 50 ms,
//! doubling to at most 1 s, until the reply comes or the connect deadline
//! (`FERRY_VERBS_CONNECT_MS`, 10 min) passes: then the peer fails with
//! `PeerError::Died`, reported once through the sink, like a peer whose
//! QP exhausted its retries. An accepted side whose hello does not arrive
//! by the deadline fails the peer the same way. A repeated request to an
//! accepted side is answered again (the reply was lost); everything else
//! that does not fit the state (a duplicate reply, a reply for another
//! QP, a request to a connected peer) is dropped. Every datagram is decoded
//! by `ferry_verbs_wire::connect` (length, magic, kind, ranks, 24-bit QPN
//! and PSN; fuzzed by `fuzz/fuzz_targets/verbs_connect.rs`) and then
//! checked against the peer table: sender a peer of this device, sending
//! from its published UD QPN with its nonce, addressed to this rank and to
//! this device instance's nonce. A datagram failing any check is dropped
//! and counted ([`VerbsDevice::dropped_datagrams`]); it never fails a
//! peer. The timers are checked by `progress` every 2 ms while handshakes
//! are pending, and a sleeper's timer (`liveness.rs`) is set to the
//! earliest of them, so a passive waiter retransmits and times out too; an
//! incoming request wakes a sleeper through the shared CQ's channel.
//!
//! # Resources grow with the peers used
//! Per connected peer: one RC QP (`C + 2 + 64` send-queue entries), one
//! receive chunk of `2 × (C + 2)` eager buffers (`srq.rs`), and
//! `C + 2 + 64 + C + 2` more CQ entries: the CQ starts with room for the
//! UD QP and two connections and is grown with `ibv_resize_cq` (doubling,
//! up to the device's `max_cqe`; a connection it cannot hold fails that
//! peer with a typed `DeviceError::Os`, `ENOSPC`). The SRQ's ring is sized
//! at init for `min(peers × (C + 2), max_srq_wr)` receives (ring entries
//! only: no buffer is registered before a connection needs it); beyond
//! `max_srq_wr / (C + 2)` connections a new one fails with `ENOSPC`.
//! Connections are never torn down while the device lives. Per peer not
//! connected, a rank keeps its address (≈40 B), a `Peer` slot and a
//! failure slot (≈100 B in all).
//!
//! # Self traffic
//! A rank reaches itself through a loopback pair made at first use (no
//! handshake: both ends are local): QP `A` (used for sending) connected to
//! QP `B` (only receives, through the SRQ) on the same port. So
//! self-sends, self-gets and self-puts take exactly the path remote ones
//! do, with the same ordering and flow control.
//!
//! # Liveness of peers never talked to
//! Keepalive probes (`liveness.rs`) run on connections only. So that a
//! rank blocked on a receive from a peer it never exchanged a packet with
//! still learns of that peer's death, each rank observes its successor in
//! rank order and announces a death it detects to every peer over UD (the
//! observer ring, `observe.rs`); the down notice is a third datagram kind.
//!
//! # Timeouts
//! `timeout` and `retry_cnt` come from [`VerbsOptions`]: a dead peer fails
//! the QP with `IBV_WC_RETRY_EXC_ERR` after about `4.096 µs × 2^timeout ×
//! (retry + 1)` (≈ 2 s by default). `rnr_retry` is finite (6) although the
//! credit scheme makes RNR impossible (`credits.rs`): if that reasoning
//! were ever wrong, the result is an error, never a hang.
//!
//! [`VerbsDevice::connect`]: crate::VerbsDevice::connect
//! [`VerbsDevice::dropped_datagrams`]: crate::VerbsDevice::dropped_datagrams
//! [`VerbsError::BadPeerAddress`]: crate::VerbsError::BadPeerAddress

use ferry_core::Rank;

pub(crate) use ferry_verbs_wire::addr::{PortAddr, QpAddr};

use crate::context::Selected;
use crate::error::VerbsError;
use crate::ffi::{sys, Qp};
use crate::options::VerbsOptions;

pub(crate) fn port_key(rank: Rank) -> String {
    format!("ferry-verbs-port-{rank}")
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
