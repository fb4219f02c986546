//! Distributed graph topologies (MPI 4.1 §8.5.4): each process knows
//! only its own edges. `MPI_Dist_graph_create_adjacent` is given them;
//! `MPI_Dist_graph_create` is given any edges by any process, and an
//! all-to-all exchange hands each edge to both its ends.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::*;
use crate::comm::topo::{topo_part, with_topology};
use crate::error::{Fail, Res};
use crate::ffi::args::{CommArray, Out, OutSlice, Weights};
use crate::state::rt;
use crate::topology::Topo;

/// A rank argument of the graph: one of the communicator's.
fn check_rank(r: c_int, size: c_int) -> Res<c_int> {
    if r < 0 || r >= size {
        return Err(Fail::msg(
            MPI_ERR_RANK,
            format!("invalid rank {r} in a graph of {size}"),
        ));
    }
    Ok(r)
}

/// A degree or count argument.
fn degree(n: c_int, what: &str) -> Res<usize> {
    usize::try_from(n).map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid {what} {n}")))
}

/// `n` weights, or 1s for an unweighted graph.
fn weights_of(w: Weights<'_>, n: usize) -> Res<(Vec<c_int>, bool)> {
    Ok(match w {
        Weights::Unweighted => (vec![1; n], false),
        Weights::Empty if n == 0 => (Vec::new(), true),
        Weights::Empty => {
            return Err(Fail::new(
                MPI_ERR_ARG,
                "MPI_WEIGHTS_EMPTY with a non-zero degree",
            ))
        }
        Weights::Given(a) => (a.entries(n, "weight")?.to_vec(), true),
    })
}

/// `MPI_Dist_graph_create_adjacent`: collective; this process's in- and
/// out-edges as given.
pub(crate) fn dist_graph_create_adjacent(
    comm_old: usize,
    indegree: c_int,
    sources: &[c_int],
    sourceweights: Weights<'_>,
    outdegree: c_int,
    destinations: &[c_int],
    destweights: Weights<'_>,
    info: usize,
    reorder: c_int,
    mut comm_dist_graph: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let size = rt.comm(comm_old)?.comm.size() as c_int;
    if info != MPI_INFO_NULL {
        crate::info::calls::check(info)?;
    }
    let (nin, nout) = (
        degree(indegree, "indegree")?,
        degree(outdegree, "outdegree")?,
    );
    let (sw, w1) = weights_of(sourceweights, nin)?;
    let (dw, w2) = weights_of(destweights, nout)?;
    let ends = |ranks: &[c_int], w: Vec<c_int>| -> Res<Vec<(c_int, c_int)>> {
        ranks
            .iter()
            .zip(w)
            .map(|(&r, w)| Ok((check_rank(r, size)?, w)))
            .collect()
    };
    let topo = Topo::DistGraph {
        sources: ends(sources, sw)?,
        destinations: ends(destinations, dw)?,
        weighted: w1 || w2,
    };
    with_topology(
        rt,
        comm_old,
        size as usize,
        reorder != 0,
        topo,
        &mut comm_dist_graph,
    )
}

/// `MPI_Dist_graph_create`: collective; the edges `sources[i] ->
/// destinations[...]` any process gives reach both their ends (an
/// all-to-all of counts, then of edges).
pub(crate) fn dist_graph_create(
    comm_old: usize,
    n: c_int,
    sources: &[c_int],
    degrees: &[c_int],
    destinations: CommArray<'_, c_int>,
    weights: Weights<'_>,
    info: usize,
    reorder: c_int,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm_old)?;
    if c.comm.is_inter() {
        return Err(Fail::new(
            MPI_ERR_COMM,
            "a topology needs an intracommunicator",
        ));
    }
    if info != MPI_INFO_NULL {
        crate::info::calls::check(info)?;
    }
    let size = c.comm.size() as c_int;
    degree(n, "number of sources")?;
    let mut total = 0usize;
    for &d in degrees {
        total += degree(d, "degree")?;
    }
    let dests = destinations.entries(total, "destination")?;
    let (w, weighted) = weights_of(weights, total)?;
    // Each edge goes to its source (as an out-edge) and its destination
    // (as an in-edge): [peer, weight, 1 = out / 0 = in].
    let mut per: Vec<Vec<c_int>> = vec![Vec::new(); size as usize];
    let mut at = 0;
    for (&s, &d) in sources.iter().zip(degrees) {
        let s = check_rank(s, size)?;
        for k in at..at + d as usize {
            let t = check_rank(dests[k], size)?;
            per[s as usize].extend([t, w[k], 1]);
            per[t as usize].extend([s, w[k], 0]);
        }
        at += d as usize;
    }
    let counts: Vec<c_int> = per.iter().map(|v| v.len() as c_int).collect();
    let mut got = vec![0 as c_int; size as usize];
    c.comm.alltoall(&counts, &mut got)?;
    let send: Vec<c_int> = per.concat();
    let displs = |v: &[c_int]| -> Vec<usize> {
        v.iter()
            .scan(0usize, |a, &x| {
                let d = *a;
                *a += x as usize;
                Some(d)
            })
            .collect()
    };
    let (sc, rc): (Vec<usize>, Vec<usize>) = (
        counts.iter().map(|&x| x as usize).collect(),
        got.iter().map(|&x| x as usize).collect(),
    );
    let mut recv = vec![0 as c_int; rc.iter().sum()];
    c.comm.alltoallv(
        (&send, &sc, &displs(&counts)),
        (&mut recv, &rc, &displs(&got)),
    )?;
    // Weights are the program's or none on every process alike; one
    // that gave edges tells.
    let mut any = [c_int::from(weighted && total > 0)];
    let mut all = [0 as c_int];
    c.comm.allreduce(&any, &mut all, &ferry::Op::max())?;
    any[0] = all[0];
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for e in recv.chunks_exact(3) {
        if e[2] == 1 {
            outs.push((e[0], e[1]));
        } else {
            ins.push((e[0], e[1]));
        }
    }
    let topo = Topo::DistGraph {
        sources: ins,
        destinations: outs,
        weighted: any[0] != 0 || weighted,
    };
    drop(c);
    with_topology(
        rt,
        comm_old,
        size as usize,
        reorder != 0,
        topo,
        &mut newcomm,
    )
}

/// A process's edges in a distributed graph: in, out, weighted.
type DistEdges = (Vec<(c_int, c_int)>, Vec<(c_int, c_int)>, bool);

/// The distributed graph of `comm`, or `MPI_ERR_TOPOLOGY`.
fn dist_of(comm: usize) -> Res<DistEdges> {
    topo_part(&*rt()?.comm(comm)?, "distributed graph", |t| match t {
        Topo::DistGraph {
            sources,
            destinations,
            weighted,
        } => Some((sources.clone(), destinations.clone(), *weighted)),
        _ => None,
    })
}

/// `MPI_Dist_graph_neighbors_count`.
pub(crate) fn dist_graph_neighbors_count(
    comm: usize,
    mut indegree: Out<'_, c_int>,
    mut outdegree: Out<'_, c_int>,
    mut weighted: Out<'_, c_int>,
) -> Res {
    let (ins, outs, w) = dist_of(comm)?;
    indegree.set(ins.len() as c_int)?;
    outdegree.set(outs.len() as c_int)?;
    weighted.set(c_int::from(w))
}

/// `MPI_Dist_graph_neighbors`: at most as many as the arrays hold;
/// weights unless the program passed `MPI_UNWEIGHTED`.
pub(crate) fn dist_graph_neighbors(
    comm: usize,
    maxindegree: c_int,
    mut sources: OutSlice<'_, c_int>,
    mut sourceweights: Option<OutSlice<'_, c_int>>,
    maxoutdegree: c_int,
    mut destinations: OutSlice<'_, c_int>,
    mut destweights: Option<OutSlice<'_, c_int>>,
) -> Res {
    let (ins, outs, _) = dist_of(comm)?;
    for (k, &(r, w)) in ins.iter().take(maxindegree.max(0) as usize).enumerate() {
        sources.set(k, r);
        if let Some(sw) = sourceweights.as_mut() {
            sw.set(k, w);
        }
    }
    for (k, &(r, w)) in outs.iter().take(maxoutdegree.max(0) as usize).enumerate() {
        destinations.set(k, r);
        if let Some(dw) = destweights.as_mut() {
            dw.set(k, w);
        }
    }
    Ok(())
}
