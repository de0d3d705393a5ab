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
}
