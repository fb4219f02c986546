//! Which algorithm runs a collective: a table built once per communicator
//! (like the protocol table), read per call by message size.
//!
//! The thresholds follow MPICH's `maint/tuning/coll/mpir/generic.json` and
//! Open MPI's libnbc defaults, adjusted for what is cheap on one node: a
//! latency-bound small message wants the fewest rounds (recursive
//! doubling, Bruck), a bandwidth-bound large one wants each byte to cross
//! once (ring, Rabenseifner, scatter + allgather). [`CollTuning`] forces an
//! algorithm (the `FERRY_COLL_*` variables) for tests and tuning; a forced
//! algorithm that cannot run a given call (a ring for a non-commutative op,
//! recursive doubling on a size that is not a power of two) falls back to
//! the table's choice rather than fail.

/// A broadcast algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcastAlgo {
    /// A binomial tree: log p rounds of the whole message.
    Binomial,
    /// Binomial scatter, then ring allgather (van de Geijn).
    ScatterAllgather,
}

/// An allreduce algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllreduceAlgo {
    /// log p exchanges of the whole vector (any op, any size).
    RecursiveDoubling,
    /// Recursive-halving reduce-scatter, recursive-doubling allgather
    /// (commutative ops).
    Rabenseifner,
    /// Ring reduce-scatter then ring allgather (commutative ops).
    Ring,
}

/// An allgather algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllgatherAlgo {
    /// log p exchanges of doubling size (power-of-two sizes, equal counts).
    RecursiveDoubling,
    /// ceil(log p) rounds on any size (equal counts).
    Bruck,
    /// p - 1 neighbour exchanges.
    Ring,
}

/// An alltoall algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlltoallAlgo {
    /// p - 1 rounds, one exchange each.
    Pairwise,
    /// ceil(log p) rounds of packed blocks (small blocks, equal counts).
    Bruck,
}

/// Forced algorithms (`None`: the table decides).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollTuning {
    /// `FERRY_COLL_BCAST`.
    pub bcast: Option<BcastAlgo>,
    /// `FERRY_COLL_ALLREDUCE`.
    pub allreduce: Option<AllreduceAlgo>,
    /// `FERRY_COLL_ALLGATHER`.
    pub allgather: Option<AllgatherAlgo>,
    /// `FERRY_COLL_ALLTOALL`.
    pub alltoall: Option<AlltoallAlgo>,
}

impl CollTuning {
    /// Parses an algorithm name for `FERRY_COLL_<OP>` (`op` is `bcast`,
    /// `allreduce`, `allgather` or `alltoall`).
    ///
    /// # Errors
    /// The list of valid names, for an unknown one.
    pub fn set(&mut self, op: &str, name: &str) -> Result<(), &'static str> {
        match (op, name) {
            ("bcast", "binomial") => self.bcast = Some(BcastAlgo::Binomial),
            ("bcast", "scatter_allgather") => self.bcast = Some(BcastAlgo::ScatterAllgather),
            ("bcast", _) => return Err("binomial, scatter_allgather"),
            ("allreduce", "recursive_doubling") => {
                self.allreduce = Some(AllreduceAlgo::RecursiveDoubling);
            }
            ("allreduce", "rabenseifner") => self.allreduce = Some(AllreduceAlgo::Rabenseifner),
            ("allreduce", "ring") => self.allreduce = Some(AllreduceAlgo::Ring),
            ("allreduce", _) => return Err("recursive_doubling, rabenseifner, ring"),
            ("allgather", "recursive_doubling") => {
                self.allgather = Some(AllgatherAlgo::RecursiveDoubling);
            }
            ("allgather", "bruck") => self.allgather = Some(AllgatherAlgo::Bruck),
            ("allgather", "ring") => self.allgather = Some(AllgatherAlgo::Ring),
            ("allgather", _) => return Err("recursive_doubling, bruck, ring"),
            ("alltoall", "pairwise") => self.alltoall = Some(AlltoallAlgo::Pairwise),
            ("alltoall", "bruck") => self.alltoall = Some(AlltoallAlgo::Bruck),
            ("alltoall", _) => return Err("pairwise, bruck"),
            _ => return Err("bcast, allreduce, allgather, alltoall"),
        }
        Ok(())
    }
}

/// The per-communicator table; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollTable {
    size: u32,
    pof2: bool,
    forced: CollTuning,
    /// Bytes from which bcast uses scatter + allgather.
    bcast_long: usize,
    /// Bytes up to which allreduce uses recursive doubling.
    allreduce_short: usize,
    /// Bytes from which allreduce uses the ring.
    allreduce_long: usize,
    /// Total bytes (p × block) below which allgather uses log-p rounds.
    allgather_short: usize,
    /// Block bytes up to which alltoall uses Bruck.
    alltoall_short: usize,
}

impl CollTable {
    /// The table for a communicator of `size` ranks.
    pub fn new(size: u32, forced: CollTuning) -> CollTable {
        CollTable {
            size,
            pof2: size.is_power_of_two(),
            forced,
            // Scatter + allgather only pays once the tree is deep enough
            // that log p full copies cost more than two passes.
            bcast_long: if size >= 4 { 512 * 1024 } else { usize::MAX },
            allreduce_short: 2048,
            // The ring moves 2(p-1)/p of the vector per rank like
            // Rabenseifner, in more but neighbour-only rounds: better once
            // latency no longer matters.
            allreduce_long: 1 << 20,
            allgather_short: 80 * 1024,
            alltoall_short: if size >= 8 { 256 } else { 0 },
        }
    }

    /// The communicator size the table was built for.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The broadcast algorithm for `bytes`.
    pub fn bcast(&self, bytes: usize) -> BcastAlgo {
        if let Some(a) = self.forced.bcast {
            return a;
        }
        if bytes >= self.bcast_long {
            BcastAlgo::ScatterAllgather
        } else {
            BcastAlgo::Binomial
        }
    }

    /// The allreduce algorithm for `elems` elements of `bytes` in all.
    pub fn allreduce(&self, bytes: usize, elems: usize, commutative: bool) -> AllreduceAlgo {
        let pof2 = prev_pof2(self.size) as usize;
        // Both bandwidth algorithms split the vector by element, and
        // reorder operands: they need a commutative op and enough elements.
        let can_split = commutative && elems >= pof2.max(self.size as usize);
        match self.forced.allreduce {
            Some(AllreduceAlgo::RecursiveDoubling) => return AllreduceAlgo::RecursiveDoubling,
            Some(a) if can_split => return a,
            _ => {}
        }
        if !can_split || bytes <= self.allreduce_short {
            AllreduceAlgo::RecursiveDoubling
        } else if bytes >= self.allreduce_long {
            AllreduceAlgo::Ring
        } else {
            AllreduceAlgo::Rabenseifner
        }
    }

    /// The allgather algorithm for blocks of `block` bytes (`equal`: not a
    /// v-variant).
    pub fn allgather(&self, block: usize, equal: bool) -> AllgatherAlgo {
        if !equal {
            return AllgatherAlgo::Ring;
        }
        match self.forced.allgather {
            Some(AllgatherAlgo::RecursiveDoubling) if self.pof2 => {
                return AllgatherAlgo::RecursiveDoubling
            }
            Some(AllgatherAlgo::RecursiveDoubling) | None => {}
            Some(a) => return a,
        }
        if block.saturating_mul(self.size as usize) < self.allgather_short {
            if self.pof2 {
                AllgatherAlgo::RecursiveDoubling
            } else {
                AllgatherAlgo::Bruck
            }
        } else {
            AllgatherAlgo::Ring
        }
    }

    /// The alltoall algorithm for blocks of `block` bytes.
    pub fn alltoall(&self, block: usize, equal: bool) -> AlltoallAlgo {
        if !equal {
            return AlltoallAlgo::Pairwise;
        }
        if let Some(a) = self.forced.alltoall {
            return a;
        }
        if block <= self.alltoall_short {
            AlltoallAlgo::Bruck
        } else {
            AlltoallAlgo::Pairwise
        }
    }
}

/// The largest power of two not above `n` (1 for 0).
pub(crate) fn prev_pof2(n: u32) -> u32 {
    if n <= 1 {
        1
    } else {
        1 << (31 - n.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_messages_take_different_algorithms() {
        let t = CollTable::new(8, CollTuning::default());
        assert_eq!(t.allreduce(8, 1, true), AllreduceAlgo::RecursiveDoubling);
        assert_eq!(
            t.allreduce(64 << 10, 8192, true),
            AllreduceAlgo::Rabenseifner
        );
        assert_eq!(t.allreduce(4 << 20, 1 << 19, true), AllreduceAlgo::Ring);
        assert_eq!(
            t.allreduce(4 << 20, 1 << 19, false),
            AllreduceAlgo::RecursiveDoubling
        );
        assert_eq!(t.bcast(8), BcastAlgo::Binomial);
        assert_eq!(t.bcast(1 << 20), BcastAlgo::ScatterAllgather);
        assert_eq!(t.allgather(8, true), AllgatherAlgo::RecursiveDoubling);
        assert_eq!(
            CollTable::new(7, CollTuning::default()).allgather(8, true),
            AllgatherAlgo::Bruck
        );
        assert_eq!(t.alltoall(8, true), AlltoallAlgo::Bruck);
        assert_eq!(t.alltoall(8, false), AlltoallAlgo::Pairwise);
    }

    #[test]
    fn forced_algorithms_fall_back_when_they_cannot_run() {
        let mut f = CollTuning::default();
        f.set("allreduce", "ring").unwrap();
        f.set("allgather", "recursive_doubling").unwrap();
        assert!(f.set("allreduce", "bogus").is_err());
        let t = CollTable::new(6, f);
        assert_eq!(t.allreduce(8, 100, true), AllreduceAlgo::Ring);
        assert_eq!(t.allreduce(8, 100, false), AllreduceAlgo::RecursiveDoubling);
        assert_eq!(t.allreduce(8, 2, true), AllreduceAlgo::RecursiveDoubling);
        assert_eq!(t.allgather(8, true), AllgatherAlgo::Bruck);
    }

    #[test]
    fn prev_pof2_values() {
        assert_eq!([0, 1, 2, 3, 5, 8, 9].map(prev_pof2), [1, 1, 2, 2, 4, 8, 8]);
    }
}
