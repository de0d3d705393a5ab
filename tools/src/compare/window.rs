//! Which part of each capture a comparison reads: by default the steady
//! phase, from the first CUDA call to the end of the last one, so start-up
//! and shutdown (which differ in length between runs) do not blur the loop.

use crate::error::Result;
use crate::scope::Scope;
use ingero_store::{TimeWindow, TraceDb};
use serde::{Deserialize, Serialize};

/// The part of each run a comparison reads.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WindowChoice {
    /// From the first CUDA call to the end of the last one (the default).
    #[default]
    Steady,
    /// The whole capture, start-up and tail included.
    Whole,
}

/// The scope `choice` means in `db`: the steady phase as a window relative
/// to the capture end (what [`Scope`] takes); the whole capture when the
/// file has no raw CUDA calls to bound it.
pub fn scope_for(db: &TraceDb, choice: WindowChoice) -> Result<Scope> {
    if choice == WindowChoice::Whole {
        return Ok(Scope::ALL);
    }
    let Some((first, last)) = steady_bounds(db)? else {
        return Ok(Scope::ALL);
    };
    let end = db.span().end_ns;
    Ok(Scope {
        window: TimeWindow {
            since_ns: Some((end - first).max(0)),
            until_ns: Some((end - last).max(0)),
        },
        pid: None,
    })
}

/// The first CUDA call's start and the last one's end, epoch ns; `None`
/// when the file holds no raw CUDA call.
pub fn steady_bounds(db: &TraceDb) -> Result<Option<(i64, i64)>> {
    let q = |e| db.classify(e);
    let (lo, hi): (Option<i64>, Option<i64>) = db
        .conn()
        .query_row(
            "SELECT MIN(ts_ns), MAX(ts_ns + dur_ns) FROM cuda_calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(q)?;
    Ok(match (lo, hi) {
        (Some(a), Some(b)) if b > a => Some((a, b)),
        _ => None,
    })
}
