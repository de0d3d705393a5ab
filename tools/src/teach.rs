//! Arguments checked against what a trace holds. A window that is empty,
//! inverted or outside the capture, a pid or rank the file does not have,
//! an op it never saw: each is refused with what was asked, what the file
//! holds (capture span, GPU-driving processes, ops) and a corrected call,
//! so a caller can recover on its next call.

use crate::error::{Result, ToolError};
use crate::scope::Scope;
use ingero_store::catalog::{cuda_op_by_name, AggSource, HostKind};
use ingero_store::{CaptureSpan, TimeWindow, TraceDb};
use rusqlite::OptionalExtension;

/// Host event kinds `get_events` accepts as an op.
const HOST_OPS: [&str; 6] = [
    "sched_switch",
    "sched_wakeup",
    "mm_page_alloc",
    "process_fork",
    "process_exec",
    "process_exit",
];

/// Most GPU-driving processes a message lists.
const MAX_PIDS: usize = 8;

/// What a call asked for, as the caller wrote it.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// `since` as given.
    pub since: Option<String>,
    /// `until` as given.
    pub until: Option<String>,
    /// Process filter.
    pub pid: Option<i32>,
    /// Rank filter.
    pub rank: Option<i32>,
    /// Op filter (`get_events`).
    pub op: Option<String>,
    /// The analysis explains CUDA activity: a window or process without
    /// any is refused with where the CUDA activity is.
    pub needs_cuda: bool,
}

/// What the file holds, for messages.
struct Holdings {
    span: CaptureSpan,
    /// GPU-driving pids with command names, busiest first.
    cuda_pids: Vec<(i32, String)>,
    /// First and last CUDA call, ns since the capture start.
    cuda_range: Option<(i64, i64)>,
}

impl Holdings {
    fn read(db: &TraceDb) -> Result<Holdings> {
        let conn = db.conn();
        let q = |e| db.classify(e);
        let mut stmt = conn
            .prepare(
                "SELECT pid, SUM(n) AS calls,
                        COALESCE((SELECT comm FROM processes p WHERE p.pid = t.pid
                                  ORDER BY first_seen_ns LIMIT 1), '')
                   FROM (SELECT pid, COUNT(*) AS n FROM cuda_calls GROUP BY pid
                         UNION ALL
                         SELECT pid, SUM(count) AS n FROM aggregates
                          WHERE source = ?1 AND count > 0 GROUP BY pid) t
                  WHERE pid > 0 GROUP BY pid ORDER BY calls DESC, pid",
            )
            .map_err(q)?;
        let cuda_pids = stmt
            .query_map([AggSource::Cuda as i64], |r| Ok((r.get(0)?, r.get(2)?)))
            .map_err(q)?
            .collect::<std::result::Result<Vec<(i32, String)>, _>>()
            .map_err(q)?;
        let span = db.span();
        let range: Option<(Option<i64>, Option<i64>)> = conn
            .query_row("SELECT MIN(ts_ns), MAX(ts_ns) FROM cuda_calls", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(q)?;
        let cuda_range = match range {
            Some((Some(a), Some(b))) => Some((a - span.start_ns, b - span.start_ns)),
            _ => None,
        };
        Ok(Holdings {
            span,
            cuda_pids,
            cuda_range,
        })
    }

    /// `capture: 59.9 s long (offsets 0-59.9 s from its start)`.
    fn capture(&self) -> String {
        let len = secs(self.span.duration_ns());
        format!("the capture is {len} long (0-{len} from its start)")
    }

    /// `GPU-driving processes: pid 2233 (python3), ...`.
    fn processes(&self) -> String {
        if self.cuda_pids.is_empty() {
            return "no process made CUDA calls in this file".into();
        }
        let mut list: Vec<String> = self
            .cuda_pids
            .iter()
            .take(MAX_PIDS)
            .map(|(pid, comm)| {
                if comm.is_empty() {
                    format!("pid {pid}")
                } else {
                    format!("pid {pid} ({comm})")
                }
            })
            .collect();
        if self.cuda_pids.len() > MAX_PIDS {
            list.push(format!("{} more", self.cuda_pids.len() - MAX_PIDS));
        }
        format!("GPU-driving processes: {}", list.join(", "))
    }

    /// `CUDA calls from +0.4 s to +59.8 s`.
    fn cuda(&self) -> String {
        match self.cuda_range {
            Some((a, b)) => format!("CUDA calls from +{} to +{}", secs(a), secs(b)),
            None => "no CUDA call rows".into(),
        }
    }

    /// What the file holds, as one sentence.
    fn summary(&self) -> String {
        format!("{}; {}; {}.", self.capture(), self.processes(), self.cuda())
    }

    /// A window of the capture that holds CUDA activity, as arguments.
    fn cuda_window_call(&self) -> String {
        let len = self.span.duration_ns();
        match self.cuda_range {
            Some((a, b)) if b > a => format!(
                "since=\"{}\" until=\"{}\" (+{} to +{})",
                secs_arg((len - a) as f64 / 1e8, f64::ceil),
                secs_arg((len - b) as f64 / 1e8, f64::floor),
                secs(a),
                secs(b)
            ),
            _ => "omit since/until".into(),
        }
    }
}

/// Seconds for a message: `59.9 s`.
pub fn secs(ns: i64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// Seconds for an argument, `tenths` rounded by `round`: `59.9s`.
fn secs_arg(tenths: f64, round: fn(f64) -> f64) -> String {
    format!("{:.1}s", round(tenths).max(0.0) / 10.0)
}

/// The first line of every analysis answer: the window it covers, in
/// seconds from the capture start.
pub fn window_line(span: CaptureSpan, window: &TimeWindow) -> String {
    let len = secs(span.duration_ns());
    if window.since_ns.is_none() && window.until_ns.is_none() {
        return format!("Window: whole capture, 0-{len}.");
    }
    let w = window.resolve(span);
    format!(
        "Window: +{} to +{} of {len}.",
        secs(w.lo_ns - span.start_ns),
        secs(w.hi_ns - span.start_ns)
    )
}

/// Checks `asked` (whose window parsed to `window`) against `db`; the scope
/// to analyse (narrowed to the rank's process), or an error that teaches.
pub fn check(db: &TraceDb, asked: &Asked, window: TimeWindow) -> Result<Scope> {
    let span = db.span();
    if let Some(why) = window_fault(asked, window, span) {
        let h = Holdings::read(db)?;
        let len = secs(span.duration_ns());
        let mut fix = format!("omit since/until for the whole capture (0-{len})");
        if span.duration_ns() >= 20_000_000_000 {
            fix.push_str(
                ", or since=\"20s\" until=\"10s\" for the 10 s ending 10 s before the end",
            );
        }
        return Err(ToolError::BadArgument(format!(
            "{why} since and until count back from the end of the capture, since the larger. \
             This file: {} Corrected call: {fix}; or {} for the CUDA activity.",
            h.summary(),
            h.cuda_window_call()
        )));
    }
    let mut scope = Scope {
        window,
        pid: asked.pid,
    };
    if let Some(rank) = asked.rank {
        match crate::scope::pid_of_rank(db, rank)? {
            Some(pid) => scope.pid = Some(pid),
            None => {
                let h = Holdings::read(db)?;
                return Err(ToolError::BadArgument(format!(
                    "no process of rank {rank} in this file; ranks here: {}. This file: {} \
                     Corrected call: omit rank, or pass pid with one of the GPU-driving pids.",
                    ranks(db)?,
                    h.summary()
                )));
            }
        }
    }
    if let Some(pid) = asked.pid {
        if !pid_known(db, pid)? {
            let h = Holdings::read(db)?;
            return Err(ToolError::BadArgument(format!(
                "no process {pid} in this file. This file: {} Corrected call: omit pid for every \
                 process, or pass one of the pids above.",
                h.summary()
            )));
        }
    }
    if let Some(op) = asked.op.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        check_op(db, op)?;
    }
    if asked.needs_cuda && !has_cuda(db, &scope)? {
        let h = Holdings::read(db)?;
        if h.cuda_pids.is_empty() {
            // No CUDA anywhere in the file: the analysis itself says so.
            return Ok(scope);
        }
        let whose = match scope.pid {
            Some(pid) => format!("process {pid}"),
            None => "any process".into(),
        };
        let w = window_line(span, &window);
        let w = w.trim_start_matches("Window: ").trim_end_matches('.');
        let fix = match scope.pid {
            Some(_) => format!(
                "omit pid/rank, or pass a GPU-driving pid; with pid omitted, {}",
                h.cuda_window_call()
            ),
            None => h.cuda_window_call(),
        };
        return Err(ToolError::BadArgument(format!(
            "no CUDA activity of {whose} in the window asked ({w}): nothing to explain there. \
             This file: {} Corrected call: {fix}.",
            h.summary()
        )));
    }
    Ok(scope)
}

/// Why the window holds no part of the capture, if it does not.
fn window_fault(asked: &Asked, window: TimeWindow, span: CaptureSpan) -> Option<String> {
    let len = span.duration_ns();
    let said = |name: &str, text: &Option<String>| {
        format!("{name}=\"{}\"", text.as_deref().unwrap_or_default().trim())
    };
    let since = said("since", &asked.since);
    let until = said("until", &asked.until);
    match (window.since_ns, window.until_ns) {
        (Some(0), _) => Some(format!(
            "{since} keeps no time: the window would end where it starts."
        )),
        (Some(s), Some(u)) if s == u => Some(format!(
            "empty window: {since} and {until} both mark {} before the end, so the window \
             holds no time.",
            secs(s)
        )),
        (Some(s), Some(u)) if s < u => Some(format!(
            "inverted window: {since} starts {} before the end, after {until} ends it {} \
             before the end (did you mean since=\"{}\" until=\"{}\"?).",
            secs(s),
            secs(u),
            asked.until.as_deref().unwrap_or_default().trim(),
            asked.since.as_deref().unwrap_or_default().trim()
        )),
        (_, Some(u)) if u >= len => Some(format!(
            "window outside the capture: {until} ends the window {} before the end, at or \
             before the capture start ({} long).",
            secs(u),
            secs(len)
        )),
        _ => None,
    }
}

/// True when `pid` appears anywhere in the file.
fn pid_known(db: &TraceDb, pid: i32) -> Result<bool> {
    let found: Option<i64> = db
        .conn()
        .query_row(
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM processes WHERE pid = ?1)
                 OR EXISTS (SELECT 1 FROM cuda_calls WHERE pid = ?1)
                 OR EXISTS (SELECT 1 FROM aggregates WHERE pid = ?1)
                 OR EXISTS (SELECT 1 FROM host_events WHERE pid = ?1)",
            [pid],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| db.classify(e))?;
    Ok(found.is_some())
}

/// True when the scope's window (and process) holds a CUDA call; a file
/// without call rows counts its CUDA aggregates (buckets that overlap the
/// window).
fn has_cuda(db: &TraceDb, scope: &Scope) -> Result<bool> {
    let w = db.resolve(&scope.window);
    let pid = scope.pid.unwrap_or(0);
    let bucket = db.aggregate_bucket_ns();
    let found: Option<i64> = db
        .conn()
        .query_row(
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM cuda_calls WHERE ts_ns BETWEEN ?1 AND ?2
                                      AND (?3 = 0 OR pid = ?3))
                 OR (NOT EXISTS (SELECT 1 FROM cuda_calls)
                     AND EXISTS (SELECT 1 FROM aggregates WHERE source = ?4 AND count > 0
                                  AND bucket_ns + ?5 > ?1 AND bucket_ns <= ?2
                                  AND (?3 = 0 OR pid = ?3)))",
            rusqlite::params![w.lo_ns, w.hi_ns, pid, AggSource::Cuda as i64, bucket],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| db.classify(e))?;
    Ok(found.is_some())
}

/// The ranks the file names, or `none`.
fn ranks(db: &TraceDb) -> Result<String> {
    let q = |e| db.classify(e);
    let mut stmt = db
        .conn()
        .prepare("SELECT DISTINCT rank, pid FROM processes WHERE rank >= 0 ORDER BY rank")
        .map_err(q)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i32>(0)?, r.get::<_, i32>(1)?)))
        .map_err(q)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(q)?;
    if rows.is_empty() {
        return Ok("none (not a distributed job)".into());
    }
    Ok(rows
        .iter()
        .map(|(rank, pid)| format!("{rank} (pid {pid})"))
        .collect::<Vec<_>>()
        .join(", "))
}

/// Refuses an op the file never saw, naming the closest ones it holds.
fn check_op(db: &TraceDb, op: &str) -> Result<()> {
    if HOST_OPS.contains(&op) || HostKind::parse(op).is_some() {
        return Ok(());
    }
    let q = |e| db.classify(e);
    let mut stmt = db
        .conn()
        .prepare(
            "SELECT o.name FROM cuda_ops o
              WHERE EXISTS (SELECT 1 FROM cuda_calls c WHERE c.op_id = o.id)
                 OR EXISTS (SELECT 1 FROM aggregates a WHERE a.source = ?1 AND a.code = o.id)
              ORDER BY o.name",
        )
        .map_err(q)?;
    let present = stmt
        .query_map([AggSource::Cuda as i64], |r| r.get::<_, String>(0))
        .map_err(q)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(q)?;
    if present.iter().any(|p| p == op) {
        return Ok(());
    }
    let known = cuda_op_by_name(op).is_some();
    let mut ranked: Vec<&str> = present.iter().map(String::as_str).collect();
    ranked.extend(HOST_OPS);
    ranked.sort_by_key(|name| distance(&op.to_ascii_lowercase(), &name.to_ascii_lowercase()));
    let closest: Vec<&str> = ranked.into_iter().take(4).collect();
    let what = if known {
        format!("op {op:?} is a CUDA function this file never recorded")
    } else {
        format!("unknown op {op:?}")
    };
    Err(ToolError::BadArgument(format!(
        "{what}. Closest ops in this file: {}. Ops this file holds: {} CUDA ({}) and host \
         events ({}). Corrected call: op=\"{}\", or omit op for every event.",
        closest.join(", "),
        present.len(),
        present.join(", "),
        HOST_OPS.join(", "),
        closest.first().copied().unwrap_or("sched_switch")
    )))
}

/// Edit distance between two names (insertions, deletions, substitutions).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(len_s: i64) -> CaptureSpan {
        CaptureSpan {
            start_ns: 1_000,
            end_ns: 1_000 + len_s * 1_000_000_000,
        }
    }

    fn asked(since: &str, until: &str) -> (Asked, TimeWindow) {
        let a = Asked {
            since: Some(since.into()),
            until: Some(until.into()),
            ..Asked::default()
        };
        let w = TimeWindow::parse(Some(since), Some(until)).unwrap_or_default();
        (a, w)
    }

    #[test]
    fn empty_inverted_and_outside_windows_are_named() {
        let (a, w) = asked("1h", "1h");
        let why = window_fault(&a, w, span(60)).unwrap_or_default();
        assert!(why.starts_with("empty window"), "{why}");
        let (a, w) = asked("10s", "20s");
        let why = window_fault(&a, w, span(60)).unwrap_or_default();
        assert!(why.starts_with("inverted window"), "{why}");
        assert!(why.contains("since=\"20s\" until=\"10s\""), "{why}");
        let (a, w) = asked("2h", "1h");
        let why = window_fault(&a, w, span(60)).unwrap_or_default();
        assert!(why.starts_with("window outside the capture"), "{why}");
        let (a, w) = asked("20s", "10s");
        assert_eq!(window_fault(&a, w, span(60)), None);
    }

    #[test]
    fn window_lines() {
        assert_eq!(
            window_line(span(60), &TimeWindow::ALL),
            "Window: whole capture, 0-60.0 s."
        );
        let (_, w) = asked("20s", "10s");
        assert_eq!(
            window_line(span(60), &w),
            "Window: +40.0 s to +50.0 s of 60.0 s."
        );
    }

    #[test]
    fn closest_names_first() {
        assert_eq!(distance("cudaMemcpy", "cudaMemcpy"), 0);
        assert_eq!(distance("cudaMemcpyy", "cudaMemcpy"), 1);
        assert!(distance("cudamalloc", "cudamallochost") < distance("cudamalloc", "sched_switch"));
    }
}
