//! Cartesian process topologies (MPI 4.1 §8.5) for the Rust API: a grid's
//! shape and the arithmetic on it ([`Cart`]), a communicator that carries
//! one ([`CartComm`], from [`Comm::cart`]), and [`dims_create`]. The MPI
//! C ABI keeps its own topology records (graphs too) but does its grid
//! arithmetic here.
//!
//! Ranks are row-major: rank `r` has the coordinates of `r` in the grid,
//! the last dimension varying fastest. With `reorder`, the members of a
//! node get consecutive ranks ([`Comm::topology_split`]), so a grid's
//! neighbours along its last dimension share a node where the placement
//! allows.

mod dims;
mod neighbor;

use std::sync::Arc;

pub use dims::dims_create;
pub use neighbor::{DistGraphComm, Neighborhood};

use crate::comm::Comm;
use crate::create::SplitType;
use crate::error::{ApiError, Result};
use crate::Op;
use ferry_core::{Rank, PROC_NULL};

/// A Cartesian grid's shape: extents and periodicity per dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    dims: Vec<i32>,
    periods: Vec<bool>,
}

/// The error of a shape that makes no grid.
fn bad(why: String) -> crate::error::Error {
    ApiError::InvalidTopology(why).into()
}

impl Cart {
    /// A grid of `dims` (each at least 1), periodic where `periods` says.
    ///
    /// # Errors
    /// [`ApiError::InvalidTopology`] for lengths that differ, an extent
    /// below 1, or a size that overflows.
    pub fn new(dims: &[i32], periods: &[bool]) -> Result<Cart> {
        if dims.len() != periods.len() {
            return Err(bad(format!(
                "{} extents and {} periodicities",
                dims.len(),
                periods.len()
            )));
        }
        let cart = Cart {
            dims: dims.to_vec(),
            periods: periods.to_vec(),
        };
        cart.checked_size()?;
        Ok(cart)
    }

    fn checked_size(&self) -> Result<usize> {
        self.dims.iter().try_fold(1usize, |n, &d| {
            let d = usize::try_from(d)
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| bad(format!("invalid dimension extent {d}")))?;
            n.checked_mul(d)
                .ok_or_else(|| bad("the grid's size overflows".into()))
        })
    }

    /// The extents.
    pub fn dims(&self) -> &[i32] {
        &self.dims
    }

    /// The periodicities.
    pub fn periods(&self) -> &[bool] {
        &self.periods
    }

    /// Number of processes in the grid (1 for no dimension).
    pub fn size(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// The coordinates of `rank`.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] outside the grid.
    pub fn coords(&self, rank: Rank) -> Result<Vec<i32>> {
        let size = self.size();
        if rank < 0 || rank as usize >= size {
            return Err(ApiError::InvalidRank {
                rank,
                size: u32::try_from(size).unwrap_or(u32::MAX),
            }
            .into());
        }
        let mut out = vec![0; self.dims.len()];
        let mut r = rank;
        for (i, &d) in self.dims.iter().enumerate().rev() {
            out[i] = r % d;
            r /= d;
        }
        Ok(out)
    }

    /// The rank at `coords`: a periodic dimension wraps around.
    ///
    /// # Errors
    /// [`ApiError::InvalidTopology`] for a coordinate outside a
    /// non-periodic dimension, or as many coordinates as dimensions not.
    pub fn rank_at(&self, coords: &[i32]) -> Result<Rank> {
        if coords.len() != self.dims.len() {
            return Err(bad(format!(
                "{} coordinates for a grid of {} dimensions",
                coords.len(),
                self.dims.len()
            )));
        }
        let mut rank: Rank = 0;
        for (i, (&d, &x)) in self.dims.iter().zip(coords).enumerate() {
            let x = match (self.periods[i], (0..d).contains(&x)) {
                (_, true) => x,
                (true, false) => x.rem_euclid(d),
                (false, false) => {
                    return Err(bad(format!(
                        "coordinate {x} is outside dimension {i} (extent {d}, not periodic)"
                    )))
                }
            };
            rank = rank * d + x;
        }
        Ok(rank)
    }

    /// `MPI_Cart_shift`: the ranks `disp` steps back and forward from
    /// `rank` along dimension `dim`; [`PROC_NULL`] past a non-periodic
    /// edge. `(source, destination)`.
    ///
    /// # Errors
    /// [`ApiError::InvalidTopology`] for a dimension the grid lacks;
    /// [`ApiError::InvalidRank`] for a rank outside it.
    pub fn shift(&self, rank: Rank, dim: usize, disp: i32) -> Result<(Rank, Rank)> {
        if dim >= self.dims.len() {
            return Err(bad(format!(
                "invalid direction {dim} ({} dimensions)",
                self.dims.len()
            )));
        }
        let me = self.coords(rank)?;
        let step = |by: i64| -> Rank {
            let (d, x) = (i64::from(self.dims[dim]), i64::from(me[dim]) + by);
            if !self.periods[dim] && !(0..d).contains(&x) {
                return PROC_NULL;
            }
            let mut at = me.clone();
            at[dim] = x.rem_euclid(d) as i32;
            self.rank_at(&at).unwrap_or(PROC_NULL)
        };
        Ok((step(-i64::from(disp)), step(i64::from(disp))))
    }

    /// `MPI_Cart_sub`'s split of `rank`: the grid of the dimensions
    /// `remain` keeps, the color of `rank`'s subgrid (its position in the
    /// others) and its key in it.
    ///
    /// # Errors
    /// As [`Cart::coords`]; [`ApiError::InvalidTopology`] for as many
    /// flags as dimensions not.
    pub fn sub(&self, rank: Rank, remain: &[bool]) -> Result<(Cart, i32, i32)> {
        if remain.len() != self.dims.len() {
            return Err(bad(format!(
                "{} flags for a grid of {} dimensions",
                remain.len(),
                self.dims.len()
            )));
        }
        let me = self.coords(rank)?;
        let pick = |kept: bool| {
            let mut c = Cart {
                dims: Vec::new(),
                periods: Vec::new(),
            };
            let mut x = Vec::new();
            for i in 0..self.dims.len() {
                if remain[i] == kept {
                    c.dims.push(self.dims[i]);
                    c.periods.push(self.periods[i]);
                    x.push(me[i]);
                }
            }
            (c, x)
        };
        let (other, ox) = pick(false);
        let (kept, kx) = pick(true);
        let place = |c: &Cart, x: &[i32]| c.dims.iter().zip(x).fold(0, |acc, (&d, &x)| acc * d + x);
        Ok((kept.clone(), place(&other, &ox), place(&kept, &kx)))
    }
}

/// A communicator with a Cartesian topology ([`Comm::cart`]).
#[derive(Debug, Clone)]
pub struct CartComm {
    comm: Comm,
    cart: Arc<Cart>,
    /// This member's neighbors on the grid, for the neighborhood
    /// collectives ([`Neighborhood`]).
    neighbors: Arc<ferry_core::coll::Neighbors>,
}

impl CartComm {
    fn new(comm: Comm, cart: Cart) -> CartComm {
        let neighbors = Arc::new(cart.neighbors(comm.rank()));
        CartComm {
            comm,
            cart: Arc::new(cart),
            neighbors,
        }
    }

    /// The communicator (every operation of [`Comm`] works on it).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The grid.
    pub fn cart(&self) -> &Cart {
        &self.cart
    }

    /// This process's coordinates.
    pub fn coords(&self) -> Vec<i32> {
        self.cart.coords(self.comm.rank()).unwrap_or_default()
    }

    /// The rank at `coords` ([`Cart::rank_at`]).
    ///
    /// # Errors
    /// As [`Cart::rank_at`].
    pub fn rank_at(&self, coords: &[i32]) -> Result<Rank> {
        self.cart.rank_at(coords)
    }

    /// This process's neighbours `disp` steps along `dim`:
    /// `(source, destination)` ([`Cart::shift`]).
    ///
    /// # Errors
    /// As [`Cart::shift`].
    pub fn shift(&self, dim: usize, disp: i32) -> Result<(Rank, Rank)> {
        self.cart.shift(self.comm.rank(), dim, disp)
    }

    /// `MPI_Cart_sub`: the subgrid of the dimensions `remain` keeps that
    /// holds this process (collective).
    ///
    /// # Errors
    /// As [`Cart::sub`] and [`Comm::split`].
    pub fn sub(&self, remain: &[bool]) -> Result<CartComm> {
        let (kept, color, key) = self.cart.sub(self.comm.rank(), remain)?;
        let comm = self
            .comm
            .split(color, key)?
            .ok_or(ApiError::InvalidTopology(
                "a subgrid without this member".into(),
            ))?;
        Ok(CartComm::new(comm, kept))
    }
}

impl Comm {
    /// `MPI_Cart_create`: the first `dims`' product members (in node order
    /// with `reorder`) as a grid; `None` for the others. Collective.
    ///
    /// # Errors
    /// As [`Cart::new`]; [`ApiError::InvalidTopology`] for a grid larger
    /// than the communicator; as [`Comm::split`].
    pub fn cart(&self, dims: &[i32], periods: &[bool], reorder: bool) -> Result<Option<CartComm>> {
        let cart = Cart::new(dims, periods)?;
        Ok(self
            .topology_split(cart.size(), reorder)?
            .map(|comm| CartComm::new(comm, cart)))
    }

    /// The communicator of a new topology of `n` members: the first `n`
    /// ranks, or with `reorder` the first `n` in node order (the members
    /// of a node next to each other, nodes in the order of their lowest
    /// rank); `None` for the others. Collective.
    ///
    /// # Errors
    /// [`ApiError::InvalidTopology`] for `n` above the size or an
    /// intercommunicator; as [`Comm::split`].
    pub fn topology_split(&self, n: usize, reorder: bool) -> Result<Option<Comm>> {
        if self.is_inter() {
            return Err(bad("a topology needs an intracommunicator".into()));
        }
        let size = self.size() as usize;
        if n > size {
            return Err(bad(format!(
                "a topology of {n} processes on a communicator of {size}"
            )));
        }
        let rank = self.rank();
        if !reorder || size == 1 {
            let color = if (rank as usize) < n {
                0
            } else {
                crate::UNDEFINED
            };
            return self.split(color, rank);
        }
        // Every member takes part in each collective, whatever its color.
        let lowest = match self.split_type(SplitType::Shared, rank)? {
            Some(node) => {
                let mut low = [0];
                node.allreduce(&[rank], &mut low, &Op::min())?;
                low[0]
            }
            None => rank,
        };
        let key = lowest.saturating_mul(size as i32).saturating_add(rank);
        let mut keys = vec![0; size];
        self.allgather(&[key], &mut keys)?;
        let place = keys.iter().filter(|&&k| k < key).count();
        self.split(if place < n { 0 } else { crate::UNDEFINED }, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_row_major_and_round_trip() {
        let c = Cart::new(&[2, 3, 4], &[false, true, false]).unwrap();
        assert_eq!(c.size(), 24);
        assert_eq!(c.coords(0).unwrap(), vec![0, 0, 0]);
        assert_eq!(c.coords(5).unwrap(), vec![0, 1, 1]);
        assert_eq!(c.coords(23).unwrap(), vec![1, 2, 3]);
        for r in 0..24 {
            assert_eq!(c.rank_at(&c.coords(r).unwrap()).unwrap(), r);
        }
        assert!(c.coords(24).is_err());
        // Dimension 1 wraps; dimension 0 does not.
        assert_eq!(c.rank_at(&[0, 3, 0]).unwrap(), 0);
        assert_eq!(c.rank_at(&[0, -1, 0]).unwrap(), 8);
        assert!(c.rank_at(&[2, 0, 0]).is_err());
        let none = Cart::new(&[], &[]).unwrap();
        assert_eq!((none.size(), none.rank_at(&[]).unwrap()), (1, 0));
    }

    #[test]
    fn shifts_wrap_or_stop_at_the_edge() {
        let c = Cart::new(&[2, 3], &[false, true]).unwrap();
        // Rank 2 is (0, 2).
        assert_eq!(c.shift(2, 1, 1).unwrap(), (1, 0));
        assert_eq!(c.shift(2, 0, 1).unwrap(), (PROC_NULL, 5));
        assert_eq!(c.shift(5, 0, 1).unwrap(), (2, PROC_NULL));
        assert!(c.shift(0, 2, 1).is_err());
    }

    #[test]
    fn a_subgrid_keeps_the_remaining_dimensions() {
        let c = Cart::new(&[2, 3], &[false, true]).unwrap();
        // Rank 4 is (1, 1): its row is color 1, its place in it 1.
        let (kept, color, key) = c.sub(4, &[false, true]).unwrap();
        assert_eq!(
            (kept.dims(), kept.periods(), color, key),
            (&[3][..], &[true][..], 1, 1)
        );
        let (kept, color, key) = c.sub(4, &[true, false]).unwrap();
        assert_eq!((kept.dims(), color, key), (&[2][..], 1, 1));
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(Cart::new(&[2, 0], &[false, false]).is_err());
        assert!(Cart::new(&[2], &[false, true]).is_err());
        assert!(Cart::new(&[i32::MAX, i32::MAX, i32::MAX], &[false; 3]).is_err());
    }
}
