//! The outbox: work for the device that could not, or must not, happen at
//! once.
//!
//! Items land here when the device pushed back ([`Sent::Busy`]), and when a
//! packet handler needs the device (the sink cannot call back into the
//! device during `progress`). [`flush`] runs items in FIFO order and stops
//! at the first `Busy`, so matched packets (eager, RTS) keep their order.
//! While the outbox is non-empty new sends queue behind it instead of
//! overtaking.

use super::{Cold, Op, State};
use crate::device::{Device, Sent};
use crate::envelope::Rank;
use crate::error::{Error, PeerError, Result};
use crate::protocol::Protocol;
use crate::status::Status;
use crate::wire::{Eager, Header, Rts, MAX_HEADER};

/// One deferred piece of work.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Out {
    /// A control packet (CTS, FIN, SyncAck, Credit).
    Ctrl { peer: Rank, header: Header },
    /// The eager packet or RTS of a queued send request.
    Send(u64),
    /// Fragments of a send request.
    Frags(u64),
    /// Issue the `get` of a receive request.
    Get(u64),
    /// Issue the `put` of a send request.
    Put(u64),
    /// Expose a receive buffer and send the CTS for rendezvous-put.
    ExposeCts(u64),
    /// End a registration and complete the request.
    Release(u64),
}

/// Runs queued work until the outbox is empty or the device pushes back.
#[inline]
pub(crate) fn flush<D: Device>(dev: &mut D, st: &mut State) -> Result<()> {
    if st.outbox.is_empty() {
        return Ok(());
    }
    flush_queued(dev, st)
}

/// Several queued items go to the device as one batch (one doorbell where
/// the device batches): they were held back anyway, so holding them until
/// the last is taken costs nothing.
fn flush_queued<D: Device>(dev: &mut D, st: &mut State) -> Result<()> {
    if st.outbox.len() == 1 {
        return run_queued(dev, st);
    }
    dev.batch_begin();
    let ran = run_queued(dev, st);
    let posted = dev.batch_end();
    ran?;
    posted
}

fn run_queued<D: Device>(dev: &mut D, st: &mut State) -> Result<()> {
    while let Some(&item) = st.outbox.front() {
        match exec(dev, st, item)? {
            Sent::Done => {
                st.outbox.pop_front();
            }
            Sent::Busy => {
                st.counters.backpressure += 1;
                break;
            }
        }
    }
    Ok(())
}

fn exec<D: Device>(dev: &mut D, st: &mut State, item: Out) -> Result<Sent> {
    match item {
        Out::Ctrl { peer, header } => send_ctrl(dev, st, peer, &header),
        Out::Send(key) => transmit(dev, st, key),
        Out::Frags(key) => super::rndv::send_fragments(dev, st, key),
        Out::Get(key) => super::rndv::issue_get(dev, st, key),
        Out::Put(key) => super::rndv::issue_put(dev, st, key),
        Out::ExposeCts(key) => super::rndv::expose_for_put(dev, st, key),
        Out::Release(key) => super::rndv::release(dev, st, key),
    }
}

/// Sends a header-only packet. A dead peer swallows it.
fn send_ctrl<D: Device>(dev: &mut D, st: &mut State, peer: Rank, header: &Header) -> Result<Sent> {
    if st.peers[peer as usize].failed.is_some() {
        return Ok(Sent::Done);
    }
    let mut bytes = [0u8; MAX_HEADER];
    let n = header.encode(&mut bytes);
    match dev.send(peer, &bytes[..n], &[]) {
        Ok(sent) => Ok(sent),
        Err(e) => {
            st.fail_peer(peer, e);
            Ok(Sent::Done)
        }
    }
}

/// Sends the matched packet of a queued send: the eager data, or the RTS
/// (registering the buffer first for rendezvous-get).
fn transmit<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::SendQueued(q)) = req.op.cold_mut() else {
        return Ok(Sent::Done);
    };
    let dest = req.spec.peer;
    let proto = q.proto;
    if let Some(err) = st.peers[dest as usize].failed {
        let mem = q.exposed.map(|(m, _)| m);
        st.finish_with(dev, key, mem, err);
        return Ok(Sent::Done);
    }
    if proto == Protocol::RndvGet && q.exposed.is_none() {
        let buf = req.buf.take().unwrap_or_default();
        match dev.register(dest, buf, crate::device::Access::RemoteRead) {
            Ok(exposed) => q.exposed = Some(exposed),
            Err((err, buf)) => {
                req.buf = Some(buf);
                st.complete(
                    key,
                    Status {
                        error: Some(err),
                        ..Status::EMPTY
                    },
                );
                return Ok(Sent::Done);
            }
        }
    }
    let (spec, exposed) = (req.spec, q.exposed);
    let seq = st.peers[dest as usize].send_seq;
    let len = req
        .buf
        .as_ref()
        .map_or_else(|| exposed_len(&req.op), |b| b.len());
    let sync = spec.mode == super::SendMode::Synchronous;
    let header = match proto {
        Protocol::Eager => Header::Eager(Eager {
            context: spec.context,
            tag: spec.tag,
            seq,
            sync: sync.then_some(key),
        }),
        _ => Header::Rts(Rts {
            context: spec.context,
            tag: spec.tag,
            seq,
            len: len as u64,
            sender: key,
            key: exposed.map(|(_, k)| k),
            sync,
            ready: spec.mode == super::SendMode::Ready,
            put: proto == Protocol::RndvPut,
        }),
    };
    let mut bytes = [0u8; MAX_HEADER];
    let n = header.encode(&mut bytes);
    let payload = match (proto, &req.buf) {
        (Protocol::Eager, Some(b)) if !b.is_contiguous() => {
            // Gathered again on each try: the bounce buffer is shared.
            if st.gather.len() < len {
                st.gather.resize(len, 0);
            }
            b.read_at(0, &mut st.gather[..len]);
            &st.gather[..len]
        }
        (Protocol::Eager, Some(b)) => b.as_slice(),
        _ => &[],
    };
    let sent = match dev.send(dest, &bytes[..n], payload) {
        Ok(sent) => sent,
        Err(err) => {
            let mem = exposed.map(|(m, _)| m);
            st.finish_with(dev, key, mem, err);
            return Ok(Sent::Done);
        }
    };
    if sent == Sent::Busy {
        return Ok(Sent::Busy);
    }
    st.peers[dest as usize].send_seq = seq.wrapping_add(1);
    let c = &mut st.counters;
    match proto {
        Protocol::Eager => {
            c.eager_sent += 1;
            c.eager_bytes += len as u64;
        }
        Protocol::RndvGet => c.rndv_get_sent += 1,
        Protocol::RndvPut => c.rndv_put_sent += 1,
        Protocol::Fragmented => c.rndv_frag_sent += 1,
    }
    if proto != Protocol::Eager {
        c.rndv_bytes += len as u64;
    }
    let req = st
        .requests
        .get_mut(key)
        .ok_or(Error::Internal("queued send vanished"))?;
    let next = match (proto, exposed) {
        (Protocol::Eager, _) if sync => {
            st.cold.set_inline(&mut req.op, Op::AwaitAck { dest });
            return Ok(Sent::Done);
        }
        (Protocol::Eager, _) => {
            st.complete(key, Status::EMPTY);
            return Ok(Sent::Done);
        }
        (Protocol::RndvGet, Some((mem, _))) => {
            super::request::RndvSend::AwaitFin(super::request::AwaitFin { dest, mem, len })
        }
        _ => super::request::RndvSend::AwaitCts(super::request::AwaitCts { dest }),
    };
    st.cold.set(&mut req.op, Cold::RndvSend(next));
    Ok(Sent::Done)
}

/// The length of a send whose buffer is registered with the device.
fn exposed_len(op: &Op) -> usize {
    match op.cold() {
        Some(Cold::SendQueued(q)) => q.len,
        _ => 0,
    }
}

impl State {
    /// Completes a send-side request with `err`, first taking its buffer back
    /// from the device if it was registered.
    pub(crate) fn finish_with<D: Device>(
        &mut self,
        dev: &mut D,
        key: u64,
        mem: Option<crate::device::MemHandle>,
        err: Error,
    ) {
        if let Some(mem) = mem {
            let buf = dev.deregister(mem);
            if let Some(req) = self.requests.get_mut(key) {
                req.buf = buf;
            }
        }
        if let Error::Peer(PeerError::Died { rank }) = err {
            self.fail_peer(rank, err);
        }
        let status = Status {
            error: Some(err),
            ..Status::EMPTY
        };
        self.complete(key, status);
    }
}
