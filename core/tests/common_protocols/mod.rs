//! Helpers shared by `sim_protocols.rs` and `sim_ordering.rs`.
//!
//! The protocol model here is written out independently of
//! `ProtocolTable::select`, so a test that compares the two catches a table
//! that drifts from the documented rules.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use ferry_core::sim::{LinkStats, NetConfig, RdmaStats, Sim};
use ferry_core::{
    Buf, ByteStorage, Caps, Completion, Config, Counters, Rank, Request, RndvMode, Status, Tag,
};

/// What fills guarded receive buffers before a receive: any byte a receive
/// wrote where it must not shows up as a changed sentinel.
pub(crate) const SENTINEL: u8 = 0xAA;
/// Guard bytes past the receive buffer's meaningful length.
pub(crate) const SLACK: usize = 64;

/// The protocols, as this test suite names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    Eager,
    Get,
    Put,
    Frag,
}

/// Sim caps with the given RDMA abilities (default payload limit).
pub(crate) fn caps(get: bool, put: bool) -> Caps {
    Caps {
        rdma_get: get,
        rdma_put: put,
        ..NetConfig::DEFAULT_CAPS
    }
}

/// A two-rank simulation.
pub(crate) fn sim2(caps: Caps, config: Config, seed: u64) -> Sim {
    Sim::new(NetConfig::new(2).with_caps(caps).with_seed(seed), config)
}

/// The protocol the documentation of `Config` and `ProtocolTable` promises
/// for a message of `len` bytes when the sender holds an eager credit.
pub(crate) fn expected_proto(len: usize, config: &Config, caps: &Caps) -> Proto {
    if len
        <= config
            .eager_limit
            .unwrap_or(caps.eager_preferred)
            .min(caps.max_payload)
    {
        return Proto::Eager;
    }
    if len < config.rdma_threshold {
        return Proto::Frag;
    }
    match config.rndv_mode {
        RndvMode::Auto if caps.rdma_get => Proto::Get,
        RndvMode::Auto if caps.rdma_put => Proto::Put,
        RndvMode::Get if caps.rdma_get => Proto::Get,
        RndvMode::Put if caps.rdma_put => Proto::Put,
        _ => Proto::Frag,
    }
}

/// Which protocol carried the one message sent between two counter
/// snapshots of the sender. Panics unless exactly one protocol counter moved,
/// and by exactly one.
pub(crate) fn sent_by(before: Counters, after: Counters) -> Proto {
    let moved = [
        (Proto::Eager, after.eager_sent - before.eager_sent),
        (Proto::Get, after.rndv_get_sent - before.rndv_get_sent),
        (Proto::Put, after.rndv_put_sent - before.rndv_put_sent),
        (Proto::Frag, after.rndv_frag_sent - before.rndv_frag_sent),
    ];
    let hits: Vec<_> = moved.iter().filter(|(_, n)| *n > 0).collect();
    assert!(
        hits.len() == 1 && hits[0].1 == 1,
        "expected exactly one protocol counter to move by one, got {moved:?}"
    );
    hits[0].0
}

/// Deterministic, position-dependent bytes: a misplaced, shifted or stale
/// chunk never compares equal.
pub(crate) fn pattern(len: usize, salt: u64) -> Vec<u8> {
    let mut x = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8 ^ i as u8
        })
        .collect()
}

/// A receive buffer of `cap` meaningful bytes backed by `cap + SLACK` bytes
/// of [`SENTINEL`].
pub(crate) fn guarded(cap: usize) -> Buf {
    let storage: Box<dyn ByteStorage> = Box::new(vec![SENTINEL; cap + SLACK].into_boxed_slice());
    Buf::from_storage_with_len(storage, cap)
}

/// Takes a guarded buffer back apart and checks that every byte from
/// `written` on (the rest of the buffer and the slack) is still the sentinel.
/// Returns the full backing bytes.
pub(crate) fn unguard(buf: Buf, written: usize) -> Vec<u8> {
    let storage = buf
        .into_storage()
        .expect("a guarded buffer is storage-backed");
    let bytes = storage.bytes().to_vec();
    if let Some(pos) = bytes[written..].iter().position(|&b| b != SENTINEL) {
        panic!(
            "byte {} of {} was written although only {written} bytes may change",
            written + pos,
            bytes.len()
        );
    }
    bytes
}

/// The eager limit, fragment size and RDMA threshold of [`config`].
pub(crate) const E: usize = 1000;
pub(crate) const F: usize = 2048;
pub(crate) const R: usize = 10_000;
pub(crate) const MIB: usize = 1 << 20;

pub(crate) fn config(mode: RndvMode) -> Config {
    // Enough credits that no credit packet joins the control traffic the
    // packet-count checks expect.
    Config {
        eager_limit: Some(E),
        rdma_threshold: R,
        fragment_size: F,
        rndv_mode: mode,
        eager_credits: 1000,
        ..Config::default()
    }
}

pub(crate) fn send(sim: &mut Sim, from: Rank, to: Rank, tag: Tag, data: &[u8]) -> Request {
    sim.engine(from)
        .isend(to, tag, 0, Buf::from(data))
        .unwrap()
        .request
}

pub(crate) fn arecv(sim: &mut Sim, at: Rank, from: Rank, tag: Tag) -> Request {
    sim.engine(at).iarecv(from, tag, 0).unwrap().request
}

pub(crate) fn recv(sim: &mut Sim, at: Rank, from: Rank, tag: Tag, cap: usize) -> Request {
    sim.engine(at)
        .irecv(from, tag, 0, Buf::zeroed(cap).unwrap())
        .unwrap()
        .request
}

/// Waits for `r`, which must succeed.
pub(crate) fn done(sim: &mut Sim, at: Rank, mut r: Request) -> Completion {
    let c = sim.wait(at, &mut r).unwrap();
    assert_eq!(c.status.error, None, "rank {at}: {:?}", c.status);
    assert!(r.is_null());
    c
}

/// The data a completion handed back.
pub(crate) fn bytes(c: &Completion) -> &[u8] {
    c.buf.as_ref().expect("the operation hands its buffer back")
}

/// Waits for a receive and returns what it received.
pub(crate) fn data_of(sim: &mut Sim, at: Rank, r: Request) -> Vec<u8> {
    bytes(&done(sim, at, r)).to_vec()
}

/// A blocking `waitall` on `at`, the other ranks running while it sleeps.
pub(crate) fn waitall(sim: &mut Sim, at: Rank, reqs: &mut [Request]) -> Vec<Completion> {
    let mut out = Vec::new();
    sim.with_park(at, |e, p| e.waitall(reqs, &mut out, p))
        .unwrap();
    out
}

pub(crate) fn idle(sim: &mut Sim) {
    sim.run_until_idle().unwrap();
}

pub(crate) fn no_leaks(sim: &mut Sim) {
    for r in 0..sim.size() as Rank {
        assert_eq!(sim.engine(r).live_requests(), 0, "rank {r} leaks requests");
    }
}

/// What one transfer from rank 0 to rank 1 did.
pub(crate) struct Done {
    pub(crate) proto: Proto,
    pub(crate) recv: Status,
    /// The receive buffer's backing bytes, already checked for stray writes.
    pub(crate) bytes: Vec<u8>,
    /// Packets sent on 0 -> 1 and on 1 -> 0.
    pub(crate) packets: (u64, u64),
    /// Payload bytes on 0 -> 1.
    pub(crate) wire_bytes: u64,
    pub(crate) rdma_bytes: u64,
}

fn net_snapshot(sim: &Sim) -> (LinkStats, LinkStats, RdmaStats) {
    let net = sim.net().borrow();
    (net.link_stats(0, 1), net.link_stats(1, 0), net.rdma_stats())
}

/// Sends `len` bytes 0 -> 1 into a guarded receive of `cap` bytes, posted
/// before the send (`prepost`) or after the network went idle with the
/// message unexpected. Checks what holds whatever the protocol.
pub(crate) fn transfer(sim: &mut Sim, len: usize, cap: usize, tag: Tag, prepost: bool) -> Done {
    let payload = pattern(len, tag as u64 * 7919 + len as u64);
    let (s0, r0) = (sim.engine(0).counters(), sim.engine(1).counters());
    let (l01, l10, rdma) = net_snapshot(sim);
    let post = |sim: &mut Sim| sim.engine(1).irecv(0, tag, 0, guarded(cap)).unwrap();
    let mut r = if prepost {
        post(sim).request
    } else {
        Request::NULL
    };
    let s = sim
        .engine(0)
        .isend(1, tag, 0, Buf::from(&payload[..]))
        .unwrap();
    idle(sim);
    let proto = sent_by(s0, sim.engine(0).counters());
    let w = format!("len {len} cap {cap} prepost {prepost} {proto:?}");
    let send_done = sim.engine(0).is_complete(&s.request).unwrap();
    if prepost {
        assert!(send_done && sim.engine(1).is_complete(&r).unwrap(), "{w}");
    } else {
        // A standard send may finish alone only if its data went with it.
        assert_eq!(send_done, proto == Proto::Eager, "{w}: send done unmatched");
        assert_eq!(sim.engine(1).counters().unexpected_depth, 1, "{w}");
        r = post(sim).request;
    }
    let rc = sim.wait(1, &mut r).unwrap();
    let sc = done(sim, 0, s.request);
    let back = s.buf.or(sc.buf).expect("the send buffer comes back");
    assert!(back.as_slice() == &payload[..], "{w}: send buffer changed");
    let (s1, r1) = (sim.engine(0).counters(), sim.engine(1).counters());
    let unexpected = r1.unexpected_arrivals - r0.unexpected_arrivals;
    assert_eq!(unexpected, u64::from(!prepost), "{w}");
    assert_eq!(r1.unexpected_depth, 0, "{w}");
    assert_eq!(s1.protocol_errors + r1.protocol_errors, 0, "{w}");
    no_leaks(sim);
    assert_eq!((rc.status.source, rc.status.tag), (0, tag), "{w}");
    let n = rc.status.bytes;
    let bytes = unguard(rc.buf.expect("the receive buffer comes back"), n);
    assert!(bytes[..n] == payload[..n], "{w}: received bytes");
    let (l01b, l10b, rdma_b) = net_snapshot(sim);
    let packets_01 = l01b.packets_sent - l01.packets_sent;
    Done {
        proto,
        recv: rc.status,
        bytes,
        packets: (packets_01, l10b.packets_sent - l10.packets_sent),
        wire_bytes: l01b.bytes_sent - l01.bytes_sent,
        rdma_bytes: rdma_b.bytes - rdma.bytes,
    }
}

/// Packets each protocol sends on 0 -> 1 and 1 -> 0 when `moved` bytes land:
/// eager data; RTS, FIN back (get); RTS, CTS back, FIN (put); RTS, CTS back,
/// fragments (fragmented).
pub(crate) fn packets_for(proto: Proto, moved: usize) -> (u64, u64) {
    match proto {
        Proto::Eager => (1, 0),
        Proto::Get => (1, 1),
        Proto::Put => (2, 1),
        Proto::Frag => (1 + moved.div_ceil(F) as u64, 1),
    }
}
