//! Who a rank exchanges with in a neighborhood collective (MPI 4.1 §8.6):
//! the sources it receives from and the destinations it sends to, in the
//! order the topology defines, and how a sender's blocks pair with its
//! receivers' when one rank is a neighbor twice.

use crate::error::{Result, UsageError};

/// A neighbor that does not exist (`MPI_PROC_NULL`: the edge of a
/// non-periodic Cartesian dimension). Nothing is sent to it and nothing
/// received from it; its block is left as it was.
pub const NO_NEIGHBOR: u32 = u32::MAX;

/// How the `k`-th block a rank sends to a neighbor pairs with the blocks
/// that neighbor receives from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// In order: the `k`-th message from `a` to `b` lands in the `k`-th
    /// block `b` receives from `a` (graphs and distributed graphs, where
    /// MPI defines no other pairing for repeated edges).
    InOrder,
    /// A Cartesian grid: neighbors come in pairs per dimension (the
    /// source, then the destination of a shift by +1), and what a rank
    /// sends toward −1 arrives in its neighbor's +1 block, and back. In a
    /// periodic dimension of one or two ranks both neighbors are the same
    /// rank; receives are posted so that the direction, not the order,
    /// decides (mpi-forum/mpi-issues#153).
    Cartesian,
}

/// A rank's neighbors in a process topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    /// The ranks this rank receives from, one block each, in order.
    pub sources: Vec<u32>,
    /// The ranks this rank sends to, one block each, in order.
    pub destinations: Vec<u32>,
    /// How repeated neighbors pair up.
    pub pairing: Pairing,
}

impl Neighbors {
    /// Checks every neighbor is a rank of a communicator of `size` (or
    /// [`NO_NEIGHBOR`]), and that a Cartesian list comes in pairs.
    ///
    /// # Errors
    /// [`UsageError::InvalidRank`] for a neighbor outside the communicator;
    /// [`UsageError::LengthMismatch`] for a Cartesian list of odd length or
    /// whose sources and destinations differ in number.
    pub fn check(&self, size: u32) -> Result<()> {
        for &r in self.sources.iter().chain(&self.destinations) {
            if r != NO_NEIGHBOR && r >= size {
                return Err(UsageError::InvalidRank {
                    rank: i32::try_from(r).unwrap_or(i32::MAX),
                    size,
                }
                .into());
            }
        }
        if self.pairing == Pairing::Cartesian
            && (self.sources.len() % 2 != 0 || self.sources.len() != self.destinations.len())
        {
            return Err(UsageError::LengthMismatch(
                "a Cartesian neighborhood has two neighbors per dimension",
            )
            .into());
        }
        Ok(())
    }

    /// The order in which receives are posted: block indices into
    /// [`Neighbors::sources`]. In order for [`Pairing::InOrder`]; for a
    /// Cartesian grid each dimension's two blocks swapped, so that the
    /// first message a rank sends a neighbor (toward −1) lands in that
    /// neighbor's +1 block even when its −1 neighbor is the same rank.
    pub fn receive_order(&self) -> impl Iterator<Item = usize> + '_ {
        let swap = usize::from(self.pairing == Pairing::Cartesian);
        (0..self.sources.len()).map(move |j| j ^ swap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartesian_receives_swap_each_dimension() {
        let n = Neighbors {
            sources: vec![1, 1, 2, 3],
            destinations: vec![1, 1, 2, 3],
            pairing: Pairing::Cartesian,
        };
        assert_eq!(n.receive_order().collect::<Vec<_>>(), [1, 0, 3, 2]);
        let g = Neighbors {
            pairing: Pairing::InOrder,
            ..n
        };
        assert_eq!(g.receive_order().collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn bad_neighbors_are_refused() {
        let n = Neighbors {
            sources: vec![0, 4],
            destinations: vec![NO_NEIGHBOR],
            pairing: Pairing::InOrder,
        };
        assert!(n.check(4).is_err());
        assert!(n.check(5).is_ok());
        let odd = Neighbors {
            sources: vec![0],
            destinations: vec![0],
            pairing: Pairing::Cartesian,
        };
        assert!(odd.check(2).is_err());
    }
}
