//! The UD endpoint of the lazy-connection handshake (the protocol is in
//! `qp.rs`): one small UD QP per rank, its receive and send slots, the
//! address table of every peer (read from the bootstrap KVS at setup) and
//! the address handles of the peers this rank has written to.
//!
//! Datagrams are [`ConnectMsg`]s (`ferry_verbs_wire::connect`). Everything
//! that arrives is validated: the decoder checks the fields, [`Endpoint`]
//! checks the sender (a peer of this device, sending from its published UD
//! QPN, with its nonce) and that the datagram is addressed to this rank and
//! this device instance; anything else is dropped and counted.

use ferry_core::Rank;
use ferry_verbs_wire::connect::{ConnectMsg, UdAddr};

use crate::context::Selected;
use crate::cq::Completion;
use crate::error::VerbsError;
use crate::ffi::slab::Slab;
use crate::ffi::{sys, Ah, Cq, FfiError, Pd, Qp};

/// Work-request id tags of the UD QP (top byte; low bits: the slot).
pub(crate) const UD_RECV_TAG: u64 = 7 << 56;
pub(crate) const UD_SEND_TAG: u64 = 8 << 56;

/// The Q_Key of every handshake datagram (not a controlled key).
pub(crate) const QKEY: u32 = 0x4652_5259;

/// Receive slots of the UD QP (each datagram takes one until reposted in
/// the same `progress`); more arriving at once are dropped by the HCA and
/// retransmitted by their sender.
pub(crate) const UD_RECVS: u32 = 32;
/// Send slots: datagrams in flight at once (more wait for the next
/// retransmission).
pub(crate) const UD_SENDS: u32 = 16;
/// A UD receive starts with room for the 40-byte GRH.
const GRH: usize = 40;
const RECV_SLOT: usize = 128;
const SEND_SLOT: usize = 64;

/// CQ entries the endpoint can fill.
pub(crate) const UD_CQE: u32 = UD_RECVS + UD_SENDS;

/// The UD QP and what it needs.
#[derive(Debug)]
pub(crate) struct Endpoint {
    // Field order is drop order: the QP, then the address handles and the
    // slabs (all before the PD and CQ, which the device drops later).
    qp: Qp,
    ahs: Vec<Option<Ah>>,
    recv: Slab,
    send: Slab,
    send_free: Vec<u32>,
    /// This rank's published address (its nonce identifies the instance).
    me: UdAddr,
    /// Every peer's published address, by peer index.
    table: Vec<UdAddr>,
    /// Datagrams dropped as malformed, stale or misaddressed.
    dropped: u64,
}

/// A nonce for this device instance.
fn nonce(rank: Rank, qpn: u32) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let x = t ^ u64::from(std::process::id()).rotate_left(32) ^ u64::from(qpn) << 8;
    let x = x ^ (rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((x >> 32) as u32 ^ x as u32).max(1)
}

fn modify(
    qp: &mut Qp,
    a: &mut sys::ibv_qp_attr,
    flags: &[sys::ibv_qp_attr_mask],
) -> Result<(), FfiError> {
    qp.modify(a, flags.iter().fold(0, |m, f| m | f.0))
}

impl Endpoint {
    /// Creates the UD QP (RESET → INIT → RTR → RTS) and posts its receives.
    pub(crate) fn new(
        pd: &Pd,
        cq: &Cq,
        sel: &Selected,
        rank: Rank,
        peers: usize,
    ) -> Result<Endpoint, VerbsError> {
        use sys::ibv_qp_attr_mask as M;
        let cap = sys::ibv_qp_cap {
            max_send_wr: UD_SENDS,
            max_recv_wr: UD_RECVS,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let (mut qp, _) = Qp::create(pd, cq, None, cap, sys::ibv_qp_type::IBV_QPT_UD)?;
        let mut a = crate::ffi::zeroed_qp_attr();
        a.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = sel.port;
        a.qkey = QKEY;
        modify(
            &mut qp,
            &mut a,
            &[
                M::IBV_QP_STATE,
                M::IBV_QP_PKEY_INDEX,
                M::IBV_QP_PORT,
                M::IBV_QP_QKEY,
            ],
        )?;
        let mut a = crate::ffi::zeroed_qp_attr();
        a.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
        modify(&mut qp, &mut a, &[M::IBV_QP_STATE])?;
        let mut a = crate::ffi::zeroed_qp_attr();
        a.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
        a.sq_psn = 0;
        modify(&mut qp, &mut a, &[M::IBV_QP_STATE, M::IBV_QP_SQ_PSN])?;
        let local_write = sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        let recv = Slab::new(pd, RECV_SLOT, UD_RECVS, local_write)?;
        let send = Slab::new(pd, SEND_SLOT, UD_SENDS, 0)?;
        let me = UdAddr {
            port: crate::qp::PortAddr {
                lid: sel.port_attr.lid,
                gid: sel.gid,
                mtu: sel.port_attr.active_mtu,
            },
            qpn: qp.num(),
            qkey: QKEY,
            nonce: nonce(rank, qp.num()),
        };
        let mut ep = Endpoint {
            qp,
            ahs: (0..peers).map(|_| None).collect(),
            recv,
            send,
            send_free: (0..UD_SENDS).rev().collect(),
            me,
            table: Vec::new(),
            dropped: 0,
        };
        for i in 0..UD_RECVS {
            ep.repost(i)?;
        }
        Ok(ep)
    }

    /// This rank's published address.
    pub(crate) fn me(&self) -> &UdAddr {
        &self.me
    }

    /// Datagrams dropped as malformed, stale or misaddressed.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The peers' addresses, by peer index (read at setup).
    pub(crate) fn set_table(&mut self, table: Vec<UdAddr>) {
        self.table = table;
    }

    /// Peer `i`'s address.
    pub(crate) fn addr(&self, i: usize) -> Option<&UdAddr> {
        self.table.get(i)
    }

    /// Address handles made so far (one per peer written to).
    pub(crate) fn ah_count(&self) -> usize {
        self.ahs.iter().filter(|a| a.is_some()).count()
    }

    /// Registered bytes of the endpoint.
    pub(crate) fn registered_bytes(&self) -> usize {
        RECV_SLOT * UD_RECVS as usize + SEND_SLOT * UD_SENDS as usize
    }

    fn repost(&mut self, i: u32) -> Result<(), FfiError> {
        // Slot `i` is the endpoint's (its datagram was handled, or it was
        // never posted).
        self.qp
            .post_recv_slot(UD_RECV_TAG | u64::from(i), &self.recv, i)
    }

    /// Sends `msg` to peer `i`; `Ok(false)` if no send slot is free (the
    /// datagram is dropped: the handshake's retransmission covers it, as
    /// for a datagram lost on the wire).
    pub(crate) fn send(
        &mut self,
        pd: &Pd,
        sel: &Selected,
        i: usize,
        msg: &ConnectMsg,
    ) -> Result<bool, FfiError> {
        self.send_bytes(pd, sel, i, &msg.encode())
    }

    /// Sends `bytes` (at most a send slot) as one datagram to peer `i`.
    pub(crate) fn send_bytes(
        &mut self,
        pd: &Pd,
        sel: &Selected,
        i: usize,
        bytes: &[u8],
    ) -> Result<bool, FfiError> {
        let Some(addr) = self.table.get(i).copied() else {
            return Err(FfiError::Missing("a handshake towards an unknown peer"));
        };
        if self.ahs.get(i).is_some_and(Option::is_none) {
            let mut attr = ah_attr(sel, &addr);
            self.ahs[i] = Some(Ah::new(pd, &mut attr)?);
        }
        let Some(Some(ah)) = self.ahs.get(i) else {
            return Err(FfiError::Missing("a handshake towards an unknown peer"));
        };
        let Some(slot) = self.send_free.pop() else {
            return Ok(false);
        };
        let Some(len) = self.send.write(slot, bytes, &[]) else {
            self.send_free.push(slot);
            return Err(FfiError::Missing("a datagram longer than its slot"));
        };
        // The slot was free (popped from the free list) and is not touched
        // again until its send completes.
        let r = self.qp.post_ud_slot(
            UD_SEND_TAG | u64::from(slot),
            &self.send,
            slot,
            len,
            ah,
            addr.qpn,
            addr.qkey,
        );
        if r.is_err() {
            self.send_free.push(slot);
        }
        r.map(|()| true)
    }

    /// A completion of the UD QP: a send slot comes back, or a datagram
    /// arrived. Returns the datagram and its sender's peer index if it is
    /// valid, reposting the slot either way.
    pub(crate) fn complete(
        &mut self,
        c: &Completion,
        rank: Rank,
        index_of: &[u32],
    ) -> Result<Option<(usize, ConnectMsg)>, FfiError> {
        let slot = (c.wr_id & 0xffff_ffff) as u32;
        if c.wr_id & (0xff << 56) == UD_SEND_TAG {
            if slot < UD_SENDS && !self.send_free.contains(&slot) {
                self.send_free.push(slot);
            }
            return Ok(None);
        }
        if slot >= UD_RECVS {
            return Ok(None);
        }
        let ok = c.status == sys::ibv_wc_status::IBV_WC_SUCCESS;
        let got = if ok {
            self.validate(c, slot, rank, index_of)
        } else {
            None
        };
        if got.is_none() && ok {
            self.dropped += 1;
        }
        self.repost(slot)?;
        Ok(got)
    }

    fn validate(
        &self,
        c: &Completion,
        slot: u32,
        rank: Rank,
        index_of: &[u32],
    ) -> Option<(usize, ConnectMsg)> {
        let len = (c.byte_len as usize).checked_sub(GRH)?;
        if len > RECV_SLOT - GRH {
            return None;
        }
        let msg = match ConnectMsg::decode(self.recv.bytes(slot, GRH, len)) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e, "verbs: malformed handshake datagram dropped");
                return None;
            }
        };
        let i = *index_of.get(usize::try_from(msg.from).ok()?)?;
        let peer = self.table.get(i as usize)?;
        let valid = msg.to == rank
            && msg.to_nonce == self.me.nonce
            && msg.from_nonce == peer.nonce
            && c.src_qp == peer.qpn;
        if !valid {
            tracing::debug!(
                from = msg.from,
                "verbs: stale or misaddressed handshake dropped"
            );
            return None;
        }
        Some((i as usize, msg))
    }
}

/// The address vector towards a peer's port.
pub(crate) fn ah_attr(sel: &Selected, to: &UdAddr) -> sys::ibv_ah_attr {
    let mut a = crate::ffi::zeroed_qp_attr().ah_attr;
    a.port_num = sel.port;
    a.dlid = to.port.lid;
    a.sl = 0;
    if let Some(g) = sel.gid_index {
        a.is_global = 1;
        a.grh.dgid = sys::ibv_gid { raw: to.port.gid };
        a.grh.sgid_index = g;
        a.grh.hop_limit = 64;
    }
    a
}
