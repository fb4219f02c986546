//! Collective schedules over the simulation network: every operation and
//! algorithm on 1 to 9 ranks, against results computed locally, with
//! delays that reorder traffic between pairs, many collectives outstanding
//! at once, and a proptest over sizes, roots, ops and seeds.

use ferry_core::coll::tune::{AllgatherAlgo, AllreduceAlgo, AlltoallAlgo, BcastAlgo};
use ferry_core::coll::{
    build, CollTable, CollTuning, Collective, Counts, Datatype, ReduceOp, Team, UserOp,
};
use ferry_core::sim::{NetConfig, Sim};
use ferry_core::{Buf, Config, Request};
use proptest::prelude::*;

/// An associative, non-commutative op on (a, b) pairs of i64: affine maps
/// composed left to right, `(a1, b1) ⊕ (a2, b2) = (a1·a2, b1·a2 + b2)`.
fn affine() -> ReduceOp {
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

fn pair(b: &[u8]) -> (i64, i64) {
    (
        i64::from_ne_bytes(b[..8].try_into().unwrap()),
        i64::from_ne_bytes(b[8..16].try_into().unwrap()),
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Affine,
}

impl Op {
    fn op(self) -> ReduceOp {
        match self {
            Op::Sum => ReduceOp::Sum,
            Op::Affine => affine(),
        }
    }
    fn dtype(self) -> Datatype {
        match self {
            Op::Sum => Datatype::I64,
            Op::Affine => Datatype::Opaque { size: 16 },
        }
    }
    fn elem(self) -> usize {
        self.dtype().size()
    }
    /// `acc = acc ⊕ x`, on whole buffers.
    fn fold(self, acc: &mut [u8], x: &[u8]) {
        let mut tmp = x.to_vec();
        // reduce_into computes inout = input ⊕ inout.
        ferry_core::coll::reduce_into(&self.op(), self.dtype(), acc, &mut tmp).unwrap();
        acc.copy_from_slice(&tmp);
    }
}

/// Rank `r`'s data: `len` bytes that differ by rank, call and position.
fn data(r: u32, len: usize, salt: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 31 + r as u64 * 7 + salt * 13 + 1) as u8 | 1)
        .collect()
}

/// A rank's (output, input) after a collective.
type Bufs = (Option<Vec<u8>>, Option<Vec<u8>>);

struct Job {
    sim: Sim,
    n: u32,
    tuning: CollTuning,
}

impl Job {
    fn new(n: u32, seed: u64, tuning: CollTuning) -> Job {
        let net = NetConfig::new(n as usize).with_seed(seed).with_delay(1, 9);
        Job {
            sim: Sim::new(net, Config::default()),
            n,
            tuning,
        }
    }

    fn team(&self, r: u32) -> Team {
        Team {
            context: 1,
            rank: r,
            size: self.n,
            job_ranks: None,
            node: None,
        }
    }

    /// Starts one collective on every rank (`bufs(r)` gives its input and
    /// output), runs the network to idle, and returns every rank's
    /// (output, input).
    fn run(
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

fn reduce_all(op: Op, n: u32, upto: u32, len: usize, salt: u64) -> Vec<u8> {
    let mut acc = data(0, len, salt);
    for r in 1..upto.min(n) {
        op.fold(&mut acc, &data(r, len, salt));
    }
    acc
}

fn check_allreduce(job: &mut Job, op: Op, elems: usize, in_place: bool) {
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

fn tunings() -> Vec<CollTuning> {
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

#[test]
fn allreduce_every_algorithm_size_and_op() {
    for t in tunings()
        .into_iter()
        .filter(|t| t.allreduce.is_some() || *t == CollTuning::default())
    {
        for n in 1..=9 {
            for (op, elems) in [
                (Op::Sum, 1),
                (Op::Sum, 13),
                (Op::Sum, 1000),
                (Op::Affine, 5),
            ] {
                for in_place in [false, true] {
                    let mut job = Job::new(n, n as u64, t);
                    check_allreduce(&mut job, op, elems, in_place);
                }
            }
        }
    }
}

#[test]
fn forced_algorithms_run_as_asked() {
    let mut t = CollTuning::default();
    t.set("allreduce", "ring").unwrap();
    assert_eq!(
        CollTable::new(5, t).allreduce(800, 100, true),
        AllreduceAlgo::Ring
    );
    t.set("bcast", "scatter_allgather").unwrap();
    assert_eq!(CollTable::new(5, t).bcast(8), BcastAlgo::ScatterAllgather);
    t.set("allgather", "bruck").unwrap();
    assert_eq!(
        CollTable::new(5, t).allgather(8, true),
        AllgatherAlgo::Bruck
    );
    t.set("alltoall", "bruck").unwrap();
    assert_eq!(CollTable::new(5, t).alltoall(8, true), AlltoallAlgo::Bruck);
}

fn check_rooted(job: &mut Job, root: u32, len: usize, salt: u64, op: Op) {
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

#[test]
fn rooted_collectives_every_size_and_root() {
    for t in tunings() {
        for n in 1..=8 {
            for root in [0, n / 2, n - 1] {
                let mut job = Job::new(n, 7 + n as u64, t);
                check_rooted(&mut job, root, 37, root as u64, Op::Sum);
                check_rooted(&mut job, root, 32, 1, Op::Affine);
            }
        }
    }
}

fn check_all_to_all(job: &mut Job, c: usize) {
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

#[test]
fn allgather_and_alltoall_every_algorithm() {
    for t in tunings() {
        for n in 1..=8 {
            for c in [0, 1, 24] {
                let mut job = Job::new(n, 3 * n as u64, t);
                check_all_to_all(&mut job, c);
            }
        }
    }
}

fn check_scans(job: &mut Job, op: Op, elems: usize) {
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

#[test]
fn scans_and_reduce_scatter() {
    for n in 1..=8 {
        for (op, elems) in [(Op::Sum, 3), (Op::Affine, 2)] {
            let mut job = Job::new(n, 11 * n as u64, CollTuning::default());
            check_scans(&mut job, op, elems);
        }
    }
}

#[test]
fn barrier_completes_only_when_every_rank_entered() {
    for n in 2..=7 {
        let mut job = Job::new(n, n as u64, CollTuning::default());
        let table = CollTable::new(n, CollTuning::default());
        let mut reqs = Vec::new();
        for r in 0..n - 1 {
            let s = build(&job.team(r), 40, &table, Collective::Barrier, None, None).unwrap();
            reqs.push(job.sim.engine(r as i32).start_coll(s).unwrap().request);
        }
        job.sim.run_until_idle().unwrap();
        for (r, q) in reqs.iter().enumerate() {
            assert!(
                !job.sim.engine(r as i32).is_complete(q).unwrap(),
                "rank {r} left the barrier early"
            );
        }
        let s = build(
            &job.team(n - 1),
            40,
            &table,
            Collective::Barrier,
            None,
            None,
        )
        .unwrap();
        reqs.push(job.sim.engine(n as i32 - 1).start_coll(s).unwrap().request);
        job.sim.run_until_idle().unwrap();
        for (r, q) in reqs.iter().enumerate() {
            assert!(job.sim.engine(r as i32).is_complete(q).unwrap());
        }
    }
}

#[test]
fn many_outstanding_collectives_keep_apart_by_tag() {
    let n = 5;
    let mut job = Job::new(n, 99, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let len = 64;
    let mut reqs: Vec<Vec<Request>> = vec![Vec::new(); n as usize];
    // Ranks start the 12 allreduces in the same order but at different
    // times relative to the traffic.
    for tag in 0..12 {
        for r in 0..n {
            let s = build(
                &job.team(r),
                tag,
                &table,
                Collective::Allreduce {
                    op: ReduceOp::Sum,
                    dtype: Datatype::I64,
                },
                Some(Buf::from(data(r, len, tag as u64))),
                Some(Buf::from(vec![0; len])),
            )
            .unwrap();
            reqs[r as usize].push(job.sim.engine(r as i32).start_coll(s).unwrap().request);
            if r == tag as u32 % n {
                job.sim.step().unwrap();
            }
        }
    }
    job.sim.run_until_idle().unwrap();
    for r in 0..n {
        for (tag, q) in reqs[r as usize].iter_mut().enumerate() {
            let done = job.sim.engine(r as i32).test(q).unwrap().expect("complete");
            assert_eq!(
                done.buf.unwrap().to_vec(),
                reduce_all(Op::Sum, n, n, len, tag as u64)
            );
        }
    }
}

#[test]
fn persistent_allreduce_runs_again_without_rebuilding() {
    let n = 4;
    let mut job = Job::new(n, 5, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let len = 8 * 16;
    let mut reqs = Vec::new();
    for r in 0..n {
        let s = build(
            &job.team(r),
            50,
            &table,
            Collective::Allreduce {
                op: ReduceOp::Sum,
                dtype: Datatype::I64,
            },
            None,
            Some(Buf::from(data(r, len, 0))),
        )
        .unwrap();
        reqs.push(job.sim.engine(r as i32).coll_init(s));
    }
    for round in 0..3u64 {
        for r in 0..n {
            let e = job.sim.engine(r as i32);
            let (_, out) = e.coll_buffers_mut(&reqs[r as usize]).unwrap();
            out.unwrap()
                .as_mut_slice()
                .copy_from_slice(&data(r, len, round));
            e.start(&reqs[r as usize]).unwrap();
        }
        job.sim.run_until_idle().unwrap();
        for r in 0..n {
            let e = job.sim.engine(r as i32);
            let mut q = reqs[r as usize];
            let done = e.test(&mut q).unwrap().expect("complete");
            assert_eq!(done.status.error, None);
            assert_eq!(q, reqs[r as usize], "persistent requests stay valid");
            let (_, out) = e.coll_buffers_mut(&q).unwrap();
            assert_eq!(
                out.unwrap().to_vec(),
                reduce_all(Op::Sum, n, n, len, round),
                "round {round}"
            );
        }
    }
    for r in 0..n {
        let e = job.sim.engine(r as i32);
        e.free(&mut reqs[r as usize]).unwrap();
        assert_eq!(
            e.live_requests(),
            0,
            "rank {r}: freeing the persistent request frees its schedule"
        );
    }
}

#[test]
fn mismatched_counts_fail_with_a_typed_error_not_a_hang() {
    let n = 2;
    let mut job = Job::new(n, 1, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let mut reqs = Vec::new();
    for r in 0..n {
        let len = if r == 0 { 8 } else { 16 };
        let s = build(
            &job.team(r),
            60,
            &table,
            Collective::Bcast { root: 0 },
            None,
            Some(Buf::from(vec![0; len])),
        )
        .unwrap();
        reqs.push(job.sim.engine(r as i32).start_coll(s).unwrap().request);
    }
    job.sim.run_until_idle().unwrap();
    let done = job
        .sim
        .engine(1)
        .test(&mut reqs[1])
        .unwrap()
        .expect("rank 1 completes");
    assert!(
        matches!(
            done.status.error,
            Some(ferry_core::Error::Usage(
                ferry_core::UsageError::LengthMismatch(_)
            ))
        ),
        "{:?}",
        done.status
    );
}

#[test]
fn bad_arguments_are_typed_errors() {
    let table = CollTable::new(4, CollTuning::default());
    let team = Team {
        context: 1,
        rank: 0,
        size: 4,
        job_ranks: None,
        node: None,
    };
    let bad_root = build(
        &team,
        0,
        &table,
        Collective::Bcast { root: 4 },
        None,
        Some(Buf::from(vec![0; 4])),
    );
    assert!(matches!(
        bad_root,
        Err(ferry_core::Error::Usage(
            ferry_core::UsageError::InvalidRank { .. }
        ))
    ));
    let short = build(
        &team,
        0,
        &table,
        Collective::Allreduce {
            op: ReduceOp::Sum,
            dtype: Datatype::I64,
        },
        Some(Buf::from(vec![0; 16])),
        Some(Buf::from(vec![0; 8])),
    );
    assert!(matches!(
        short,
        Err(ferry_core::Error::Usage(
            ferry_core::UsageError::LengthMismatch(_)
        ))
    ));
    let ragged = build(
        &team,
        0,
        &table,
        Collective::Allreduce {
            op: ReduceOp::Sum,
            dtype: Datatype::I64,
        },
        None,
        Some(Buf::from(vec![0; 12])),
    );
    assert!(ragged.is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_collectives_match_the_reference(
        n in 1u32..=8,
        seed in any::<u64>(),
        elems in 0usize..40,
        root_pick in any::<u32>(),
        affine_op in any::<bool>(),
        tuning in 0usize..10,
    ) {
        let t = tunings()[tuning % tunings().len()];
        let op = if affine_op { Op::Affine } else { Op::Sum };
        let mut job = Job::new(n, seed, t);
        check_allreduce(&mut job, op, elems, seed % 2 == 0);
        check_rooted(&mut job, root_pick % n, elems * 8, seed % 7, op);
        check_scans(&mut job, op, elems.min(5));
    }
}

#[test]
fn a_member_that_dies_fails_the_collective_on_every_survivor() {
    // Ring allreduce on 5 ranks: rank 2 dies before it enters. Ranks that
    // never exchange a message with it (0 and 4 in the first rounds) must
    // fail too, naming it, instead of waiting for partners that gave up.
    let n = 5;
    let mut t = CollTuning::default();
    t.set("allreduce", "ring").unwrap();
    let mut job = Job::new(n, 3, t);
    let table = CollTable::new(n, t);
    let len = 8 * 64;
    let mut reqs = Vec::new();
    for r in [0, 1, 3, 4] {
        let s = build(
            &job.team(r),
            70,
            &table,
            Collective::Allreduce {
                op: ReduceOp::Sum,
                dtype: Datatype::I64,
            },
            None,
            Some(Buf::from(data(r, len, 0))),
        )
        .unwrap();
        reqs.push((r, job.sim.engine(r as i32).start_coll(s).unwrap().request));
    }
    job.sim.run_until_idle().unwrap();
    job.sim.kill(2);
    job.sim.run_until_idle().unwrap();
    for (r, mut q) in reqs {
        let done = job.sim.engine(r as i32).test(&mut q).unwrap();
        let done = done.unwrap_or_else(|| panic!("rank {r} still waits for a dead member"));
        assert_eq!(
            done.status.error,
            Some(ferry_core::PeerError::Died { rank: 2 }.into()),
            "rank {r}"
        );
        assert!(done.buf.is_some(), "rank {r}: the buffer comes back");
    }
}

#[test]
fn any_source_receives_fail_when_a_member_of_their_communicator_dies() {
    let mut job = Job::new(4, 1, CollTuning::default());
    // Context 8 holds ranks 0, 1, 3; context 12 holds 0 and 1 only.
    for r in 0..4 {
        let e = job.sim.engine(r);
        e.set_context_members(8, vec![0, 1, 3].into());
        e.set_context_members(12, vec![0, 1].into());
    }
    let e = job.sim.engine(0);
    let mut on_world = e
        .irecv(ferry_core::ANY_SOURCE, 1, 0, Buf::zeroed(4).unwrap())
        .unwrap()
        .request;
    let mut on_8 = e
        .irecv(ferry_core::ANY_SOURCE, 1, 8, Buf::zeroed(4).unwrap())
        .unwrap()
        .request;
    let mut on_12 = e
        .irecv(ferry_core::ANY_SOURCE, 1, 12, Buf::zeroed(4).unwrap())
        .unwrap()
        .request;
    job.sim.kill(3);
    job.sim.run_until_idle().unwrap();
    let e = job.sim.engine(0);
    let pending = Some(ferry_core::PeerError::FailedPending { rank: 3 }.into());
    for (name, q) in [("world", &mut on_world), ("context 8", &mut on_8)] {
        let done = e
            .test(q)
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: still waiting"));
        assert_eq!(done.status.error, pending, "{name}");
        assert_eq!(
            done.buf.map(|b| b.len()),
            Some(4),
            "{name}: buffer handed back"
        );
    }
    assert!(
        e.test(&mut on_12).unwrap().is_none(),
        "a communicator without rank 3 keeps waiting"
    );
    // A new ANY_SOURCE receive on an affected communicator fails at once.
    let mut late = e
        .irecv(ferry_core::ANY_SOURCE, 2, 8, Buf::zeroed(4).unwrap())
        .unwrap()
        .request;
    let done = e.test(&mut late).unwrap().expect("fails inside the call");
    assert_eq!(done.status.error, pending);
    e.cancel(&on_12).unwrap();
}
