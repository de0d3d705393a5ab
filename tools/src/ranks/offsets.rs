//! Clock offsets between capture files of one job, estimated from the data:
//! the ranks of a communicator leave a collective together (none can finish
//! before the last has arrived, and the data moves to all at once), so the
//! moments each host saw the same collective complete (the waiting thread's
//! wake-up, [`super::members::Collective::done_ns`]) differ by the offset
//! between their clocks plus a little wake-up noise. The estimate is the
//! median over every collective the two files share; its spread (median
//! absolute deviation) says how far to trust it.

use super::members::{members, paired, Member};
use crate::error::Result;
use ingero_store::TraceDb;
use serde::Serialize;

/// The offset of one input's clock from the reference's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OffsetEstimate {
    /// Input time minus reference time for the same instant, ns: subtract
    /// it from the input's times to put them on the reference clock.
    pub offset_ns: i64,
    /// Median absolute deviation of the per-collective estimates, ns (-1
    /// when there were none).
    pub spread_ns: i64,
    /// Collectives matched with the reference (or with the input through
    /// which this one was placed).
    pub matched: i64,
    /// How the offset was found.
    pub method: String,
    /// True for the input whose clock the others are put on.
    pub reference: bool,
}

/// Fewest matched collectives for an estimate.
pub const MIN_MATCHED: usize = 3;

/// Offsets of every input, in input order. The reference is the input that
/// holds global rank 0 (else the first); an input that shares no
/// communicator with the reference is placed through one that does.
pub fn estimate_offsets(dbs: &[&TraceDb]) -> Result<Vec<OffsetEstimate>> {
    let all: Vec<Vec<Member>> = dbs.iter().map(|db| members(db)).collect::<Result<_>>()?;
    let reference = all
        .iter()
        .position(|ms| ms.iter().any(|m| m.rank == 0))
        .unwrap_or(0);
    let mut out: Vec<Option<OffsetEstimate>> = vec![None; dbs.len()];
    if dbs.is_empty() {
        return Ok(Vec::new());
    }
    out[reference] = Some(OffsetEstimate {
        offset_ns: 0,
        spread_ns: 0,
        matched: 0,
        method: "reference clock".to_string(),
        reference: true,
    });
    // Place inputs outward from the reference, one hop at a time.
    loop {
        let mut progress = false;
        for j in 0..dbs.len() {
            if out[j].is_some() {
                continue;
            }
            let best = (0..dbs.len())
                .filter_map(|i| out[i].as_ref().map(|o| (i, o.offset_ns)))
                .filter_map(|(i, base)| {
                    between(&all[i], &all[j]).map(|(d, spread, n)| (i, base + d, spread, n))
                })
                .max_by_key(|(_, _, _, n)| *n);
            if let Some((i, offset, spread, n)) = best {
                let via = if i == reference {
                    "matched collectives with the reference".to_string()
                } else {
                    format!("matched collectives with input {}", i + 1)
                };
                out[j] = Some(OffsetEstimate {
                    offset_ns: offset,
                    spread_ns: spread,
                    matched: n as i64,
                    method: format!("median completion difference over {n} {via}"),
                    reference: false,
                });
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    Ok(out
        .into_iter()
        .map(|o| {
            o.unwrap_or(OffsetEstimate {
                offset_ns: 0,
                spread_ns: -1,
                matched: 0,
                method: format!(
                    "not estimated: fewer than {MIN_MATCHED} collectives matched any placed input \
                     (times taken as recorded)"
                ),
                reference: false,
            })
        })
        .collect())
}

/// Offset of file `b`'s clock from file `a`'s: (median, spread, matched),
/// over every pair of members that share a communicator key.
fn between(a: &[Member], b: &[Member]) -> Option<(i64, i64, usize)> {
    let mut diffs: Vec<i64> = Vec::new();
    for x in a {
        for y in b.iter().filter(|y| y.key == x.key) {
            let (pairs, _) = paired(x, y);
            diffs.extend(pairs.iter().map(|(p, q)| q.done_ns - p.done_ns));
        }
    }
    if diffs.len() < MIN_MATCHED {
        return None;
    }
    let median = median_of(&mut diffs);
    let mut dev: Vec<i64> = diffs.iter().map(|d| (d - median).abs()).collect();
    Some((median, median_of(&mut dev), diffs.len()))
}

fn median_of(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        return 0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median_of(&mut [3, 1, 2]), 2);
        assert_eq!(median_of(&mut [4, 1, 2, 3]), 2);
        assert_eq!(median_of(&mut []), 0);
    }
}

#[cfg(test)]
mod estimate_tests {
    use super::*;
    use crate::ranks::members::Collective;

    /// A member whose collective `k` completes at `done(k)` on its clock.
    fn member(key: i64, rank: i32, done: impl Fn(i64) -> i64, n: i64) -> Member {
        Member {
            session_id: 1,
            pid: 100 + rank,
            comm: 7,
            key,
            comm_rank: rank,
            nranks: 2,
            rank,
            node: String::new(),
            calls: (0..n)
                .map(|k| Collective {
                    seq: k,
                    op_id: 201,
                    count: 1024,
                    arrive_ns: done(k) - 1_000,
                    dur_ns: 1_000,
                    done_ns: done(k),
                    tid: 100 + rank,
                })
                .collect(),
        }
    }

    #[test]
    fn the_offset_is_the_median_completion_difference() {
        let step = 10_000_000;
        let a = vec![member(5, 0, |k| k * step, 20)];
        // Clock b runs 3.25 ms ahead; completions jitter by up to 40 us,
        // and two collectives are 2 ms late on b (outliers the median ignores).
        let b = vec![member(
            5,
            1,
            |k| {
                k * step
                    + 3_250_000
                    + (k % 5) * 10_000
                    + if k == 3 || k == 9 { 2_000_000 } else { 0 }
            },
            20,
        )];
        let (offset, spread, n) = between(&a, &b).expect("estimate");
        assert_eq!(n, 20);
        assert!((offset - 3_270_000).abs() <= 10_000, "{offset}");
        assert!(spread <= 20_000, "{spread}");
    }

    #[test]
    fn other_communicators_and_too_few_collectives_give_nothing() {
        let a = vec![member(5, 0, |k| k, 10)];
        assert!(between(&a, &[member(6, 1, |k| k, 10)]).is_none());
        assert!(between(&a, &[member(5, 1, |k| k, 2)]).is_none());
    }

    #[test]
    fn a_mismatched_collective_is_not_paired() {
        let a = member(5, 0, |k| k * 1_000, 4);
        let mut b = member(5, 1, |k| k * 1_000 + 50, 4);
        b.calls[2].count = 2048;
        let (pairs, mismatched) = paired(&a, &b);
        assert_eq!((pairs.len(), mismatched), (3, 1));
    }
}
