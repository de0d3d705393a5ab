//! Which process holds a global rank: the one lookup a [`super::Scope`]
//! needs to narrow itself to a rank, kept here so that scoping depends on
//! nothing but the store.

use crate::error::Result;
use ingero_store::TraceDb;
use rusqlite::OptionalExtension;

/// The process of global rank `rank` (`processes.rank`), for scoping an
/// analysis to one rank.
pub fn pid_of_rank(db: &TraceDb, rank: i32) -> Result<Option<i32>> {
    let conn = db.conn();
    let q = |e| db.classify(e);
    let pid = conn
        .query_row(
            "SELECT pid FROM processes WHERE rank = ?1 ORDER BY first_seen_ns LIMIT 1",
            [rank],
            |r| r.get(0),
        )
        .optional()
        .map_err(q)?;
    Ok(pid)
}
