//! Rendezvous: the three large-message protocols, both sides.
//!
//! ```text
//! get:        S --RTS(key)--> R   R gets   R --FIN--> S
//! put:        S --RTS(put)--> R   R --CTS(key)--> S   S puts   S --FIN--> R
//! fragmented: S --RTS------> R   R --CTS(len)--> S   S --FRAG*--> R
//! ```
//! The receiver decides how much lands (`min(message, capacity)`, so a
//! truncated receive never writes past its buffer) and tells the sender
//! through the CTS length, or reads only that much. A receiver whose buffer
//! is segmented (`Buf::segmented`: scattered bytes, never registered)
//! answers a get's RTS with a CTS for fragments instead, and the sender
//! ends its registration and sends them; a segmented send buffer is only
//! ever sent by fragments, each gathered as it goes out. Either side that fails
//! sends `FIN(failed)`, so the other completes with an error instead of
//! hanging. Registered buffers belong to the device until [`release`]
//! takes them back.

use super::request::{
    AwaitFrags, AwaitPutFin, Fragmenting, Getting, Kind, Matched, Putting, Releasing, RndvRecv,
    RndvSend,
};
use super::{Cold, Out, State};
use crate::buffer::Buf;
use crate::device::{Access, Device, OpToken, Sent};
use crate::envelope::Rank;
use crate::error::{Error, PeerError, Result, UsageError};
use crate::status::Status;
use crate::wire::{Cts, Frag, Header, Rts, MAX_HEADER};

impl State {
    /// A receive (or ARecv) matched an RTS: choose how the data will move.
    pub(crate) fn start_rndv_recv(&mut self, key: u64, from: Rank, rts: Rts) {
        let max = self.config.max_message;
        let Some(req) = self.requests.get_mut(key) else {
            return;
        };
        let msg_len = match usize::try_from(rts.len) {
            Ok(n) if n <= max => n,
            _ => return self.protocol_error(from, "RTS length exceeds the message limit"),
        };
        let mut error = None;
        if req.kind == Kind::ARecv {
            // The one allocation an ARecv rendezvous makes: exactly msg_len,
            // within the bound a peer's header may make us allocate.
            let cap = self.config.max_arecv;
            if msg_len > cap {
                error = Some(
                    UsageError::MessageTooLarge {
                        len: msg_len,
                        max: cap,
                    }
                    .into(),
                );
            } else {
                match Buf::zeroed(msg_len) {
                    Ok(b) => req.buf = Some(b),
                    Err(e) => error = Some(e),
                }
            }
        }
        let capacity = req.buf.as_ref().map_or(0, Buf::len);
        let len = msg_len.min(capacity);
        if error.is_none() && msg_len > capacity {
            error = Some(
                UsageError::Truncated {
                    message: msg_len,
                    capacity,
                }
                .into(),
            );
        }
        req.status = Status {
            source: from,
            tag: rts.tag,
            bytes: len,
            error,
            cancelled: false,
        };
        let m = Matched {
            source: from,
            sender: rts.sender,
            len,
        };
        let contiguous = req.buf.as_ref().is_none_or(Buf::is_contiguous);
        let can_put = contiguous
            && self.peers[from as usize].table.rdma == crate::protocol::Protocol::RndvPut;
        if let Some(remote) = rts.key.filter(|_| contiguous) {
            if len == 0 {
                let failed = req.status.error.is_some_and(|e| !e.is_truncation());
                let status = req.status;
                self.outbox.push_back(Out::Ctrl {
                    peer: from,
                    header: Header::Fin {
                        request: rts.sender,
                        failed,
                    },
                });
                return self.complete(key, status);
            }
            let getting = RndvRecv::Getting(Getting {
                m,
                remote,
                mem: None,
            });
            self.cold.set(&mut req.op, Cold::RndvRecv(getting));
            self.outbox.push_back(Out::Get(key));
        } else if rts.put && can_put {
            let waiting = RndvRecv::AwaitPutFin(AwaitPutFin { m, mem: None });
            self.cold.set(&mut req.op, Cold::RndvRecv(waiting));
            self.outbox.push_back(Out::ExposeCts(key));
        } else {
            let waiting = RndvRecv::AwaitFrags(AwaitFrags { m, received: 0 });
            self.cold.set(&mut req.op, Cold::RndvRecv(waiting));
            let cts = Cts {
                sender: rts.sender,
                receiver: key,
                len: len as u64,
                key: None,
            };
            self.outbox.push_back(Out::Ctrl {
                peer: from,
                header: Header::Cts(cts),
            });
            if len == 0 {
                let status = req.status;
                self.complete(key, status);
            }
        }
    }

    /// CTS at the sender: put, or send fragments.
    pub(crate) fn on_cts(&mut self, from: Rank, cts: Cts) {
        let fragment = self.peers[from as usize].table.fragment;
        let req = self.requests.get_mut(cts.sender);
        let Some(req) = req.filter(|r| r.kind == Kind::Send) else {
            return self.protocol_error(from, "CTS for an unknown send");
        };
        // A get's RTS answered with a CTS for fragments: the receiver's
        // buffer is segmented, and the exposed buffer is taken back first.
        let (dest, exposed, buf_len) = match req.op.cold() {
            Some(Cold::RndvSend(RndvSend::AwaitCts(w))) => {
                (w.dest, None, req.buf.as_ref().map_or(0, Buf::len))
            }
            Some(Cold::RndvSend(RndvSend::AwaitFin(w))) if cts.key.is_none() => {
                (w.dest, Some(w.mem), w.len)
            }
            _ => return self.protocol_error(from, "CTS for a send not awaiting one"),
        };
        if dest != from || cts.len > buf_len as u64 {
            return self.protocol_error(from, "CTS from the wrong peer or with a bad length");
        }
        let len = cts.len as usize;
        if let (Some(remote), None) = (cts.key, exposed) {
            let p = Putting {
                dest,
                receiver: cts.receiver,
                remote,
                len,
                mem: None,
            };
            self.cold
                .set(&mut req.op, Cold::RndvSend(RndvSend::Putting(p)));
            self.outbox.push_back(Out::Put(cts.sender));
        } else {
            let f = Fragmenting {
                dest,
                receiver: cts.receiver,
                next: 0,
                end: len,
                fragment,
                exposed,
            };
            self.cold
                .set(&mut req.op, Cold::RndvSend(RndvSend::Fragmenting(f)));
            self.outbox.push_back(Out::Frags(cts.sender));
        }
    }

    /// A fragment at the receiver.
    pub(crate) fn on_frag(&mut self, from: Rank, frag: Frag, payload: &[u8]) {
        let Some(req) = self.requests.get_mut(frag.receiver) else {
            return self.protocol_error(from, "fragment for an unknown receive");
        };
        let Some(Cold::RndvRecv(RndvRecv::AwaitFrags(w))) = req.op.cold_mut() else {
            return self.protocol_error(from, "fragment for a receive not awaiting one");
        };
        let end = frag.offset.checked_add(payload.len() as u64);
        if end.is_none_or(|e| w.m.source != from || e > w.m.len as u64) {
            return self.protocol_error(from, "fragment outside the receive buffer");
        }
        let Some(buf) = req.buf.as_mut() else {
            return self.protocol_error(from, "fragment for a receive without a buffer");
        };
        buf.write_at(frag.offset as usize, payload);
        w.received += payload.len();
        if w.received >= w.m.len {
            let status = req.status;
            self.complete(frag.receiver, status);
        }
    }

    /// FIN: the sender's get-exposed buffer was read, or the receiver's
    /// put-exposed buffer was written.
    pub(crate) fn on_fin(&mut self, from: Rank, request: u64, failed: bool) {
        let Some(req) = self.requests.get_mut(request) else {
            return self.protocol_error(from, "FIN for an unknown request");
        };
        let transfer_failed: Error = PeerError::TransferFailed { rank: from }.into();
        let (mem, mut status) = match req.op.cold() {
            Some(Cold::RndvSend(RndvSend::AwaitFin(w))) if w.dest == from => {
                (Some(w.mem), Status::EMPTY)
            }
            Some(Cold::RndvRecv(RndvRecv::AwaitPutFin(w))) if w.m.source == from => {
                (w.mem, req.status)
            }
            Some(Cold::RndvRecv(RndvRecv::AwaitFrags(w))) if w.m.source == from && failed => {
                (None, req.status)
            }
            _ => return self.protocol_error(from, "FIN for a request not awaiting one"),
        };
        if failed {
            status.error = Some(transfer_failed);
        }
        let releasing = Releasing {
            mem,
            status,
            fin: None,
        };
        self.cold.set(&mut req.op, Cold::Releasing(releasing));
        self.outbox.push_back(Out::Release(request));
    }

    /// A `get` or `put` finished.
    pub(crate) fn on_rdma_done(&mut self, token: OpToken, result: Result<()>) {
        let key = token.0;
        let Some(req) = self.requests.get_mut(key) else {
            tracing::warn!(key, "RDMA completion for a request that no longer exists");
            return;
        };
        let failed = result.is_err();
        let releasing = match req.op.cold() {
            Some(Cold::RndvRecv(RndvRecv::Getting(g))) => {
                let mut status = req.status;
                if let Err(e) = result {
                    status.error = Some(e);
                }
                Releasing {
                    mem: g.mem,
                    status,
                    fin: Some((g.m.source, g.m.sender, failed)),
                }
            }
            Some(Cold::RndvSend(RndvSend::Putting(p))) => {
                let status = Status {
                    error: result.err(),
                    ..Status::EMPTY
                };
                Releasing {
                    mem: p.mem,
                    status,
                    fin: Some((p.dest, p.receiver, failed)),
                }
            }
            _ => {
                self.events += 1;
                tracing::warn!(key, "RDMA completion for a request not transferring");
                return;
            }
        };
        self.cold.set(&mut req.op, Cold::Releasing(releasing));
        self.outbox.push_back(Out::Release(key));
    }
}

/// Registers `buf` for `access`, giving it back on failure.
fn register<D: Device>(
    dev: &mut D,
    peer: crate::Rank,
    req_buf: &mut Option<Buf>,
    access: Access,
) -> Result<(crate::device::MemHandle, crate::wire::RemoteKey)> {
    let buf = req_buf.take().unwrap_or_default();
    dev.register(peer, buf, access).map_err(|(err, buf)| {
        *req_buf = Some(buf);
        err
    })
}

/// Receiver: issue the `get` of a matched RTS.
pub(crate) fn issue_get<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::RndvRecv(RndvRecv::Getting(g))) = req.op.cold_mut() else {
        return Ok(Sent::Done);
    };
    if g.mem.is_none() {
        match register(dev, g.m.source, &mut req.buf, Access::LocalWrite) {
            Ok((mem, _)) => g.mem = Some(mem),
            Err(err) => return Ok(fail_transfer(st, key, err)),
        }
    }
    let (peer, remote, len) = (g.m.source, g.remote, g.m.len);
    let mem = g.mem.ok_or(Error::Internal("get without a registration"))?;
    match dev.get(peer, remote, mem, len, OpToken(key)) {
        Ok(sent) => Ok(sent),
        Err(err) => Ok(fail_transfer(st, key, err)),
    }
}

/// Receiver: expose the buffer and send the CTS for rendezvous-put.
pub(crate) fn expose_for_put<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::RndvRecv(RndvRecv::AwaitPutFin(w))) = req.op.cold_mut() else {
        return Ok(Sent::Done);
    };
    let (rkey, m) = match register(dev, w.m.source, &mut req.buf, Access::RemoteWrite) {
        Ok((mem, rkey)) => {
            w.mem = Some(mem);
            (rkey, w.m)
        }
        Err(err) => return Ok(fail_transfer(st, key, err)),
    };
    let cts = Cts {
        sender: m.sender,
        receiver: key,
        len: m.len as u64,
        key: Some(rkey),
    };
    st.outbox.push_back(Out::Ctrl {
        peer: m.source,
        header: Header::Cts(cts),
    });
    Ok(Sent::Done)
}

/// Sender: issue the `put` into the receiver's exposed buffer.
pub(crate) fn issue_put<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::RndvSend(RndvSend::Putting(p))) = req.op.cold_mut() else {
        return Ok(Sent::Done);
    };
    if p.len == 0 {
        let fin = Some((p.dest, p.receiver, false));
        let releasing = Releasing {
            mem: None,
            status: Status::EMPTY,
            fin,
        };
        st.cold.set(&mut req.op, Cold::Releasing(releasing));
        return release(dev, st, key);
    }
    if p.mem.is_none() {
        match register(dev, p.dest, &mut req.buf, Access::LocalRead) {
            Ok((mem, _)) => p.mem = Some(mem),
            Err(err) => return Ok(fail_transfer(st, key, err)),
        }
    }
    let mem = p.mem.ok_or(Error::Internal("put without a registration"))?;
    match dev.put(p.dest, mem, p.remote, p.len, OpToken(key)) {
        Ok(sent) => Ok(sent),
        Err(err) => Ok(fail_transfer(st, key, err)),
    }
}

/// Sender: send the fragments the CTS asked for.
pub(crate) fn send_fragments<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::RndvSend(RndvSend::Fragmenting(f))) = req.op.cold_mut() else {
        return Ok(Sent::Done);
    };
    if let Some(mem) = f.exposed.take() {
        req.buf = dev.deregister(mem);
        if req.buf.is_none() {
            tracing::error!(key, "device lost a registered buffer");
        }
    }
    let buf = req.buf.as_ref();
    let data = buf.map_or(&[][..], Buf::as_slice);
    let segmented = buf.filter(|b| !b.is_contiguous());
    if segmented.is_some() && st.gather.len() < f.fragment {
        st.gather.resize(f.fragment, 0);
    }
    let mut bytes = [0u8; MAX_HEADER];
    while f.next < f.end {
        let chunk = f.fragment.min(f.end - f.next);
        let header = Header::Frag(Frag {
            receiver: f.receiver,
            offset: f.next as u64,
        });
        let n = header.encode(&mut bytes);
        let payload = match segmented {
            Some(b) => {
                b.read_at(f.next, &mut st.gather[..chunk]);
                &st.gather[..chunk]
            }
            None => &data[f.next..f.next + chunk],
        };
        match dev.send(f.dest, &bytes[..n], payload) {
            Ok(Sent::Done) => f.next += chunk,
            Ok(Sent::Busy) => return Ok(Sent::Busy),
            Err(err) => return Ok(fail_transfer(st, key, err)),
        }
    }
    st.complete(key, Status::EMPTY);
    Ok(Sent::Done)
}

/// Takes a finished transfer's buffer back, sends its FIN, completes it.
pub(crate) fn release<D: Device>(dev: &mut D, st: &mut State, key: u64) -> Result<Sent> {
    let Some(req) = st.requests.get_mut(key) else {
        return Ok(Sent::Done);
    };
    let Some(Cold::Releasing(r)) = req.op.cold() else {
        return Ok(Sent::Done);
    };
    let (mem, status, fin) = (r.mem, r.status, r.fin);
    if let Some(mem) = mem {
        let buf = dev.deregister(mem);
        if buf.is_none() {
            tracing::error!(key, "device lost a registered buffer");
        }
        req.buf = buf;
    }
    if let Some((peer, request, failed)) = fin {
        st.outbox.push_back(Out::Ctrl {
            peer,
            header: Header::Fin { request, failed },
        });
    }
    st.complete(key, status);
    Ok(Sent::Done)
}

/// A transfer failed locally: complete with `err` and release the peer with
/// a failed FIN (when the peer is waiting for one).
fn fail_transfer(st: &mut State, key: u64, err: Error) -> Sent {
    if let Error::Peer(PeerError::Died { rank }) = err {
        st.fail_peer(rank, err);
        return Sent::Done;
    }
    let Some(req) = st.requests.get_mut(key) else {
        return Sent::Done;
    };
    let (mem, fin) = match req.op.cold() {
        Some(Cold::RndvRecv(RndvRecv::Getting(g))) => (g.mem, Some((g.m.source, g.m.sender, true))),
        Some(Cold::RndvRecv(RndvRecv::AwaitPutFin(w))) => {
            // The sender still waits for a CTS: an empty one releases it.
            let cts = Cts {
                sender: w.m.sender,
                receiver: key,
                len: 0,
                key: None,
            };
            st.outbox.push_back(Out::Ctrl {
                peer: w.m.source,
                header: Header::Cts(cts),
            });
            (w.mem, None)
        }
        Some(Cold::RndvSend(RndvSend::Putting(p))) => (p.mem, Some((p.dest, p.receiver, true))),
        Some(Cold::RndvSend(RndvSend::Fragmenting(f))) => {
            (f.exposed, Some((f.dest, f.receiver, true)))
        }
        _ => (None, None),
    };
    let mut status = if req.kind == Kind::Send {
        Status::EMPTY
    } else {
        req.status
    };
    status.error = Some(err);
    st.cold
        .set(&mut req.op, Cold::Releasing(Releasing { mem, status, fin }));
    st.outbox.push_back(Out::Release(key));
    Sent::Done
}
