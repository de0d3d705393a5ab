//! Interval arithmetic on `(start, end)` pairs of epoch ns.

/// Sorted, merged union of intervals clipped to `span`.
pub fn union(mut v: Vec<(i64, i64)>, span: (i64, i64)) -> Vec<(i64, i64)> {
    v.retain(|(a, b)| *b > span.0 && *a < span.1 && b > a);
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        let (a, b) = (a.max(span.0), b.min(span.1));
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of disjoint intervals.
pub fn total(v: &[(i64, i64)]) -> i64 {
    v.iter().map(|(a, b)| b - a).sum()
}

/// Complement of sorted disjoint `busy` within `span`.
pub fn gaps(busy: &[(i64, i64)], span: (i64, i64)) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut cursor = span.0;
    for (a, b) in busy {
        if *a > cursor {
            out.push((cursor, (*a).min(span.1)));
        }
        cursor = cursor.max(*b);
    }
    if cursor < span.1 {
        out.push((cursor, span.1));
    }
    out.retain(|(a, b)| b > a);
    out
}

/// Length of the overlap of two intervals.
pub fn overlap(a: (i64, i64), b: (i64, i64)) -> i64 {
    (a.1.min(b.1) - a.0.max(b.0)).max(0)
}

/// Length of sorted disjoint `v` inside `w`.
pub fn inside(v: &[(i64, i64)], w: (i64, i64)) -> i64 {
    let first = v.partition_point(|iv| iv.1 <= w.0);
    v[first..]
        .iter()
        .take_while(|iv| iv.0 < w.1)
        .map(|iv| overlap(*iv, w))
        .sum()
}

/// Places `idle` ns of one sample period `w` on its stretches: the GPU
/// cannot run work that was never queued, so the parts of `w` outside the
/// host-side busy bound `bound` (sorted, disjoint) are idle first, up to
/// their length; what is left goes to the parts inside it, by length.
/// Returns `(start, end, idle ns)` pieces whose idle sums to `idle`.
pub fn split_idle(bound: &[(i64, i64)], w: (i64, i64), idle: f64) -> Vec<(i64, i64, f64)> {
    let len = (w.1 - w.0).max(0) as f64;
    if len <= 0.0 || idle <= 0.0 {
        return Vec::new();
    }
    let first = bound.partition_point(|iv| iv.1 <= w.0);
    let mut inner: Vec<(i64, i64)> = Vec::new();
    let mut outer: Vec<(i64, i64)> = Vec::new();
    let mut cursor = w.0;
    for &(a, b) in bound[first..].iter().take_while(|iv| iv.0 < w.1) {
        let (a, b) = (a.max(w.0), b.min(w.1));
        if a > cursor {
            outer.push((cursor, a));
        }
        if b > a {
            inner.push((a, b));
        }
        cursor = cursor.max(b);
    }
    if cursor < w.1 {
        outer.push((cursor, w.1));
    }
    let out_len = total(&outer) as f64;
    let in_len = total(&inner) as f64;
    let idle = idle.min(len);
    let to_outer = idle.min(out_len);
    let to_inner = if in_len > 0.0 { idle - to_outer } else { 0.0 };
    let mut pieces = Vec::with_capacity(inner.len() + outer.len());
    for &(a, b) in &outer {
        pieces.push((a, b, to_outer * (b - a) as f64 / out_len));
    }
    for &(a, b) in &inner {
        pieces.push((a, b, to_inner * (b - a) as f64 / in_len));
    }
    pieces.retain(|p| p.2 > 0.0);
    pieces.sort_by_key(|p| p.0);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_gaps_and_inside_agree() {
        let u = union(vec![(5, 10), (0, 3), (2, 4), (20, 40)], (1, 30));
        assert_eq!(u, vec![(1, 4), (5, 10), (20, 30)]);
        assert_eq!(total(&u), 18);
        assert_eq!(gaps(&u, (0, 35)), vec![(0, 1), (4, 5), (10, 20), (30, 35)]);
        assert_eq!(inside(&u, (3, 22)), 1 + 5 + 2);
    }

    #[test]
    fn idle_goes_where_no_work_was_queued_first() {
        let bound = [(10, 20), (30, 60)];
        // Period 0-40: 20 ns outside the bound (0-10, 20-30), 20 inside.
        let p = split_idle(&bound, (0, 40), 25.0);
        assert_eq!(
            p,
            vec![(0, 10, 10.0), (10, 20, 2.5), (20, 30, 10.0), (30, 40, 2.5)]
        );
        // Less idle than the unqueued time: it all lies there.
        let p = split_idle(&bound, (0, 40), 10.0);
        assert_eq!(p, vec![(0, 10, 5.0), (20, 30, 5.0)]);
        let sum: f64 = split_idle(&bound, (0, 100), 70.0).iter().map(|p| p.2).sum();
        assert!((sum - 70.0).abs() < 1e-9);
    }
}
