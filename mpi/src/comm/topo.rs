//! Process topologies (MPI 4.1 chapter 8): Cartesian grids and graphs
//! (`MPI_Cart_*`, `MPI_Graph_*`, `MPI_Topo_test`, `MPI_Dims_create`;
//! distributed graphs are in `dist_graph`). A topology is data attached
//! to a new communicator (`crate::topology::Topo`); the constructors are
//! a split of the old one (`ferry::Comm::topology_split`), so members
//! beyond the topology's size get `MPI_COMM_NULL`. With `reorder`, ranks
//! that share a node get consecutive new ranks, so a grid's neighbours
//! along its last dimensions are on one node where the placement allows.
//! A grid's arithmetic is ferry's (`ferry::topology::Cart`, the Rust
//! API's); this module gives its failures the standard's classes.

use std::ffi::c_int;
use std::sync::Arc;

use ferry::topology::Cart;

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::ffi::args::{CommArray, Out, OutSlice};
use crate::state::{lock, rt, CommObj, Runtime};
use crate::topology::Topo;

/// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced
/// factorisation, in non-increasing order (`ferry::topology::dims_create`).
/// Local; callable before `MPI_Init` too.
pub(crate) fn dims_create(nnodes: c_int, ndims: c_int, dims: &mut [c_int]) -> Res {
    if ndims < 0 {
        return Err(Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    if nnodes < 1 {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("invalid number of nodes {nnodes}"),
        ));
    }
    ferry::topology::dims_create(nnodes, dims).map_err(|e| Fail::msg(MPI_ERR_DIMS, e.to_string()))
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
        Some(Topo::Cart(_)) => MPI_CART,
        Some(Topo::Graph { .. }) => MPI_GRAPH,
        Some(Topo::DistGraph { .. }) => MPI_DIST_GRAPH,
        None => MPI_UNDEFINED,
    })
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
    let h = match c.comm.topology_split(n, reorder)? {
        Some(new) => {
            let h = crate::comm::communicators::store_new(rt, &c, new)?;
            lock(&rt.comm(h)?.meta).topo = Some(Arc::new(topo));
            h
        }
        None => MPI_COMM_NULL,
    };
    out.set(h)
}

/// The grid of `c`, or `MPI_ERR_TOPOLOGY`.
fn cart_of(c: &CommObj) -> Res<Cart> {
    topo_part(c, "Cartesian", |t| match t {
        Topo::Cart(cart) => Some(cart.clone()),
        _ => None,
    })
}

/// A failure of ferry's grid arithmetic as class `class` (the standard
/// gives each argument its own).
fn as_class(class: c_int) -> impl Fn(ferry::Error) -> Fail {
    move |e| Fail::msg(class, e.to_string())
}

/// The grid `ndims` extents and periodicities describe.
fn grid(ndims: c_int, dims: &[c_int], periods: &[c_int]) -> Res<Cart> {
    if ndims < 0 {
        return Err(Fail::msg(
            MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    let periods: Vec<bool> = periods.iter().map(|&p| p != 0).collect();
    Cart::new(dims, &periods).map_err(as_class(MPI_ERR_DIMS))
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
    let cart = grid(ndims, dims, periods)?;
    let n = cart.size();
    with_topology(
        rt,
        comm_old,
        n,
        reorder != 0,
        Topo::Cart(cart),
        &mut comm_cart,
    )
}

/// `MPI_Cart_map`: this process's rank in such a grid (no reordering),
/// or `MPI_UNDEFINED` beyond it.
pub(crate) fn cart_map(
    comm: usize,
    ndims: c_int,
    dims: &[c_int],
    periods: &[c_int],
    mut newrank: Out<'_, c_int>,
) -> Res {
    let c = rt()?.comm(comm)?;
    let n = grid(ndims, dims, periods)?.size();
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
    let cart = cart_of(&*rt()?.comm(comm)?)?;
    ndims.set(cart.dims().len() as c_int)
}

/// Checks an array length argument against the grid's dimensions.
fn room_for(maxdims: c_int, ndims: usize) -> Res {
    if (maxdims.max(0) as usize) < ndims {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("maxdims {maxdims} is below the grid's {ndims} dimensions"),
        ));
    }
    Ok(())
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
    let cart = cart_of(&c)?;
    room_for(maxdims, cart.dims().len())?;
    let mine = cart.coords(c.comm.rank()).map_err(as_class(MPI_ERR_RANK))?;
    for (i, (&d, &p)) in cart.dims().iter().zip(cart.periods()).enumerate() {
        dims.set(i, d);
        periods.set(i, c_int::from(p));
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
    let cart = cart_of(&*rt()?.comm(comm)?)?;
    let at = coords.entries(cart.dims().len(), "coordinate")?;
    rank.set(cart.rank_at(at).map_err(as_class(MPI_ERR_ARG))?)
}

/// `MPI_Cart_coords`.
pub(crate) fn cart_coords(
    comm: usize,
    rank: c_int,
    maxdims: c_int,
    mut coords: OutSlice<'_, c_int>,
) -> Res {
    let cart = cart_of(&*rt()?.comm(comm)?)?;
    let at = cart.coords(rank).map_err(as_class(MPI_ERR_RANK))?;
    room_for(maxdims, at.len())?;
    for (i, x) in at.into_iter().enumerate() {
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
    let cart = cart_of(&c)?;
    let dir = usize::try_from(direction).unwrap_or(usize::MAX);
    let (src, dst) = cart
        .shift(c.comm.rank(), dir, disp)
        .map_err(as_class(MPI_ERR_ARG))?;
    // ferry's PROC_NULL is not the ABI's.
    let out = |r: ferry::Rank| {
        if r == ferry::PROC_NULL {
            MPI_PROC_NULL
        } else {
            r
        }
    };
    rank_source.set(out(src))?;
    rank_dest.set(out(dst))
}

/// `MPI_Cart_sub`: the grids of the dimensions `remain_dims` keeps, one
/// per position in the others (collective); with none kept, a
/// zero-dimensional grid of rank 0 alone (`MPI_COMM_NULL` elsewhere, as
/// `MPI_Cart_create` with no dimension makes; MPICH's `topo/cartsuball`).
pub(crate) fn cart_sub(
    comm: usize,
    remain_dims: CommArray<'_, c_int>,
    mut newcomm: Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let cart = cart_of(&c)?;
    let keep: Vec<bool> = remain_dims
        .entries(cart.dims().len(), "remain_dims")?
        .iter()
        .map(|&k| k != 0)
        .collect();
    if newcomm.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null communicator pointer"));
    }
    let (kept, color, key) = cart
        .sub(c.comm.rank(), &keep)
        .map_err(as_class(MPI_ERR_ARG))?;
    let color = match kept.dims().is_empty() {
        true if c.comm.rank() != 0 => ferry::UNDEFINED,
        true => 0,
        false => color,
    };
    let Some(new) = c.comm.split(color, key)? else {
        return newcomm.set(MPI_COMM_NULL);
    };
    let h = crate::comm::communicators::store_new(rt, &c, new)?;
    lock(&rt.comm(h)?.meta).topo = Some(Arc::new(Topo::Cart(kept)));
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
    usize::try_from(rank)
        .ok()
        .and_then(|r| crate::topology::graph_row(index, edges, r))
        .map(<[c_int]>::to_vec)
        .ok_or_else(|| Fail::msg(MPI_ERR_RANK, format!("invalid rank {rank}")))
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
