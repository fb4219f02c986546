//! `MPI_Dims_create` (MPI 4.1 §8.5.2): a balanced factorisation of a
//! number of processes over a grid's dimensions.
//!
//! The dimensions the caller fixed (non-zero) stay; the others get the
//! factorisation of `nnodes / product(fixed)` into that many factors, in
//! non-increasing order, whose largest and smallest factors are as close as
//! possible ("as close to each other as possible", the standard's words),
//! and among those the one whose smallest factors are largest (compared
//! from the smallest up: 5616 in 4 is 13 x 9 x 8 x 6, not 13 x 12 x 6 x 6;
//! 5040 in 3 is 21 x 16 x 15, not 20 x 18 x 14), as MPICH answers and its
//! `topo/dims5` test expects,
//! found by enumerating the non-increasing factorisations (few: their
//! number is bounded by the partitions of the prime exponents).

use crate::error::{ApiError, Result};

/// The divisors of `n`, largest first.
fn divisors(n: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n % d == 0 {
            small.push(d);
            if d * d != n {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.reverse();
    large.extend(small);
    large
}

/// How balanced a factorisation is: its spread (largest - smallest), then
/// its factors from the smallest up, each the larger the better (stored
/// as `u64::MAX - f`); less is better.
type Score = (u64, Vec<u64>);

/// The factorisation of `n` into `k` non-increasing factors with the least
/// [`Score`]; among equal scores, the first found (largest leading factor
/// first).
fn balanced(n: u64, k: usize) -> Vec<u64> {
    let divs = divisors(n);
    let mut best: Option<(Score, Vec<u64>)> = None;
    let mut cur = Vec::with_capacity(k);
    search(&divs, n, k, n, &mut cur, &mut best);
    best.map(|(_, v)| v).unwrap_or_default()
}

/// Extends `cur` with `k` factors of `n`, each at most `max` (`divs`: the
/// divisors of the whole number, largest first, which hold every factor).
fn search(
    divs: &[u64],
    n: u64,
    k: usize,
    max: u64,
    cur: &mut Vec<u64>,
    best: &mut Option<(Score, Vec<u64>)>,
) {
    if k == 1 {
        if n <= max {
            cur.push(n);
            let score = (cur[0] - n, cur.iter().rev().map(|f| u64::MAX - f).collect());
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                *best = Some((score, cur.clone()));
            }
            cur.pop();
        }
        return;
    }
    for &f in divs.iter().filter(|&&f| f <= max.min(n)) {
        // The next factor f is the largest of the rest: f^k >= n.
        if f.checked_pow(k as u32).is_some_and(|p| p < n) {
            break;
        }
        if n % f != 0 {
            continue;
        }
        // The spread is at least first - f: worse than the best found,
        // this branch is dropped (an equal one may still win on squares).
        let first = cur.first().copied().unwrap_or(f);
        if best.as_ref().is_none_or(|(s, _)| first - f <= s.0) {
            cur.push(f);
            search(divs, n / f, k - 1, f, cur, best);
            cur.pop();
        }
    }
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the
/// product of all is `nnodes`, balanced (see the module docs).
///
/// # Errors
/// [`ApiError::InvalidTopology`] for `nnodes` below 1, a negative entry,
/// or `nnodes` not a multiple of the fixed entries' product.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    let bad = |why: String| ApiError::InvalidTopology(why).into();
    let n = u64::try_from(nnodes)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(format!("invalid number of nodes {nnodes}")))?;
    let mut fixed = 1u64;
    for &d in dims.iter() {
        match u64::try_from(d) {
            Ok(0) => {}
            Ok(d) => fixed = fixed.saturating_mul(d),
            Err(_) => return Err(bad(format!("a negative dimension {d}"))),
        }
    }
    let free = dims.iter().filter(|&&d| d == 0).count();
    if fixed == 0 || n % fixed != 0 {
        return Err(bad(format!(
            "{nnodes} nodes are not a multiple of the fixed dimensions' product {fixed}"
        )));
    }
    if free == 0 {
        if fixed != n {
            return Err(bad(format!(
                "the dimensions' product {fixed} is not {nnodes}"
            )));
        }
        return Ok(());
    }
    let mut factors = balanced(n / fixed, free).into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        // Each factor divides nnodes, which is an i32.
        *d = factors.next().map_or(1, |f| f as i32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: i32, d: &[i32]) -> Vec<i32> {
        let mut v = d.to_vec();
        dims_create(n, &mut v).unwrap();
        v
    }

    #[test]
    fn the_standards_examples() {
        assert_eq!(dims(6, &[0, 0]), [3, 2]);
        assert_eq!(dims(7, &[0, 0]), [7, 1]);
        assert_eq!(dims(6, &[0, 3, 0]), [2, 3, 1]);
        assert!(dims_create(7, &mut [0, 3, 0]).is_err());
    }

    #[test]
    fn factors_are_balanced_and_non_increasing() {
        assert_eq!(dims(16, &[0, 0, 0]), [4, 2, 2]);
        assert_eq!(dims(12, &[0, 0]), [4, 3]);
        assert_eq!(dims(24, &[0, 0, 0]), [4, 3, 2]);
        assert_eq!(dims(27, &[0, 0, 0]), [3, 3, 3]);
        assert_eq!(dims(1, &[0, 0, 0]), [1, 1, 1]);
        assert_eq!(dims(64, &[0, 0, 0, 0]), [4, 4, 2, 2]);
        assert_eq!(dims(1 << 30, &[0; 3]), [1024, 1024, 1024]);
        assert_eq!(dims(2_147_483_647, &[0, 0]), [2_147_483_647, 1]);
        assert_eq!(dims(4, &[2, 2]), [2, 2]);
        // Equal spreads: the larger smallest factors (MPICH's topo/dims5).
        assert_eq!(dims(5616, &[0; 4]), [13, 9, 8, 6]);
        assert_eq!(dims(9936, &[0; 4]), [23, 9, 8, 6]);
        assert_eq!(dims(5040, &[0; 3]), [21, 16, 15]);
        assert_eq!(dims(10800, &[0; 3]), [27, 20, 20]);
        assert_eq!(dims(34776, &[0; 3]), [46, 28, 27]);
        assert!(dims_create(4, &mut [2, 3]).is_err());
        assert!(dims_create(4, &mut [-1, 0]).is_err());
    }
}
