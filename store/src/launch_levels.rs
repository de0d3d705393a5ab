//! When a capture stopped, and started again, probing the CUDA runtime's
//! launch functions (table `launch_level_changes`, schema version 9).
//!
//! A launch through the runtime makes the driver's launch, so once every
//! runtime launch is seen to reach the driver the capture probes the driver
//! level alone. From then on the runtime launch functions' counts stop
//! growing and their launches appear under the driver's functions as outer
//! calls: a reader must know when that happened to read the two counts.

use crate::{Result, TraceWriter};
use rusqlite::{params, Connection};

/// One change of the probed launch level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLevelChange {
    /// Session the change belongs to.
    pub session_id: i64,
    /// When the runtime launch probes went (or came back), epoch ns.
    pub ts_ns: i64,
    /// False: the runtime launch probes went; true: they were attached
    /// again (a process mapped the runtime after they went).
    pub runtime_probed: bool,
    /// Runtime launches the capture had probed by then, every process
    /// together.
    pub runtime_launches: i64,
}

impl TraceWriter {
    /// Records a change of the probed launch level in this session.
    pub fn write_launch_level_change(
        &mut self,
        ts_ns: i64,
        runtime_probed: bool,
        runtime_launches: i64,
    ) -> Result<()> {
        let session = self.session_id();
        self.conn.execute(
            "INSERT INTO launch_level_changes(session_id, ts_ns, runtime_probed, runtime_launches) \
             VALUES (?1, ?2, ?3, ?4)",
            params![session, ts_ns, i64::from(runtime_probed), runtime_launches],
        )?;
        Ok(())
    }
}

/// Every change recorded in the file (empty for files written before
/// version 9 and for Ingero files), by session and time.
pub fn read_launch_level_changes(conn: &Connection) -> rusqlite::Result<Vec<LaunchLevelChange>> {
    conn.prepare(
        "SELECT session_id, ts_ns, runtime_probed, runtime_launches FROM launch_level_changes \
         ORDER BY session_id, ts_ns",
    )?
    .query_map([], |r| {
        Ok(LaunchLevelChange {
            session_id: r.get(0)?,
            ts_ns: r.get(1)?,
            runtime_probed: r.get::<_, i64>(2)? != 0,
            runtime_launches: r.get(3)?,
        })
    })?
    .collect()
}
