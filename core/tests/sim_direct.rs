//! The blocking receive without a request (`Engine::recv_direct`) on the
//! simulated network: a seeded stream of eager, rendezvous and synchronous
//! messages on one tag, received by blocking receives (some with a
//! wildcard, some behind an `irecv` posted first), must come out in send
//! order with the right bytes, whichever path each receive took.

mod common_protocols;

use common_protocols::pattern;
use ferry_core::sim::{NetConfig, Sim, SimRng};
use ferry_core::{Buf, Config, Direct, Rank, Request, Status, ANY_SOURCE};

const TAG: i32 = 7;
const SENDER: Rank = 0;
const RECEIVER: Rank = 1;
/// Room for the largest message: a rendezvous one.
const CAP: usize = 4096;

/// The body of message `seq`: its number first, then a pattern.
fn body(seq: u32, len: usize) -> Vec<u8> {
    let mut b = seq.to_le_bytes().to_vec();
    b.extend(pattern(len - 4, u64::from(seq)));
    b
}

/// What the blocking receives did, by path.
#[derive(Debug, Default)]
struct Paths {
    direct: usize,
    gave_way: usize,
}

/// One attempt's worth of the world moving on without the receiver's own
/// progress: the sender progresses, the network advances.
fn others_move(sim: &mut Sim) {
    sim.engine(SENDER).progress().expect("sender progress");
    sim.net().borrow_mut().advance();
}

/// Waits for `r` by stepping the whole job.
fn wait(sim: &mut Sim, rank: Rank, r: &mut Request) -> (Status, Vec<u8>) {
    for _ in 0..100_000 {
        if let Some(c) = sim.engine(rank).test(r).expect("test") {
            let buf = c.buf.expect("a receive hands its buffer back");
            return (c.status, buf.as_slice()[..c.status.bytes].to_vec());
        }
        sim.step().expect("step");
    }
    panic!("a receive never completed");
}

/// A blocking receive as `Comm::recv` does it: direct attempts, then the
/// ordinary receive if the direct path gives way.
fn blocking_recv(sim: &mut Sim, source: Rank, paths: &mut Paths) -> (Status, Vec<u8>) {
    let want = sim
        .engine(RECEIVER)
        .direct_recv(source, TAG, 0)
        .expect("valid arguments")
        .expect("not PROC_NULL");
    let mut dst = vec![0u8; CAP];
    for _ in 0..100_000 {
        match sim
            .engine(RECEIVER)
            .recv_direct(&want, &mut dst)
            .expect("attempt")
        {
            Direct::Done(a) => {
                paths.direct += 1;
                return (a.into(), dst[..a.bytes].to_vec());
            }
            Direct::GiveWay => {
                paths.gave_way += 1;
                let mut r = sim
                    .engine(RECEIVER)
                    .irecv(source, TAG, 0, Buf::zeroed(CAP).expect("buffer"))
                    .expect("irecv")
                    .request;
                return wait(sim, RECEIVER, &mut r);
            }
            Direct::Pending => others_move(sim),
        }
    }
    panic!("a blocking receive never completed");
}

fn run(seed: u64) -> Paths {
    let config = Config {
        eager_limit: Some(256),
        ..Config::default()
    };
    let net = NetConfig::new(2).with_seed(seed).with_delay(1, 6);
    let mut sim = Sim::new(net, config);
    let mut rng = SimRng::new(seed);
    let count = 120u32;
    let mut sends = Vec::new();
    let mut bodies = Vec::new();
    for seq in 0..count {
        let len = match rng.below(4) {
            0 => rng.range_inclusive(257, CAP as u64) as usize,
            _ => rng.range_inclusive(4, 256) as usize,
        };
        let b = body(seq, len);
        let data = Buf::from_vec(b.clone());
        let e = sim.engine(SENDER);
        let started = if rng.below(5) == 0 {
            e.issend(RECEIVER, TAG, 0, data)
        } else {
            e.isend(RECEIVER, TAG, 0, data)
        };
        sends.push(started.expect("send").request);
        bodies.push(b);
        // Let some of the stream arrive before the receiver starts.
        if rng.below(3) == 0 {
            others_move(&mut sim);
        }
    }
    let mut paths = Paths::default();
    let mut seq = 0u32;
    while seq < count {
        let source = if rng.below(2) == 0 {
            SENDER
        } else {
            ANY_SOURCE
        };
        let early = (rng.below(6) == 0 && seq + 1 < count).then(|| {
            // An irecv posted first must match before the blocking one.
            sim.engine(RECEIVER)
                .irecv(SENDER, TAG, 0, Buf::zeroed(CAP).expect("buffer"))
                .expect("irecv")
                .request
        });
        if let Some(mut r) = early {
            let (status, got) = blocking_recv(&mut sim, source, &mut paths);
            assert_eq!(status.source, SENDER);
            assert_eq!(
                got,
                bodies[seq as usize + 1],
                "seed {seed}: the blocking receive overtook the irecv"
            );
            let (_, first) = wait(&mut sim, RECEIVER, &mut r);
            assert_eq!(
                first, bodies[seq as usize],
                "seed {seed}: the irecv got the wrong message"
            );
            seq += 2;
        } else {
            let (status, got) = blocking_recv(&mut sim, source, &mut paths);
            assert_eq!((status.source, status.tag), (SENDER, TAG));
            assert_eq!(status.error, None);
            assert_eq!(
                got, bodies[seq as usize],
                "seed {seed}: message {seq} out of order or damaged"
            );
            seq += 1;
        }
    }
    for r in &mut sends {
        if !r.is_empty() {
            wait_send(&mut sim, r);
        }
    }
    sim.run_until_idle().expect("idle");
    assert_eq!(sim.engine(RECEIVER).live_requests(), 0);
    assert_eq!(
        sim.engine(RECEIVER).counters().direct_receives,
        paths.direct as u64
    );
    paths
}

fn wait_send(sim: &mut Sim, r: &mut Request) {
    for _ in 0..100_000 {
        if let Some(c) = sim.engine(SENDER).test(r).expect("test") {
            assert_eq!(c.status.error, None);
            return;
        }
        sim.step().expect("step");
    }
    panic!("a send never completed");
}

#[test]
fn blocking_receives_keep_mpi_order_on_every_path() {
    let mut total = Paths::default();
    for seed in 0..24 {
        let p = run(seed);
        total.direct += p.direct;
        total.gave_way += p.gave_way;
    }
    // Both paths are exercised, or the test shows nothing.
    assert!(total.direct > 500, "{total:?}");
    assert!(total.gave_way > 100, "{total:?}");
}
