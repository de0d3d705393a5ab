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

#[cfg(test)]
mod tests {
    use super::*;

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
