//! Neighborhood collectives over the simulation network: Cartesian grids
//! (periodic dimensions of one and two ranks, where both neighbors are the
//! same rank, and non-periodic edges with no neighbor) and directed graphs
//! with repeated edges, small blocks and blocks past the eager limit,
//! against results computed locally.

use std::sync::Arc;

use ferry_core::coll::{Collective, Counts, Neighbors, Pairing, NO_NEIGHBOR};

mod common_coll;
use common_coll::*;

/// The neighbors of `r` on a grid: per dimension the source, then the
/// destination of a shift by +1.
fn grid(r: u32, dims: &[u32], periodic: &[bool]) -> Vec<u32> {
    let mut coords = Vec::new();
    let mut rest = r;
    for &d in dims.iter().rev() {
        coords.push(rest % d);
        rest /= d;
    }
    coords.reverse();
    let rank = |c: &[u32]| c.iter().zip(dims).fold(0, |acc, (&x, &d)| acc * d + x);
    let mut out = Vec::new();
    for (k, (&d, &p)) in dims.iter().zip(periodic).enumerate() {
        for step in [-1i64, 1] {
            let x = i64::from(coords[k]) + step;
            let x = if p {
                x.rem_euclid(i64::from(d))
            } else if x < 0 || x >= i64::from(d) {
                out.push(NO_NEIGHBOR);
                continue;
            } else {
                x
            };
            let mut c = coords.clone();
            c[k] = x as u32;
            out.push(rank(&c));
        }
    }
    out
}

/// The block `from` sends in its `i`-th send.
fn block(from: u32, i: usize, len: usize) -> Vec<u8> {
    data(from * 64 + i as u32, len, 5)
}

/// Runs alltoall (and allgather) on `neighbors(r)` and checks every block
/// against what its sender sent, paired as `pair(r, j)` says: the sender
/// and the index of its send that lands in `r`'s block `j`.
fn check(
    job: &mut Job,
    neighbors: impl Fn(u32) -> Neighbors,
    pair: impl Fn(u32, usize) -> Option<(u32, usize)>,
    c: usize,
) {
    let n = job.n;
    for allgather in [false, true] {
        let nb: Vec<Arc<Neighbors>> = (0..n).map(|r| Arc::new(neighbors(r))).collect();
        let out = job.run(
            30 + i32::from(allgather),
            |r| {
                let nr = &nb[r as usize];
                Collective::Neighbor {
                    neighbors: nr.clone(),
                    send: (!allgather).then(|| Counts::packed(vec![c; nr.destinations.len()])),
                    recv: Counts::packed(vec![c; nr.sources.len()]),
                }
            },
            |r| {
                let nr = &nb[r as usize];
                let send: Vec<u8> = if allgather {
                    block(r, 0, c)
                } else {
                    (0..nr.destinations.len())
                        .flat_map(|i| block(r, i, c))
                        .collect()
                };
                (Some(send), Some(vec![0xEE; c * nr.sources.len()]))
            },
        );
        for (r, (o, _)) in out.iter().enumerate() {
            let o = o.as_ref().unwrap();
            for j in 0..nb[r].sources.len() {
                let want = match pair(r as u32, j) {
                    Some((s, i)) => block(s, if allgather { 0 } else { i }, c),
                    None => vec![0xEE; c],
                };
                assert_eq!(
                    &o[j * c..][..c],
                    &want[..],
                    "rank {r} of {n}, block {j}, {c} bytes, allgather {allgather}"
                );
            }
        }
    }
}

#[test]
fn cartesian_grids_pair_by_direction() {
    let shapes: [(&[u32], &[bool]); 7] = [
        (&[1], &[true]),
        (&[2], &[true]),
        (&[2], &[false]),
        (&[5], &[false]),
        (&[2, 2], &[true, true]),
        (&[3, 2], &[true, false]),
        (&[2, 1, 3], &[true, true, false]),
    ];
    for (dims, periodic) in shapes {
        let n: u32 = dims.iter().product();
        for c in [0, 8, 200_000] {
            let mut job = Job::new(n, 11 + n as u64, Default::default());
            let nb = |r| {
                let g = grid(r, dims, periodic);
                Neighbors {
                    sources: g.clone(),
                    destinations: g,
                    pairing: Pairing::Cartesian,
                }
            };
            // Block j of r comes from its neighbor j, which sent it
            // toward r: in the opposite direction (j ^ 1).
            let pair = |r, j: usize| {
                let s = grid(r, dims, periodic)[j];
                (s != NO_NEIGHBOR).then_some((s, j ^ 1))
            };
            check(&mut job, nb, pair, c);
        }
    }
}

#[test]
fn graphs_pair_repeated_edges_in_order() {
    // r sends to r+1, r+1 again and r+3 (mod n), and to itself.
    let n = 6u32;
    let dests = |r: u32| vec![(r + 1) % n, (r + 1) % n, (r + 3) % n, r];
    let sources = |r: u32| {
        let mut s = Vec::new();
        for from in 0..n {
            for &d in &dests(from) {
                if d == r {
                    s.push(from);
                }
            }
        }
        s
    };
    // The k-th block r receives from s is s's k-th send to r.
    let pair = |r: u32, j: usize| {
        let src = sources(r);
        let s = src[j];
        let k = src[..j].iter().filter(|&&x| x == s).count();
        let i = dests(s)
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d == r)
            .nth(k)
            .map(|(i, _)| i)
            .unwrap();
        Some((s, i))
    };
    for c in [3, 150_000] {
        let mut job = Job::new(n, 3, Default::default());
        let nb = |r| Neighbors {
            sources: sources(r),
            destinations: dests(r),
            pairing: Pairing::InOrder,
        };
        check(&mut job, nb, pair, c);
    }
}

#[test]
fn a_neighbor_outside_the_communicator_is_refused() {
    let job = Job::new(2, 1, Default::default());
    let table = ferry_core::coll::CollTable::new(2, Default::default());
    let coll = Collective::Neighbor {
        neighbors: Arc::new(Neighbors {
            sources: vec![2],
            destinations: vec![1],
            pairing: Pairing::InOrder,
        }),
        send: None,
        recv: Counts::packed(vec![4]),
    };
    let out = ferry_core::coll::build(
        &job.team(0),
        0,
        &table,
        coll,
        Some(ferry_core::Buf::from(vec![0; 4])),
        Some(ferry_core::Buf::from(vec![0; 4])),
    );
    assert!(matches!(
        out,
        Err(ferry_core::Error::Usage(
            ferry_core::UsageError::InvalidRank { rank: 2, size: 2 }
        ))
    ));
}
