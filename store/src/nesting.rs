//! Nested calls: one logical CUDA call that the trace holds twice.
//!
//! The runtime implements most of its API on top of the driver:
//! `cudaLaunchKernel` calls `cuLaunchKernel`, `cudaMemcpyAsync` calls
//! `cuMemcpyHtoDAsync_v2`, `cudaStreamSynchronize` calls
//! `cuStreamSynchronize`. Both libraries are probed, so one call of the
//! application leaves two rows, and a sum over every row counts its time,
//! bytes and threads twice.
//!
//! **The rule**, applied exactly at capture time by the entry probe: a call
//! is *nested* when, on the same thread, another probed CUDA call had been
//! entered and had not yet returned (a per-thread count of calls in flight,
//! `bpf/cuda.h`). In practice that is the driver call a runtime call makes;
//! a driver call the application (cuBLAS, Triton, a JIT) makes directly is
//! an *outer* call, as is every runtime call made from application code.
//! Counting outer calls only counts each logical call once. Nothing is
//! inferred from timestamps, so the rule also holds for calls whose raw
//! rows were sampled away.
//!
//! Where it lives in the data:
//! - `cuda_calls.nested`: [`NESTED`], [`OUTER`], or [`NOT_RECORDED`] for rows
//!   written before schema version 2 (and Ingero files). Outer rows:
//!   [`OUTER_ROWS`].
//! - `aggregates`: every total has a `nested_` part ([`AGGREGATE_SPLIT`]);
//!   the outer-only total is the column minus its part, for every call
//!   whether its raw row was kept or not.

/// `cuda_calls.nested` of a call made inside another probed call of its thread.
pub const NESTED: i64 = 1;

/// `cuda_calls.nested` of a call made directly by the application.
pub const OUTER: i64 = 0;

/// `cuda_calls.nested` where the capture did not record it (files older than
/// schema version 2); their `aggregates.nested_*` columns read 0.
pub const NOT_RECORDED: i64 = -1;

/// SQL condition on `cuda_calls` keeping outer calls (and rows that do not
/// say, so older files keep every row).
pub const OUTER_ROWS: &str = "nested != 1";

/// Each `aggregates` total with the column holding its nested part:
/// `total - nested_part` counts outer calls only.
pub const AGGREGATE_SPLIT: &[(&str, &str)] = &[
    ("count", "nested_count"),
    ("sum_dur_ns", "nested_dur_ns"),
    ("sum_bytes", "nested_bytes"),
    ("sum_threads", "nested_threads"),
    ("small_launches", "nested_small_launches"),
];

/// SQL expression for the outer-only part of the `aggregates` total
/// `column` (`count - nested_count`), `None` for a column with no split.
pub fn outer_total(column: &str) -> Option<String> {
    AGGREGATE_SPLIT
        .iter()
        .find(|(total, _)| *total == column)
        .map(|(total, part)| format!("({total} - {part})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_totals_subtract_their_nested_part() {
        assert_eq!(
            outer_total("count").as_deref(),
            Some("(count - nested_count)")
        );
        assert_eq!(outer_total("stored"), None);
    }

    #[test]
    fn every_split_column_is_a_version_2_column() {
        for (_, part) in AGGREGATE_SPLIT {
            assert!(crate::schema::COLUMNS_V2.contains(&("aggregates", part, "0")));
        }
        assert!(crate::schema::COLUMNS_V2.contains(&("cuda_calls", "nested", "-1")));
    }
}
