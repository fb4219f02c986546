//! Process topologies (MPI 4.1 chapter 8): Cartesian grids and graphs
//! (`MPI_Cart_*`, `MPI_Graph_*`, `MPI_Topo_test`, `MPI_Dims_create`;
//! distributed graphs are in `dist_graph`). A topology is data attached
//! to a new communicator (`crate::topology::Topo`); the constructors are
//! a split of the old one, so members beyond the topology's size get
//! `MPI_COMM_NULL`. With `reorder`, ranks that share a node get
//! consecutive new ranks (`node_key`), so a grid's neighbours along its
//! last dimensions are on one node where the placement allows.

use std::ffi::c_int;
use std::sync::Arc;

use ferry::{Comm, SplitType};

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::ffi::args::{CommArray, Out, OutSlice};
use crate::state::{lock, rt, CommObj, Runtime};
use crate::topology::Topo;

/// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced
/// factorisation, in non-increasing order. Local; callable before
/// `MPI_Init` too.
pub(crate) fn dims_create(nnodes: c_int, ndims: c_int, dims: &mut [c_int]) -> Res {
    if ndims < 0 {
        return Err(Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    crate::comm::dims::dims_create(nnodes, dims)
}

/// The topology of `c`, if any.
pub(crate) fn topo_of(c: &CommObj) -> Option<Arc<Topo>> {
    lock(&c.meta).topo.clone()
}

/// What `part` takes from `c`'s topology, or `MPI_ERR_TOPOLOGY` when it
/// has none of that kind (`kind` names it).
pub(crate) fn topo_part<T>(
    c: &CommObj,
    kind: &str,
    part: impl FnOnce(&Topo) -> Option<T>,
) -> Res<T> {
    topo_of(c).as_deref().and_then(part).ok_or_else(|| {
        Fail::msg(
            MPI_ERR_TOPOLOGY,
            format!("the communicator has no {kind} topology"),
        )
    })
}

/// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or
/// `MPI_UNDEFINED`.
pub(crate) fn topo_test(comm: usize, mut status: Out<'_, c_int>) -> Res {
    let c = rt()?.comm(comm)?;
    status.set(match topo_of(&c).as_deref() {
        Some(Topo::Cart { .. }) => MPI_CART,
        Some(Topo::Graph { .. }) => MPI_GRAPH,
        Some(Topo::DistGraph { .. }) => MPI_DIST_GRAPH,
        None => MPI_UNDEFINED,
    })
}

/// The key that orders ranks node by node (the node's lowest rank first,
/// then rank), for `reorder`: collective over `c`.
pub(crate) fn node_key(c: &Comm) -> Res<c_int> {
    let rank = c.rank();
    let lowest = match c.split_type(SplitType::Shared, rank)? {
        Some(node) => {
            let mut low = [0 as c_int];
            node.allreduce(&[rank], &mut low, &ferry::Op::min())?;
            low[0]
        }
        None => rank,
    };
    Ok(lowest
        .saturating_mul(c.size() as c_int)
        .saturating_add(rank))
}

/// Makes the communicator of a new topology from `comm`: the first `n`
/// ranks (in node order with `reorder`), `MPI_COMM_NULL` for the rest.
/// Collective over `comm`.
pub(crate) fn with_topology(
    rt: &Runtime,
    comm: usize,
    n: usize,
    reorder: bool,
    topo: Topo,
    out: &mut Out<'_, usize>,
) -> Res {
    let c = rt.comm(comm)?;
    if c.comm.is_inter() {
        return Err(Fail::new(
            MPI_ERR_COMM,
            "a topology needs an intracommunicator",
        ));
    }
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    let size = c.comm.size() as usize;
    if n > size {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("a topology of {n} processes on a communicator of {size}"),
        ));
    }
    // Every member takes part in both collectives, whatever its color.
    let key = if reorder && size > 1 {
        node_key(&c.comm)?
    } else {
        c.comm.rank()
    };
    let (color, key) = if reorder {
        // The member's place among all by node order decides who joins.
        let mut keys = vec![0 as c_int; size];
        c.comm.allgather(&[key], &mut keys)?;
        let place = keys.iter().filter(|&&k| k < key).count();
        (if place < n { 0 } else { ferry::UNDEFINED }, key)
    } else {
        (
            if (c.comm.rank() as usize) < n {
                0
            } else {
                ferry::UNDEFINED
            },
            key,
        )
    };
    let h = match c.comm.split(color, key)? {
        Some(new) => {
            let h = crate::comm::communicators::store_new(rt, &c, new)?;
            lock(&rt.comm(h)?.meta).topo = Some(Arc::new(topo));
            h
        }
        None => MPI_COMM_NULL,
    };
    out.set(h)
}

/// The Cartesian shape of `c`, or `MPI_ERR_TOPOLOGY`.
fn cart_of(c: &CommObj) -> Res<(Vec<c_int>, Vec<bool>)> {
    topo_part(c, "Cartesian", |t| match t {
        Topo::Cart { dims, periods } => Some((dims.clone(), periods.clone())),
        _ => None,
    })
}

/// Checks a Cartesian shape: its size.
fn cart_size(ndims: c_int, dims: &[c_int]) -> Res<usize> {
    if ndims < 0 {
        return Err(Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    dims.iter().try_fold(1usize, |n, &d| {
        if d <= 0 {
            return Err(Fail::msg(
                MPI_ERR_DIMS,
                format!("invalid dimension extent {d}"),
            ));
        }
        n.checked_mul(d as usize)
            .ok_or_else(|| Fail::new(MPI_ERR_DIMS, "the grid's size overflows"))
    })
}

/// `MPI_Cart_create`: collective; the first `prod(dims)` ranks make the
/// grid.
pub(crate) fn cart_create(
    comm_old: usize,
    ndims: c_int,
    dims: &[c_int],
    periods: &[c_int],
    reorder: c_int,
    mut comm_cart: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let n = cart_size(ndims, dims)?;
    let topo = Topo::Cart {
        dims: dims.to_vec(),
        periods: periods.iter().map(|&p| p != 0).collect(),
    };
    with_topology(rt, comm_old, n, reorder != 0, topo, &mut comm_cart)
}

/// `MPI_Cart_map`: this process's rank in such a grid (no reordering),
/// or `MPI_UNDEFINED` beyond it.
pub(crate) fn cart_map(
    comm: usize,
    ndims: c_int,
    dims: &[c_int],
    _periods: &[c_int],
    mut newrank: Out<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let n = cart_size(ndims, dims)?;
    if n > c.comm.size() as usize {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "the grid is larger than the communicator",
        ));
    }
    let r = c.comm.rank();
    newrank.set(if (r as usize) < n { r } else { MPI_UNDEFINED })
}

/// `MPI_Cartdim_get`.
pub(crate) fn cartdim_get(comm: usize, mut ndims: Out<'_, c_int>) -> Res {
    let (dims, _) = cart_of(&*rt()?.comm(comm)?)?;
    ndims.set(dims.len() as c_int)
}

/// `MPI_Cart_get`: shape, periodicity and this process's coordinates.
pub(crate) fn cart_get(
    comm: usize,
    maxdims: c_int,
    mut dims: OutSlice<'_, c_int>,
    mut periods: OutSlice<'_, c_int>,
    mut coords: OutSlice<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let (d, p) = cart_of(&c)?;
    if (maxdims.max(0) as usize) < d.len() {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!(
                "maxdims {maxdims} is below the grid's {} dimensions",
                d.len()
            ),
        ));
    }
    let mine = Topo::coords(&d, c.comm.rank());
    for i in 0..d.len() {
        dims.set(i, d[i]);
        periods.set(i, c_int::from(p[i]));
        coords.set(i, mine[i]);
    }
    Ok(())
}

/// `MPI_Cart_rank`: the rank at `coords` (periodic dimensions wrap; a
/// coordinate outside a non-periodic one is `MPI_ERR_ARG`).
pub(crate) fn cart_rank(
    comm: usize,
    coords: CommArray<'_, c_int>,
    mut rank: Out<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let (dims, periods) = cart_of(&c)?;
    let given = coords.entries(dims.len(), "coordinate")?;
    let mut at = Vec::with_capacity(dims.len());
    for i in 0..dims.len() {
        let (d, x) = (dims[i], given[i]);
        at.push(match (periods[i], x) {
            (_, x) if (0..d).contains(&x) => x,
            (true, x) => x.rem_euclid(d),
            (false, x) => {
                return Err(Fail::msg(
                    MPI_ERR_ARG,
                    format!("coordinate {x} is outside dimension {i} (extent {d}, not periodic)"),
                ))
            }
        });
    }
    rank.set(Topo::rank_at(&dims, &at))
}

/// `MPI_Cart_coords`.
pub(crate) fn cart_coords(
    comm: usize,
    rank: c_int,
    maxdims: c_int,
    mut coords: OutSlice<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let (dims, _) = cart_of(&c)?;
    if rank < 0 || rank >= c.comm.size() as c_int {
        return Err(Fail::msg(MPI_ERR_RANK, format!("invalid rank {rank}")));
    }
    if (maxdims.max(0) as usize) < dims.len() {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!(
                "maxdims {maxdims} is below the grid's {} dimensions",
                dims.len()
            ),
        ));
    }
    for (i, x) in Topo::coords(&dims, rank).into_iter().enumerate() {
        coords.set(i, x);
    }
    Ok(())
}

/// `MPI_Cart_shift`: the ranks `disp` steps back and forward along
/// `direction`; `MPI_PROC_NULL` past a non-periodic edge.
pub(crate) fn cart_shift(
    comm: usize,
    direction: c_int,
    disp: c_int,
    mut rank_source: Out<'_, c_int>,
    mut rank_dest: Out<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let (dims, periods) = cart_of(&c)?;
    let dir = usize::try_from(direction)
        .ok()
        .filter(|&d| d < dims.len())
        .ok_or_else(|| {
            Fail::msg(
                MPI_ERR_ARG,
                format!("invalid direction {direction} ({} dimensions)", dims.len()),
            )
        })?;
    let me = Topo::coords(&dims, c.comm.rank());
    let step = |by: i64| -> c_int {
        let (d, x) = (i64::from(dims[dir]), i64::from(me[dir]) + by);
        let x = match (periods[dir], (0..d).contains(&x)) {
            (_, true) => x,
            (true, false) => x.rem_euclid(d),
            (false, false) => return MPI_PROC_NULL,
        };
        let mut at = me.clone();
        at[dir] = x as c_int;
        Topo::rank_at(&dims, &at)
    };
    rank_source.set(step(-i64::from(disp)))?;
    rank_dest.set(step(i64::from(disp)))
}

/// `MPI_Cart_sub`: the grids of the dimensions `remain_dims` keeps, one
/// per position in the others (collective); with none kept, a
/// zero-dimensional grid of rank 0 alone (`MPI_COMM_NULL` elsewhere).
pub(crate) fn cart_sub(
    comm: usize,
    remain_dims: CommArray<'_, c_int>,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let (dims, periods) = cart_of(&c)?;
    let keep: Vec<bool> = remain_dims
        .entries(dims.len(), "remain_dims")?
        .iter()
        .map(|&k| k != 0)
        .collect();
    if newcomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    let me = Topo::coords(&dims, c.comm.rank());
    let part = |kept: bool| -> (Vec<c_int>, Vec<c_int>, Vec<bool>) {
        let mut d = Vec::new();
        let mut x = Vec::new();
        let mut p = Vec::new();
        for i in 0..dims.len() {
            if keep[i] == kept {
                d.push(dims[i]);
                x.push(me[i]);
                p.push(periods[i]);
            }
        }
        (d, x, p)
    };
    let (odims, ocoords, _) = part(false);
    let (kdims, kcoords, kperiods) = part(true);
    // No dimension kept: one zero-dimensional grid, of rank 0 alone (as
    // MPI_Cart_create with ndims 0 makes; MPICH's topo/cartsuball).
    let color = match kdims.is_empty() {
        true if c.comm.rank() != 0 => ferry::UNDEFINED,
        true => 0,
        false => Topo::rank_at(&odims, &ocoords),
    };
    let key = Topo::rank_at(&kdims, &kcoords);
    let Some(new) = c.comm.split(color, key)? else {
        return newcomm.set(MPI_COMM_NULL);
    };
    let h = crate::comm::communicators::store_new(rt, &c, new)?;
    lock(&rt.comm(h)?.meta).topo = Some(Arc::new(Topo::Cart {
        dims: kdims,
        periods: kperiods,
    }));
    newcomm.set(h)
}

/// Checks a graph's shape: its number of edges.
fn graph_edges(nnodes: c_int, index: &[c_int]) -> Res<usize> {
    if nnodes < 0 {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("invalid number of nodes {nnodes}"),
        ));
    }
    let mut last = 0;
    for &i in index {
        if i < last {
            return Err(Fail::new(MPI_ERR_ARG, "a graph's index must not decrease"));
        }
        last = i;
    }
    Ok(last as usize)
}

/// `MPI_Graph_create`: collective; the first `nnodes` ranks make the
/// graph; every edge must name one of them.
pub(crate) fn graph_create(
    comm_old: usize,
    nnodes: c_int,
    index: &[c_int],
    edges: CommArray<'_, c_int>,
    reorder: c_int,
    mut comm_graph: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let nedges = graph_edges(nnodes, index)?;
    let edges = edges.entries(nedges, "edge")?;
    if let Some(&e) = edges.iter().find(|&&e| e < 0 || e >= nnodes) {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("edge to {e}, outside a graph of {nnodes} nodes"),
        ));
    }
    let topo = Topo::Graph {
        index: index.to_vec(),
        edges: edges.to_vec(),
    };
    with_topology(
        rt,
        comm_old,
        nnodes as usize,
        reorder != 0,
        topo,
        &mut comm_graph,
    )
}

/// `MPI_Graph_map`: this process's rank in such a graph, or
/// `MPI_UNDEFINED` beyond it.
pub(crate) fn graph_map(
    comm: usize,
    nnodes: c_int,
    index: &[c_int],
    _edges: CommArray<'_, c_int>,
    mut newrank: Out<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    graph_edges(nnodes, index)?;
    if nnodes > c.comm.size() as c_int {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "the graph is larger than the communicator",
        ));
    }
    let r = c.comm.rank();
    newrank.set(if r < nnodes { r } else { MPI_UNDEFINED })
}

/// The graph of `c`, or `MPI_ERR_TOPOLOGY`.
fn graph_of(c: &CommObj) -> Res<(Vec<c_int>, Vec<c_int>)> {
    topo_part(c, "graph", |t| match t {
        Topo::Graph { index, edges } => Some((index.clone(), edges.clone())),
        _ => None,
    })
}

/// `MPI_Graphdims_get`.
pub(crate) fn graphdims_get(
    comm: usize,
    mut nnodes: Out<'_, c_int>,
    mut nedges: Out<'_, c_int>,
) -> Res {
    let (index, edges) = graph_of(&*rt()?.comm(comm)?)?;
    nnodes.set(index.len() as c_int)?;
    nedges.set(edges.len() as c_int)
}

/// `MPI_Graph_get`: as much of the index and edges as the arrays hold.
pub(crate) fn graph_get(
    comm: usize,
    maxindex: c_int,
    maxedges: c_int,
    mut index: OutSlice<'_, c_int>,
    mut edges: OutSlice<'_, c_int>,
) -> Res {
    let (i, e) = graph_of(&*rt()?.comm(comm)?)?;
    for (k, &v) in i.iter().take(maxindex.max(0) as usize).enumerate() {
        index.set(k, v);
    }
    for (k, &v) in e.iter().take(maxedges.max(0) as usize).enumerate() {
        edges.set(k, v);
    }
    Ok(())
}

/// Node `rank`'s neighbours in a graph.
fn neighbours(index: &[c_int], edges: &[c_int], rank: c_int) -> Res<Vec<c_int>> {
    let r = usize::try_from(rank)
        .ok()
        .filter(|&r| r < index.len())
        .ok_or_else(|| Fail::msg(MPI_ERR_RANK, format!("invalid rank {rank}")))?;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    Ok(edges[lo..index[r] as usize].to_vec())
}

/// `MPI_Graph_neighbors_count`.
pub(crate) fn graph_neighbors_count(
    comm: usize,
    rank: c_int,
    mut nneighbors: Out<'_, c_int>,
) -> Res {
    let (index, edges) = graph_of(&*rt()?.comm(comm)?)?;
    nneighbors.set(neighbours(&index, &edges, rank)?.len() as c_int)
}

/// `MPI_Graph_neighbors`: at most `maxneighbors` of them.
pub(crate) fn graph_neighbors(
    comm: usize,
    rank: c_int,
    maxneighbors: c_int,
    mut out: OutSlice<'_, c_int>,
) -> Res {
    let (index, edges) = graph_of(&*rt()?.comm(comm)?)?;
    for (k, &v) in neighbours(&index, &edges, rank)?
        .iter()
        .take(maxneighbors.max(0) as usize)
        .enumerate()
    {
        out.set(k, v);
    }
    Ok(())
}
