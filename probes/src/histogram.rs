//! A small log-linear latency histogram (8 sub-buckets per power of two,
//! about 12% resolution) for live percentiles without keeping every sample.

const SUB: u32 = 8;
const BUCKETS: usize = 496;

/// Counts of durations in logarithmic buckets.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            max: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let mantissa = (v >> (exp - 3)) & (SUB as u64 - 1);
    ((exp - 2) * SUB) as usize + mantissa as usize
}

fn lower_bound(i: usize) -> u64 {
    if i < SUB as usize {
        return i as u64;
    }
    let exp = (i / SUB as usize) as u32 + 2;
    let mantissa = (i % SUB as usize) as u64;
    (SUB as u64 + mantissa) << (exp - 3)
}

impl Histogram {
    /// Adds one sample.
    pub fn record(&mut self, v: u64) {
        let i = index(v).min(BUCKETS - 1);
        self.counts[i] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// Records `n` samples of value `v` at once (calls counted in the kernel
    /// at their mean), in constant time.
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let i = index(v).min(BUCKETS - 1);
        self.counts[i] += n;
        self.total += n;
        self.max = self.max.max(v);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Approximate `q` quantile (0..=1): the middle of the bucket holding it.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let lo = lower_bound(i);
                let hi = lower_bound(i + 1).max(lo + 1);
                return (lo + (hi - lo) / 2).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_cover_values() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 100, 1_000, 123_456, 1 << 40] {
            let i = index(v);
            assert!(lower_bound(i) <= v && v < lower_bound(i + 1), "{v}");
        }
    }

    #[test]
    fn quantiles_are_within_resolution() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 500_000.0 - 1.0).abs() < 0.13, "{p50}");
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.13, "{p99}");
        assert_eq!(h.count(), 1000);
    }
}
