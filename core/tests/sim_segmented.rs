//! Segmented buffers (`Buf::segmented`: a non-contiguous datatype's
//! scattered bytes) over the simulated network: sent gathered into an
//! eager packet or by gathered fragments, received by scattered writes, in every protocol a contiguous peer
//! would pick, with truncation, cancellation and persistent requests.

mod common_protocols;

use std::sync::{Arc, Mutex};

use common_protocols::*;
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{Buf, Caps, RndvMode, Segments, SendMode, UsageError};

/// Bytes in a strided layout: `block` bytes of data every `stride` bytes of
/// memory, the gaps filled with [`SENTINEL`]. The memory is shared with the
/// test, which reads it after the buffer has gone back to the engine.
#[derive(Clone)]
struct Strided {
    mem: Arc<Mutex<Vec<u8>>>,
    block: usize,
    stride: usize,
    len: usize,
    /// Every offset `gather` and `scatter` were called with, in order.
    calls: Arc<Mutex<Vec<usize>>>,
}

impl Strided {
    /// Room for `len` packed bytes, holes and all.
    fn new(len: usize, block: usize, stride: usize) -> Strided {
        let blocks = len.div_ceil(block);
        Strided {
            mem: Arc::new(Mutex::new(vec![SENTINEL; blocks * stride])),
            block,
            stride,
            len,
            calls: Arc::default(),
        }
    }

    /// Holding `data` packed.
    fn holding(data: &[u8], block: usize, stride: usize) -> Strided {
        let mut s = Strided::new(data.len(), block, stride);
        s.scatter(0, data);
        s.calls.lock().unwrap().clear();
        s
    }

    fn at(&self, packed: usize) -> usize {
        packed / self.block * self.stride + packed % self.block
    }

    fn buf(&self) -> Buf {
        Buf::segmented(Box::new(self.clone()))
    }

    /// The packed bytes, and a check that no hole was written.
    fn packed(&self) -> Vec<u8> {
        let mem = self.mem.lock().unwrap();
        for (i, &b) in mem.iter().enumerate() {
            if i % self.stride >= self.block {
                assert_eq!(b, SENTINEL, "hole byte {i} was written");
            }
        }
        (0..self.len).map(|p| mem[self.at(p)]).collect()
    }
}

impl Segments for Strided {
    fn len(&self) -> usize {
        self.len
    }
    fn gather(&self, offset: usize, out: &mut [u8]) {
        self.calls.lock().unwrap().push(offset);
        let mem = self.mem.lock().unwrap();
        for (i, o) in out.iter_mut().enumerate() {
            *o = mem[self.at(offset + i)];
        }
    }
    fn scatter(&mut self, offset: usize, data: &[u8]) {
        self.calls.lock().unwrap().push(offset);
        let mut mem = self.mem.lock().unwrap();
        for (i, &d) in data.iter().enumerate() {
            let at = self.at(offset + i);
            mem[at] = d;
        }
    }
}

/// The protocol setups a contiguous sender would use: the protocol a
/// large message takes, the rendezvous mode and the caps.
fn setups() -> [(Proto, RndvMode, Caps); 4] {
    [
        (Proto::Get, RndvMode::Get, caps(true, true)),
        (Proto::Put, RndvMode::Put, caps(true, true)),
        (Proto::Frag, RndvMode::Fragmented, caps(true, true)),
        (Proto::Frag, RndvMode::Auto, caps(false, false)),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// A segmented send into a contiguous receive.
    Send,
    /// A contiguous send into a segmented receive.
    Recv,
    /// Segmented on both sides.
    Both,
}

/// Sends `len` bytes 0 -> 1 into a receive of `cap` bytes; returns the
/// receive's status, the packed bytes it holds, and which protocol the
/// sender used.
fn exchange(sim: &mut Sim, side: Side, len: usize, cap: usize, tag: i32, prepost: bool) {
    let payload = pattern(len, tag as u64 * 31 + len as u64);
    let w = format!("{side:?} len {len} cap {cap} prepost {prepost}");
    let seg_send = side != Side::Recv;
    let seg_recv = side != Side::Send;
    let src = Strided::holding(&payload, 7, 13);
    let dst = Strided::new(cap, 5, 11);
    let recv_buf = || if seg_recv { dst.buf() } else { guarded(cap) };
    let mut r = None;
    if prepost {
        r = Some(sim.engine(1).irecv(0, tag, 0, recv_buf()).unwrap().request);
    }
    let before = sim.engine(0).counters();
    let send_buf = if seg_send {
        src.buf()
    } else {
        Buf::from(&payload[..])
    };
    let s = sim.engine(0).isend(1, tag, 0, send_buf).unwrap();
    idle(sim);
    let proto = sent_by(before, sim.engine(0).counters());
    if seg_send {
        // Gathered into one eager packet, or sent by fragments: never
        // registered.
        let want = if len <= E { Proto::Eager } else { Proto::Frag };
        assert_eq!(proto, want, "{w}: a segmented send's protocol");
    }
    let mut r = match r {
        Some(r) => r,
        None => sim.engine(1).irecv(0, tag, 0, recv_buf()).unwrap().request,
    };
    let rc = sim.wait(1, &mut r).unwrap();
    let sc = done(sim, 0, s.request);
    let moved = len.min(cap);
    assert_eq!(rc.status.bytes, moved, "{w}");
    if len > cap {
        assert_eq!(
            rc.status.error,
            Some(
                UsageError::Truncated {
                    message: len,
                    capacity: cap
                }
                .into()
            ),
            "{w}"
        );
    } else {
        assert_eq!(rc.status.error, None, "{w}");
    }
    let got = if seg_recv {
        drop(rc.buf);
        dst.packed()[..moved].to_vec()
    } else {
        unguard(rc.buf.expect("the receive buffer comes back"), moved)[..moved].to_vec()
    };
    assert!(got == payload[..moved], "{w}: received bytes");
    if seg_send {
        let back = s.buf.or(sc.buf).expect("the send buffer comes back");
        assert!(!back.is_contiguous(), "{w}: the segmented buffer itself");
        let offsets = src.calls.lock().unwrap().clone();
        assert!(
            offsets.windows(2).all(|p| p[0] < p[1]),
            "{w}: fragments gathered in order, once each: {offsets:?}"
        );
        assert!(src.packed() == payload, "{w}: send data unchanged");
    }
    let (c0, c1) = (sim.engine(0).counters(), sim.engine(1).counters());
    assert_eq!(c0.protocol_errors + c1.protocol_errors, 0, "{w}");
    no_leaks(sim);
}

#[test]
fn segmented_buffers_move_in_every_protocol_and_direction() {
    for (i, (_, mode, caps)) in setups().into_iter().enumerate() {
        let mut sim = sim2(caps, config(mode), 40 + i as u64);
        let mut tag = 0;
        for side in [Side::Send, Side::Recv, Side::Both] {
            for len in [0, 1, E, E + 1, R - 1, R, 3 * R + 5, MIB + 3] {
                for prepost in [true, false] {
                    tag += 1;
                    exchange(&mut sim, side, len, len, tag, prepost);
                }
            }
        }
    }
}

#[test]
fn a_segmented_receive_too_short_takes_a_prefix_and_writes_nothing_past_it() {
    for (i, (_, mode, caps)) in setups().into_iter().enumerate() {
        let mut sim = sim2(caps, config(mode), 50 + i as u64);
        let mut tag = 0;
        for side in [Side::Recv, Side::Both] {
            for (len, cap) in [(E, E / 2), (R + 7, R / 3), (MIB, 4 * F + 1), (R, 0)] {
                for prepost in [true, false] {
                    tag += 1;
                    exchange(&mut sim, side, len, cap, tag, prepost);
                }
            }
        }
    }
}

#[test]
fn a_get_offered_to_a_segmented_receive_turns_into_fragments() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Get), 60);
    let payload = pattern(MIB, 9);
    let dst = Strided::new(MIB, 3, 8);
    let r = sim.engine(1).irecv(0, 1, 0, dst.buf()).unwrap().request;
    let before = sim.engine(0).counters();
    let s = sim
        .engine(0)
        .isend(1, 1, 0, Buf::from(&payload[..]))
        .unwrap();
    idle(&mut sim);
    assert_eq!(sent_by(before, sim.engine(0).counters()), Proto::Get);
    done(&mut sim, 1, r);
    let back = done(&mut sim, 0, s.request).buf;
    assert!(
        back.as_deref() == Some(&payload[..]),
        "the registered send buffer comes back whole"
    );
    let rdma = sim.net().borrow().rdma_stats();
    assert_eq!(rdma.bytes, 0, "nothing read by RDMA");
    assert!(dst.packed() == payload);
    no_leaks(&mut sim);
}

#[test]
fn a_cancelled_segmented_receive_is_untouched() {
    let mut sim = sim2(caps(true, true), config(RndvMode::Auto), 70);
    let dst = Strided::new(R, 4, 9);
    let mut r = sim.engine(1).irecv(0, 1, 0, dst.buf()).unwrap().request;
    sim.engine(1).cancel(&r).unwrap();
    let c = sim.wait(1, &mut r).unwrap();
    assert!(c.status.cancelled);
    assert!(dst.packed().iter().all(|&b| b == SENTINEL));
    assert!(dst.calls.lock().unwrap().is_empty());
    // The engine still moves the next message into a fresh one.
    exchange(&mut sim, Side::Both, R + 1, R + 1, 2, true);
}

#[test]
fn persistent_segmented_sends_and_receives_restart() {
    for (i, (_, mode, caps)) in setups().into_iter().enumerate() {
        let mut sim = sim2(caps, config(mode), 80 + i as u64);
        let payload = pattern(3 * R, 4);
        let src = Strided::holding(&payload, 6, 10);
        let dst = Strided::new(3 * R, 2, 5);
        let mut s = sim
            .engine(0)
            .send_init(1, 3, 0, src.buf(), SendMode::Standard)
            .unwrap();
        let mut r = sim.engine(1).recv_init(0, 3, 0, dst.buf()).unwrap();
        for round in 0..3 {
            sim.engine(1).start(&r).unwrap();
            sim.engine(0).start(&s).unwrap();
            let c = sim.wait(1, &mut r).unwrap();
            assert_eq!(
                (c.status.bytes, c.status.error),
                (3 * R, None),
                "round {round}"
            );
            sim.wait(0, &mut s).unwrap();
            assert!(dst.packed() == payload, "{mode:?} round {round}");
            dst.mem.lock().unwrap().fill(SENTINEL);
        }
        sim.engine(0).free(&mut s).unwrap();
        sim.engine(1).free(&mut r).unwrap();
        no_leaks(&mut sim);
    }
}

#[test]
fn segmented_eager_sends_the_device_refused_are_gathered_when_they_go() {
    // A link of 2 packets: most of a burst of 20 eager sends is queued,
    // and each queued one is gathered when it finally goes out.
    let net = NetConfig::new(2)
        .with_caps(caps(true, true))
        .with_seed(90)
        .with_link_capacity(2);
    let mut sim = Sim::new(net, config(RndvMode::Auto));
    let sources: Vec<(Vec<u8>, Strided)> = (0..20)
        .map(|i| {
            let data = pattern(E - i, i as u64);
            let s = Strided::holding(&data, 3, 7);
            (data, s)
        })
        .collect();
    let sends: Vec<_> = sources
        .iter()
        .enumerate()
        .map(|(i, (_, s))| {
            sim.engine(0)
                .isend(1, i as i32, 0, s.buf())
                .unwrap()
                .request
        })
        .collect();
    assert!(
        sends.iter().filter(|r| !r.is_empty()).count() > 10,
        "the link pushed back"
    );
    for (i, (data, _)) in sources.iter().enumerate() {
        let dst = Strided::new(E, 2, 3);
        let r = sim
            .engine(1)
            .irecv(0, i as i32, 0, dst.buf())
            .unwrap()
            .request;
        let c = done(&mut sim, 1, r);
        assert_eq!(c.status.bytes, data.len());
        assert!(dst.packed()[..data.len()] == data[..], "message {i}");
    }
    for s in sends {
        done(&mut sim, 0, s);
    }
    let c = sim.engine(0).counters();
    assert_eq!(c.eager_sent, 20, "all eager");
    no_leaks(&mut sim);
}
