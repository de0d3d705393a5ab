//! Figures read straight off the process's outer raw CUDA calls: the step
//! period between synchronisations and the split of calls by stream.

use super::stream_idle::StreamIdle;
use crate::dataset::{Call, Dataset};
use ingero_store::OpClass;
use std::collections::BTreeMap;

/// Median time between successive outer synchronisations, ns (one
/// training step when the loop syncs once per step).
pub fn step_period_ns(ds: &Dataset, calls: &[&Call]) -> Option<i64> {
    let sync_ts: Vec<i64> = calls
        .iter()
        .filter(|c| !c.nested && ds.op_class(c.op_id) == OpClass::Sync)
        .map(|c| c.ts_ns)
        .collect();
    let mut d: Vec<i64> = sync_ts.windows(2).map(|w| w[1] - w[0]).collect();
    crate::percentile::p50_p95_p99(&mut d).0
}

/// Outer calls and their time per stream, by stream handle.
pub fn streams(calls: &[&Call]) -> Vec<StreamIdle> {
    let mut by_stream: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for c in calls.iter().filter(|c| !c.nested) {
        let e = by_stream.entry(c.stream_key()).or_default();
        e.0 += 1;
        e.1 += c.dur_ns;
    }
    by_stream
        .into_iter()
        .map(|(stream, (n, api))| StreamIdle {
            stream,
            calls: n,
            api_ns: api,
        })
        .collect()
}
