//! Collective schedules over the simulation network: every operation and
//! algorithm on 1 to 9 ranks, against results computed locally, with
//! delays that reorder traffic between pairs, many collectives outstanding
//! at once, and a proptest over sizes, roots, ops and seeds.

use ferry_core::coll::tune::{AllgatherAlgo, AllreduceAlgo, AlltoallAlgo, BcastAlgo};
use ferry_core::coll::{build, CollTable, CollTuning, Collective, Datatype, ReduceOp, Team};
use ferry_core::{Buf, Request};
use proptest::prelude::*;

mod common_coll;
use common_coll::*;

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

/// Runs one collective per rank, `call(rank)` giving its arguments, until
/// the network is idle; every rank must have completed. Returns each rank's
/// error (`None`: it completed).
fn run_disagreeing(
    n: u32,
    call: impl Fn(u32) -> (Collective, Option<Buf>, Option<Buf>),
) -> Vec<Option<ferry_core::Error>> {
    let mut job = Job::new(n, 1, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let mut reqs = Vec::new();
    for r in 0..n {
        let (coll, input, output) = call(r);
        let s = build(&job.team(r), 60, &table, coll, input, output).unwrap();
        reqs.push(job.sim.engine(r as i32).start_coll(s).unwrap().request);
    }
    job.sim.run_until_idle().unwrap();
    (0..n)
        .map(|r| {
            let done = job
                .sim
                .engine(r as i32)
                .test(&mut reqs[r as usize])
                .unwrap()
                .unwrap_or_else(|| panic!("rank {r} of {n} hangs"));
            done.status.error
        })
        .collect()
}

fn is_mismatch(e: &Option<ferry_core::Error>) -> bool {
    matches!(
        e,
        Some(ferry_core::Error::Usage(
            ferry_core::UsageError::CollectiveMismatch { .. }
        ))
    )
}

#[test]
fn mismatched_counts_fail_with_a_typed_error_not_a_hang() {
    for n in [2, 3, 5, 8] {
        // The root broadcasts 8 bytes to members expecting 16.
        let errors = run_disagreeing(n, |r| {
            let len = if r == 0 { 8 } else { 16 };
            (
                Collective::Bcast { root: 0 },
                None,
                Some(Buf::from(vec![0; len])),
            )
        });
        assert!(
            errors[1..].iter().all(is_mismatch),
            "bcast, n = {n}: {errors:?}"
        );
        // One member's allreduce count differs: nobody can finish.
        let errors = run_disagreeing(n, |r| {
            let len = if r == n - 1 { 16 } else { 8 };
            let coll = Collective::Allreduce {
                op: ReduceOp::Sum,
                dtype: Datatype::I64,
            };
            (
                coll,
                Some(Buf::from(vec![1; len])),
                Some(Buf::from(vec![0; len])),
            )
        });
        assert!(
            errors.iter().all(is_mismatch),
            "allreduce, n = {n}: {errors:?}"
        );
    }
}

#[test]
fn mismatched_roots_fail_with_a_typed_error_not_a_hang() {
    for n in [3, 4, 7] {
        // The last member names root 1, the others root 0: it waits for
        // a forward from rank 1 that never comes.
        let errors = run_disagreeing(n, |r| {
            let root = if r == n - 1 { 1 } else { 0 };
            (
                Collective::Bcast { root },
                None,
                Some(Buf::from(vec![0; 8])),
            )
        });
        assert!(is_mismatch(&errors[n as usize - 1]), "n = {n}: {errors:?}");
        assert!(
            errors.iter().all(|e| e.is_none() || is_mismatch(e)),
            "n = {n}: {errors:?}"
        );
        // A reduce to different roots: whether anyone can tell depends on
        // who sends to whom, but no rank may hang or fail untyped.
        let errors = run_disagreeing(n, |r| {
            let root = if r == 0 { 1 } else { 0 };
            let coll = Collective::Reduce {
                root,
                op: ReduceOp::Sum,
                dtype: Datatype::I64,
            };
            (
                coll,
                Some(Buf::from(vec![1; 8])),
                Some(Buf::from(vec![0; 8])),
            )
        });
        assert!(
            errors.iter().all(|e| e.is_none() || is_mismatch(e)),
            "reduce, n = {n}: {errors:?}"
        );
    }
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
