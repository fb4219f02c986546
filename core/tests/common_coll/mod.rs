//! Shared by the collective simulation tests: data, reference results,
//! a job of simulated ranks, and the checks of each operation.
#![allow(dead_code, unreachable_pub)]

use ferry_core::coll::{
    build, CollTable, CollTuning, Collective, Counts, Datatype, NodeTeam, ReduceOp, Team, UserOp,
};
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{Buf, Config, Device, Request};

/// An associative, non-commutative op on (a, b) pairs of i64: affine maps
/// composed left to right, `(a1, b1) ⊕ (a2, b2) = (a1·a2, b1·a2 + b2)`.
pub fn affine() -> ReduceOp {
    ReduceOp::User(UserOp::new(
        |input, inout| {
            for (i, o) in input.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
                let (a1, b1) = pair(i);
                let (a2, b2) = pair(o);
                let a = a1.wrapping_mul(a2);
                let b = b1.wrapping_mul(a2).wrapping_add(b2);
                o[..8].copy_from_slice(&a.to_ne_bytes());
                o[8..].copy_from_slice(&b.to_ne_bytes());
            }
        },
        false,
    ))
}

pub fn pair(b: &[u8]) -> (i64, i64) {
    (
        i64::from_ne_bytes(b[..8].try_into().unwrap()),
        i64::from_ne_bytes(b[8..16].try_into().unwrap()),
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Sum,
    Affine,
}

impl Op {
    pub fn op(self) -> ReduceOp {
        match self {
            Op::Sum => ReduceOp::Sum,
            Op::Affine => affine(),
        }
    }
    pub fn dtype(self) -> Datatype {
        match self {
            Op::Sum => Datatype::I64,
            Op::Affine => Datatype::Opaque { size: 16 },
        }
    }
    pub fn elem(self) -> usize {
        self.dtype().size()
    }
    /// `acc = acc ⊕ x`, on whole buffers.
    pub fn fold(self, acc: &mut [u8], x: &[u8]) {
        let mut tmp = x.to_vec();
        // reduce_into computes inout = input ⊕ inout.
        ferry_core::coll::reduce_into(&self.op(), self.dtype(), acc, &mut tmp).unwrap();
        acc.copy_from_slice(&tmp);
    }
}

/// Rank `r`'s data: `len` bytes that differ by rank, call and position.
pub fn data(r: u32, len: usize, salt: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 31 + r as u64 * 7 + salt * 13 + 1) as u8 | 1)
        .collect()
}

/// A rank's (output, input) after a collective.
pub type Bufs = (Option<Vec<u8>>, Option<Vec<u8>>);

pub struct Job {
    pub sim: Sim,
    pub n: u32,
    pub tuning: CollTuning,
    pub node: Option<std::sync::Arc<NodeTeam>>,
}

impl Job {
    pub fn new(n: u32, seed: u64, tuning: CollTuning) -> Job {
        let net = NetConfig::new(n as usize).with_seed(seed).with_delay(1, 9);
        Job {
            sim: Sim::new(net, Config::default()),
            n,
            tuning,
            node: None,
        }
    }

    /// A job whose ranks sit on nodes of `k`, with node collectives: every
    /// node's region attached (leaders first), so barrier, bcast, reduce
    /// and allreduce take the node and hierarchical algorithms.
    pub fn with_nodes(n: u32, k: u32, seed: u64, tuning: CollTuning) -> Job {
        let net = NetConfig::new(n as usize)
            .with_seed(seed)
            .with_delay(1, 9)
            .with_nodes(k as usize);
        let mut sim = Sim::new(net, Config::default());
        let nodes: Vec<Vec<u32>> = (0..n)
            .collect::<Vec<_>>()
            .chunks(k as usize)
            .map(<[u32]>::to_vec)
            .collect();
        let node_of: Vec<u32> = (0..n).map(|r| r / k).collect();
        for leader_first in [true, false] {
            for members in &nodes {
                let ranks: Vec<i32> = members.iter().map(|&r| r as i32).collect();
                for (i, &r) in members.iter().enumerate() {
                    if members.len() >= 2 && (i == 0) == leader_first {
                        let dev = sim
                            .engine(r as i32)
                            .device_mut()
                            .node()
                            .expect("sim node collectives");
                        dev.attach(1, &ranks, leader_first).unwrap();
                    }
                }
            }
        }
        Job {
            sim,
            n,
            tuning,
            node: Some(std::sync::Arc::new(NodeTeam {
                region: 1,
                node_of,
                nodes,
            })),
        }
    }

    pub fn team(&self, r: u32) -> Team {
        Team {
            context: 1,
            rank: r,
            size: self.n,
            job_ranks: None,
            node: self.node.clone(),
        }
    }

    /// Starts one collective on every rank (`bufs(r)` gives its input and
    /// output), runs the network to idle, and returns every rank's
    /// (output, input).
    pub fn run(
        &mut self,
        tag: i32,
        coll: impl Fn(u32) -> Collective,
        bufs: impl Fn(u32) -> Bufs,
    ) -> Vec<Bufs> {
        let table = CollTable::new(self.n, self.tuning);
        let mut reqs = Vec::new();
        for r in 0..self.n {
            let (i, o) = bufs(r);
            let sched = build(
                &self.team(r),
                tag,
                &table,
                coll(r),
                i.map(Buf::from),
                o.map(Buf::from),
            )
            .unwrap_or_else(|e| panic!("rank {r}: build: {e}"));
            let s = self.sim.engine(r as i32).start_coll(sched).unwrap();
            reqs.push(s);
        }
        self.sim.run_until_idle().unwrap();
        reqs.into_iter()
            .enumerate()
            .map(|(r, s)| {
                if s.request.is_empty() {
                    return (s.output.map(|b| b.to_vec()), s.input.map(|b| b.to_vec()));
                }
                let mut req = s.request;
                let done = self.sim.engine(r as i32).test(&mut req).unwrap();
                let done = done.unwrap_or_else(|| panic!("rank {r}: collective did not complete"));
                assert_eq!(done.status.error, None, "rank {r}");
                assert_eq!(req, Request::NULL);
                (done.buf.map(|b| b.to_vec()), done.input.map(|b| b.to_vec()))
            })
            .collect()
    }
}

pub fn reduce_all(op: Op, n: u32, upto: u32, len: usize, salt: u64) -> Vec<u8> {
    let mut acc = data(0, len, salt);
    for r in 1..upto.min(n) {
        op.fold(&mut acc, &data(r, len, salt));
    }
    acc
}

pub fn check_allreduce(job: &mut Job, op: Op, elems: usize, in_place: bool) {
    let (n, len) = (job.n, elems * op.elem());
    let out = job.run(
        1,
        |_| Collective::Allreduce {
            op: op.op(),
            dtype: op.dtype(),
        },
        |r| {
            if in_place {
                (None, Some(data(r, len, 1)))
            } else {
                (Some(data(r, len, 1)), Some(vec![0; len]))
            }
        },
    );
    let want = reduce_all(op, n, n, len, 1);
    for (r, (o, i)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &want,
            "allreduce rank {r} of {n}, {op:?}, {elems} elems"
        );
        if !in_place {
            assert_eq!(
                i.as_ref().unwrap(),
                &data(r as u32, len, 1),
                "input untouched"
            );
        }
    }
}

pub fn tunings() -> Vec<CollTuning> {
    let mut out = vec![CollTuning::default()];
    for (op, names) in [
        (
            "allreduce",
            &["recursive_doubling", "rabenseifner", "ring"][..],
        ),
        ("bcast", &["binomial", "scatter_allgather"][..]),
        ("allgather", &["recursive_doubling", "bruck", "ring"][..]),
        ("alltoall", &["pairwise", "bruck"][..]),
    ] {
        for name in names {
            let mut t = CollTuning::default();
            t.set(op, name).unwrap();
            out.push(t);
        }
    }
    out
}

pub fn check_rooted(job: &mut Job, root: u32, len: usize, salt: u64, op: Op) {
    let n = job.n;
    let nu = n as usize;
    // bcast
    let out = job.run(
        10,
        |_| Collective::Bcast { root },
        |r| {
            (
                None,
                Some(if r == root {
                    data(r, len, salt)
                } else {
                    vec![0; len]
                }),
            )
        },
    );
    for (r, (o, _)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &data(root, len, salt),
            "bcast rank {r} of {n} root {root}"
        );
    }
    // reduce
    let rlen = len / op.elem() * op.elem();
    let out = job.run(
        11,
        |_| Collective::Reduce {
            root,
            op: op.op(),
            dtype: op.dtype(),
        },
        |r| {
            (
                Some(data(r, rlen, salt)),
                (r == root).then(|| vec![0; rlen]),
            )
        },
    );
    assert_eq!(
        out[root as usize].0.as_ref().unwrap(),
        &reduce_all(op, n, n, rlen, salt),
        "reduce root {root} of {n} {op:?}"
    );
    // gather
    let out = job.run(
        12,
        |_| Collective::Gather { root, v: None },
        |r| {
            (
                Some(data(r, len, salt)),
                (r == root).then(|| vec![0; len * nu]),
            )
        },
    );
    let want: Vec<u8> = (0..n).flat_map(|r| data(r, len, salt)).collect();
    assert_eq!(
        out[root as usize].0.as_ref().unwrap(),
        &want,
        "gather root {root} of {n}"
    );
    // scatter
    let out = job.run(
        13,
        |_| Collective::Scatter { root, v: None },
        |r| ((r == root).then(|| want.clone()), Some(vec![0; len])),
    );
    for (r, (o, _)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &data(r as u32, len, salt),
            "scatter rank {r} root {root} of {n}"
        );
    }
    // gatherv / scatterv with uneven counts
    let counts: Vec<usize> = (0..n).map(|r| (r as usize * 3 + len) % 11).collect();
    let layout = Counts::packed(counts.clone());
    let total: usize = counts.iter().sum();
    let out = job.run(
        14,
        |_| Collective::Gather {
            root,
            v: Some(layout.clone()),
        },
        |r| {
            (
                Some(data(r, counts[r as usize], salt)),
                (r == root).then(|| vec![0; total]),
            )
        },
    );
    let wantv: Vec<u8> = (0..n)
        .flat_map(|r| data(r, counts[r as usize], salt))
        .collect();
    assert_eq!(
        out[root as usize].0.as_ref().unwrap(),
        &wantv,
        "gatherv root {root} of {n}"
    );
    let out = job.run(
        15,
        |_| Collective::Scatter {
            root,
            v: Some(layout.clone()),
        },
        |r| {
            (
                (r == root).then(|| wantv.clone()),
                Some(vec![0; counts[r as usize]]),
            )
        },
    );
    for (r, (o, _)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &data(r as u32, counts[r], salt),
            "scatterv rank {r}"
        );
    }
}

pub fn check_all_to_all(job: &mut Job, c: usize) {
    let n = job.n;
    let nu = n as usize;
    for in_place in [false, true] {
        let out = job.run(
            20,
            |_| Collective::Allgather { v: None },
            |r| {
                if in_place {
                    let mut o = vec![0; c * nu];
                    o[r as usize * c..][..c].copy_from_slice(&data(r, c, 2));
                    (None, Some(o))
                } else {
                    (Some(data(r, c, 2)), Some(vec![0; c * nu]))
                }
            },
        );
        let want: Vec<u8> = (0..n).flat_map(|r| data(r, c, 2)).collect();
        for (r, (o, _)) in out.iter().enumerate() {
            assert_eq!(
                o.as_ref().unwrap(),
                &want,
                "allgather rank {r} of {n}, block {c}, in place {in_place}"
            );
        }
        // alltoall: rank r's block for d is data(r * 100 + d)
        let block = |from: u32, to: u32| data(from * 100 + to, c, 3);
        let out = job.run(
            21,
            |_| Collective::Alltoall { v: None },
            |r| {
                let send: Vec<u8> = (0..n).flat_map(|d| block(r, d)).collect();
                if in_place {
                    (None, Some(send))
                } else {
                    (Some(send), Some(vec![0; c * nu]))
                }
            },
        );
        for (r, (o, _)) in out.iter().enumerate() {
            let want: Vec<u8> = (0..n).flat_map(|s| block(s, r as u32)).collect();
            assert_eq!(
                o.as_ref().unwrap(),
                &want,
                "alltoall rank {r} of {n}, block {c}"
            );
        }
    }
    // allgatherv and alltoallv with uneven counts
    let counts: Vec<usize> = (0..n).map(|r| (r as usize * 5 + c) % 7).collect();
    let layout = Counts::packed(counts.clone());
    let total: usize = counts.iter().sum();
    let out = job.run(
        22,
        |_| Collective::Allgather {
            v: Some(layout.clone()),
        },
        |r| (Some(data(r, counts[r as usize], 4)), Some(vec![0; total])),
    );
    let want: Vec<u8> = (0..n)
        .flat_map(|r| data(r, counts[r as usize], 4))
        .collect();
    for (o, _) in &out {
        assert_eq!(o.as_ref().unwrap(), &want, "allgatherv of {n}");
    }
    // rank s sends (s + d) % 4 bytes to d
    let cnt = |s: u32, d: u32| ((s + d) % 4) as usize;
    let out = job.run(
        23,
        |r| {
            let send = Counts::packed((0..n).map(|d| cnt(r, d)).collect());
            let recv = Counts::packed((0..n).map(|s| cnt(s, r)).collect());
            Collective::Alltoall {
                v: Some((send, recv)),
            }
        },
        |r| {
            let send: Vec<u8> = (0..n)
                .flat_map(|d| data(r * 100 + d, cnt(r, d), 5))
                .collect();
            let rtotal = (0..n).map(|s| cnt(s, r)).sum();
            (Some(send), Some(vec![0; rtotal]))
        },
    );
    for (r, (o, _)) in out.iter().enumerate() {
        let r = r as u32;
        let want: Vec<u8> = (0..n)
            .flat_map(|s| data(s * 100 + r, cnt(s, r), 5))
            .collect();
        assert_eq!(o.as_ref().unwrap(), &want, "alltoallv rank {r} of {n}");
    }
}

pub fn check_scans(job: &mut Job, op: Op, elems: usize) {
    let n = job.n;
    let len = elems * op.elem();
    for (exclusive, tag) in [(false, 30), (true, 31)] {
        let out = job.run(
            tag,
            |_| {
                if exclusive {
                    Collective::Exscan {
                        op: op.op(),
                        dtype: op.dtype(),
                    }
                } else {
                    Collective::Scan {
                        op: op.op(),
                        dtype: op.dtype(),
                    }
                }
            },
            |r| (Some(data(r, len, 6)), Some(vec![0xAA; len])),
        );
        for (r, (o, _)) in out.iter().enumerate() {
            let r = r as u32;
            let want = if exclusive {
                if r == 0 {
                    vec![0xAA; len]
                } else {
                    reduce_all(op, n, r, len, 6)
                }
            } else {
                reduce_all(op, n, r + 1, len, 6)
            };
            assert_eq!(
                o.as_ref().unwrap(),
                &want,
                "scan(exclusive {exclusive}) rank {r} of {n} {op:?}"
            );
        }
    }
    // reduce_scatter_block and reduce_scatter
    let block = len;
    let out = job.run(
        32,
        |_| Collective::ReduceScatter {
            counts: None,
            op: op.op(),
            dtype: op.dtype(),
        },
        |r| (Some(data(r, block * n as usize, 7)), Some(vec![0; block])),
    );
    let full = reduce_all(op, n, n, block * n as usize, 7);
    for (r, (o, _)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &full[r * block..][..block],
            "reduce_scatter_block rank {r} of {n} {op:?}"
        );
    }
    let counts: Vec<usize> = (0..n).map(|r| (r as usize % 3) * op.elem()).collect();
    let total: usize = counts.iter().sum();
    let out = job.run(
        33,
        |_| Collective::ReduceScatter {
            counts: Some(counts.clone()),
            op: op.op(),
            dtype: op.dtype(),
        },
        |r| (Some(data(r, total, 8)), Some(vec![0; counts[r as usize]])),
    );
    let full = reduce_all(op, n, n, total, 8);
    let layout = Counts::packed(counts.clone());
    for (r, (o, _)) in out.iter().enumerate() {
        assert_eq!(
            o.as_ref().unwrap(),
            &full[layout.displs[r]..][..counts[r]],
            "reduce_scatter rank {r} of {n}"
        );
    }
}
