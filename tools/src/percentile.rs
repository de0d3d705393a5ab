//! Exact order statistics on raw samples.

/// Nearest-rank percentile of an ascending slice (`q` in 0..=100).
pub fn nearest_rank(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// p50, p95 and p99 of unsorted samples (sorts in place).
pub fn p50_p95_p99(samples: &mut [i64]) -> (Option<i64>, Option<i64>, Option<i64>) {
    samples.sort_unstable();
    (
        nearest_rank(samples, 50.0),
        nearest_rank(samples, 95.0),
        nearest_rank(samples, 99.0),
    )
}

/// p50, p95 and p99 of weighted samples `(value, weight)` (sorts in
/// place): each sample stands for `weight` values of the population, as a
/// row kept one in K stands for K calls. Nearest rank on the cumulative
/// weight; equal weights give [`p50_p95_p99`].
pub fn weighted_p50_p95_p99(samples: &mut [(i64, f64)]) -> (Option<i64>, Option<i64>, Option<i64>) {
    samples.sort_unstable_by_key(|s| s.0);
    let total: f64 = samples.iter().map(|s| s.1.max(0.0)).sum();
    let at = |q: f64| -> Option<i64> {
        if samples.is_empty() || total <= 0.0 {
            return None;
        }
        let want = q / 100.0 * total;
        let mut cum = 0.0;
        for s in samples.iter() {
            cum += s.1.max(0.0);
            if cum + 1e-9 * total >= want {
                return Some(s.0);
            }
        }
        samples.last().map(|s| s.0)
    };
    (at(50.0), at(95.0), at(99.0))
}

/// Weight of one raw launch row under launch rows (tail-complete
/// sampling: every launch of at least `keep_ns` kept, the shorter ones one
/// in K): a row of at least `keep_ns` stands for itself; a shorter one for
/// `(launches - long rows) / short rows` of the `launches` it was kept from.
pub fn launch_row_weight(
    dur_ns: i64,
    keep_ns: i64,
    launches: i64,
    long_rows: i64,
    short_rows: i64,
) -> f64 {
    if dur_ns >= keep_ns || short_rows <= 0 {
        return 1.0;
    }
    ((launches - long_rows).max(short_rows) as f64 / short_rows as f64).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_put_the_tail_where_the_population_has_it() {
        // 1,000 launches: 990 of 2 us, 10 of 100 us. Kept: every long one
        // and 33 of the short ones (one in 30).
        let mut kept: Vec<(i64, f64)> = Vec::new();
        for _ in 0..33 {
            kept.push((2_000, launch_row_weight(2_000, 50_000, 1_000, 10, 33)));
        }
        for _ in 0..10 {
            kept.push((100_000, launch_row_weight(100_000, 50_000, 1_000, 10, 33)));
        }
        let unweighted: Vec<i64> = kept.iter().map(|k| k.0).collect();
        let (_, p95_raw, _) = p50_p95_p99(&mut unweighted.clone());
        assert_eq!(p95_raw, Some(100_000), "the kept rows alone overstate");
        // Population: p95 and p99 are short (990 of 1,000), p99.1+ long.
        assert_eq!(
            weighted_p50_p95_p99(&mut kept),
            (Some(2_000), Some(2_000), Some(2_000))
        );
        let mut equal: Vec<(i64, f64)> = (1..=100).map(|v| (v, 1.0)).collect();
        assert_eq!(
            weighted_p50_p95_p99(&mut equal),
            (Some(50), Some(95), Some(99))
        );
    }

    #[test]
    fn nearest_rank_matches_definition() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 50.0), Some(50));
        assert_eq!(nearest_rank(&v, 99.0), Some(99));
        assert_eq!(nearest_rank(&v, 100.0), Some(100));
        assert_eq!(nearest_rank(&[7], 99.0), Some(7));
        assert_eq!(nearest_rank(&[], 50.0), None);
        let mut odd = vec![5, 1, 3];
        assert_eq!(p50_p95_p99(&mut odd), (Some(3), Some(5), Some(5)));
    }
}
