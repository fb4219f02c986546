//! A tiny seeded random number generator for the simulation.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014; the constants are those of `java.util.SplittableRandom`
//! and Vigna's reference C). It is not cryptographic and need not be: the
//! simulation only needs runs that are reproducible from a seed, and the
//! crate takes no dependency for it.

/// A seeded SplitMix64 generator: the same seed gives the same sequence on
/// every platform.
#[derive(Debug, Clone)]
pub struct SimRng {
    state: u64,
}

impl SimRng {
    /// A generator seeded with `seed` (every seed, including 0, is fine).
    pub const fn new(seed: u64) -> SimRng {
        SimRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n`, or 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift: no division, and the bias for the small
        // ranges the simulation uses is far below anything a test could see.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            // The full u64 range: every value is in it.
            None => self.next_u64(),
        }
    }

    /// True with probability `num / den` (false when `den == 0`).
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_rng_matches_reference_splitmix64() {
        // First outputs of Vigna's splitmix64.c seeded with 1234567.
        let mut rng = SimRng::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
    }

    #[test]
    fn sim_rng_ranges_stay_in_bounds_and_cover_them() {
        let mut rng = SimRng::new(7);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let v = rng.range_inclusive(2, 5);
            assert!((2..=5).contains(&v));
            seen[(v - 2) as usize] = true;
        }
        assert!(
            seen.iter().all(|&s| s),
            "every value of a small range appears"
        );
        assert_eq!(rng.range_inclusive(9, 9), 9);
        assert_eq!(rng.range_inclusive(9, 3), 9);
        assert_eq!(rng.below(0), 0);
        let _ = rng.range_inclusive(0, u64::MAX);
    }

    #[test]
    fn sim_rng_same_seed_same_sequence() {
        let a: Vec<u64> = {
            let mut r = SimRng::new(42);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let mut r = SimRng::new(42);
        assert!(a.iter().all(|&v| v == r.next_u64()));
        let mut other = SimRng::new(43);
        assert_ne!(a[0], other.next_u64());
    }
}
