//! How each capture session of a file ended, as the file says it: when it
//! stopped and why (`sessions.stop_reason`, schema version 10; older files
//! read as unknown).

use rusqlite::Connection;
use serde::Serialize;

/// One session's ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionEnding {
    /// Session id.
    pub session_id: i64,
    /// Start, epoch ns, as a decimal string (exact); 0 when unknown.
    #[serde(with = "crate::epoch_ns")]
    #[schemars(with = "crate::epoch_ns::EpochNsText")]
    pub started_ns: i64,
    /// Stop, epoch ns, as a decimal string (exact); 0 when the session was
    /// never finalised.
    #[serde(with = "crate::epoch_ns")]
    #[schemars(with = "crate::epoch_ns::EpochNsText")]
    pub stopped_ns: i64,
    /// Why it ended, in the capture's words; empty when the file does not
    /// say (written before version 10), `running` when it never finalised.
    pub stop_reason: String,
}

impl SessionEnding {
    /// Seconds from the start to the stop, when both are known.
    pub fn stopped_after_s(&self) -> Option<f64> {
        (self.stopped_ns > 0 && self.started_ns > 0 && self.stopped_ns >= self.started_ns)
            .then(|| (self.stopped_ns - self.started_ns) as f64 / 1e9)
    }

    /// "stopped at +1.2 s: SIGTERM"; `None` for a session that never
    /// finalised or whose file does not say why.
    pub fn sentence(&self) -> Option<String> {
        let reason = self.stop_reason.trim();
        if self.stopped_ns <= 0 || reason.is_empty() || reason == "running" {
            return None;
        }
        Some(match self.stopped_after_s() {
            Some(s) => format!("stopped at +{s:.1} s: {reason}"),
            None => format!("stopped: {reason}"),
        })
    }
}

/// Every session's ending, by id. `conn` presents the current schema (a
/// [`crate::TraceDb`] connection, or a writer's).
pub fn session_endings(conn: &Connection) -> rusqlite::Result<Vec<SessionEnding>> {
    conn.prepare(
        "SELECT id, COALESCE(started_ns, 0), COALESCE(stopped_ns, 0), \
         COALESCE(stop_reason, '') FROM sessions ORDER BY id",
    )?
    .query_map([], |r| {
        Ok(SessionEnding {
            session_id: r.get(0)?,
            started_ns: r.get(1)?,
            stopped_ns: r.get(2)?,
            stop_reason: r.get(3)?,
        })
    })?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_reads_as_a_sentence_only_when_the_file_says_it() {
        let mut e = SessionEnding {
            session_id: 1,
            started_ns: 1_000_000_000,
            stopped_ns: 2_200_000_000,
            stop_reason: "writer failed: database or disk is full".into(),
        };
        assert_eq!(
            e.sentence().as_deref(),
            Some("stopped at +1.2 s: writer failed: database or disk is full")
        );
        e.stop_reason = "running".into();
        assert_eq!(e.sentence(), None);
        e.stop_reason = String::new();
        assert_eq!(e.sentence(), None);
    }
}
