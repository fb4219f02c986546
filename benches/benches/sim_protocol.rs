//! Criterion benchmarks of the protocol steps on the deterministic
//! simulator (`ferry_core::sim::Sim`, 2 ranks, zero-delay links): the
//! engine's whole per-message work, both sides, with no device cost
//! beyond the simulator's in-memory queues.
//!
//! - `sim_protocol/eager_8B`: one eager message (pre-posted receive).
//! - `sim_protocol/rndv_get_64KiB`: RTS, the receiver's RDMA get, FIN.
//! - `sim_protocol/fragmented_256KiB`: the fragmented copy protocol
//!   (`RndvMode::Fragmented`; the fragment is clamped to the simulated
//!   device's 16 KiB payload, so 16 fragments).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{Buf, Config, RndvMode};

fn one(sim: &mut Sim, send: &mut Option<Buf>, recv: &mut Option<Buf>) {
    let r = sim
        .engine(1)
        .irecv(0, 5, 0, recv.take().expect("receive buffer"))
        .expect("irecv");
    let s = sim
        .engine(0)
        .isend(1, 5, 0, send.take().expect("send buffer"))
        .expect("isend");
    let mut rr = r.request;
    *recv = sim.wait(1, &mut rr).expect("recv wait").buf;
    *send = match s.buf {
        Some(b) => Some(b),
        None => sim.wait(0, &mut { s.request }).expect("send wait").buf,
    };
    black_box(recv.as_ref());
}

fn sim_protocol(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_protocol");
    let fragmented = Config {
        rndv_mode: RndvMode::Fragmented,
        ..Config::default()
    };
    for (name, len, config) in [
        ("eager_8B", 8usize, Config::default()),
        (
            "rndv_get_64KiB",
            64 * 1024,
            Config {
                rndv_mode: RndvMode::Get,
                ..Config::default()
            },
        ),
        ("fragmented_256KiB", 256 * 1024, fragmented.clone()),
    ] {
        let mut sim = Sim::new(NetConfig::new(2).with_delay(0, 0), config);
        let mut send = Some(Buf::from_vec(vec![1; len]));
        let mut recv = Some(Buf::zeroed(len).expect("buffer"));
        // Check once that the protocol is the one named.
        one(&mut sim, &mut send, &mut recv);
        let gets = sim.net().borrow().rdma_stats().gets;
        assert_eq!(gets, u64::from(name.starts_with("rndv_get")), "{name}");
        assert_eq!(
            recv.as_ref().map(|b| b.as_slice()[len - 1]),
            Some(1),
            "{name}"
        );
        group.bench_function(name, |b| b.iter(|| one(&mut sim, &mut send, &mut recv)));
    }
    group.finish();
}

criterion_group!(benches, sim_protocol);
criterion_main!(benches);
