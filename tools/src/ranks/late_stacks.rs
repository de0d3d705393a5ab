//! Where a late rank's thread spent its late windows, from the stack
//! samples the capture kept: the innermost user frame (Python where the
//! capture sampled Python, else native) of each sample inside the windows,
//! counted. Evidence of where the time went, not of why.

use crate::error::Result;
use ingero_store::stacks::{parse_frames, FrameKind};
use ingero_store::TraceDb;
use rusqlite::OptionalExtension;
use serde::Serialize;
use std::collections::BTreeMap;

/// One frame and how many samples had it innermost.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LateFrame {
    /// Frame label (`module:function`).
    pub frame: String,
    /// Samples with it innermost.
    pub samples: i64,
    /// Share of the samples in the windows.
    pub share: f64,
}

/// The samples of the late windows.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LateStacks {
    /// Which samples: "python" or "on_cpu".
    pub kind: String,
    /// Samples kept inside the windows.
    pub samples: i64,
    /// Innermost frames, most samples first (at most 5).
    pub frames: Vec<LateFrame>,
}

/// The stack samples of thread `tid` of `pid` inside `windows` (sorted,
/// disjoint); `None` when there are none.
pub fn late_stacks(
    db: &TraceDb,
    pid: i32,
    tid: i32,
    windows: &[(i64, i64)],
) -> Result<Option<LateStacks>> {
    for (kind, name) in [(3, "python"), (1, "on_cpu")] {
        let ids = samples_in(db, pid, tid, kind, windows)?;
        let total: i64 = ids.values().sum();
        if total == 0 {
            continue;
        }
        let mut by_frame: BTreeMap<String, i64> = BTreeMap::new();
        for (id, n) in ids {
            *by_frame.entry(leaf_of(db, id, kind)?).or_default() += n;
        }
        let mut frames: Vec<LateFrame> = by_frame
            .into_iter()
            .map(|(frame, samples)| LateFrame {
                frame,
                samples,
                share: samples as f64 / total as f64,
            })
            .collect();
        frames.sort_by_key(|f| std::cmp::Reverse(f.samples));
        frames.truncate(5);
        return Ok(Some(LateStacks {
            kind: name.to_string(),
            samples: total,
            frames,
        }));
    }
    Ok(None)
}

/// Samples per stack id of one kind inside the windows.
fn samples_in(
    db: &TraceDb,
    pid: i32,
    tid: i32,
    kind: i64,
    windows: &[(i64, i64)],
) -> Result<BTreeMap<i64, i64>> {
    let q = |e| db.classify(e);
    let mut stmt = db
        .conn()
        .prepare_cached(
            "SELECT ts_ns, stack_id FROM stack_samples WHERE pid = ?1 AND tid = ?2 AND kind = ?3 \
             ORDER BY ts_ns",
        )
        .map_err(q)?;
    let rows = stmt
        .query_map(rusqlite::params![pid, tid, kind], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(q)?;
    let mut out = BTreeMap::new();
    let mut w = 0;
    for row in rows {
        let (ts, id) = row.map_err(q)?;
        while w < windows.len() && windows[w].1 <= ts {
            w += 1;
        }
        if w == windows.len() {
            break;
        }
        if ts >= windows[w].0 {
            *out.entry(id).or_default() += 1;
        }
    }
    Ok(out)
}

/// System runtime objects a frame in which says little about the program
/// (a spin on `clock_gettime` sits in the vDSO): the frame named is the
/// innermost one outside them, when there is one.
const RUNTIME_MODULES: &[&str] = &[
    "[vdso]",
    "libc.so",
    "libm.so",
    "libpthread.so",
    "ld-linux",
    "libstdc++.so",
    "libgcc_s.so",
];

/// The innermost user frame of stack `id` (Python frames for Python
/// samples, else the first non-kernel frame outside the system runtime).
fn leaf_of(db: &TraceDb, id: i64, kind: i64) -> Result<String> {
    let q = |e| db.classify(e);
    let text: Option<String> = db
        .conn()
        .query_row("SELECT frames FROM stacks WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()
        .map_err(q)?;
    let frames = text.as_deref().and_then(parse_frames).unwrap_or_default();
    let want = |k: FrameKind| {
        if kind == 3 {
            k == FrameKind::Python
        } else {
            k != FrameKind::Kernel
        }
    };
    let user: Vec<_> = frames.iter().filter(|f| want(f.kind)).collect();
    let own = user
        .iter()
        .find(|f| !RUNTIME_MODULES.iter().any(|m| f.module.starts_with(m)));
    // Else the innermost frame with a name (`libc.so.6:clock_gettime`
    // rather than an unnamed vDSO address).
    let named = user.iter().find(|f| !f.function.starts_with("0x"));
    Ok(own
        .or(named)
        .or(user.first())
        .map_or_else(|| "(no user frame)".to_string(), |f| f.label()))
}
