//! A small seeded pseudo-random generator, so every demo file is reproducible
//! bit for bit from its seed without depending on an outside crate's stream.
//!
//! The generator is xoshiro256++ seeded through SplitMix64; the helpers draw
//! integers and fractions only (no transcendental functions), so the stream of
//! values is the same on every platform.

/// Deterministic random source for the simulation.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed`; `stream` separates independent consumers
    /// (one per simulated thread) so adding one does not shift the others.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let s = [
            splitmix(&mut st),
            splitmix(&mut st),
            splitmix(&mut st),
            splitmix(&mut st),
        ];
        Rng { s }
    }

    /// Next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[0]
            .wrapping_add(self.s[3])
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform fraction in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `[lo, hi]` (returns `lo` when `hi <= lo`).
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo) as u64 + 1;
        lo + (self.next_u64() % span) as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `base` scaled by a factor drawn uniformly from `[1 - frac, 1 + frac]`.
    pub fn jitter(&mut self, base: i64, frac: f64) -> i64 {
        let f = 1.0 + frac * (2.0 * self.unit() - 1.0);
        ((base as f64) * f).round().max(1.0) as i64
    }

    /// A right-skewed value around `median`: mostly near it, occasionally up
    /// to `spread` times larger (service times of real code look like this).
    pub fn skewed(&mut self, median: i64, spread: f64) -> i64 {
        let u = self.unit();
        let tail = u * u * u * u;
        let f = 0.85 + 0.3 * self.unit() + tail * (spread - 1.0);
        ((median as f64) * f).round().max(1.0) as i64
    }

    /// One element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next_u64() % items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7, 3);
        let mut b = Rng::new(7, 3);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = Rng::new(7, 4);
        assert_ne!(Rng::new(7, 3).next_u64(), c.next_u64());
    }

    #[test]
    fn range_is_inclusive_and_bounded() {
        let mut r = Rng::new(1, 0);
        let mut seen = [false; 3];
        for _ in 0..1000 {
            let v = r.range(5, 7);
            assert!((5..=7).contains(&v));
            seen[(v - 5) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.range(9, 3), 9);
    }

    #[test]
    fn unit_in_bounds() {
        let mut r = Rng::new(2, 0);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
