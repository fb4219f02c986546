//! The node and hierarchical collective schedules over the simulation
//! network, with ranks grouped into nodes whose members share a simulated
//! region (`ferry_core::sim`'s node collectives): barrier, bcast, reduce
//! and allreduce on one node, across nodes of 2 and 3 (a rank alone on
//! its node included), every root, commutative and non-commutative ops
//! (which take the point-to-point algorithms across nodes), against the
//! same references as the point-to-point tests, and a proptest.

mod common_coll;
use common_coll::*;

use ferry_core::coll::CollTuning;
use proptest::prelude::*;

fn check_node_job(n: u32, k: u32, seed: u64) {
    let mut job = Job::with_nodes(n, k, seed, CollTuning::default());
    for (op, elems) in [(Op::Sum, 1), (Op::Sum, 300), (Op::Affine, 3)] {
        for in_place in [false, true] {
            check_allreduce(&mut job, op, elems, in_place);
        }
    }
    for root in 0..n {
        check_rooted(&mut job, root, 24, u64::from(root), Op::Sum);
        check_rooted(&mut job, root, 32, 3, Op::Affine);
    }
}

#[test]
fn node_and_hierarchical_collectives_every_layout_and_root() {
    for n in 2..=8 {
        for k in [2, 3, n] {
            check_node_job(n, k, u64::from(n * 10 + k));
        }
    }
}

#[test]
fn a_barrier_across_nodes_waits_for_every_rank() {
    use ferry_core::coll::{build, CollTable, Collective};
    let (n, k) = (6, 2);
    let mut job = Job::with_nodes(n, k, 4, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let mut reqs = Vec::new();
    for r in 0..n - 1 {
        let s = build(&job.team(r), 9, &table, Collective::Barrier, None, None).unwrap();
        reqs.push(job.sim.engine(r as i32).start_coll(s).unwrap().request);
    }
    job.sim.run_until_idle().unwrap();
    for (r, q) in reqs.iter().enumerate() {
        assert!(
            !job.sim.engine(r as i32).is_complete(q).unwrap(),
            "rank {r} left early"
        );
    }
    let s = build(&job.team(n - 1), 9, &table, Collective::Barrier, None, None).unwrap();
    reqs.push(job.sim.engine(n as i32 - 1).start_coll(s).unwrap().request);
    job.sim.run_until_idle().unwrap();
    for (r, q) in reqs.iter().enumerate() {
        assert!(job.sim.engine(r as i32).is_complete(q).unwrap(), "rank {r}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]
    #[test]
    fn random_node_layouts_match_the_reference(
        n in 2u32..=8,
        k_pick in 1u32..=8,
        seed in any::<u64>(),
        elems in 0usize..40,
        root_pick in any::<u32>(),
        affine_op in any::<bool>(),
    ) {
        let k = k_pick.min(n).max(1);
        let op = if affine_op { Op::Affine } else { Op::Sum };
        let mut job = Job::with_nodes(n, k, seed, CollTuning::default());
        check_allreduce(&mut job, op, elems, seed % 2 == 0);
        check_rooted(&mut job, root_pick % n, elems * 8, seed % 7, op);
    }
}

#[test]
fn the_node_layout_takes_node_steps_and_heads_talk_point_to_point() {
    use ferry_core::coll::{build, CollTable, Collective, Datatype, ReduceOp, Step};
    let (n, k) = (6, 3);
    let job = Job::with_nodes(n, k, 1, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let steps = |r: u32, op: ReduceOp| {
        let coll = Collective::Allreduce {
            op,
            dtype: Datatype::I64,
        };
        let s = build(
            &job.team(r),
            0,
            &table,
            coll,
            None,
            Some(ferry_core::Buf::from(vec![0u8; 64])),
        )
        .unwrap();
        s.steps().to_vec()
    };
    let node = |s: &[Step]| s.iter().filter(|s| matches!(s, Step::Node { .. })).count();
    let p2p = |s: &[Step]| s.iter().filter(|s| matches!(s, Step::Send { .. })).count();
    let head = steps(0, ReduceOp::Sum);
    let member = steps(1, ReduceOp::Sum);
    assert_eq!(
        (node(&head), node(&member)),
        (2, 2),
        "reduce to the head, then bcast"
    );
    assert!(p2p(&head) > 0, "heads exchange point-to-point");
    assert_eq!(p2p(&member), 0, "other members only use the region");
    let non_commutative = steps(1, affine());
    assert_eq!(
        node(&non_commutative),
        0,
        "a non-commutative op across nodes goes point-to-point"
    );
}

/// The nonblocking node collectives of a communicator on one node
/// (`Engine::start_collective`, routed to one node step): they complete
/// with the right result, one freed while pending is still driven to its
/// end (so the members' next operation on the region is not stalled), and
/// the last member to arrive completes inside its call (`REQUEST_EMPTY`).
#[test]
fn single_node_requests_complete_and_survive_a_free() {
    use ferry_core::coll::{plan, CollTable, Collective, Datatype, ReduceOp, Route, Step};
    use ferry_core::device::NodeKind;
    use ferry_core::{Buf, Request};
    let n = 4u32;
    let mut job = Job::with_nodes(n, n, 7, CollTuning::default());
    let table = CollTable::new(n, CollTuning::default());
    let elems = 3;
    let value = |r: u32, i: usize| (r as i64 + 1) * 10 + i as i64;
    let input =
        |r: u32| -> Vec<u8> { (0..elems).flat_map(|i| value(r, i).to_le_bytes()).collect() };
    let allreduce = || Collective::Allreduce {
        op: ReduceOp::Sum,
        dtype: Datatype::I64,
    };
    // The route, and the one-step schedule it becomes.
    let team = job.team(0);
    let route = plan(team.node.as_deref(), 0, n, &allreduce(), Some(24), Some(24)).unwrap();
    assert!(matches!(route, Route::Node(op) if op.kind == NodeKind::Allreduce && op.len == 24));
    let sched = ferry_core::coll::build(
        &team,
        0,
        &table,
        allreduce(),
        Some(Buf::from(input(0))),
        Some(Buf::from(vec![0u8; elems * 8])),
    )
    .unwrap();
    let nodes = sched
        .steps()
        .iter()
        .filter(|s| matches!(s, Step::Node { .. }));
    assert_eq!(nodes.count(), 1);
    assert!(sched
        .steps()
        .iter()
        .all(|s| matches!(s, Step::Node { .. } | Step::Fence)));
    let mut reqs: Vec<Request> = Vec::new();
    for r in 0..n - 1 {
        let team = job.team(r);
        let started = job
            .sim
            .engine(r as i32)
            .start_collective(
                &team,
                &table,
                1,
                allreduce(),
                Some(Buf::from(input(r))),
                Some(Buf::from(vec![0u8; elems * 8])),
            )
            .unwrap();
        assert!(
            !started.request.is_empty(),
            "rank {r} cannot finish before the last member"
        );
        reqs.push(started.request);
    }
    job.sim.run_until_idle().unwrap();
    for (r, q) in reqs.iter().enumerate() {
        assert!(
            !job.sim.engine(r as i32).is_complete(q).unwrap(),
            "rank {r} left early"
        );
    }
    // Rank 1 frees its pending request; the operation must still run.
    job.sim.engine(1).free(&mut reqs[1]).unwrap();
    let team = job.team(n - 1);
    let last = job
        .sim
        .engine(n as i32 - 1)
        .start_collective(
            &team,
            &table,
            1,
            allreduce(),
            Some(Buf::from(input(n - 1))),
            Some(Buf::from(vec![0u8; elems * 8])),
        )
        .unwrap();
    job.sim.run_until_idle().unwrap();
    let want: Vec<u8> = (0..elems)
        .flat_map(|i| (0..n).map(|r| value(r, i)).sum::<i64>().to_le_bytes())
        .collect();
    for r in [0usize, 2] {
        let done = job
            .sim
            .engine(r as i32)
            .test(&mut reqs[r])
            .unwrap()
            .expect("complete");
        assert_eq!(done.status.error, None);
        assert_eq!(done.buf.unwrap().to_vec(), want, "rank {r}");
        assert!(done.input.is_some(), "the input comes back");
    }
    assert!(
        last.request.is_empty(),
        "the last member finishes inside its call"
    );
    assert_eq!(last.output.unwrap().to_vec(), want, "the last member");
    assert!(last.input.is_some(), "the last member's input comes back");
    // Every member, rank 1 included, can run the next operation.
    let mut barriers: Vec<Request> = (0..n)
        .map(|r| {
            let team = job.team(r);
            job.sim
                .engine(r as i32)
                .start_collective(&team, &table, 2, Collective::Barrier, None, None)
                .unwrap()
                .request
        })
        .collect();
    job.sim.run_until_idle().unwrap();
    for (r, q) in barriers.iter_mut().enumerate() {
        let done = job
            .sim
            .engine(r as i32)
            .test(q)
            .unwrap()
            .expect("barrier completes");
        assert_eq!(done.status.error, None, "rank {r}");
    }
    for r in 0..n {
        assert_eq!(
            job.sim.engine(r as i32).live_requests(),
            0,
            "rank {r}: nothing left behind"
        );
    }
}
