//! Latency histograms of CUDA ops on log-scale buckets, computed from the raw
//! call rows, so a tail (a few calls 100x the median) is visible at a glance
//! where a percentile table flattens it into one number.

use ingero_tools::dataset::Dataset;
use ingero_tools::percentile::p50_p95_p99;
use serde::Serialize;
use std::collections::BTreeMap;

/// One bucket: calls whose duration lies in `[lo_ns, hi_ns)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HistBucket {
    /// Inclusive lower edge, ns (a power of two).
    pub lo_ns: i64,
    /// Exclusive upper edge, ns (the next power of two).
    pub hi_ns: i64,
    /// Raw calls in the bucket.
    pub count: u64,
}

/// The latency distribution of one op over the raw rows of the window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpHistogram {
    /// CUDA function name.
    pub op: String,
    /// Op class (`launch`, `copy`, `sync`, ...), used for colour.
    pub class: String,
    /// Raw rows the histogram is built from.
    pub samples: u64,
    /// Calls the recorder counted (raw rows may be a sample of them).
    pub total_calls: i64,
    /// Median of the raw rows, ns.
    pub p50_ns: Option<i64>,
    /// 99th percentile of the raw rows, ns.
    pub p99_ns: Option<i64>,
    /// Longest raw call, ns.
    pub max_ns: i64,
    /// Buckets from the fastest to the slowest non-empty one, gaps included.
    pub buckets: Vec<HistBucket>,
}

/// Index of the power-of-two bucket holding `dur_ns` (durations below 1 ns
/// fall in bucket 0).
pub fn bucket_index(dur_ns: i64) -> u32 {
    63 - (dur_ns.max(1) as u64).leading_zeros()
}

/// Builds one histogram per op seen in the raw rows, the op with the most
/// raw time first.
pub fn histograms_of(ds: &Dataset) -> Vec<OpHistogram> {
    let mut by_op: BTreeMap<u16, Vec<i64>> = BTreeMap::new();
    for c in &ds.calls {
        by_op.entry(c.op_id).or_default().push(c.dur_ns.max(0));
    }
    let mut out: Vec<(i64, OpHistogram)> = by_op
        .into_iter()
        .map(|(op_id, mut durs)| {
            let total: i64 = durs.iter().fold(0i64, |a, d| a.saturating_add(*d));
            let (p50, _, p99) = p50_p95_p99(&mut durs);
            let max_ns = durs.last().copied().unwrap_or(0);
            let lo = durs.first().map_or(0, |d| bucket_index(*d));
            let hi = bucket_index(max_ns);
            let mut counts = vec![0u64; (hi - lo + 1) as usize];
            for d in &durs {
                counts[(bucket_index(*d) - lo) as usize] += 1;
            }
            let buckets = counts
                .into_iter()
                .enumerate()
                .map(|(i, count)| {
                    let k = lo + i as u32;
                    HistBucket {
                        lo_ns: 1i64 << k,
                        hi_ns: if k >= 62 { i64::MAX } else { 1i64 << (k + 1) },
                        count,
                    }
                })
                .collect();
            let recorded = ds
                .totals(ingero_store::AggSource::Cuda, Some(op_id as i64), ds.focus)
                .count;
            let hist = OpHistogram {
                op: ds.op_name(op_id).to_string(),
                class: ds.op_class(op_id).as_str().to_string(),
                samples: durs.len() as u64,
                total_calls: recorded.max(durs.len() as i64),
                p50_ns: p50,
                p99_ns: p99,
                max_ns,
                buckets,
            };
            (total, hist)
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.op.cmp(&b.1.op)));
    out.into_iter().map(|(_, h)| h).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(1), 0);
        assert_eq!(bucket_index(2), 1);
        assert_eq!(bucket_index(3), 1);
        assert_eq!(bucket_index(1024), 10);
        assert_eq!(bucket_index(1_000_000_000), 29);
    }
}
